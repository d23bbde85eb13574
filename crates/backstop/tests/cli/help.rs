//! The `--help` texts, wrapped at 100 columns (`support::run_in` sets `COLUMNS`).

use crate::support::run;

#[test]
fn top_level_help() {
    let run = run(&["--help"], b"");
    run.expect_code(0);
    for text in ["classify", "rules", "Exit codes", "--log"] {
        assert!(run.stdout.contains(text), "{text}: {}", run.stdout);
    }
    insta::assert_snapshot!("backstop_help", run.stdout);
}

#[test]
fn classify_help() {
    let run = run(&["classify", "--help"], b"");
    run.expect_code(0);
    for flag in [
        "--status",
        "--header",
        "--grpc-code",
        "--exit-code",
        "--signal",
        "--errno",
        "--sqlstate",
        "--exception",
        "--error-code",
        "--message",
        "--output",
        "--schema",
        "--side-effects",
        "--elapsed-ms",
        "--tool",
        "--operation",
        "--now",
        "--rules",
        "--json",
        "--output-format",
        "--jsonl",
        "Exit codes:",
    ] {
        assert!(run.stdout.contains(flag), "{flag}: {}", run.stdout);
    }
    assert!(
        run.stdout.lines().all(|line| line.chars().count() <= 100),
        "wrapped at 100 columns"
    );
    insta::assert_snapshot!("classify_help", run.stdout);
}

#[test]
fn rules_check_help() {
    let run = run(&["rules", "check", "--help"], b"");
    run.expect_code(0);
    assert!(
        run.stdout.contains("Usage: backstop rules check"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("2  a file could not be read"),
        "{}",
        run.stdout
    );
    insta::assert_snapshot!("rules_check_help", run.stdout);
}
