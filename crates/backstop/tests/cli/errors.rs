//! Bad flags and bad stdin: exit 2, and every issue at once with the flag it came from.

use crate::support::{NOW, Run, classify, classify_stdin, issue_paths_and_codes, pairs, run};

/// Runs `backstop classify FLAGS --json`, with `--now NOW` unless the flags give their own.
fn classify_json(flags: &[&str]) -> Run {
    let mut args = vec!["classify"];
    if !flags.contains(&"--now") {
        args.extend_from_slice(&["--now", NOW]);
    }
    args.extend_from_slice(flags);
    args.push("--json");
    run(&args, b"")
}

/// Each bad flag alone, with the issue it must give.
const BAD_FLAGS: &[(&[&str], &str, &str)] = &[
    (&["--status", "abc"], "--status", "wrong_type"),
    (&["--status", "700"], "--status", "out_of_range"),
    (&["--header", "nocolon"], "--header", "bad_header"),
    (&["--header", ": no name"], "--header", "bad_header"),
    (&["--grpc-code", "BUSY"], "--grpc-code", "unknown_value"),
    (&["--signal", "99"], "--signal", "unknown_value"),
    (&["--side-effects", "3/2"], "--side-effects", "out_of_range"),
    (&["--side-effects", "2/0"], "--side-effects", "out_of_range"),
    (&["--side-effects", "half"], "--side-effects", "bad_format"),
    (
        &["--now", "yesterday", "--status", "503"],
        "--now",
        "bad_time",
    ),
    (&["--output", "{bad"], "--output", "bad_json"),
    (
        &["--output", "@/nonexistent/backstop/output.json"],
        "--output",
        "unreadable",
    ),
    (
        &["--schema", "{}", "--status", "500"],
        "--schema",
        "needs_output",
    ),
    (&["--sqlstate", "4000"], "--sqlstate", "bad_format"),
    // Too large for any status is the same kind of error as too large for HTTP.
    (&["--status", "70000"], "--status", "out_of_range"),
    (&["--elapsed-ms", "-5"], "--elapsed-ms", "out_of_range"),
    (&["--errno", "reset"], "--errno", "bad_format"),
    // A blank text flag counts as not given; with nothing else there is no report.
    (&["--exception", ""], "report", "empty_report"),
];

#[test]
fn each_bad_flag_is_refused_with_the_flag_as_its_path() {
    for &(flags, flag, code) in BAD_FLAGS {
        let run = classify_json(flags);
        run.expect_code(2);
        assert_eq!(run.stderr, "", "{flags:?}");
        let refusal = run.json();
        assert_eq!(
            refusal["error"]["code"], "malformed",
            "{flags:?}: {refusal}"
        );
        let issues = issue_paths_and_codes(&refusal);
        assert_eq!(issues[0], (flag.to_owned(), code.to_owned()), "{flags:?}");
        // No other flag is blamed.
        for (path, _) in &issues {
            assert!(
                path == flag || !path.starts_with("--"),
                "{flags:?}: {issues:?}"
            );
        }
    }
}

/// Every bad flag of the brief at once, in one command.
const ALL_AT_ONCE: &[&str] = &[
    "--status",
    "700",
    "--header",
    "nocolon",
    "--grpc-code",
    "BUSY",
    "--side-effects",
    "3/2",
    "--now",
    "yesterday",
    "--output",
    "{bad",
];

#[test]
fn all_bad_flags_are_listed_at_once_as_json() {
    let run = classify_json(ALL_AT_ONCE);
    run.expect_code(2);
    assert_eq!(run.stderr, "");
    let refusal = run.json();
    assert_eq!(refusal["error"]["code"], "malformed");
    assert_eq!(refusal["error"]["message"], "the command was refused");
    let mut issues = issue_paths_and_codes(&refusal);
    issues.sort();
    assert_eq!(
        issues,
        pairs(&[
            ("--grpc-code", "unknown_value"),
            ("--header", "bad_header"),
            ("--now", "bad_time"),
            ("--output", "bad_json"),
            ("--side-effects", "out_of_range"),
            ("--status", "out_of_range"),
        ])
    );
    insta::assert_snapshot!("all_bad_flags_json", run.stdout);
}

