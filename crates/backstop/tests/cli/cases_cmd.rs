//! `backstop decide`, `cases show`, `review list|resolve` and `purge`: attempts on cases of the
//! shipped packs, counted on a ledger of each test's own, with `--now` pinned.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::{Run, TempDir, arg, issue_paths_and_codes, pairs, run, workspace_root};

/// The time of a case's first attempt.
const T0: &str = "2026-01-01T00:00:00Z";
/// Ten minutes later.
const T10: &str = "2026-01-01T00:10:00Z";
/// 29 days after [`T0`]: inside the default 30-day retention.
const DAY_29: &str = "2026-01-30T00:00:00Z";
/// 31 days after [`T0`]: past the default 30-day retention.
const DAY_31: &str = "2026-02-01T00:00:00Z";

/// `(path, code)` of the issues a refusal must list, in order.
type Expected = &'static [(&'static str, &'static str)];

const VENDOR: &str = "vendor-risk.toml";
const COMPANY: &str = "company-classification.toml";
const PO: &str = "po-acknowledgement.toml";

/// A ledger of one test's own, and the commands run against it.
#[derive(Debug)]
struct Ledger {
    dir: TempDir,
    db: PathBuf,
}

impl Ledger {
    fn new(tag: &str) -> Self {
        let dir = TempDir::new(tag);
        let db = dir.path().join("backstop.db");
        Ledger { dir, db }
    }

    fn db(&self) -> &str {
        arg(&self.db)
    }

    /// `backstop decide --pack packs/PACK --db DB FLAGS` with `stdin`.
    fn decide_raw(&self, pack: &str, flags: &[&str], stdin: &[u8]) -> Run {
        let pack = pack_path(pack);
        let mut args = vec!["decide", "--pack", arg(&pack), "--db", self.db()];
        args.extend_from_slice(flags);
        run(&args, stdin)
    }

    /// `backstop decide --pack packs/PACK --db DB --now NOW` with `request`.
    fn decide(&self, pack: &str, now: &str, request: &Value) -> Run {
        self.decide_raw(pack, &["--now", now], request.to_string().as_bytes())
    }

    /// [`Ledger::decide`] as `--caller CALLER`.
    fn decide_as(&self, caller: &str, pack: &str, now: &str, request: &Value) -> Run {
        self.decide_raw(
            pack,
            &["--now", now, "--caller", caller],
            request.to_string().as_bytes(),
        )
    }

    /// A decide run that must print a result: the result.
    #[track_caller]
    fn result(&self, pack: &str, now: &str, request: &Value) -> Value {
        let run = self.decide(pack, now, request);
        run.expect_code(0);
        assert_eq!(run.stderr, "", "{run:#?}");
        run.json()
    }

    /// A decide run that must be refused: the refusal's `error`.
    #[track_caller]
    fn refused(&self, pack: &str, now: &str, request: &Value) -> Value {
        let run = self.decide(pack, now, request);
        run.expect_code(3);
        run.json()["error"].clone()
    }

    /// `backstop cases show --db DB --job JOB --case CASE EXTRA`.
    fn show_run(&self, job: &str, case: &str, extra: &[&str]) -> Run {
        let mut args = vec![
            "cases",
            "show",
            "--db",
            self.db(),
            "--job",
            job,
            "--case",
            case,
        ];
        args.extend_from_slice(extra);
        run(&args, b"")
    }

    /// The case, which must exist.
    #[track_caller]
    fn show(&self, job: &str, case: &str) -> Value {
        let run = self.show_run(job, case, &[]);
        run.expect_code(0);
        run.json()
    }

    /// Asserts the case does not exist for `local`.
    #[track_caller]
    fn assert_no_case(&self, job: &str, case: &str) {
        let run = self.show_run(job, case, &[]);
        run.expect_code(3);
        assert_eq!(run.json()["error"]["code"], "unknown_case", "{run:#?}");
    }

    /// Asserts nothing reached the ledger: every command was refused before opening it, so
    /// there is none (the commands that read a ledger would refuse it, never create it).
    #[track_caller]
    fn assert_no_ledger(&self) {
        assert!(!self.db.exists(), "a refused request made a ledger");
    }

    /// `backstop review ARGS --db DB`.
    fn review(&self, args: &[&str]) -> Run {
        let mut all = vec!["review"];
        all.extend_from_slice(args);
        all.extend(["--db", self.db()]);
        run(&all, b"")
    }

    /// The ids of `review list ARGS`, newest first.
    #[track_caller]
    fn review_ids(&self, args: &[&str]) -> Vec<i64> {
        let mut all = vec!["list"];
        all.extend_from_slice(args);
        let run = self.review(&all);
        run.expect_code(0);
        run.json()["reviews"]
            .as_array()
            .unwrap_or_else(|| panic!("no reviews array: {run:#?}"))
            .iter()
            .map(|item| item["id"].as_i64().expect("an item has an id"))
            .collect()
    }

    /// `backstop purge --db DB ARGS`.
    fn purge(&self, args: &[&str]) -> Run {
        let mut all = vec!["purge", "--db", self.db()];
        all.extend_from_slice(args);
        run(&all, b"")
    }
}

fn pack_path(name: &str) -> PathBuf {
    packs_dir().join(name)
}

/// The shipped packs: `review resolve --packs` finds a case's pack by its job there.
fn packs_dir() -> PathBuf {
    workspace_root().join("packs")
}

fn excerpt(source: &str, locator: &str, text: &str) -> Value {
    json!({"source": source, "locator": locator, "text": text})
}

/// A hedged quote: never used.
fn hedged() -> Value {
    excerpt(
        "dpa-2023.pdf",
        "§4.2",
        "I think there is no customer data involved.",
    )
}

/// A quote that answers `data_access = none`.
fn no_customer_data() -> Value {
    excerpt(
        "dpa-2024.pdf",
        "§4.2",
        "The vendor does not store any customer data.",
    )
}

/// A quote that answers `subprocessors = none`.
fn no_subprocessors() -> Value {
    excerpt(
        "dpa-2024.pdf",
        "annex 3",
        "The vendor uses no subprocessors.",
    )
}

/// A quote that answers `data_access = pii`.
fn personal_data() -> Value {
    excerpt(
        "dpa-2024.pdf",
        "§2.1",
        "The vendor processes personal data of our customers.",
    )
}

