//! The operator's queue: `review list|show` and `cases show` as tables for a person (forced
//! with `--output-format human`) and JSON when piped; `review resolve` takes only a decision
//! the item allows (its pack's decisions, or a task's `retry`/`stop`, and `handoff`); and every
//! command that reads a ledger refuses a `--db` path with none there rather than creating one.

use std::path::{Path, PathBuf};

use backstop_store::TaskEscalation;
use serde_json::{Value, json};

use crate::support::{
    Run, TempDir, arg, issue_paths_and_codes, pairs, run, run_in, workspace_root,
};

/// The time of the held case's attempt.
const T0: &str = "2026-01-01T00:00:00Z";
/// When the task escalated: one hour later.
const T1: &str = "2026-01-01T01:00:00Z";
/// The time ages are counted to: three hours after [`T0`].
const T3: &str = "2026-01-01T03:00:00Z";

/// A ledger with one held vendor-risk case (`acme.io`, item 1) and, optionally, one task
/// escalated to `oncall` (`build-7`, item 2).
#[derive(Debug)]
struct Queue {
    dir: TempDir,
    db: PathBuf,
}

impl Queue {
    fn new(tag: &str, with_task: bool) -> Self {
        let dir = TempDir::new(tag);
        let db = dir.path().join("backstop.db");
        let queue = Queue { dir, db };
        let held = queue.decide("e1", "acme.io", &personal_data());
        held.expect_code(0);
        assert_eq!(held.json()["status"], "held", "{held:#?}");
        if with_task {
            let store = backstop_store::open(queue.db()).expect("the ledger opens");
            let escalation = TaskEscalation {
                task: "build-7".to_owned(),
                tool: Some("ci".to_owned()),
                class: "transient".to_owned(),
                evidence: json!([{"field": "http_status", "value": "503", "rule": "http-503"}]),
                to: "oncall".to_owned(),
                why: String::new(),
            };
            let at = T1.parse().expect("a time");
            let opened = store
                .open_task_review("local", &escalation, "the task's retries are spent", at)
                .expect("the task's item opens");
            assert_eq!(opened.map(|item| item.id), Some(2));
        }
        queue
    }

    fn db(&self) -> &str {
        arg(&self.db)
    }

    /// `backstop decide` of a vendor-risk request for `case` whose data access is `excerpt`.
    fn decide(&self, execution_id: &str, case: &str, excerpt: &Value) -> Run {
        let pack = packs_dir().join("vendor-risk.toml");
        let request = json!({
            "execution_id": execution_id,
            "case": {"id": case},
            "questions": {"data_access": {"excerpts": [excerpt]}},
            "related": {"counterparty": {
                "id": "acct-991",
                "excerpts": [{"source": "crm", "locator": "acct-991", "text": "Northwind Traders"}],
            }},
        });
        run(
            &[
                "decide",
                "--pack",
                arg(&pack),
                "--db",
                self.db(),
                "--now",
                T0,
            ],
            request.to_string().as_bytes(),
        )
    }

    /// `backstop review ARGS --db DB`, from the crate's folder (which has no `./packs`).
    fn review(&self, args: &[&str]) -> Run {
        let mut all = vec!["review"];
        all.extend_from_slice(args);
        all.extend(["--db", self.db()]);
        run(&all, b"")
    }

    /// `backstop review resolve --id ID --decision DECISION --by dana --now T3 EXTRA`.
    fn resolve(&self, id: &str, decision: &str, extra: &[&str]) -> Run {
        let mut args = vec![
            "resolve",
            "--id",
            id,
            "--decision",
            decision,
            "--by",
            "dana",
            "--now",
            T3,
        ];
        args.extend_from_slice(extra);
        self.review(&args)
    }

    /// The item as `review show ID` prints it when piped.
    #[track_caller]
    fn item(&self, id: &str) -> Value {
        let shown = self.review(&["show", id]);
        shown.expect_code(0);
        shown.json()
    }
}

