//! Seed 000, "What Felspar keeps": question keys and source locators only, deleted after 30
//! days.

use backstop_store::{DEFAULT_RETENTION, Store};

use super::support::{Answer, HEDGED, NO_DATA, ask, at, attempts, shipped, vendor};

/// "For each attempt, Felspar records the question keys and source locators only."
pub fn records_keep_keys_sources_locators_and_hashes_only(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "k.com", &[NO_DATA]), at(0));
    let record = store.case("a", "vendor-risk", "k.com").unwrap().unwrap();
    let kept = &record.attempts[0].record;
    assert_eq!(kept.closed, ["data_access"]);
    assert_eq!(kept.cited.len(), 1);
    let cited = serde_json::to_value(&kept.cited[0]).unwrap();
    let fields: Vec<&String> = cited.as_object().unwrap().keys().collect();
    assert_eq!(fields, ["hash", "locator", "source", "under"]);
    assert_eq!(cited["locator"], "§4.2");
    let shown = serde_json::to_string(&record).unwrap();
    assert!(
        !shown.contains(NO_DATA.2),
        "no excerpt text in what is kept"
    );
}

/// "... and deletes attempt records after 30 days."
pub fn purge_deletes_attempts_past_retention(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    let old = vendor("e1", "p.com", &[HEDGED]);
    ask(store, &pack, "a", &old, at(0));
    let day = 24 * 60;
    ask(
        store,
        &pack,
        "a",
        &vendor("e2", "young.com", &[HEDGED]),
        at(20 * day),
    );
    // A held case waits for its reviewer however old it is.
    ask(
        store,
        &pack,
        "a",
        &vendor("e3", "held.com", &[NO_DATA]),
        at(0),
    );
    let purged = store.purge(at(31 * day) - DEFAULT_RETENTION).unwrap();
    assert_eq!((purged.attempts, purged.cases), (2, 1));
    assert_eq!(
        store
            .case("a", "vendor-risk", "held.com")
            .unwrap()
            .unwrap()
            .reviews
            .len(),
        1
    );
    assert!(store.case("a", "vendor-risk", "p.com").unwrap().is_none());
    assert_eq!(
        store
            .case("a", "vendor-risk", "young.com")
            .unwrap()
            .unwrap()
            .attempts
            .len(),
        1
    );
    // The purged execution is gone: sending it again is a new attempt, not a replay.
    let again = ask(store, &pack, "a", &old, at(31 * day));
    assert!(matches!(again, Answer::Result(_)));
    assert_eq!(attempts(again.result()).0, 1);
    assert_eq!(
        store
            .purge(at(31 * day) - DEFAULT_RETENTION)
            .unwrap()
            .attempts,
        0
    );
}

/// Call-level events are kept in order and purged with the rest; a journal position is never
/// used twice, even once a purge has emptied the journal.
pub fn call_events_are_journaled_and_purged(store: &dyn Store) {
    let event = |minute: i64, kind: &str| backstop_store::CallEvent {
        at: at(minute),
        kind: kind.to_owned(),
        subject: "task-1".to_owned(),
        body: "{}".to_owned(),
    };
    let first = journal(store, &[event(0, "failure")], 0);
    assert_eq!(first.len(), 1);
    let after_first = first[0].id;
    let more = journal(store, &[event(5, "grant")], after_first);
    assert_eq!(more.len(), 1, "only what came after the position");
    let last = journal(store, &[event(10, "success")], 0);
    let kinds: Vec<&str> = last.iter().map(|e| e.event.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["failure", "grant", "success"],
        "journal order, the new one last"
    );
    assert!(last.windows(2).all(|w| w[0].id < w[1].id));
    let end = last[2].id;

    let (_, position) = store.call_state().unwrap();
    assert_eq!(position, end, "the kept state reflects the whole journal");
    assert_eq!(store.journal_after(after_first).unwrap().len(), 2);
    assert!(store.journal_after(end).unwrap().is_empty());

    assert_eq!(store.purge(at(6)).unwrap().events, 2);
    assert_eq!(store.journal_after(0).unwrap().len(), 1);
    assert_eq!(store.purge(at(60)).unwrap().events, 1);
    assert!(store.journal_after(0).unwrap().is_empty());
    let (_, position) = store.call_state().unwrap();
    assert_eq!(position, end, "the position survives an empty journal");
    let next = journal(store, &[event(70, "failure")], end);
    assert_eq!(next.len(), 1);
    assert!(next[0].id > end, "positions only grow");
    let batch = journal(
        store,
        &[event(80, "grant"), event(81, "success")],
        next[0].id,
    );
    let kinds: Vec<&str> = batch.iter().map(|e| e.event.kind.as_str()).collect();
    assert_eq!(kinds, ["grant", "success"], "a batch keeps its order");
    assert!(batch[0].id < batch[1].id);
    store.ping().unwrap();
}

