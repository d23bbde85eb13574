//! Side effects on the ledger: a dispatch is permitted once per content-derived key, whatever
//! the concurrency; an unknown outcome is reconciled, never permitted again; the budget,
//! suppressions and a decided case refuse; a delivery is recorded once per event id.

use std::sync::Arc;

use backstop_core::effects::{DispatchState, parse_dispatch};
use backstop_core::pack::Pack;
use backstop_store::{AnswerKind, DispatchContext, DispatchFilter, DispatchReply, Store};
use jiff::Timestamp;
use serde_json::{Value, json};

use super::support::{ask, at, shipped};

const LIVE: DispatchContext = DispatchContext { live_key: true };

/// The purchase-order pack, live, with no quiet hours (tests run at any hour).
pub fn po_live() -> Arc<Pack> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../packs/po-acknowledgement.toml"),
    )
    .unwrap()
    .replace("live = false", "live = true")
    .replace("quiet_hours = { start = \"20:00\", end = \"08:00\" }\n", "");
    Arc::new(backstop_core::pack::parse_pack(&text).unwrap())
}

/// A one-recipient dispatch request for the PO `po`.
pub fn call(po: &str, recipient: &str, contact: &str) -> Value {
    json!({
        "content": {"task": "Say you are an AI assistant calling for {{company}}. Ask whether the purchase order was received and when it ships."},
        "values": {"company": "Northwind Traders"},
        "recipients": [{"id": recipient, "contact": contact,
                        "case": {"fields": {"supplier": "Acme Supply", "po_number": po}}}],
    })
}

/// Runs a dispatch request as the shell does.
pub fn dispatch(
    store: &dyn Store,
    pack: &Arc<Pack>,
    body: &Value,
    now: Timestamp,
) -> DispatchReply {
    let request = parse_dispatch(pack, "agent", body, &|z| jiff::tz::TimeZone::get(z).is_ok())
        .unwrap_or_else(|issues| panic!("{issues:?}"));
    store
        .dispatch(Arc::clone(pack), "agent", &request, LIVE, now)
        .unwrap()
}

fn kinds(reply: &DispatchReply) -> Vec<AnswerKind> {
    reply.answers.iter().map(|a| a.answer).collect()
}

pub fn the_same_content_is_permitted_once(store: &dyn Store) {
    let pack = po_live();
    let body = call("PO-1", "r1", "+15550101");
    let first = dispatch(store, &pack, &body, at(0));
    assert_eq!(kinds(&first), [AnswerKind::Permitted]);
    let key = first.answers[0].key.clone();
    // Not reported yet: its outcome is unknown, so the same content must be reconciled.
    let again = dispatch(store, &pack, &body, at(1));
    assert_eq!(kinds(&again), [AnswerKind::Reconcile]);
    assert_eq!(again.answers[0].key, key);
    store
        .dispatch_outcome("agent", &key, DispatchState::Sent, None, at(2))
        .unwrap();
    let sent = dispatch(store, &pack, &body, at(3));
    assert_eq!(kinds(&sent), [AnswerKind::Duplicate]);
    assert_eq!(sent.answers[0].dispatch.as_ref().unwrap().key, key);
    assert_eq!(
        store.dispatches(&DispatchFilter::default()).unwrap().len(),
        1
    );
}

pub fn sixteen_concurrent_requests_get_one_permit(store: &dyn Store) {
    let pack = po_live();
    let body = call("PO-2", "r1", "+15550102");
    let answers: Vec<AnswerKind> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|_| scope.spawn(|| dispatch(store, &pack, &body, at(0)).answers[0].answer))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let permits = answers
        .iter()
        .filter(|a| **a == AnswerKind::Permitted)
        .count();
    assert_eq!(permits, 1, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|a| matches!(a, AnswerKind::Permitted | AnswerKind::Reconcile))
    );
}