/// The shipped packs.
fn packs_dir() -> PathBuf {
    workspace_root().join("packs")
}

/// A quote that answers `data_access = pii`: the case is held for the privacy team.
fn personal_data() -> Value {
    json!({"source": "dpa-2024.pdf", "locator": "§2.1",
           "text": "The vendor processes personal data of our customers."})
}

#[test]
fn review_list_is_a_table_for_a_person_and_json_when_piped() {
    let queue = Queue::new("queue-list", true);
    let human = queue.review(&["list", "--output-format", "human", "--now", T3]);
    human.expect_code(0);
    assert_eq!(human.stderr, "", "{human:#?}");
    insta::assert_snapshot!("review_list_human", human.stdout);

    let piped = queue.review(&["list", "--now", T3]);
    piped.expect_code(0);
    let listed = piped.json();
    let keys: Vec<&String> = listed.as_object().expect("an object").keys().collect();
    assert_eq!(keys, ["reviews"], "{listed}");
    let ids: Vec<&Value> = listed["reviews"]
        .as_array()
        .expect("an array")
        .iter()
        .map(|item| &item["id"])
        .collect();
    assert_eq!(ids, [2, 1], "newest first");
    assert_eq!(listed["reviews"][0]["task"]["to"], "oncall");
    assert_eq!(queue.review(&["list", "--json"]).json(), listed);
    let forced = queue.review(&["list", "--output-format", "json"]);
    assert_eq!(forced.json(), listed);

    let none = queue.review(&["list", "--status", "resolved", "--output-format", "human"]);
    none.expect_code(0);
    assert_eq!(none.stdout, "no resolved review items\n");
    let both = queue.review(&["list", "--json", "--output-format", "human"]);
    assert_eq!(both.command_line_refused()["code"], "conflicting_flags");
}

#[test]
fn review_show_prints_every_field_and_the_decisions_it_takes() {
    let queue = Queue::new("queue-show", true);
    let packs = packs_dir();
    let case = queue.review(&[
        "show",
        "1",
        "--packs",
        arg(&packs),
        "--now",
        T3,
        "--output-format",
        "human",
    ]);
    case.expect_code(0);
    insta::assert_snapshot!("review_show_case_human", case.stdout);
    // Without its pack a case's decisions cannot be listed; the rest is shown.
    let packless = queue.review(&["show", "1", "--output-format", "human"]);
    packless.expect_code(0);
    assert!(
        packless
            .stdout
            .contains("resolve with  cannot be listed without the job's pack:"),
        "{packless:#?}"
    );
    assert!(packless.stdout.contains("(no_pack)"), "{packless:#?}");

    // A task's decisions need no pack.
    let task = queue.review(&["show", "2", "--now", T3, "--output-format", "human"]);
    task.expect_code(0);
    insta::assert_snapshot!("review_show_task_human", task.stdout);

    // Piped, the item with the decisions it takes, exactly as `review resolve` prints it
    // once resolved (and then it takes none).
    let open = queue.item("2");
    assert_eq!(open["kind"], "task");
    assert_eq!(open["task"]["evidence"][0]["field"], "http_status");
    assert_eq!(open["resolution"], Value::Null);
    assert_eq!(
        open["allowed_decisions"],
        json!(["retry", "stop", "handoff"])
    );
    let case = queue.review(&["show", "1", "--packs", arg(&packs)]).json();
    assert!(
        case["allowed_decisions"]
            .as_array()
            .is_some_and(|d| d.contains(&json!("handoff"))),
        "{case}"
    );
    let resolved = queue.resolve("2", "stop", &[]);
    resolved.expect_code(0);
    let mut shown = queue.item("2");
    assert_eq!(
        shown["allowed_decisions"],
        Value::Null,
        "resolved: it takes none"
    );
    shown.as_object_mut().unwrap().remove("allowed_decisions");
    assert_eq!(shown, resolved.json());
    let after = queue.review(&["show", "2", "--output-format", "human"]);
    assert!(
        after
            .stdout
            .contains("resolved    stop by dana at 2026-01-01 03:00:00Z"),
        "{after:#?}"
    );
    assert!(!after.stdout.contains("resolve with"), "{after:#?}");
}

