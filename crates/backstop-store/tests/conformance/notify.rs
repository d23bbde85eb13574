//! The notification outbox: each event enqueued once per subscribed target, in the
//! transaction that records it; claims leased so a row is tried by one worker at a time; a
//! lost claim changes nothing; removed targets given up; old rows purged.

use std::collections::BTreeSet;

use backstop_core::notify::{NotifyKind, NotifyStatus};
use backstop_store::{
    NotificationFilter, NotificationRecord, NotifyOutcome, Store, Subscription, TaskEscalation,
};
use jiff::SignedDuration;
use serde_json::json;

use super::dispatch::{call, dispatch, po_live};
use super::support::{HEDGED, NO_DATA, PII, ask, at, shipped, vendor, vendor_risk_max};

const LEASE: SignedDuration = SignedDuration::from_secs(60);

fn subscribe(store: &dyn Store, targets: &[(&str, &[NotifyKind])]) -> u64 {
    let subscriptions: Vec<Subscription> = targets
        .iter()
        .map(|(target, kinds)| Subscription {
            target: (*target).to_owned(),
            kinds: kinds.to_vec(),
        })
        .collect();
    store
        .subscribe_notifications(&subscriptions, at(0))
        .unwrap()
}

fn all(store: &dyn Store) -> Vec<NotificationRecord> {
    store
        .notifications(&NotificationFilter {
            status: None,
            limit: Some(1000),
        })
        .unwrap()
}

fn with_status(store: &dyn Store, status: NotifyStatus) -> Vec<NotificationRecord> {
    store
        .notifications(&NotificationFilter {
            status: Some(status),
            limit: None,
        })
        .unwrap()
}

/// `(target, kind)` of every row, sorted.
fn routes(rows: &[NotificationRecord]) -> Vec<(String, NotifyKind)> {
    let mut found: Vec<_> = rows.iter().map(|r| (r.target.clone(), r.kind)).collect();
    found.sort();
    found
}

/// A held case enqueues `review_opened` and `escalation` for the targets subscribed to each,
/// with ids, names and the pack's hand-off, never excerpt text; a resend and a refused attempt
/// on the held case add nothing.
pub fn a_held_case_is_notified_once_per_subscribed_target(store: &dyn Store) {
    use NotifyKind::{AttemptLimit, Escalation, ReviewOpened};
    subscribe(
        store,
        &[
            ("ops", &[ReviewOpened, Escalation]),
            ("audit", &[Escalation]),
            ("limits", &[AttemptLimit]),
        ],
    );
    let pack = shipped("vendor-risk");
    let held = ask(store, &pack, "a", &vendor("e1", "h.com", &[PII]), at(0));
    assert_eq!(held.result()["status"], "held");
    let rows = all(store);
    assert_eq!(
        routes(&rows),
        [
            ("audit".to_owned(), Escalation),
            ("ops".to_owned(), Escalation),
            ("ops".to_owned(), ReviewOpened),
        ]
    );
    let review = store
        .reviews(&backstop_store::ReviewFilter::default())
        .unwrap()[0]
        .id;
    for row in &rows {
        assert_eq!(row.status, NotifyStatus::Pending);
        assert_eq!((row.attempts, row.next_at), (0, Some(at(0))));
        let payload = serde_json::to_value(&row.payload).unwrap();
        assert_eq!(payload["id"], row.id.as_str());
        assert_eq!(
            (&payload["job"], &payload["case_id"], &payload["caller"]),
            (&json!("vendor-risk"), &json!("h.com"), &json!("a"))
        );
        assert_eq!(payload["review_id"], review);
        assert_eq!(payload["lane"], "review_privacy");
        assert_eq!(payload["escalation"]["id"], "privacy-team");
        assert_eq!(payload["escalation"]["trigger"], "held");
        assert!(payload["escalation"]["nextStep"].is_string(), "{payload}");
        assert!(!payload.to_string().contains(PII.2), "{payload}");
    }
    let escalations: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.kind == Escalation)
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(escalations.len(), 1, "one event, one id for every target");
    let resent = ask(store, &pack, "a", &vendor("e1", "h.com", &[PII]), at(1));
    assert!(matches!(resent, super::support::Answer::Replayed(_)));
    let blocked = ask(store, &pack, "a", &vendor("e2", "h.com", &[HEDGED]), at(2));
    assert_eq!(blocked.refused(), "case_in_review");
    assert_eq!(all(store).len(), 3);
}

/// With no target subscribed, an event enqueues nothing.
pub fn nothing_is_enqueued_without_a_subscriber(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "h.com", &[PII]), at(0));
    assert!(all(store).is_empty());
    subscribe(store, &[("ops", &[NotifyKind::DispatchRefused])]);
    ask(store, &pack, "a", &vendor("e2", "g.com", &[PII]), at(1));
    assert!(all(store).is_empty(), "ops takes refused dispatches only");
}

