//! The call journal's meaning: the call-level events every process on a ledger shares, in
//! one order, and the call state they build (a recovery's counters, breakers and budgets, the
//! steps idempotency keys got, the strategies in use), with the rows a ledger keeps of it.
//! Pure: a store appends the events and writes the rows ([`JournalWrites`]) in one
//! transaction; every process applies the same events in the same order and so holds the
//! same state, at any age of it.
//!
//! - `event`: the events, one variant per kind, and their stored form
//! - `speculation`: when a batch can be journaled without holding the lock across a round trip

use std::collections::{HashMap, HashSet, VecDeque};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::recover::recovery::{IDEMPOTENCY_WINDOW, Quota, StateKind, StateRow, caller_and_task};
use crate::recover::{Recovery, RecoveryOptions, Step, StrategyTable};

mod event;
mod speculation;

pub use event::{Event, FailureEvent, IdempotencyMark, redacted};
pub use speculation::{CLEARING_KINDS, STRATEGIES_KIND, Speculation};

/// A kept row (or the journal) that is not what it must be: the ledger is corrupt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CorruptRow(pub String);

/// What applying journal entries asks the journal's transaction to write with them.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct JournalWrites {
    /// A checkpoint of the call state, or `None`: the rows changed since the last checkpoint
    /// (by anyone's events), written with the journal's position moved to the last entry, so
    /// the kept rows always reflect the journal up to the kept position. Without one the
    /// position stays, and a start replays the events after it.
    pub checkpoint: Option<Vec<StateRow>>,
    /// Review items to open for tasks' first escalations (each opened unless the task has one
    /// open already).
    pub task_reviews: Vec<TaskReview>,
}

/// A review item to open for a task's escalation.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskReview {
    /// Whose task.
    pub caller: String,
    /// What the item carries.
    pub escalation: TaskEscalation,
    /// Why, in the sentence a person reads (the step's explanation).
    pub reason: String,
    /// When.
    pub at: Timestamp,
}

/// A call-level event and its position in the journal (positions only grow, even across a
/// purge).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    /// Its position.
    pub id: i64,
    /// The event.
    pub event: CallEvent,
}

/// One call-level event, as the service journals it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallEvent {
    /// When it happened.
    pub at: Timestamp,
    /// Its kind: [`Event`] has one variant per kind (docs/decisions.md
    /// lists them). The store keeps it as written and never reads it.
    pub kind: String,
    /// The task or tool it concerns, if any.
    pub subject: String,
    /// Its body: the kind's fields as JSON, kept as written.
    pub body: String,
}

/// What a task's escalation carries to the person it goes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskEscalation {
    /// The task.
    pub task: String,
    /// The tool that failed, when named.
    pub tool: Option<String>,
    /// The failure's class.
    pub class: String,
    /// The classification's evidence (secrets redacted).
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub evidence: serde_json::Value,
    /// Who it goes to.
    pub to: String,
    /// Why the step escalated, for machines and logs (the step's `reason`); the item's own
    /// reason is the sentence a person reads. Empty on items opened before it was kept.
    #[serde(default)]
    pub why: String,
}

/// The recovery's jitter seed: fixed, so every process replaying the journal gets the same delays.
pub const HINTER_SEED: u64 = 0x6261_636b_7374_6f70;

/// What an idempotency key answered first.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Remembered {
    hash: String,
    step: Step,
    at: Timestamp,
}

/// The call-level state the journal builds: the recovery, the steps idempotency keys got, and
/// the strategy files in use. Every change is handed to the ledger as rows ([`CallState::take_rows`]),
/// written in the transaction of the events that made it, so a restart loads it whole.
#[derive(Debug)]
pub struct CallState {
    /// Task counters, tool breakers and budgets.
    pub recovery: Recovery,
    idempotent: HashMap<String, Remembered>,
    /// Idempotency keys in the order they were first used, to forget each past its window.
    idempotent_order: VecDeque<(Timestamp, String)>,
    changed_keys: HashSet<String>,
    strategies: Vec<(String, String)>,
    strategies_changed: bool,
    /// What a process should log: events skipped, strategies refused ([`CallState::take_notes`]).
    notes: Vec<String>,
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
    /// The caller is at its quota of live tasks or tools: nothing counted, nothing dropped.
    OverQuota(Quota),
}

