//! Planning one step: the strategy table, the task's counters and the tool's health, turned
//! into what the agent does next. `Recovery::next` commits what the plan used.

use std::sync::LazyLock;

use jiff::{SignedDuration, Timestamp};

use super::{Attempts, Context, Escalation, Step, TaskState, ToolHealth};
use crate::class::Class;
use crate::classify::Classification;
use crate::recover::backoff::{self, Jitter};
use crate::recover::breaker::Admission;
use crate::recover::idempotency::{self, Resend};
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
    reconcile: Template,
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
    reconcile: Template::parse(
        "{tool} may have done {operation} before this failure ({error}), and sending it again could do it twice. Do not call it again yet: first check whether it took effect, and send it again only if it did not, under an idempotency key.",
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

/// Who granted the one retry an unclassified failure got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Grant {
    /// An operator (`POST /v1/grants`): one of the task's operator grants is used.
    Operator,
    /// A configured grant rule: the task's one rule grant is used.
    Rule,
}

/// What `plan` decided, for `next` to commit.
pub(super) struct Plan {
    pub(super) step: Step,
    /// The strategy consumed, if any.
    pub(super) consumed: Option<usize>,
    /// Whether the step uses one of the task's attempts.
    pub(super) task_attempt: bool,
    /// The grant used, if any.
    pub(super) grant: Option<Grant>,
    /// Whether the step sends the same call to the same tool again.
    pub(super) retries_tool: bool,
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

/// What the step answers to: the failure, the task's counters, and the moment.
pub(super) struct Inputs<'a> {
    pub(super) table: &'a StrategyTable,
    pub(super) seed: u64,
    pub(super) task: &'a str,
    pub(super) state: &'a TaskState,
    pub(super) failure: &'a Classification,
    pub(super) ctx: &'a Context,
    pub(super) now: Timestamp,
}

/// A step before its counters, breaker and budget are filled in.
struct Draft {
    action: Action,
    hint: String,
    delay_ms: u64,
    defer_until: Option<Timestamp>,
    spend: Spend,
    /// This step's attempt of its strategy and the attempts the strategy allows, when the
    /// step is a strategy's attempt.
    strategy_attempt: Option<(u32, u32)>,
    reason: String,
    /// What about the task, not the failure, decided this step, for a person to read; `None`
    /// when the failure itself did.
    situation: Option<String>,
}

impl Draft {
    /// A step that waits for nothing and uses nothing: a stop or an escalation.
    fn final_step(action: Action, hint: String, reason: String) -> Draft {
        Draft {
            action,
            hint,
            delay_ms: 0,
            defer_until: None,
            spend: Spend::Nothing,
            strategy_attempt: None,
            reason,
            situation: None,
        }
    }
}

/// One planning: the inputs and what follows from them for every step it may give.
struct Planner<'a> {
    inputs: &'a Inputs<'a>,
    class: Class,
    tool_name: &'a str,
    class_used: u32,
    class_max: u32,
}