/// A request refused at the attempt limit is notified once per case and cycle, however often
/// it is refused; the refusal still stores no attempt.
pub fn an_attempt_limit_refusal_is_notified_once_per_cycle(store: &dyn Store) {
    subscribe(store, &[("limits", &[NotifyKind::AttemptLimit])]);
    let pack = vendor_risk_max(1);
    ask(store, &pack, "a", &vendor("e1", "n.com", &[]), at(0));
    assert!(
        all(store).is_empty(),
        "the limit's escalation is not a refusal"
    );
    for (n, execution) in ["e2", "e3", "e4"].into_iter().enumerate() {
        let minutes = i64::try_from(n).unwrap() + 1;
        let past = ask(
            store,
            &pack,
            "a",
            &vendor(execution, "n.com", &[NO_DATA]),
            at(minutes),
        );
        assert_eq!(past.refused(), "attempt_limit_reached");
    }
    let rows = all(store);
    assert_eq!(rows.len(), 1);
    let payload = serde_json::to_value(&rows[0].payload).unwrap();
    assert_eq!(payload["kind"], "attempt_limit");
    assert_eq!(payload["code"], "attempt_limit_reached");
    assert_eq!(payload["attempts_used"], 1);
    assert_eq!(payload["escalation"]["id"], "vendor-desk");
    let case = store.case("a", "vendor-risk", "n.com").unwrap().unwrap();
    assert_eq!(case.attempts.len(), 1, "a refused request is not stored");
}

/// A dispatch refused for a decided case is notified once for the case, whatever the
/// recipients and however often it is asked.
pub fn a_refused_dispatch_is_notified(store: &dyn Store) {
    subscribe(store, &[("desk", &[NotifyKind::DispatchRefused])]);
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
    let pack = po_live();
    for (n, recipient) in ["r1", "r2", "r1"].into_iter().enumerate() {
        let minutes = i64::try_from(n).unwrap() + 1;
        let reply = dispatch(
            store,
            &pack,
            &call("PO-7", recipient, "+15550107"),
            at(minutes),
        );
        let error = reply.answers[0].error.as_ref().unwrap();
        assert_eq!(error.code.as_str(), "case_terminal");
    }
    let rows = all(store);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let payload = serde_json::to_value(&rows[0].payload).unwrap();
    assert_eq!(payload["kind"], "dispatch_refused");
    assert_eq!(payload["code"], "case_terminal");
    assert_eq!(payload["recipient"], "r1");
    assert!(
        !payload.to_string().contains("+15550107"),
        "no contact: {payload}"
    );
}

/// A task's escalation is notified as its review item opens, once per item.
pub fn a_task_escalation_is_notified(store: &dyn Store) {
    subscribe(
        store,
        &[("ops", &[NotifyKind::ReviewOpened, NotifyKind::Escalation])],
    );
    let escalation = TaskEscalation {
        task: "build-7".to_owned(),
        tool: Some("ci".to_owned()),
        class: "transient".to_owned(),
        evidence: json!([{"field": "message", "value": "token=SECRET-EVIDENCE"}]),
        to: "the on-call engineer".to_owned(),
        why: String::new(),
    };
    let item = store
        .open_task_review("agent-a", &escalation, "spent", at(0))
        .unwrap()
        .unwrap();
    assert!(
        store
            .open_task_review("agent-a", &escalation, "again", at(1))
            .unwrap()
            .is_none()
    );
    let rows = all(store);
    assert_eq!(rows.len(), 2);
    for row in &rows {
        let payload = serde_json::to_value(&row.payload).unwrap();
        assert_eq!(payload["review_id"], item.id);
        assert_eq!(payload["task"]["task"], "build-7");
        assert_eq!(payload["task"]["to"], "the on-call engineer");
        assert!(
            !payload.to_string().contains("SECRET-EVIDENCE"),
            "{payload}"
        );
    }
}

