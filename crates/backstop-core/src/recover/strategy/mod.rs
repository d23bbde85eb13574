//! The strategy table: for each failure class, an ordered list of what to do next.
//!
//! The built-in table is `rules/strategies.toml`; a user file replaces the list of any class it
//! names and any setting it gives. Loading lists every issue with its path.

mod load;
mod template;

use std::collections::BTreeMap;

use regex::Regex;
use serde::{Deserialize, Serialize};

use self::load::{build, merge, parse_raw, prefixed};
pub use self::template::{Template, human_ms, write_human_ms};
use super::breaker::BreakerConfig;
use super::budget::BudgetConfig;
use crate::class::Class;
use crate::issue::Issue;

/// The built-in strategy table, embedded from `rules/strategies.toml`.
pub const DEFAULT_STRATEGIES: &str = include_str!("../../../../../rules/strategies.toml");

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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// The call may have taken effect and is not safe to send again: check whether it did
    /// (the hint says how), and send it again only if it did not, under an idempotency key.
    Reconcile,
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
            Action::Reconcile => "reconcile",
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
                | Action::Reconcile
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
    /// The start of a step's reason, before its attempt counts ("transient: strategy 1 of 3
    /// (`retry_same`)").
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
    /// Live tasks a caller may have (counters not yet past their window): past it, a new task
    /// is refused, and nobody's counters are dropped.
    pub tasks: usize,
    /// Tools a caller may name (breakers and budgets not yet past their window).
    pub tools: usize,
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
    /// Per tool, the ordered, finite chain of tools a `fallback_tool` step may name
    /// (`[tools.search] fallbacks = ["search-b", "search-c"]`).
    pub fallbacks: BTreeMap<String, Vec<String>>,
    /// Per tool, what its calls say of resending them (`[tools.payments] idempotent = false,
    /// reconcile = "..."`); a tool not named here is judged by its operation's HTTP method.
    pub calls: BTreeMap<String, CallSettings>,
    /// Each tool's circuit breaker.
    pub breaker: BreakerConfig,
    /// Each tool's retry budget.
    pub budget: BudgetConfig,
}

/// What a tool's settings say of resending its calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallSettings {
    /// Whether sending a call to it again cannot do its effect twice; `None` leaves it to the
    /// call (its key, its HTTP method).
    pub idempotent: Option<bool>,
    /// How to check whether a call to it took effect, for a `reconcile` step's hint.
    pub reconcile: Option<String>,
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
        StrategyTable::load_all(user.as_slice())
    }

    /// The built-in table with user files (`(origin, text)`) over it, each over the ones
    /// before.
    ///
    /// # Errors
    /// Every issue found, each path prefixed with its file's origin (the last file's for a
    /// table that does not hold together once merged).
    pub fn load_all(users: &[(&str, &str)]) -> Result<StrategyTable, Vec<Issue>> {
        let mut table = parse_raw(DEFAULT_STRATEGIES).map_err(|i| prefixed("default", i))?;
        let mut issues = Vec::new();
        for (origin, text) in users {
            match parse_raw(text) {
                Ok(over) => merge(&mut table, over),
                Err(found) => issues.extend(prefixed(origin, found)),
            }
        }
        if !issues.is_empty() {
            return Err(issues);
        }
        let last = users.last().map_or("default", |(origin, _)| origin);
        build(table).map_err(|i| prefixed(last, i))
    }

    /// The tools left to fall back to after `tool` failed, in order: the rest of the chain it
    /// belongs to (its own chain, or the one it is a fallback in); `None` when it is in no
    /// chain.
    pub fn fallbacks_after(&self, tool: &str) -> Option<&[String]> {
        if let Some(chain) = self.fallbacks.get(tool) {
            return Some(chain);
        }
        self.fallbacks.values().find_map(|chain| {
            let at = chain.iter().position(|t| t == tool)?;
            Some(&chain[at + 1..])
        })
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
    // The one path loading takes: what it refuses is what this finds.
    StrategyTable::load_all(&[("", text)])
        .err()
        .unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::ALL_CLASSES;

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
        assert_eq!(table.limits.tasks, 10_000);
        assert_eq!(table.limits.tools, 4096);
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
    fn forbidden_actions() {
        assert!(forbidden(Class::PolicyDenied, Action::FallbackTool));
        assert!(forbidden(Class::PolicyDenied, Action::RetrySame));
        assert!(!forbidden(Class::PolicyDenied, Action::Stop));
        assert!(forbidden(Class::PartialSuccess, Action::RetrySame));
        assert!(forbidden(Class::QuotaExhausted, Action::Wait));
        assert!(!forbidden(Class::Transient, Action::RetrySame));
    }
}
