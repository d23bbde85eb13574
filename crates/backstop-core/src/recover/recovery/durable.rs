//! What of a recovery the ledger keeps: one row per task and per tool, written in the same
//! transaction as the journal events that changed them, and read back whole at a start; how
//! long each kind is kept; and the per-caller quotas that bound it without evicting anyone.
//!
//! Nothing here is ever dropped to make room. A caller past its quota of live tasks (or tools)
//! is refused a new one; what it and every other caller already hold stays until its window
//! passes, an operator resets it, or (for a policy stop) never.

use std::collections::HashMap;

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use super::{Recovery, TaskState, ToolHealth};

/// How long a task's counters are kept after its last failure: past it, the task starts
/// again from nothing. A policy denial's stop is kept until an operator resets the task.
pub const TASK_WINDOW: SignedDuration = SignedDuration::from_hours(24 * 7);

/// How long a tool's breaker and budget are kept after its last outcome.
pub const TOOL_WINDOW: SignedDuration = SignedDuration::from_hours(24 * 7);

/// How long an idempotency key is remembered.
pub const IDEMPOTENCY_WINDOW: SignedDuration = SignedDuration::from_hours(24);

/// The separator of a caller and its task (or key) in one key.
const CALLER_SEPARATOR: char = '\u{1f}';

/// The key of a caller's task (or idempotency key): each caller's are its own.
pub fn task_key(caller: &str, task: &str) -> String {
    format!("{caller}{CALLER_SEPARATOR}{task}")
}

/// The caller and the task a [`task_key`] names (no caller for a key without one).
pub fn caller_and_task(key: &str) -> (&str, &str) {
    key.split_once(CALLER_SEPARATOR).unwrap_or(("", key))
}

/// What kind of call state a row holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StateKind {
    /// A task's counters, stop and grants (key: [`task_key`]).
    Task,
    /// A tool's breaker and budget (key: the tool).
    Tool,
    /// The step an idempotency key answered first (key: [`task_key`] of the caller's key).
    Idempotency,
    /// The strategy files in use (key: empty).
    Strategies,
    /// A caller's failed approach: a tool and operation whose class's attempts a task spent
    /// (key: the caller, the tool and the operation).
    Approach,
}

impl StateKind {
    /// Every kind.
    pub const ALL: [StateKind; 5] = [
        StateKind::Task,
        StateKind::Tool,
        StateKind::Idempotency,
        StateKind::Strategies,
        StateKind::Approach,
    ];

    /// Its stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            StateKind::Task => "task",
            StateKind::Tool => "tool",
            StateKind::Idempotency => "idempotency",
            StateKind::Strategies => "strategies",
            StateKind::Approach => "approach",
        }
    }

    /// The kind a stored name names.
    pub fn parse(name: &str) -> Option<StateKind> {
        StateKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// One row of call state, as the ledger keeps it: written (or, with no body, deleted) in the
/// transaction of the journal events that changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRow {
    /// What it holds.
    pub kind: StateKind,
    /// Whose and which (see [`StateKind`]).
    pub key: String,
    /// The caller it belongs to (empty for shared state).
    pub caller: String,
    /// Its JSON; `None` deletes the row.
    pub body: Option<String>,
    /// When its window passes and the purge may delete it; `None`: never (a policy stop).
    pub expires: Option<Timestamp>,
}

/// A caller has as many live tasks (or tools) as its quota allows: the new one is refused,
/// and nothing anyone holds is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quota {
    /// Live tasks per caller (`limits.tasks`).
    Tasks {
        /// The quota.
        limit: usize,
    },
    /// Tools per caller that named them first (`limits.tools`).
    Tools {
        /// The quota.
        limit: usize,
    },
}

impl Quota {
    /// The refusal, in words.
    pub fn message(self) -> String {
        match self {
            Quota::Tasks { limit } => format!(
                "this caller has {limit} live tasks, its quota (`limits.tasks`): nothing was \
                 counted. Report the successes of finished tasks (or reset them), or wait until \
                 idle tasks expire ({} days after their last failure)",
                TASK_WINDOW.as_hours() / 24
            ),
            Quota::Tools { limit } => format!(
                "this caller has named {limit} tools, its quota (`limits.tools`): nothing was \
                 counted. Reuse a tool's name, or wait until idle tools expire ({} days after \
                 their last outcome)",
                TOOL_WINDOW.as_hours() / 24
            ),
        }
    }
}

/// The rows changed since they were last taken, by kind and key.
#[derive(Debug, Default, Clone)]
pub struct Changed {
    pub(super) tasks: std::collections::HashSet<String>,
    pub(super) tools: std::collections::HashSet<String>,
    pub(super) approaches: std::collections::HashSet<String>,
}

