//! The strategy table: for each failure class, an ordered list of what to do next.
//!
//! The built-in table is `rules/strategies.toml`; a user file replaces the list of any class it
//! names and any setting it gives. Loading lists every issue with its path.

use std::collections::BTreeMap;

use jiff::SignedDuration;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::breaker::BreakerConfig;
use super::budget::BudgetConfig;
use crate::class::{ALL_CLASSES, Class};
use crate::classify::matcher::compile_regex;
use crate::issue::{Issue, join_path, serde_path};

/// The built-in strategy table, embedded from `rules/strategies.toml`.
pub const DEFAULT_STRATEGIES: &str = include_str!("../../../../rules/strategies.toml");

/// The most strategies one class may list.
pub const MAX_STRATEGIES: usize = 8;

/// The placeholders a hint template may use.
pub const PLACEHOLDERS: [&str; 9] = [
    "tool",
    "operation",
    "error",
    "retry_after",
    "delay",
    "class",
    "attempt",
    "max_attempts",
    "task",
];

/// What an agent does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Send the same call again.
    RetrySame,
    /// Send it again to a stronger model or tier.
    RetryPromoted,
    /// Wait as long as the step says, then retry.
    Wait,
    /// Correct the input, then send it again.
    FixInput,
    /// Reach the goal another way.
    ChangeApproach,
    /// Widen the query.
    BroadenQuery,
    /// Ask for less.
    ReduceScope,
    /// Use another tool that can do the same.
    FallbackTool,
    /// Work with what is available locally.
    LocalOnly,
    /// Ask for a larger budget.
    IncreaseBudget,
    /// Undo or finish what a partial call left: resend only the failed part.
    Compensate,
    /// Skip this step and record why.
    SkipAndLog,
    /// Stop and report.
    Stop,
    /// Hand the task to a person.
    Escalate,
}

impl Action {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::RetrySame => "retry_same",
            Action::RetryPromoted => "retry_promoted",
            Action::Wait => "wait",
            Action::FixInput => "fix_input",
            Action::ChangeApproach => "change_approach",
            Action::BroadenQuery => "broaden_query",
            Action::ReduceScope => "reduce_scope",
            Action::FallbackTool => "fallback_tool",
            Action::LocalOnly => "local_only",
            Action::IncreaseBudget => "increase_budget",
            Action::Compensate => "compensate",
            Action::SkipAndLog => "skip_and_log",
            Action::Stop => "stop",
            Action::Escalate => "escalate",
        }
    }

    /// Whether the action sends the same call to the same tool again, as it is.
    pub fn is_retry(self) -> bool {
        matches!(
            self,
            Action::RetrySame | Action::RetryPromoted | Action::Wait
        )
    }

    /// Whether the action sends the very same call again, which a failure that is not
    /// retryable forbids (a promoted retry changes the model, so it is not this).
    pub fn repeats_call(self) -> bool {
        matches!(self, Action::RetrySame | Action::Wait)
    }

    /// Whether the action calls the same tool again (changed or not).
    pub fn calls_same_tool(self) -> bool {
        matches!(
            self,
            Action::RetrySame
                | Action::RetryPromoted
                | Action::Wait
                | Action::FixInput
                | Action::ChangeApproach
                | Action::BroadenQuery
                | Action::ReduceScope
                | Action::Compensate
        )
    }

    /// Whether the action ends the attempts (no further call).
    pub fn is_terminal(self) -> bool {
        matches!(self, Action::Stop | Action::Escalate | Action::SkipAndLog)
    }
}

/// How a computed delay grows and spreads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackoffKind {
    /// A random delay between 0 and the exponential delay (the default).
    FullJitter,
    /// Half the exponential delay plus a random half.
    EqualJitter,
    /// A random delay between the base and three times the previous delay.
    Decorrelated,
    /// The exponential delay itself, no randomness.
    None,
}