pub fn an_unknown_outcome_is_reconciled_and_a_failed_one_retried_within_the_budget(
    store: &dyn Store,
) {
    let pack = po_live();
    let body = call("PO-3", "r1", "+15550103");
    let key = dispatch(store, &pack, &body, at(0)).answers[0].key.clone();
    store
        .dispatch_outcome("agent", &key, DispatchState::Unknown, Some("E-504"), at(1))
        .unwrap();
    assert_eq!(
        kinds(&dispatch(store, &pack, &body, at(120))),
        [AnswerKind::Reconcile]
    );
    // A dispatch that certainly failed may go again, after the backoff, under the same key.
    let other = call("PO-4", "r1", "+15550104");
    let key4 = dispatch(store, &pack, &other, at(0)).answers[0].key.clone();
    store
        .dispatch_outcome("agent", &key4, DispatchState::Failed, Some("busy"), at(1))
        .unwrap();
    let soon = dispatch(store, &pack, &other, at(30));
    assert_eq!(kinds(&soon), [AnswerKind::Deferred]);
    assert!(
        soon.answers[0].reason.starts_with("backoff"),
        "{}",
        soon.answers[0].reason
    );
    let later = dispatch(store, &pack, &other, at(61));
    assert_eq!(kinds(&later), [AnswerKind::Permitted]);
    assert_eq!(later.answers[0].key, key4);
    assert_eq!(later.answers[0].dispatch.as_ref().unwrap().sends, 2);
    // A report on it after it went again is its own; a report on a settled one is refused.
    store
        .dispatch_outcome("agent", &key4, DispatchState::Failed, None, at(62))
        .unwrap();
    let third = dispatch(store, &pack, &other, at(62 + 121));
    assert_eq!(kinds(&third), [AnswerKind::Permitted]);
    store
        .dispatch_outcome("agent", &key4, DispatchState::Failed, None, at(200))
        .unwrap();
    let spent = dispatch(store, &pack, &other, at(2000));
    assert_eq!(kinds(&spent), [AnswerKind::Refused]);
    let error = spent.answers[0].error.as_ref().unwrap();
    assert_eq!(error.code.as_str(), "dispatch_budget_spent");
    assert_eq!(error.escalation.as_ref().unwrap().id, "buyer-desk");
    // Another caller has no such dispatch.
    assert!(
        store
            .dispatch_outcome("intruder", &key, DispatchState::Sent, None, at(3))
            .is_err()
    );
}

pub fn a_suppressed_contact_and_a_decided_case_are_not_dispatched(store: &dyn Store) {
    let pack = po_live();
    store
        .suppress("agent", &pack.job, "+15550105", None, "do_not_call", at(0))
        .unwrap();
    let suppressed = dispatch(store, &pack, &call("PO-5", "r1", "+15550105"), at(1));
    assert_eq!(kinds(&suppressed), [AnswerKind::Suppressed]);
    // Scoped to one case, the same contact may still be reached for another.
    store
        .suppress(
            "agent",
            &pack.job,
            "+15550106",
            Some("f-nothing"),
            "do_not_call",
            at(0),
        )
        .unwrap();
    assert_eq!(
        kinds(&dispatch(
            store,
            &pack,
            &call("PO-6", "r1", "+15550106"),
            at(1)
        )),
        [AnswerKind::Permitted]
    );
    // A decided order (the pack's decisions are final) takes no more dispatches.
    let decided = ask(
        store,
        &shipped("po-acknowledgement"),
        "agent",
        &json!({"execution_id": "x1", "case": {"fields": {"supplier": "Acme Supply", "po_number": "PO-7"}},
                "questions": {"needs_human": {"value": "no"}, "spoke_with": {"value": "intended_contact"},
                              "received": {"value": "yes"}, "po_status": {"value": "on_time"}},
                "confidence": 0.95, "source_status": "completed"}),
        at(0),
    );
    assert_eq!(decided.result()["status"], "decided");
    let refused = dispatch(store, &pack, &call("PO-7", "r1", "+15550107"), at(1));
    assert_eq!(
        refused.answers[0].error.as_ref().unwrap().code.as_str(),
        "case_terminal"
    );
    assert!(
        store
            .dispatches(&DispatchFilter {
                batch_key: Some(refused.batch_key),
                ..DispatchFilter::default()
            })
            .unwrap()
            .is_empty()
    );
}