/// Live entries per caller, to hold the quotas.
#[derive(Debug, Default)]
pub(super) struct PerCaller {
    pub(super) tasks: HashMap<String, usize>,
    pub(super) tools: HashMap<String, usize>,
}

fn bump(counts: &mut HashMap<String, usize>, caller: &str, up: bool) {
    if up {
        *counts.entry(caller.to_owned()).or_default() += 1;
    } else if let Some(n) = counts.get_mut(caller) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            counts.remove(caller);
        }
    }
}

impl TaskState {
    /// Whether the task's counters have passed their window at `now` (a stop never does).
    pub(super) fn expired(&self, now: Timestamp) -> bool {
        self.expires_at().is_some_and(|at| at <= now)
    }

    /// When the task's counters pass their window: never (`None`) under a stop or before
    /// anything was counted.
    pub(super) fn expires_at(&self) -> Option<Timestamp> {
        if self.denied.is_some() {
            return None;
        }
        self.last.map(|last| last + TASK_WINDOW)
    }
}

impl ToolHealth {
    /// Whether the tool's health has passed its window at `now`.
    pub(super) fn expired(&self, now: Timestamp) -> bool {
        self.last.is_some_and(|last| last + TOOL_WINDOW <= now)
    }
}

impl Recovery {
    /// Admits a failure of `task` (a [`task_key`]) with `tool`: `Ok` when the task is live or
    /// its caller may start one more, and the tool known or its caller may name one more. A
    /// caller at its quota first loses its own expired entries; nobody else's are touched.
    ///
    /// # Errors
    /// The caller is at its quota of live tasks or tools.
    pub fn admit(&mut self, task: &str, tool: Option<&str>, now: Timestamp) -> Result<(), Quota> {
        let (caller, _) = caller_and_task(task);
        let live = self.tasks.get(task).is_some_and(|t| !t.expired(now));
        if !live {
            let limit = self.table.limits.tasks;
            if self.per_caller.tasks.get(caller).copied().unwrap_or(0) >= limit {
                self.sweep_tasks(caller, now);
                if self.per_caller.tasks.get(caller).copied().unwrap_or(0) >= limit {
                    return Err(Quota::Tasks { limit });
                }
            }
        }
        match tool {
            Some(tool) => self.admit_tool(caller, tool, now),
            None => Ok(()),
        }
    }

    /// Admits an outcome of `tool` reported by `caller`: `Ok` when the tool is known or the
    /// caller may name one more.
    ///
    /// # Errors
    /// The caller named as many tools as its quota allows.
    pub fn admit_tool(&mut self, caller: &str, tool: &str, now: Timestamp) -> Result<(), Quota> {
        if self.tools.get(tool).is_some_and(|t| !t.expired(now)) {
            return Ok(());
        }
        let limit = self.table.limits.tools;
        if self.per_caller.tools.get(caller).copied().unwrap_or(0) >= limit {
            self.sweep_tools(caller, now);
            if self.per_caller.tools.get(caller).copied().unwrap_or(0) >= limit {
                return Err(Quota::Tools { limit });
            }
        }
        // The tool is its caller's from here on (for the quota), even before its first outcome.
        let mut fresh = ToolHealth::fresh(&self.table);
        caller.clone_into(&mut fresh.owner);
        fresh.last = Some(now);
        self.put_tool(tool, fresh);
        Ok(())
    }

    fn sweep_tasks(&mut self, caller: &str, now: Timestamp) {
        let expired: Vec<String> = self
            .tasks
            .iter()
            .filter(|(key, state)| caller_and_task(key).0 == caller && state.expired(now))
            .map(|(key, _)| key.clone())
            .collect();
        for key in expired {
            self.remove_task(&key);
        }
    }

    fn sweep_tools(&mut self, caller: &str, now: Timestamp) {
        let expired: Vec<String> = self
            .tools
            .iter()
            .filter(|(_, health)| health.owner == caller && health.expired(now))
            .map(|(tool, _)| tool.clone())
            .collect();
        for tool in expired {
            if let Some(gone) = self.tools.remove(&tool) {
                bump(&mut self.per_caller.tools, &gone.owner, false);
                self.changed.tools.insert(tool);
            }
        }
    }

    /// A task's state, made if it is not there (or fresh again past its window).
    pub(super) fn task_mut(&mut self, task: &str, now: Timestamp) -> &mut TaskState {
        self.changed.tasks.insert(task.to_owned());
        if self.tasks.get(task).is_some_and(|t| t.expired(now)) {
            self.tasks.remove(task);
            bump(&mut self.per_caller.tasks, caller_and_task(task).0, false);
        }
        if !self.tasks.contains_key(task) {
            bump(&mut self.per_caller.tasks, caller_and_task(task).0, true);
        }
        self.tasks.entry(task.to_owned()).or_default()
    }

