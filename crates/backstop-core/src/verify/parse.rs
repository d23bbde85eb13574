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

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::signature::normalize_line;

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
const PARSERS: [Parser; 7] = [nextest, cargo_test, vitest, jest, pytest, go_test, plain];

/// A pattern compiled once, on first use. Every pattern is a literal, so compiling cannot fail.
macro_rules! pattern {
    ($name:ident, $re:literal) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| Regex::new($re).expect("a valid pattern"));
    };
}

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

// ---------------------------------------------------------------------------------------------
// Rust: cargo test and nextest

pattern!(
    LIBTEST_RESULT,
    r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed;"
);
pattern!(LIBTEST_FAILED, r"^test (.+?) \.\.\. FAILED(?: <[^>]*>)?$");
pattern!(PANIC, r"^\s*thread '[^']*'(?: \(\d+\))? panicked at (.+)$");
pattern!(RUSTC_ERROR, r"^error(\[E\d{4}\])?: (.+)$");
pattern!(RUSTC_LOCATION, r"^\s*--> (\S.*)$");
pattern!(CARGO_TARGETS_FAILED, r"^\d+ targets? failed");

fn cargo_test(lines: &[&str]) -> Option<TestRun> {
    let mut found = Found::default();
    let (mut passed, mut failed, mut results) = (0u32, 0u32, 0usize);
    let mut in_list = false;
    for &line in lines {
        if in_list {
            // `failures:` then one indented name a line (doc tests' names have spaces).
            if let Some(name) = line.strip_prefix("    ")
                && !name.is_empty()
                && !name.starts_with(' ')
            {
                found.fail(libtest_name(name));
                continue;
            }
            in_list = false;
        }
        if line == "failures:" {
            in_list = true;
        } else if let Some(c) = LIBTEST_RESULT.captures(line) {
            results += 1;
            passed = passed.saturating_add(count(&c[1]));
            failed = failed.saturating_add(count(&c[2]));
        } else if let Some(c) = LIBTEST_FAILED.captures(line) {
            found.fail(libtest_name(&c[1]));
        }
    }
    if results == 0 {
        if !compile_failed(lines) {
            return None;
        }
        rust_errors(lines, &mut found, true, |_| true);
        return Some(found.broken(Runner::CargoTest));
    }
    rust_errors(lines, &mut found, false, |_| true);
    Some(found.run(Runner::CargoTest, passed, failed))
}

/// A libtest name without the suffixes libtest adds to the `test ... FAILED` line.
fn libtest_name(name: &str) -> &str {
    let name = name.trim();
    [" - should panic", " - compile fail"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name)
}

fn compile_failed(lines: &[&str]) -> bool {
    lines
        .iter()
        .any(|l| l.starts_with("error[E") || l.starts_with("error: could not compile"))
}

/// Panic messages and compiler errors, in output order, from the lines `keep` accepts.
///
/// Outside a broken build only `error[E…]` diagnostics count (a doc test that does not
/// compile): a plain `error:` line there is as likely a program's own log. In a broken build
/// cargo's own closing lines (`could not compile`, ...) are used only when nothing better is
/// there.
fn rust_errors(lines: &[&str], found: &mut Found, broken: bool, keep: impl Fn(usize) -> bool) {
    let mut generic = Vec::new();
    for (i, &line) in lines.iter().enumerate() {
        if !keep(i) {
            continue;
        }
        if let Some(c) = PANIC.captures(line) {
            found.error(&panic_line(&c[1], &lines[i + 1..]));
        } else if let Some(c) = RUSTC_ERROR.captures(line) {
            if c.get(1).is_none() && !broken {
                continue;
            }
            if is_generic(&c[2]) {
                generic.push(line);
            } else {
                found.error(&with_location(line, &lines[i + 1..]));
            }
        }
    }
    if broken && found.errors.is_empty() {
        for line in generic {
            found.error(line);
        }
    }
}

/// cargo's and nextest's closing lines, which say that something failed but not what.
fn is_generic(message: &str) -> bool {
    [
        "could not compile",
        "aborting due to",
        "test failed, to rerun",
        "test run failed",
        "build failed",
    ]
    .iter()
    .any(|p| message.starts_with(p))
        || CARGO_TARGETS_FAILED.is_match(message)
        || (message.starts_with("command `") && message.contains("exited with code"))
}

