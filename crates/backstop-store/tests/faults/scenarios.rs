//! The ledger's multi-step workflows, each with its fault points, the state it starts from and
//! what must hold once it completed.

use std::sync::Arc;

use backstop_core::case::parse_request;
use backstop_core::effects::{DispatchState, decision_body, parse_delivery};
use backstop_core::notify::NotifyKind;
use backstop_store::{
    AnswerKind, DeliveryWrites, DispatchUpdate, JournalWrites, Reply, Resolution, ReviewFilter,
    StateKind, StateRow, Store, Subscription, Suppression, TaskEscalation, TaskReview,
};
use serde_json::json;

use super::Workflow;
use crate::dispatch::{call, dispatch, po_live};
use crate::support::{PII, at, shipped, vendor};

/// Every kind of notification goes to one target, so each workflow's outbox rows are part of
/// what must commit with it or not at all.
fn subscribe_all(store: &dyn Store) {
    let all = Subscription {
        target: "on-call".to_owned(),
        kinds: NotifyKind::ALL.to_vec(),
    };
    store.subscribe_notifications(&[all], at(0)).unwrap();
}

/// An attempt that holds its case: the attempt, the case, its review item and the
/// notifications, in one transaction.
pub fn an_attempt() -> Workflow {
    Workflow {
        points: &["decide.counted"],
        setup: subscribe_all,
        run: |store| {
            let pack = shipped("vendor-risk");
            let body = vendor("e-1", "acme.com", &[PII]);
            let request = parse_request(&pack, "agent", &body).unwrap();
            store.decide(pack, "agent", request, at(1)).map(|_| ())
        },
        check: |store| {
            let case = store
                .case("agent", "vendor-risk", "acme.com")
                .unwrap()
                .unwrap();
            assert_eq!(case.attempts.len(), 1, "counted once");
            let open = store.reviews(&ReviewFilter::default()).unwrap();
            assert_eq!(open.len(), 1, "its review item");
        },
        resendable: true,
    }
}

/// A do-not-call result delivered for a dispatch: the attempt, the contact's suppression, the
/// dispatch settled and the delivery finished, in one transaction.
pub fn a_delivery_decided() -> Workflow {
    Workflow {
        points: &[
            "decide.counted",
            "delivery.suppressed",
            "delivery.dispatch_moved",
        ],
        setup: |store| {
            subscribe_all(store);
            let pack = po_live();
            let sent = dispatch(store, &pack, &call("PO-1", "r1", "+15550101"), at(0));
            let key = &sent.answers[0].key;
            let payload = delivered(key).to_string();
            store
                .record_delivery("calls", "evt-1", Some(key), &payload, at(1))
                .unwrap()
                .unwrap();
        },
        run: |store| {
            let pack = po_live();
            let record = store.deliveries(false, None, 1).unwrap().remove(0);
            let key = record.dispatch_key.clone().unwrap();
            let dispatched = store.dispatch_by_key(&key).unwrap().unwrap();
            let delivery = parse_delivery(&serde_json::from_str(&record.payload).unwrap()).unwrap();
            let (body, _) = decision_body(&pack, &delivery, &dispatched.case, "delivery:evt-1");
            let request = parse_request(&pack, "agent", &body).unwrap();
            let then = |reply: &Reply| DeliveryWrites {
                suppression: matches!(reply, Reply::Counted(_) | Reply::Replayed(_)).then(|| {
                    Suppression {
                        caller: "agent".to_owned(),
                        job: pack.job.clone(),
                        contact: dispatched.contact.clone(),
                        case_id: None,
                        reason: "do_not_call".to_owned(),
                    }
                }),
                dispatch: Some((
                    key.clone(),
                    DispatchUpdate {
                        state: DispatchState::Answered,
                        reconcile_at: None,
                        add_round: false,
                        failure_code: None,
                        result_status: Some("held".to_owned()),
                    },
                )),
                state: "applied",
                detail: "held `do_not_call`".to_owned(),
            };
            let pack = Arc::clone(&pack);
            store
                .decide_delivery(pack, "agent", request, at(2), record.id, &then)
                .map(|_| ())
        },
        check: |store| {
            assert!(store.deliveries(true, None, 10).unwrap().is_empty(), "done");
            let record = store.deliveries(false, None, 1).unwrap().remove(0);
            assert_eq!(record.state, "applied");
            let key = record.dispatch_key.unwrap();
            let settled = store.dispatch_by_key(&key).unwrap().unwrap();
            assert_eq!(settled.state, DispatchState::Answered);
            let case = store
                .case("agent", "po-acknowledgement", &settled.case_id)
                .unwrap()
                .unwrap();
            assert_eq!(case.attempts.len(), 1, "counted once");
            // The contact's other order is suppressed.
            let other = dispatch(store, &po_live(), &call("PO-2", "r1", "+15550101"), at(3));
            assert_eq!(other.answers[0].answer, AnswerKind::Suppressed);
        },
        resendable: true,
    }
}

