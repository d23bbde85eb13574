//! Planning one step: the strategy table, the task's counters and the tool's health, turned
//! into what the agent does next. `Hinter::next` commits what the plan used.

use std::sync::LazyLock;

use jiff::{SignedDuration, Timestamp};

use super::{Attempts, Context, Escalation, Step, TaskState, ToolHealth};
use crate::class::Class;
use crate::classify::Classification;
use crate::recover::backoff::{self, Jitter};
use crate::recover::breaker::{Admission, BreakerView};
use crate::recover::budget::BudgetView;
use crate::recover::strategy::{
    Action, LongWait, StrategyTable, Template, human_ms, write_human_ms,
};

/// The hints backstop writes itself (not from the table), parsed once.
struct BuiltinHints {
    denied: Template,
    granted_retry: Template,
    breaker_fallback: Template,
    breaker_wait: Template,
    park: Template,
    too_long: Template,
    spent: Template,
}

static HINTS: LazyLock<BuiltinHints> = LazyLock::new(|| BuiltinHints {
    denied: Template::parse(
        "Stop: this task met a policy denial. Do not retry, do not try another tool, do not work around it; report it.",
    ),
    granted_retry: Template::parse(
        "Retry the same call once after {delay}; if it fails again, stop and report it.",
    ),
    breaker_fallback: Template::parse(
        "{tool} is failing too often to call now; use another tool that can do {operation}.",
    ),
    breaker_wait: Template::parse(
        "{tool} is failing too often to call now; wait {delay} until it may be tried again.",
    ),
    park: Template::parse(
        "Do not sleep: park this task and come back after {delay}, then retry {tool}.",
    ),
    too_long: Template::parse(
        "{tool} asks for a wait of {delay}, too long to sleep; hand the task to a person.",
    ),
    spent: Template::parse(
        "Every way backstop knows to recover from this {class} failure of {tool} is spent; hand the task to a person.",
    ),
});

/// What a step uses up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Spend {
    /// Nothing: a stop or an escalation.
    Nothing,
    /// One of the task's attempts, not a strategy's (a granted retry, a fallback around an open
    /// breaker).
    Task,
    /// One of the task's attempts and one of the strategy's.
    Strategy,
}

impl Plan {
    /// A step that uses nothing: a stop, an escalation.
    fn nothing(step: Step) -> Plan {
        Plan {
            step,
            consumed: None,
            task_attempt: false,
            grant: None,
            retries_tool: false,
        }
    }

    /// A step that uses one of the task's attempts but no strategy's.
    fn task_only(step: Step) -> Plan {
        Plan {
            step,
            consumed: None,
            task_attempt: true,
            grant: None,
            retries_tool: false,
        }
    }
}

/// What `plan` decided, for `next` to commit.
pub(super) struct Plan {
    pub(super) step: Step,
    /// The strategy consumed, if any.
    pub(super) consumed: Option<usize>,
    /// Whether the step uses one of the task's attempts.
    pub(super) task_attempt: bool,
    /// A grant used: by an operator (true) or a rule (false).
    pub(super) grant: Option<bool>,
    /// Whether the step sends the same call to the same tool again.
    pub(super) retries_tool: bool,
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
pub(super) fn class_index(class: Class) -> usize {
    class as usize
}

/// Decides the step; `admit` says whether the breaker may change (a probe let through).
#[allow(clippy::too_many_arguments)]
pub(super) fn plan(
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
            fallback_tool: None,
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
        let hint = HINTS.denied.render(slots(0, 1, 1));
        return Plan::nothing(finish(
            Action::Stop,
            hint,
            0,
            None,
            Spend::Nothing,
            reason,
            views(&health),
        ));
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
        return Plan::nothing(finish(
            action,
            hint,
            0,
            None,
            Spend::Nothing,
            reason,
            views(&health),
        ));
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
            let hint = HINTS.granted_retry.render(slots(delay, 1, 1));
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
                    let hint = HINTS.breaker_fallback.render(slots(0, 1, 1));
                    Plan::task_only(finish(
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
                    ))
                } else {
                    let hint = HINTS.breaker_wait.render(slots(wait_ms, 1, 1));
                    Plan::task_only(finish(
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
                    ))
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
                    hint = HINTS
                        .park
                        .render(slots(delay, attempt + 1, strategy.max_attempts));
                }
                LongWait::Escalate => {
                    let hint =
                        HINTS
                            .too_long
                            .render(slots(delay, attempt + 1, strategy.max_attempts));
                    return Plan::nothing(finish(
                        Action::Escalate,
                        hint,
                        0,
                        None,
                        Spend::Nothing,
                        format!("{reason}; {long}"),
                        views(&health),
                    ));
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
    let hint = HINTS.spent.render(slots(0, 1, 1));
    Plan::nothing(finish(
        Action::Escalate,
        hint,
        0,
        None,
        Spend::Nothing,
        reason,
        views(&health),
    ))
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
