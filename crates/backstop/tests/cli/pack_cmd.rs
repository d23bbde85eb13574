//! `backstop pack check`.

use crate::support::{TempDir, arg, issues_of, pairs, run, run_in, workspace_root};

const BAD: &str = r#"
job = "bad"
title = "A pack with issues"
identity = { mode = "fields" }
attempts = { escalate = "desk", window = "soon" }
unresolved = { next_step = "Look again.", escalate = "desk" }
[[rules]]
when = { nothing = "x" }
outcome = "done"
[[escalations]]
id = "desk"
why = "w"
to = "t"
next_step = "n"
"#;

#[test]
fn the_shipped_packs_are_ok() {
    let files = [
        "packs/vendor-risk.toml",
        "packs/po-acknowledgement.toml",
        "packs/company-classification.toml",
    ];
    let mut args = vec!["pack", "check"];
    args.extend(files);
    let run = run_in(Some(&workspace_root()), &args, b"");
    run.expect_code(0);
    let want: String = files
        .iter()
        .map(|f| format!("{f}: ok"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    assert_eq!(run.stdout, want);
    assert_eq!(run.stderr, "");
}

#[test]
fn a_bad_pack_lists_every_issue_and_exits_1() {
    let dir = TempDir::new("bad-pack");
    let file = dir.write("bad.toml", BAD);
    let human = run(&["pack", "check", arg(&file)], b"");
    human.expect_code(1);
    assert!(
        human
            .stdout
            .starts_with(&format!("{}: 4 issues\n", file.display())),
        "{}",
        human.stdout
    );
    let json = run(&["pack", "check", "--json", arg(&file)], b"");
    json.expect_code(1);
    let report = json.json();
    assert_eq!(report["files"][0]["ok"], false);
    assert_eq!(
        issues_of(&report["files"][0]["issues"]),
        pairs(&[
            ("identity.fields", "needs_fields"),
            ("attempts.window", "bad_duration"),
            ("rules[0].when.nothing", "unknown_question"),
            ("rules[0].outcome", "unknown_outcome"),
        ])
    );
}

#[test]
fn a_missing_file_is_exit_2() {
    let dir = TempDir::new("missing-pack");
    let missing = dir.path().join("missing.toml");
    let run = run(&["pack", "check", arg(&missing)], b"");
    run.expect_code(2);
    assert!(run.stdout.contains("(unreadable)"), "{}", run.stdout);
}
