//! The hinter: per-task attempt counters and per-tool health, turned into the next step.
//!
//! `next` consumes an attempt, `peek` answers the same question without changing anything,
//! `reset` forgets a task. Task counters live in a bounded LRU (1,024 tasks by default); tool
//! breakers and retry budgets in another.

use std::num::NonZeroUsize;
use std::sync::LazyLock;

use jiff::{SignedDuration, Timestamp};
use lru::LruCache;
use serde::{Deserialize, Serialize};

use super::backoff::{self, Jitter};
use super::breaker::{Admission, Breaker, BreakerView, counts_against_tool};
use super::budget::{BudgetView, RetryBudget};
use super::strategy::{
    Action, LongWait, MAX_STRATEGIES, StrategyTable, Template, human_ms, write_human_ms,
};
use crate::class::{ALL_CLASSES, Class};
use crate::classify::Classification;

// The hints backstop writes itself, parsed once.
static DENIED: LazyLock<Template> = LazyLock::new(|| {
    Template::parse(
        "Stop: this task met a policy denial. Do not retry, do not try another tool, do not work around it; report it.",
    )
});
static GRANTED_RETRY: LazyLock<Template> = LazyLock::new(|| {
    Template::parse(
        "Retry the same call once after {delay}; if it fails again, stop and report it.",
    )
});
static BREAKER_FALLBACK: LazyLock<Template> = LazyLock::new(|| {
    Template::parse(
        "{tool} is failing too often to call now; use another tool that can do {operation}.",
    )
});
static BREAKER_WAIT: LazyLock<Template> = LazyLock::new(|| {
    Template::parse(
        "{tool} is failing too often to call now; wait {delay} until it may be tried again.",
    )
});
static PARK: LazyLock<Template> = LazyLock::new(|| {
    Template::parse("Do not sleep: park this task and come back after {delay}, then retry {tool}.")
});
static TOO_LONG: LazyLock<Template> = LazyLock::new(|| {
    Template::parse(
        "{tool} asks for a wait of {delay}, too long to sleep; hand the task to a person.",
    )
});
static SPENT: LazyLock<Template> = LazyLock::new(|| {
    Template::parse(
        "Every way backstop knows to recover from this {class} failure of {tool} is spent; hand the task to a person.",
    )
});

/// Tools whose breaker and budget are kept (least recently used dropped).
const MAX_TOOLS: usize = 4096;

/// What the agent knows about the call, for hints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
}

/// The next step for an agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// Why this step, in words.
    pub reason: String,
}

/// Attempts used and allowed, for the class and for the whole task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Attempts {
    /// Attempts this task spent on this class, this step included.
    pub class_used: u32,
    /// Attempts the class's strategies allow.
    pub class_max: u32,
    /// Attempts this task spent on any class, this step included.
    pub task_used: u32,
    /// Attempts the task may spend.
    pub task_max: u32,
}

/// A hand-off to a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Escalation {
    /// Who.
    pub to: String,
    /// Why.
    pub why: String,
}

/// One task's counters.
#[derive(Debug, Clone, Default)]
struct TaskState {
    used: [[u16; MAX_STRATEGIES]; ALL_CLASSES.len()],
    task_used: u32,
    previous_delay_ms: u64,
    /// Retries an operator granted for unclassified failures, not yet used.
    operator_grants: u8,
    /// Whether a configured grant rule already gave this task its one retry.
    rule_grant_used: bool,
    /// The policy denial that stopped this task, if one did: every later step of the task is
    /// `stop`, whatever tool or class, until the task is reset.
    denied: Option<String>,
}

/// A tool's health.
#[derive(Debug, Clone)]
struct ToolHealth {
    breaker: Breaker,
    budget: RetryBudget,
}

/// Settings of a hinter beyond its table.
#[derive(Debug, Clone, Copy)]
pub struct HinterOptions {
    /// The seed of all jitter.
    pub seed: u64,
}