pub fn a_delivery_is_recorded_once_per_event_id(store: &dyn Store) {
    let first = store
        .record_delivery("sim", "evt-1", Some("dk_x"), "{}", at(0))
        .unwrap();
    assert!(first.is_some());
    for _ in 0..9 {
        assert_eq!(
            store
                .record_delivery("sim", "evt-1", Some("dk_x"), "{}", at(1))
                .unwrap(),
            None
        );
    }
    // The same event id from another source is another event.
    assert!(
        store
            .record_delivery("other", "evt-1", None, "{}", at(1))
            .unwrap()
            .is_some()
    );
    let pending = store.deliveries(true, None, 100).unwrap();
    assert_eq!(pending.len(), 2);
    store
        .finish_delivery(pending[0].id, "applied", "decided", at(2))
        .unwrap();
    assert_eq!(store.deliveries(true, None, 100).unwrap().len(), 1);
    assert_eq!(
        store.deliveries(false, Some("dk_x"), 100).unwrap()[0].state,
        "applied"
    );
}

pub fn dispatches_past_retention_are_purged_and_suppressions_kept(store: &dyn Store) {
    let pack = po_live();
    dispatch(store, &pack, &call("PO-8", "r1", "+15550108"), at(0));
    store
        .record_delivery("sim", "evt-9", None, "{}", at(0))
        .unwrap();
    store
        .suppress("agent", &pack.job, "+15550109", None, "do_not_call", at(0))
        .unwrap();
    let purged = store.purge(at(10)).unwrap();
    assert_eq!((purged.dispatches, purged.deliveries), (1, 1));
    assert!(
        store
            .dispatches(&DispatchFilter::default())
            .unwrap()
            .is_empty()
    );
    let still = dispatch(store, &pack, &call("PO-9", "r1", "+15550109"), at(11));
    assert_eq!(kinds(&still), [AnswerKind::Suppressed]);
}

/// A settled dispatch (answered, or escalated to a person) never moves back: a late delivery's
/// update leaves its state, status and failure code as they were.
pub fn a_settled_dispatch_never_moves_back(store: &dyn Store) {
    use backstop_store::DispatchUpdate;
    let pack = po_live();
    let key = dispatch(store, &pack, &call("PO-30", "r1", "+15550130"), at(0)).answers[0]
        .key
        .clone();
    let update = |state, status: &str| DispatchUpdate {
        state,
        reconcile_at: None,
        add_round: false,
        failure_code: None,
        result_status: Some(status.to_owned()),
    };
    for settled in [DispatchState::Answered, DispatchState::Escalated] {
        let key = if settled == DispatchState::Answered {
            key.clone()
        } else {
            dispatch(store, &pack, &call("PO-31", "r1", "+15550131"), at(0)).answers[0]
                .key
                .clone()
        };
        store
            .update_dispatch(&key, &update(settled, "decided"), at(1))
            .unwrap();
        let late = DispatchUpdate {
            failure_code: Some("LATE".to_owned()),
            ..update(DispatchState::Reconciling, "refused:case_terminal")
        };
        store.update_dispatch(&key, &late, at(2)).unwrap();
        let kept = store.dispatch_by_key(&key).unwrap().unwrap();
        assert_eq!(kept.state, settled, "{key}");
        assert_eq!(kept.result_status.as_deref(), Some("decided"));
        assert_eq!(kept.failure_code, None);
    }
    let missing = store.update_dispatch("no-such-key", &update(DispatchState::Sent, "x"), at(3));
    assert!(matches!(
        missing,
        Err(backstop_store::StoreError::NotFound(_))
    ));
}

/// A do-not-call result suppresses the contact whichever route it came by: a decision sent
/// for the case (`POST /v1/jobs/{job}/decisions`, `backstop decide`) as much as a delivery,
/// in the attempt's own transaction; the pack's scope (`contact`) covers the contact's other
/// orders, and a contact the case never reached stays free.
pub fn a_do_not_call_decision_suppresses_the_cases_contact(store: &dyn Store) {
    use backstop_core::effects::{decision_body, parse_delivery};
    let pack = po_live();
    let sent = dispatch(store, &pack, &call("PO-40", "r1", "+15550140"), at(0));
    let key = sent.answers[0].key.clone();
    let record = store.dispatch_by_key(&key).unwrap().unwrap();
    let result = json!({"needs_human": "do_not_call", "spoke_with": "intended_contact",
                        "received": "unknown", "po_status": "unknown"});
    let delivery = parse_delivery(&json!({"event_id": "e-40", "dispatch_key": key,
        "status": "completed", "result": result, "confidence": 0.95}))
    .unwrap();
    let (body, _) = decision_body(&pack, &delivery, &record.case, "decide-40");
    let answer = ask(store, &pack, "agent", &body, at(1));
    assert_eq!(answer.result()["effects"], json!(["suppress_contact"]));
    let other_order = dispatch(store, &pack, &call("PO-41", "r1", "+15550140"), at(2));
    assert_eq!(kinds(&other_order), [AnswerKind::Suppressed]);
    let other_contact = dispatch(store, &pack, &call("PO-42", "r1", "+15550142"), at(2));
    assert_eq!(kinds(&other_contact), [AnswerKind::Permitted]);
}

