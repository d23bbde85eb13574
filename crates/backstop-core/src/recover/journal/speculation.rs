//! Journaling without holding the journal's lock across a round trip, when that is safe.
//!
//! A journal transaction must open the review item of each of its own events that is its
//! task's first escalation, and only applying the events (after every event before them) tells
//! which are. So a writer takes the journal's lock, reads what others journaled, applies it
//! all, and writes the items before it commits: the lock is held across a round trip to the
//! database. Most events can open no item whatever comes before them: outcomes, grants,
//! resets, and failures of a task that is already escalated (an agent calling again and again
//! about a task already handed to a person, the one kind of traffic no retry limit bounds).
//! For a batch of only such events, [`CallState::speculate`] gives the conditions under which
//! that holds ([`Speculation`]); the store checks them under the journal's lock against what
//! was journaled since this process last read, appends, and commits in the same round trip,
//! and falls back to the locked path when they fail. [`Speculation::holds`] is the check, the
//! same one a store runs in SQL.

use jiff::Timestamp;

use super::{CallEvent, CallState, Event};

/// Event kinds that clear a task's escalation, so its next escalating failure opens an item.
pub const CLEARING_KINDS: [&str; 3] = ["task_success", "task_reset", "task_reset_all"];

/// The event kind that changes the strategies every failure after it is judged by.
pub const STRATEGIES_KIND: &str = "strategies";

/// What must hold of the events others journaled before a batch for the batch to open no
/// review item: none of them clears the escalation of one of `tasks`, none changes the
/// strategies, and none is dated at or after `expires` (from then on an escalated task may be
/// forgotten by age, and start again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Speculation {
    /// The tasks of the batch's failures, each escalated now.
    pub tasks: Vec<String>,
    /// The earliest time one of them may be forgotten by age ([`Timestamp::MAX`] when none).
    pub expires: Timestamp,
}

impl Speculation {
    /// Whether the batch still opens no review item after `others` (the events journaled
    /// between this state's position and the batch) are applied first. True of the batch's own
    /// events too, so a store may check every event it reads back, the batch's included.
    pub fn holds(&self, others: &[CallEvent]) -> bool {
        others.iter().all(|event| {
            let clears = CLEARING_KINDS.contains(&event.kind.as_str())
                && self.tasks.contains(&event.subject);
            !clears && event.kind != STRATEGIES_KIND && event.at < self.expires
        })
    }
}

