//! Reading strategy files: TOML into raw tables, a user table over the built-in one, and the
//! checked [`StrategyTable`], every issue listed with its path.

use std::collections::BTreeMap;

use jiff::SignedDuration;
use serde::Deserialize;

use super::{
    Action, BackoffConfig, BackoffKind, CallSettings, GrantRule, Limits, LongWait, MAX_STRATEGIES,
    PLACEHOLDERS, Strategy, StrategyTable, Template, forbidden,
};
use crate::class::{ALL_CLASSES, Class};
use crate::classify::matcher::compile_regex;
use crate::input;
use crate::issue::{Issue, join_path};
use crate::recover::breaker::BreakerConfig;
use crate::recover::budget::BudgetConfig;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTable {
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    backoff: RawBackoff,
    #[serde(default)]
    classes: BTreeMap<String, Vec<RawStrategy>>,
    #[serde(default)]
    grants: Vec<RawGrant>,
    #[serde(default)]
    tools: BTreeMap<String, RawTool>,
    breaker: Option<BreakerConfig>,
    budget: Option<BudgetConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTool {
    #[serde(default)]
    fallbacks: Vec<String>,
    idempotent: Option<bool>,
    reconcile: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    task_max_attempts: Option<u32>,
    max_wait: Option<String>,
    long_wait: Option<LongWait>,
    tasks: Option<usize>,
    tools: Option<usize>,
    escalate_to: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBackoff {
    kind: Option<BackoffKind>,
    base: Option<String>,
    multiplier: Option<f64>,
    cap: Option<String>,
    hint_jitter: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStrategy {
    action: Action,
    #[serde(default = "one")]
    max_attempts: u32,
    cooldown: Option<String>,
    backoff: Option<BackoffKind>,
    hint: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGrant {
    id: String,
    tool: Option<String>,
    error: String,
    reason: String,
}

fn one() -> u32 {
    1
}

pub(super) fn prefixed(origin: &str, issues: Vec<Issue>) -> Vec<Issue> {
    issues
        .into_iter()
        .map(|mut issue| {
            issue.path = if origin.is_empty() {
                issue.path
            } else if issue.path.is_empty() {
                origin.to_owned()
            } else {
                format!("{origin}:{}", issue.path)
            };
            issue
        })
        .collect()
}

pub(super) fn parse_raw(text: &str) -> Result<RawTable, Vec<Issue>> {
    let table = input::toml_table(text).map_err(|issue| vec![issue])?;
    input::typed_toml(&table).map_err(|issue| vec![issue])
}

pub(super) fn merge(base: &mut RawTable, over: RawTable) {
    let l = over.limits;
    base.limits.task_max_attempts = l.task_max_attempts.or(base.limits.task_max_attempts);
    base.limits.max_wait = l.max_wait.or(base.limits.max_wait.take());
    base.limits.long_wait = l.long_wait.or(base.limits.long_wait);
    base.limits.tasks = l.tasks.or(base.limits.tasks);
    base.limits.tools = l.tools.or(base.limits.tools);
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
    base.tools.extend(over.tools);
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

#[allow(
    clippy::too_many_lines,
    reason = "one check per table of the strategies format, in the order the format lists them"
)]
pub(super) fn build(raw: RawTable) -> Result<StrategyTable, Vec<Issue>> {
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
            "the live tasks a caller may have must be at least 1 (0 would keep no counters, so nothing could be limited)",
        ));
    }
    let tools = l.tools.unwrap_or(0);
    if tools == 0 {
        issues.push(Issue::new(
            "limits.tools",
            "out_of_range",
            "the tools a caller may name must be at least 1 (0 would refuse every call that names one)",
        ));
    }
    let limits = Limits {
        task_max_attempts,
        max_wait_ms: duration_ms(l.max_wait.as_deref(), "limits.max_wait", &mut issues),
        long_wait: l.long_wait.unwrap_or(LongWait::Defer),
        tasks,
        tools,
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
    let calls = call_settings(&raw.tools, &mut issues);
    let fallbacks = fallback_chains(raw.tools, &mut issues);
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
            fallbacks,
            calls,
            breaker,
            budget,
        })
    } else {
        Err(issues)
    }
}

/// What each tool says of resending its calls, checked: a reconcile hint is one line of
/// 1 to 500 characters.
fn call_settings(
    tools: &BTreeMap<String, RawTool>,
    issues: &mut Vec<Issue>,
) -> BTreeMap<String, CallSettings> {
    let mut settings = BTreeMap::new();
    for (tool, raw) in tools {
        if raw.idempotent.is_none() && raw.reconcile.is_none() {
            continue;
        }
        if let Some(hint) = &raw.reconcile
            && (hint.trim().is_empty() || hint.chars().count() > 500 || hint.contains('\n'))
        {
            issues.push(Issue::new(
                join_path(&join_path("tools", tool), "reconcile"),
                "bad_hint",
                "a reconcile hint is one line of 1 to 500 characters saying how to check whether the call took effect",
            ));
        }
        settings.insert(
            tool.clone(),
            CallSettings {
                idempotent: raw.idempotent,
                reconcile: raw.reconcile.clone(),
            },
        );
    }
    settings
}

/// Each tool's fallback chain, checked: names given, none twice, never the tool itself.
fn fallback_chains(
    tools: BTreeMap<String, RawTool>,
    issues: &mut Vec<Issue>,
) -> BTreeMap<String, Vec<String>> {
    let mut chains = BTreeMap::new();
    for (tool, raw) in tools {
        let path = join_path(&join_path("tools", &tool), "fallbacks");
        let mut seen: Vec<&str> = Vec::new();
        for (i, fallback) in raw.fallbacks.iter().enumerate() {
            let at = format!("{path}[{i}]");
            if fallback.trim().is_empty() || fallback.len() > 200 {
                issues.push(Issue::new(
                    &at,
                    "bad_name",
                    "a tool name is 1 to 200 characters",
                ));
            } else if *fallback == tool {
                issues.push(Issue::new(
                    &at,
                    "self_fallback",
                    "a tool cannot fall back to itself",
                ));
            } else if seen.contains(&fallback.as_str()) {
                issues.push(Issue::new(
                    &at,
                    "duplicate",
                    format!("`{fallback}` is already in the chain"),
                ));
            }
            seen.push(fallback);
        }
        chains.insert(tool, raw.fallbacks);
    }
    chains
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
                    "{class}: strategy {} of {} (`{}`)",
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
