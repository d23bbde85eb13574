//! [`Recovery`]: per-task attempt counters and per-tool health, turned into the next step.
//!
//! `next` consumes an attempt, `peek` answers the same question without changing anything,
//! `reset` forgets a task. Nothing is evicted to make room: each kind of state is kept for its
//! window (`durable`), a caller past its quota of live tasks or tools is refused a new one
//! (`admit`), and every change is handed to the ledger as rows (`take_changes`).

use std::collections::HashMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::breaker::{Breaker, BreakerState, BreakerView, counts_against_tool};
use super::budget::{BudgetView, RetryBudget};
use super::idempotency;
use super::strategy::{Action, MAX_STRATEGIES, StrategyTable};
use crate::class::{ALL_CLASSES, Class};
use crate::classify::Classification;
use crate::report::Report;

mod approaches;
mod durable;
mod plan;
mod task_view;

pub use self::durable::{
    Changed, IDEMPOTENCY_WINDOW, Quota, StateKind, StateRow, TASK_WINDOW, TOOL_WINDOW,
    caller_and_task, task_key,
};

pub use self::approaches::{
    APPROACH_WINDOW, APPROACHES_PER_CALLER, CallerApproach, FailedApproach,
};
use self::plan::{Grant, Inputs, class_index, plan};
pub use self::task_view::{ClassCount, NextStep, TaskTool, TaskView};

/// What the agent knows about the call, for hints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Context {
    /// The tool that failed; its breaker and budget apply.
    #[serde(default)]
    pub tool: Option<String>,
    /// What was asked of it.
    #[serde(default)]
    pub operation: Option<String>,
    /// The error, in the agent's words or the tool's.
    #[serde(default)]
    pub error: Option<String>,
    /// The action the agent wants to take, when it asks leave for one (`fallback_tool`).
    /// After a policy denial, any request but `stop` or `escalate` is refused.
    #[serde(default)]
    pub request: Option<Action>,
    /// Whether sending the call again cannot do its effect twice; unsaid, the report's
    /// `idempotent`, the idempotency key, the tool's setting and the operation's HTTP method
    /// decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The idempotency key the call was sent with (the report's, unless given here): a resend
    /// under it cannot do the effect twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Whether the call may have done its work before it failed; unsaid, read from the report
    /// (a timeout or a reset after sending may have; a 4xx, a 503 or a refused connection did
    /// not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub may_have_taken_effect: Option<bool>,
}

impl Context {
    /// The context of a failed call: what the caller gave, and what it left unsaid taken from
    /// the report (tool, operation, the error's summary, idempotency, whether it may have taken
    /// effect).
    pub fn for_report(given: Context, report: &Report) -> Context {
        Context {
            tool: given.tool.or_else(|| report.tool.clone()),
            operation: given.operation.or_else(|| report.operation.clone()),
            error: given.error.or_else(|| Some(report.summary())),
            request: given.request,
            idempotent: given.idempotent.or(report.idempotent),
            idempotency_key: given
                .idempotency_key
                .or_else(|| idempotency::key_of(report).map(str::to_owned)),
            may_have_taken_effect: given
                .may_have_taken_effect
                .or_else(|| Some(idempotency::may_have_taken_effect(report))),
        }
    }
}

/// The next step for an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Step {
    /// The failure's class.
    pub class: Class,
    /// What to do.
    pub action: Action,
    /// What to do, in words, filled from the context.
    pub hint: String,
    /// How long to wait before acting, in milliseconds.
    pub delay_ms: u64,
    /// For a long wait: park the task and come back at this time.
    pub defer_until: Option<Timestamp>,
    /// The attempts used and allowed.
    pub attempts: Attempts,
    /// The tool's circuit breaker, when a tool was named.
    pub breaker: Option<BreakerView>,
    /// The tool's retry budget, when a tool was named.
    pub budget: Option<BudgetView>,
    /// Who to hand the task to, when the action is `escalate`.
    pub escalation: Option<Escalation>,
    /// The tool to fall back to, when the action is `fallback_tool` and the failing tool has
    /// a fallback chain: the next one in it whose breaker is not open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_tool: Option<String>,
    /// Why this step, for machines and logs: the class, the strategy and the counts.
    pub reason: String,
    /// Why this step, in the sentence a person reads: what the failure means (the rule's own
    /// words), and what about the task decided it when that, not the failure, did.
    #[serde(default)]
    pub explanation: String,
    /// The failed approach this caller's earlier task spent on the same tool and operation,
    /// given with a task's failure of it (and a resend of it turned into `change_approach`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_approach: Option<FailedApproach>,
}

