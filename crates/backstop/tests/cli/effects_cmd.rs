//! Side effects through the binary: `dispatch` (permission, outcome, show), `key`,
//! `reconcile`, `demo`, `pack schema`, and a `serve` killed between a permit and its outcome
//! (on `SQLite` and on `PostgreSQL`): the same content after the restart is reconciled, never
//! permitted twice.

use serde_json::{Value, json};

use crate::serve_cmd::{Server, post};
use crate::serve_postgres::Schema;
use crate::support::{TempDir, arg, issue_paths_and_codes, run, run_in, workspace_root};

const LIVE_KEY: &str = "live-key-for-tests-0123456789";

/// The PO pack with no quiet hours (tests run at any hour), live when `live`.
fn po_pack(dir: &TempDir, live: bool) -> std::path::PathBuf {
    let text = std::fs::read_to_string(workspace_root().join("packs/po-acknowledgement.toml"))
        .unwrap()
        .replace("quiet_hours = { start = \"20:00\", end = \"08:00\" }\n", "")
        .replace(
            "live = false",
            if live { "live = true" } else { "live = false" },
        );
    std::fs::create_dir_all(dir.path().join("packs")).unwrap();
    dir.write("packs/po-acknowledgement.toml", &text)
}

fn call(po: &str, contact: &str) -> Value {
    json!({
        "content": {"task": "Say you are an AI assistant calling for {{company}}. Ask whether the order was received; never ask for a password."},
        "values": {"company": "Northwind Traders"},
        "recipients": [{"id": format!("r-{po}"), "contact": contact,
                        "case": {"fields": {"supplier": "Acme Supply", "po_number": po}},
                        "simulate": {"status": "completed", "confidence": 0.95,
                                     "result": {"needs_human": "no", "spoke_with": "intended_contact",
                                                "received": "yes", "po_status": "on_time"}}}],
    })
}

#[test]
fn dispatch_key_and_outcome_through_the_binary() {
    let dir = TempDir::new("dispatch-cli");
    let pack = po_pack(&dir, true);
    let config = dir.write(
        "backstop.toml",
        &format!("[dispatch]\nlive_key = \"{LIVE_KEY}\"\n"),
    );
    let db = dir.path().join("ledger.db");
    let body = call("PO-1", "+15550101").to_string();
    let args = [
        "dispatch",
        "--pack",
        arg(&pack),
        "--db",
        arg(&db),
        "--config",
        arg(&config),
    ];
    let first = run(&args, body.as_bytes());
    first.expect_code(0);
    let answer = first.json()["answers"][0].clone();
    assert_eq!(answer["answer"], "permitted", "{answer}");
    let key = answer["key"].as_str().unwrap().to_owned();
    // `key` derives the same key with no ledger, whatever the JSON key order.
    let reordered = r#"{"recipients": [{"case": {"fields": {"po_number": "PO-1", "supplier": "Acme Supply"}},
        "contact": "+15550101", "id": "r-PO-1", "simulate": {}}],
        "values": {"company": "Northwind Traders"},
        "content": {"task": "Say you are an AI assistant calling for {{company}}. Ask whether the order was received; never ask for a password."}}"#;
    let keys = run(&["key", "--pack", arg(&pack)], reordered.as_bytes());
    keys.expect_code(0);
    assert_eq!(keys.json()["recipients"][0]["key"], json!(key));
    // Without the live key the same pack only simulates.
    let other = call("PO-2", "+15550102").to_string();
    let simulated = run(
        &["dispatch", "--pack", arg(&pack), "--db", arg(&db)],
        other.as_bytes(),
    );
    assert_eq!(simulated.json()["answers"][0]["answer"], "simulated");
    // Reconcile first, then the report, then a duplicate.
    assert_eq!(
        run(&args, body.as_bytes()).json()["answers"][0]["answer"],
        "reconcile"
    );
    let reported = run(
        &[
            "dispatch",
            "outcome",
            &key,
            "--outcome",
            "sent",
            "--db",
            arg(&db),
        ],
        b"",
    );
    reported.expect_code(0);
    assert_eq!(reported.json()["state"], "sent");
    assert_eq!(
        run(&args, body.as_bytes()).json()["answers"][0]["answer"],
        "duplicate"
    );
    let late = run(
        &[
            "dispatch",
            "outcome",
            &key,
            "--outcome",
            "failed",
            "--db",
            arg(&db),
        ],
        b"",
    );
    late.expect_code(3);
    assert_eq!(late.json()["error"]["code"], "late_outcome");
    let shown = run(&["dispatch", "show", &key, "--db", arg(&db)], b"");
    shown.expect_code(0);
    assert_eq!(shown.json()["dispatch"]["sends"], 1);
    let missing = run(
        &[
            "dispatch",
            "show",
            "dk_0",
            "--db",
            arg(&dir.path().join("nope.db")),
        ],
        b"",
    );
    missing.expect_code(2);
    assert!(!dir.path().join("nope.db").exists());
}