#[test]
fn review_show_of_an_unknown_id_is_refused_with_exit_3() {
    let queue = Queue::new("queue-unknown", false);
    let piped = queue.review(&["show", "99"]);
    piped.expect_code(3);
    let error = &piped.json()["error"];
    assert_eq!(error["code"], "unknown_review", "{error}");
    assert_eq!(error["message"], "no review item 99");
    let human = queue.review(&["show", "99", "--output-format", "human"]);
    human.expect_code(3);
    assert_eq!(human.stdout, "", "{human:#?}");
    assert_eq!(
        human.stderr,
        "refused (unknown_review): no review item 99\n"
    );
    let help = run(&["review", "show", "--help"], b"");
    help.expect_code(0);
    for text in [
        "Usage: backstop review show [OPTIONS] <ID>",
        "--packs <PATH>",
        "--output-format",
        "Exit codes:",
        "1  the ledger could not be opened or read",
        "2  bad flags, or no ledger at --db (never created here)",
        "3  no such item (a refusal is printed)",
    ] {
        assert!(help.stdout.contains(text), "{text}: {}", help.stdout);
    }
}

#[test]
fn review_resolve_refuses_a_decision_the_item_does_not_take_and_writes_nothing() {
    let queue = Queue::new("queue-decision", true);
    let packs = packs_dir();
    for (id, allowed) in [
        ("1", "approve, reject, handoff"),
        ("2", "retry, stop, handoff"),
    ] {
        for decision in ["totally_made_up", "review_privacy", "approve_ish"] {
            let refused = queue.resolve(id, decision, &["--packs", arg(&packs)]);
            // The refusal HTTP answers 409 with, and its exit code.
            refused.expect_code(3);
            let refusal = refused.json();
            assert_eq!(
                refusal["error"]["code"], "decision_not_allowed",
                "{refusal}"
            );
            assert_eq!(
                issue_paths_and_codes(&refusal),
                pairs(&[("--decision", "unknown_decision")])
            );
            let message = refusal["error"]["issues"][0]["message"]
                .as_str()
                .expect("a message");
            assert!(
                message.ends_with(&format!("it may be resolved with: {allowed}")),
                "{message}"
            );
        }
        assert_eq!(queue.item(id)["resolution"], Value::Null, "item {id}");
    }
    // A case's lane is where it waits, not how it ends; a task takes no pack decision.
    let wrong_kind = queue.resolve("2", "approve", &["--packs", arg(&packs)]);
    wrong_kind.expect_code(3);
    // Nothing was written: the case is still in review and its cycle did not end.
    let blocked = queue.decide("e2", "acme.io", &personal_data());
    blocked.expect_code(3);
    assert_eq!(blocked.json()["error"]["code"], "case_in_review");

    let approved = queue.resolve("1", "approve", &["--packs", arg(&packs)]);
    approved.expect_code(0);
    let item = approved.json();
    assert_eq!(item["resolution"]["decision"], "approve", "{item}");
    assert_eq!(item["resolution"]["by"], "dana");
    // A hand-off says who takes it over, as on the page and over HTTP.
    let bare = queue.resolve("2", "handoff", &[]);
    bare.expect_code(2);
    assert_eq!(
        issue_paths_and_codes(&bare.json()),
        pairs(&[("--note", "missing_note")])
    );
    assert_eq!(queue.item("2")["resolution"], Value::Null);
    let handed = queue.resolve("2", "handoff", &["--note", "the platform team takes it"]);
    handed.expect_code(0);
    assert_eq!(handed.json()["resolution"]["decision"], "handoff");
    assert_eq!(
        queue.review(&["list", "--json"]).json(),
        json!({"reviews": []})
    );
}

