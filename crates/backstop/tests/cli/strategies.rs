//! `backstop strategies check` and `backstop strategies show`.

use serde_json::Value;

use crate::support::{Run, TempDir, arg, issues_of, pairs, run, run_in, workspace_root};

/// A user file with every kind of issue found after parsing.
const BAD: &str = r#"
[limits]
tasks = 0
task_max_attempts = 0

[[classes.policy_denied]]
action = "fallback_tool"
hint = "try {tool} elsewhere"

[[classes.transient]]
action = "retry_same"
max_attempts = 0
cooldown = "a while"
hint = "{tool} failed; {nope}"

[[classes.flaky]]
action = "stop"
hint = "x"
"#;

/// The issues of [`BAD`], without their file prefix.
const BAD_ISSUES: [(&str, &str); 7] = [
    ("limits.task_max_attempts", "out_of_range"),
    ("limits.tasks", "out_of_range"),
    ("classes.flaky", "unknown_class"),
    ("classes.policy_denied[0].action", "forbidden_action"),
    ("classes.transient[0].max_attempts", "out_of_range"),
    ("classes.transient[0].hint", "unknown_placeholder"),
    ("classes.transient[0].cooldown", "bad_duration"),
];

#[test]
fn the_built_in_strategies_and_an_empty_file_are_ok() {
    let builtin = run_in(
        Some(&workspace_root()),
        &[
            "strategies",
            "check",
            "--output-format",
            "human",
            "rules/strategies.toml",
        ],
        b"",
    );
    builtin.expect_code(0);
    assert_eq!(builtin.stdout, "rules/strategies.toml: ok\n");
    assert_eq!(builtin.stderr, "");

    // An empty file overrides nothing, so it is the built-in table: ok.
    let dir = TempDir::new("strategies-empty");
    let empty = dir.write("empty.toml", "");
    let comments = dir.write("comments.toml", "# nothing to override yet\n");
    let run = run(
        &[
            "strategies",
            "check",
            "--output-format",
            "human",
            arg(&empty),
            arg(&comments),
        ],
        b"",
    );
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        format!("{}: ok\n{}: ok\n", empty.display(), comments.display())
    );
}

#[test]
fn small_overrides_are_ok() {
    let dir = TempDir::new("strategies-small");
    for (name, text) in [
        (
            "escalate.toml",
            "[[classes.transient]]\naction = \"escalate\"\nhint = \"page {tool}'s owner\"\n",
        ),
        ("long-wait.toml", "[limits]\nlong_wait = \"escalate\"\n"),
        ("breaker.toml", "[breaker]\nopen_ms = 1000\n"),
        (
            "grant.toml",
            "[[grants]]\nid = \"warmup\"\nerror = \"declined\"\nreason = \"it declines while warming up\"\n",
        ),
    ] {
        let file = dir.write(name, text);
        let run = checked_for_a_person(&file);
        run.expect_code(0);
        assert_eq!(run.stdout, format!("{}: ok\n", file.display()), "{name}");
    }
}

#[test]
fn a_file_with_issues_is_exit_1_with_every_issue() {
    let dir = TempDir::new("strategies-bad");
    let file = dir.write("bad.toml", BAD);
    let run = checked_for_a_person(&file);
    run.expect_code(1);
    assert_eq!(run.stderr, "");
    assert!(
        run.stdout
            .starts_with(&format!("{}: 7 issues\n", file.display())),
        "{}",
        run.stdout
    );
    for (path, code) in BAD_ISSUES {
        let line = format!("\n  {path}: ");
        assert!(run.stdout.contains(&line), "{line} in {}", run.stdout);
        assert!(run.stdout.contains(&format!("({code})\n")), "{code}");
    }
    assert_eq!(run.stdout.lines().count(), 1 + BAD_ISSUES.len());
    dir.snapshot(|| insta::assert_snapshot!("check_bad_human", run.stdout));
}

#[test]
fn a_file_with_issues_as_json() {
    let dir = TempDir::new("strategies-bad-json");
    let file = dir.write("bad.toml", BAD);
    let run = run(&["strategies", "check", "--json", arg(&file)], b"");
    run.expect_code(1);
    let report = run.json();
    let files = report["files"].as_array().expect("files is an array");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["file"], arg(&file));
    assert_eq!(files[0]["ok"], false);
    let expected: Vec<_> = BAD_ISSUES
        .iter()
        .map(|(path, code)| ((*path).to_owned(), (*code).to_owned()))
        .collect();
    assert_eq!(issues_of(&files[0]["issues"]), expected);
    dir.snapshot(|| insta::assert_snapshot!("check_bad_json", run.stdout));
}