/// Per-task counters and per-tool health, and the table that turns them into steps.
#[derive(Debug)]
pub struct Hinter {
    table: StrategyTable,
    tasks: LruCache<String, TaskState>,
    tools: LruCache<String, ToolHealth>,
    seed: u64,
}

/// What a step uses up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spend {
    /// Nothing: a stop or an escalation.
    Nothing,
    /// One of the task's attempts, not a strategy's (a granted retry, a fallback around an open
    /// breaker).
    Task,
    /// One of the task's attempts and one of the strategy's.
    Strategy,
}

/// What `plan` decided, for `next` to commit.
struct Plan {
    step: Step,
    /// The strategy consumed, if any.
    consumed: Option<usize>,
    /// Whether the step uses one of the task's attempts.
    task_attempt: bool,
    /// A grant used: by an operator (true) or a rule (false).
    grant: Option<bool>,
    /// Whether the step sends the same call to the same tool again.
    retries_tool: bool,
}

impl Hinter {
    /// A hinter over a table. The task bound is the table's `limits.tasks` (never 0: the table
    /// refuses it).
    pub fn new(table: StrategyTable, options: HinterOptions) -> Hinter {
        let bound = NonZeroUsize::new(table.limits.tasks).unwrap_or(NonZeroUsize::MIN);
        Hinter {
            table,
            tasks: LruCache::new(bound),
            tools: LruCache::new(NonZeroUsize::new(MAX_TOOLS).unwrap_or(NonZeroUsize::MIN)),
            seed: options.seed,
        }
    }

    /// The table in use.
    pub fn table(&self) -> &StrategyTable {
        &self.table
    }

    /// How many tasks have counters now (never more than the bound).
    pub fn live_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// The next step after a failure; consumes an attempt.
    pub fn next(
        &mut self,
        task: &str,
        failure: &Classification,
        ctx: &Context,
        now: Timestamp,
    ) -> Step {
        // Disjoint fields: the task's counters and the tool's health are borrowed together, each
        // found (or made) with one lookup.
        let state = self.tasks.get_or_insert_mut_ref(task, TaskState::default);
        let table = &self.table;
        let mut health = ctx.tool.as_deref().map(|tool| {
            self.tools.get_or_insert_mut_ref(tool, || ToolHealth {
                breaker: Breaker::new(table.breaker),
                budget: RetryBudget::new(table.budget),
            })
        });
        if let Some(h) = health.as_deref_mut()
            && counts_against_tool(failure.class)
        {
            h.breaker.record_failure(now);
        }
        let plan = plan(
            &self.table,
            self.seed,
            task,
            state,
            health.as_deref_mut(),
            failure,
            ctx,
            now,
            true,
        );
        if let Some(i) = plan.consumed {
            state.used[class_index(failure.class)][i] += 1;
        }
        if plan.task_attempt {
            state.task_used += 1;
        }
        match plan.grant {
            Some(true) => state.operator_grants = state.operator_grants.saturating_sub(1),
            Some(false) => state.rule_grant_used = true,
            None => {}
        }
        if plan.step.action.is_retry() {
            state.previous_delay_ms = plan.step.delay_ms;
        }
        if failure.class == Class::PolicyDenied && state.denied.is_none() {
            state.denied = Some(ctx.tool.clone().unwrap_or_else(|| "a tool".to_owned()));
        }
        if plan.retries_tool
            && let Some(h) = health
        {
            h.budget.try_spend(now);
        }
        plan.step
    }

    /// The step `next` would give, changing nothing.
    pub fn peek(
        &self,
        task: &str,
        failure: &Classification,
        ctx: &Context,
        now: Timestamp,
    ) -> Step {
        let state = self.tasks.peek(task).cloned().unwrap_or_default();
        let mut health = ctx.tool.as_deref().map(|tool| {
            self.tools
                .peek(tool)
                .cloned()
                .unwrap_or_else(|| self.fresh_health())
        });
        if let Some(h) = health.as_mut()
            && counts_against_tool(failure.class)
        {
            h.breaker.record_failure(now);
        }
        plan(
            &self.table,
            self.seed,
            task,
            &state,
            health.as_mut(),
            failure,
            ctx,
            now,
            false,
        )
        .step
    }