/// What the calling service posts for a do-not-call answer.
fn delivered(key: &str) -> serde_json::Value {
    json!({"event_id": "evt-1", "dispatch_key": key, "status": "completed", "confidence": 0.95,
           "result": {"needs_human": "do_not_call", "spoke_with": "intended_contact",
                      "received": "unknown", "po_status": "unknown"}})
}

/// A task's failure journaled: the event, the task's row and its first escalation's review
/// item, and the journal's position, in one transaction.
pub fn a_journal_write() -> Workflow {
    Workflow {
        points: &[
            "journal.appended",
            "journal.rows_written",
            "journal.reviews_opened",
        ],
        setup: subscribe_all,
        run: |store| {
            let event = failure_event();
            store
                .journal(std::slice::from_ref(&event), 0, &mut |_| escalated_writes())
                .map(|_| ())
        },
        check: |store| {
            let journal = store.journal_after(0).unwrap();
            assert_eq!(journal.len(), 1);
            let (rows, position) = store.call_state().unwrap();
            assert_eq!((rows.len(), position), (1, journal[0].id));
            assert_eq!(store.reviews(&ReviewFilter::default()).unwrap().len(), 1);
        },
        // A journal event is not deduplicated by the ledger (the call state is), so a second
        // run is a second event: nothing to compare.
        resendable: false,
    }
}

/// Failures journaled with the rows they change and no review item (on `PostgreSQL` the
/// path of two round trips: the append, then the rows with the commit).
pub fn a_journal_write_without_review() -> Workflow {
    Workflow {
        points: &["journal.appended"],
        setup: subscribe_all,
        run: |store| {
            let events = [failure_event(), failure_event()];
            store
                .journal(&events, 0, &mut |_| JournalWrites {
                    checkpoint: escalated_writes().checkpoint,
                    task_reviews: Vec::new(),
                })
                .map(|_| ())
        },
        check: |store| {
            let journal = store.journal_after(0).unwrap();
            assert_eq!(journal.len(), 2);
            let (rows, position) = store.call_state().unwrap();
            assert_eq!((rows.len(), position), (1, journal[1].id));
            assert!(store.reviews(&ReviewFilter::default()).unwrap().is_empty());
        },
        resendable: false,
    }
}

fn failure_event() -> backstop_store::CallEvent {
    backstop_store::CallEvent {
        at: at(0),
        kind: "failure".to_owned(),
        subject: "agent\u{1f}t1".to_owned(),
        body: "{}".to_owned(),
    }
}