/// A vendor-risk request with the required counterparty.
fn vendor(
    execution_id: &str,
    case: &str,
    data_access: &[Value],
    subprocessors: Option<&[Value]>,
) -> Value {
    let mut request = vendor_without_counterparty(execution_id, case, data_access, subprocessors);
    request["related"] = json!({"counterparty": {
        "id": "acct-991",
        "excerpts": [excerpt("crm", "acct-991", "Northwind Traders")],
    }});
    request
}

fn vendor_without_counterparty(
    execution_id: &str,
    case: &str,
    data_access: &[Value],
    subprocessors: Option<&[Value]>,
) -> Value {
    let mut questions = json!({"data_access": {"excerpts": data_access}});
    if let Some(subprocessors) = subprocessors {
        questions["subprocessors"] = json!({"excerpts": subprocessors});
    }
    json!({"execution_id": execution_id, "case": {"id": case}, "questions": questions})
}

/// A vendor-risk request that approves: no customer data and no subprocessors.
fn approving(execution_id: &str, case: &str) -> Value {
    vendor(
        execution_id,
        case,
        &[no_customer_data()],
        Some(&[no_subprocessors()]),
    )
}

/// A company-classification request; `case` is the issued id, if any.
fn company(execution_id: &str, case: Option<&str>, excerpts: &[Value]) -> Value {
    let mut request = json!({
        "execution_id": execution_id,
        "questions": {"business_model": {"excerpts": excerpts}},
    });
    if let Some(id) = case {
        request["case"] = json!({"id": id});
    }
    request
}

/// A purchase-order request for `supplier` and `po_number` with string values.
fn po(execution_id: &str, fields: &Value, values: &[(&str, &str)]) -> Value {
    let questions: serde_json::Map<String, Value> = values
        .iter()
        .map(|&(key, value)| (key.to_owned(), json!({"value": value})))
        .collect();
    json!({
        "execution_id": execution_id,
        "case": {"fields": fields},
        "questions": questions,
        "source_status": "completed",
        "confidence": 0.95,
    })
}

/// The execution ids of a shown case's attempts, oldest first.
fn execution_ids(case: &Value) -> Vec<&str> {
    attempts_of(case)
        .iter()
        .map(|a| a["execution_id"].as_str().expect("a string execution_id"))
        .collect()
}

fn attempts_of(case: &Value) -> &Vec<Value> {
    case["attempts"]
        .as_array()
        .unwrap_or_else(|| panic!("no attempts array: {case}"))
}