#[test]
fn review_resolve_of_a_case_needs_its_pack_in_packs() {
    let queue = Queue::new("queue-packs", false);
    // The crate's folder has no ./packs: the decision cannot be checked.
    let missing = queue.resolve("1", "approve", &[]);
    missing.expect_code(2);
    let refusal = missing.json();
    assert_eq!(
        issue_paths_and_codes(&refusal),
        pairs(&[("--packs", "no_pack")])
    );
    let message = refusal["error"]["issues"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("no pack for job `vendor-risk`"),
        "{message}"
    );
    assert!(
        message.contains("cannot be checked without it"),
        "{message}"
    );

    // Another job's pack is not this one's.
    let po = packs_dir().join("po-acknowledgement.toml");
    let other = queue.resolve("1", "approve", &["--packs", arg(&po)]);
    other.expect_code(2);
    let message = other.json()["error"]["issues"][0]["message"].clone();
    assert!(
        message
            .as_str()
            .is_some_and(|m| m.contains("(loaded: po-acknowledgement)")),
        "{message}"
    );

    // A pack with issues is listed under --packs, with its file.
    let bad = queue.dir.write("bad.toml", "job = \"x\"\n");
    let broken = queue.resolve("1", "approve", &["--packs", arg(&bad)]);
    broken.expect_code(2);
    let paths = issue_paths_and_codes(&broken.json());
    let prefix = format!("--packs: {}", bad.display());
    assert!(
        !paths.is_empty() && paths.iter().all(|(path, _)| path.starts_with(&prefix)),
        "{paths:?}"
    );
    assert_eq!(queue.item("1")["resolution"], Value::Null);

    // `./packs`, where `serve` finds it, is the default.
    let here = TempDir::new("queue-packs-here");
    copy_packs(&here.path().join("packs"));
    let resolved = run_in(
        Some(here.path()),
        &[
            "review",
            "resolve",
            "--id",
            "1",
            "--decision",
            "approve",
            "--by",
            "dana",
            "--db",
            queue.db(),
        ],
        b"",
    );
    resolved.expect_code(0);
    assert_eq!(resolved.json()["resolution"]["decision"], "approve");
}

/// Copies the shipped packs into `to`.
fn copy_packs(to: &Path) {
    std::fs::create_dir_all(to).expect("the folder can be made");
    for entry in std::fs::read_dir(packs_dir()).expect("the packs folder lists") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            std::fs::copy(&path, to.join(path.file_name().expect("a name")))
                .expect("a pack copies");
        }
    }
}

#[test]
fn cases_show_is_a_timeline_for_a_person_and_json_when_piped() {
    let queue = Queue::new("queue-case", false);
    let show = |extra: &[&str]| {
        let mut args = vec![
            "cases",
            "show",
            "--db",
            queue.db(),
            "--job",
            "vendor-risk",
            "--case",
            "acme.io",
        ];
        args.extend_from_slice(extra);
        run(&args, b"")
    };
    let human = show(&["--output-format", "human"]);
    human.expect_code(0);
    insta::assert_snapshot!("cases_show_human", human.stdout);
    // The sources and locators cited, never the excerpt text (which is not kept).
    assert!(human.stdout.contains("dpa-2024.pdf §2.1"), "{human:#?}");
    assert!(!human.stdout.contains("personal data"), "{human:#?}");

    let piped = show(&[]);
    piped.expect_code(0);
    let case = piped.json();
    let mut keys: Vec<&String> = case.as_object().expect("an object").keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "attempts",
            "caller",
            "cycle",
            "id",
            "issued",
            "job",
            "opened_at",
            "reviews"
        ]
    );
    assert_eq!(show(&["--json"]).json(), case);

    let unknown = run(
        &[
            "cases",
            "show",
            "--db",
            queue.db(),
            "--job",
            "vendor-risk",
            "--case",
            "nowhere.com",
            "--output-format",
            "human",
        ],
        b"",
    );
    unknown.expect_code(3);
    assert_eq!(unknown.stdout, "");
    assert!(
        unknown.stderr.starts_with("refused (unknown_case): "),
        "{unknown:#?}"
    );
}