fn escalated_writes() -> JournalWrites {
    JournalWrites {
        checkpoint: Some(vec![StateRow {
            kind: StateKind::Task,
            key: "agent\u{1f}t1".to_owned(),
            caller: "agent".to_owned(),
            body: Some(r#"{"stopped":true}"#.to_owned()),
            expires: None,
        }]),
        task_reviews: vec![TaskReview {
            caller: "agent".to_owned(),
            escalation: TaskEscalation {
                task: "t1".to_owned(),
                tool: Some("search".to_owned()),
                class: "auth".to_owned(),
                evidence: serde_json::Value::Null,
                to: "the operator on call".to_owned(),
                why: String::new(),
            },
            reason: "the credentials were refused".to_owned(),
            at: at(0),
        }],
    }
}

/// A task's review item resolved `retry`: the resolution, the task's reset event, its row and
/// the position, in one transaction.
pub fn a_resolution_with_its_reset() -> Workflow {
    Workflow {
        points: &[
            "review.resolved",
            "journal.appended",
            "journal.rows_written",
            "journal.reviews_opened",
        ],
        setup: |store| {
            subscribe_all(store);
            let event = failure_event();
            store
                .journal(std::slice::from_ref(&event), 0, &mut |_| escalated_writes())
                .unwrap();
        },
        run: |store| {
            let item = store.reviews(&ReviewFilter::default()).unwrap().remove(0);
            let after = store.call_state()?.1;
            let resolution = Resolution {
                by: "dana".to_owned(),
                decision: "retry".to_owned(),
                note: Some("the key was rotated".to_owned()),
            };
            let reset = |item: &backstop_store::ReviewItem| {
                vec![backstop_store::CallEvent {
                    at: at(5),
                    kind: "task_reset_all".to_owned(),
                    subject: "agent\u{1f}t1".to_owned(),
                    body: format!(r#"{{"by":"dana","review":{}}}"#, item.id),
                }]
            };
            let cleared = || JournalWrites {
                checkpoint: Some(vec![StateRow {
                    body: None,
                    ..escalated_writes().checkpoint.unwrap().remove(0)
                }]),
                task_reviews: Vec::new(),
            };
            store
                .resolve_review_journaled(item.id, &resolution, at(5), &reset, after, &mut |_| {
                    cleared()
                })
                .map(|_| ())
        },
        check: |store| {
            let item = store.reviews(&ReviewFilter::default()).unwrap().remove(0);
            assert_eq!(item.resolution.unwrap().decision, "retry");
            let journal = store.journal_after(0).unwrap();
            assert_eq!(journal.len(), 2, "the failure, then the reset");
            assert_eq!(journal[1].event.kind, "task_reset_all");
            assert_eq!(store.call_state().unwrap(), (Vec::new(), journal[1].id));
        },
        resendable: false,
    }
}

/// A batch of two recipients gated: both stored under their keys, or neither.
pub fn a_dispatch_of_two_recipients() -> Workflow {
    Workflow {
        points: &["dispatch.recipient_gated"],
        setup: subscribe_all,
        run: |store| {
            let mut body = call("PO-7", "r1", "+15550107");
            let second = json!({"id": "r2", "contact": "+15550108",
                                "case": {"fields": {"supplier": "Acme Supply", "po_number": "PO-8"}}});
            body["recipients"].as_array_mut().unwrap().push(second);
            let request =
                backstop_core::effects::parse_dispatch(&po_live(), "agent", &body, &|z| {
                    jiff::tz::TimeZone::get(z).is_ok()
                })
                .unwrap();
            let live = backstop_store::DispatchContext { live_key: true };
            let reply = store.dispatch(po_live(), "agent", &request, live, at(1))?;
            let permitted = reply
                .answers
                .iter()
                .filter(|a| a.answer == AnswerKind::Permitted)
                .count();
            // A resend of the same batch is answered as a duplicate, never permitted again.
            assert!(permitted == 2 || permitted == 0, "{reply:?}");
            Ok(())
        },
        check: |store| {
            let all = store
                .dispatches(&backstop_store::DispatchFilter::default())
                .unwrap();
            assert_eq!(all.len(), 2, "both recipients, each once");
        },
        resendable: true,
    }
}

/// The retention purge: attempts, review items, events, call state, dispatches, deliveries and
/// notifications past retention, in one transaction.
pub fn a_purge() -> Workflow {
    Workflow {
        points: &["purge.attempts_deleted"],
        setup: |store| {
            subscribe_all(store);
            let pack = shipped("vendor-risk");
            let body = vendor("e-1", "acme.com", &[PII]);
            let request = parse_request(&pack, "agent", &body).unwrap();
            store.decide(pack, "agent", request, at(1)).unwrap();
            let item = store.reviews(&ReviewFilter::default()).unwrap().remove(0);
            let resolution = Resolution {
                by: "dana".to_owned(),
                decision: "retry".to_owned(),
                note: None,
            };
            store.resolve_review(item.id, &resolution, at(2)).unwrap();
            dispatch(store, &po_live(), &call("PO-9", "r1", "+15550109"), at(2));
        },
        run: |store| store.purge(at(60 * 24 * 40)).map(|_| ()),
        check: |store| {
            assert!(
                store
                    .case("agent", "vendor-risk", "acme.com")
                    .unwrap()
                    .is_none()
            );
            assert!(store.reviews(&ReviewFilter::default()).unwrap().is_empty());
            let left = store.dispatches(&backstop_store::DispatchFilter::default());
            assert!(left.unwrap().is_empty());
        },
        resendable: true,
    }
}
