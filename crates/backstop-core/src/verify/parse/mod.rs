//! A test command's output, read: which runner printed it, how many tests passed and failed,
//! which failed, and the first lines of their errors.
//!
//! [`parse_output`] looks for the summary a known runner prints at the end of a run:
//!
//! | runner | counts from | failing ids from |
//! |---|---|---|
//! | nextest | `Summary [ 0.2s] 19 tests run: 17 passed, 2 failed` | each test's last status |
//! | `cargo test` | every `test result:` line, summed (one per binary) | `FAILED`, `failures:` |
//! | Vitest | `Tests  2 failed \| 19 passed (21)` | ` FAIL  file > suite > test` |
//! | Jest | `Tests:       2 failed, 19 passed, 21 total` | ` FAIL  file`, then `● suite › test` |
//! | pytest | `== 2 failed, 44 passed in 2.07s ==` | `FAILED` / `ERROR` lines |
//! | `go test` | `--- PASS` lines, else the `ok` package lines | `--- FAIL: TestX (0.00s)` |
//! | plain | a line of counts only: `1 passed, 2 failed` | `FAILED id - message` lines |
//!
//! Reading costs bounded time: only the last [`MAX_INPUT`] bytes are read (the summary is at the
//! end), ANSI escape sequences are removed first, and every pattern is a `regex` (linear time).
//! When the markers of several runners appear, the most specific wins: nextest over `cargo
//! test` (nextest shows a failing test's own libtest output, `test result:` line included),
//! Vitest over Jest, and any runner over a plain count line.
//!
//! One file per runner family: `rust` (nextest, `cargo test`), `js` (Vitest, Jest), `pytest`,
//! `go` (`go test`) and `plain`. This one holds the types, the order the parsers are tried in
//! and what they share.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};

use serde::Serialize;

use super::signature::normalize_line;

/// A pattern compiled once, on first use. Every pattern is a literal, so compiling cannot fail.
///
/// Defined before the runner modules, which use it too (a `macro_rules!` is in scope only in the
/// text after it).
macro_rules! pattern {
    ($name:ident, $re:literal) => {
        static $name: ::std::sync::LazyLock<::regex::Regex> =
            ::std::sync::LazyLock::new(|| ::regex::Regex::new($re).expect("a valid pattern"));
    };
}

mod go;
mod js;
mod plain;
mod pytest;
mod rust;

/// Bytes read from the end of the output: a summary is at the end, and a log of any size then
/// costs what 1 MiB does.
pub const MAX_INPUT: usize = 1 << 20;
/// Error lines kept per run.
pub const MAX_ERRORS: usize = 5;
/// Characters kept of one error line; a longer line is cut and ends with [`TRUNCATED`].
pub const MAX_ERROR_CHARS: usize = 200;
/// The mark at the end of an error line that was cut.
pub const TRUNCATED: char = '…';

/// A test runner whose output [`parse_output`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Runner {
    /// `cargo test`: libtest's own output.
    CargoTest,
    /// `cargo nextest run`.
    Nextest,
    /// pytest.
    Pytest,
    /// `go test`, with or without `-v`.
    GoTest,
    /// Jest.
    Jest,
    /// Vitest.
    Vitest,
    /// A tool of its own that ends with a line of counts only, such as `1 passed, 2 failed`.
    Plain,
}

/// What one run of the tests showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestRun {
    /// The runner whose summary was found.
    pub runner: Runner,
    /// Tests that passed. `go test` without `-v` lists no passing test: there this counts the
    /// packages that passed (`ok` lines).
    pub passed: u32,
    /// Tests that failed, errors in a test's setup included. A Jest or Vitest file that failed to
    /// load, and a Go package that failed with no test failing, count as one each.
    pub failed: u32,
    /// Ids of the failing tests, sorted and deduplicated, as the runner names them:
    /// `tests::parse::rejects_empty`, `ledger-core tests::x` (nextest: binary, then test),
    /// `tests/test_api.py::test_login`, `TestParse/empty`, `src/x.test.ts > suite > name`.
    pub failing: Vec<String>,
    /// The first error lines of the failures (at most [`MAX_ERRORS`], each cut at
    /// [`MAX_ERROR_CHARS`]), in output order; lines that differ only in numbers, times or paths'
    /// line numbers take one place.
    pub errors: Vec<String>,
    /// Whether the run failed before any test ran: a compile error, a collection error, a test
    /// file that could not load. Counts are then 0 and `errors` holds the first error lines.
    pub broken: bool,
}

