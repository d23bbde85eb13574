//! A task as it stands: its counters per class, the tools it used and their health, whether a
//! policy denial stopped it, and the step the next failure of each class would get (a peek,
//! changing nothing).

use jiff::Timestamp;
use serde::Serialize;

use super::{Context, Recovery, Step, class_index};
use crate::class::{ALL_CLASSES, Class};
use crate::classify::Classification;
use crate::recover::breaker::BreakerView;
use crate::recover::budget::BudgetView;

/// The tools a task's view remembers (the most recent).
pub(super) const TOOLS_KEPT: usize = 8;

/// A task as it stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskView {
    /// Attempts the task spent on any class.
    pub task_used: u32,
    /// Attempts the task may spend.
    pub task_max: u32,
    /// Attempts per class, for the classes the task has met.
    pub classes: Vec<ClassCount>,
    /// The policy denial that stopped the task (`stop` for every later failure until an
    /// operator resets it), or `None`.
    pub stopped_by: Option<String>,
    /// Retries an operator granted for unclassified failures, not yet used.
    pub operator_grants: u8,
    /// The tools the task used most recently, with their breaker and budget.
    pub tools: Vec<TaskTool>,
    /// The step the next failure of each class would get, for the last tool used.
    pub next: Vec<NextStep>,
    /// The caller's failed approaches on the tools the task used (spent by any of its tasks).
    pub failed_approaches: Vec<super::FailedApproach>,
}

/// One class's attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClassCount {
    /// The class.
    pub class: Class,
    /// Attempts spent on it.
    pub used: u32,
}

/// A tool the task used, and its health now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskTool {
    /// The tool.
    pub tool: String,
    /// Its circuit breaker.
    pub breaker: Option<BreakerView>,
    /// Its retry budget.
    pub budget: Option<BudgetView>,
}

/// The step a failure of one class would get now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NextStep {
    /// The class of the failure.
    pub class: Class,
    /// The step.
    pub step: Step,
}

impl Recovery {
    /// The task as it stands (a task with no counters — never failed, reset, or forgotten by
    /// the bound — shows none).
    pub fn task_view(&self, task: &str, now: Timestamp) -> TaskView {
        let state = self.live_task(task, now).cloned().unwrap_or_default();
        let classes = ALL_CLASSES
            .iter()
            .map(|&class| ClassCount {
                class,
                used: state.used[class_index(class)]
                    .iter()
                    .map(|u| u32::from(*u))
                    .sum(),
            })
            .filter(|c| c.used > 0)
            .collect();
        let tools = state
            .tools
            .iter()
            .map(|tool| {
                let (breaker, budget) = self.tool_views(tool, now).unzip();
                TaskTool {
                    tool: tool.clone(),
                    breaker,
                    budget,
                }
            })
            .collect();
        let ctx = Context {
            tool: state.tools.last().cloned(),
            ..Context::default()
        };
        let next = ALL_CLASSES
            .iter()
            .map(|&class| NextStep {
                class,
                step: self.peek(task, &of_class(class), &ctx, now),
            })
            .collect();
        TaskView {
            task_used: state.task_used,
            task_max: self.table.limits.task_max_attempts,
            classes,
            stopped_by: state
                .denied
                .as_ref()
                .map(|tool| format!("a policy denial of {tool}")),
            operator_grants: state.operator_grants,
            failed_approaches: self.approaches_on(task, &state.tools, now),
            tools,
            next,
        }
    }
}

/// "an" before a class name that starts with a vowel ("an auth failure"), "a" otherwise.
fn article_for(class: Class) -> &'static str {
    if class.to_string().starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// A failure of `class` with the class's defaults and no evidence: what a peek asks about.
fn of_class(class: Class) -> Classification {
    Classification {
        class,
        retryable: class.default_retryable(),
        fallback_allowed: class.default_fallback_allowed(),
        rule: None,
        evidence: Vec::new(),
        retry_after_ms: None,
        reason: format!("{} {class} failure", article_for(class)),
    }
}