/// Several stores on one ledger (processes, say) journal at once, each following the journal
/// from its own position: each sees every event exactly once, in one order shared by all.
pub fn writers_on_one_ledger_see_one_journal_order(stores: &[&dyn Store]) {
    let seen: Vec<Vec<(i64, String)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(n, store)| {
                scope.spawn(move || {
                    let mut position = 0;
                    let mut seen = Vec::new();
                    for i in 0..25 {
                        let event = backstop_store::CallEvent {
                            at: at(i),
                            kind: "failure".to_owned(),
                            subject: format!("writer-{n}"),
                            body: format!("{{\"i\": {i}}}"),
                        };
                        let entries = journal(*store, std::slice::from_ref(&event), position);
                        let mine = entries.last().unwrap();
                        assert_eq!(mine.event, event, "the new event comes last");
                        for entry in entries {
                            assert!(entry.id > position, "nothing seen twice");
                            position = entry.id;
                            seen.push((entry.id, entry.event.subject.clone()));
                        }
                    }
                    seen
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all = stores[0].journal_after(0).unwrap();
    let order: Vec<(i64, String)> = all.into_iter().map(|e| (e.id, e.event.subject)).collect();
    assert_eq!(order.len(), 25 * stores.len());
    for writer in &seen {
        // Each writer saw the journal from its start up to its last event, with no gap.
        assert_eq!(writer[..], order[..writer.len()]);
    }
}

/// Journals `events` after `after`, keeping no call state: what the journal handed back.
/// Journals `events` after `after` with a checkpoint of no changed rows (the position moves).
fn journal(
    store: &dyn Store,
    events: &[backstop_store::CallEvent],
    after: i64,
) -> Vec<backstop_store::JournalEntry> {
    store
        .journal(events, after, &mut |_| backstop_store::JournalWrites {
            checkpoint: Some(Vec::new()),
            task_reviews: Vec::new(),
        })
        .unwrap()
}

/// The call state a journal transaction returns is kept with it and read back whole with the
/// position it reflects; a row without a body is deleted; the purge deletes rows past their
/// window and keeps the rest (a stop has none), and never an event the state does not reflect.
pub fn call_state_is_kept_with_the_journal(store: &dyn Store) {
    use backstop_store::{JournalWrites, StateKind, StateRow};
    let writes = |rows: Vec<StateRow>| JournalWrites {
        checkpoint: Some(rows),
        task_reviews: Vec::new(),
    };
    let row = |kind, key: &str, body: Option<&str>, expires: Option<i64>| StateRow {
        kind,
        key: key.to_owned(),
        caller: "agent".to_owned(),
        body: body.map(str::to_owned),
        expires: expires.map(at),
    };
    let event = |minute: i64| backstop_store::CallEvent {
        at: at(minute),
        kind: "failure".to_owned(),
        subject: "agent\u{1f}t".to_owned(),
        body: "{}".to_owned(),
    };
    let (rows, position) = store.call_state().unwrap();
    assert!(rows.is_empty());
    assert_eq!(position, 0);
    let mut given = Vec::new();
    let entries = store
        .journal(&[event(0)], 0, &mut |entries| {
            given = entries.to_vec();
            writes(vec![
                row(StateKind::Task, "agent\u{1f}t", Some("{\"a\":1}"), Some(10)),
                row(StateKind::Task, "agent\u{1f}stopped", Some("{}"), None),
                row(StateKind::Tool, "search", Some("{\"b\":2}"), Some(20)),
            ])
        })
        .unwrap();
    assert_eq!(given, entries, "follow is given what the journal returns");
    let (rows, position) = store.call_state().unwrap();
    assert_eq!(position, entries[0].id);
    assert_eq!(rows.len(), 3);
    assert!(rows.contains(&row(StateKind::Tool, "search", Some("{\"b\":2}"), Some(20))));
    assert!(rows.contains(&row(
        StateKind::Task,
        "agent\u{1f}stopped",
        Some("{}"),
        None
    )));

    // Rewritten and deleted in the next transaction.
    store
        .journal(&[event(1)], position, &mut |_| {
            writes(vec![
                row(StateKind::Task, "agent\u{1f}t", Some("{\"a\":2}"), Some(10)),
                row(StateKind::Tool, "search", None, None),
            ])
        })
        .unwrap();
    let (rows, later) = store.call_state().unwrap();
    assert!(later > position);
    assert_eq!(rows.len(), 2);
    assert!(rows.contains(&row(
        StateKind::Task,
        "agent\u{1f}t",
        Some("{\"a\":2}"),
        Some(10)
    )));

    // An event journaled by a writer that did not apply it (the state does not reflect it).
    store
        .journal(&[event(2)], i64::MAX, &mut |_| writes(Vec::new()))
        .unwrap();
    store.purge(at(60)).unwrap();
    let (rows, _) = store.call_state().unwrap();
    assert_eq!(
        rows,
        vec![row(StateKind::Task, "agent\u{1f}stopped", Some("{}"), None)],
        "past its window deleted, a stop kept"
    );
    let left = store.journal_after(0).unwrap();
    assert_eq!(left.len(), 1, "the event the state does not reflect stays");
    assert_eq!(left[0].event.at, at(2));
}

/// A journal transaction is one: events, call-state rows, and the review items of tasks' first
/// escalations commit together, and a failure anywhere in it (here a panic while applying,
/// as a killed process would leave it) leaves none of them.
pub fn a_journal_transaction_commits_whole_or_not_at_all(store: &dyn Store) {
    use backstop_store::{JournalWrites, StateKind, StateRow, TaskEscalation, TaskReview};
    let event = backstop_store::CallEvent {
        at: at(0),
        kind: "failure".to_owned(),
        subject: "agent-a\u{1f}t1".to_owned(),
        body: "{}".to_owned(),
    };
    let writes = || JournalWrites {
        checkpoint: Some(vec![StateRow {
            kind: StateKind::Task,
            key: "agent-a\u{1f}t1".to_owned(),
            caller: "agent-a".to_owned(),
            body: Some("{}".to_owned()),
            expires: None,
        }]),
        task_reviews: vec![TaskReview {
            caller: "agent-a".to_owned(),
            escalation: TaskEscalation {
                task: "t1".to_owned(),
                tool: Some("search".to_owned()),
                class: "transient".to_owned(),
                evidence: serde_json::Value::Null,
                to: "the operator on call".to_owned(),
                why: String::new(),
            },
            reason: "every way is spent".to_owned(),
            at: at(0),
        }],
    };
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.journal(std::slice::from_ref(&event), 0, &mut |_| {
            panic!("killed between appending the events and writing what they changed")
        })
    }));
    assert!(failed.is_err());
    assert!(store.journal_after(0).unwrap().is_empty(), "no event");
    assert!(store.call_state().unwrap().0.is_empty(), "no row");
    let open = store
        .reviews(&backstop_store::ReviewFilter::default())
        .unwrap();
    assert!(open.is_empty(), "no review item");

    store
        .journal(std::slice::from_ref(&event), 0, &mut |_| writes())
        .unwrap();
    assert_eq!(store.journal_after(0).unwrap().len(), 1);
    assert_eq!(store.call_state().unwrap().0.len(), 1);
    let open = store
        .reviews(&backstop_store::ReviewFilter::default())
        .unwrap();
    assert_eq!(open.len(), 1, "the escalation's item, with its event");
    assert_eq!(open[0].kind, "task");
    // A second first escalation of the same task opens none while one is open.
    store
        .journal(std::slice::from_ref(&event), 1, &mut |_| writes())
        .unwrap();
    let open = store
        .reviews(&backstop_store::ReviewFilter::default())
        .unwrap();
    assert_eq!(open.len(), 1);
}

