//! Rust's runners: `cargo test` (libtest's own output) and `cargo nextest run`.

use std::collections::HashMap;

use super::{Found, Runner, TestRun, count};

pattern!(
    LIBTEST_RESULT,
    r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed;"
);
pattern!(LIBTEST_FAILED, r"^test (.+?) \.\.\. FAILED(?: <[^>]*>)?$");
pattern!(PANIC, r"^\s*thread '[^']*'(?: \(\d+\))? panicked at (.+)$");
pattern!(RUSTC_ERROR, r"^error(\[E\d{4}\])?: (.+)$");
pattern!(RUSTC_LOCATION, r"^\s*--> (\S.*)$");
pattern!(CARGO_TARGETS_FAILED, r"^\d+ targets? failed");

pub(super) fn cargo_test(lines: &[&str]) -> Option<TestRun> {
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

pub(super) fn nextest(lines: &[&str]) -> Option<TestRun> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