/// What happens to a wait longer than the longest a step may ask an agent to sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LongWait {
    /// The step is `wait` with `defer_until`: park the task and come back then.
    Defer,
    /// The step is `escalate`.
    Escalate,
}

/// One strategy of a class.
#[derive(Debug, Clone, PartialEq)]
pub struct Strategy {
    /// What to do.
    pub action: Action,
    /// How many times this strategy may be used for one task.
    pub max_attempts: u32,
    /// The least delay before acting, in milliseconds.
    pub cooldown_ms: u64,
    /// The backoff for this strategy, when not the table's.
    pub backoff: Option<BackoffKind>,
    /// The hint template (`{tool}`, `{error}`, `{delay}` ...).
    pub hint: Template,
    /// The start of a step's reason, up to the attempt number ("transient: strategy 1 of 3
    /// (`retry_same`), attempt ").
    pub reason_prefix: String,
}

/// Delays: the curve and its bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    /// The default kind.
    pub kind: BackoffKind,
    /// The first delay, in milliseconds.
    pub base_ms: u64,
    /// How much each attempt multiplies the delay.
    pub multiplier: f64,
    /// The longest computed delay, in milliseconds.
    pub cap_ms: u64,
    /// The most added on top of a server's retry hint, in milliseconds.
    pub hint_jitter_ms: u64,
}

/// Limits that apply across classes.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Attempts per task across all classes.
    pub task_max_attempts: u32,
    /// The longest a step asks an agent to sleep, in milliseconds.
    pub max_wait_ms: u64,
    /// What a longer wait becomes.
    pub long_wait: LongWait,
    /// Tasks whose counters are kept.
    pub tasks: usize,
    /// Who an escalation goes to.
    pub escalate_to: String,
}

/// A configured grant: one retry for an unclassified failure whose evidence it names.
#[derive(Debug, Clone)]
pub struct GrantRule {
    /// Named in the step's reason.
    pub id: String,
    /// The tool it applies to (any when absent).
    pub tool: Option<String>,
    /// The error text it names (case-insensitive regex).
    pub error: Regex,
    /// Why one retry is safe.
    pub reason: String,
}

