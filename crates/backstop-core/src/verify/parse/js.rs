//! JavaScript's runners: Vitest and Jest.

use std::collections::BTreeSet;

use super::{Found, Runner, TestRun, count, len_u32};

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

pub(super) fn vitest(lines: &[&str]) -> Option<TestRun> {
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

pub(super) fn jest(lines: &[&str]) -> Option<TestRun> {
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
