//! `go test`, with or without `-v`: `--- FAIL` lines, package lines and build errors.

use std::collections::{HashMap, HashSet};

use super::{Found, MAX_ERRORS, Runner, TestRun, len_u32};

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

pub(super) fn go_test(lines: &[&str]) -> Option<TestRun> {
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