#[test]
fn a_malformed_dispatch_lists_every_issue_and_stores_nothing() {
    let dir = TempDir::new("dispatch-bad");
    let pack = po_pack(&dir, false);
    let db = dir.path().join("ledger.db");
    let bad =
        json!({"content": 5, "recipients": [{"id": "", "contact": "+1", "colour": 1}]}).to_string();
    let refused = run(
        &["dispatch", "--pack", arg(&pack), "--db", arg(&db)],
        bad.as_bytes(),
    );
    refused.expect_code(2);
    let found = issue_paths_and_codes(&refused.json());
    for (path, code) in [
        ("content", "wrong_type"),
        ("recipients[0].id", "empty"),
        ("recipients[0].colour", "unknown_field"),
    ] {
        assert!(
            found.contains(&(path.to_owned(), code.to_owned())),
            "{path} {code} in {found:?}"
        );
    }
    assert!(!db.exists(), "a refused request opens no ledger");
    let vendor = workspace_root().join("packs/vendor-risk.toml");
    let no_dispatch = run(
        &["dispatch", "--pack", arg(&vendor), "--db", arg(&db)],
        bad.as_bytes(),
    );
    no_dispatch.expect_code(3);
    assert_eq!(no_dispatch.json()["error"]["code"], "no_dispatch");
    let flags = run(
        &[
            "dispatch",
            "--pack",
            arg(&pack),
            "--caller",
            " ",
            "--now",
            "soon",
        ],
        b"{}",
    );
    flags.expect_code(2);
}