    /// Forgets a task's counters.
    pub fn reset(&mut self, task: &str) {
        self.tasks.pop(task);
    }

    /// An operator grants one retry to the task's next unclassified failure.
    pub fn grant(&mut self, task: &str) {
        if !self.tasks.contains(task) {
            self.tasks.put(task.to_owned(), TaskState::default());
        }
        if let Some(state) = self.tasks.get_mut(task) {
            state.operator_grants = state.operator_grants.saturating_add(1);
        }
    }

    /// A call to a tool succeeded: its breaker and budget hear of it.
    pub fn record_success(&mut self, tool: &str, now: Timestamp) {
        let h = self.health(tool);
        h.breaker.record_success(now);
        h.budget.record_success(now);
    }

    /// A call to a tool failed outside `next` (reported by an outcome): its breaker hears of it
    /// when the class says something about the tool.
    pub fn record_failure(&mut self, tool: &str, class: Class, now: Timestamp) {
        if counts_against_tool(class) {
            self.health(tool).breaker.record_failure(now);
        }
    }

    /// A tool's breaker and budget, as they stand.
    pub fn tool_views(&self, tool: &str, now: Timestamp) -> Option<(BreakerView, BudgetView)> {
        self.tools
            .peek(tool)
            .map(|h| (h.breaker.view(now), h.budget.view(now)))
    }

    fn fresh_health(&self) -> ToolHealth {
        ToolHealth {
            breaker: Breaker::new(self.table.breaker),
            budget: RetryBudget::new(self.table.budget),
        }
    }

    fn health(&mut self, tool: &str) -> &mut ToolHealth {
        if !self.tools.contains(tool) {
            let fresh = self.fresh_health();
            self.tools.put(tool.to_owned(), fresh);
        }
        self.tools.get_mut(tool).expect("inserted above")
    }
}

/// Appends a number's digits (the hot path avoids the formatting machinery).
fn write_number(out: &mut String, n: u32) {
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + u8::try_from(rest % 10).unwrap_or(0);
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|d| char::from(*d)));
}

/// A class's row in the counters: its place in [`ALL_CLASSES`], which lists them in
/// declaration order.
fn class_index(class: Class) -> usize {
    class as usize
}