impl CallState {
    /// A state with nothing applied.
    pub fn new(recovery: Recovery) -> CallState {
        CallState {
            recovery,
            idempotent: HashMap::new(),
            idempotent_order: VecDeque::new(),
            changed_keys: HashSet::new(),
            strategies: Vec::new(),
            strategies_changed: false,
            notes: Vec::new(),
        }
    }

    /// The built-in strategies with nothing applied, replaying with the fixed jitter seed.
    pub fn builtin() -> CallState {
        let options = RecoveryOptions { seed: HINTER_SEED };
        CallState::new(Recovery::new(StrategyTable::builtin(), options))
    }

    /// What happened since last asked that a process should log (an event it could not read,
    /// strategies it refused): the core keeps no log of its own.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Applies one journaled event, as every process on the ledger does, in journal order. An
    /// event this build cannot read (a kind it does not know, a body not its kind's) is skipped.
    pub fn apply(&mut self, stored: &CallEvent) -> Applied {
        let event = match Event::from_stored(stored) {
            Ok(event) => event,
            Err(e) => {
                self.notes.push(format!(
                    "an unreadable call event (kind `{}`) was skipped: {e}",
                    stored.kind
                ));
                return Applied::Nothing;
            }
        };
        self.apply_event(event, &stored.subject, stored.at)
    }

    /// Applies one event already read from its stored form (as [`CallState::apply`] does):
    /// a process applying its own new events reads them before it journals them, so the
    /// journal's lock is not held while they are read again.
    pub fn apply_event(&mut self, event: Event, subject: &str, at: Timestamp) -> Applied {
        let refused = match event {
            Event::Failure(failure) => return self.count_failure(*failure, subject, at),
            Event::Strategies { files } => {
                self.use_strategies(files);
                Ok(())
            }
            Event::Success { caller, .. } => self
                .recovery
                .admit_tool(&caller, subject, at)
                .map(|()| self.recovery.record_success(subject, at)),
            Event::ToolFailure { class, caller } => self
                .recovery
                .admit_tool(&caller, subject, at)
                .map(|()| self.recovery.record_failure(subject, class, at)),
            Event::Grant { .. } => self
                .recovery
                .admit(subject, None, at)
                .map(|()| self.recovery.grant(subject, at)),
            Event::TaskSuccess {} | Event::TaskReset { .. } => {
                self.recovery.record_task_success(subject);
                Ok(())
            }
            Event::TaskResetAll { .. } => {
                self.recovery.reset(subject);
                Ok(())
            }
        };
        match refused {
            Ok(()) => Applied::Nothing,
            Err(quota) => Applied::OverQuota(quota),
        }
    }