/// A claim keeps a row from every other worker until its lease passes; a try finished under
/// a lost claim changes nothing; a retry keeps the id and counts the try; delivered is final.
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
pub fn claims_are_leased_and_a_lost_claim_changes_nothing(store: &dyn Store) {
    subscribe(store, &[("ops", &[NotifyKind::ReviewOpened])]);
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "h.com", &[PII]), at(0));
    let first = store
        .claim_notifications("ops", "w1", at(1), LEASE, 10)
        .unwrap();
    assert_eq!(first.len(), 1);
    let id = first[0].id.clone();
    assert!(
        store
            .claim_notifications("ops", "w2", at(1), LEASE, 10)
            .unwrap()
            .is_empty(),
        "claimed rows are no one else's"
    );
    assert!(
        store
            .claim_notifications("elsewhere", "w2", at(9), LEASE, 10)
            .unwrap()
            .is_empty()
    );
    // w1 stopped mid-try: after the lease, w2 claims the same row, under the same id.
    let second = store
        .claim_notifications("ops", "w2", at(2), LEASE, 10)
        .unwrap();
    assert_eq!(
        second.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [id.as_str()]
    );
    let late = store
        .finish_notification(&id, "ops", "w1", &NotifyOutcome::Delivered, at(2))
        .unwrap();
    assert!(!late, "w1's claim is lost");
    let retry = NotifyOutcome::Retry {
        at: at(5),
        error: "HTTP 503".to_owned(),
    };
    assert!(
        store
            .finish_notification(&id, "ops", "w2", &retry, at(2))
            .unwrap()
    );
    let pending = &with_status(store, NotifyStatus::Pending)[0];
    assert_eq!((pending.id.as_str(), pending.attempts), (id.as_str(), 1));
    assert_eq!(pending.next_at, Some(at(5)));
    assert_eq!(pending.last_error.as_deref(), Some("HTTP 503"));
    assert!(
        store
            .claim_notifications("ops", "w3", at(4), LEASE, 10)
            .unwrap()
            .is_empty()
    );
    let third = store
        .claim_notifications("ops", "w3", at(5), LEASE, 10)
        .unwrap();
    assert_eq!(third[0].id, id);
    // Not tried (an open breaker): released without counting a try.
    let release = NotifyOutcome::Release { at: at(6) };
    assert!(
        store
            .finish_notification(&id, "ops", "w3", &release, at(5))
            .unwrap()
    );
    assert_eq!(with_status(store, NotifyStatus::Pending)[0].attempts, 1);
    store
        .claim_notifications("ops", "w4", at(6), LEASE, 10)
        .unwrap();
    assert!(
        store
            .finish_notification(&id, "ops", "w4", &NotifyOutcome::Delivered, at(6))
            .unwrap()
    );
    let delivered = &with_status(store, NotifyStatus::Delivered)[0];
    assert_eq!(
        (delivered.attempts, delivered.finished_at),
        (2, Some(at(6)))
    );
    assert_eq!(delivered.next_at, None);
    assert!(
        !store
            .finish_notification(&id, "ops", "w4", &NotifyOutcome::Delivered, at(7))
            .unwrap(),
        "delivered is final"
    );
    assert!(
        store
            .claim_notifications("ops", "w5", at(99), LEASE, 10)
            .unwrap()
            .is_empty()
    );
    ask(store, &pack, "a", &vendor("e2", "g.com", &[PII]), at(10));
    let given_up = store
        .claim_notifications("ops", "w5", at(10), LEASE, 10)
        .unwrap();
    let failed = NotifyOutcome::Failed {
        error: "connection refused".to_owned(),
    };
    assert!(
        store
            .finish_notification(&given_up[0].id, "ops", "w5", &failed, at(10))
            .unwrap()
    );
    let failed = with_status(store, NotifyStatus::Failed);
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].last_error.as_deref(), Some("connection refused"));
}

/// Subscriptions are replaced whole; a target no longer subscribed gets nothing new, and its
/// pending rows are given up with the reason.
pub fn a_removed_target_is_given_up(store: &dyn Store) {
    let both: &[NotifyKind] = &[NotifyKind::ReviewOpened];
    subscribe(store, &[("ops", both), ("old", both)]);
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "h.com", &[PII]), at(0));
    assert_eq!(subscribe(store, &[("ops", both)]), 1);
    let failed = with_status(store, NotifyStatus::Failed);
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].target, "old");
    assert!(
        failed[0]
            .last_error
            .as_deref()
            .unwrap()
            .contains("[[notify]]")
    );
    ask(store, &pack, "a", &vendor("e2", "g.com", &[PII]), at(1));
    let pending = with_status(store, NotifyStatus::Pending);
    assert_eq!(
        pending
            .iter()
            .map(|r| r.target.as_str())
            .collect::<Vec<_>>(),
        ["ops", "ops"]
    );
}

/// The purge deletes notifications finished before the cutoff, and any enqueued before it;
/// newer ones stay.
pub fn notifications_past_retention_are_purged(store: &dyn Store) {
    subscribe(store, &[("ops", &[NotifyKind::ReviewOpened])]);
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "h.com", &[PII]), at(0));
    let claimed = store
        .claim_notifications("ops", "w", at(1), LEASE, 10)
        .unwrap();
    store
        .finish_notification(&claimed[0].id, "ops", "w", &NotifyOutcome::Delivered, at(1))
        .unwrap();
    ask(store, &pack, "a", &vendor("e2", "g.com", &[PII]), at(100));
    assert_eq!(store.purge(at(0)).unwrap().notifications, 0);
    let purged = store.purge(at(50)).unwrap();
    assert_eq!(purged.notifications, 1);
    let left = all(store);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].payload.case_id.as_deref(), Some("g.com"));
}

/// Eight workers claiming at once each get their own rows: every notification is claimed
/// exactly once.
pub fn eight_workers_claim_each_notification_once(store: &dyn Store) {
    subscribe(store, &[("ops", &[NotifyKind::ReviewOpened])]);
    let pack = shipped("vendor-risk");
    for n in 0..24 {
        let case = format!("case-{n}.com");
        ask(
            store,
            &pack,
            "a",
            &vendor(&format!("e{n}"), &case, &[PII]),
            at(0),
        );
    }
    let claimed: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|w| {
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let got = store
                            .claim_notifications("ops", &format!("w{w}"), at(1), LEASE, 2)
                            .unwrap();
                        if got.is_empty() {
                            return mine;
                        }
                        mine.extend(got.into_iter().map(|r| r.id));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let distinct: BTreeSet<&String> = claimed.iter().collect();
    assert_eq!((claimed.len(), distinct.len()), (24, 24));
}