/// One line for a panic: where, then what (with `left` and `right` of a failed `assert_eq!`).
fn panic_line(rest: &str, after: &[&str]) -> String {
    // Since Rust 1.73 the message follows on the next line: `panicked at src/lib.rs:4:5:`;
    // before, it came first: `panicked at 'message', src/lib.rs:4:5`.
    let Some(location) = rest.strip_suffix(':') else {
        return format!("panicked at {rest}");
    };
    let mut next = after.iter().map(|l| l.trim());
    let message = next.next().unwrap_or_default();
    let mut line = format!("panicked at {location}: {message}");
    if message.starts_with("assertion `left") {
        for side in next.take(2) {
            if side.starts_with("left:") || side.starts_with("right:") {
                line.push_str("; ");
                line.push_str(side);
            }
        }
    }
    line
}

/// A compiler error with the `--> file:line:col` that follows it.
fn with_location(line: &str, after: &[&str]) -> String {
    match after.first().and_then(|l| RUSTC_LOCATION.captures(l)) {
        Some(c) => format!("{line} --> {}", &c[1]),
        None => line.to_owned(),
    }
}

pattern!(
    NEXTEST_SUMMARY,
    r"^\s*Summary \[\s*\d+(?:\.\d+)?s\] (?:\d+/)?\d+ tests? run: (.+)$"
);
pattern!(
    NEXTEST_STATUS,
    r"^\s*((?:TRY \d+ )?[A-Z][A-Z+-]*(?: \+ [A-Z]+)?(?: \d+/\d+)?) \[\s*\d+(?:\.\d+)?s\] (?:\(\s*\d+/\s*\d+\) |\[\s*\d+(?:/\d+)?\] )?(\S+ \S.*?)\s*$"
);
pattern!(
    NEXTEST_OUTPUT,
    r"^\s*(?:─+|-{3}) (?:STDOUT|STDERR|OUTPUT): +(\S+ \S+?)(?: -{3})?\s*$"
);
pattern!(
    NEXTEST_COUNT,
    r"(\d+) (exec failed|timed out|passed|failed)"
);
pattern!(
    NEXTEST_BUILD,
    r"^error: command `[^`]*test --no-run[^`]*` exited with code"
);

fn nextest(lines: &[&str]) -> Option<TestRun> {
    let mut found = Found::default();
    let Some(summary) = lines.iter().rev().find_map(|l| NEXTEST_SUMMARY.captures(l)) else {
        // nextest builds with `cargo test --no-run` first: a compile error means no test ran.
        if lines.iter().any(|l| NEXTEST_BUILD.is_match(l)) {
            rust_errors(lines, &mut found, true, |_| true);
            return Some(found.broken(Runner::Nextest));
        }
        return None;
    };
    let (mut passed, mut failed) = (0u32, 0u32);
    for c in NEXTEST_COUNT.captures_iter(&summary[1]) {
        let n = count(&c[1]);
        if &c[2] == "passed" {
            passed = passed.saturating_add(n);
        } else {
            failed = failed.saturating_add(n);
        }
    }
    // A test's last status decides (a retried test that then passed is flaky, not failing), and
    // only the output of tests that end failing gives error lines.
    let mut last: HashMap<&str, bool> = HashMap::new();
    let mut owner: Vec<Option<&str>> = Vec::with_capacity(lines.len());
    let mut current = None;
    for &line in lines {
        if let Some(c) = NEXTEST_STATUS.captures(line)
            && let Some(passed) = nextest_passed(&c[1])
        {
            let id = c.get(2).map_or("", |m| m.as_str());
            last.insert(id, passed);
            current = Some(id);
        } else if let Some(c) = NEXTEST_OUTPUT.captures(line) {
            current = c.get(1).map(|m| m.as_str());
        }
        owner.push(current);
    }
    for (id, passed) in &last {
        if !passed {
            found.fail(id);
        }
    }
    rust_errors(lines, &mut found, false, |i| {
        owner[i].is_none_or(|id| last.get(id) != Some(&true))
    });
    Some(found.run(Runner::Nextest, passed, failed))
}