/// Reads a test command's combined output (stdout and stderr).
///
/// `None` when no known runner's summary is found: the loop then keeps its fixed attempt cap
/// and says so. A crash that kills the runner before its summary gives `None` too.
///
/// ```
/// use backstop_core::verify::parse::{Runner, parse_output};
///
/// let run = parse_output("FAILED tests/test_api.py::test_login - assert 401 == 200\n\
///                         1 failed, 11 passed in 0.41s\n").unwrap();
/// assert_eq!(run.runner, Runner::Pytest);
/// assert_eq!((run.passed, run.failed), (11, 1));
/// assert_eq!(run.failing, ["tests/test_api.py::test_login"]);
/// assert_eq!(run.errors, ["assert 401 == 200"]);
/// ```
pub fn parse_output(output: &str) -> Option<TestRun> {
    let text = strip_ansi(tail(output));
    let lines: Vec<&str> = text.lines().map(last_overwrite).collect();
    PARSERS.iter().find_map(|parse| parse(&lines))
}

/// A runner's reader: its run if its summary is in the lines.
type Parser = fn(&[&str]) -> Option<TestRun>;

/// The parsers, most specific first.
const PARSERS: [Parser; 7] = [
    rust::nextest,
    rust::cargo_test,
    js::vitest,
    js::jest,
    pytest::pytest,
    go::go_test,
    plain::plain,
];

pattern!(
    ANSI,
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
);

/// The last [`MAX_INPUT`] bytes of the output, from the start of a line.
fn tail(output: &str) -> &str {
    if output.len() <= MAX_INPUT {
        return output;
    }
    let mut start = output.len() - MAX_INPUT;
    while !output.is_char_boundary(start) {
        start += 1;
    }
    let rest = &output[start..];
    rest.find('\n').map_or(rest, |at| &rest[at + 1..])
}

fn strip_ansi(text: &str) -> Cow<'_, str> {
    if text.contains('\x1b') {
        ANSI.replace_all(text, "")
    } else {
        Cow::Borrowed(text)
    }
}

/// What a terminal would show of a line a progress display rewrote with `\r`.
fn last_overwrite(line: &str) -> &str {
    let line = line.trim_end_matches('\r');
    line.rsplit('\r').next().unwrap_or(line)
}

/// A count as printed; a count too large for `u32` is `u32::MAX`.
fn count(digits: &str) -> u32 {
    digits.parse().unwrap_or(u32::MAX)
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Failing ids and error lines, as a parser finds them.
#[derive(Debug, Default)]
struct Found {
    failing: BTreeSet<String>,
    errors: Vec<String>,
    /// The normalized form of each kept error line.
    seen: HashSet<String>,
}

impl Found {
    fn fail(&mut self, id: &str) {
        let id = id.trim();
        if !id.is_empty() {
            self.failing.insert(id.to_owned());
        }
    }

    fn error(&mut self, line: &str) {
        let line = line.trim();
        if self.errors.len() >= MAX_ERRORS || line.is_empty() {
            return;
        }
        let line = match line.char_indices().nth(MAX_ERROR_CHARS) {
            Some((at, _)) => format!("{}{TRUNCATED}", line[..at].trim_end()),
            None => line.to_owned(),
        };
        if self.seen.insert(normalize_line(&line)) {
            self.errors.push(line);
        }
    }

    fn run(self, runner: Runner, passed: u32, failed: u32) -> TestRun {
        TestRun {
            runner,
            passed,
            failed,
            failing: self.failing.into_iter().collect(),
            errors: self.errors,
            broken: false,
        }
    }

    /// A run that failed before any test ran: no counts, no failing tests, only errors.
    fn broken(self, runner: Runner) -> TestRun {
        TestRun {
            runner,
            passed: 0,
            failed: 0,
            failing: Vec::new(),
            errors: self.errors,
            broken: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines_are_capped_deduplicated_and_cut() {
        let mut found = Found::default();
        found.error(&"x".repeat(MAX_ERROR_CHARS + 50));
        found.error("took 10ms");
        found.error("took 12ms");
        for i in 0..10 {
            found.error(&format!("error {}", "abc".repeat(i + 1)));
        }
        assert_eq!(found.errors.len(), MAX_ERRORS);
        assert_eq!(found.errors[0].chars().count(), MAX_ERROR_CHARS + 1);
        assert!(found.errors[0].ends_with(TRUNCATED));
        assert_eq!(found.errors[1], "took 10ms");
        assert_eq!(found.errors[2], "error abc");
    }
}