    /// Forgets a task's state.
    pub(super) fn remove_task(&mut self, task: &str) {
        if self.tasks.remove(task).is_some() {
            bump(&mut self.per_caller.tasks, caller_and_task(task).0, false);
        }
        self.changed.tasks.insert(task.to_owned());
    }

    /// A tool's health, made (for no caller's quota) if it is not there or past its window.
    pub(super) fn tool_mut(&mut self, tool: &str, now: Timestamp) -> &mut ToolHealth {
        self.changed.tools.insert(tool.to_owned());
        if self.tools.get(tool).is_none_or(|t| t.expired(now)) {
            let owner = self
                .tools
                .get(tool)
                .map(|t| t.owner.clone())
                .unwrap_or_default();
            let mut fresh = ToolHealth::fresh(&self.table);
            fresh.owner = owner;
            self.put_tool(tool, fresh);
        }
        let health = self.tools.get_mut(tool).expect("put above");
        health.last = Some(now);
        health
    }

    fn put_tool(&mut self, tool: &str, health: ToolHealth) {
        bump(&mut self.per_caller.tools, &health.owner, true);
        if let Some(old) = self.tools.insert(tool.to_owned(), health) {
            bump(&mut self.per_caller.tools, &old.owner, false);
        }
        self.changed.tools.insert(tool.to_owned());
    }

    /// How many rows have changed since they were last taken.
    pub fn pending_changes(&self) -> usize {
        self.changed.tasks.len() + self.changed.tools.len() + self.changed.approaches.len()
    }

    /// The rows changed since the last call, as the ledger keeps them.
    pub fn take_changes(&mut self) -> Vec<StateRow> {
        let changed = std::mem::take(&mut self.changed);
        let mut rows = Vec::with_capacity(changed.tasks.len() + changed.tools.len());
        for key in changed.tasks {
            let state = self.tasks.get(&key);
            rows.push(StateRow {
                kind: StateKind::Task,
                caller: caller_and_task(&key).0.to_owned(),
                body: state.map(to_json),
                expires: state.and_then(|s| {
                    if s.denied.is_some() {
                        None
                    } else {
                        Some(s.last.unwrap_or(Timestamp::UNIX_EPOCH) + TASK_WINDOW)
                    }
                }),
                key,
            });
        }
        for tool in changed.tools {
            let health = self.tools.get(&tool);
            rows.push(StateRow {
                kind: StateKind::Tool,
                caller: health.map(|h| h.owner.clone()).unwrap_or_default(),
                body: health.map(to_json),
                expires: Some(
                    health.and_then(|h| h.last).unwrap_or(Timestamp::UNIX_EPOCH) + TOOL_WINDOW,
                ),
                key: tool,
            });
        }
        for key in changed.approaches {
            let approach = self.approaches.get(&key);
            rows.push(StateRow {
                kind: StateKind::Approach,
                caller: approach.map(|a| a.caller.clone()).unwrap_or_default(),
                body: approach.map(to_json),
                expires: approach.map(super::approaches::ApproachState::expires_at),
                key,
            });
        }
        rows.sort_by(|a, b| (a.kind, &a.key).cmp(&(b.kind, &b.key)));
        rows
    }

    /// Takes up a row the ledger kept (a task's, a tool's or a failed approach; other kinds
    /// are not this recovery's and are ignored).
    ///
    /// # Errors
    /// The row's body is not its kind's JSON.
    pub fn restore(&mut self, row: &StateRow) -> Result<(), serde_json::Error> {
        let Some(body) = &row.body else {
            return Ok(());
        };
        match row.kind {
            StateKind::Task => {
                let state: TaskState = serde_json::from_str(body)?;
                if self.tasks.insert(row.key.clone(), state).is_none() {
                    bump(
                        &mut self.per_caller.tasks,
                        caller_and_task(&row.key).0,
                        true,
                    );
                }
            }
            StateKind::Tool => {
                let health: ToolHealth = serde_json::from_str(body)?;
                self.put_tool(&row.key, health);
                self.changed.tools.remove(&row.key);
            }
            StateKind::Approach => {
                let approach: super::approaches::ApproachState = serde_json::from_str(body)?;
                self.approaches.insert(row.key.clone(), approach);
            }
            StateKind::Idempotency | StateKind::Strategies => {}
        }
        Ok(())
    }
}

fn to_json<T: Serialize>(value: &T) -> String {
    // Never fails: every map key is a string and every float finite.
    serde_json::to_string(value).unwrap_or_default()
}
