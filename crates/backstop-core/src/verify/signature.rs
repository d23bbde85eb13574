//! Failure signatures: what stays the same when the same failure happens again.
//!
//! The same error repeating across attempts is the strongest sign that a retry loop should stop.
//! A [`Signature`] is a run's failing test ids with its first error lines, each line normalized
//! by [`normalize_line`] so that what changes between two runs of one failure (timings, thread
//! ids, addresses, temporary paths, line numbers that moved) does not change the signature.
//!
//! The rules run once each, in this order: a rule's replacement is never seen by a later rule
//! as something to replace again (a timestamp's digits are not numbers, a path's line number
//! is not a number).
//!
//! | in a line | becomes | example |
//! |---|---|---|
//! | a UUID | `UUID` | `6f1d2c7a-93b4-4e0f-8a51-2c9d7e4b1f08` |
//! | an ISO-8601 / RFC 3339 timestamp | `TIME` | `2025-03-01T10:15:02Z`, `2025-03-01 10:15:02` |
//! | a time of day | `TIME` | `09:41:07`, `09:41:07.120` |
//! | a hex address | `ADDR` | `0x7ffd5e2a10` |
//! | a file's line and column | `:L` | `src/lib.rs:42:7` → `src/lib.rs:L` |
//! | a temporary directory | `TMP` | `/tmp/.tmpA1b2/x.db`, `/var/folders/…`, `…\Local\Temp\…` |
//! | a duration | `DUR` | `0.03s`, `12ms`, `1.2 s`, `1m30s`, `5 seconds` |
//! | a hex digest of 8 or more digits | `HEX` | `5f0c3a9e1b7d2c44` |
//! | any other number | `N` | `401`, `3.25`, `v2.1.8` → `v2.N` |
//! | runs of white space | one space | |
//!
//! Numbers inside words stay (`E0308`, `utf8`, `test_3`): they name things rather than count
//! them. Failing ids are kept as the runner printed them: they name tests.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde::Serialize;

use super::parse::{TRUNCATED, TestRun};

/// Characters of its normalized form kept of an error line that was cut: numbers of another
/// length before the cut move where it falls, so the end of a cut line is not compared.
const CUT_LINE_CHARS: usize = 100;

/// A failure signature: failing test ids plus the first error lines, normalized so that the
/// same failure gives the same signature across runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Signature {
    /// The failing test ids, sorted and deduplicated.
    pub failing: Vec<String>,
    /// The normalized error lines, sorted and deduplicated: runners that run tests in parallel
    /// report failures in any order.
    pub errors: Vec<String>,
}

/// The signature of a run. A run with no failure gives the empty signature.
///
/// ```
/// use backstop_core::verify::parse::parse_output;
/// use backstop_core::verify::signature::signature;
///
/// let first = parse_output("FAILED t.py::test_a - assert 401 == 200\n1 failed in 0.41s\n");
/// let again = parse_output("FAILED t.py::test_a - assert 502 == 200\n1 failed in 0.39s\n");
/// let (first, again) = (first.unwrap(), again.unwrap());
/// assert_eq!(signature(&first), signature(&again));
/// assert_eq!(signature(&first).errors, ["assert N == N"]);
/// ```
pub fn signature(run: &TestRun) -> Signature {
    let failing: BTreeSet<&String> = run.failing.iter().collect();
    let errors: BTreeSet<String> = run.errors.iter().map(|e| normalize_error(e)).collect();
    Signature {
        failing: failing.into_iter().cloned().collect(),
        errors: errors.into_iter().collect(),
    }
}