/// Whether a nextest status means the test passed; `None` for words that are not a result.
fn nextest_passed(status: &str) -> Option<bool> {
    let status = match status.strip_prefix("TRY ") {
        Some(rest) => rest.split_once(' ').map_or(rest, |(_, s)| s),
        None => status,
    };
    match status {
        "PASS" | "LEAK" | "SLOW" | "SLOW + LEAK" | "TIMEOUT-PASS" | "SLOW+TMPASS" => Some(true),
        s if s.starts_with("FLAKY") => Some(true),
        "FAIL" | "FAIL + LEAK" | "XFAIL" | "LEAK-FAIL" | "TIMEOUT" | "ABORT" | "TMT" | "LKFAIL"
        | "FL+LK" => Some(false),
        s if s.starts_with("SIG") => Some(false),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// JavaScript: Vitest and Jest

pattern!(JS_COUNT, r"(\d+) (passed|failed|total)");
pattern!(JS_FAIL, r"^\s?FAIL\s+(\S.*?)\s*$");
pattern!(VITEST_FILES, r"^\s*Test Files\s+(.+)$");
pattern!(VITEST_TESTS, r"^\s*Tests\s{2,}(.+)$");
pattern!(VITEST_TOTAL, r"\((\d+)\)\s*$");
pattern!(VITEST_SUITE, r"^(.+?) \[ .+ \]$");
pattern!(JEST_TESTS, r"^Tests:\s+(.+)$");
pattern!(JEST_SUITES, r"^Test Suites:\s+(.+)$");
pattern!(
    JEST_HEADER,
    r"^\s?(?:PASS|FAIL)\s+(\S.*?)(?:\s+\(\d+(?:\.\d+)?\s?m?s\))?\s*$"
);
pattern!(JEST_BULLET, r"^\s+● (.+)$");

/// `(passed, failed, total)` of a count line; Vitest writes the total last in brackets.
fn js_counts(text: &str) -> (u32, u32, Option<u32>) {
    let (mut passed, mut failed, mut total) = (0, 0, None);
    for c in JS_COUNT.captures_iter(text) {
        match &c[2] {
            "passed" => passed = count(&c[1]),
            "failed" => failed = count(&c[1]),
            _ => total = Some(count(&c[1])),
        }
    }
    let total = total.or_else(|| VITEST_TOTAL.captures(text).map(|c| count(&c[1])));
    (passed, failed, total)
}

fn vitest(lines: &[&str]) -> Option<TestRun> {
    let files_at = lines.iter().rposition(|l| VITEST_FILES.is_match(l))?;
    let (_, files_failed, _) = js_counts(&VITEST_FILES.captures(lines[files_at])?[1]);
    let (passed, failed, total) = lines[files_at..]
        .iter()
        .find_map(|l| VITEST_TESTS.captures(l))
        .map_or((0, 0, None), |c| js_counts(&c[1]));
    let mut found = Found::default();
    let mut suites = BTreeSet::new();
    for (i, &line) in lines.iter().enumerate() {
        let Some(c) = JS_FAIL.captures(line) else {
            continue;
        };
        // ` FAIL  file > suite > test`, or ` FAIL  file [ file ]` for a file that failed to load.
        let header = c.get(1).map_or("", |m| m.as_str());
        if let Some(suite) = VITEST_SUITE.captures(header) {
            suites.insert(suite[1].to_owned());
        } else if header.contains(" > ") {
            found.fail(header);
        } else {
            continue;
        }
        let message = lines[i + 1..]
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.is_empty() && !l.starts_with('⎯'));
        if let Some(message) = message {
            found.error(message);
        }
    }
    if total.unwrap_or(passed.saturating_add(failed)) == 0
        && (files_failed > 0 || !suites.is_empty())
    {
        return Some(found.broken(Runner::Vitest));
    }
    for suite in &suites {
        found.fail(suite);
    }
    let failed = failed.saturating_add(len_u32(suites.len()));
    Some(found.run(Runner::Vitest, passed, failed))
}

fn jest(lines: &[&str]) -> Option<TestRun> {
    let tests = lines.iter().rev().find_map(|l| JEST_TESTS.captures(l))?;
    lines.iter().rev().find(|l| JEST_SUITES.is_match(l))?;
    let (passed, failed, total) = js_counts(&tests[1]);
    let mut found = Found::default();
    let mut suites = BTreeSet::new();
    let mut file: Option<&str> = None;
    for (i, &line) in lines.iter().enumerate() {
        if let Some(c) = JEST_HEADER.captures(line) {
            file = c.get(1).map(|m| m.as_str());
            continue;
        }
        let Some(c) = JEST_BULLET.captures(line) else {
            continue;
        };
        let title = c[1].trim();
        if title == "Console" {
            continue;
        }
        match file {
            Some(file) if title == "Test suite failed to run" => {
                suites.insert(file.to_owned());
            }
            Some(file) => found.fail(&format!("{file} > {}", title.replace(" › ", " > "))),
            None => found.fail(&title.replace(" › ", " > ")),
        }
        if let Some(message) = jest_message(&lines[i + 1..]) {
            found.error(&message);
        }
    }
    if total.unwrap_or(passed.saturating_add(failed)) == 0 && !suites.is_empty() {
        return Some(found.broken(Runner::Jest));
    }
    for suite in &suites {
        found.fail(suite);
    }
    let failed = failed.saturating_add(len_u32(suites.len()));
    Some(found.run(Runner::Jest, passed, failed))
}

/// The first line under a `●` header, with the `Expected:` and `Received:` lines of a matcher.
fn jest_message(after: &[&str]) -> Option<String> {
    let mut rest = after.iter().map(|l| l.trim()).skip_while(|l| l.is_empty());
    let mut message = rest.next()?.to_owned();
    for line in rest.take(8) {
        if line.starts_with('●') || line.starts_with('>') || JEST_HEADER.is_match(line) {
            break;
        }
        if line.starts_with("Expected:") || line.starts_with("Received:") {
            message.push_str("; ");
            message.push_str(line);
        }
    }
    Some(message)
}

// ---------------------------------------------------------------------------------------------
// pytest

pattern!(
    PYTEST_SUMMARY,
    r"^=*\s*((?:\d+ \w+(?:, )?)+|no tests ran) in \d+(?:\.\d+)?s(?: \(\d+:\d{2}:\d{2}\))?\s*=*$"
);
pattern!(PYTEST_COUNT, r"(\d+) (\w+)");
pattern!(PYTEST_OUTCOME, r"^(?:FAILED|ERROR) (\S.*)$");
pattern!(
    PYTEST_VERBOSE,
    r"^(\S+::\S.*?) (?:FAILED|ERROR)(?:\s+\[\s*\d+%\])?$"
);
pattern!(PYTEST_COLLECTING, r"^_+ ERROR collecting .+ _+$");
pattern!(
    PYTEST_INTERRUPTED,
    r"^!+ Interrupted: \d+ errors? during collection !+$"
);
pattern!(PYTEST_E, r"^E +(\S.*)$");
pattern!(
    PYTEST_CRASH_LINE,
    r"^(?:[A-Za-z]:)?[^\s:]+\.py:\d+: (\S.*)$"
);

/// The words pytest's final line may count.
const PYTEST_WORDS: [&str; 11] = [
    "passed",
    "failed",
    "error",
    "errors",
    "skipped",
    "xfailed",
    "xpassed",
    "warning",
    "warnings",
    "deselected",
    "rerun",
];

/// `(passed, failed and errors, errors)` of pytest's final line.
fn pytest_counts(line: &str) -> Option<(u32, u32, u32)> {
    let body = PYTEST_SUMMARY.captures(line)?;
    let (mut passed, mut failed, mut errors) = (0u32, 0u32, 0u32);
    for c in PYTEST_COUNT.captures_iter(&body[1]) {
        let n = count(&c[1]);
        match &c[2] {
            "passed" => passed = n,
            "failed" => failed = n,
            "error" | "errors" => errors = n,
            word if PYTEST_WORDS.contains(&word) => {}
            _ => return None,
        }
    }
    Some((passed, failed.saturating_add(errors), errors))
}

fn pytest(lines: &[&str]) -> Option<TestRun> {
    let (passed, failed, errors) = lines.iter().rev().find_map(|l| pytest_counts(l))?;
    let broken = lines.iter().any(|l| PYTEST_INTERRUPTED.is_match(l))
        || (passed == 0 && failed == errors && lines.iter().any(|l| PYTEST_COLLECTING.is_match(l)));
    let mut found = Found::default();
    let mut messages = Vec::new();
    for &line in lines {
        if let Some(c) = PYTEST_OUTCOME.captures(line) {
            let (id, message) = split_outcome(c.get(1).map_or("", |m| m.as_str()));
            found.fail(id);
            messages.extend(message);
        } else if let Some(c) = PYTEST_VERBOSE.captures(line) {
            found.fail(&c[1]);
        }
    }
    // The short summary's messages; else each traceback's first `E` line; else `--tb=line`.
    for message in messages {
        found.error(message);
    }
    if found.errors.is_empty() {
        let mut previous_was_e = false;
        for &line in lines {
            let e = PYTEST_E.captures(line);
            if let Some(c) = &e
                && !previous_was_e
            {
                found.error(&c[1]);
            }
            previous_was_e = e.is_some();
        }
    }
    if found.errors.is_empty() {
        for &line in lines {
            if let Some(c) = PYTEST_CRASH_LINE.captures(line) {
                found.error(&c[1]);
            }
        }
    }
    if broken {
        return Some(found.broken(Runner::Pytest));
    }
    Some(found.run(Runner::Pytest, passed, failed))
}

/// A short-summary line split into the test id and its message, at the first ` - ` that is not
/// inside a parameter id's brackets (`test_x[a - b] - AssertionError`).
fn split_outcome(rest: &str) -> (&str, Option<&str>) {
    let mut depth = 0i32;
    for (i, ch) in rest.char_indices() {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            ' ' if depth <= 0 && rest[i..].starts_with(" - ") => {
                return (&rest[..i], Some(&rest[i + 3..]));
            }
            _ => {}
        }
    }
    (rest, None)
}

