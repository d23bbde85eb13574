//! The purchase-order pack through `backstop decide`: one test per step of its decision
//! precedence (`p1`..`p9`) and per row of the call failure table (`failure_*`), each on a
//! ledger of its own.

use serde_json::{Value, json};

use crate::support::{Run, TempDir, arg, run, workspace_root};

const T0: &str = "2026-01-01T00:00:00Z";
const T1: &str = "2026-01-01T01:00:00Z";
const T2: &str = "2026-01-01T02:00:00Z";
const T3: &str = "2026-01-01T03:00:00Z";

/// A clean call: the named contact, nobody asked for, receipt confirmed, on time.
const CLEAN: [(&str, &str); 4] = [
    ("needs_human", "no"),
    ("spoke_with", "intended_contact"),
    ("received", "yes"),
    ("po_status", "on_time"),
];

struct Po {
    dir: TempDir,
    db: std::path::PathBuf,
    pack: std::path::PathBuf,
}

impl Po {
    fn new(tag: &str) -> Self {
        let dir = TempDir::new(tag);
        let db = dir.path().join("backstop.db");
        let pack = workspace_root().join("packs/po-acknowledgement.toml");
        Po { dir, db, pack }
    }

    /// The shipped pack with its option on: a delay dated within 48 hours closes as delayed
    /// (the pack's three `#? ` lines uncommented, as it says to).
    fn with_delay_option(tag: &str) -> Self {
        let mut po = Po::new(tag);
        let text = std::fs::read_to_string(&po.pack)
            .unwrap()
            .replace("#? ", "");
        po.pack = po.dir.write("po-acknowledgement.toml", &text);
        po
    }

    fn run(&self, now: &str, request: &Value) -> Run {
        let pack = &self.pack;
        run(
            &[
                "decide",
                "--pack",
                arg(pack),
                "--db",
                arg(&self.db),
                "--now",
                now,
            ],
            request.to_string().as_bytes(),
        )
    }

    /// A result (exit 0).
    #[track_caller]
    fn decide(&self, now: &str, request: &Value) -> Value {
        let run = self.run(now, request);
        run.expect_code(0);
        run.json()
    }

    /// The case as `cases show` prints it.
    #[track_caller]
    fn case(&self) -> Value {
        let run = run(
            &[
                "cases",
                "show",
                "--db",
                arg(&self.db),
                "--job",
                "po-acknowledgement",
                "--case",
                &case_id(),
            ],
            b"",
        );
        run.expect_code(0);
        run.json()
    }

    #[track_caller]
    fn review(&self, args: &[&str]) -> Value {
        let mut all = vec!["review"];
        all.extend_from_slice(args);
        all.extend(["--db", arg(&self.db)]);
        let run = run(&all, b"");
        run.expect_code(0);
        run.json()
    }
}

/// The case id fields mode gives PO-7 of Acme (read from a first result).
fn case_id() -> String {
    let po = Po::new("po-id");
    po.decide(T0, &request("id", &CLEAN, &[]))["case"]["id"]
        .as_str()
        .expect("a case id")
        .to_owned()
}

/// A request for Acme's PO-7: the clean call with `changes`, then `envelope` fields over the
/// default `source_status: completed, confidence: 0.95`.
fn request(execution_id: &str, values: &[(&str, &str)], envelope: &[(&str, Value)]) -> Value {
    let mut questions = serde_json::Map::new();
    for (key, value) in values {
        questions.insert((*key).to_owned(), json!({"value": value}));
    }
    let mut body = json!({
        "execution_id": execution_id,
        "case": {"fields": {"supplier": "Acme", "po_number": "PO-7"}},
        "questions": questions,
        "source_status": "completed",
        "confidence": 0.95,
    });
    for (key, value) in envelope {
        if value.is_null() {
            body.as_object_mut().unwrap().remove(*key);
        } else {
            body[*key] = value.clone();
        }
    }
    body
}

