//! Failed approaches: a (tool, operation) on which a task spent every attempt a class allows,
//! remembered for its caller, so its next tasks start by changing approach instead of
//! stepping on the same rake.
//!
//! Recorded when a task's step is a stop or a hand-off because its class's attempts are spent
//! (a policy denial is not an approach: it stops its task by itself). Another task of the same
//! caller that fails on the same tool and operation gets the record with its step, and a step
//! that would send the same call again becomes `change_approach`. A record is forgotten
//! [`APPROACH_WINDOW`] after its last failure, or at once when the tool succeeds again; a
//! caller keeps at most [`APPROACHES_PER_CALLER`], its oldest forgotten first.

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use super::durable::caller_and_task;
use super::{Recovery, Step};
use crate::class::Class;
use crate::recover::strategy::{Action, human_ms};

/// How long a failed approach is remembered after its last failure.
pub const APPROACH_WINDOW: SignedDuration = SignedDuration::from_hours(24);

/// The most failed approaches kept per caller; past it, the caller's oldest is forgotten.
pub const APPROACHES_PER_CALLER: usize = 256;

/// Between a record key's parts: no name may hold a control character.
const SEPARATOR: char = '\u{1f}';

/// A failed approach as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ApproachState {
    pub(super) caller: String,
    pub(super) tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) operation: Option<String>,
    pub(super) class: Class,
    /// What the last failure said (its error, as the step's hint was given it).
    pub(super) evidence: String,
    /// Failures of the approach, over every task that spent it.
    pub(super) failures: u32,
    /// Tasks that spent it.
    pub(super) tasks: u32,
    /// The last task that spent it (it is not warned of its own record).
    pub(super) task: String,
    pub(super) first: Timestamp,
    pub(super) last: Timestamp,
}

/// A failed approach, as an answer shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FailedApproach {
    /// The tool.
    pub tool: String,
    /// The operation, when the failures named one.
    pub operation: Option<String>,
    /// The class whose attempts were spent.
    pub class: Class,
    /// What the last failure said.
    pub evidence: String,
    /// Failures of the approach, over every task that spent it.
    pub failures: u32,
    /// Tasks that spent it.
    pub tasks: u32,
    /// When it first failed.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub first_at: Timestamp,
    /// When it last failed.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub last_at: Timestamp,
    /// When it is forgotten unless it fails again (or sooner, when the tool succeeds).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub expires_at: Timestamp,
    /// In words: what failed, how often, over how long.
    pub summary: String,
}

/// A caller's failed approach, for lists that show callers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CallerApproach {
    /// Whose.
    pub caller: String,
    /// The approach.
    #[serde(flatten)]
    pub approach: FailedApproach,
}

/// The key of a caller's approach.
pub(super) fn approach_key(caller: &str, tool: &str, operation: Option<&str>) -> String {
    format!(
        "{caller}{SEPARATOR}{tool}{SEPARATOR}{}",
        operation.unwrap_or_default()
    )
}

impl ApproachState {
    fn live(&self, now: Timestamp) -> bool {
        now < self.last + APPROACH_WINDOW
    }

    pub(super) fn expires_at(&self) -> Timestamp {
        self.last + APPROACH_WINDOW
    }

    fn view(&self, now: Timestamp) -> FailedApproach {
        let what = match &self.operation {
            Some(operation) => format!("{} {operation}", self.tool),
            None => self.tool.clone(),
        };
        let over = u64::try_from(now.duration_since(self.first).as_millis()).unwrap_or(0);
        let times = if self.failures == 1 {
            "once".to_owned()
        } else {
            format!("{} times", self.failures)
        };
        let over = if over < 1000 {
            String::new()
        } else {
            format!(" over the last {}", human_ms(over))
        };
        FailedApproach {
            tool: self.tool.clone(),
            operation: self.operation.clone(),
            class: self.class,
            evidence: self.evidence.clone(),
            failures: self.failures,
            tasks: self.tasks,
            first_at: self.first,
            last_at: self.last,
            expires_at: self.expires_at(),
            summary: format!(
                "{what} failed {times}{over} ({}: {}), every {} attempt spent",
                self.class, self.evidence, self.class
            ),
        }
    }
}

impl Recovery {
    /// The caller's live failed approach on a tool and operation that another task spent.
    pub(super) fn approach_for(
        &self,
        task: &str,
        tool: &str,
        operation: Option<&str>,
        now: Timestamp,
    ) -> Option<FailedApproach> {
        // Most failures meet no record: no key is made for them.
        if self.approaches.is_empty() {
            return None;
        }
        let caller = caller_and_task(task).0;
        self.approaches
            .get(&approach_key(caller, tool, operation))
            .filter(|a| a.live(now) && a.task != task)
            .map(|a| a.view(now))
    }