#[test]
fn commands_that_read_a_ledger_refuse_a_missing_one_and_create_none() {
    let dir = TempDir::new("queue-missing");
    let db = dir.path().join("typo.db");
    let db = arg(&db);
    let commands: [&[&str]; 12] = [
        &["review", "list"],
        &["review", "list", "--output-format", "human"],
        &["review", "show", "1"],
        &[
            "review",
            "resolve",
            "--id",
            "1",
            "--decision",
            "approve",
            "--by",
            "dana",
        ],
        &["cases", "show", "--job", "vendor-risk", "--case", "acme.io"],
        &["purge"],
        &["task", "show", "build-7"],
        &["task", "reset", "build-7"],
        &["notify", "list"],
        &["dispatch", "show", "dk_1"],
        &["dispatch", "outcome", "dk_1", "--outcome", "sent"],
        &["review", "show", "1", "--json"],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.extend(["--db", db]);
        let refused = run(&args, b"");
        // A missing ledger is a missing file: exit 2, as for every command.
        refused.expect_code(2);
        let named = format!("{db}: no ledger there; `backstop ");
        if command.contains(&"human") {
            // For a person: on stderr, the issue with its path.
            assert_eq!(refused.stdout, "", "{refused:#?}");
            assert!(
                refused.stderr.contains(&format!("--db: {named}")),
                "{refused:#?}"
            );
        } else {
            let issue = &refused.json()["error"]["issues"][0];
            assert_eq!(
                (&issue["path"], &issue["code"]),
                (&json!("--db"), &json!("no_ledger"))
            );
            assert!(
                issue["message"].as_str().unwrap().starts_with(&named),
                "{refused:#?}"
            );
        }
        assert!(
            !Path::new(db).exists(),
            "{command:?} created the ledger it refused"
        );
    }
    // A PostgreSQL URL is not a path: it is tried as it is (and here fails to connect).
    let url = "postgres://nobody@127.0.0.1:1/backstop";
    let remote = run(&["review", "list", "--db", url], b"");
    remote.expect_code(1);
    assert!(!remote.stderr.contains("no ledger there"), "{remote:#?}");
    assert!(remote.stderr.contains("PostgreSQL"), "{remote:#?}");

    // `decide` still makes a ledger; the readers then read it.
    let queue = Queue::new("queue-made", false);
    assert!(queue.db.is_file(), "decide creates its ledger");
    queue.review(&["list"]).expect_code(0);
}

#[test]
fn every_ledger_reader_lists_the_missing_ledger_among_its_exit_codes() {
    for command in [
        &["review", "list"][..],
        &["review", "show"],
        &["review", "resolve"],
        &["cases", "show"],
        &["purge"],
        &["task", "show"],
        &["notify", "list"],
    ] {
        let mut args = command.to_vec();
        args.push("--help");
        let help = run(&args, b"");
        help.expect_code(0);
        assert!(help.stdout.contains("Exit codes:"), "{command:?}");
        assert!(
            help.stdout
                .contains("no ledger at --db (never created here)"),
            "{command:?}: {}",
            help.stdout
        );
    }
}

/// A held vendor can be turned down as well as approved: `reject` is one of the vendor-risk
/// pack's decisions.
#[test]
fn a_held_vendor_can_be_rejected() {
    let queue = Queue::new("queue-reject", true);
    let packs = packs_dir();
    let rejected = queue.resolve("1", "reject", &["--packs", arg(&packs)]);
    rejected.expect_code(0);
    assert_eq!(queue.item("1")["resolution"]["decision"], "reject");
}
