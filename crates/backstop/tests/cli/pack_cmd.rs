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
    let mut args = vec!["pack", "check", "--output-format", "human"];
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
    let human = run(
        &["pack", "check", "--output-format", "human", arg(&file)],
        b"",
    );
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
    let run = run(
        &["pack", "check", "--output-format", "human", arg(&missing)],
        b"",
    );
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

/// The issue codes of a refusal's or a check's `issues`, sorted.
fn codes(issues: &serde_json::Value) -> Vec<String> {
    let mut codes: Vec<String> = issues_of(issues)
        .into_iter()
        .map(|(_, code)| code)
        .collect();
    codes.sort();
    codes
}

/// The shipped purchase-order pack with `line` added to its `[dispatch]` table.
fn po_with_dispatch(line: &str) -> String {
    let shipped = std::fs::read_to_string(workspace_root().join("packs/po-acknowledgement.toml"))
        .expect("the shipped pack is readable");
    shipped.replacen("[dispatch]\n", &format!("[dispatch]\n{line}\n"), 1)
}

/// Every kind of pack file a loader refuses: `(name, text, refused by the service only)`.
/// The service-only ones are refused by what a service may contact, which a command that
/// loads a pack for itself never does.
fn refused_packs() -> Vec<(&'static str, String, bool)> {
    let shipped = po_with_dispatch("");
    vec![
        ("syntax.toml", "job = \"x\"\n[questions\n".to_owned(), false),
        ("issues.toml", BAD.to_owned(), false),
        (
            "zone.toml",
            shipped.replace("\"America/Chicago\"", "\"Mars/Olympus\""),
            false,
        ),
        (
            "schema.toml",
            po_with_dispatch("result_schema = \"no-such-schema.json\""),
            false,
        ),
        (
            "status.toml",
            po_with_dispatch("status_url = \"http://169.254.169.254/results/{key}\""),
            true,
        ),
    ]
}

#[test]
fn pack_check_refuses_exactly_what_every_loader_refuses() {
    for (name, text, service_only) in refused_packs() {
        let dir = TempDir::new("pack-refusals");
        let folder = dir.path().join("packs");
        std::fs::create_dir(&folder).unwrap();
        let file = folder.join(name);
        std::fs::write(&file, &text).unwrap();

        let checked = run(&["pack", "check", "--json", arg(&file)], b"");
        checked.expect_code(1);
        let found = codes(&checked.json()["files"][0]["issues"]);
        assert!(!found.is_empty(), "{name}: {}", checked.stdout);

        // The service's loader: `config check` loads the packs as `serve` does.
        let config = dir.write("backstop.toml", "packs = [\"packs\"]\n");
        let served = run(&["config", "check", "--json", arg(&config)], b"");
        served.expect_code(1);
        assert_eq!(
            codes(&served.json()["issues"]),
            found,
            "{name}: config check"
        );

        // The commands that load one pack file for themselves.
        let db = dir.path().join("ledger.db");
        for command in [
            vec!["decide", "--pack", arg(&file), "--db", arg(&db)],
            vec!["pack", "brief", arg(&file), "--json"],
        ] {
            let loaded = run(&command, b"{}");
            if service_only {
                for code in &found {
                    assert!(
                        !loaded.stdout.contains(code.as_str()),
                        "{name}: {command:?}: {}",
                        loaded.stdout
                    );
                }
                continue;
            }
            loaded.expect_code(2);
            let refusal = loaded.json();
            assert_eq!(
                codes(&refusal["error"]["issues"]),
                found,
                "{name}: {command:?}"
            );
        }
        assert!(!db.exists(), "{name}: a refused pack made a ledger");
    }
}

#[test]
fn pack_check_refuses_a_second_pack_for_a_job_as_the_service_does() {
    let dir = TempDir::new("pack-duplicate-job");
    let shipped = workspace_root().join("packs/vendor-risk.toml");
    let text = std::fs::read_to_string(shipped).unwrap();
    let folder = dir.path().join("packs");
    std::fs::create_dir(&folder).unwrap();
    let first = folder.join("a.toml");
    let second = folder.join("b.toml");
    std::fs::write(&first, &text).unwrap();
    std::fs::write(&second, &text).unwrap();
    let checked = run(&["pack", "check", "--json", arg(&first), arg(&second)], b"");
    checked.expect_code(1);
    let files = &checked.json()["files"];
    assert_eq!(files[0]["ok"], true, "{files}");
    assert_eq!(codes(&files[1]["issues"]), ["duplicate_job"], "{files}");
    let config = dir.write("backstop.toml", "packs = [\"packs\"]\n");
    let served = run(&["config", "check", "--json", arg(&config)], b"");
    assert_eq!(codes(&served.json()["issues"]), ["duplicate_job"]);
}