impl Signature {
    /// A short stable digest of the signature for logs: 16 hex digits of FNV-1a 64 over the ids
    /// and lines, each closed by a byte that UTF-8 never holds.
    pub fn digest(&self) -> String {
        const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let fnv = |hash: u64, bytes: &[u8]| {
            bytes
                .iter()
                .fold(hash, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
        };
        let mut hash = OFFSET;
        for id in &self.failing {
            hash = fnv(fnv(hash, id.as_bytes()), &[0xff]);
        }
        hash = fnv(hash, &[0xfe]);
        for line in &self.errors {
            hash = fnv(fnv(hash, line.as_bytes()), &[0xff]);
        }
        format!("{hash:016x}")
    }
}

/// An error line normalized; of a line that was cut, only the start of its normalized form.
fn normalize_error(line: &str) -> String {
    let Some(head) = line.strip_suffix(TRUNCATED) else {
        return normalize_line(line);
    };
    let normalized = normalize_line(head);
    let kept = match normalized.char_indices().nth(CUT_LINE_CHARS) {
        Some((at, _)) => &normalized[..at],
        None => &normalized,
    };
    format!("{}{TRUNCATED}", kept.trim_end())
}

/// A rule of [`normalize_line`]: a pattern and what replaces it.
struct Rule {
    pattern: Regex,
    with: Replace,
}

enum Replace {
    /// A replacement string; `$1` is the first group.
    Text(&'static str),
    /// A hex run becomes `HEX` only if it has both a digit and a letter (so it is neither a
    /// number nor a word).
    HexDigest,
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let rule = |pattern: &str, with| Rule {
        pattern: Regex::new(pattern).expect("a valid pattern"),
        with,
    };
    vec![
        rule(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
            Replace::Text("UUID"),
        ),
        rule(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?",
            Replace::Text("TIME"),
        ),
        rule(
            r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b",
            Replace::Text("TIME"),
        ),
        rule(r"\b0[xX][0-9a-fA-F]+\b", Replace::Text("ADDR")),
        rule(
            r"([\w.\-/\\@~+]*\.[A-Za-z]\w*):\d+(?::\d+)?",
            Replace::Text("${1}:L"),
        ),
        rule(
            r#"(^|[\s'"(\[{<=,;])(?:(?:/private)?/var/folders/|/tmp/|[A-Za-z]:\\Users\\[^\\\s]+\\AppData\\Local\\Temp\\)[^\s:'"()\[\]{}<>,;]*"#,
            Replace::Text("${1}TMP"),
        ),
        rule(
            r"\b\d+(?:\.\d+)?(?:(?:ns|us|µs|μs|ms|s|m|h)(?:\d+(?:\.\d+)?(?:ns|us|µs|μs|ms|s|m|h))*| ?(?:secs?|seconds?|mins?|minutes?|hours?)| (?:ns|us|µs|μs|ms|s))\b",
            Replace::Text("DUR"),
        ),
        rule(r"\b[0-9a-f]{8,}\b", Replace::HexDigest),
        rule(r"\b\d+(?:\.\d+)*\b", Replace::Text("N")),
    ]
});

/// The normalization applied to error lines (the table in the module documentation), then
/// runs of white space made one space.
///
/// ```
/// use backstop_core::verify::signature::normalize_line;
///
/// assert_eq!(
///     normalize_line("at src/lib.rs:42:7: took 12ms at 2025-03-01T10:15:02Z, got 0x7ffd"),
///     "at src/lib.rs:L: took DUR at TIME, got ADDR"
/// );
/// ```
pub fn normalize_line(line: &str) -> String {
    let mut text = Cow::Borrowed(line);
    for rule in RULES.iter() {
        let replaced = match rule.with {
            Replace::Text(with) => rule.pattern.replace_all(&text, with),
            Replace::HexDigest => rule.pattern.replace_all(&text, |c: &Captures<'_>| {
                let run = &c[0];
                if run.bytes().any(|b| b.is_ascii_digit())
                    && run.bytes().any(|b| b.is_ascii_alphabetic())
                {
                    "HEX".to_owned()
                } else {
                    run.to_owned()
                }
            }),
        };
        if let Cow::Owned(replaced) = replaced {
            text = Cow::Owned(replaced);
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::parse::Runner;

    fn n(line: &str) -> String {
        normalize_line(line)
    }

    #[test]
    fn numbers() {
        assert_eq!(n("assert 401 == 200"), "assert N == N");
        assert_eq!(n("expected 3.25 got -1"), "expected N got -N");
        assert_eq!(
            n("Quote(parcel{w:31kg}) = 42.10 EUR"),
            "Quote(parcel{w:31kg}) = N EUR"
        );
        assert_eq!(
            n("index out of range [3] with length 3"),
            "index out of range [N] with length N"
        );
        assert_eq!(n("v2.1.8"), "v2.N");
    }

    #[test]
    fn numbers_inside_words_stay() {
        assert_eq!(
            n("error[E0308]: mismatched types"),
            "error[E0308]: mismatched types"
        );
        assert_eq!(
            n("test_3 on x86_64 with utf8"),
            "test_3 on x86_64 with utf8"
        );
    }

    #[test]
    fn hex_addresses() {
        assert_eq!(n("at 0x7ffd5e2a10 pc=0x5c3a1e"), "at ADDR pc=ADDR");
        assert_eq!(
            n("<Conn object at 0x7F3A9C2B1D60>"),
            "<Conn object at ADDR>"
        );
    }

    #[test]
    fn hex_digests_but_not_words() {
        assert_eq!(
            n("deps/ledger_core-5f0c3a9e1b7d2c44"),
            "deps/ledger_core-HEX"
        );
        assert_eq!(n("deadbeef and facade"), "deadbeef and facade");
        assert_eq!(n("id 12345678"), "id N");
    }

    #[test]
    fn paths_keep_their_file_and_lose_line_and_column() {
        assert_eq!(
            n("panicked at src/lib.rs:42:7: boom"),
            "panicked at src/lib.rs:L: boom"
        );
        assert_eq!(
            n("/home/dev/app/tests/test_api.py:27: AssertionError"),
            "/home/dev/app/tests/test_api.py:L: AssertionError"
        );
        assert_eq!(
            n("rates_test.go:58: want error"),
            "rates_test.go:L: want error"
        );
        assert_eq!(
            n("at Object.toBe (src/api/login.test.ts:24:24)"),
            "at Object.toBe (src/api/login.test.ts:L)"
        );
        assert_eq!(
            n(r"C:\work\app\src\main.rs:3:5"),
            r"C:\work\app\src\main.rs:L"
        );
    }

    #[test]
    fn durations() {
        for (line, want) in [
            ("finished in 0.03s", "finished in DUR"),
            ("took 12ms", "took DUR"),
            ("Time: 1.2 s", "Time: DUR"),
            ("timed out after 1m30s", "timed out after DUR"),
            ("waited 5 seconds", "waited DUR"),
            ("(0.00s)", "(DUR)"),
            ("[   0.010s]", "[ DUR]"),
            ("3 samples in 2 mins", "N samples in DUR"),
            ("450µs", "DUR"),
        ] {
            assert_eq!(n(line), want, "{line}");
        }
    }

    #[test]
    fn timestamps_and_times() {
        for (line, want) in [
            ("at 2025-03-01T10:15:02Z", "at TIME"),
            ("at 2025-03-01T10:15:02.123456+01:00 ok", "at TIME ok"),
            ("2025-03-01 10:15:02,120 ERROR db", "TIME ERROR db"),
            ("Start at 09:41:07", "Start at TIME"),
            ("09:41:07.120 tick", "TIME tick"),
        ] {
            assert_eq!(n(line), want, "{line}");
        }
    }

    #[test]
    fn temporary_directories() {
        assert_eq!(
            n("open /tmp/.tmpA1b2C3/stock.db: denied"),
            "open TMP: denied"
        );
        assert_eq!(n("'/private/var/folders/x1/T/pytest-7/a.txt'"), "'TMP'");
        assert_eq!(n("/tmp/.tmpA1b2/src/lib.rs:4:5"), "TMP:L");
        assert_eq!(
            n(r"in C:\Users\ana\AppData\Local\Temp\run42\x.log"),
            "in TMP"
        );
        assert_eq!(n("/home/dev/tmp/x"), "/home/dev/tmp/x");
    }

    #[test]
    fn uuids() {
        assert_eq!(
            n("run 6f1d2c7a-93b4-4e0f-8a51-2c9d7e4b1f08 failed"),
            "run UUID failed"
        );
    }

    #[test]
    fn white_space_is_collapsed() {
        assert_eq!(n("  a \t b\n"), "a b");
    }

    #[test]
    fn normalizing_twice_changes_nothing() {
        for line in [
            "panicked at src/lib.rs:42:7: left: 3 right: 0x1f at 10:00:01 in 0.2s",
            "open /tmp/x/y.db at 2025-03-01T10:15:02Z id 5f0c3a9e1b7d2c44",
        ] {
            assert_eq!(n(&n(line)), n(line), "{line}");
        }
    }

    fn run(failing: &[&str], errors: &[&str]) -> TestRun {
        TestRun {
            runner: Runner::CargoTest,
            passed: 1,
            failed: u32::try_from(failing.len()).unwrap(),
            failing: failing.iter().map(ToString::to_string).collect(),
            errors: errors.iter().map(ToString::to_string).collect(),
            broken: false,
        }
    }

    #[test]
    fn errors_are_sorted_and_deduplicated() {
        let s = signature(&run(&["b", "a"], &["z 2", "a 1", "z 3"]));
        assert_eq!(s.failing, ["a", "b"]);
        assert_eq!(s.errors, ["a N", "z N"]);
        assert_eq!(s, signature(&run(&["a", "b"], &["a 7", "z 9"])));
    }

    #[test]
    fn a_cut_line_compares_only_its_start() {
        let long = |n: u64| format!("{} {n}{TRUNCATED}", "word ".repeat(40));
        let a = signature(&run(&["t"], &[&long(1)]));
        let b = signature(&run(&["t"], &[&long(123_456)]));
        assert_eq!(a, b);
        assert!(a.errors[0].ends_with(TRUNCATED));
        assert!(a.errors[0].chars().count() <= CUT_LINE_CHARS + 1);
    }

    #[test]
    fn digests_are_stable_and_tell_signatures_apart() {
        let empty = signature(&run(&[], &[]));
        assert_eq!(empty.digest(), "af64734c8602ed21");
        let a = signature(&run(&["t"], &["boom"]));
        assert_eq!(a.digest().len(), 16);
        assert_eq!(a.digest(), signature(&run(&["t"], &["boom"])).digest());
        // The same strings on the other side of the ids/errors divide.
        let b = signature(&run(&["boom"], &["t"]));
        let c = signature(&run(&["t", "boom"], &[]));
        let digests: BTreeSet<String> = [&empty, &a, &b, &c].iter().map(|s| s.digest()).collect();
        assert_eq!(digests.len(), 4);
    }
}