/// The whole table.
#[derive(Debug, Clone)]
pub struct StrategyTable {
    /// Cross-class limits.
    pub limits: Limits,
    /// The delay curve.
    pub backoff: BackoffConfig,
    /// Each class's strategies, indexed by class.
    pub classes: BTreeMap<Class, Vec<Strategy>>,
    /// Configured grants for unclassified failures.
    pub grants: Vec<GrantRule>,
    /// Each tool's circuit breaker.
    pub breaker: BreakerConfig,
    /// Each tool's retry budget.
    pub budget: BudgetConfig,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    backoff: RawBackoff,
    #[serde(default)]
    classes: BTreeMap<String, Vec<RawStrategy>>,
    #[serde(default)]
    grants: Vec<RawGrant>,
    breaker: Option<BreakerConfig>,
    budget: Option<BudgetConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    task_max_attempts: Option<u32>,
    max_wait: Option<String>,
    long_wait: Option<LongWait>,
    tasks: Option<usize>,
    escalate_to: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackoff {
    kind: Option<BackoffKind>,
    base: Option<String>,
    multiplier: Option<f64>,
    cap: Option<String>,
    hint_jitter: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStrategy {
    action: Action,
    #[serde(default = "one")]
    max_attempts: u32,
    cooldown: Option<String>,
    backoff: Option<BackoffKind>,
    hint: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrant {
    id: String,
    tool: Option<String>,
    error: String,
    reason: String,
}

fn one() -> u32 {
    1
}

impl StrategyTable {
    /// The built-in table.
    pub fn builtin() -> StrategyTable {
        StrategyTable::load(None).expect("the built-in strategies are checked by tests")
    }

    /// The built-in table with a user file (`(origin, text)`) over it.
    ///
    /// # Errors
    /// Every issue found, each path prefixed with its file's origin.
    pub fn load(user: Option<(&str, &str)>) -> Result<StrategyTable, Vec<Issue>> {
        let mut table = parse_raw(DEFAULT_STRATEGIES).map_err(|i| prefixed("default", i))?;
        if let Some((origin, text)) = user {
            let over = parse_raw(text).map_err(|i| prefixed(origin, i))?;
            merge(&mut table, over);
            return build(table).map_err(|i| prefixed(origin, i));
        }
        build(table).map_err(|i| prefixed("default", i))
    }

    /// The strategies of a class.
    pub fn strategies(&self, class: Class) -> &[Strategy] {
        self.classes.get(&class).map_or(&[], Vec::as_slice)
    }
}

/// Checks one strategy file on its own, over the built-in table.
///
/// Paths are relative to the file (`limits.tasks`), as `rules check` gives them; `_origin` is
/// the file's name, which the caller shows.
pub fn check_strategies(text: &str, _origin: &str) -> Vec<Issue> {
    let mut table = match parse_raw(DEFAULT_STRATEGIES) {
        Ok(table) => table,
        Err(issues) => return prefixed("default", issues),
    };
    match parse_raw(text) {
        Ok(over) => {
            merge(&mut table, over);
            build(table).err().unwrap_or_default()
        }
        Err(issues) => issues,
    }
}

fn prefixed(origin: &str, issues: Vec<Issue>) -> Vec<Issue> {
    issues
        .into_iter()
        .map(|mut issue| {
            issue.path = if issue.path.is_empty() {
                origin.to_owned()
            } else {
                format!("{origin}:{}", issue.path)
            };
            issue
        })
        .collect()
}

fn parse_raw(text: &str) -> Result<RawTable, Vec<Issue>> {
    let de = toml::Deserializer::parse(text).map_err(|e| {
        vec![Issue::new(
            "",
            "bad_toml",
            e.to_string().trim_end().to_owned(),
        )]
    })?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let code = if e.inner().to_string().contains("unknown field") {
            "unknown_key"
        } else {
            "wrong_type"
        };
        let message = e.inner().message().to_owned();
        vec![Issue::new(serde_path(e.path()), code, message)]
    })
}

fn merge(base: &mut RawTable, over: RawTable) {
    let l = over.limits;
    base.limits.task_max_attempts = l.task_max_attempts.or(base.limits.task_max_attempts);
    base.limits.max_wait = l.max_wait.or(base.limits.max_wait.take());
    base.limits.long_wait = l.long_wait.or(base.limits.long_wait);
    base.limits.tasks = l.tasks.or(base.limits.tasks);
    base.limits.escalate_to = l.escalate_to.or(base.limits.escalate_to.take());
    let b = over.backoff;
    base.backoff.kind = b.kind.or(base.backoff.kind);
    base.backoff.base = b.base.or(base.backoff.base.take());
    base.backoff.multiplier = b.multiplier.or(base.backoff.multiplier);
    base.backoff.cap = b.cap.or(base.backoff.cap.take());
    base.backoff.hint_jitter = b.hint_jitter.or(base.backoff.hint_jitter.take());
    base.classes.extend(over.classes);
    let mut grants = over.grants;
    grants.append(&mut base.grants);
    base.grants = grants;
    base.breaker = over.breaker.or(base.breaker);
    base.budget = over.budget.or(base.budget);
}

/// A duration setting in milliseconds (`"200ms"`, `"2s"`, `"1m30s"`).
fn duration_ms(text: Option<&str>, path: &str, issues: &mut Vec<Issue>) -> u64 {
    let Some(text) = text else {
        issues.push(Issue::new(
            path,
            "missing",
            "a duration is needed here, like \"500ms\" or \"2s\"",
        ));
        return 0;
    };
    match text.parse::<SignedDuration>() {
        Ok(d) if !d.is_negative() => u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
        _ => {
            issues.push(Issue::new(
                path,
                "bad_duration",
                format!(
                    "`{text}` is not a duration; expected one like \"500ms\", \"2s\" or \"1m30s\""
                ),
            ));
            0
        }
    }
}

fn build(raw: RawTable) -> Result<StrategyTable, Vec<Issue>> {
    let mut issues = Vec::new();
    let l = raw.limits;
    let task_max_attempts = l.task_max_attempts.unwrap_or(0);
    if task_max_attempts == 0 {
        issues.push(Issue::new(
            "limits.task_max_attempts",
            "out_of_range",
            "must be at least 1",
        ));
    }
    let tasks = l.tasks.unwrap_or(0);
    if tasks == 0 {
        issues.push(Issue::new(
            "limits.tasks",
            "out_of_range",
            "the task bound must be at least 1 (0 would keep no counters, so nothing could be limited)",
        ));
    }
    let limits = Limits {
        task_max_attempts,
        max_wait_ms: duration_ms(l.max_wait.as_deref(), "limits.max_wait", &mut issues),
        long_wait: l.long_wait.unwrap_or(LongWait::Defer),
        tasks,
        escalate_to: l.escalate_to.unwrap_or_else(|| "a person".to_owned()),
    };
    let b = raw.backoff;
    let backoff = BackoffConfig {
        kind: b.kind.unwrap_or(BackoffKind::FullJitter),
        base_ms: duration_ms(b.base.as_deref(), "backoff.base", &mut issues),
        multiplier: b.multiplier.unwrap_or(2.0),
        cap_ms: duration_ms(b.cap.as_deref(), "backoff.cap", &mut issues),
        hint_jitter_ms: duration_ms(b.hint_jitter.as_deref(), "backoff.hint_jitter", &mut issues),
    };
    if !(backoff.multiplier.is_finite() && (1.0..=100.0).contains(&backoff.multiplier)) {
        issues.push(Issue::new(
            "backoff.multiplier",
            "out_of_range",
            "must be between 1.0 and 100.0",
        ));
    }
    if backoff.base_ms == 0 && b.base.is_some() {
        issues.push(Issue::new(
            "backoff.base",
            "out_of_range",
            "must be at least 1ms",
        ));
    }
    if backoff.cap_ms < backoff.base_ms {
        issues.push(Issue::new(
            "backoff.cap",
            "out_of_range",
            "must be at least backoff.base",
        ));
    }
    let mut classes = BTreeMap::new();
    for (name, list) in raw.classes {
        let path = join_path("classes", &name);
        let Ok(class) = name.parse::<Class>() else {
            issues.push(Issue::new(
                &path,
                "unknown_class",
                format!(
                    "unknown class `{name}`; expected one of: {}",
                    crate::class::class_names()
                ),
            ));
            continue;
        };
        classes.insert(class, build_class(class, &list, &path, &mut issues));
    }
    for class in ALL_CLASSES {
        if classes.get(&class).is_none_or(Vec::is_empty) {
            issues.push(Issue::new(
                join_path("classes", class.as_str()),
                "missing",
                "every class needs at least one strategy",
            ));
        }
    }
    let grants = raw
        .grants
        .into_iter()
        .enumerate()
        .filter_map(|(i, g)| {
            let path = format!("grants[{i}]");
            let error = match compile_regex(&g.error) {
                Ok(r) => Some(r),
                Err(e) => {
                    issues.push(Issue::new(
                        join_path(&path, "error"),
                        "bad_regex",
                        format!("not a valid regex: {e}"),
                    ));
                    None
                }
            };
            if g.reason.trim().is_empty() {
                issues.push(Issue::new(
                    join_path(&path, "reason"),
                    "needs_reason",
                    "say why one retry is safe",
                ));
            }
            Some(GrantRule {
                id: g.id,
                tool: g.tool,
                error: error?,
                reason: g.reason,
            })
        })
        .collect();
    let breaker = raw.breaker.unwrap_or_default();
    issues.extend(breaker.validate("breaker"));
    let budget = raw.budget.unwrap_or_default();
    issues.extend(budget.validate("budget"));
    if issues.is_empty() {
        Ok(StrategyTable {
            limits,
            backoff,
            classes,
            grants,
            breaker,
            budget,
        })
    } else {
        Err(issues)
    }
}

/// Actions a class may never take: a prohibition is never retried or worked around, a spent
/// quota is not retried, half-done effects are not resent whole, an unknown failure is not
/// retried without a grant.
pub fn forbidden(class: Class, action: Action) -> bool {
    match class {
        Class::PolicyDenied | Class::Unclassified => {
            !matches!(action, Action::Stop | Action::Escalate)
        }
        Class::QuotaExhausted => action.is_retry(),
        Class::PartialSuccess => matches!(action, Action::RetrySame | Action::RetryPromoted),
        _ => false,
    }
}

fn build_class(
    class: Class,
    list: &[RawStrategy],
    path: &str,
    issues: &mut Vec<Issue>,
) -> Vec<Strategy> {
    if list.len() > MAX_STRATEGIES {
        issues.push(Issue::new(
            path,
            "too_many",
            format!("at most {MAX_STRATEGIES} strategies a class"),
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, raw)| {
            let at = format!("{path}[{i}]");
            if forbidden(class, raw.action) {
                issues.push(Issue::new(
                    join_path(&at, "action"),
                    "forbidden_action",
                    format!("`{}` is never allowed for `{class}`", raw.action.as_str()),
                ));
            }
            if raw.max_attempts == 0 || raw.max_attempts > 1000 {
                issues.push(Issue::new(
                    join_path(&at, "max_attempts"),
                    "out_of_range",
                    "must be 1 to 1000",
                ));
            }
            check_template(&raw.hint, &join_path(&at, "hint"), issues);
            let cooldown_ms = match &raw.cooldown {
                Some(text) => duration_ms(Some(text), &join_path(&at, "cooldown"), issues),
                None => 0,
            };
            Strategy {
                action: raw.action,
                max_attempts: raw.max_attempts,
                cooldown_ms,
                backoff: raw.backoff,
                hint: Template::parse(&raw.hint),
                reason_prefix: format!(
                    "{class}: strategy {} of {} (`{}`), attempt ",
                    i + 1,
                    list.len(),
                    raw.action.as_str()
                ),
            }
        })
        .collect()
}

/// Every `{name}` in a template must be a known placeholder.
fn check_template(template: &str, path: &str, issues: &mut Vec<Issue>) {
    if template.trim().is_empty() {
        issues.push(Issue::new(
            path,
            "empty",
            "a hint tells the agent what to do; write one",
        ));
    }
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            issues.push(Issue::new(path, "bad_template", "a `{` is never closed"));
            return;
        };
        let name = &after[..close];
        if !PLACEHOLDERS.contains(&name) {
            issues.push(Issue::new(
                path,
                "unknown_placeholder",
                format!(
                    "unknown placeholder `{{{name}}}`; expected one of: {}",
                    PLACEHOLDERS.join(", ")
                ),
            ));
        }
        rest = &after[close + 1..];
    }
}