#[test]
fn reconcile_asks_the_simulator_for_what_never_came() {
    let dir = TempDir::new("reconcile-cli");
    let pack = po_pack(&dir, false);
    let db = dir.path().join("ledger.db");
    let body = call("PO-3", "+15550103").to_string();
    let answered = run(
        &["dispatch", "--pack", arg(&pack), "--db", arg(&db)],
        body.as_bytes(),
    );
    let key = answered.json()["answers"][0]["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let packs = dir.path().join("packs");
    // Not due yet: nothing to do.
    let early = run(
        &["reconcile", "--db", arg(&db), "--packs", arg(&packs)],
        b"",
    );
    early.expect_code(0);
    assert_eq!(early.json()["due"], 0);
    let later = (jiff::Timestamp::now() + jiff::SignedDuration::from_mins(20)).to_string();
    let swept = run(
        &[
            "reconcile",
            "--db",
            arg(&db),
            "--packs",
            arg(&packs),
            "--now",
            &later,
        ],
        b"",
    );
    swept.expect_code(0);
    let report = swept.json();
    assert_eq!(
        (report["due"].clone(), report["answered"].clone()),
        (json!(1), json!(1)),
        "{report}"
    );
    assert_eq!(report["applied"][0]["status"], "decided", "{report}");
    let shown = run(&["dispatch", "show", &key, "--db", arg(&db)], b"").json();
    assert_eq!(shown["dispatch"]["state"], "answered");
    let none = run(
        &["reconcile", "--db", arg(&dir.path().join("none.db"))],
        b"",
    );
    none.expect_code(2);
}

#[test]
fn the_demo_runs_the_eight_orders_end_to_end() {
    let demo = run(&["demo", "--json"], b"");
    demo.expect_code(0);
    let rows = demo.json()["orders"].as_array().unwrap().clone();
    let outcome = |po: &str| {
        rows.iter().find(|r| r["po"] == po).unwrap()["outcome"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(outcome("PO-1001"), "acknowledged");
    assert_eq!(outcome("PO-1002"), "held: human_review");
    assert_eq!(outcome("PO-1003"), "held: do_not_call");
    assert_eq!(outcome("PO-1004"), "held: human_review");
    assert_eq!(outcome("PO-1005"), "held: human_review");
    assert_eq!(outcome("PO-1006"), "held: review_identity");
    assert_eq!(outcome("PO-1007"), "held: review_low_confidence");
    assert_eq!(outcome("PO-1008"), "held: review_unreconciled");
    // One lost delivery found by the sweep, the null result reconciled and escalated, some
    // duplicates dropped, and every order dispatched once.
    let reconciled: Vec<&str> = rows
        .iter()
        .filter(|r| r["reconciled"] == true)
        .map(|r| r["po"].as_str().unwrap())
        .collect();
    assert_eq!(reconciled.len(), 2, "{rows:?}");
    assert!(reconciled.contains(&"PO-1008"));
    let dropped: u64 = rows
        .iter()
        .map(|r| r["duplicates_dropped"].as_u64().unwrap())
        .sum();
    assert!(dropped >= 2, "{rows:?}");
    assert!(rows.iter().all(|r| r["dispatches"] == 1));
    // Then: the do-not-call contact's next order is suppressed, and a batch with one contact
    // off the allowlist is simulated whole.
    let then = demo.json()["then"].clone();
    assert_eq!(then[0]["answers"], json!(["suppressed"]), "{then}");
    assert_eq!(
        then[1]["answers"],
        json!(["simulated", "simulated"]),
        "{then}"
    );
    assert!(
        then[1]["reason"]
            .as_str()
            .unwrap()
            .contains("another recipient of the batch"),
        "{then}"
    );
    let table = run(&["demo", "--output-format", "human"], b"");
    table.expect_code(0);
    assert!(table.stdout.starts_with("PO "), "{}", table.stdout);
    assert_eq!(table.stdout.lines().count(), 11, "{}", table.stdout);
}

#[test]
fn pack_schema_prints_the_strict_result_schema_and_check_lints_one() {
    let dir = TempDir::new("pack-schema");
    let shown = run_in(
        Some(&workspace_root()),
        &["pack", "schema", "po-acknowledgement"],
        b"",
    );
    shown.expect_code(0);
    let schema = shown.json();
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["properties"]["received"]["enum"],
        json!(["yes", "no", "unknown"])
    );
    let unknown = run_in(Some(&workspace_root()), &["pack", "schema", "nope"], b"");
    unknown.expect_code(2);
    assert!(
        unknown.stderr.contains("unknown_job") || unknown.stdout.contains("unknown_job"),
        "{unknown:?}"
    );
    // A dispatch pack naming a loose schema, and a value question called `status` with no
    // `unknown`: every issue with its path.
    let text = std::fs::read_to_string(workspace_root().join("packs/po-acknowledgement.toml"))
        .unwrap()
        .replace(
            "suppress_scope = \"contact\"",
            "suppress_scope = \"contact\"\nresult_schema = \"result.json\"",
        )
        .replacen("key = \"received\"", "key = \"status\"", 1)
        .replace(
            "  { value = \"unknown\", means = \"Receipt was hedged, second-hand or unclear.\" },\n",
            "",
        )
        .replace("received = \"yes\"", "status = \"yes\"")
        .replace(
            "received = [\"yes\", \"no\", \"unknown\"]",
            "status = [\"yes\", \"no\"]",
        );
    let pack = dir.write("po.toml", &text);
    dir.write(
        "result.json",
        r##"{"type": "object", "properties": {"status": {"$ref": "#/x"}}}"##,
    );
    let checked = run(&["pack", "check", "--json", arg(&pack)], b"");
    checked.expect_code(1);
    let issues = checked.json()["files"][0]["issues"].clone();
    let found = crate::support::issues_of(&issues);
    let has = |path: &str, code: &str| found.iter().any(|(p, c)| p.ends_with(path) && c == code);
    assert!(has("questions[2].key", "reserved_name"), "{found:?}");
    assert!(has("questions[2].answers", "no_unknown"), "{found:?}");
    // The schema file is linted once the pack itself is clean.
    let clean = std::fs::read_to_string(workspace_root().join("packs/po-acknowledgement.toml"))
        .unwrap()
        .replace(
            "suppress_scope = \"contact\"",
            "suppress_scope = \"contact\"\nresult_schema = \"result.json\"",
        );
    let pack = dir.write("po-clean.toml", &clean);
    let checked = run(&["pack", "check", "--json", arg(&pack)], b"");
    checked.expect_code(1);
    let found = crate::support::issues_of(&checked.json()["files"][0]["issues"]);
    let has = |path: &str, code: &str| found.iter().any(|(p, c)| p.ends_with(path) && c == code);
    assert!(has("properties.status.$ref", "unsupported"), "{found:?}");
    assert!(has("additionalProperties", "open_object"), "{found:?}");
    assert!(has("properties.received", "missing"), "{found:?}");
    // One lint: `config check` and `serve` refuse the same pack, with the same issue.
    std::fs::create_dir_all(dir.path().join("packs")).unwrap();
    dir.write("packs/po-clean.toml", &clean);
    dir.write(
        "packs/result.json",
        r##"{"type": "object", "properties": {"status": {"$ref": "#/x"}}}"##,
    );
    let config = dir.write("backstop.toml", "packs = [\"packs\"]\n");
    let checked = run(&["config", "check", arg(&config), "--json"], b"");
    checked.expect_code(1);
    let found = crate::support::issues_of(&checked.json()["issues"]);
    assert!(
        found
            .iter()
            .any(|(p, c)| p.ends_with("properties.status.$ref") && c == "unsupported"),
        "{found:?}"
    );
    let served = run(
        &["serve", "--config", arg(&config), "--listen", "127.0.0.1:0"],
        b"",
    );
    served.expect_code(2);
    assert!(served.stderr.contains("$ref"), "{served:?}");
}

/// A `serve` on `db` (a file or a URL) with the live PO pack; the test's folder keeps it.
fn live_server(dir: &TempDir, db: &str) -> Server {
    po_pack(dir, true);
    let config = dir.write(
        "backstop.toml",
        &format!("listen = \"127.0.0.1:0\"\ndb = \"{db}\"\npacks = [\"packs\"]\n[dispatch]\nlive_key = \"{LIVE_KEY}\"\n"),
    );
    Server::start(dir.path(), &["--config", arg(&config)])
}

fn killed_between_permit_and_outcome(dir: &TempDir, db: &str) {
    let body = call("PO-9", "+15550109");
    let server = live_server(dir, db);
    let (status, reply) = post(
        &server,
        "/v1/jobs/po-acknowledgement/dispatches",
        None,
        &body,
    );
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["answers"][0]["answer"], "permitted", "{reply}");
    server.signal("KILL");
    drop(server);
    let again = live_server(dir, db);
    let (status, reply) = post(
        &again,
        "/v1/jobs/po-acknowledgement/dispatches",
        None,
        &body,
    );
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["answers"][0]["answer"], "reconcile", "{reply}");
}