/// Attempts used and allowed, for the class and for the whole task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Attempts {
    /// Attempts this task spent on this class, this step included.
    pub class_used: u32,
    /// Attempts the class's strategies allow.
    pub class_max: u32,
    /// This step's attempt of its strategy (`attempt 2 of 3 of this strategy` in the reason);
    /// 0 when the step is no strategy's attempt (a stop, an escalation, a breaker's wait).
    pub strategy_used: u32,
    /// Attempts the step's strategy allows; 0 when the step is no strategy's attempt.
    pub strategy_max: u32,
    /// Attempts this task spent on any class, this step included.
    pub task_used: u32,
    /// Attempts the task may spend.
    pub task_max: u32,
}

/// A hand-off to a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Escalation {
    /// Who.
    pub to: String,
    /// Why.
    pub why: String,
}

/// One task's counters (serialized whole, small: the ledger keeps one row per task, written
/// with every failure of it).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct TaskState {
    /// Attempts per class and strategy; kept as the non-zero cells only.
    #[serde(with = "sparse_counts", default)]
    pub(super) used: [[u16; MAX_STRATEGIES]; ALL_CLASSES.len()],
    #[serde(default)]
    pub(super) task_used: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) previous_delay_ms: u64,
    /// Retries an operator granted for unclassified failures, not yet used.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) operator_grants: u8,
    /// Whether a configured grant rule already gave this task its one retry.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(super) rule_grant_used: bool,
    /// The policy denial that stopped this task, if one did: every later step of the task is
    /// `stop`, whatever tool or class, until the task is reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) denied: Option<String>,
    /// The tools the task used, the most recent last (at most `task_view::TOOLS_KEPT`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<String>,
    /// Whether a review item was opened for an escalation of the task since its last reset.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(super) escalated: bool,
    /// When the task last failed: its counters are kept for [`TASK_WINDOW`] after it.
    #[serde(default)]
    pub(super) last: Option<Timestamp>,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(b: &bool) -> bool {
    !*b
}

/// A task's counts per class and strategy as `[[class, strategy, count], ...]`, the non-zero
/// cells only.
mod sparse_counts {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::MAX_STRATEGIES;
    use crate::class::ALL_CLASSES;

    type Counts = [[u16; MAX_STRATEGIES]; ALL_CLASSES.len()];

    pub(super) fn serialize<S: Serializer>(
        used: &Counts,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let cells: Vec<(usize, usize, u16)> = used
            .iter()
            .enumerate()
            .flat_map(|(class, row)| {
                row.iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(move |(strategy, n)| (class, strategy, *n))
            })
            .collect();
        cells.serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Counts, D::Error> {
        let cells: Vec<(usize, usize, u16)> = Vec::deserialize(deserializer)?;
        let mut used = [[0; MAX_STRATEGIES]; ALL_CLASSES.len()];
        for (class, strategy, n) in cells {
            let cell = used
                .get_mut(class)
                .and_then(|row| row.get_mut(strategy))
                .ok_or_else(|| D::Error::custom(format!("no count [{class}, {strategy}]")))?;
            *cell = n;
        }
        Ok(used)
    }
}

/// A tool's health (serialized whole: the ledger keeps it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ToolHealth {
    pub(super) breaker: Breaker,
    pub(super) budget: RetryBudget,
    /// The caller that named the tool first: the tool counts against its quota.
    #[serde(default)]
    pub(super) owner: String,
    /// When the tool's last outcome came: its health is kept for [`TOOL_WINDOW`] after it.
    #[serde(default)]
    pub(super) last: Option<Timestamp>,
}

impl ToolHealth {
    /// A closed breaker and a full budget, as the table sets them.
    fn fresh(table: &StrategyTable) -> ToolHealth {
        ToolHealth {
            breaker: Breaker::new(table.breaker),
            budget: RetryBudget::new(table.budget),
            owner: String::new(),
            last: None,
        }
    }
}

/// Settings of a recovery beyond its table.
#[derive(Debug, Clone, Copy)]
pub struct RecoveryOptions {
    /// The seed of all jitter.
    pub seed: u64,
}

/// Per-task counters and per-tool health, and the table that turns them into steps.
#[derive(Debug)]
pub struct Recovery {
    table: StrategyTable,
    tasks: HashMap<String, TaskState>,
    tools: HashMap<String, ToolHealth>,
    approaches: HashMap<String, approaches::ApproachState>,
    seed: u64,
    per_caller: durable::PerCaller,
    changed: durable::Changed,
}

impl Recovery {
    /// A recovery over a table. The per-caller quotas are the table's `limits.tasks` and
    /// `limits.tools` (never 0: the table refuses it).
    pub fn new(table: StrategyTable, options: RecoveryOptions) -> Recovery {
        Recovery {
            table,
            tasks: HashMap::new(),
            tools: HashMap::new(),
            approaches: HashMap::new(),
            seed: options.seed,
            per_caller: durable::PerCaller::default(),
            changed: durable::Changed::default(),
        }
    }

