//! `backstop rules check` and `backstop rules show`.

use serde_json::Value;

use crate::support::{TempDir, arg, issues_of, pairs, run, run_in, workspace_root};

const SHADOWED: &str = r#"
[[rules]]
id = "any-5xx"
class = "transient"
when = { http_status = { min = 500, max = 599 } }

[[rules]]
id = "not-implemented"
class = "capability_missing"
when = { http_status = 501 }
"#;

#[test]
fn the_default_rules_are_ok() {
    let run = run_in(
        Some(&workspace_root()),
        &[
            "rules",
            "check",
            "--output-format",
            "human",
            "rules/default.toml",
        ],
        b"",
    );
    run.expect_code(0);
    assert_eq!(run.stdout, "rules/default.toml: ok\n");
    assert_eq!(run.stderr, "");
}

/// A rule id a built-in rule has is refused by `rules check`, as loading refuses it.
#[test]
fn an_id_a_built_in_rule_has_is_an_issue_as_loading_says() {
    let dir = TempDir::new("builtin-id");
    let file = dir.write(
        "mine.toml",
        "[[rules]]\nid = \"http.403\"\nclass = \"auth\"\nwhen = { http_status = 599 }\n",
    );
    let checked = run(&["rules", "check", arg(&file), "--json"], b"");
    checked.expect_code(1);
    assert!(
        checked.stdout.contains("duplicate_id"),
        "{}",
        checked.stdout
    );
    let loaded = run(&["classify", "--status", "599", "--rules", arg(&file)], b"");
    assert!(loaded.stdout.contains("duplicate_id") || loaded.stderr.contains("duplicate_id"));
}

#[test]
fn a_shadowed_rule_is_an_issue_and_exit_1() {
    let dir = TempDir::new("shadowed");
    let file = dir.write("shadowed.toml", SHADOWED);
    let run = run(
        &["rules", "check", "--output-format", "human", arg(&file)],
        b"",
    );
    run.expect_code(1);
    assert!(
        run.stdout
            .starts_with(&format!("{}: 1 issue\n  rules[1]: ", file.display())),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("`not-implemented`"), "{}", run.stdout);
    assert!(
        run.stdout.contains("rules[0] (`any-5xx`)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.trim_end().ends_with("(shadowed)"),
        "{}",
        run.stdout
    );
    dir.snapshot(|| insta::assert_snapshot!("check_shadowed_human", run.stdout));

    // Classification agrees: the wide rule decides a 501.
    let classified = crate::support::classify(&["--rules", arg(&file), "--status", "501"]);
    assert_eq!(classified.expect_code(0).json()["rule"], "any-5xx");
}

#[test]
fn a_shadowed_rule_as_json() {
    let dir = TempDir::new("shadowed-json");
    let file = dir.write("shadowed.toml", SHADOWED);
    let run = run(&["rules", "check", arg(&file), "--json"], b"");
    run.expect_code(1);
    let report = run.json();
    let files = report["files"].as_array().expect("files is an array");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["file"], arg(&file));
    assert_eq!(files[0]["ok"], false);
    assert_eq!(
        issues_of(&files[0]["issues"]),
        pairs(&[("rules[1]", "shadowed")])
    );
    dir.snapshot(|| insta::assert_snapshot!("check_shadowed_json", run.stdout));
}

#[test]
fn a_missing_file_is_exit_2() {
    let dir = TempDir::new("missing");
    let missing = dir.path().join("missing.toml");
    let human = run(
        &["rules", "check", "--output-format", "human", arg(&missing)],
        b"",
    );
    human.expect_code(2);
    assert!(
        human
            .stdout
            .starts_with(&format!("{}: 1 issue\n", missing.display())),
        "{}",
        human.stdout
    );
    assert!(human.stdout.contains("(unreadable)"), "{}", human.stdout);

    let json = run(&["rules", "check", arg(&missing), "--json"], b"");
    json.expect_code(2);
    let report = json.json();
    assert_eq!(report["files"][0]["ok"], false);
    assert_eq!(
        issues_of(&report["files"][0]["issues"]),
        pairs(&[("", "unreadable")])
    );
}

#[test]
fn json_lists_every_file_with_file_ok_and_issues() {
    let dir = TempDir::new("many");
    let shadowed = dir.write("shadowed.toml", SHADOWED);
    let missing = dir.path().join("missing.toml");
    let run = run_in(
        Some(&workspace_root()),
        &[
            "rules",
            "check",
            "--json",
            "rules/default.toml",
            arg(&shadowed),
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
            (Value::from("rules/default.toml"), Value::from(true)),
            (Value::from(arg(&shadowed)), Value::from(false)),
            (Value::from(arg(&missing)), Value::from(false)),
        ]
    );
}

#[test]
fn a_bad_rules_file_lists_every_issue_with_its_path() {
    let dir = TempDir::new("check-bad");
    let file = dir.write(
        "bad.toml",
        r#"
        [[rules]]
        id = "a"
        class = "transient"
        when = { message = "(unclosed" }

        [[rules]]
        id = "b"
        class = "flaky"
        when = { http_status = 500 }

        [[rules]]
        id = "c"
        class = "transient"
        when = { colour = "red" }

        [[rules]]
        id = "a"
        class = "transient"
        when = { http_status = 502 }
        "#,
    );
    let run = run(&["rules", "check", "--json", arg(&file)], b"");
    run.expect_code(1);
    assert_eq!(
        issues_of(&run.json()["files"][0]["issues"]),
        pairs(&[
            ("rules[0].when.message", "bad_regex"),
            ("rules[1].class", "unknown_class"),
            ("rules[2].when.colour", "unknown_field"),
            ("rules[3].id", "duplicate_id"),
        ])
    );
}

#[test]
fn check_needs_a_file() {
    let run = run(&["rules", "check"], b"");
    run.expect_code(2);
    assert!(run.stderr.contains("<FILE>"), "{}", run.stderr);
}

#[test]
fn show_prints_the_built_in_rules() {
    let default = std::fs::read_to_string(workspace_root().join("rules/default.toml"))
        .expect("rules/default.toml is readable");
    let run = run(&["rules", "show"], b"");
    run.expect_code(0);
    assert!(
        run.stdout.starts_with("# Extractors:"),
        "{}",
        &run.stdout[..run.stdout.len().min(200)]
    );
    assert!(
        run.stdout.ends_with(&default),
        "`rules show` does not end with rules/default.toml"
    );
    assert_eq!(run.stderr, "");
}

#[test]
fn show_lists_every_extractor_beside_the_rules() {
    let run = run(&["rules", "show"], b"");
    run.expect_code(0);
    for name in [
        "botocore",
        "google_api_core",
        "python_http",
        "python_dict",
        "ok_false",
        "problem_details",
        "error_object",
        "graphql",
        "jsonrpc",
        "batch_result",
        "curl",
        "kubectl",
        "npm",
        "go_net",
        "exception_name",
        "code_words",
    ] {
        assert!(
            run.stdout.contains(&format!("# {name}: ")),
            "extractor {name} missing from rules show"
        );
    }
    // The listing is comments: the output is still a rules file.
    backstop_core::classify::parse_rules(&run.stdout, "shown").expect("rules show parses");
}