/// A hint template, split once into text and placeholders so that filling it is a walk, not
/// a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    text: String,
    /// Byte ranges of `text`: literal text, or a placeholder's name.
    parts: Vec<(bool, std::ops::Range<usize>)>,
}

impl Template {
    /// Splits a template; an unclosed `{` is kept as text.
    pub fn parse(text: &str) -> Template {
        let mut parts = Vec::new();
        let mut at = 0;
        while let Some(open) = text[at..].find('{').map(|i| at + i) {
            let Some(close) = text[open + 1..].find('}').map(|i| open + 1 + i) else {
                break;
            };
            if open > at {
                parts.push((false, at..open));
            }
            parts.push((true, open + 1..close));
            at = close + 1;
        }
        if at < text.len() {
            parts.push((false, at..text.len()));
        }
        Template {
            text: text.to_owned(),
            parts,
        }
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Fills the template, asking `write` to append each placeholder's value; a placeholder it
    /// does not know (`write` returns false) is kept as written.
    pub fn render(&self, mut write: impl FnMut(&str, &mut String) -> bool) -> String {
        let mut out = String::with_capacity(self.text.len() + 48);
        for (slot, range) in &self.parts {
            let piece = &self.text[range.clone()];
            if !*slot {
                out.push_str(piece);
            } else if !write(piece, &mut out) {
                out.push('{');
                out.push_str(piece);
                out.push('}');
            }
        }
        out
    }
}

/// Fills a template's placeholders from `(name, value)` pairs.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    fill_with(template, |name, out| {
        match values.iter().find(|(n, _)| *n == name) {
            Some((_, value)) => {
                out.push_str(value);
                true
            }
            None => false,
        }
    })
}

