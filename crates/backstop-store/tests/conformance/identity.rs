//! Seed 000, "Retrying a case without its own ID": issued, fields and content identity.

use std::sync::Arc;

use backstop_core::pack::{Pack, parse_pack};
use backstop_store::Store;
use serde_json::{Value, json};

use super::support::{ask, at, attempts, company, shipped};

const SAAS: &str = "We sell SaaS subscriptions to retailers.";
const PLATFORM: &str = "Acme is a software platform company.";

/// "The agent leaves the case ID out of its first request and sends the returned case.id
/// with every retry."
pub fn issued_cases_get_an_id_and_retries_send_it_back(store: &dyn Store) {
    let pack = shipped("company-classification");
    let first = ask(store, &pack, "a", &company("e1", None, &[SAAS]), at(0));
    let id = first.result()["case"]["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("i-"), "{id}");
    assert_eq!(attempts(first.result()), (1, 1, json!("retry")));
    let retry = ask(
        store,
        &pack,
        "a",
        &company("e2", Some(&id), &[SAAS, PLATFORM]),
        at(1),
    );
    assert_eq!(retry.result()["case"]["id"], id.as_str());
    assert_eq!(retry.result()["status"], "decided");
    assert_eq!(retry.result()["outcome"], "software");
    assert_eq!(attempts(retry.result()).0, 2);
}

/// "A first request whose excerpts are exactly the same text as a case the same caller
/// opened on the job in the last 24 hours reuses that case."
pub fn starting_over_reuses_the_issued_case(store: &dyn Store) {
    let pack = shipped("company-classification");
    let first = ask(store, &pack, "a", &company("e1", None, &[SAAS]), at(0));
    let id = first.result()["case"]["id"].clone();
    let again = ask(store, &pack, "a", &company("e2", None, &[SAAS]), at(5));
    assert_eq!(
        again.result()["case"]["id"],
        id,
        "starting over reuses the case"
    );
    assert_eq!(
        attempts(again.result()).0,
        2,
        "and does not reset its attempts"
    );
    // Other text, another caller, or a day later: a new case.
    let other = ask(store, &pack, "a", &company("e3", None, &[PLATFORM]), at(6));
    assert_ne!(other.result()["case"]["id"], id);
    let bob = ask(store, &pack, "b", &company("e1", None, &[SAAS]), at(7));
    assert_ne!(bob.result()["case"]["id"], id);
    let later = ask(
        store,
        &pack,
        "a",
        &company("e4", None, &[SAAS]),
        at(24 * 60 + 1),
    );
    assert_ne!(later.result()["case"]["id"], id);
    assert_eq!(attempts(later.result()).0, 1);
}

/// A first request with no excerpt text has nothing to be recognized by: it opens a new case
/// rather than reusing another subject's.
pub fn a_first_request_without_text_opens_a_new_case(store: &dyn Store) {
    let pack = shipped("company-classification");
    let empty = |execution: &str| json!({"execution_id": execution});
    let first = ask(store, &pack, "a", &empty("e1"), at(0));
    let second = ask(store, &pack, "a", &empty("e2"), at(1));
    assert_ne!(first.result()["case"]["id"], second.result()["case"]["id"]);
    assert_eq!(attempts(second.result()).0, 1);
}

/// A case id backstop never issued to this caller names no case.
pub fn an_unknown_issued_id_is_refused(store: &dyn Store) {
    let pack = shipped("company-classification");
    let first = ask(store, &pack, "a", &company("e1", None, &[SAAS]), at(0));
    let id = first.result()["case"]["id"].as_str().unwrap().to_owned();
    let made_up = ask(
        store,
        &pack,
        "a",
        &company("e2", Some("i-made-up"), &[SAAS]),
        at(1),
    );
    assert_eq!(made_up.refused(), "unknown_case");
    let stolen = ask(store, &pack, "b", &company("e3", Some(&id), &[SAAS]), at(1));
    assert_eq!(
        stolen.refused(),
        "unknown_case",
        "another caller's id is not theirs"
    );
}

/// "A caller may open at most 200 new issued cases per job in any 24 hours."
pub fn issued_cases_are_limited_per_caller_per_day(store: &dyn Store) {
    let pack = shipped("company-classification");
    for i in 0..200 {
        let body = company(
            &format!("e{i}"),
            None,
            &[&format!("Company {i} sells things.")],
        );
        let answer = ask(store, &pack, "a", &body, at(i / 10));
        assert_eq!(attempts(answer.result()).0, 1);
    }
    let over = company("e200", None, &["Company 200 sells things."]);
    assert_eq!(
        ask(store, &pack, "a", &over, at(30)).refused(),
        "issued_case_limit"
    );
    // Reusing an open case is not a new one, and other callers have their own limit.
    let reuse = company("e201", None, &["Company 3 sells things."]);
    assert_eq!(
        attempts(ask(store, &pack, "a", &reuse, at(31)).result()).0,
        2
    );
    assert!(matches!(
        ask(store, &pack, "b", &over, at(31)),
        super::support::Answer::Result(_)
    ));
    // A day after the first ones, the window has room again.
    let next_day = company("e202", None, &["Company 202 sells things."]);
    let answer = ask(store, &pack, "a", &next_day, at(24 * 60 + 1));
    assert_eq!(attempts(answer.result()).0, 1);
}

/// "Fields: the same field values are the same case, whatever order they're sent in."
pub fn fields_identity_ignores_order(store: &dyn Store) {
    let pack = shipped("po-acknowledgement");
    let one: Value = serde_json::from_str(
        r#"{"execution_id": "e1", "case": {"fields": {"supplier": "Acme", "po_number": "PO-7"}},
            "questions": {"needs_human": {"value": "unknown"}},
            "source_status": "completed", "confidence": 0.9}"#,
    )
    .unwrap();
    let two: Value = serde_json::from_str(
        r#"{"execution_id": "e2", "case": {"fields": {"po_number": "po-7", "supplier": "ACME"}},
            "questions": {"needs_human": {"value": "unknown"}, "received": {"value": "yes"}},
            "source_status": "completed", "confidence": 0.9}"#,
    )
    .unwrap();
    let first = ask(store, &pack, "a", &one, at(0));
    let second = ask(store, &pack, "a", &two, at(1));
    assert_eq!(first.result()["case"]["id"], second.result()["case"]["id"]);
    assert_eq!(
        second.result()["case"]["fields"],
        json!({"po_number": "po-7", "supplier": "acme"})
    );
    assert_eq!(attempts(second.result()).0, 2);
    let other: Value = serde_json::from_str(
        r#"{"execution_id": "e3", "case": {"fields": {"supplier": "Acme", "po_number": "PO-8"}}}"#,
    )
    .unwrap();
    assert_ne!(
        ask(store, &pack, "a", &other, at(2)).result()["case"]["id"],
        first.result()["case"]["id"]
    );
}

