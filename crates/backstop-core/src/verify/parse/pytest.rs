//! pytest: its final count line, `FAILED` / `ERROR` lines and `E` lines.

use super::{Found, Runner, TestRun, count};

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

pub(super) fn pytest(lines: &[&str]) -> Option<TestRun> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