#[test]
fn a_kill_between_permit_and_outcome_leaves_reconcile_never_a_second_permit() {
    let dir = TempDir::new("dispatch-kill");
    killed_between_permit_and_outcome(&dir, "ledger.db");
}

#[test]
#[cfg_attr(
    not(backstop_postgres_url),
    ignore = "needs BACKSTOP_TEST_POSTGRES_URL (a PostgreSQL database)"
)]
fn a_kill_between_permit_and_outcome_leaves_reconcile_on_postgres() {
    let Some(schema) = Schema::fresh("dispatch_kill") else {
        return;
    };
    let dir = TempDir::new("dispatch-kill-pg");
    killed_between_permit_and_outcome(&dir, &schema.url);
}

/// `backstop decide` with a do-not-call result suppresses the contact the case was dispatched
/// to (as a delivered result does): the contact's other order is then refused `suppressed`.
fn do_not_call_through_decide(dir: &TempDir, db: &str) {
    let pack = po_pack(dir, true);
    let config = dir.write(
        "backstop.toml",
        &format!("[dispatch]\nlive_key = \"{LIVE_KEY}\"\n"),
    );
    let dispatch_args = [
        "dispatch",
        "--pack",
        arg(&pack),
        "--db",
        db,
        "--config",
        arg(&config),
    ];
    let first = run(
        &dispatch_args,
        call("PO-60", "+15550160").to_string().as_bytes(),
    );
    first.expect_code(0);
    assert_eq!(first.json()["answers"][0]["answer"], "permitted");
    let questions = json!({"needs_human": {"value": "do_not_call"},
        "spoke_with": {"value": "intended_contact"}, "received": {"value": "unknown"},
        "po_status": {"value": "unknown"}});
    let decision = json!({"execution_id": "decide-60",
        "case": {"fields": {"supplier": "Acme Supply", "po_number": "PO-60"}},
        "questions": questions, "source_status": "completed", "confidence": 0.95});
    let decided = run(
        &["decide", "--pack", arg(&pack), "--db", db],
        decision.to_string().as_bytes(),
    );
    decided.expect_code(0);
    assert_eq!(decided.json()["effects"], json!(["suppress_contact"]));
    let other = run(
        &dispatch_args,
        call("PO-61", "+15550160").to_string().as_bytes(),
    );
    other.expect_code(0);
    assert_eq!(
        other.json()["answers"][0]["answer"],
        "suppressed",
        "{}",
        other.json()
    );

    // The operator lifts it, with a reason; who, when and why are kept.
    let in_force = run(&["suppress", "list", "--db", db, "--json"], b"");
    in_force.expect_code(0);
    assert_eq!(in_force.json()["suppressions"][0]["contact"], "+15550160");
    let lift = |reason: &str| {
        run(
            &[
                "suppress",
                "lift",
                "--db",
                db,
                "--job",
                "po-acknowledgement",
                "--contact",
                "+15550160",
                "--by",
                "dana",
                "--reason",
                reason,
            ],
            b"",
        )
    };
    let no_reason = lift(" ");
    no_reason.expect_code(2);
    let lifted = lift("the supplier asked to be called again");
    lifted.expect_code(0);
    assert_eq!(lifted.json()["lifted"]["by"], "dana");
    let history = run(&["suppress", "list", "--db", db, "--lifted", "--json"], b"");
    assert_eq!(
        history.json()["suppressions"][0]["lifted"]["why"],
        "the supplier asked to be called again"
    );
    let again = run(
        &dispatch_args,
        call("PO-62", "+15550160").to_string().as_bytes(),
    );
    assert_eq!(
        again.json()["answers"][0]["answer"],
        "permitted",
        "{}",
        again.json()
    );
    let twice = lift("again");
    twice.expect_code(3);
    assert_eq!(twice.json()["error"]["code"], "not_found");
}