/// A review item resolved with the events it asks for (a task's reset) commits with them or
/// not at all: a failure between the two (here a panic while applying the reset) leaves the
/// item open and the journal as it was, and the next try does both.
pub fn a_resolution_and_the_reset_it_asks_commit_together(store: &dyn Store) {
    use backstop_store::JournalWrites;
    let item = store
        .open_task_review(
            "agent-a",
            &auth_escalation("t1"),
            "credentials refused",
            at(0),
        )
        .unwrap()
        .unwrap();
    let resolution = retry_by_dana();
    let reset = |item: &backstop_store::ReviewItem| {
        vec![backstop_store::CallEvent {
            at: at(1),
            kind: "task_reset_all".to_owned(),
            subject: backstop_core::recover::recovery::task_key(&item.caller, &item.case_id),
            body: format!(r#"{{"by":"dana","review":{}}}"#, item.id),
        }]
    };
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.resolve_review_journaled(item.id, &resolution, at(1), &reset, 0, &mut |_| {
            panic!("killed between resolving the item and resetting its task")
        })
    }));
    assert!(failed.is_err());
    let still = store.review(item.id).unwrap().unwrap();
    assert!(still.resolution.is_none(), "the item stays open");
    assert!(
        store.journal_after(0).unwrap().is_empty(),
        "no reset journaled"
    );

    let (resolved, entries) = store
        .resolve_review_journaled(item.id, &resolution, at(1), &reset, 0, &mut |_| {
            JournalWrites::default()
        })
        .unwrap();
    assert_eq!(resolved.resolution.unwrap().decision, "retry");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].event.kind, "task_reset_all");
    // A second resolution is refused and journals nothing.
    let again = store.resolve_review_journaled(item.id, &resolution, at(2), &reset, 0, &mut |_| {
        JournalWrites::default()
    });
    assert!(matches!(
        again,
        Err(backstop_store::StoreError::Conflict(_))
    ));
    assert_eq!(store.journal_after(0).unwrap().len(), 1);
}