/// The clean call with some answers replaced.
fn clean_but(changes: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut values: Vec<(&str, &str)> = CLEAN
        .iter()
        .filter(|(key, _)| !changes.iter().any(|(k, _)| k == key))
        .copied()
        .collect();
    values.extend_from_slice(changes);
    values
}

#[track_caller]
fn assert_standing(result: &Value, status: &str, outcome: Option<&str>) {
    assert_eq!(result["status"], status, "{result:#}");
    assert_eq!(result["outcome"].as_str(), outcome, "{result:#}");
}

#[track_caller]
fn assert_escalates_to(result: &Value, id: &str) {
    assert_eq!(result["escalation"]["id"], id, "{result:#}");
}

/// No instruction ever tells the agent to call again.
#[track_caller]
fn assert_no_redial(result: &Value) {
    let step = result["nextStep"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    assert!(
        !step.contains("call again") || step.contains("never call again"),
        "{step}"
    );
    assert!(!step.contains("reach the supplier"), "{step}");
}

#[test]
fn p1_a_decided_order_is_final_and_a_late_result_is_a_noop_kept_as_history() {
    let po = Po::new("po-p1");
    let first = po.decide(T0, &request("e1", &CLEAN, &[]));
    assert_standing(&first, "decided", Some("acknowledged"));
    let late = po.decide(
        T1,
        &request("e2", &clean_but(&[("po_status", "delayed")]), &[]),
    );
    assert_standing(&late, "noop", None);
    assert_eq!(late["attempts"]["next"], Value::Null, "{late:#}");
    // The late result is history: stored, and the decision stands.
    let case = po.case();
    let attempts = case["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{case:#}");
    assert_eq!(attempts[0]["outcome"], "acknowledged");
    assert_eq!(attempts[1]["status"], "noop");
    // Its resend is a replay, not another row.
    let again = po.decide(
        T2,
        &request("e2", &clean_but(&[("po_status", "delayed")]), &[]),
    );
    assert_eq!(again, late);
    assert_eq!(po.case()["attempts"].as_array().unwrap().len(), 2);
}

/// On a terminal, `cases show` says how a fields-named case got its id, and which cycle ended.
#[test]
fn cases_show_says_the_id_was_made_from_the_fields_and_which_cycle_ended() {
    let po = Po::new("po-show-human");
    po.decide(T0, &request("e1", &CLEAN, &[]));
    let packs = workspace_root().join("packs");
    let shown = run(
        &[
            "cases",
            "show",
            "--db",
            arg(&po.db),
            "--job",
            "po-acknowledgement",
            "--case",
            &case_id(),
            "--packs",
            arg(&packs),
            "--output-format",
            "human",
        ],
        b"",
    );
    shown.expect_code(0);
    assert!(
        shown.stdout.contains("id made from its fields"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("cycle 0 ended; current cycle 1"),
        "{}",
        shown.stdout
    );
}

#[test]
fn p2_a_result_missing_confidence_or_source_status_is_held_never_decided() {
    for (tag, field) in [("po-p2a", "confidence"), ("po-p2b", "source_status")] {
        let po = Po::new(tag);
        let result = po.decide(T0, &request("e1", &CLEAN, &[(field, Value::Null)]));
        assert_standing(&result, "held", Some("review_missing_fields"));
        assert!(
            result["reason"].as_str().unwrap().contains(field),
            "{result:#}"
        );
        assert_escalates_to(&result, "buyer-desk");
    }
}

#[test]
fn p3_a_call_that_did_not_complete_is_reconciled_with_no_attempt_used_then_held() {
    let po = Po::new("po-p3");
    let first = po.decide(
        T0,
        &request("e1", &CLEAN, &[("source_status", json!("in_progress"))]),
    );
    assert_standing(&first, "reconcile", None);
    assert_eq!(first["attempts"]["used"], 0, "{first:#}");
    assert_eq!(first["attempts"]["next"], "retry");
    assert_eq!(first["answers"], json!({}), "its values are ignored");
    assert_no_redial(&first);
    // Reconciled once; still not complete: a person, never a redial.
    let second = po.decide(
        T1,
        &request("e2", &CLEAN, &[("source_status", json!("queued"))]),
    );
    assert_standing(&second, "held", Some("review_unreconciled"));
    assert_escalates_to(&second, "buyer-desk");
}

#[test]
fn p3_an_empty_result_is_reconciled_never_redialed_then_held() {
    let po = Po::new("po-p3-empty");
    let nulls: Vec<(&str, &str)> = Vec::new();
    let first = po.decide(T0, &request("e1", &nulls, &[]));
    assert_standing(&first, "reconcile", None);
    assert_no_redial(&first);
    let mut all_null = request("e2", &nulls, &[]);
    for (key, _) in CLEAN {
        all_null["questions"][key] = json!({"value": null});
    }
    let second = po.decide(T1, &all_null);
    assert_standing(&second, "held", Some("review_unreconciled"));
}

#[test]
fn p4_do_not_call_outranks_everything_and_suppresses_the_contact() {
    let po = Po::new("po-p4");
    // Even beside a clean yes, an unknown speaker and an invalid status.
    let values = [
        ("needs_human", "do_not_call"),
        ("spoke_with", "unknown"),
        ("received", "yes"),
        ("po_status", "shipped_yesterday"),
    ];
    let result = po.decide(T0, &request("e1", &values, &[("confidence", json!(0.1))]));
    assert_standing(&result, "held", Some("do_not_call"));
    assert_eq!(result["effects"], json!(["suppress_contact"]));
    assert_escalates_to(&result, "contact-compliance");
}

#[test]
fn p5_a_request_for_a_person_a_dispute_or_a_commercial_change_goes_to_the_buyer() {
    for reason in ["wants_human", "disputes_po", "commercial_change"] {
        let po = Po::new(&format!("po-p5-{reason}"));
        let result = po.decide(
            T0,
            &request("e1", &clean_but(&[("needs_human", reason)]), &[]),
        );
        assert_standing(&result, "held", Some("human_review"));
        assert_escalates_to(&result, "buyer-desk");
    }
}

#[test]
fn p6_a_clean_yes_from_someone_else_or_someone_unknown_is_held_at_the_identity_gate() {
    for (who, status) in [
        ("someone_else", "on_time"),
        ("unknown", "on_time"),
        ("someone_else", "delayed"),
    ] {
        let po = Po::new(&format!("po-p6-{who}-{status}"));
        let values = clean_but(&[("spoke_with", who), ("po_status", status)]);
        let result = po.decide(T0, &request("e1", &values, &[]));
        assert_standing(&result, "held", Some("review_identity"));
    }
}

#[test]
fn p7_low_confidence_holds_the_close_back() {
    let po = Po::new("po-p7");
    let result = po.decide(T0, &request("e1", &CLEAN, &[("confidence", json!(0.5))]));
    assert_standing(&result, "held", Some("review_low_confidence"));
}

#[test]
fn p8_a_clean_confirmation_from_the_right_person_closes_the_order() {
    for (who, needs_human) in [
        ("intended_contact", "no"),
        ("authorized_representative", "no"),
        // As the precedence reads: only a request for a person holds; `unknown` is not one.
        ("intended_contact", "unknown"),
    ] {
        let po = Po::new(&format!("po-p8-{who}-{needs_human}"));
        let values = clean_but(&[("spoke_with", who), ("needs_human", needs_human)]);
        let result = po.decide(T0, &request("e1", &values, &[]));
        assert_standing(&result, "decided", Some("acknowledged"));
        assert_eq!(result["attempts"]["next"], Value::Null);
    }
}

#[test]
fn p8_a_delay_goes_to_a_person_by_default() {
    for ship_date in ["2026-01-01", "2026-01-02T18:00:00Z", "after the holidays"] {
        let po = Po::new(&format!("po-p8-delay-default-{}", ship_date.len()));
        let mut values = clean_but(&[("po_status", "delayed")]);
        values.push(("ship_date", ship_date));
        let result = po.decide(T0, &request("e1", &values, &[]));
        assert_standing(&result, "held", Some("human_review"));
    }
}

#[test]
fn p8_with_the_option_a_delay_dated_within_48_hours_closes_as_delayed() {
    // T0 is 2026-01-01T00:00:00Z.
    for (ship_date, outcome) in [
        ("2026-01-01", "acknowledged_delayed"),
        ("2026-01-02T18:00:00Z", "acknowledged_delayed"),
        ("2026-01-03T00:00:01Z", "human_review"),
        ("2025-12-20", "human_review"),
        ("after the holidays", "human_review"),
    ] {
        let po = Po::with_delay_option(&format!("po-p8-delayed-{}", ship_date.len()));
        let mut values = clean_but(&[("po_status", "delayed")]);
        values.push(("ship_date", ship_date));
        let result = po.decide(T0, &request("e1", &values, &[]));
        assert_eq!(result["outcome"], outcome, "{ship_date}: {result:#}");
    }
}

#[test]
fn p9_anything_else_answered_is_ambiguous_and_goes_to_a_person_at_once() {
    for (key, value) in [
        ("received", "unknown"),
        ("received", "no"),
        ("po_status", "unknown"),
        ("po_status", "delayed"),
        ("po_status", "blocked"),
    ] {
        let po = Po::new(&format!("po-p9-{key}-{value}"));
        let result = po.decide(T0, &request("e1", &clean_but(&[(key, value)]), &[]));
        assert_standing(&result, "held", Some("human_review"));
        assert_eq!(result["attempts"]["used"], 1, "at once, not after retries");
    }
}

#[test]
fn an_invalid_value_is_flagged_where_the_agent_sees_it() {
    let po = Po::new("po-invalid");
    let values = clean_but(&[("received", "maybe")]);
    let result = po.decide(T0, &request("e1", &values, &[]));
    assert_standing(&result, "undecided", None);
    assert_eq!(
        result["retry"]["received"]["notUsed"],
        json!([{"position": 0, "why": "invalid_value"}]),
        "{result:#}"
    );
    assert_no_redial(&result);
}

#[test]
fn failure_create_times_out_reconcile_then_a_person() {
    let po = Po::new("po-f-timeout");
    let first = po.decide(
        T0,
        &request("e1", &CLEAN, &[("source_status", json!("unknown"))]),
    );
    assert_standing(&first, "reconcile", None);
    let second = po.decide(
        T1,
        &request("e2", &CLEAN, &[("source_status", json!("unknown"))]),
    );
    assert_standing(&second, "held", Some("review_unreconciled"));
}

#[test]
fn failure_webhook_delivered_twice_the_second_is_a_no_op() {
    let po = Po::new("po-f-twice");
    let delivery = request(
        "call-9:recipient-1",
        &clean_but(&[("po_status", "blocked")]),
        &[],
    );
    let first = po.decide(T0, &delivery);
    let second = po.decide(T1, &delivery);
    assert_eq!(first, second);
    assert_eq!(po.case()["attempts"].as_array().unwrap().len(), 1);
}

#[test]
fn failure_webhook_never_arrives_the_fetched_result_is_judged_as_usual() {
    let po = Po::new("po-f-lost");
    let running = po.decide(
        T0,
        &request("e1", &[], &[("source_status", json!("in_progress"))]),
    );
    assert_standing(&running, "reconcile", None);
    // The sweep (or the agent) fetches the call's final result and sends it.
    let fetched = po.decide(T1, &request("e2", &CLEAN, &[]));
    assert_standing(&fetched, "decided", Some("acknowledged"));
    assert_eq!(
        fetched["attempts"]["used"], 1,
        "the reconcile used no attempt"
    );
}

#[test]
fn failure_structured_result_null_reconcile_then_escalate_never_resolve() {
    let po = Po::new("po-f-null");
    let mut null_result = request("e1", &[], &[]);
    null_result["questions"] = Value::Null;
    let first = po.decide(T0, &null_result);
    assert_standing(&first, "reconcile", None);
    null_result["execution_id"] = json!("e2");
    let second = po.decide(T1, &null_result);
    assert_standing(&second, "held", Some("review_unreconciled"));
    assert_ne!(second["status"], "decided");
}

#[test]
fn failure_recipient_never_answered_no_evidence_whatever_the_result_says() {
    let po = Po::new("po-f-no-answer");
    // A result object full of clean values, from a recipient who never picked up: no evidence.
    // It is reconciled (no attempt used), and a second such result goes to a person; nothing
    // is redialled and nothing closes.
    let unanswered = |n: &str| request(n, &CLEAN, &[("source_status", json!("no_answer"))]);
    let first = po.decide(T0, &unanswered("e1"));
    assert_standing(&first, "reconcile", None);
    assert_eq!(first["answers"], json!({}), "{first:#}");
    assert_eq!(first["attempts"]["used"], 0, "{first:#}");
    let second = po.decide(T1, &unanswered("e2"));
    assert_standing(&second, "held", Some("review_unreconciled"));
    assert_escalates_to(&second, "buyer-desk");
    // A failed call is the same: no evidence, never success.
    let po = Po::new("po-f-failed");
    let failed = po.decide(
        T0,
        &request("e1", &CLEAN, &[("source_status", json!("failed"))]),
    );
    assert_standing(&failed, "reconcile", None);
}

#[test]
fn failure_right_number_wrong_person_escalates_even_on_a_clean_yes() {
    let po = Po::new("po-f-wrong-person");
    let values = clean_but(&[("spoke_with", "someone_else")]);
    let result = po.decide(T0, &request("e1", &values, &[("confidence", json!(1.0))]));
    assert_standing(&result, "held", Some("review_identity"));
    assert_escalates_to(&result, "buyer-desk");
}

#[test]
fn failure_resolved_by_hand_mid_call_the_result_is_history_not_an_overwrite() {
    let po = Po::new("po-f-by-hand");
    let held = po.decide(T0, &request("e1", &clean_but(&[("received", "no")]), &[]));
    assert_standing(&held, "held", Some("human_review"));
    let id = po.review(&["list"])["reviews"][0]["id"]
        .as_i64()
        .unwrap()
        .to_string();
    let packs = workspace_root().join("packs");
    po.review(&[
        "resolve",
        "--id",
        &id,
        "--decision",
        "acknowledged",
        "--by",
        "dana",
        "--packs",
        arg(&packs),
    ]);
    let late = po.decide(T1, &request("e2", &CLEAN, &[]));
    assert_standing(&late, "noop", None);
}

#[test]
fn failure_attempts_exhausted_escalate_and_stop_dialling() {
    let po = Po::new("po-f-exhausted");
    let invalid = |n: &str| request(n, &clean_but(&[("po_status", "soonish")]), &[]);
    let first = po.decide(T0, &invalid("e1"));
    assert_eq!(first["attempts"]["next"], "retry", "{first:#}");
    let second = po.decide(T1, &invalid("e2"));
    assert_eq!(second["attempts"]["next"], "escalate", "{second:#}");
    assert_escalates_to(&second, "buyer-desk");
    let third = po.run(T2, &invalid("e3"));
    third.expect_code(3);
    assert_eq!(third.json()["error"]["code"], "attempt_limit_reached");
    let _ = T3;
}

#[test]
fn failure_caller_asks_to_renegotiate_escalates() {
    let po = Po::new("po-f-renegotiate");
    let result = po.decide(
        T0,
        &request(
            "e1",
            &clean_but(&[("needs_human", "commercial_change")]),
            &[],
        ),
    );
    assert_standing(&result, "held", Some("human_review"));
    assert_escalates_to(&result, "buyer-desk");
}

#[test]
fn failure_caller_asks_not_to_be_called_escalates_and_suppresses() {
    let po = Po::new("po-f-do-not-call");
    let result = po.decide(
        T0,
        &request("e1", &clean_but(&[("needs_human", "do_not_call")]), &[]),
    );
    assert_standing(&result, "held", Some("do_not_call"));
    assert_eq!(result["effects"], json!(["suppress_contact"]));
    assert_escalates_to(&result, "contact-compliance");
}