    /// A task's failure: its step, or the step its idempotency key got first.
    fn count_failure(&mut self, failure: FailureEvent, task: &str, at: Timestamp) -> Applied {
        self.forget_keys_before(at);
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
        if let Err(quota) = self
            .recovery
            .admit(task, failure.context.tool.as_deref(), at)
        {
            return Applied::OverQuota(quota);
        }
        let step = self
            .recovery
            .next(task, &failure.classification, &failure.context, at);
        if let Some(mark) = failure.idempotency {
            self.idempotent_order.push_back((at, mark.key.clone()));
            self.changed_keys.insert(mark.key.clone());
            self.idempotent.insert(
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
        let first_escalation = step.escalation.is_some() && self.recovery.mark_escalated(task);
        Applied::Step {
            step,
            first_escalation,
        }
    }

    /// Forgets the idempotency keys whose window passed before `now`.
    fn forget_keys_before(&mut self, now: Timestamp) {
        while let Some((at, _)) = self.idempotent_order.front() {
            if *at + IDEMPOTENCY_WINDOW > now {
                break;
            }
            let Some((at, key)) = self.idempotent_order.pop_front() else {
                break;
            };
            if self.idempotent.get(&key).is_some_and(|r| r.at == at) {
                self.idempotent.remove(&key);
                self.changed_keys.insert(key);
            }
        }
    }

    /// Takes up the strategy files a server journaled at its start or reload: from here on in
    /// the journal, every process uses them.
    fn use_strategies(&mut self, files: Vec<(String, String)>) {
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(origin, text)| (origin.as_str(), text.as_str()))
            .collect();
        match StrategyTable::load_all(&borrowed) {
            Ok(table) => {
                self.recovery.set_table(table);
                self.strategies = files;
                self.strategies_changed = true;
            }
            Err(issues) => {
                let listed: Vec<String> = issues.iter().map(ToString::to_string).collect();
                self.notes.push(format!(
                    "journaled strategies refused ({}); the ones in use stay",
                    listed.join("; ")
                ));
            }
        }
    }

    /// How many rows have changed since they were last taken: what the next checkpoint writes.
    pub fn pending_rows(&self) -> usize {
        self.recovery.pending_changes()
            + self.changed_keys.len()
            + usize::from(self.strategies_changed)
    }

    /// The rows changed since they were last taken, as the ledger keeps them.
    pub fn take_rows(&mut self) -> Vec<StateRow> {
        let mut rows = self.recovery.take_changes();
        for key in std::mem::take(&mut self.changed_keys) {
            let remembered = self.idempotent.get(&key);
            rows.push(StateRow {
                kind: StateKind::Idempotency,
                caller: caller_and_task(&key).0.to_owned(),
                body: remembered.and_then(|r| serde_json::to_string(r).ok()),
                expires: remembered.map(|r| r.at + IDEMPOTENCY_WINDOW),
                key,
            });
        }
        if std::mem::take(&mut self.strategies_changed) {
            rows.push(StateRow {
                kind: StateKind::Strategies,
                key: String::new(),
                caller: String::new(),
                body: serde_json::to_string(&self.strategies).ok(),
                expires: None,
            });
        }
        rows
    }

    /// The state the ledger keeps: its rows taken up (strategies first, so the tasks and tools
    /// are read under the table they were kept under).
    ///
    /// # Errors
    /// A row is not its kind's JSON.
    pub fn restore(&mut self, rows: &[StateRow]) -> Result<(), CorruptRow> {
        let corrupt = |row: &StateRow, e: &dyn std::fmt::Display| {
            CorruptRow(format!(
                "the call state's {} row `{}`: {e}",
                row.kind.as_str(),
                row.key
            ))
        };
        for row in rows.iter().filter(|r| r.kind == StateKind::Strategies) {
            let files: Vec<(String, String)> =
                serde_json::from_str(row.body.as_deref().unwrap_or("[]"))
                    .map_err(|e| corrupt(row, &e))?;
            self.use_strategies(files);
        }
        for row in rows {
            match row.kind {
                StateKind::Task | StateKind::Tool | StateKind::Approach => {
                    self.recovery.restore(row).map_err(|e| corrupt(row, &e))?;
                }
                StateKind::Idempotency => {
                    let remembered: Remembered =
                        serde_json::from_str(row.body.as_deref().unwrap_or(""))
                            .map_err(|e| corrupt(row, &e))?;
                    self.idempotent_order
                        .push_back((remembered.at, row.key.clone()));
                    self.idempotent.insert(row.key.clone(), remembered);
                }
                StateKind::Strategies => {}
            }
        }
        self.idempotent_order.make_contiguous().sort();
        // What was just read is what the ledger holds: nothing to write back.
        self.recovery.take_changes();
        self.changed_keys.clear();
        self.strategies_changed = false;
        Ok(())
    }

    /// Applies the entries past `reached` (the last `own.len()` of them are this process's new
    /// events, whose first escalations open review items; `own` holds each of them already
    /// read, where it could be): what the journal's transaction
    /// writes with them. With `checkpoint`, that includes every row changed since the last
    /// checkpoint, by anyone's events: the state as it stands at the journal's end, which the
    /// writer has applied whole under the journal's lock, so the rows and the position stay
    /// one consistent picture (a start replays the events after the position).
    pub fn follow(
        &mut self,
        entries: &[JournalEntry],
        own: &mut [Option<Event>],
        reached: &mut i64,
        applied: &mut Vec<Applied>,
        checkpoint: bool,
    ) -> JournalWrites {
        // Only this process's new events open review items here (another process opened
        // theirs in their own transaction).
        let own_from = entries.len().saturating_sub(own.len());
        let mut task_reviews = Vec::new();
        for (i, entry) in entries.iter().enumerate() {
            if entry.id <= *reached {
                applied.push(Applied::Nothing);
                continue;
            }
            let read = i
                .checked_sub(own_from)
                .and_then(|n| own.get_mut(n))
                .and_then(Option::take);
            let outcome = match read {
                Some(event) => self.apply_event(event, &entry.event.subject, entry.event.at),
                None => self.apply(&entry.event),
            };
            if i >= own_from
                && let Some(review) = first_escalation_review(&entry.event, &outcome)
            {
                task_reviews.push(review);
            }
            applied.push(outcome);
            *reached = entry.id;
        }
        JournalWrites {
            checkpoint: checkpoint.then(|| self.take_rows()),
            task_reviews,
        }
    }
}

/// What the last `own` of `total` entries gave.
pub fn own_steps(
    mut applied: Vec<Applied>,
    total: usize,
    own: usize,
) -> Result<Vec<Applied>, CorruptRow> {
    let from = total
        .checked_sub(own)
        .ok_or_else(|| CorruptRow("the journal returned fewer events than it took".to_owned()))?;
    Ok(applied.split_off(from.min(applied.len())))
}

/// The review item a task's failure opens when applying it gave the task's first escalation.
fn first_escalation_review(stored: &CallEvent, applied: &Applied) -> Option<TaskReview> {
    let Applied::Step {
        step,
        first_escalation: true,
    } = applied
    else {
        return None;
    };
    let escalation = step.escalation.as_ref()?;
    let Ok(Event::Failure(failure)) = Event::from_stored(stored) else {
        return None;
    };
    let (caller, task) = caller_and_task(&stored.subject);
    Some(TaskReview {
        caller: caller.to_owned(),
        escalation: failure.escalation(task, &escalation.to, &escalation.why),
        reason: step.explanation.clone(),
        at: stored.at,
    })
}

/// The event that puts `files` in use for every process on the ledger.
pub fn strategies_event(files: &[(String, String)], at: Timestamp) -> CallEvent {
    Event::Strategies {
        files: files.to_vec(),
    }
    .to_stored(at, String::new())
}

#[cfg(test)]
mod tests {
    use super::event::tests::{STORED, stored};
    use super::*;
    use crate::Class;
    use crate::recover::breaker::BreakerState;
    use crate::recover::recovery::task_key;
    use jiff::SignedDuration;

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