#[test]
fn all_bad_flags_are_listed_on_stderr_for_a_person() {
    let mut all = vec!["classify"];
    all.extend_from_slice(ALL_AT_ONCE);
    all.extend_from_slice(&["--output-format", "human"]);
    let run = run(&all, b"");
    run.expect_code(2);
    assert_eq!(run.stdout, "", "nothing on stdout when refused");
    let mut lines = run.stderr.lines();
    assert_eq!(lines.next(), Some("the command was refused:"));
    let mut flags: Vec<_> = lines
        .map(|line| {
            let (flag, _) = line
                .trim_start()
                .split_once(": ")
                .unwrap_or_else(|| panic!("`{line}` names no flag"));
            flag
        })
        .collect();
    flags.sort_unstable();
    assert_eq!(
        flags,
        [
            "--grpc-code",
            "--header",
            "--now",
            "--output",
            "--side-effects",
            "--status"
        ]
    );
    insta::assert_snapshot!("all_bad_flags_human", run.stderr);
}

#[test]
fn empty_stdin_without_flags_is_refused_with_a_clear_message() {
    for stdin in [&b""[..], b"  \n\n"] {
        let run = classify_stdin(&["--json"], stdin);
        run.expect_code(2);
        let refusal = run.json();
        assert_eq!(refusal["error"]["code"], "malformed");
        assert_eq!(
            issue_paths_and_codes(&refusal),
            pairs(&[("stdin", "empty_input")])
        );
    }
    let run = classify_stdin(&["--output-format", "human"], b"");
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("no report"), "{}", run.stderr);
    assert!(run.stderr.contains("--help"), "{}", run.stderr);
    insta::assert_snapshot!("empty_stdin_human", run.stderr);
}

#[test]
fn a_bad_stdin_report_is_refused_with_every_field_path() {
    let stdin = br#"{"http_status": 700, "sqlstate": "x", "errno": "bad", "schema": {}}"#;
    let run = classify_stdin(&["--json"], stdin);
    run.expect_code(2);
    let refusal = run.json();
    assert_eq!(refusal["error"]["code"], "malformed");
    assert_eq!(
        issue_paths_and_codes(&refusal),
        pairs(&[
            ("http_status", "out_of_range"),
            ("sqlstate", "bad_format"),
            ("errno", "bad_format"),
            ("schema", "needs_output"),
        ])
    );
    insta::assert_snapshot!("bad_stdin_report_json", run.stdout);

    let human = classify_stdin(&["--output-format", "human"], stdin);
    human.expect_code(2);
    assert_eq!(human.stdout, "");
    assert!(
        human.stderr.starts_with("the report was refused:\n"),
        "{}",
        human.stderr
    );
    assert_eq!(human.stderr.lines().count(), 5, "{}", human.stderr);
}

#[test]
fn stdin_that_is_not_one_report_object_is_refused() {
    for (stdin, path, code) in [
        (
            &br#"{"http_status": 503, "retry": true}"#[..],
            "retry",
            "unknown_field",
        ),
        (br#"{"http_status": 503"#, "", "bad_json"),
        (
            br#"{"http_status": 503} {"http_status": 504}"#,
            "",
            "bad_json",
        ),
        (b"[503]", "", "wrong_type"),
        (b"{}", "", "empty_report"),
    ] {
        let run = classify_stdin(&[], stdin);
        run.expect_code(2);
        assert_eq!(
            issue_paths_and_codes(&run.json()),
            pairs(&[(path, code)]),
            "{}",
            String::from_utf8_lossy(stdin)
        );
    }
}

#[test]
fn conflicting_or_unknown_output_flags_are_refused_by_the_parser() {
    for args in [
        &["--status", "503", "--json", "--output-format", "human"][..],
        &["--status", "503", "--output-format", "xml"],
        &["--status", "503", "--status", "504"],
    ] {
        let run = classify(args);
        run.command_line_refused();
        assert!(
            run.stderr.contains("For more information, try '--help'."),
            "{args:?}: {}",
            run.stderr
        );
    }
}

/// A flag whose value cannot be read leaves the report without that field, and the report's
/// own check then adds `report: a report needs at least one field`, which the user did give.
#[test]
fn one_bad_flag_gives_one_issue() {
    for &(flags, flag, code) in BAD_FLAGS {
        let run = classify_json(flags);
        run.expect_code(2);
        assert_eq!(
            issue_paths_and_codes(&run.json()),
            pairs(&[(flag, code)]),
            "{flags:?}"
        );
    }
}