/// Decides the step; `admit` says whether the breaker may change (a probe let through).
#[allow(clippy::too_many_arguments)]
fn plan(
    table: &StrategyTable,
    seed: u64,
    task: &str,
    state: &TaskState,
    mut health: Option<&mut ToolHealth>,
    failure: &Classification,
    ctx: &Context,
    now: Timestamp,
    admit: bool,
) -> Plan {
    let class = failure.class;
    let strategies = table.strategies(class);
    let used = &state.used[class_index(class)];
    let class_max: u32 = strategies
        .iter()
        .filter(|s| !s.action.is_terminal())
        .map(|s| s.max_attempts)
        .sum();
    let class_used: u32 = used.iter().map(|u| u32::from(*u)).sum();
    let task_max = table.limits.task_max_attempts;
    let mut notes: Vec<String> = Vec::new();
    let tool_name = ctx.tool.as_deref().unwrap_or("the tool");
    let views = |health: &Option<&mut ToolHealth>| {
        health
            .as_ref()
            .map(|h| (h.breaker.view(now), h.budget.view(now)))
    };
    let finish = |action: Action,
                  hint: String,
                  delay_ms: u64,
                  defer_until: Option<Timestamp>,
                  spend: Spend,
                  reason: String,
                  views: Option<(BreakerView, BudgetView)>| {
        let attempts = Attempts {
            class_used: class_used + u32::from(spend == Spend::Strategy),
            class_max,
            task_used: state.task_used + u32::from(spend != Spend::Nothing),
            task_max,
        };
        let escalation = (action == Action::Escalate).then(|| Escalation {
            to: table.limits.escalate_to.clone(),
            why: reason.clone(),
        });
        let (breaker, budget) = views.map_or((None, None), |(b, g)| (Some(b), Some(g)));

        Step {
            class,
            action,
            hint,
            delay_ms,
            defer_until,
            attempts,
            breaker,
            budget,
            escalation,
            reason,
        }
    };
    // Placeholders are written straight into the hint, and only those the template uses.
    let slots = |delay: u64, attempt: u32, max: u32| {
        move |name: &str, out: &mut String| {
            match name {
                // With no tool named, a hint that opens with it still starts a sentence.
                "tool" if out.is_empty() && ctx.tool.is_none() => out.push_str("The tool"),
                "tool" => out.push_str(tool_name),
                "operation" => {
                    out.push_str(ctx.operation.as_deref().unwrap_or("this operation"));
                }
                "error" => out.push_str(ctx.error.as_deref().unwrap_or(&failure.reason)),
                "retry_after" => match failure.retry_after_ms {
                    Some(ms) => write_human_ms(out, ms),
                    None => out.push_str("none"),
                },
                "delay" => write_human_ms(out, delay),
                "class" => out.push_str(class.as_str()),
                "attempt" => write_number(out, attempt),
                "max_attempts" => write_number(out, max),
                "task" => out.push_str(task),
                _ => return false,
            }
            true
        }
    };
    // A policy denial is a prohibition: once a task met one, nothing the agent does next on
    // that task — another tool, another approach, a request for leave — is anything but stop.
    let denied_before = state.denied.as_deref();
    let asks_more = ctx
        .request
        .is_some_and(|r| !matches!(r, Action::Stop | Action::Escalate));
    if denied_before.is_some() || (class == Class::PolicyDenied && asks_more) {
        let by = denied_before.unwrap_or(tool_name);
        let mut reason = format!(
            "this task was stopped by a policy denial of {by}; a fallback, a retry or any other way around it is refused"
        );
        if let Some(request) = ctx.request {
            reason = format!("a request for `{}` is refused: {reason}", request.as_str());
        }
        let hint = DENIED.render(slots(0, 1, 1));
        return Plan {
            step: finish(
                Action::Stop,
                hint,
                0,
                None,
                Spend::Nothing,
                reason,
                views(&health),
            ),
            consumed: None,
            task_attempt: false,
            grant: None,
            retries_tool: false,
        };
    }

    if state.task_used >= task_max {
        // A prohibition or an unknown failure stays a stop: the cap never turns it into a
        // hand-off that might be read as leave to try again.
        let action = if matches!(class, Class::PolicyDenied | Class::Unclassified) {
            Action::Stop
        } else {
            Action::Escalate
        };
        let reason = format!(
            "this task has used all {task_max} of its attempts across every class; a person must decide what happens next"
        );
        let hint = format!(
            "Stop retrying: the task has spent its {task_max} attempts. Hand it to a person."
        );
        return Plan {
            step: finish(
                action,
                hint,
                0,
                None,
                Spend::Nothing,
                reason,
                views(&health),
            ),
            consumed: None,
            task_attempt: false,
            grant: None,
            retries_tool: false,
        };
    }

    // An unclassified failure gets one retry only when an operator or a configured rule grants it.
    if class == Class::Unclassified {
        let by_rule = table.grants.iter().find(|g| {
            !state.rule_grant_used
                && g.tool
                    .as_deref()
                    .is_none_or(|t| ctx.tool.as_deref() == Some(t))
                && g.error
                    .is_match(ctx.error.as_deref().unwrap_or(&failure.reason))
        });
        let grant = if state.operator_grants > 0 {
            Some((true, "an operator granted one retry".to_owned()))
        } else {
            by_rule.map(|g| {
                (
                    false,
                    format!("grant rule `{}` allows one retry: {}", g.id, g.reason),
                )
            })
        };
        if let Some((by_operator, why)) = grant {
            let mut jitter = Jitter::new(
                seed,
                &[backoff::task_hash(task), u64::from(state.task_used)],
            );
            let delay = match failure.retry_after_ms {
                Some(h) => backoff::hinted_ms(&table.backoff, h, &mut jitter),
                None => backoff::delay_ms(&table.backoff, table.backoff.kind, 0, 0, &mut jitter),
            };
            let hint = GRANTED_RETRY.render(slots(delay, 1, 1));
            let reason = format!("unclassified ({}); {why}", failure.reason);
            return Plan {
                step: finish(
                    Action::RetrySame,
                    hint,
                    delay,
                    None,
                    Spend::Task,
                    reason,
                    views(&health),
                ),
                consumed: None,
                task_attempt: true,
                grant: Some(by_operator),
                retries_tool: true,
            };
        }
    }

    for (i, strategy) in strategies.iter().enumerate() {
        let action = strategy.action;
        if !action.is_terminal() && u32::from(used[i]) >= strategy.max_attempts {
            continue;
        }
        if action.repeats_call() && !failure.retryable {
            notes.push(format!(
                "`{}` skipped: the failure is not retryable",
                action.as_str()
            ));
            continue;
        }
        if action == Action::FallbackTool && !failure.fallback_allowed {
            notes.push("`fallback_tool` skipped: this failure allows no fallback tool".to_owned());
            continue;
        }
        if action.is_retry()
            && let Some(h) = health.as_ref()
            && !h.budget.can_spend(now)
        {
            notes.push(format!(
                "`{}` skipped: the retry budget of {tool_name} is empty",
                action.as_str()
            ));
            continue;
        }
        if action.calls_same_tool()
            && let Some(h) = health.as_mut()
        {
            let admission = if admit {
                h.breaker.admit(now)
            } else {
                h.breaker.peek(now)
            };
            if let Admission::Rejected { until } = admission {
                let views = views(&health);
                let wait_ms = u64::try_from(until.duration_since(now).as_millis()).unwrap_or(0);
                let mut open = String::with_capacity(96);
                open.push_str("the circuit breaker of ");
                open.push_str(tool_name);
                open.push_str(" is open for another ");
                write_human_ms(&mut open, wait_ms);
                return if failure.fallback_allowed {
                    let hint = BREAKER_FALLBACK.render(slots(0, 1, 1));
                    Plan {
                        step: finish(
                            Action::FallbackTool,
                            hint,
                            0,
                            None,
                            Spend::Task,
                            {
                                open.push_str("; a fallback tool is allowed");
                                open
                            },
                            views,
                        ),
                        consumed: None,
                        task_attempt: true,
                        grant: None,
                        retries_tool: false,
                    }
                } else {
                    let hint = BREAKER_WAIT.render(slots(wait_ms, 1, 1));
                    Plan {
                        step: finish(
                            Action::Wait,
                            hint,
                            wait_ms,
                            Some(until),
                            Spend::Task,
                            {
                                open.push_str("; no fallback is allowed, so wait");
                                open
                            },
                            views,
                        ),
                        consumed: None,
                        task_attempt: true,
                        grant: None,
                        retries_tool: false,
                    }
                };
            }
        }
        let attempt = u32::from(used[i]);
        let mut delay = strategy.cooldown_ms;
        if action.is_retry() {
            let mut jitter = Jitter::new(
                seed,
                &[backoff::task_hash(task), u64::from(state.task_used)],
            );
            let computed = match failure.retry_after_ms {
                // The jitter on a hint never pushes a wait that fits past the longest wait.
                Some(hint) if hint <= table.limits.max_wait_ms => {
                    backoff::hinted_ms(&table.backoff, hint, &mut jitter)
                        .min(table.limits.max_wait_ms)
                }
                Some(hint) => backoff::hinted_ms(&table.backoff, hint, &mut jitter),
                None => backoff::delay_ms(
                    &table.backoff,
                    strategy.backoff.unwrap_or(table.backoff.kind),
                    attempt,
                    state.previous_delay_ms,
                    &mut jitter,
                ),
            };
            delay = delay.max(computed);
        }
        let mut action = action;
        let mut defer_until = None;
        // "transient: strategy 1 of 3 (`retry_same`), attempt 2 of 3": the part before the
        // attempt is the strategy's own, written when the table was built.
        let mut reason = String::with_capacity(strategy.reason_prefix.len() + 16);
        reason.push_str(&strategy.reason_prefix);
        write_number(&mut reason, attempt + 1);
        reason.push_str(" of ");
        write_number(&mut reason, strategy.max_attempts);
        let mut hint = strategy
            .hint
            .render(slots(delay, attempt + 1, strategy.max_attempts));
        if delay > table.limits.max_wait_ms {
            let long = format!(
                "the wait of {} is longer than the longest wait backstop asks an agent to sleep ({})",
                human_ms(delay),
                human_ms(table.limits.max_wait_ms)
            );
            match table.limits.long_wait {
                LongWait::Defer => {
                    action = Action::Wait;
                    defer_until = now
                        .checked_add(SignedDuration::from_millis(
                            i64::try_from(delay).unwrap_or(i64::MAX),
                        ))
                        .ok();
                    reason = format!("{reason}; {long}: park the task until then");
                    hint = PARK.render(slots(delay, attempt + 1, strategy.max_attempts));
                }
                LongWait::Escalate => {
                    let hint = TOO_LONG.render(slots(delay, attempt + 1, strategy.max_attempts));
                    return Plan {
                        step: finish(
                            Action::Escalate,
                            hint,
                            0,
                            None,
                            Spend::Nothing,
                            format!("{reason}; {long}"),
                            views(&health),
                        ),
                        consumed: None,
                        task_attempt: false,
                        grant: None,
                        retries_tool: false,
                    };
                }
            }
        }
        let earlier = &strategies[..i];
        if action.is_terminal() && earlier.iter().any(|s| !s.action.is_terminal()) {
            let spent: Vec<String> = earlier
                .iter()
                .map(|s| format!("{} ×{}", s.action.as_str(), s.max_attempts))
                .collect();
            reason = format!(
                "every strategy for {class} is spent ({}); {} now",
                spent.join(", "),
                action.as_str()
            );
        }
        if !notes.is_empty() {
            reason = format!("{reason} ({})", notes.join("; "));
        }
        let consumed = !action.is_terminal();
        let retries_tool = action.is_retry();
        let views = views(&health);
        return Plan {
            step: finish(
                action,
                hint,
                delay,
                defer_until,
                if consumed {
                    Spend::Strategy
                } else {
                    Spend::Nothing
                },
                reason,
                views,
            ),
            consumed: consumed.then_some(i),
            task_attempt: consumed,
            grant: None,
            retries_tool,
        };
    }

    let spent: Vec<String> = strategies
        .iter()
        .map(|s| format!("{} ×{}", s.action.as_str(), s.max_attempts))
        .collect();
    let mut reason = format!(
        "every strategy for {class} is spent ({}); retrying further would repeat what already failed",
        spent.join(", ")
    );
    if !notes.is_empty() {
        reason = format!("{reason} ({})", notes.join("; "));
    }
    let hint = SPENT.render(slots(0, 1, 1));
    Plan {
        step: finish(
            Action::Escalate,
            hint,
            0,
            None,
            Spend::Nothing,
            reason,
            views(&health),
        ),
        consumed: None,
        task_attempt: false,
        grant: None,
        retries_tool: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_digits() {
        for n in [0, 7, 10, 1234, u32::MAX] {
            let mut out = String::from("#");
            write_number(&mut out, n);
            assert_eq!(out, format!("#{n}"));
        }
    }
}