/// "Content: the same judged text is the same case. Changing the text of the question the
/// identity names makes a new case."
pub fn content_identity_follows_the_text(store: &dyn Store) {
    let pack = content_pack();
    let ticket = |execution: &str, text: &str| {
        json!({"execution_id": execution, "questions": {"summary": {"excerpts": [
            {"source": "ticket", "locator": "body", "text": text}
        ]}}})
    };
    let first = ask(
        store,
        &pack,
        "a",
        &ticket("e1", "The app shows an odd screen."),
        at(0),
    );
    let id = first.result()["case"]["id"].clone();
    assert!(id.as_str().unwrap().starts_with("c-"));
    let same = ask(
        store,
        &pack,
        "a",
        &ticket("e2", "the app  shows an ODD screen."),
        at(1),
    );
    assert_eq!(same.result()["case"]["id"], id);
    assert_eq!(attempts(same.result()).0, 2);
    let changed = ask(
        store,
        &pack,
        "a",
        &ticket("e3", "The app shows a crash."),
        at(2),
    );
    assert_ne!(changed.result()["case"]["id"], id);
    assert_eq!(attempts(changed.result()).0, 1);
}

fn content_pack() -> Arc<Pack> {
    let text = r#"
job = "ticket-triage"
title = "Ticket triage"
[identity]
mode = "content"
question = "summary"
[attempts]
escalate = "desk"
[unresolved]
next_step = "Quote the ticket again."
escalate = "desk"
[[questions]]
key = "summary"
text = "What does the ticket report?"
fix = "Quote the ticket's body."
where_to_look = "The ticket."
answers = [
  { value = "bug", means = "Something broke.", indicators = ["crash", "error"] },
  { value = "question", means = "A how-to question.", indicators = ["how do i"] },
]
[[rules]]
when = { summary = "bug" }
outcome = "engineering"
[[outcomes]]
id = "engineering"
kind = "decision"
next_step = "Send the ticket to engineering."
[[escalations]]
id = "desk"
why = "The ticket could not be triaged."
to = "Support desk"
next_step = "Triage by hand."
"#;
    Arc::new(parse_pack(text).unwrap_or_else(|issues| panic!("{issues:?}")))
}

/// An issued case is reused only for exactly the same text by default: the same words with
/// other case or spacing open a new case. A pack may fold case and whitespace instead
/// (`[identity] reuse = "folded"`).
pub fn issued_reuse_is_exact_unless_the_pack_folds(store: &dyn Store) {
    let exact = shipped("company-classification");
    let first = ask(store, &exact, "a", &company("e1", None, &[SAAS]), at(0));
    let id = first.result()["case"]["id"].clone();
    let shouted = "WE SELL  SaaS subscriptions\nto retailers.";
    let other = ask(store, &exact, "a", &company("e2", None, &[shouted]), at(1));
    assert_ne!(other.result()["case"]["id"], id, "other text: a new case");
    let same = ask(store, &exact, "a", &company("e3", None, &[SAAS]), at(2));
    assert_eq!(
        same.result()["case"]["id"],
        id,
        "the same text: the same case"
    );

    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../packs/company-classification.toml");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("mode = \"issued\"", "mode = \"issued\"\nreuse = \"folded\"");
    let folding = std::sync::Arc::new(backstop_core::pack::parse_pack(&text).unwrap());
    let first = ask(store, &folding, "b", &company("e1", None, &[SAAS]), at(0));
    let id = first.result()["case"]["id"].clone();
    let again = ask(
        store,
        &folding,
        "b",
        &company("e2", None, &[shouted]),
        at(1),
    );
    assert_eq!(again.result()["case"]["id"], id, "folded: the same case");
}
