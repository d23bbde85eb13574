//! The call journal: the call-level events every server on a ledger shares, and how they
//! turn into a recovery's state. A server's ledger thread follows it (see `queue`); the CLI
//! replays it to show or reset a task.
//!
//! - `event`: the events, one variant per kind, and their stored form

use std::num::NonZeroUsize;

use backstop_core::recover::strategy::StrategyTable;
use backstop_core::recover::{Recovery, RecoveryOptions, Step};
use backstop_store::{CallEvent, Store, StoreError};
use jiff::{SignedDuration, Timestamp};
use lru::LruCache;

mod event;

pub(crate) use event::redacted;
pub use event::{Event, FailureEvent, IdempotencyMark};

/// The recovery's jitter seed: fixed, so every process replaying the journal gets the same delays.
pub const HINTER_SEED: u64 = 0x6261_636b_7374_6f70;

/// How far back the call journal is replayed into a recovery at start.
pub const REPLAY_WINDOW: SignedDuration = SignedDuration::from_hours(24);

/// How long an idempotency key is remembered.
pub const IDEMPOTENCY_WINDOW: SignedDuration = SignedDuration::from_hours(24);

/// Idempotency keys remembered at most (the least recently used are forgotten first).
const IDEMPOTENCY_KEYS: usize = 16_384;

/// What an idempotency key answered first.
#[derive(Debug, Clone)]
struct Remembered {
    hash: String,
    step: Step,
    at: Timestamp,
}

/// The call-level state the journal builds: the recovery, and the steps idempotency keys got.
#[derive(Debug)]
pub struct CallState {
    /// Task counters, tool breakers and budgets.
    pub recovery: Recovery,
    idempotent: LruCache<String, Remembered>,
    /// Tasks that escalated since their last reset: their review item is open (or was resolved
    /// without a reset), so a further escalation opens none.
    escalated: LruCache<String, ()>,
}

/// What applying one event gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// Not a task's failure: nothing to answer.
    Nothing,
    /// A task's failure, counted: its step, and whether it is the task's first escalation
    /// since its last reset (then a review item is opened for it).
    Step {
        /// The step.
        step: Step,
        /// The first escalation since the task's last reset.
        first_escalation: bool,
    },
    /// A failure resent with the same idempotency key and request: the first step, nothing
    /// counted.
    Replayed(Step),
    /// A failure whose idempotency key came with another request: nothing counted.
    Conflict,
}

impl CallState {
    /// A state with nothing applied.
    pub fn new(recovery: Recovery) -> CallState {
        CallState {
            recovery,
            idempotent: LruCache::new(
                NonZeroUsize::new(IDEMPOTENCY_KEYS).unwrap_or(NonZeroUsize::MIN),
            ),
            escalated: LruCache::new(
                NonZeroUsize::new(IDEMPOTENCY_KEYS).unwrap_or(NonZeroUsize::MIN),
            ),
        }
    }

    /// Applies one journaled event, as every process on the ledger does, in journal order. An
    /// event this build cannot read (a kind it does not know, a body not its kind's) is skipped.
    pub fn apply(&mut self, stored: &CallEvent) -> Applied {
        let event = match Event::from_stored(stored) {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(kind = %stored.kind, error = %e, "an unreadable call event was skipped");
                return Applied::Nothing;
            }
        };
        let (subject, at) = (stored.subject.as_str(), stored.at);
        match event {
            Event::Failure(failure) => return self.count_failure(*failure, subject, at),
            Event::Strategies { files } => self.use_strategies(&files),
            Event::Success { .. } => self.recovery.record_success(subject, at),
            Event::ToolFailure { class } => self.recovery.record_failure(subject, class, at),
            Event::Grant { .. } => self.recovery.grant(subject),
            Event::TaskSuccess {} | Event::TaskReset { .. } => {
                self.escalated.pop(subject);
                self.recovery.record_task_success(subject);
            }
            Event::TaskResetAll { .. } => {
                self.escalated.pop(subject);
                self.recovery.reset(subject);
            }
        }
        Applied::Nothing
    }

    /// A task's failure: its step, or the step its idempotency key got first.
    fn count_failure(&mut self, failure: FailureEvent, task: &str, at: Timestamp) -> Applied {
        if let Some(mark) = &failure.idempotency
            && let Some(first) = self.idempotent.get(&mark.key)
            && at.duration_since(first.at) < IDEMPOTENCY_WINDOW
        {
            return if first.hash == mark.hash {
                Applied::Replayed(first.step.clone())
            } else {
                Applied::Conflict
            };
        }
        let step = self
            .recovery
            .next(task, &failure.classification, &failure.context, at);
        if let Some(mark) = failure.idempotency {
            self.idempotent.put(
                mark.key,
                Remembered {
                    hash: mark.hash,
                    step: step.clone(),
                    at,
                },
            );
        }
        // Decided here, in journal order, so every process agrees which escalation of a
        // task is its first (and no request handler waits on this state's lock).
        let first_escalation =
            step.escalation.is_some() && self.escalated.put(task.to_owned(), ()).is_none();
        Applied::Step {
            step,
            first_escalation,
        }
    }

    /// Takes up the strategy files a server journaled at its start or reload: from here on in
    /// the journal, every process uses them.
    fn use_strategies(&mut self, files: &[(String, String)]) {
        match crate::catalog::strategy_table(files) {
            Ok(table) => self.recovery.set_table(table),
            Err(issues) => {
                let listed: Vec<String> = issues.iter().map(ToString::to_string).collect();
                tracing::error!(issues = %listed.join("; "), "journaled strategies refused; the ones in use stay");
            }
        }
    }
}