#[test]
fn structural_errors_are_issues_too() {
    let dir = TempDir::new("strategies-structural");
    let cases = [
        ("[limits\n", "", "bad_toml"),
        ("[limits]\ntaks = 3\n", "limits.taks", "unknown_key"),
        (
            "[[classes.transient]]\naction = \"pray\"\nhint = \"x\"\n",
            "classes.transient[0].action",
            "wrong_type",
        ),
        (
            "[limits]\nlong_wait = \"never\"\n",
            "limits.long_wait",
            "wrong_type",
        ),
    ];
    for (text, path, code) in cases {
        let file = dir.write("structural.toml", text);
        let run = run(&["strategies", "check", "--json", arg(&file)], b"");
        run.expect_code(1);
        // Paths are relative to the file, which the report names once.
        let at = (*path).to_owned();
        assert_eq!(
            issues_of(&run.json()["files"][0]["issues"]),
            pairs(&[(&at, code)]),
            "{text}"
        );
    }
}

#[test]
fn json_lists_every_file_with_file_ok_and_issues() {
    let dir = TempDir::new("strategies-many");
    let empty = dir.write("empty.toml", "");
    let bad = dir.write("bad.toml", BAD);
    let missing = dir.path().join("missing.toml");
    let run = run(
        &[
            "strategies",
            "check",
            "--json",
            arg(&empty),
            arg(&bad),
            arg(&missing),
        ],
        b"",
    );
    // An unreadable file outranks issues found in another.
    run.expect_code(2);
    let report = run.json();
    let object = report.as_object().expect("an object");
    assert_eq!(object.keys().collect::<Vec<_>>(), ["files"]);
    let files = report["files"].as_array().expect("files is an array");
    let summary: Vec<_> = files
        .iter()
        .map(|f| {
            let mut keys: Vec<_> = f.as_object().expect("a file is an object").keys().collect();
            keys.sort();
            assert_eq!(keys, ["file", "issues", "ok"], "{f}");
            assert_eq!(f["ok"], f["issues"].as_array().is_some_and(Vec::is_empty));
            (f["file"].clone(), f["ok"].clone())
        })
        .collect();
    assert_eq!(
        summary,
        [
            (Value::from(arg(&empty)), Value::from(true)),
            (Value::from(arg(&bad)), Value::from(false)),
            (Value::from(arg(&missing)), Value::from(false)),
        ]
    );
    assert_eq!(issues_of(&files[2]["issues"]), pairs(&[("", "unreadable")]));
}

#[test]
fn a_missing_file_is_exit_2() {
    let dir = TempDir::new("strategies-missing");
    let missing = dir.path().join("missing.toml");
    let run = run(
        &[
            "strategies",
            "check",
            "--output-format",
            "human",
            arg(&missing),
        ],
        b"",
    );
    run.expect_code(2);
    assert!(
        run.stdout
            .starts_with(&format!("{}: 1 issue\n", missing.display())),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("(unreadable)"), "{}", run.stdout);
}

#[test]
fn check_needs_a_file() {
    let run = run(&["strategies", "check"], b"");
    run.command_line_refused();
    assert!(run.stderr.contains("<FILE>"), "{}", run.stderr);
}

#[test]
fn show_prints_the_built_in_strategies() {
    let builtin = std::fs::read_to_string(workspace_root().join("rules/strategies.toml"))
        .expect("rules/strategies.toml is readable");
    let run = run(&["strategies", "show"], b"");
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    assert!(
        run.stdout
            .starts_with("# backstop's built-in recovery strategies"),
        "{}",
        &run.stdout[..run.stdout.len().min(200)]
    );
    assert!(
        run.stdout == builtin,
        "`strategies show` differs from rules/strategies.toml"
    );

    // What `show` prints is a valid strategies file.
    let dir = TempDir::new("strategies-show");
    let file = dir.write("shown.toml", &run.stdout);
    let check = checked_for_a_person(&file);
    check.expect_code(0);
}

/// `backstop strategies check --output-format human FILE`.
fn checked_for_a_person(file: &std::path::Path) -> Run {
    run(
        &["strategies", "check", "--output-format", "human", arg(file)],
        b"",
    )
}