impl<'a> Planner<'a> {
    fn new(inputs: &'a Inputs<'a>) -> Planner<'a> {
        let class = inputs.failure.class;
        let class_max = inputs
            .table
            .strategies(class)
            .iter()
            .filter(|s| !s.action.is_terminal())
            .map(|s| s.max_attempts)
            .sum();
        let class_used = inputs.state.used[class_index(class)]
            .iter()
            .map(|u| u32::from(*u))
            .sum();
        Planner {
            inputs,
            class,
            tool_name: inputs.ctx.tool.as_deref().unwrap_or("the tool"),
            class_used,
            class_max,
        }
    }

    /// The step a draft becomes, with the counters it leaves and the tool's state.
    fn finish(&self, draft: Draft, health: Option<&ToolHealth>) -> Step {
        let Inputs {
            table,
            state,
            now,
            failure,
            ..
        } = *self.inputs;
        let attempts = Attempts {
            class_used: self.class_used + u32::from(draft.spend == Spend::Strategy),
            class_max: self.class_max,
            strategy_used: draft.strategy_attempt.map_or(0, |(used, _)| used),
            strategy_max: draft.strategy_attempt.map_or(0, |(_, max)| max),
            task_used: state.task_used + u32::from(draft.spend != Spend::Nothing),
            task_max: table.limits.task_max_attempts,
        };
        let escalation = (draft.action == Action::Escalate).then(|| Escalation {
            to: table.limits.escalate_to.clone(),
            why: draft.reason.clone(),
        });
        Step {
            class: self.class,
            action: draft.action,
            hint: draft.hint,
            delay_ms: draft.delay_ms,
            defer_until: draft.defer_until,
            attempts,
            breaker: health.map(|h| h.breaker.view(now)),
            budget: health.map(|h| h.budget.view(now)),
            escalation,
            fallback_tool: None,
            reason: draft.reason,
            explanation: match draft.situation {
                Some(situation) => format!("{situation} This failure: {}", failure.reason),
                None => failure.reason.clone(),
            },
            failed_approach: None,
        }
    }

    /// A template's placeholders, written straight into the hint, and only those it uses.
    fn slots(&self, delay: u64, attempt: u32, max: u32) -> impl Fn(&str, &mut String) -> bool {
        let Inputs {
            task, failure, ctx, ..
        } = *self.inputs;
        let (class, tool_name) = (self.class, self.tool_name);
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
    }

    /// A policy denial is a prohibition: once a task met one, nothing the agent does next on
    /// that task — another tool, another approach, a request for leave — is anything but stop.
    fn denied(&self) -> Option<Draft> {
        let ctx = self.inputs.ctx;
        let denied_before = self.inputs.state.denied.as_deref();
        let asks_more = ctx
            .request
            .is_some_and(|r| !matches!(r, Action::Stop | Action::Escalate));
        if denied_before.is_none() && !(self.class == Class::PolicyDenied && asks_more) {
            return None;
        }
        let by = denied_before.unwrap_or(self.tool_name);
        let mut reason = format!(
            "this task was stopped by a policy denial of {by}; a fallback, a retry or any other way around it is refused"
        );
        if let Some(request) = ctx.request {
            reason = format!("a request for `{}` is refused: {reason}", request.as_str());
        }
        let hint = HINTS.denied.render(self.slots(0, 1, 1));
        let mut draft = Draft::final_step(Action::Stop, hint, reason);
        if let Some(by) = denied_before {
            draft.situation = Some(format!(
                "This task was stopped by an earlier policy denial of {by}: nothing else is tried \
                 on it until an operator resets it."
            ));
        }
        Some(draft)
    }

    /// A task that has used all its attempts stops or goes to a person.
    fn capped(&self) -> Option<Draft> {
        let task_max = self.inputs.table.limits.task_max_attempts;
        if self.inputs.state.task_used < task_max {
            return None;
        }
        // A prohibition or an unknown failure stays a stop: the cap never turns it into a
        // hand-off that might be read as leave to try again.
        let action = if matches!(self.class, Class::PolicyDenied | Class::Unclassified) {
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
        let mut draft = Draft::final_step(action, hint, reason);
        draft.situation = Some(format!(
            "This task has used all {task_max} attempts it may spend on any failure."
        ));
        Some(draft)
    }

    /// An unclassified failure gets one retry only when an operator or a configured rule
    /// grants it.
    fn granted(&self) -> Option<(Draft, Grant)> {
        let Inputs {
            table,
            seed,
            task,
            state,
            failure,
            ctx,
            ..
        } = *self.inputs;
        if self.class != Class::Unclassified {
            return None;
        }
        let (grant, why) = if state.operator_grants > 0 {
            (Grant::Operator, "an operator granted one retry".to_owned())
        } else {
            let rule = table.grants.iter().find(|g| {
                !state.rule_grant_used
                    && g.tool
                        .as_deref()
                        .is_none_or(|t| ctx.tool.as_deref() == Some(t))
                    && g.error
                        .is_match(ctx.error.as_deref().unwrap_or(&failure.reason))
            })?;
            (
                Grant::Rule,
                format!("grant rule `{}` allows one retry: {}", rule.id, rule.reason),
            )
        };
        let mut jitter = Jitter::new(
            seed,
            &[backoff::task_hash(task), u64::from(state.task_used)],
        );
        let delay = match failure.retry_after_ms {
            Some(h) => backoff::hinted_ms(&table.backoff, h, &mut jitter),
            None => backoff::delay_ms(&table.backoff, table.backoff.kind, 0, 0, &mut jitter),
        };
        let draft = Draft {
            action: Action::RetrySame,
            hint: HINTS.granted_retry.render(self.slots(delay, 1, 1)),
            delay_ms: delay,
            defer_until: None,
            spend: Spend::Task,
            strategy_attempt: None,
            reason: format!("unclassified ({}); {why}", failure.reason),
            situation: None,
        };
        Some((draft, grant))
    }

    /// Why strategy `action` cannot be used for this failure now, if it cannot (a note).
    fn skipped(&self, action: Action, health: Option<&ToolHealth>) -> Option<String> {
        let failure = self.inputs.failure;
        if action.repeats_call() && !failure.retryable {
            return Some(format!(
                "`{}` skipped: the failure is not retryable",
                action.as_str()
            ));
        }
        if action == Action::FallbackTool && !failure.fallback_allowed {
            return Some(
                "`fallback_tool` skipped: this failure allows no fallback tool".to_owned(),
            );
        }
        if action.is_retry() && health.is_some_and(|h| !h.budget.can_spend(self.inputs.now)) {
            return Some(format!(
                "`{}` skipped: the retry budget of {} is empty",
                action.as_str(),
                self.tool_name
            ));
        }
        None
    }

    /// The step when the tool's breaker refuses the call: a fallback where one is allowed,
    /// else a wait until the breaker may let a call through.
    fn breaker_open(&self, until: Timestamp) -> Draft {
        let now = self.inputs.now;
        let wait_ms = u64::try_from(until.duration_since(now).as_millis()).unwrap_or(0);
        let mut reason = String::with_capacity(96);
        reason.push_str("the circuit breaker of ");
        reason.push_str(self.tool_name);
        reason.push_str(" is open for another ");
        write_human_ms(&mut reason, wait_ms);
        if self.inputs.failure.fallback_allowed {
            reason.push_str("; a fallback tool is allowed");
            Draft {
                action: Action::FallbackTool,
                hint: HINTS.breaker_fallback.render(self.slots(0, 1, 1)),
                delay_ms: 0,
                defer_until: None,
                spend: Spend::Task,
                strategy_attempt: None,
                reason,
                situation: None,
            }
        } else {
            reason.push_str("; no fallback is allowed, so wait");
            Draft {
                action: Action::Wait,
                hint: HINTS.breaker_wait.render(self.slots(wait_ms, 1, 1)),
                delay_ms: wait_ms,
                defer_until: Some(until),
                spend: Spend::Task,
                strategy_attempt: None,
                reason,
                situation: None,
            }
        }
    }

    /// How long strategy `i` waits on its `attempt` (0-based): its cooldown, or for a retry
    /// the backoff or the server's hint, whichever is longer.
    fn delay(&self, i: usize, attempt: u32) -> u64 {
        let Inputs {
            table,
            seed,
            task,
            state,
            failure,
            ..
        } = *self.inputs;
        let strategy = &table.strategies(self.class)[i];
        if !strategy.action.is_retry() {
            return strategy.cooldown_ms;
        }
        let mut jitter = Jitter::new(
            seed,
            &[backoff::task_hash(task), u64::from(state.task_used)],
        );
        let computed = match failure.retry_after_ms {
            // The jitter on a hint never pushes a wait that fits past the longest wait.
            Some(hint) if hint <= table.limits.max_wait_ms => {
                backoff::hinted_ms(&table.backoff, hint, &mut jitter).min(table.limits.max_wait_ms)
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
        strategy.cooldown_ms.max(computed)
    }

    /// The step strategy `i` gives, with the notes on strategies skipped before it; an
    /// escalation (`Err`) when its wait is too long and the table says to escalate instead.
    fn strategy_step(&self, i: usize, notes: &[String]) -> Result<Draft, Draft> {
        let Inputs {
            table, state, now, ..
        } = *self.inputs;
        let strategies = table.strategies(self.class);
        let strategy = &strategies[i];
        let attempt = u32::from(state.used[class_index(self.class)][i]);
        let (number, max) = (attempt + 1, strategy.max_attempts);
        let delay = self.delay(i, attempt);
        let mut action = strategy.action;
        let mut defer_until = None;
        // "transient: strategy 1 of 3 (`retry_same`), attempt 2 of 3 of this strategy, 2 of 4
        // for the class": the part before the counts is the strategy's own, written when the
        // table was built; the counts are the step's `attempts`, so the two always agree. A
        // stop or an escalation spends no attempt and names none.
        let spends = !strategy.action.is_terminal();
        let mut reason = String::with_capacity(strategy.reason_prefix.len() + 56);
        reason.push_str(&strategy.reason_prefix);
        if spends {
            reason.push_str(", attempt ");
            write_number(&mut reason, number);
            reason.push_str(" of ");
            write_number(&mut reason, max);
            reason.push_str(" of this strategy, ");
            write_number(&mut reason, self.class_used + 1);
            reason.push_str(" of ");
            write_number(&mut reason, self.class_max);
            reason.push_str(" for the class");
        }
        let mut hint = strategy.hint.render(self.slots(delay, number, max));
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
                    hint = HINTS.park.render(self.slots(delay, number, max));
                }
                LongWait::Escalate => {
                    let hint = HINTS.too_long.render(self.slots(delay, number, max));
                    let reason = format!("{reason}; {long}");
                    return Err(Draft::final_step(Action::Escalate, hint, reason));
                }
            }
        }
        let earlier = &strategies[..i];
        if action.is_terminal() && earlier.iter().any(|s| !s.action.is_terminal()) {
            reason = format!(
                "every strategy for {} is spent ({}); {} now",
                self.class,
                spent_list(earlier),
                action.as_str()
            );
        }
        if !notes.is_empty() {
            reason = format!("{reason} ({})", notes.join("; "));
        }
        Ok(Draft {
            action,
            hint,
            delay_ms: delay,
            defer_until,
            spend: if action.is_terminal() {
                Spend::Nothing
            } else {
                Spend::Strategy
            },
            strategy_attempt: spends.then_some((number, max)),
            reason,
            situation: None,
        })
    }

    /// How this call may be sent again, and why: its key, then its tool's setting (the
    /// operator's word is not overridden by the caller's), what the call says of itself, its
    /// HTTP method; a call nothing speaks for is taken as safe to resend.
    fn resend(&self) -> (Resend<'a>, String) {
        let ctx = self.inputs.ctx;
        if let Some(key) = ctx.idempotency_key.as_deref() {
            return (
                Resend::UnderKey(key),
                format!("it was sent under idempotency key `{key}`"),
            );
        }
        let setting = ctx.tool.as_deref().and_then(|tool| {
            let idempotent = self.inputs.table.calls.get(tool)?.idempotent?;
            Some((
                idempotent,
                format!("the strategies set {tool} as not idempotent"),
            ))
        });
        let method = || {
            let operation = ctx.operation.as_deref()?;
            let idempotent = idempotency::method_idempotent(operation)?;
            let method = operation
                .split_ascii_whitespace()
                .next()
                .unwrap_or_default();
            Some((
                idempotent,
                format!(
                    "{} is not idempotent (RFC 9110)",
                    method.to_ascii_uppercase()
                ),
            ))
        };
        let said = ctx
            .idempotent
            .map(|idempotent| (idempotent, "the call says it is not idempotent".to_owned()));
        match setting.or(said).or_else(method) {
            Some((false, why)) => (Resend::Unsafe, why),
            _ => (Resend::Safe, String::new()),
        }
    }

    /// A resend of a call that may have taken effect and cannot safely be sent twice becomes
    /// a `reconcile` (check first; it uses what the resend would have); a resend under the
    /// call's idempotency key stays, and says to keep the key.
    fn guard_resend(&self, mut draft: Draft) -> Draft {
        let ctx = self.inputs.ctx;
        if !draft.action.is_retry()
            || idempotency::refused_before_acting(self.class)
            || ctx.may_have_taken_effect == Some(false)
        {
            return draft;
        }
        match self.resend() {
            (Resend::Safe, _) => draft,
            (Resend::UnderKey(key), _) => {
                draft
                    .hint
                    .push_str(" Send it again under the same idempotency key (`");
                draft.hint.push_str(key);
                draft
                    .hint
                    .push_str("`), never a new one: a new key could do it twice.");
                draft
            }
            (Resend::Unsafe, why) => {
                let mut hint = HINTS.reconcile.render(self.slots(0, 1, 1));
                let check = ctx
                    .tool
                    .as_deref()
                    .and_then(|tool| self.inputs.table.calls.get(tool)?.reconcile.as_deref());
                if let Some(check) = check {
                    hint.push_str(" To check: ");
                    hint.push_str(check);
                }
                Draft {
                    action: Action::Reconcile,
                    hint,
                    delay_ms: 0,
                    defer_until: None,
                    reason: format!(
                        "{}; `{}` held back: the call may have taken effect and {why}, so reconcile before any resend",
                        draft.reason,
                        draft.action.as_str()
                    ),
                    situation: Some(format!(
                        "The call may have taken effect before it failed, and {why}: sending it again could do it twice."
                    )),
                    ..draft
                }
            }
        }
    }

    /// Every strategy is spent (or skipped): a person decides.
    fn spent(&self, notes: &[String]) -> Draft {
        let strategies = self.inputs.table.strategies(self.class);
        let mut reason = format!(
            "every strategy for {} is spent ({}); retrying further would repeat what already failed",
            self.class,
            spent_list(strategies)
        );
        if !notes.is_empty() {
            reason = format!("{reason} ({})", notes.join("; "));
        }
        let hint = HINTS.spent.render(self.slots(0, 1, 1));
        Draft::final_step(Action::Escalate, hint, reason)
    }
}

