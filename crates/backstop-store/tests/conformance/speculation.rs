//! A journal transaction that speculates (`Store::journal_speculating`): when its conditions
//! hold it journals as `journal` does; when another writer's event breaks them, the batch is
//! applied under the journal's lock, and what `follow` then asks (a review item) is written with it.

use backstop_store::{
    CallEvent, JournalWrites, ReviewFilter, Speculation, Store, TaskEscalation, TaskReview,
};

use super::support::at;

fn event(kind: &str, task: &str, minute: i64) -> CallEvent {
    CallEvent {
        at: at(minute),
        kind: kind.to_owned(),
        subject: format!("agent\u{1f}{task}"),
        body: "{}".to_owned(),
    }
}

fn review(task: &str) -> TaskReview {
    TaskReview {
        caller: "agent".to_owned(),
        escalation: TaskEscalation {
            task: task.to_owned(),
            tool: None,
            class: "auth".to_owned(),
            evidence: serde_json::Value::Null,
            to: "the operator on call".to_owned(),
            why: String::new(),
        },
        reason: "the credentials were refused".to_owned(),
        at: at(0),
    }
}

fn open_items(store: &dyn Store) -> usize {
    let filter = ReviewFilter {
        open: Some(true),
        ..ReviewFilter::default()
    };
    store.reviews(&filter).unwrap().len()
}

/// A speculation that holds journals the batch and hands it to `follow`, as `journal` does; one
/// broken by another writer's reset of its task (or a strategies change, or an event dated past
/// its expiry) is applied under the lock, and the review item `follow` then asks for is opened
/// in the same transaction.
pub fn a_speculation_broken_by_another_writer_is_applied_under_the_lock(store: &dyn Store) {
    let speculation = Speculation {
        tasks: vec!["agent\u{1f}t".to_owned()],
        expires: at(60),
    };
    let first = store
        .journal(&[event("failure", "t", 0)], 0, &mut |_| {
            JournalWrites::default()
        })
        .unwrap();
    let mine = first[0].id;
    // Another writer: a failure of another task, then (below) a reset of this one.
    store
        .journal(&[event("failure", "u", 1)], mine, &mut |_| {
            JournalWrites::default()
        })
        .unwrap();
    let mut given = Vec::new();
    let entries = store
        .journal_speculating(
            &[event("failure", "t", 2)],
            mine,
            &speculation,
            &mut |entries| {
                given = entries.to_vec();
                JournalWrites::default()
            },
        )
        .unwrap();
    assert_eq!(given, entries, "follow is given what was journaled");
    assert_eq!(entries.len(), 2, "the other writer's event, then this one");
    assert_eq!(entries[1].event, event("failure", "t", 2));
    assert_eq!(store.journal_after(mine).unwrap(), entries);

    for (n, breaking) in [
        event("task_reset", "t", 3),
        event("task_success", "t", 3),
        event("task_reset_all", "t", 3),
        CallEvent {
            subject: String::new(),
            ..event("strategies", "", 3)
        },
        event("failure", "u", 60),
    ]
    .into_iter()
    .enumerate()
    {
        let before = store.journal_after(0).unwrap().last().unwrap().id;
        store
            .journal(std::slice::from_ref(&breaking), before, &mut |_| {
                JournalWrites::default()
            })
            .unwrap();
        let opened = open_items(store);
        let entries = store
            .journal_speculating(
                &[event("failure", "t", 4)],
                before,
                &speculation,
                &mut |_| {
                    // Applied after the other writer's event: this failure escalates first again.
                    JournalWrites {
                        checkpoint: None,
                        task_reviews: vec![review(&format!("t{n}"))],
                    }
                },
            )
            .unwrap();
        assert_eq!(entries.last().unwrap().event, event("failure", "t", 4));
        assert_eq!(
            open_items(store),
            opened + 1,
            "{}: the review item is opened with the events",
            breaking.kind
        );
    }
}