// ---------------------------------------------------------------------------------------------
// go test

pattern!(
    GO_RESULT,
    r"^\s*--- (PASS|FAIL|SKIP): (\S+) \(\d+(?:\.\d+)?s\)"
);
pattern!(GO_EVENT, r"^=== (?:RUN|CONT|NAME|PAUSE)\s+(\S+)");
pattern!(
    GO_PACKAGE,
    r"^(ok|FAIL)\s+(\S+)\s+(\d+(?:\.\d+)?s|\(cached\)|\[build failed\]|\[setup failed\])"
);
pattern!(GO_LOG, r"^\s+(\S+_test\.go:\d+: \S.*)$");
pattern!(GO_TESTIFY, r"^\s+Error:\s+(\S.*)$");
pattern!(GO_PANIC, r"^(panic: .+?)(?: \[recovered\])?$");
pattern!(GO_BUILD, r"^\S+\.go:\d+:\d+: \S");

fn go_test(lines: &[&str]) -> Option<TestRun> {
    let mut found = Found::default();
    let (mut tests_passed, mut tests_failed, mut packages_ok) = (0u32, 0u32, 0u32);
    let mut packages = 0usize;
    let mut failed_since_package = 0u32;
    let mut build_failed = Vec::new();
    let mut failed_packages = Vec::new();
    // A test's log lines come before its result with -v and after it without: keep them until
    // the result says whether they belong to a failure.
    let mut current: Option<&str> = None;
    let mut failed_tests: HashSet<&str> = HashSet::new();
    let mut pending: HashMap<&str, Vec<&str>> = HashMap::new();
    for &line in lines {
        if let Some(c) = GO_RESULT.captures(line) {
            let name = c.get(2).map_or("", |m| m.as_str());
            match &c[1] {
                "PASS" => tests_passed = tests_passed.saturating_add(1),
                "FAIL" => {
                    tests_failed = tests_failed.saturating_add(1);
                    failed_since_package += 1;
                    found.fail(name);
                    failed_tests.insert(name);
                    for log in pending.remove(name).unwrap_or_default() {
                        found.error(log);
                    }
                }
                _ => {}
            }
            current = Some(name);
        } else if let Some(c) = GO_EVENT.captures(line) {
            current = c.get(1).map(|m| m.as_str());
        } else if let Some(c) = GO_PACKAGE.captures(line) {
            packages += 1;
            let package = c.get(2).map_or("", |m| m.as_str());
            match (&c[1], &c[3]) {
                ("ok", _) => packages_ok += 1,
                (_, "[build failed]" | "[setup failed]") => build_failed.push(package),
                _ if failed_since_package == 0 => failed_packages.push(package),
                _ => {}
            }
            failed_since_package = 0;
            current = None;
        } else if let Some(c) = GO_LOG.captures(line).or_else(|| GO_TESTIFY.captures(line)) {
            let log = c.get(1).map_or("", |m| m.as_str());
            match current {
                Some(test) if !failed_tests.contains(test) => {
                    let logs = pending.entry(test).or_default();
                    if logs.len() < MAX_ERRORS {
                        logs.push(log);
                    }
                }
                _ => found.error(log),
            }
        } else if let Some(c) = GO_PANIC.captures(line) {
            found.error(&c[1]);
        } else if GO_BUILD.is_match(line) {
            found.error(line);
        }
    }
    let ran = tests_passed > 0 || tests_failed > 0;
    let bare_result = lines.iter().any(|l| *l == "PASS" || *l == "FAIL");
    if packages == 0 && !(ran && bare_result) {
        return None;
    }
    if !build_failed.is_empty() && !ran && packages_ok == 0 && failed_packages.is_empty() {
        return Some(found.broken(Runner::GoTest));
    }
    for package in build_failed.iter().chain(&failed_packages) {
        found.fail(package);
    }
    let failed = tests_failed.saturating_add(len_u32(build_failed.len() + failed_packages.len()));
    let passed = if tests_passed > 0 {
        tests_passed
    } else {
        packages_ok
    };
    Some(found.run(Runner::GoTest, passed, failed))
}