    /// A failure event of `caller`'s `task` with `tool`, under an idempotency key.
    fn keyed_failure(caller: &str, task: &str, key: &str, at: Timestamp) -> CallEvent {
        static CLASSIFIED: std::sync::LazyLock<crate::classify::Classification> =
            std::sync::LazyLock::new(|| {
                crate::classify::classify(
                    &crate::classify::RuleSet::builtin(),
                    &crate::report::Report::from_json(r#"{"http_status": 503}"#).unwrap(),
                    Timestamp::UNIX_EPOCH,
                )
            });
        let classification = CLASSIFIED.clone();
        let context = crate::recover::Context {
            tool: Some("search".to_owned()),
            ..Default::default()
        };
        let mark = IdempotencyMark {
            key: task_key(caller, key),
            hash: "h".to_owned(),
        };
        Event::Failure(Box::new(redacted(classification, context, Some(mark))))
            .to_stored(at, task_key(caller, task))
    }

    /// The state loaded from the rows `from` handed over so far.
    fn reloaded(rows: &[StateRow]) -> CallState {
        let options = RecoveryOptions { seed: HINTER_SEED };
        let mut calls = CallState::new(Recovery::new(StrategyTable::builtin(), options));
        calls.restore(rows).unwrap();
        calls
    }

    /// Rows as the ledger keeps them: the last write of each, deletions applied.
    fn kept(
        rows: Vec<StateRow>,
        into: &mut std::collections::BTreeMap<(StateKind, String), StateRow>,
    ) {
        for row in rows {
            let key = (row.kind, row.key.clone());
            if row.body.is_some() {
                into.insert(key, row);
            } else {
                into.remove(&key);
            }
        }
    }

    #[test]
    fn an_idempotency_key_outlives_a_flood_of_other_keys_and_a_restart() {
        let options = RecoveryOptions { seed: HINTER_SEED };
        let mut calls = CallState::new(Recovery::new(StrategyTable::builtin(), options));
        let start = stored(0).at;
        let Applied::Step { step: first, .. } = calls.apply(&keyed_failure("a", "t", "k-1", start))
        else {
            panic!("counted")
        };
        // More keys than the old shared list held (16,384), from another caller.
        for i in 0..16_500 {
            calls.apply(&keyed_failure(
                "b",
                &format!("t{}", i % 50),
                &format!("k{i}"),
                start,
            ));
        }
        let resend = keyed_failure("a", "t", "k-1", start + SignedDuration::from_hours(1));
        assert_eq!(calls.apply(&resend), Applied::Replayed(first.clone()));
        let mut rows = std::collections::BTreeMap::new();
        kept(calls.take_rows(), &mut rows);
        let rows: Vec<StateRow> = rows.into_values().collect();
        let mut restarted = reloaded(&rows);
        assert_eq!(restarted.apply(&resend), Applied::Replayed(first));
        // Past its window the key is forgotten, and its row deleted.
        let late = keyed_failure("a", "t", "k-1", start + IDEMPOTENCY_WINDOW);
        assert!(matches!(restarted.apply(&late), Applied::Step { .. }));
    }

    #[test]
    fn an_open_breaker_outlives_a_flood_of_tool_names_and_a_restart() {
        let options = RecoveryOptions { seed: HINTER_SEED };
        let mut calls = CallState::new(Recovery::new(StrategyTable::builtin(), options));
        let at = stored(0).at;
        let outcome = |caller: &str, tool: &str| {
            Event::ToolFailure {
                class: Class::Transient,
                caller: caller.to_owned(),
            }
            .to_stored(at, tool.to_owned())
        };
        for _ in 0..20 {
            calls.apply(&outcome("a", "search"));
        }
        let open = |calls: &CallState| {
            calls
                .recovery
                .tool_views("search", at)
                .map(|(breaker, _)| breaker.state)
        };
        assert_eq!(open(&calls), Some(BreakerState::Open));
        let mut refused = 0;
        for i in 0..20_000 {
            if let Applied::OverQuota(_) = calls.apply(&outcome("b", &format!("tool-{i}"))) {
                refused += 1;
            }
        }
        let quota = StrategyTable::builtin().limits.tools;
        assert_eq!(
            refused,
            20_000 - quota,
            "the flooder is refused past its quota"
        );
        assert_eq!(
            open(&calls),
            Some(BreakerState::Open),
            "the breaker stays open"
        );
        let mut rows = std::collections::BTreeMap::new();
        kept(calls.take_rows(), &mut rows);
        let rows: Vec<StateRow> = rows.into_values().collect();
        assert_eq!(open(&reloaded(&rows)), Some(BreakerState::Open));
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