#[test]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn a_vendor_is_approved_after_a_retry_with_a_new_source() {
    let ledger = Ledger::new("vendor-flow");
    let first = ledger.result(
        VENDOR,
        T0,
        &vendor("e1", "Northwind.com", &[hedged()], None),
    );
    assert_eq!(first["status"], "undecided");
    assert_eq!(first["outcome"], Value::Null);
    assert_eq!(first["case"], json!({"id": "northwind.com"}));
    assert_eq!(
        first["attempts"],
        json!({"used": 1, "remaining": 2, "next": "retry"})
    );
    assert_eq!(
        first["nextStep"],
        "Request the vendor's current data processing agreement and security questionnaire, \
         then submit again."
    );
    let guidance = &first["retry"]["data_access"];
    assert_eq!(
        guidance["notUsed"],
        json!([{"position": 0, "why": "hedged"}])
    );
    assert_eq!(
        guidance["answers"][1],
        json!({"value": "pii", "means": "The vendor handles personal data about customers."})
    );
    assert!(guidance["fix"].as_str().is_some_and(|f| !f.is_empty()));
    assert!(
        guidance["whereToLook"]
            .as_str()
            .is_some_and(|w| !w.is_empty())
    );
    assert_eq!(first["escalation"]["id"], "vendor-desk");
    assert_eq!(first["escalation"]["trigger"], "unresolved");
    assert_eq!(first["missing"], json!([]));

    // The same vendor written another way is the same case.
    let second = ledger.result(VENDOR, T10, &approving("e2", "https://www.northwind.com/"));
    assert_eq!(second["status"], "decided", "{second}");
    assert_eq!(second["outcome"], "approve");
    assert_eq!(
        second["nextStep"],
        "Mark the vendor approved in procurement."
    );
    assert_eq!(second["case"], json!({"id": "northwind.com"}));
    assert_eq!(
        second["attempts"],
        json!({"used": 2, "remaining": 1, "next": null})
    );
    assert_eq!(
        second["answers"],
        json!({"data_access": "none", "subprocessors": "none"})
    );
    assert_eq!(second["retry"], json!({}));
    assert_eq!(second["escalation"], Value::Null);
    assert_eq!(second["effects"], json!([]));

    let run = ledger.show_run("vendor-risk", "northwind.com", &[]);
    run.expect_code(0);
    let case = run.json();
    assert_eq!(case["id"], "northwind.com");
    assert_eq!(case["caller"], "local");
    assert_eq!(case["issued"], false);
    assert_eq!(case["opened_at"], T0);
    assert_eq!(case["cycle"], 1, "the decision ended the first cycle");
    assert_eq!(execution_ids(&case), ["e1", "e2"]);
    let attempts = attempts_of(&case);
    assert_eq!(attempts[0]["cycle"], 0);
    assert_eq!(attempts[0]["status"], "undecided");
    assert_eq!(attempts[0]["closed"], json!([]));
    assert_eq!(attempts[1]["status"], "decided");
    assert_eq!(attempts[1]["outcome"], "approve");
    assert_eq!(
        attempts[1]["closed"],
        json!(["data_access", "subprocessors"])
    );
    assert_eq!(attempts[1]["at"], T10);
    let cited: Vec<(&str, &str)> = attempts[1]["cited"]
        .as_array()
        .expect("cited is a list")
        .iter()
        .map(|c| {
            (
                c["source"].as_str().unwrap(),
                c["locator"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        cited,
        [
            ("crm", "acct-991"),
            ("dpa-2024.pdf", "§4.2"),
            ("dpa-2024.pdf", "annex 3")
        ]
    );
    // Sources and locators are kept, never the quoted text.
    for text in [
        "does not store",
        "no subprocessors",
        "I think",
        "Northwind Traders",
    ] {
        assert!(
            !run.stdout.contains(text),
            "{text} was kept: {}",
            run.stdout
        );
    }
    assert_eq!(case["reviews"], json!([]));
}

#[test]
fn a_resend_returns_the_stored_bytes_and_uses_no_attempt() {
    let ledger = Ledger::new("resend");
    let request = vendor("run-17-step-3", "northwind.com", &[hedged()], None);
    let body = request.to_string();
    let first = ledger.decide_raw(VENDOR, &["--now", T0], body.as_bytes());
    first.expect_code(0);
    // The same bytes later, and the same body with its keys reordered and spaced out.
    let again = ledger.decide_raw(VENDOR, &["--now", T10], body.as_bytes());
    again.expect_code(0);
    assert_eq!(again.stdout, first.stdout);
    let reordered = format!(
        "{{\n  \"related\": {},\n  \"questions\": {},\n  \"case\": {},\n  \"execution_id\": {}\n}}",
        request["related"], request["questions"], request["case"], request["execution_id"]
    );
    let respaced = ledger.decide_raw(VENDOR, &["--now", DAY_29], reordered.as_bytes());
    respaced.expect_code(0);
    assert_eq!(respaced.stdout, first.stdout);
    let case = ledger.show("vendor-risk", "northwind.com");
    assert_eq!(execution_ids(&case), ["run-17-step-3"]);
    // A new execution id is a new attempt.
    let next = ledger.result(
        VENDOR,
        T10,
        &vendor("run-17-step-4", "northwind.com", &[personal_data()], None),
    );
    assert_eq!(next["attempts"]["used"], 2);
}

#[test]
fn another_body_under_the_same_execution_id_is_a_conflict() {
    let ledger = Ledger::new("conflict");
    let first = ledger.result(
        VENDOR,
        T0,
        &vendor("e1", "northwind.com", &[hedged()], None),
    );
    assert_eq!(first["attempts"]["used"], 1);
    let error = ledger.refused(
        VENDOR,
        T10,
        &vendor("e1", "northwind.com", &[no_customer_data()], None),
    );
    assert_eq!(error["code"], "execution_id_conflict", "{error}");
    assert_eq!(error["issues"], json!([]));
    assert!(error["message"].as_str().is_some_and(|m| m.contains("e1")));
    // Even on another case: the id belongs to the caller and the job.
    let elsewhere = ledger.refused(VENDOR, T10, &approving("e1", "contoso.com"));
    assert_eq!(elsewhere["code"], "execution_id_conflict", "{elsewhere}");
    assert_eq!(
        execution_ids(&ledger.show("vendor-risk", "northwind.com")),
        ["e1"]
    );
    ledger.assert_no_case("vendor-risk", "contoso.com");
}

#[test]
fn a_malformed_request_lists_every_issue_and_leaves_no_trace() {
    let ledger = Ledger::new("malformed");
    let too_long = "x".repeat(1001);
    let request = json!({
        "case": {"id": "northwind.com"},
        "colour": "red",
        "questions": {
            "data_acess": {"excerpts": [no_customer_data()]},
            "data_access": {"excerpts": [excerpt("dpa.pdf", "§1", &too_long)]},
        },
        "related": {"counterparty": {"id": "acct-991"}},
    });
    let run = ledger.decide(VENDOR, T0, &request);
    // Malformed is bad input: exit 2, as for every command.
    run.expect_code(2);
    let refusal = run.json();
    assert_eq!(refusal["error"]["code"], "malformed");
    assert!(
        refusal["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("4 issues")),
        "{refusal}"
    );
    let mut issues = issue_paths_and_codes(&refusal);
    issues.sort();
    assert_eq!(
        issues,
        pairs(&[
            ("colour", "unknown_field"),
            ("execution_id", "required"),
            ("questions.data_access.excerpts[0].text", "too_long"),
            ("questions.data_acess", "unknown_question"),
        ])
    );
    // Every refusal has the one shape: code, message, issues, and no escalation here.
    let mut keys: Vec<&String> = refusal["error"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["code", "issues", "message"]);
    ledger.assert_no_ledger();
    // Fixed, the same execution id is a first attempt: the refusal used nothing.
    let fixed = ledger.result(VENDOR, T10, &approving("e1", "northwind.com"));
    assert_eq!(fixed["attempts"]["used"], 1);
}

#[test]
fn a_request_that_is_not_a_json_object_is_malformed() {
    let ledger = Ledger::new("not-json");
    let bodies: [(&[u8], &str, &str); 4] = [
        (b"{not json", "", "bad_json"),
        (b"", "", "bad_json"),
        (b"[1, 2]", "", "wrong_type"),
        (
            br#"{"execution_id": 7, "case": {"id": "not a domain"}}"#,
            "case.id",
            "bad_case_id",
        ),
    ];
    for (stdin, path, code) in bodies {
        let run = ledger.decide_raw(VENDOR, &["--now", T0], stdin);
        run.expect_code(2);
        let refusal = run.json();
        assert_eq!(refusal["error"]["code"], "malformed", "{refusal}");
        let issues = issue_paths_and_codes(&refusal);
        assert!(
            issues.contains(&(path.to_owned(), code.to_owned())),
            "{}: {issues:?}",
            String::from_utf8_lossy(stdin)
        );
    }
    ledger.assert_no_ledger();
}

#[test]
fn a_held_result_opens_a_review_that_blocks_the_case_until_it_is_resolved() {
    let ledger = Ledger::new("review");
    let held = ledger.result(
        VENDOR,
        T0,
        &vendor("e1", "acme.io", &[personal_data()], None),
    );
    assert_eq!(held["status"], "held", "{held}");
    assert_eq!(held["outcome"], "review_privacy");
    assert_eq!(
        held["nextStep"],
        "Hold the vendor; the privacy team reviews the agreement."
    );
    assert_eq!(held["answers"], json!({"data_access": "pii"}));
    assert_eq!(held["attempts"]["next"], "escalate");
    assert_eq!(held["escalation"]["id"], "privacy-team");
    assert_eq!(held["escalation"]["trigger"], "held");

    let list = ledger.review(&["list"]);
    list.expect_code(0);
    let items = list.json()["reviews"].clone();
    assert_eq!(items.as_array().map(Vec::len), Some(1), "{items}");
    let item = &items[0];
    assert_eq!(item["case_id"], "acme.io");
    assert_eq!(item["job"], "vendor-risk");
    assert_eq!(item["caller"], "local");
    assert_eq!(item["lane"], "review_privacy");
    assert_eq!(item["escalation"], "privacy-team");
    assert_eq!(item["opened_at"], T0);
    assert_eq!(item["retry_allowed"], false);
    assert_eq!(item["resolution"], Value::Null);
    let id = item["id"].as_i64().expect("an id");

    // No attempt is taken while the item is open; the refusal names the hand-off.
    let refused = ledger.refused(VENDOR, T10, &approving("e2", "acme.io"));
    assert_eq!(refused["code"], "case_in_review", "{refused}");
    assert_eq!(refused["escalation"]["id"], "privacy-team");
    assert_eq!(refused["escalation"]["trigger"], "held");
    let case = ledger.show("vendor-risk", "acme.io");
    assert_eq!(execution_ids(&case), ["e1"]);
    assert_eq!(case["reviews"][0]["id"], id);
    assert_eq!(case["reviews"][0]["resolution"], Value::Null);

    let id_arg = id.to_string();
    let packs = packs_dir();
    let resolved = ledger.review(&[
        "resolve",
        "--id",
        &id_arg,
        "--decision",
        "approve",
        "--by",
        "alice",
        "--note",
        "DPA checked",
        "--now",
        "2026-01-01T01:00:00Z",
        "--packs",
        arg(&packs),
    ]);
    resolved.expect_code(0);
    let item = resolved.json();
    assert_eq!(item["id"], id);
    assert_eq!(
        item["resolution"],
        json!({"at": "2026-01-01T01:00:00Z", "by": "alice", "decision": "approve", "note": "DPA checked"})
    );
    assert_eq!(ledger.review_ids(&[]), Vec::<i64>::new());
    assert_eq!(ledger.review_ids(&["--status", "resolved"]), [id]);

    // The resolution ended the cycle: the next attempt counts from one again.
    let next = ledger.result(VENDOR, "2026-01-01T02:00:00Z", &approving("e3", "acme.io"));
    assert_eq!(next["status"], "decided", "{next}");
    assert_eq!(next["attempts"]["used"], 1);
    let case = ledger.show("vendor-risk", "acme.io");
    let cycles: Vec<(u64, u64)> = attempts_of(&case)
        .iter()
        .map(|a| (a["cycle"].as_u64().unwrap(), a["number"].as_u64().unwrap()))
        .collect();
    assert_eq!(cycles, [(0, 1), (1, 1)]);
    assert_eq!(case["reviews"][0]["resolution"]["by"], "alice");
}

#[test]
fn review_list_filters_by_status_job_and_caller_newest_first() {
    let ledger = Ledger::new("review-list");
    ledger.result(
        VENDOR,
        T0,
        &vendor("e1", "acme.io", &[personal_data()], None),
    );
    let other = ledger.decide_as(
        "bob",
        VENDOR,
        T10,
        &vendor("e1", "globex.com", &[personal_data()], None),
    );
    other.expect_code(0);
    let all = ledger.review_ids(&["--status", "all"]);
    assert_eq!(all.len(), 2);
    assert!(all[0] > all[1], "newest first: {all:?}");
    assert_eq!(ledger.review_ids(&["--limit", "1"]), [all[0]]);
    assert_eq!(ledger.review_ids(&["--caller", "bob"]), [all[0]]);
    assert_eq!(ledger.review_ids(&["--caller", "local"]), [all[1]]);
    assert_eq!(ledger.review_ids(&["--job", "vendor-risk"]), all);
    assert_eq!(
        ledger.review_ids(&["--job", "po-acknowledgement"]),
        Vec::<i64>::new()
    );
    assert_eq!(
        ledger.review_ids(&["--status", "resolved"]),
        Vec::<i64>::new()
    );
    for bad in [
        &["list", "--status", "closed"][..],
        &["list", "--limit", "0"],
    ] {
        let run = ledger.review(bad);
        assert_eq!(run.command_line_refused()["code"], "bad_value", "{bad:?}");
    }
}

#[test]
fn review_resolve_refuses_an_unknown_item_a_second_resolution_and_blank_flags() {
    let ledger = Ledger::new("resolve");
    ledger.result(
        VENDOR,
        T0,
        &vendor("e1", "acme.io", &[personal_data()], None),
    );
    let id = ledger.review_ids(&[])[0].to_string();
    let packs = packs_dir();
    let resolve = |id: &str, decision: &str, by: &str, now: &str| {
        ledger.review(&[
            "resolve",
            "--id",
            id,
            "--decision",
            decision,
            "--by",
            by,
            "--now",
            now,
            "--packs",
            arg(&packs),
        ])
    };
    let unknown = resolve("999", "approve", "alice", T10);
    unknown.expect_code(3);
    assert_eq!(unknown.json()["error"]["code"], "unknown_review");
    // The id may also be given as `review show` takes it; once, one way.
    let positional = ledger.review(&["resolve", "999", "--decision", "approve", "--by", "alice"]);
    positional.expect_code(3);
    assert_eq!(positional.json()["error"]["code"], "unknown_review");
    for both_or_none in [
        &[
            "resolve",
            "999",
            "--id",
            "999",
            "--decision",
            "approve",
            "--by",
            "a",
        ][..],
        &["resolve", "--decision", "approve", "--by", "a"],
    ] {
        ledger.review(both_or_none).expect_code(2);
    }

    let blank = resolve(&id, "  ", "", "yesterday");
    blank.expect_code(2);
    let refusal = blank.json();
    assert_eq!(refusal["error"]["code"], "malformed");
    assert_eq!(
        issue_paths_and_codes(&refusal),
        pairs(&[
            ("--now", "bad_time"),
            ("--decision", "empty"),
            ("--by", "empty"),
        ])
    );
    // Nothing was resolved by the refused command.
    assert_eq!(ledger.review_ids(&[]).len(), 1);

    resolve(&id, "approve", "alice", T10).expect_code(0);
    let twice = resolve(&id, "reject", "bob", T10);
    twice.expect_code(3);
    let error = &twice.json()["error"];
    assert_eq!(error["code"], "already_resolved", "{error}");
    // The first resolution stands.
    let case = ledger.show("vendor-risk", "acme.io");
    assert_eq!(case["reviews"][0]["resolution"]["decision"], "approve");
    assert_eq!(case["reviews"][0]["resolution"]["by"], "alice");
}

#[test]
fn purge_deletes_attempts_past_retention_and_keeps_cases_in_review() {
    let ledger = Ledger::new("purge");
    ledger.result(VENDOR, T0, &approving("e1", "northwind.com"));
    ledger.result(
        VENDOR,
        T0,
        &vendor("e2", "acme.io", &[personal_data()], None),
    );

    let early = ledger.purge(&["--now", DAY_29]);
    early.expect_code(0);
    assert_eq!(
        early.json(),
        json!({"before": "2025-12-31T00:00:00Z",
               "deleted": {"attempts": 0, "reviews": 0, "events": 0, "cases": 0, "dispatches": 0, "deliveries": 0, "notifications": 0}})
    );
    assert_eq!(
        attempts_of(&ledger.show("vendor-risk", "northwind.com")).len(),
        1
    );

    let late = ledger.purge(&["--now", DAY_31]);
    late.expect_code(0);
    assert_eq!(
        late.json(),
        json!({"before": "2026-01-02T00:00:00Z",
               "deleted": {"attempts": 2, "reviews": 0, "events": 0, "cases": 1, "dispatches": 0, "deliveries": 0, "notifications": 0}})
    );
    ledger.assert_no_case("vendor-risk", "northwind.com");
    // The held case stays while its review is open, without its attempt records.
    let held = ledger.show("vendor-risk", "acme.io");
    assert_eq!(held["attempts"], json!([]));
    assert_eq!(held["reviews"][0]["resolution"], Value::Null);

    let id = ledger.review_ids(&[])[0].to_string();
    let packs = packs_dir();
    ledger
        .review(&[
            "resolve",
            "--id",
            &id,
            "--decision",
            "approve",
            "--by",
            "alice",
            "--now",
            DAY_31,
            "--packs",
            arg(&packs),
        ])
        .expect_code(0);
    let after = ledger.purge(&["--now", "2026-03-05T00:00:00Z"]);
    after.expect_code(0);
    assert_eq!(
        after.json()["deleted"],
        json!({"attempts": 0, "reviews": 1, "events": 0, "cases": 1, "dispatches": 0, "deliveries": 0, "notifications": 0})
    );
    ledger.assert_no_case("vendor-risk", "acme.io");
}

#[test]
fn purge_reads_older_than_in_hours_and_refuses_bad_flags() {
    let ledger = Ledger::new("purge-flags");
    ledger.result(VENDOR, T0, &approving("e1", "northwind.com"));
    let kept = ledger.purge(&["--older-than", "72h", "--now", "2026-01-03T00:00:00Z"]);
    kept.expect_code(0);
    assert_eq!(kept.json()["deleted"]["attempts"], 0);
    let gone = ledger.purge(&["--older-than", "72h", "--now", "2026-01-04T00:00:01Z"]);
    gone.expect_code(0);
    assert_eq!(gone.json()["before"], "2026-01-01T00:00:01Z");
    assert_eq!(gone.json()["deleted"]["attempts"], 1);

    let bad: [(&[&str], Expected); 7] = [
        (
            &["--older-than", "soon"],
            &[("--older-than", "bad_duration")],
        ),
        (
            &["--older-than", "200000000000000d"],
            &[("--older-than", "bad_duration")],
        ),
        (
            &[
                "--older-than",
                "200000000h",
                "--now",
                "2026-01-01T00:00:00Z",
            ],
            &[("--older-than", "out_of_range")],
        ),
        (&["--older-than", "0d"], &[("--older-than", "bad_duration")]),
        (&["--older-than=-5d"], &[("--older-than", "bad_duration")]),
        (&["--now", "garbage"], &[("--now", "bad_time")]),
        (
            &["--older-than", "30", "--now", "2026-13-01T00:00:00Z"],
            &[("--now", "bad_time"), ("--older-than", "bad_duration")],
        ),
    ];
    for (flags, expected) in bad {
        let run = ledger.purge(flags);
        run.expect_code(2);
        let refusal = run.json();
        assert_eq!(refusal["error"]["code"], "malformed", "{flags:?}");
        assert_eq!(
            issue_paths_and_codes(&refusal),
            pairs(expected),
            "{flags:?}"
        );
    }
}

#[test]
fn decide_refuses_bad_flags_with_every_issue_before_reading_the_request() {
    let ledger = Ledger::new("bad-flags");
    let body = approving("e1", "northwind.com").to_string();
    let garbage = ledger.decide_raw(VENDOR, &["--now", "garbage"], body.as_bytes());
    garbage.expect_code(2);
    let refusal = garbage.json();
    assert_eq!(refusal["error"]["code"], "malformed");
    assert_eq!(
        issue_paths_and_codes(&refusal),
        pairs(&[("--now", "bad_time")])
    );
    let both = ledger.decide_raw(
        VENDOR,
        &["--now", "2026-01-01", "--caller", " "],
        body.as_bytes(),
    );
    both.expect_code(2);
    assert_eq!(
        issue_paths_and_codes(&both.json()),
        pairs(&[("--caller", "bad_caller"), ("--now", "bad_time")])
    );
    // Nothing was counted: the same request is a first attempt.
    let counted = ledger.result(VENDOR, T0, &approving("e1", "northwind.com"));
    assert_eq!(counted["attempts"]["used"], 1);
    // Flags the parser refuses: exit 2, clap's message on stderr.
    for args in [
        &["decide", "--db", ledger.db()][..],
        &["decide", "--pack", "p.toml", "--bogus"],
        &["cases", "show", "--db", ledger.db(), "--job", "vendor-risk"],
        &[
            "review",
            "resolve",
            "--db",
            ledger.db(),
            "--id",
            "one",
            "--decision",
            "d",
            "--by",
            "b",
        ],
    ] {
        let run = run(args, body.as_bytes());
        let issue = run.command_line_refused();
        assert!(issue["path"].as_str().is_some(), "{args:?}: {issue}");
    }
}

const BAD_PACK: &str = r#"
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
fn a_pack_with_issues_is_refused_with_the_file_in_every_path() {
    let ledger = Ledger::new("bad-pack");
    let file = ledger.dir.write("bad.toml", BAD_PACK);
    let body = approving("e1", "northwind.com").to_string();
    let refused = run(
        &[
            "decide",
            "--pack",
            arg(&file),
            "--db",
            ledger.db(),
            "--now",
            T0,
        ],
        body.as_bytes(),
    );
    refused.expect_code(2);
    let refusal = refused.json();
    assert_eq!(refusal["error"]["code"], "malformed");
    let origin = format!("--pack {}: ", file.display());
    let issues: Vec<(String, String)> = issue_paths_and_codes(&refusal)
        .into_iter()
        .map(|(path, code)| {
            let inner = path
                .strip_prefix(&origin)
                .unwrap_or_else(|| panic!("`{path}` does not name the file"));
            (inner.to_owned(), code)
        })
        .collect();
    assert_eq!(
        issues,
        pairs(&[
            ("identity.fields", "needs_fields"),
            ("attempts.window", "bad_duration"),
            ("rules[0].when.nothing", "unknown_question"),
            ("rules[0].outcome", "unknown_outcome"),
        ])
    );
    // A pack that cannot be read, with a bad --now: both listed.
    let missing = ledger.dir.path().join("missing.toml");
    let unreadable = run(
        &[
            "decide",
            "--pack",
            arg(&missing),
            "--db",
            ledger.db(),
            "--now",
            "noon",
        ],
        body.as_bytes(),
    );
    unreadable.expect_code(2);
    assert_eq!(
        issue_paths_and_codes(&unreadable.json()),
        pairs(&[
            ("--now", "bad_time"),
            (&format!("--pack {}", missing.display()), "unreadable"),
        ])
    );
    ledger.assert_no_ledger();
}

#[test]
fn a_ledger_that_cannot_be_made_is_exit_1_and_a_missing_one_exit_2() {
    let dir = TempDir::new("no-ledger");
    let db = dir.path().join("no/such/dir/backstop.db");
    let db = arg(&db);
    let body = approving("e1", "northwind.com").to_string();
    let vendor_pack = pack_path(VENDOR);
    let runs = [
        run(
            &[
                "decide",
                "--pack",
                arg(&vendor_pack),
                "--db",
                db,
                "--now",
                T0,
            ],
            body.as_bytes(),
        ),
        run(
            &[
                "cases",
                "show",
                "--db",
                db,
                "--job",
                "vendor-risk",
                "--case",
                "northwind.com",
            ],
            b"",
        ),
        run(&["review", "list", "--db", db], b""),
        run(
            &[
                "review",
                "resolve",
                "--db",
                db,
                "--id",
                "1",
                "--decision",
                "d",
                "--by",
                "b",
            ],
            b"",
        ),
        run(&["purge", "--db", db], b""),
    ];
    for (i, run) in runs.iter().enumerate() {
        // `decide` makes its ledger and cannot (exit 1); the readers find none at --db, a
        // missing file: exit 2, as for every command.
        if i == 0 {
            run.expect_code(1);
            assert_eq!(run.stdout, "", "{run:#?}");
            assert!(
                run.stderr.starts_with(&format!("backstop: --db {db}: ")),
                "{run:#?}"
            );
        } else {
            // Bad input, refused as every command refuses it: the refusal JSON when piped.
            run.expect_code(2);
            let issues = crate::support::issue_paths_and_codes(&run.json());
            assert_eq!(issues, pairs(&[("--db", "no_ledger")]), "{run:#?}");
        }
    }
}

#[test]
fn issued_cases_are_named_by_backstop_and_found_again_by_their_excerpts() {
    let ledger = Ledger::new("issued");
    let saas = [excerpt("about", "p1", "Acme sells a SaaS product.")];
    let first = ledger.result(COMPANY, T0, &company("c1", None, &saas));
    assert_eq!(first["status"], "undecided", "{first}");
    let id = first["case"]["id"]
        .as_str()
        .expect("an issued id")
        .to_owned();
    assert!(id.starts_with("i-"), "{id}");
    assert_eq!(first["attempts"]["used"], 1);
    assert_eq!(first["attempts"]["remaining"], 1);
    let case = ledger.show("company-classification", &id);
    assert_eq!(case["issued"], true);

    // Starting over with the same excerpts does not reset the count.
    let again = ledger.result(COMPANY, T10, &company("c2", None, &saas));
    assert_eq!(again["case"]["id"], id.as_str(), "{again}");
    assert_eq!(again["attempts"]["used"], 2);
    // It cited nothing new and closed nothing, so the case escalates now.
    assert_eq!(again["attempts"]["next"], "escalate");
    assert_eq!(again["escalation"]["trigger"], "no_progress");
    assert_eq!(again["escalation"]["id"], "research-desk");
    let limit = ledger.refused(COMPANY, T10, &company("c3", Some(&id), &saas));
    assert_eq!(limit["code"], "attempt_limit_reached", "{limit}");
    assert_eq!(limit["escalation"]["id"], "research-desk");
    assert_eq!(limit["escalation"]["trigger"], "attempt_limit");
    assert_eq!(
        execution_ids(&ledger.show("company-classification", &id)),
        ["c1", "c2"]
    );

    // Other excerpts make another case.
    let other = ledger.result(
        COMPANY,
        T10,
        &company(
            "c4",
            None,
            &[excerpt("about", "p1", "Globex manufactures devices.")],
        ),
    );
    let other_id = other["case"]["id"].as_str().expect("an issued id");
    assert!(other_id.starts_with("i-") && other_id != id, "{other}");
    assert_eq!(other["attempts"]["used"], 1);

    // An id backstop never issued names no case.
    let unknown = ledger.refused(COMPANY, T10, &company("c5", Some("i-0000"), &saas));
    assert_eq!(unknown["code"], "unknown_case", "{unknown}");
    ledger.assert_no_case("company-classification", "i-0000");
}

#[test]
fn a_caller_opens_at_most_200_issued_cases_a_day() {
    let ledger = Ledger::new("issued-limit");
    let request = |n: u32| {
        company(
            &format!("c{n}"),
            None,
            &[excerpt("about", "p1", &format!("Company number {n}."))],
        )
    };
    for n in 0..200 {
        ledger.decide(COMPANY, T0, &request(n)).expect_code(0);
    }
    let over = ledger.refused(COMPANY, T10, &request(200));
    assert_eq!(over["code"], "issued_case_limit", "{over}");
    // Another caller has a limit of its own, and a day later the caller may open more.
    ledger
        .decide_as("bob", COMPANY, T10, &request(200))
        .expect_code(0);
    ledger
        .decide(COMPANY, "2026-01-02T00:00:01Z", &request(201))
        .expect_code(0);
}

#[test]
fn a_mixed_company_may_gather_more_and_classify_again_once() {
    let ledger = Ledger::new("gather");
    let mixed = [
        excerpt("about", "p1", "We make both hardware and software."),
        excerpt("10-k", "item 1", "A diversified group."),
    ];
    let held = ledger.result(COMPANY, T0, &company("m1", None, &mixed));
    assert_eq!(held["status"], "held", "{held}");
    assert_eq!(held["outcome"], "gather_more");
    assert_eq!(
        held["nextStep"],
        "Find revenue by segment, then classify again."
    );
    assert_eq!(
        held["attempts"],
        json!({"used": 1, "remaining": 1, "next": "retry"})
    );
    assert_eq!(held["escalation"]["trigger"], "held");
    let id = held["case"]["id"]
        .as_str()
        .expect("an issued id")
        .to_owned();
    let list = ledger.review(&["list"]);
    list.expect_code(0);
    let item = list.json()["reviews"][0].clone();
    assert_eq!(item["lane"], "gather_more");
    assert_eq!(item["retry_allowed"], true);
    assert_eq!(item["retry_used"], false);

    let software = [
        excerpt(
            "segments",
            "note 4",
            "Most revenue comes from our SaaS platform.",
        ),
        excerpt(
            "10-k",
            "item 7",
            "Subscriptions to our platform are 80% of revenue.",
        ),
    ];
    let decided = ledger.result(COMPANY, T10, &company("m2", Some(&id), &software));
    assert_eq!(decided["status"], "decided", "{decided}");
    assert_eq!(decided["outcome"], "software");
    assert_eq!(decided["attempts"]["used"], 2);
    // The decision closed the review item on backstop's behalf.
    assert_eq!(ledger.review_ids(&[]), Vec::<i64>::new());
    let case = ledger.show("company-classification", &id);
    let review = &case["reviews"][0];
    assert_eq!(review["retry_used"], true);
    assert_eq!(review["resolution"]["by"], "backstop");
    assert_eq!(review["resolution"]["decision"], "software");
}

#[test]
fn a_second_gather_that_is_still_mixed_escalates() {
    let ledger = Ledger::new("gather-twice");
    let mixed = [
        excerpt("about", "p1", "We make both hardware and software."),
        excerpt("10-k", "item 1", "A diversified group."),
    ];
    let held = ledger.result(COMPANY, T0, &company("m1", None, &mixed));
    let id = held["case"]["id"]
        .as_str()
        .expect("an issued id")
        .to_owned();
    let still = [
        excerpt("segments", "note 4", "Revenue is diversified."),
        excerpt("10-k", "item 7", "We sell hardware as well as services."),
    ];
    let again = ledger.result(COMPANY, T10, &company("m2", Some(&id), &still));
    assert_eq!(again["status"], "held", "{again}");
    assert_eq!(again["attempts"]["next"], "escalate");
    let refused = ledger.refused(COMPANY, T10, &company("m3", Some(&id), &still));
    assert_eq!(refused["code"], "case_in_review", "{refused}");
    assert_eq!(refused["escalation"]["id"], "research-desk");
}

/// After a gather lane's one retry comes back undecided, the result says `next: retry`
/// (`remaining: 1`, trigger `unresolved`), yet the review item is still open with its retry
/// used, so the retry it promises is refused `case_in_review`.
#[test]
fn an_undecided_lane_retry_does_not_promise_a_retry_it_refuses() {
    let ledger = Ledger::new("gather-undecided");
    let mixed = [
        excerpt("about", "p1", "We make both hardware and software."),
        excerpt("10-k", "item 1", "A diversified group."),
    ];
    let held = ledger.result(COMPANY, T0, &company("m1", None, &mixed));
    let id = held["case"]["id"]
        .as_str()
        .expect("an issued id")
        .to_owned();
    // One software quote: business_model needs two, so the retry is undecided.
    let one = [excerpt("segments", "note 5", "Our SaaS platform.")];
    let undecided = ledger.result(COMPANY, T10, &company("m2", Some(&id), &one));
    assert_eq!(undecided["status"], "undecided", "{undecided}");
    if undecided["attempts"]["next"] == "retry" {
        let two = [
            excerpt("segments", "note 5", "Our SaaS platform."),
            excerpt(
                "10-k",
                "item 7",
                "Subscriptions to our platform are 80% of revenue.",
            ),
        ];
        let run = ledger.decide(
            COMPANY,
            "2026-01-01T00:20:00Z",
            &company("m3", Some(&id), &two),
        );
        assert_eq!(run.code, 0, "the promised retry was refused: {run:#?}");
    }
}

#[test]
fn the_attempt_limit_allows_one_more_after_progress_then_refuses() {
    let ledger = Ledger::new("limit");
    let attempt = |n: u32| {
        let now = format!("2026-01-01T00:0{n}:00Z");
        let request = vendor(
            &format!("e{n}"),
            "northwind.com",
            &[excerpt(&format!("doc-{n}"), "p1", "Nothing useful here.")],
            None,
        );
        ledger.decide(VENDOR, &now, &request)
    };
    let mut seen = Vec::new();
    for n in 1..=4 {
        let run = attempt(n);
        run.expect_code(0);
        let result = run.json();
        assert_eq!(result["status"], "undecided", "{result}");
        seen.push((
            result["attempts"].clone(),
            result["escalation"]["trigger"].clone(),
        ));
    }
    assert_eq!(
        seen,
        [
            (
                json!({"used": 1, "remaining": 2, "next": "retry"}),
                json!("unresolved")
            ),
            (
                json!({"used": 2, "remaining": 1, "next": "retry"}),
                json!("unresolved")
            ),
            // The third cited a new source: it earns the one extra attempt.
            (
                json!({"used": 3, "remaining": 1, "next": "retry"}),
                json!("unresolved")
            ),
            (
                json!({"used": 4, "remaining": 0, "next": "escalate"}),
                json!("attempt_limit")
            ),
        ]
    );
    let refused = attempt(5);
    refused.expect_code(3);
    let error = &refused.json()["error"];
    assert_eq!(error["code"], "attempt_limit_reached", "{error}");
    assert_eq!(error["escalation"]["id"], "vendor-desk");
    assert_eq!(error["escalation"]["trigger"], "attempt_limit");
    assert_eq!(
        execution_ids(&ledger.show("vendor-risk", "northwind.com")).len(),
        4
    );
}

#[test]
fn a_gap_counts_as_an_attempt_and_keeps_nothing() {
    let ledger = Ledger::new("gap");
    let gap = ledger.result(
        VENDOR,
        T0,
        &vendor_without_counterparty("e1", "northwind.com", &[no_customer_data()], None),
    );
    assert_eq!(gap["status"], "gap", "{gap}");
    assert_eq!(gap["outcome"], Value::Null);
    assert_eq!(gap["missing"], json!(["counterparty"]));
    assert_eq!(gap["answers"], json!({}));
    assert_eq!(
        gap["attempts"],
        json!({"used": 1, "remaining": 2, "next": "retry"})
    );
    let case = ledger.show("vendor-risk", "northwind.com");
    let attempt = &attempts_of(&case)[0];
    assert_eq!(attempt["status"], "gap");
    assert_eq!(attempt["closed"], json!([]));
    assert_eq!(attempt["cited"], json!([]));
    let next = ledger.result(VENDOR, T10, &approving("e2", "northwind.com"));
    assert_eq!(next["status"], "decided", "{next}");
    assert_eq!(next["attempts"]["used"], 2);
}

#[test]
fn fields_name_one_case_in_any_order_and_case() {
    let ledger = Ledger::new("fields");
    let first = ledger.result(
        PO,
        T0,
        &po(
            "k1",
            &json!({"supplier": "Acme Ltd", "po_number": "PO-1"}),
            &[("needs_human", "no"), ("received", "unknown")],
        ),
    );
    assert_eq!(first["status"], "undecided", "{first}");
    let id = first["case"]["id"].as_str().expect("a case id").to_owned();
    assert!(id.starts_with("f-"), "{id}");
    assert_eq!(
        first["case"]["fields"],
        json!({"po_number": "po-1", "supplier": "acme ltd"})
    );
    let second = ledger.result(
        PO,
        T10,
        &po(
            "k2",
            &json!({"po_number": "po-1", "supplier": "ACME LTD"}),
            &[("needs_human", "do_not_call")],
        ),
    );
    assert_eq!(second["case"]["id"], id.as_str(), "{second}");
    assert_eq!(second["attempts"]["used"], 2);
    assert_eq!(second["status"], "held");
    assert_eq!(second["outcome"], "do_not_call");
    assert_eq!(second["effects"], json!(["suppress_contact"]));
    assert_eq!(second["escalation"]["id"], "contact-compliance");
    // Another order is another case.
    let other = ledger.result(
        PO,
        T10,
        &po(
            "k3",
            &json!({"supplier": "Acme Ltd", "po_number": "PO-2"}),
            &[
                ("needs_human", "no"),
                ("spoke_with", "intended_contact"),
                ("received", "yes"),
                ("po_status", "on_time"),
            ],
        ),
    );
    assert_ne!(other["case"]["id"], id.as_str());
    assert_eq!(other["outcome"], "acknowledged", "{other}");
    assert_eq!(other["effects"], json!([]));
}

#[test]
fn callers_do_not_share_cases_or_execution_ids() {
    let ledger = Ledger::new("callers");
    let request = vendor("e1", "northwind.com", &[hedged()], None);
    ledger
        .decide_as("alice", VENDOR, T0, &request)
        .expect_code(0);
    let bob_show = ledger.show_run("vendor-risk", "northwind.com", &["--caller", "bob"]);
    bob_show.expect_code(3);
    assert_eq!(bob_show.json()["error"]["code"], "unknown_case");
    ledger.assert_no_case("vendor-risk", "northwind.com");
    // Bob's first request, with the same execution id, is his own first attempt.
    let bob = ledger.decide_as("bob", VENDOR, T10, &request);
    bob.expect_code(0);
    assert_eq!(bob.json()["attempts"]["used"], 1);
    let alice = ledger.show_run("vendor-risk", "northwind.com", &["--caller", "alice"]);
    alice.expect_code(0);
    assert_eq!(execution_ids(&alice.json()), ["e1"]);
    assert_eq!(alice.json()["caller"], "alice");
}

#[test]
fn decide_help() {
    let run = run(&["decide", "--help"], b"");
    run.expect_code(0);
    for text in [
        "--pack <FILE>",
        "--db <PATH>",
        "--caller <NAME>",
        "--now <TIME>",
        "Exit codes:",
        "execution_id_conflict",
    ] {
        assert!(run.stdout.contains(text), "{text}: {}", run.stdout);
    }
    assert!(
        run.stdout.lines().all(|line| line.chars().count() <= 100),
        "wrapped at 100 columns"
    );
    insta::assert_snapshot!("decide_help", run.stdout);
}

#[test]
fn cases_show_with_a_pack_finds_a_subject_as_it_was_sent() {
    let ledger = Ledger::new("show-normalized");
    ledger.result(VENDOR, T0, &approving("e1", "Northwind.com"));
    let pack = pack_path(VENDOR);
    let pack = pack.to_str().unwrap();
    let found = ledger.show_run(
        "vendor-risk",
        "https://www.Northwind.com/",
        &["--pack", pack],
    );
    found.expect_code(0);
    assert_eq!(found.json()["id"], "northwind.com");
    // Found by its job in --packs, the pack normalizes the id just the same.
    let packs = pack.rsplit_once('/').unwrap().0;
    let by_job = ledger.show_run("vendor-risk", "Northwind.com", &["--packs", packs]);
    by_job.expect_code(0);
    assert_eq!(by_job.json()["id"], "northwind.com");
    assert_eq!(by_job.stderr, "", "{by_job:#?}");
    // With no pack for the job (no ./packs here), the id is looked up as given, and the
    // refusal says why it was not normalized.
    let unfound = ledger.show_run("vendor-risk", "Northwind.com", &[]);
    unfound.expect_code(3);
    let message = unfound.json()["error"]["message"].to_string();
    assert!(
        message.contains("no pack for job `vendor-risk` in ./packs")
            && message.contains("looked up as given"),
        "{unfound:#?}"
    );
    // A pack of another job is refused, not used.
    let other = pack_path("po-acknowledgement.toml");
    let wrong = ledger.show_run(
        "vendor-risk",
        "Northwind.com",
        &["--pack", other.to_str().unwrap()],
    );
    wrong.expect_code(2);
    assert!(
        wrong.stdout.contains("wrong_job") || wrong.stderr.contains("wrong_job"),
        "{wrong:#?}"
    );
}

/// `backstop decide` reuses an issued case only for exactly the same text: the same words in
/// other case or spacing open a new case.
#[test]
fn an_issued_case_is_reused_only_for_exactly_the_same_text() {
    let ledger = Ledger::new("issued-exact");
    let said = |execution: &str, text: &str| {
        let request = company(execution, None, &[excerpt("site", "/about", text)]);
        let run = ledger.decide(COMPANY, T0, &request);
        run.expect_code(0);
        run.json()["case"]["id"].as_str().unwrap().to_owned()
    };
    let first = said("e1", "We sell SaaS subscriptions to retailers.");
    assert_eq!(
        said("e2", "We sell SaaS subscriptions to retailers."),
        first
    );
    assert_ne!(
        said("e3", "WE SELL  SaaS subscriptions to retailers."),
        first
    );
}