    /// The table in use.
    pub fn table(&self) -> &StrategyTable {
        &self.table
    }

    /// Uses another table from now on; counters and tool health stay (a smaller quota refuses
    /// new tasks until a caller is under it again; it forgets nothing).
    pub fn set_table(&mut self, table: StrategyTable) {
        self.table = table;
    }

    /// How many tasks have counters now, expired ones not yet swept included.
    pub fn live_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// How many tasks of `caller` have counters now, expired ones not yet swept included.
    pub fn live_tasks_of(&self, caller: &str) -> usize {
        self.per_caller.tasks.get(caller).copied().unwrap_or(0)
    }

    /// The next step after a failure; consumes an attempt.
    pub fn next(
        &mut self,
        task: &str,
        failure: &Classification,
        ctx: &Context,
        now: Timestamp,
    ) -> Step {
        if let Some(tool) = ctx.tool.as_deref() {
            self.tool_mut(tool, now);
        }
        let failed_before = ctx
            .tool
            .as_deref()
            .and_then(|tool| self.approach_for(task, tool, ctx.operation.as_deref(), now));
        self.task_mut(task, now).last = Some(now);
        // Disjoint fields: the task's counters and the tool's health are borrowed together.
        let state = self.tasks.get_mut(task).expect("made above");
        let mut health = ctx
            .tool
            .as_deref()
            .and_then(|tool| self.tools.get_mut(tool));
        if let Some(h) = health.as_deref_mut()
            && counts_against_tool(failure.class)
        {
            h.breaker.record_failure(now);
        }
        let inputs = Inputs {
            table: &self.table,
            seed: self.seed,
            task,
            state,
            failure,
            ctx,
            now,
        };
        let mut plan = plan(&inputs, health.as_deref_mut(), true);
        if let Some(approach) = failed_before {
            Recovery::warn_of(&mut plan.step, approach);
            plan.retries_tool &= plan.step.action.is_retry();
        }
        if let Some(i) = plan.consumed {
            state.used[class_index(failure.class)][i] += 1;
        }
        if plan.task_attempt {
            state.task_used += 1;
        }
        match plan.grant {
            Some(Grant::Operator) => {
                state.operator_grants = state.operator_grants.saturating_sub(1);
            }
            Some(Grant::Rule) => state.rule_grant_used = true,
            None => {}
        }
        if plan.step.action.is_retry() {
            state.previous_delay_ms = plan.step.delay_ms;
        }
        if let Some(tool) = ctx.tool.as_deref() {
            state.tools.retain(|t| t != tool);
            state.tools.push(tool.to_owned());
            if state.tools.len() > task_view::TOOLS_KEPT {
                state.tools.remove(0);
            }
        }
        if failure.class == Class::PolicyDenied && state.denied.is_none() {
            state.denied = Some(ctx.tool.clone().unwrap_or_else(|| "a tool".to_owned()));
        }
        if plan.retries_tool
            && let Some(h) = health
        {
            h.budget.try_spend(now);
        }
        let mut step = plan.step;
        self.name_fallback(&mut step, ctx, now);
        if let Some(tool) = ctx.tool.as_deref() {
            let evidence = ctx.error.as_deref().unwrap_or(&failure.reason);
            self.remember_if_spent(task, &step, tool, ctx.operation.as_deref(), evidence, now);
        }
        step
    }

    /// The step `next` would give, changing nothing.
    pub fn peek(
        &self,
        task: &str,
        failure: &Classification,
        ctx: &Context,
        now: Timestamp,
    ) -> Step {
        let state = self.live_task(task, now).cloned().unwrap_or_default();
        let mut health = ctx.tool.as_deref().map(|tool| {
            self.live_tool(tool, now)
                .cloned()
                .unwrap_or_else(|| ToolHealth::fresh(&self.table))
        });
        if let Some(h) = health.as_mut()
            && counts_against_tool(failure.class)
        {
            h.breaker.record_failure(now);
        }
        let inputs = Inputs {
            table: &self.table,
            seed: self.seed,
            task,
            state: &state,
            failure,
            ctx,
            now,
        };
        let mut step = plan(&inputs, health.as_mut(), false).step;
        self.name_fallback(&mut step, ctx, now);
        step
    }