impl CallState {
    /// The conditions under which this process's new events (read as `own`, in order; `None`
    /// where unreadable) open no review item, whatever others journaled first; `None` when
    /// that cannot be told without applying them after the others' events (a failure of a task
    /// not escalated now, a strategies event, an unreadable one), or when the journal's
    /// transaction writes a checkpoint anyway.
    pub fn speculate(
        &self,
        own: &[Option<Event>],
        stored: &[CallEvent],
        checkpoint: bool,
    ) -> Option<Speculation> {
        if checkpoint || own.len() != stored.len() {
            return None;
        }
        let latest = stored.iter().map(|e| e.at).max()?;
        let mut cleared: Vec<&str> = Vec::new();
        let mut tasks: Vec<String> = Vec::new();
        let mut expires = Timestamp::MAX;
        for (event, stored) in own.iter().zip(stored) {
            let task = stored.subject.as_str();
            match event.as_ref()? {
                Event::Failure(_) => {
                    if cleared.contains(&task) {
                        return None;
                    }
                    let until = self.recovery.escalated_until(task)?;
                    // Escalated through every event of the batch (any of them may sweep a
                    // caller's expired tasks).
                    if until <= latest {
                        return None;
                    }
                    expires = expires.min(until);
                    if !tasks.iter().any(|t| t == task) {
                        tasks.push(task.to_owned());
                    }
                }
                Event::TaskSuccess {} | Event::TaskReset { .. } | Event::TaskResetAll { .. } => {
                    // Before one of the batch's failures of its task, it may escalate first
                    // again; after one, the store's check would see the batch's own event.
                    if tasks.iter().any(|t| t == task) {
                        return None;
                    }
                    cleared.push(task);
                }
                Event::Strategies { .. } => return None,
                Event::Success { .. } | Event::ToolFailure { .. } | Event::Grant { .. } => {}
            }
        }
        Some(Speculation { tasks, expires })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::LazyLock;

    use jiff::SignedDuration;
    use proptest::prelude::*;

    use super::*;
    use crate::classify::{Classification, RuleSet, classify};
    use crate::recover::journal::{Applied, redacted};
    use crate::recover::recovery::task_key;
    use crate::report::Report;

    const CALLER: &str = "agent";
    /// Statuses whose failures escalate at once (401), after a few (503), or never (400).
    const STATUSES: [u16; 3] = [401, 503, 400];

    fn start() -> Timestamp {
        Timestamp::from_second(1_780_000_000).unwrap()
    }

    fn classified(status: u16) -> Classification {
        static RULES: LazyLock<RuleSet> = LazyLock::new(RuleSet::builtin);
        let report = Report::from_json(&format!(r#"{{"http_status": {status}}}"#)).unwrap();
        classify(&RULES, &report, Timestamp::UNIX_EPOCH)
    }

    fn failure(task: &str, status: u16, at: Timestamp) -> CallEvent {
        let context = crate::recover::Context {
            tool: Some("search".to_owned()),
            ..Default::default()
        };
        Event::Failure(Box::new(redacted(classified(status), context, None)))
            .to_stored(at, task_key(CALLER, task))
    }

    fn other(event: &Event, task: &str, at: Timestamp) -> CallEvent {
        event.to_stored(at, task_key(CALLER, task))
    }

    fn read(events: &[CallEvent]) -> Vec<Option<Event>> {
        events.iter().map(|e| Event::from_stored(e).ok()).collect()
    }

    fn state_after(events: &[CallEvent]) -> CallState {
        let mut calls = CallState::builtin();
        for event in events {
            calls.apply(event);
        }
        calls
    }

    /// The review items `own` opens, journaled after `before`.
    fn reviews_opened(before: &[CallEvent], own: &[CallEvent]) -> usize {
        let mut calls = state_after(before);
        let entries: Vec<crate::recover::journal::JournalEntry> = own
            .iter()
            .enumerate()
            .map(|(i, event)| crate::recover::journal::JournalEntry {
                id: i64::try_from(i).unwrap() + 1,
                event: event.clone(),
            })
            .collect();
        let mut reached = 0;
        let mut applied: Vec<Applied> = Vec::new();
        calls
            .follow(&entries, &mut read(own), &mut reached, &mut applied, false)
            .task_reviews
            .len()
    }

    #[test]
    fn failures_of_escalated_tasks_and_outcomes_speculate() {
        let escalated = vec![failure("t", 401, start())];
        let calls = state_after(&escalated);
        let later = start() + SignedDuration::from_mins(1);
        let own = vec![
            failure("t", 401, later),
            failure("t", 503, later),
            other(
                &Event::Grant {
                    by: "op".to_owned(),
                },
                "t",
                later,
            ),
        ];
        let speculation = calls.speculate(&read(&own), &own, false).unwrap();
        assert_eq!(speculation.tasks, vec![task_key(CALLER, "t")]);
        assert_eq!(
            speculation.expires,
            start() + crate::recover::recovery::TASK_WINDOW
        );
        assert_eq!(reviews_opened(&escalated, &own), 0);
        // A checkpoint due is written under the lock.
        assert_eq!(calls.speculate(&read(&own), &own, true), None);
    }

    #[test]
    fn a_task_not_escalated_or_cleared_in_the_batch_is_applied_under_the_lock() {
        let calls = state_after(&[failure("t", 401, start())]);
        let later = start() + SignedDuration::from_mins(1);
        let fresh = vec![failure("u", 401, later)];
        assert_eq!(calls.speculate(&read(&fresh), &fresh, false), None);
        let reset_then_fail = vec![
            other(&Event::TaskReset { by: "a".to_owned() }, "t", later),
            failure("t", 401, later),
        ];
        assert_eq!(
            calls.speculate(&read(&reset_then_fail), &reset_then_fail, false),
            None
        );
        let fail_then_reset: Vec<CallEvent> = reset_then_fail.into_iter().rev().collect();
        assert_eq!(
            calls.speculate(&read(&fail_then_reset), &fail_then_reset, false),
            None
        );
        let strategies =
            vec![Event::Strategies { files: Vec::new() }.to_stored(later, String::new())];
        assert_eq!(
            calls.speculate(&read(&strategies), &strategies, false),
            None
        );
        // Past its window the task may start again: not speculated.
        let late = vec![failure(
            "t",
            401,
            start() + crate::recover::recovery::TASK_WINDOW,
        )];
        assert_eq!(calls.speculate(&read(&late), &late, false), None);
    }

    #[test]
    fn a_reset_a_strategies_change_or_a_late_event_by_another_breaks_it() {
        let speculation = Speculation {
            tasks: vec![task_key(CALLER, "t")],
            expires: start() + SignedDuration::from_hours(1),
        };
        let at = start();
        let grant = other(
            &Event::Grant {
                by: "op".to_owned(),
            },
            "t",
            at,
        );
        let reset_other_task = other(&Event::TaskReset { by: "a".to_owned() }, "u", at);
        assert!(speculation.holds(&[grant.clone(), reset_other_task, failure("t", 503, at)]));
        for clearing in [
            Event::TaskSuccess {},
            Event::TaskReset { by: "a".to_owned() },
            Event::TaskResetAll {
                by: "op".to_owned(),
                review: None,
            },
        ] {
            assert!(!speculation.holds(&[grant.clone(), other(&clearing, "t", at)]));
        }
        let strategies = Event::Strategies { files: Vec::new() }.to_stored(at, String::new());
        assert!(!speculation.holds(&[strategies]));
        let late = failure("u", 400, start() + SignedDuration::from_hours(1));
        assert!(!speculation.holds(&[late]));
    }

    /// One event of the generated histories: a failure with one of [`STATUSES`], or another
    /// kind, of one of three tasks, some minutes (or, now and then, days) after the last.
    fn an_event() -> impl Strategy<Value = (u8, usize, usize, i64)> {
        (
            0u8..8,
            0usize..3,
            0usize..3,
            prop_oneof![9 => 0i64..5, 1 => 0i64..20_000],
        )
    }

    /// The events `spec` describes, from `at` on (advanced by each event's minutes).
    fn events(spec: &[(u8, usize, usize, i64)], at: &mut Timestamp) -> Vec<CallEvent> {
        spec.iter()
            .map(|&(kind, task, status, minutes)| {
                *at += SignedDuration::from_mins(minutes);
                let task = ["t0", "t1", "t2"][task];
                match kind {
                    0..=3 => failure(task, STATUSES[status], *at),
                    4 => other(&Event::TaskSuccess {}, task, *at),
                    5 => other(&Event::TaskReset { by: "a".to_owned() }, task, *at),
                    6 => other(
                        &Event::TaskResetAll {
                            by: "op".to_owned(),
                            review: None,
                        },
                        task,
                        *at,
                    ),
                    _ => other(
                        &Event::Grant {
                            by: "op".to_owned(),
                        },
                        task,
                        *at,
                    ),
                }
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Whatever the state, the batch and what others journal before it: when the
        /// speculation holds, the batch opens no review item.
        #[test]
        fn a_speculation_that_holds_opens_no_review_item(
            history in proptest::collection::vec(an_event(), 0..12),
            others in proptest::collection::vec(an_event(), 0..6),
            own in proptest::collection::vec(an_event(), 1..6),
        ) {
            let mut at = start();
            let history = events(&history, &mut at);
            let mut others_at = at;
            let others = events(&others, &mut others_at);
            let own = events(&own, &mut at);
            let calls = state_after(&history);
            if let Some(speculation) = calls.speculate(&read(&own), &own, false)
                && speculation.holds(&others)
            {
                let before: Vec<CallEvent> = history.iter().chain(&others).cloned().collect();
                prop_assert_eq!(reviews_opened(&before, &own), 0);
                prop_assert!(speculation.holds(&own), "the batch's own events pass the check");
            }
        }
    }
}
