//! The purchase-order pack's lifecycle on a ledger: a decision is final (a late result is a
//! no-op kept as history), a source that did not complete is reconciled with no attempt used,
//! and a second one in the cycle is held for a person.

use backstop_store::{Resolution, Store};
use serde_json::{Value, json};

use super::support::{ask, at, shipped};

/// A purchase-order result for Acme's `po` with the four values, completed, confident.
fn po(execution_id: &str, po: &str, values: [&str; 4], source_status: &str) -> Value {
    let keys = ["needs_human", "spoke_with", "received", "po_status"];
    let questions: serde_json::Map<String, Value> = keys
        .iter()
        .zip(values)
        .map(|(key, value)| ((*key).to_owned(), json!({"value": value})))
        .collect();
    json!({
        "execution_id": execution_id,
        "case": {"fields": {"supplier": "Acme", "po_number": po}},
        "questions": questions,
        "source_status": source_status,
        "confidence": 0.95,
    })
}

const CLEAN: [&str; 4] = ["no", "intended_contact", "yes", "on_time"];
const DELAYED: [&str; 4] = ["no", "intended_contact", "yes", "delayed"];

/// "A terminal record is never overwritten": a late result is answered `noop`, stored as
/// history, and the decision stands.
pub fn a_final_decision_is_never_overwritten(store: &dyn Store) {
    let pack = shipped("po-acknowledgement");
    let decided = ask(
        store,
        &pack,
        "a",
        &po("e1", "PO-1", CLEAN, "completed"),
        at(0),
    );
    assert_eq!(decided.result()["outcome"], "acknowledged");
    let case_id = decided.result()["case"]["id"].as_str().unwrap().to_owned();
    let late = ask(
        store,
        &pack,
        "a",
        &po("e2", "PO-1", DELAYED, "completed"),
        at(5),
    );
    assert_eq!(late.result()["status"], "noop", "{late:?}");
    let record = store
        .case("a", "po-acknowledgement", &case_id)
        .unwrap()
        .unwrap();
    assert_eq!(record.cycle, 1, "the late result started no new cycle");
    let statuses: Vec<&str> = record
        .attempts
        .iter()
        .map(|a| a.record.status.as_str())
        .collect();
    assert_eq!(statuses, ["decided", "noop"]);
    assert!(
        store
            .reviews(&backstop_store::ReviewFilter::default())
            .unwrap()
            .is_empty()
    );
}

/// A case resolved by a person is final too.
pub fn a_resolved_case_takes_no_late_result(store: &dyn Store) {
    let pack = shipped("po-acknowledgement");
    let held = ask(
        store,
        &pack,
        "a",
        &po("e1", "PO-2", DELAYED, "completed"),
        at(0),
    );
    assert_eq!(held.result()["outcome"], "human_review");
    let id = store
        .reviews(&backstop_store::ReviewFilter::default())
        .unwrap()[0]
        .id;
    let by_hand = Resolution {
        by: "dana".to_owned(),
        decision: "acknowledged".to_owned(),
        note: None,
    };
    let open = store.review(id).unwrap().unwrap();
    assert_eq!(open.id, id);
    assert!(open.resolution.is_none());
    store.resolve_review(id, &by_hand, at(1)).unwrap();
    let resolved = store.review(id).unwrap().unwrap();
    assert_eq!(resolved.resolution.unwrap().decision, "acknowledged");
    assert!(
        store.review(id + 1000).unwrap().is_none(),
        "an unknown id is none"
    );
    let late = ask(
        store,
        &pack,
        "a",
        &po("e2", "PO-2", CLEAN, "completed"),
        at(2),
    );
    assert_eq!(late.result()["status"], "noop");
}

/// "Reconciliation uses no attempt", and a second result that cannot be judged goes to a
/// person rather than round again.
pub fn a_reconcile_uses_no_attempt_and_happens_once(store: &dyn Store) {
    let pack = shipped("po-acknowledgement");
    let first = ask(
        store,
        &pack,
        "a",
        &po("e1", "PO-3", CLEAN, "in_progress"),
        at(0),
    );
    assert_eq!(first.result()["status"], "reconcile");
    assert_eq!(first.result()["attempts"]["used"], 0);
    let fetched = ask(
        store,
        &pack,
        "a",
        &po("e2", "PO-3", DELAYED, "completed"),
        at(1),
    );
    assert_eq!(fetched.result()["attempts"]["used"], 1, "{fetched:?}");
    let other = ask(
        store,
        &pack,
        "a",
        &po("e3", "PO-4", CLEAN, "in_progress"),
        at(0),
    );
    assert_eq!(other.result()["status"], "reconcile");
    let again = ask(store, &pack, "a", &po("e4", "PO-4", CLEAN, "queued"), at(1));
    assert_eq!(again.result()["status"], "held");
    assert_eq!(again.result()["outcome"], "review_unreconciled");
}

/// The pack features the purchase-order precedence needs, through the ledger: a missing
/// envelope field holds, an unknown speaker meets the identity gate, a delay dated within 48
/// hours closes as delayed, and an invalid value is flagged and counted.
pub fn the_purchase_order_precedence_holds_on_the_ledger(store: &dyn Store) {
    let pack = shipped("po-acknowledgement");
    let mut missing = po("e1", "PO-5", CLEAN, "completed");
    missing.as_object_mut().unwrap().remove("confidence");
    let held = ask(store, &pack, "a", &missing, at(0));
    assert_eq!(held.result()["outcome"], "review_missing_fields");

    let unknown = po(
        "e2",
        "PO-6",
        ["no", "unknown", "yes", "on_time"],
        "completed",
    );
    assert_eq!(
        ask(store, &pack, "a", &unknown, at(0)).result()["outcome"],
        "review_identity"
    );

    // at(0) is 2026-11-01T09:00:00Z. A delay goes to the buyer; with the pack's option, one
    // dated within 48 hours closes as delayed.
    let mut delayed = po("e3", "PO-7", DELAYED, "completed");
    delayed["questions"]["ship_date"] = json!({"value": "2026-11-02"});
    let held = ask(store, &pack, "a", &delayed, at(0));
    assert_eq!(held.result()["outcome"], "human_review");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../packs/po-acknowledgement.toml");
    let text = std::fs::read_to_string(path).unwrap().replace("#? ", "");
    let option = std::sync::Arc::new(backstop_core::pack::parse_pack(&text).unwrap());
    let mut delayed = po("e3b", "PO-7b", DELAYED, "completed");
    delayed["questions"]["ship_date"] = json!({"value": "2026-11-02"});
    let closed = ask(store, &option, "a", &delayed, at(0));
    assert_eq!(closed.result()["outcome"], "acknowledged_delayed");

    let invalid = po(
        "e4",
        "PO-8",
        ["no", "intended_contact", "maybe", "on_time"],
        "completed",
    );
    let open = ask(store, &pack, "a", &invalid, at(0));
    assert_eq!(open.result()["status"], "undecided");
    assert_eq!(open.result()["attempts"]["used"], 1);
    assert_eq!(
        open.result()["retry"]["received"]["notUsed"],
        json!([{"position": 0, "why": "invalid_value"}])
    );
}