/// A batch with one contact off the pack's allowlist goes to the simulator whole: its listed
/// recipients are not dialled either, and each answer says why.
pub fn a_batch_with_one_unlisted_contact_is_simulated_whole(store: &dyn Store) {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../packs/po-acknowledgement.toml"),
    )
    .unwrap()
    .replace(
        "live = false",
        "live = true\nallowlist = [\"+15550170\", \"+15550171\"]",
    )
    .replace("quiet_hours = { start = \"20:00\", end = \"08:00\" }\n", "");
    let pack = Arc::new(backstop_core::pack::parse_pack(&text).unwrap());
    let batch = |pos: [(&str, &str); 2]| {
        let recipients: Vec<Value> = pos
            .iter()
            .map(|(po, contact)| {
                json!({"id": format!("r-{po}"), "contact": contact,
                       "case": {"fields": {"supplier": "Acme Supply", "po_number": po}}})
            })
            .collect();
        json!({"content": {"task": "Say you are an AI assistant calling for {{company}}. Ask whether the purchase order was received."},
               "values": {"company": "Northwind Traders"}, "recipients": recipients})
    };
    let listed = dispatch(
        store,
        &pack,
        &batch([("PO-70", "+15550170"), ("PO-71", "+15550171")]),
        at(0),
    );
    assert_eq!(
        kinds(&listed),
        [AnswerKind::Permitted, AnswerKind::Permitted]
    );
    let mixed = dispatch(
        store,
        &pack,
        &batch([("PO-72", "+15550170"), ("PO-73", "+15559999")]),
        at(0),
    );
    assert_eq!(
        kinds(&mixed),
        [AnswerKind::Simulated, AnswerKind::Simulated]
    );
    assert!(
        mixed.answers[0]
            .reason
            .contains("another recipient of the batch"),
        "{}",
        mixed.answers[0].reason
    );
}

/// A suppression is lifted by an operator, with who, when and why kept: the contact may be
/// reached again; a second lift finds nothing in force.
pub fn a_lifted_suppression_is_kept_with_who_when_and_why(store: &dyn Store) {
    use backstop_store::{Lifted, StoreError, SuppressionFilter};
    let pack = po_live();
    store
        .suppress("agent", &pack.job, "+15550190", None, "do_not_call", at(0))
        .unwrap();
    let in_force = store.suppressions(&SuppressionFilter::default()).unwrap();
    assert_eq!(in_force.len(), 1);
    assert_eq!(
        (in_force[0].contact.as_str(), in_force[0].case_id.as_deref()),
        ("+15550190", None)
    );
    assert_eq!(
        kinds(&dispatch(
            store,
            &pack,
            &call("PO-90", "r1", "+15550190"),
            at(1)
        )),
        [AnswerKind::Suppressed]
    );
    let lifted = Lifted {
        at: at(2),
        by: "dana".to_owned(),
        why: "the supplier asked to be called again".to_owned(),
    };
    let done = store
        .lift_suppression("agent", &pack.job, "+15550190", None, &lifted)
        .unwrap();
    assert_eq!(done.lifted.as_ref(), Some(&lifted));
    assert!(
        store
            .suppressions(&SuppressionFilter::default())
            .unwrap()
            .is_empty()
    );
    let history = store
        .suppressions(&SuppressionFilter {
            lifted: true,
            ..SuppressionFilter::default()
        })
        .unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].lifted.as_ref(), Some(&lifted));
    assert_eq!(history[0].reason, "do_not_call");
    assert_eq!(
        kinds(&dispatch(
            store,
            &pack,
            &call("PO-91", "r1", "+15550190"),
            at(3)
        )),
        [AnswerKind::Permitted]
    );
    let again = store.lift_suppression("agent", &pack.job, "+15550190", None, &lifted);
    assert!(matches!(again, Err(StoreError::NotFound(_))), "{again:?}");
}