/// The event that puts `files` in use for every process on the ledger.
pub fn strategies_event(files: &[(String, String)], at: Timestamp) -> CallEvent {
    Event::Strategies {
        files: files.to_vec(),
    }
    .to_stored(at, String::new())
}

/// The call state over `table` with the journal of the last [`REPLAY_WINDOW`] applied, and
/// the journal position it reached.
pub fn replay(
    store: &dyn Store,
    table: StrategyTable,
    now: Timestamp,
) -> Result<(CallState, i64), StoreError> {
    let mut state = CallState::new(Recovery::new(table, RecoveryOptions { seed: HINTER_SEED }));
    let (entries, position) = store.events_since(now - REPLAY_WINDOW)?;
    for entry in &entries {
        state.apply(&entry.event);
    }
    tracing::info!(
        events = entries.len(),
        "call journal replayed into the recovery"
    );
    Ok((state, position))
}

/// The recovery's key for a caller's task.
pub fn task_key(caller: &str, task: &str) -> String {
    format!("{caller}\u{1f}{task}")
}

/// The caller and the task a [`task_key`] names (no caller for a key without one).
pub fn caller_and_task(key: &str) -> (&str, &str) {
    key.split_once('\u{1f}').unwrap_or(("", key))
}

/// The decision on a task's review item that lets its agent try again.
pub const RETRY_DECISION: &str = "retry";

/// For a task's review item resolved with [`RETRY_DECISION`], the event that resets the task
/// (lifting a policy stop), so its agent may try again.
pub fn task_review_reset(item: &backstop_store::ReviewItem, by: &str) -> Option<CallEvent> {
    let decided = item.resolution.as_ref()?;
    (item.kind == "task" && decided.decision == RETRY_DECISION).then(|| {
        let event = Event::TaskResetAll {
            by: by.to_owned(),
            review: Some(item.id),
        };
        event.to_stored(decided.at, task_key(&item.caller, &item.case_id))
    })
}

#[cfg(test)]
mod tests {
    use super::event::tests::{STORED, stored};
    use super::*;

    #[test]
    fn a_journal_stored_before_the_enum_replays() {
        let options = RecoveryOptions { seed: HINTER_SEED };
        let mut calls = CallState::new(Recovery::new(StrategyTable::builtin(), options));
        let task = |name: &str| task_key("research-agent", name);
        let view =
            |calls: &CallState, name: &str| calls.recovery.task_view(&task(name), stored(0).at);
        let mut first_step = None;
        for (n, (kind, _, _)) in STORED.iter().enumerate() {
            let applied = calls.apply(&stored(n));
            match &applied {
                Applied::Step { step, .. } => {
                    assert_eq!(*kind, "failure", "row {n}");
                    first_step.get_or_insert_with(|| step.clone());
                }
                Applied::Nothing => assert_ne!(*kind, "failure", "row {n}"),
                other => panic!("row {n}: {other:?}"),
            }
            match n {
                // The strategies journaled set 8 attempts a task (12 built in).
                0 => assert_eq!(view(&calls, "t1").task_max, 8),
                3 => assert_eq!(
                    view(&calls, "t2").stopped_by.as_deref(),
                    Some("a policy denial of shell")
                ),
                8 => assert_eq!(view(&calls, "t1").operator_grants, 1),
                10 => assert_eq!(view(&calls, "t1").operator_grants, 0),
                11 => assert!(matches!(
                    applied,
                    Applied::Step {
                        first_escalation: true,
                        ..
                    }
                )),
                15 => assert_eq!(view(&calls, "t2").stopped_by, None),
                _ => {}
            }
        }
        // One failure, one success and two failures reported for the tool.
        let (breaker, _) = calls.recovery.tool_views("search", stored(16).at).unwrap();
        assert_eq!((breaker.calls, breaker.failures), (4, 3));
        // The first failure's idempotency key is remembered: a resend gets its step.
        let resend = CallEvent {
            at: stored(16).at,
            ..stored(1)
        };
        assert_eq!(calls.apply(&resend), Applied::Replayed(first_step.unwrap()));
        // The review item's `retry` reset the task: its next escalation is a first again.
        let again = CallEvent {
            at: stored(16).at,
            ..stored(11)
        };
        assert!(matches!(
            calls.apply(&again),
            Applied::Step {
                first_escalation: true,
                ..
            }
        ));
    }

    #[test]
    fn an_unreadable_event_is_skipped_and_changes_nothing() {
        let options = RecoveryOptions { seed: HINTER_SEED };
        let mut calls = CallState::new(Recovery::new(StrategyTable::builtin(), options));
        for (kind, body) in [("meteor", "{}"), ("failure", "{}"), ("grant", "")] {
            let event = CallEvent {
                kind: kind.to_owned(),
                body: body.to_owned(),
                ..stored(8)
            };
            assert_eq!(calls.apply(&event), Applied::Nothing);
        }
        let view = calls
            .recovery
            .task_view(&task_key("research-agent", "t1"), stored(8).at);
        assert_eq!((view.task_used, view.operator_grants), (0, 0));
    }
}