// ---------------------------------------------------------------------------------------------
// A plain count line

pattern!(
    PLAIN_SUMMARY,
    r"^\s*(?:[A-Za-z][A-Za-z ]*:\s*)?(\d+ [a-z]+(?:[,;]\s*\d+ [a-z]+)*)\.?\s*$"
);
pattern!(PLAIN_COUNT, r"(\d+) ([a-z]+)");
pattern!(PLAIN_FAILED, r"^(?:FAILED|FAIL:?)\s+(\S+)(?: - (.+))?$");

/// `(passed, failed)` of a line that holds counts and nothing else.
fn plain_counts(line: &str) -> Option<(u32, u32)> {
    let body = PLAIN_SUMMARY.captures(line)?;
    let (mut passed, mut failed) = (None, None);
    for c in PLAIN_COUNT.captures_iter(&body[1]) {
        match &c[2] {
            "passed" => passed = Some(count(&c[1])),
            "failed" => failed = Some(count(&c[1])),
            "skipped" | "ignored" | "pending" | "todo" | "error" | "errors" => {}
            _ => return None,
        }
    }
    (passed.is_some() || failed.is_some()).then(|| (passed.unwrap_or(0), failed.unwrap_or(0)))
}

fn plain(lines: &[&str]) -> Option<TestRun> {
    let (passed, failed) = lines.iter().rev().find_map(|l| plain_counts(l))?;
    let mut found = Found::default();
    for &line in lines {
        if let Some(c) = PLAIN_FAILED.captures(line) {
            found.fail(&c[1]);
            if let Some(message) = c.get(2) {
                found.error(message.as_str());
            }
        }
    }
    Some(found.run(Runner::Plain, passed, failed))
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

    #[test]
    fn pytest_ids_keep_dashes_inside_parameters() {
        assert_eq!(
            split_outcome("t.py::test_x[a - b] - AssertionError: no"),
            ("t.py::test_x[a - b]", Some("AssertionError: no"))
        );
        assert_eq!(
            split_outcome("tests/test_api.py"),
            ("tests/test_api.py", None)
        );
    }

    #[test]
    fn pytest_final_lines_only_count_pytest_words() {
        assert_eq!(
            pytest_counts("=== 2 failed, 1 passed, 1 error in 0.50s ==="),
            Some((1, 3, 1))
        );
        assert_eq!(
            pytest_counts("1 passed in 65.12s (0:01:05)"),
            Some((1, 0, 0))
        );
        assert_eq!(pytest_counts("no tests ran in 0.01s"), Some((0, 0, 0)));
        assert_eq!(pytest_counts("Downloaded 3 crates in 1.2s"), None);
        assert_eq!(pytest_counts("3 crates in 1.2s"), None);
    }

    #[test]
    fn a_plain_line_holds_counts_and_nothing_else() {
        assert_eq!(plain_counts("1 passed, 2 failed"), Some((1, 2)));
        assert_eq!(plain_counts("Results: 4 passed; 1 skipped."), Some((4, 0)));
        assert_eq!(plain_counts("3 failed"), Some((0, 3)));
        assert_eq!(plain_counts("we saw 3 passed and 1 failed"), None);
        assert_eq!(plain_counts("2 warnings"), None);
        assert_eq!(plain_counts("1 skipped"), None);
    }

    #[test]
    fn nextest_statuses() {
        for pass in [
            "PASS",
            "TRY 2 PASS",
            "FLAKY 2/3",
            "LEAK",
            "SLOW + LEAK",
            "TIMEOUT-PASS",
        ] {
            assert_eq!(nextest_passed(pass), Some(true), "{pass}");
        }
        for fail in [
            "FAIL",
            "TRY 3 FAIL",
            "SIGSEGV",
            "TIMEOUT",
            "XFAIL",
            "FAIL + LEAK",
            "TRY 2 TMT",
        ] {
            assert_eq!(nextest_passed(fail), Some(false), "{fail}");
        }
        assert_eq!(nextest_passed("START"), None);
    }
}