#[test]
fn a_do_not_call_through_decide_suppresses_the_contact() {
    let dir = TempDir::new("dnc-decide");
    let db = dir.path().join("ledger.db");
    do_not_call_through_decide(&dir, arg(&db));
}

#[test]
#[cfg_attr(
    not(backstop_postgres_url),
    ignore = "needs BACKSTOP_TEST_POSTGRES_URL (a PostgreSQL database)"
)]
fn a_do_not_call_through_decide_suppresses_the_contact_on_postgres() {
    let Some(schema) = Schema::fresh("dnc_decide") else {
        return;
    };
    let dir = TempDir::new("dnc-decide-pg");
    do_not_call_through_decide(&dir, &schema.url);
}

/// `backstop dispatch` of a batch with one contact off the allowlist simulates it whole.
fn batch_with_an_unlisted_contact(dir: &TempDir, db: &str) {
    let text = std::fs::read_to_string(po_pack(dir, true))
        .unwrap()
        .replace("live = true", "live = true\nallowlist = [\"+15550190\"]");
    let pack = dir.write("packs/po-acknowledgement.toml", &text);
    let config = dir.write(
        "backstop.toml",
        &format!("[dispatch]\nlive_key = \"{LIVE_KEY}\"\n"),
    );
    let mut body = call("PO-90", "+15550190");
    let mut second = body["recipients"][0].clone();
    second["id"] = json!("r-PO-91");
    second["contact"] = json!("+15559999");
    second["case"]["fields"]["po_number"] = json!("PO-91");
    body["recipients"].as_array_mut().unwrap().push(second);
    let args = [
        "dispatch",
        "--pack",
        arg(&pack),
        "--db",
        db,
        "--config",
        arg(&config),
    ];
    let answered = run(&args, body.to_string().as_bytes());
    answered.expect_code(0);
    let answers = answered.json()["answers"].clone();
    assert_eq!(answers[0]["answer"], "simulated", "{answers}");
    assert_eq!(answers[1]["answer"], "simulated", "{answers}");
}

