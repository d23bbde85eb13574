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
fn a_dispatch_time_zone_this_machine_does_not_know_is_an_issue() {
    let dir = TempDir::new("zone-pack");
    let shipped =
        std::fs::read_to_string(workspace_root().join("packs/po-acknowledgement.toml")).unwrap();
    assert!(shipped.contains("time_zone = \"America/Chicago\""));
    let file = dir.write(
        "po.toml",
        &shipped.replace(
            "time_zone = \"America/Chicago\"",
            "time_zone = \"Mars/Olympus\"",
        ),
    );
    let json = run(&["pack", "check", "--json", arg(&file)], b"");
    json.expect_code(1);
    assert_eq!(
        issues_of(&json.json()["files"][0]["issues"]),
        pairs(&[("dispatch.time_zone", "unknown_time_zone")])
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

#[test]
fn pack_brief_tells_an_agent_what_a_job_asks() {
    let root = workspace_root();
    let human = run_in(
        Some(&root),
        &["pack", "brief", "vendor-risk", "--output-format", "human"],
        b"",
    );
    assert_eq!(human.code, 0, "{}", human.stderr);
    for line in [
        "vendor-risk — Vendor data-access review",
        "  data_access (required, quotes): Which customer data does the vendor handle?",
        "    - pii: The vendor handles personal data about customers.",
        "  counterparty (required): send related.counterparty.id",
        "Attempts: 3 per 24h",
        "  privacy-team → Privacy team:",
    ] {
        assert!(human.stdout.contains(line), "{line:?} in\n{}", human.stdout);
    }
    assert!(!human.stdout.contains("indicators"), "{}", human.stdout);
    // Piped, or with --json, it is the JSON the service's GET /v1/jobs/{job} answers; a pack
    // file may be named directly.
    let json = run_in(
        Some(&root),
        &["pack", "brief", "packs/vendor-risk.toml"],
        b"",
    );
    assert_eq!(json.code, 0, "{}", json.stderr);
    let brief: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(brief["attempts"]["escalate"], "vendor-desk");
    assert!(brief["request_schema"]["properties"]["questions"].is_object());
}

#[test]
fn pack_brief_of_an_unknown_job_names_the_loaded_ones_and_exits_2() {
    let run = run_in(Some(&workspace_root()), &["pack", "brief", "payroll"], b"");
    assert_eq!(run.code, 2);
    let refusal: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        crate::support::issue_paths_and_codes(&refusal),
        pairs(&[("JOB", "unknown_job")])
    );
    assert!(run.stdout.contains("vendor-risk"), "{}", run.stdout);
    assert!(
        run.stdout.contains("from ./packs") && run.stdout.contains("--packs"),
        "where it looked, and how to look elsewhere: {}",
        run.stdout
    );
}