    /// Names the tool a `fallback_tool` step falls back to: the next one in the failing
    /// tool's chain whose breaker is not open. A chain with none left escalates: a fallback
    /// chain is finite, and what comes after it is a person.
    fn name_fallback(&self, step: &mut Step, ctx: &Context, now: Timestamp) {
        if step.action != Action::FallbackTool {
            return;
        }
        let Some(tool) = ctx.tool.as_deref() else {
            return;
        };
        let Some(rest) = self.table.fallbacks_after(tool) else {
            return;
        };
        let open = |t: &str| {
            self.live_tool(t, now)
                .is_some_and(|h| h.breaker.view(now).state == BreakerState::Open)
        };
        if let Some(next) = rest.iter().find(|t| !open(t)) {
            step.fallback_tool = Some(next.clone());
            step.hint = format!("{} Fall back to {next}.", step.hint.trim_end());
            step.reason = format!(
                "{}; the next tool in the fallback chain is {next}",
                step.reason
            );
        } else {
            let to = self.table.limits.escalate_to.clone();
            let why = format!(
                "{}; every fallback after {tool} has been tried or has its breaker open",
                step.reason
            );
            step.action = Action::Escalate;
            step.hint = format!("Hand the task to {to}: no fallback tool is left after {tool}.");
            step.escalation = Some(Escalation {
                to,
                why: why.clone(),
            });
            step.reason = why;
        }
    }

    /// Forgets a task's counters.
    pub fn reset(&mut self, task: &str) {
        self.remove_task(task);
    }

    /// The task's call succeeded: its failure counters start again from nothing. A policy
    /// denial's stop stays (a success of another call lifts no prohibition), and so do an
    /// operator's grants not yet used.
    pub fn record_task_success(&mut self, task: &str) {
        let Some(state) = self.tasks.get_mut(task) else {
            return;
        };
        let kept = TaskState {
            denied: state.denied.take(),
            operator_grants: state.operator_grants,
            tools: std::mem::take(&mut state.tools),
            last: state.last,
            ..TaskState::default()
        };
        if kept.denied.is_none() && kept.operator_grants == 0 {
            self.remove_task(task);
        } else {
            *state = kept;
            self.changed.tasks.insert(task.to_owned());
        }
    }

    /// An operator grants one retry to the task's next unclassified failure.
    pub fn grant(&mut self, task: &str, now: Timestamp) {
        let state = self.task_mut(task, now);
        state.last = Some(now);
        state.operator_grants = state.operator_grants.saturating_add(1);
    }

    /// Marks the task escalated (a review item opened for it): `true` if it was not already,
    /// since its last reset or success.
    pub fn mark_escalated(&mut self, task: &str) -> bool {
        match self.tasks.get_mut(task) {
            Some(state) if !state.escalated => {
                state.escalated = true;
                self.changed.tasks.insert(task.to_owned());
                true
            }
            Some(_) => false,
            // A task with no state (never kept) escalates each time it is asked.
            None => true,
        }
    }

    /// Until when `task` stays escalated whatever else happens to it but a reset or a success:
    /// `None` if it is not escalated now; [`Timestamp::MAX`] while a policy stop holds it (a
    /// stop never expires); otherwise when its state is forgotten by age.
    pub fn escalated_until(&self, task: &str) -> Option<Timestamp> {
        let state = self.tasks.get(task).filter(|state| state.escalated)?;
        Some(state.expires_at().unwrap_or(Timestamp::MAX))
    }

    /// A call to a tool succeeded: its breaker and budget hear of it.
    pub fn record_success(&mut self, tool: &str, now: Timestamp) {
        let h = self.tool_mut(tool, now);
        h.breaker.record_success(now);
        h.budget.record_success(now);
        self.forget_approaches_of(tool);
    }

    /// A call to a tool failed outside `next` (reported by an outcome): its breaker hears of it
    /// when the class says something about the tool.
    pub fn record_failure(&mut self, tool: &str, class: Class, now: Timestamp) {
        let h = self.tool_mut(tool, now);
        if counts_against_tool(class) {
            h.breaker.record_failure(now);
        }
    }

    /// The tools seen and not past their window at `now`, by name.
    pub fn tool_names(&self, now: Timestamp) -> Vec<String> {
        let mut names: Vec<String> = self
            .tools
            .iter()
            .filter(|(_, h)| !h.expired(now))
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }

    /// The tasks a policy denial stopped, with the denial, sorted by task.
    pub fn stopped_tasks(&self) -> Vec<(String, String)> {
        let mut stopped: Vec<(String, String)> = self
            .tasks
            .iter()
            .filter_map(|(task, state)| Some((task.clone(), state.denied.clone()?)))
            .collect();
        stopped.sort();
        stopped
    }

    /// A tool's breaker and budget as they stand at `now`, if the tool has been seen (and is
    /// not past its window).
    pub fn tool_views(&self, tool: &str, now: Timestamp) -> Option<(BreakerView, BudgetView)> {
        self.live_tool(tool, now)
            .map(|h| (h.breaker.view(now), h.budget.view(now)))
    }

    fn live_task(&self, task: &str, now: Timestamp) -> Option<&TaskState> {
        self.tasks.get(task).filter(|t| !t.expired(now))
    }

    fn live_tool(&self, tool: &str, now: Timestamp) -> Option<&ToolHealth> {
        self.tools.get(tool).filter(|t| !t.expired(now))
    }
}