    /// Gives a step the failed approach it starts from: the record with it, a sentence before
    /// its hint, and a resend of the same call turned into a change of approach.
    pub(super) fn warn_of(step: &mut Step, approach: FailedApproach) {
        let first = format!(
            "This approach failed before for this caller: {}.",
            approach.summary
        );
        if step.action.is_retry() {
            step.action = Action::ChangeApproach;
            step.delay_ms = 0;
            step.defer_until = None;
            step.hint = format!(
                "{first} Change approach first: reach the goal another way (another tool, \
                 operation or input), or hand it to a person; do not send the same call again."
            );
            step.reason = format!(
                "{}; the resend is held back: this caller spent every attempt of this approach \
                 before",
                step.reason
            );
        } else {
            step.hint = format!("{first} {}", step.hint);
        }
        step.explanation = format!("{first} {}", step.explanation);
        step.failed_approach = Some(approach);
    }

    /// Records a failed approach when the step says the class's attempts are spent on it.
    pub(super) fn remember_if_spent(
        &mut self,
        task: &str,
        step: &Step,
        tool: &str,
        operation: Option<&str>,
        evidence: &str,
        now: Timestamp,
    ) {
        let spent = step.action.is_terminal()
            && step.class != Class::PolicyDenied
            && step.attempts.class_used >= step.attempts.class_max;
        if !spent {
            return;
        }
        let caller = caller_and_task(task).0;
        let key = approach_key(caller, tool, operation);
        let failures = step.attempts.class_used + 1;
        let evidence: String = evidence.chars().take(300).collect();
        match self.approaches.get_mut(&key) {
            Some(a) if a.live(now) => {
                // Another task spent it again: all its failures count; the same task failing
                // on after its hand-off adds this one failure.
                let added = if a.task == task {
                    1
                } else {
                    a.tasks += 1;
                    failures
                };
                a.failures = a.failures.saturating_add(added);
                a.class = step.class;
                a.evidence = evidence;
                task.clone_into(&mut a.task);
                a.last = now;
            }
            _ => {
                self.approaches.insert(
                    key.clone(),
                    ApproachState {
                        caller: caller.to_owned(),
                        tool: tool.to_owned(),
                        operation: operation.map(str::to_owned),
                        class: step.class,
                        evidence,
                        failures,
                        tasks: 1,
                        task: task.to_owned(),
                        first: now,
                        last: now,
                    },
                );
                self.bound_approaches(caller);
            }
        }
        self.changed.approaches.insert(key);
    }

    /// Forgets the caller's oldest approaches past [`APPROACHES_PER_CALLER`].
    fn bound_approaches(&mut self, caller: &str) {
        let mut own: Vec<(Timestamp, String)> = self
            .approaches
            .iter()
            .filter(|(_, a)| a.caller == caller)
            .map(|(key, a)| (a.last, key.clone()))
            .collect();
        if own.len() <= APPROACHES_PER_CALLER {
            return;
        }
        own.sort();
        let extra = own.len() - APPROACHES_PER_CALLER;
        for (_, key) in own.into_iter().take(extra) {
            self.approaches.remove(&key);
            self.changed.approaches.insert(key);
        }
    }

    /// The tool works again: every approach on it is forgotten.
    pub(super) fn forget_approaches_of(&mut self, tool: &str) {
        let gone: Vec<String> = self
            .approaches
            .iter()
            .filter(|(_, a)| a.tool == tool)
            .map(|(key, _)| key.clone())
            .collect();
        for key in gone {
            self.approaches.remove(&key);
            self.changed.approaches.insert(key);
        }
    }

    /// The live failed approaches of `caller` (every caller's with `None`), the most recent
    /// first.
    pub fn failed_approaches(&self, caller: Option<&str>, now: Timestamp) -> Vec<CallerApproach> {
        let mut found: Vec<CallerApproach> = self
            .approaches
            .values()
            .filter(|a| a.live(now) && caller.is_none_or(|c| a.caller == c))
            .map(|a| CallerApproach {
                caller: a.caller.clone(),
                approach: a.view(now),
            })
            .collect();
        found.sort_by(|a, b| {
            b.approach
                .last_at
                .cmp(&a.approach.last_at)
                .then_with(|| a.approach.tool.cmp(&b.approach.tool))
        });
        found
    }

    /// The live failed approaches of a task's caller on the tools the task used.
    pub(super) fn approaches_on(
        &self,
        task: &str,
        tools: &[String],
        now: Timestamp,
    ) -> Vec<FailedApproach> {
        let caller = caller_and_task(task).0;
        self.failed_approaches(Some(caller), now)
            .into_iter()
            .map(|a| a.approach)
            .filter(|a| tools.contains(&a.tool))
            .collect()
    }
}