#[test]
fn a_batch_with_an_unlisted_contact_is_simulated_whole() {
    let dir = TempDir::new("batch-unlisted");
    let db = dir.path().join("ledger.db");
    batch_with_an_unlisted_contact(&dir, arg(&db));
}

#[test]
#[cfg_attr(
    not(backstop_postgres_url),
    ignore = "needs BACKSTOP_TEST_POSTGRES_URL (a PostgreSQL database)"
)]
fn a_batch_with_an_unlisted_contact_is_simulated_whole_on_postgres() {
    let Some(schema) = Schema::fresh("batch_unlisted") else {
        return;
    };
    let dir = TempDir::new("batch-unlisted-pg");
    batch_with_an_unlisted_contact(&dir, &schema.url);
}

/// `[retention]` is checked like the rest of the config: a bad value is an issue at its path,
/// and `serve` refuses to start with it.
#[test]
fn a_bad_retention_is_an_issue_at_its_path() {
    let dir = TempDir::new("retention-config");
    let config = dir.write(
        "backstop.toml",
        "[retention]\ndays = -3\nevery = \"whenever\"\n",
    );
    let checked = run(&["config", "check", arg(&config), "--json"], b"");
    checked.expect_code(1);
    let found = crate::support::issues_of(&checked.json()["issues"]);
    assert!(
        found.contains(&("retention.days".to_owned(), "out_of_range".to_owned())),
        "{found:?}"
    );
    assert!(
        found.contains(&("retention.every".to_owned(), "bad_duration".to_owned())),
        "{found:?}"
    );
    let served = run(
        &["serve", "--config", arg(&config), "--listen", "127.0.0.1:0"],
        b"",
    );
    served.expect_code(2);
    assert!(served.stderr.contains("retention.days"), "{served:?}");
    let fine = dir.write("fine.toml", "[retention]\ndays = 0\n");
    run(
        &["config", "check", "--output-format", "human", arg(&fine)],
        b"",
    )
    .expect_code(0);
}