/// Fills a template, asking `write` to append each placeholder's value; a placeholder it
/// does not know (`write` returns false) is kept as written.
pub fn fill_with(template: &str, mut write: impl FnMut(&str, &mut String) -> bool) -> String {
    let mut out = String::with_capacity(template.len() + 48);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return out;
        };
        if !write(&after[..close], &mut out) {
            out.push_str(&rest[open..=open + close + 1]);
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// A delay for people: `250ms`, `1.5s`, `2m05s`.
pub fn human_ms(ms: u64) -> String {
    let mut out = String::with_capacity(8);
    write_human_ms(&mut out, ms);
    out
}

/// Appends a delay for people (see [`human_ms`]).
pub fn write_human_ms(out: &mut String, ms: u64) {
    use std::fmt::Write as _;
    let _ = if ms < 1000 {
        write!(out, "{ms}ms")
    } else if ms < 60_000 {
        let tenths = ms.div_ceil(100);
        if tenths.is_multiple_of(10) {
            write!(out, "{}s", tenths / 10)
        } else {
            write!(out, "{}.{}s", tenths / 10, tenths % 10)
        }
    } else if ms < 3_600_000 {
        let seconds = ms.div_ceil(1000);
        write!(out, "{}m{:02}s", seconds / 60, seconds % 60)
    } else {
        let minutes = ms.div_ceil(60_000);
        write!(out, "{}h{:02}m", minutes / 60, minutes % 60)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loading names the file in each path; checking leaves paths relative to the file.
    fn check_with_origin(text: &str, origin: &str) -> Vec<Issue> {
        let loaded = StrategyTable::load(Some((origin, text)))
            .err()
            .unwrap_or_default();
        let checked = check_strategies(text, origin);
        let relative: Vec<String> = loaded
            .iter()
            .map(|i| {
                i.path
                    .strip_prefix(&format!("{origin}:"))
                    .unwrap_or(&i.path)
                    .to_owned()
            })
            .collect();
        assert_eq!(
            relative,
            checked.iter().map(|i| i.path.clone()).collect::<Vec<_>>()
        );
        loaded
    }

    #[test]
    fn the_builtin_table_loads_and_covers_every_class() {
        let table = StrategyTable::builtin();
        for class in ALL_CLASSES {
            assert!(!table.strategies(class).is_empty(), "{class}");
        }
        assert_eq!(
            table.strategies(Class::PolicyDenied)[0].action,
            Action::Stop
        );
        assert_eq!(table.limits.tasks, 1024);
        assert_eq!(table.backoff.kind, BackoffKind::FullJitter);
    }

    #[test]
    fn a_user_file_replaces_a_class_and_single_settings() {
        let table = StrategyTable::load(Some((
            "mine.toml",
            "[limits]\ntasks = 10\n[[classes.transient]]\naction = \"escalate\"\nhint = \"call {tool}'s owner\"\n",
        )))
        .unwrap();
        assert_eq!(table.limits.tasks, 10);
        assert_eq!(table.limits.task_max_attempts, 12);
        assert_eq!(table.strategies(Class::Transient).len(), 1);
        assert_eq!(table.strategies(Class::RateLimited)[0].action, Action::Wait);
    }

    #[test]
    fn every_issue_is_listed_with_its_path() {
        let issues = check_with_origin(
            r#"
            [limits]
            tasks = 0
            max_wait = "soon"
            [backoff]
            multiplier = 0.5
            [[classes.policy_denied]]
            action = "fallback_tool"
            hint = "try {tool} elsewhere, {nope}"
            [[classes.sometimes]]
            action = "stop"
            hint = "x"
            [[classes.partial_success]]
            action = "retry_same"
            max_attempts = 0
            hint = "again"
            "#,
            "mine.toml",
        );
        let found: Vec<_> = issues
            .iter()
            .map(|i| (i.path.as_str(), i.code.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("mine.toml:limits.tasks", "out_of_range"),
                ("mine.toml:limits.max_wait", "bad_duration"),
                ("mine.toml:backoff.multiplier", "out_of_range"),
                (
                    "mine.toml:classes.partial_success[0].action",
                    "forbidden_action"
                ),
                (
                    "mine.toml:classes.partial_success[0].max_attempts",
                    "out_of_range"
                ),
                (
                    "mine.toml:classes.policy_denied[0].action",
                    "forbidden_action"
                ),
                (
                    "mine.toml:classes.policy_denied[0].hint",
                    "unknown_placeholder"
                ),
                ("mine.toml:classes.sometimes", "unknown_class"),
            ]
        );
    }

    #[test]
    fn structural_errors_name_their_path() {
        let issues = check_with_origin(
            "[[classes.transient]]\naction = \"pray\"\nhint = \"x\"",
            "f",
        );
        assert_eq!(issues[0].path, "f:classes.transient[0].action");
        assert!(issues[0].message.contains("pray"), "{issues:?}");
        let issues = check_with_origin("[limits]\ntaks = 3", "f");
        assert_eq!(
            (issues[0].path.as_str(), issues[0].code.as_str()),
            ("f:limits.taks", "unknown_key")
        );
    }

    #[test]
    fn templates_fill_and_keep_unknown_text() {
        assert_eq!(
            fill(
                "{tool} failed: {error}",
                &[("tool", "search"), ("error", "503")]
            ),
            "search failed: 503"
        );
        assert_eq!(fill("a {b} c", &[]), "a {b} c");
        assert_eq!(fill("open { only", &[]), "open { only");
    }

    #[test]
    fn a_parsed_template_renders_like_fill() {
        for text in [
            "{tool} failed: {error}",
            "no slots",
            "a {b} c {",
            "{x}{y}",
            "",
        ] {
            let values = [("tool", "search"), ("error", "503"), ("x", "1")];
            let rendered = Template::parse(text).render(|name, out| {
                match values.iter().find(|(n, _)| *n == name) {
                    Some((_, v)) => {
                        out.push_str(v);
                        true
                    }
                    None => false,
                }
            });
            assert_eq!(rendered, fill(text, &values), "{text}");
        }
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_ms(250), "250ms");
        assert_eq!(human_ms(1500), "1.5s");
        assert_eq!(human_ms(2000), "2s");
        assert_eq!(human_ms(125_000), "2m05s");
        assert_eq!(human_ms(3_600_122), "1h01m");
        assert_eq!(human_ms(7_200_000), "2h00m");
    }

    #[test]
    fn forbidden_actions() {
        assert!(forbidden(Class::PolicyDenied, Action::FallbackTool));
        assert!(forbidden(Class::PolicyDenied, Action::RetrySame));
        assert!(!forbidden(Class::PolicyDenied, Action::Stop));
        assert!(forbidden(Class::PartialSuccess, Action::RetrySame));
        assert!(forbidden(Class::QuotaExhausted, Action::Wait));
        assert!(!forbidden(Class::Transient, Action::RetrySame));
    }
}