/// Strategies as `retry_same ×3, fallback_tool ×1`.
fn spent_list(strategies: &[crate::recover::strategy::Strategy]) -> String {
    let listed: Vec<String> = strategies
        .iter()
        .map(|s| format!("{} ×{}", s.action.as_str(), s.max_attempts))
        .collect();
    listed.join(", ")
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

/// Decides the step, in order: a policy stop, the task's cap, an unclassified failure's
/// grant, then the class's strategies (skipping those the failure, the budget or the breaker
/// rule out), then a person. `admit` says whether the breaker may change (a probe let
/// through); `peek` plans with it off.
pub(super) fn plan(inputs: &Inputs<'_>, mut health: Option<&mut ToolHealth>, admit: bool) -> Plan {
    let planner = Planner::new(inputs);
    if let Some(draft) = planner.denied().or_else(|| planner.capped()) {
        return Plan::nothing(planner.finish(draft, health.as_deref()));
    }
    if let Some((draft, grant)) = planner.granted() {
        let draft = planner.guard_resend(draft);
        let retries_tool = draft.action.is_retry();
        return Plan {
            step: planner.finish(draft, health.as_deref()),
            consumed: None,
            task_attempt: true,
            grant: Some(grant),
            retries_tool,
        };
    }
    let class = inputs.failure.class;
    let used = &inputs.state.used[class_index(class)];
    let mut notes: Vec<String> = Vec::new();
    for (i, strategy) in inputs.table.strategies(class).iter().enumerate() {
        let action = strategy.action;
        if !action.is_terminal() && u32::from(used[i]) >= strategy.max_attempts {
            continue;
        }
        if let Some(note) = planner.skipped(action, health.as_deref()) {
            notes.push(note);
            continue;
        }
        if action.calls_same_tool()
            && let Some(h) = health.as_deref_mut()
        {
            let admission = if admit {
                h.breaker.admit(inputs.now)
            } else {
                h.breaker.peek(inputs.now)
            };
            if let Admission::Rejected { until } = admission {
                let draft = planner.breaker_open(until);
                return Plan::task_only(planner.finish(draft, health.as_deref()));
            }
        }
        return match planner.strategy_step(i, &notes) {
            Ok(draft) => {
                let draft = planner.guard_resend(draft);
                let consumed = draft.spend == Spend::Strategy;
                let retries_tool = draft.action.is_retry();
                Plan {
                    step: planner.finish(draft, health.as_deref()),
                    consumed: consumed.then_some(i),
                    task_attempt: consumed,
                    grant: None,
                    retries_tool,
                }
            }
            Err(escalation) => Plan::nothing(planner.finish(escalation, health.as_deref())),
        };
    }
    Plan::nothing(planner.finish(planner.spent(&notes), health.as_deref()))
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
