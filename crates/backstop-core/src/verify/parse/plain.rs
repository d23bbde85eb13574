//! A tool of its own that ends with a line of counts only, such as `1 passed, 2 failed`.

use super::{Found, Runner, TestRun, count};

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

pub(super) fn plain(lines: &[&str]) -> Option<TestRun> {
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
    fn a_plain_line_holds_counts_and_nothing_else() {
        assert_eq!(plain_counts("1 passed, 2 failed"), Some((1, 2)));
        assert_eq!(plain_counts("Results: 4 passed; 1 skipped."), Some((4, 0)));
        assert_eq!(plain_counts("3 failed"), Some((0, 3)));
        assert_eq!(plain_counts("we saw 3 passed and 1 failed"), None);
        assert_eq!(plain_counts("2 warnings"), None);
        assert_eq!(plain_counts("1 skipped"), None);
    }
}