/// A review item's id is never given again, even after the purge deleted the newest items (a
/// notification's id is made from it, so a repeat would be taken for a duplicate).
pub fn review_ids_never_repeat_after_a_purge(store: &dyn Store) {
    let first = store
        .open_task_review("agent-a", &auth_escalation("t1"), "why", at(0))
        .unwrap()
        .unwrap();
    store
        .resolve_review(first.id, &retry_by_dana(), at(1))
        .unwrap();
    assert_eq!(store.purge(at(2)).unwrap().reviews, 1);
    let next = store
        .open_task_review("agent-a", &auth_escalation("t2"), "why", at(3))
        .unwrap()
        .unwrap();
    assert!(next.id > first.id, "{} after {}", next.id, first.id);
}

/// A task's escalation for refused credentials, as a review item carries it.
fn auth_escalation(task: &str) -> backstop_store::TaskEscalation {
    backstop_store::TaskEscalation {
        task: task.to_owned(),
        tool: None,
        class: "auth".to_owned(),
        evidence: serde_json::Value::Null,
        to: "the operator on call".to_owned(),
        why: String::new(),
    }
}

/// An operator's `retry`.
fn retry_by_dana() -> backstop_store::Resolution {
    backstop_store::Resolution {
        by: "dana".to_owned(),
        decision: "retry".to_owned(),
        note: None,
    }
}

/// An event's text and a row's text come back byte for byte, whatever they hold (quotes,
/// backslashes, dollar quotes, control characters but NUL, any script): the `PostgreSQL` journal
/// sends them as escaped literals.
pub fn journaled_text_comes_back_byte_for_byte(store: &dyn Store) {
    use backstop_store::{CallEvent, JournalWrites, StateKind, StateRow};
    let awkward = "it's a \\\"test\\\" $$ $x$ '' \\x00 \u{1f}\t\n\r\u{7f} ünïcødé 日本 🦀 E'\\\\'";
    let event = CallEvent {
        at: at(0),
        kind: "failure".to_owned(),
        subject: format!("agent-a\u{1f}{awkward}"),
        body: serde_json::json!({"error": awkward}).to_string(),
    };
    let row = StateRow {
        kind: StateKind::Task,
        key: format!("agent-a\u{1f}{awkward}"),
        caller: "agent-a".to_owned(),
        body: Some(serde_json::json!({"note": awkward}).to_string()),
        expires: Some(at(60)),
    };
    let entries = store
        .journal(std::slice::from_ref(&event), 0, &mut |_| JournalWrites {
            checkpoint: Some(vec![row.clone()]),
            task_reviews: Vec::new(),
        })
        .unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].event, event);
    assert_eq!(store.journal_after(0).unwrap()[0].event, event);
    let (rows, position) = store.call_state().unwrap();
    assert_eq!(rows, vec![row]);
    assert_eq!(position, entries[0].id);
}

/// A journal transaction without a checkpoint appends its events and moves neither the kept
/// rows nor the position: a start loads the rows and replays the events after the position,
/// so nothing is lost; the next checkpoint moves the position past them.
pub fn the_position_moves_only_with_a_checkpoint(store: &dyn Store) {
    use backstop_store::{CallEvent, JournalWrites, StateKind, StateRow};
    let event = |n: i64| CallEvent {
        at: at(n),
        kind: "failure".to_owned(),
        subject: "agent-a\u{1f}t1".to_owned(),
        body: "{}".to_owned(),
    };
    let row = |body: &str| StateRow {
        kind: StateKind::Task,
        key: "agent-a\u{1f}t1".to_owned(),
        caller: "agent-a".to_owned(),
        body: Some(body.to_owned()),
        expires: None,
    };
    let first = store
        .journal(&[event(0)], 0, &mut |_| JournalWrites {
            checkpoint: Some(vec![row("1")]),
            task_reviews: Vec::new(),
        })
        .unwrap();
    let checkpointed = first[0].id;
    let second = store
        .journal(&[event(1)], checkpointed, &mut |_| JournalWrites::default())
        .unwrap();
    assert_eq!(
        store.call_state().unwrap(),
        (vec![row("1")], checkpointed),
        "no checkpoint: the rows and the position stay"
    );
    assert_eq!(store.journal_after(checkpointed).unwrap(), second);
    let third = store
        .journal(&[event(2)], second[0].id, &mut |_| JournalWrites {
            checkpoint: Some(vec![row("3")]),
            task_reviews: Vec::new(),
        })
        .unwrap();
    assert_eq!(store.call_state().unwrap(), (vec![row("3")], third[0].id));
}