/// `backstop dispatch` refuses a value that asks for a secret, holds a card number or
/// carries a term the job has no authority over, with its path, and stores nothing.
#[test]
fn a_dispatch_value_asking_for_a_secret_or_holding_a_card_is_refused() {
    let dir = TempDir::new("dispatch-scan");
    let pack = po_pack(&dir, false);
    let db = dir.path().join("ledger.db");
    let mut body = call("PO-62", "+15550162");
    body["recipients"][0]["case"]["fields"]["po_number"] = json!("PO-62 card 4111111111111111");
    body["recipients"][0]["values"] = json!({"contact_name": "ask for the password"});
    let answered = run(
        &["dispatch", "--pack", arg(&pack), "--db", arg(&db)],
        body.to_string().as_bytes(),
    );
    let answer = answered.json()["answers"][0].clone();
    assert_eq!(answer["error"]["code"], "unsafe_value", "{answer}");
    let found = crate::support::issues_of(&answer["error"]["issues"]);
    assert!(
        found.contains(&(
            "recipients[0].case.fields.po_number".to_owned(),
            "card_number".to_owned()
        )),
        "{found:?}"
    );
    assert!(
        found.contains(&(
            "recipients[0].values.contact_name".to_owned(),
            "credential_request".to_owned()
        )),
        "{found:?}"
    );
    let key = answer["key"].as_str().unwrap();
    run(&["dispatch", "show", key, "--db", arg(&db)], b"").expect_code(3);
}

/// `backstop dispatch`: content that never says the caller is an AI is refused live (with
/// its path) and warned when it goes to the simulator.
#[test]
fn a_dispatch_that_never_says_it_is_an_ai_is_refused_live_and_warned_simulated() {
    let dir = TempDir::new("dispatch-disclose");
    let mut body = call("PO-63", "+15550163");
    body["content"] = json!({"task": "Calling for {{company}} about an order."});
    let simulated_pack = po_pack(&dir, false);
    let db = dir.path().join("ledger.db");
    let simulated = run(
        &["dispatch", "--pack", arg(&simulated_pack), "--db", arg(&db)],
        body.to_string().as_bytes(),
    );
    let answer = simulated.json()["answers"][0].clone();
    assert_eq!(answer["answer"], "simulated", "{answer}");
    assert_eq!(answer["warnings"][0]["path"], "content", "{answer}");
    assert_eq!(
        answer["warnings"][0]["code"], "no_ai_disclosure",
        "{answer}"
    );
    let live_pack = po_pack(&dir, true);
    let config = dir.write(
        "backstop.toml",
        &format!("[dispatch]\nlive_key = \"{LIVE_KEY}\"\n"),
    );
    let live_db = dir.path().join("live.db");
    let refused = run(
        &[
            "dispatch",
            "--pack",
            arg(&live_pack),
            "--db",
            arg(&live_db),
            "--config",
            arg(&config),
        ],
        body.to_string().as_bytes(),
    );
    let answer = refused.json()["answers"][0].clone();
    assert_eq!(answer["error"]["code"], "unsafe_value", "{answer}");
    assert_eq!(answer["error"]["issues"][0]["code"], "no_ai_disclosure");
}

/// A simulated result with a field the pack's result schema does not declare is invalid:
/// `backstop reconcile` flags it on the delivery and uses none of it (reconciled, never
/// decided).
#[test]
fn a_result_with_an_undeclared_field_is_flagged_and_not_decided() {
    let dir = TempDir::new("reconcile-undeclared");
    let pack = po_pack(&dir, false);
    let db = dir.path().join("ledger.db");
    let mut body = call("PO-64", "+15550164");
    body["recipients"][0]["simulate"]["result"]["notes"] = json!("They said yes, politely.");
    let answered = run(
        &["dispatch", "--pack", arg(&pack), "--db", arg(&db)],
        body.to_string().as_bytes(),
    );
    answered.expect_code(0);
    let later = (jiff::Timestamp::now() + jiff::SignedDuration::from_mins(20)).to_string();
    let packs = dir.path().join("packs");
    let swept = run(
        &[
            "reconcile",
            "--db",
            arg(&db),
            "--packs",
            arg(&packs),
            "--now",
            &later,
        ],
        b"",
    );
    swept.expect_code(0);
    let applied = swept.json()["applied"][0].clone();
    assert_eq!(applied["status"], "reconcile", "{applied}");
    assert!(
        applied["detail"].as_str().unwrap().contains("(notes)"),
        "{applied}"
    );
}
