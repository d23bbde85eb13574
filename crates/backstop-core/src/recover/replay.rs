//! Replaying a recorded trace of call outcomes through the policy: what backstop would have
//! said at each step, and what that would have saved.
//!
//! A trace is JSON Lines, one call outcome a line, in time order:
//!
//! ```json
//! {"at": "2026-01-01T00:00:00Z", "task": "t1", "tool": "search", "outcome": "failure", "report": {"http_status": 503}}
//! {"at": "2026-01-01T00:00:01Z", "task": "t1", "tool": "search", "outcome": "success"}
//! ```

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::recovery::{Context, Recovery, Step};
use super::strategy::Action;
use crate::classify::{Classification, RuleSet, classify};
use crate::input;
use crate::issue::Issue;
use crate::report::Report;

/// A trace event with its line number and, for a failure, its parsed report.
pub type ParsedEvent = (usize, TraceEvent, Option<Report>);

/// One recorded call outcome.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceEvent {
    /// When the call ended.
    pub at: Timestamp,
    /// The agent's task.
    pub task: String,
    /// The tool called.
    pub tool: String,
    /// What was asked of it.
    #[serde(default)]
    pub operation: Option<String>,
    /// `success` or `failure`.
    pub outcome: Outcome,
    /// What the agent saw, for a failure.
    #[serde(default)]
    pub report: Option<serde_json::Value>,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It worked.
    Success,
    /// It failed; the event carries a report.
    Failure,
}

/// What backstop would have said about one event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayLine {
    /// The trace's line number.
    pub line: usize,
    /// When.
    pub at: Timestamp,
    /// The task.
    pub task: String,
    /// The tool.
    pub tool: String,
    /// How the call ended.
    pub outcome: Outcome,
    /// The failure's classification (failures only).
    pub classification: Option<Classification>,
    /// backstop's step (failures only).
    pub step: Option<Step>,
    /// Whether backstop would not have made this call at all: an earlier step for the same task
    /// and tool said stop, escalate or fall back, or asked for a wait that had not passed.
    pub unneeded: bool,
}

/// What a whole replay adds up to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReplayTotals {
    /// Events in the trace.
    pub events: usize,
    /// Failures among them.
    pub failures: usize,
    /// Steps that retried the same tool (`retry_same`, `retry_promoted`).
    pub retries: usize,
    /// Steps that waited.
    pub waits: usize,
    /// The time those retries and waits asked for, in milliseconds.
    pub waited_ms: u64,
    /// Steps that moved to another tool.
    pub fallbacks: usize,
    /// Steps that handed the task to a person.
    pub escalations: usize,
    /// Steps that stopped.
    pub stops: usize,
    /// Calls in the trace that backstop's earlier steps would have prevented.
    pub calls_saved: usize,
}

/// Parses a trace; every bad line is listed (`line 3: report.http_status: ...`).
///
/// # Errors
/// Every issue on every line: bad JSON, unknown fields, a failure without a report or a
/// success with one, a report that is refused, an event earlier than the one before it.
pub fn parse_trace(text: &str) -> Result<Vec<ParsedEvent>, Vec<Issue>> {
    let mut events = Vec::new();
    let mut issues = Vec::new();
    let mut last: Option<Timestamp> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let at_line = |path: &str| {
            if path.is_empty() {
                format!("line {n}")
            } else {
                format!("line {n}: {path}")
            }
        };
        let read = input::json_value(line)
            .and_then(|value| input::typed::<TraceEvent>(&value, input::Format::Json));
        let event = match read {
            Ok(event) => event,
            Err(issue) => {
                issues.push(Issue::new(at_line(&issue.path), "bad_event", issue.message));
                continue;
            }
        };
        if last.is_some_and(|l| event.at < l) {
            issues.push(Issue::new(
                at_line("at"),
                "out_of_order",
                format!(
                    "{} is earlier than the event before it; a trace is in time order",
                    event.at
                ),
            ));
        }
        last = Some(event.at);
        if event.task.trim().is_empty() || event.tool.trim().is_empty() {
            issues.push(Issue::new(
                at_line(""),
                "empty",
                "`task` and `tool` must not be empty",
            ));
        }
        let report = match (event.outcome, &event.report) {
            (Outcome::Failure, Some(json)) => match Report::from_value(json) {
                Ok(report) => Some(report),
                Err(found) => {
                    issues.extend(found.into_iter().map(|mut issue| {
                        issue.path = at_line(&crate::issue::join_path("report", &issue.path));
                        issue
                    }));
                    None
                }
            },
            (Outcome::Failure, None) => {
                issues.push(Issue::new(
                    at_line("report"),
                    "missing",
                    "a failure needs the report of what was seen",
                ));
                None
            }
            (Outcome::Success, Some(_)) => {
                issues.push(Issue::new(
                    at_line("report"),
                    "unexpected",
                    "a success has no report",
                ));
                None
            }
            (Outcome::Success, None) => None,
        };
        events.push((n, event, report));
    }
    if issues.is_empty() {
        Ok(events)
    } else {
        Err(issues)
    }
}

/// What a task may do with a tool after backstop's last step.
#[derive(Debug, Clone, Copy)]
enum Allowance {
    /// Calling again is what backstop said.
    Call { not_before: Timestamp },
    /// backstop said not to call this tool again for this task.
    Never,
}

/// Replays parsed events through a recovery.
pub fn replay(
    rules: &RuleSet,
    recovery: &mut Recovery,
    events: &[ParsedEvent],
) -> (Vec<ReplayLine>, ReplayTotals) {
    let mut lines = Vec::with_capacity(events.len());
    let mut totals = ReplayTotals::default();
    let mut allowances: std::collections::HashMap<(String, String), Allowance> =
        std::collections::HashMap::new();
    for (n, event, report) in events {
        totals.events += 1;
        let key = (event.task.clone(), event.tool.clone());
        // A call that succeeded is never a saved call, however early it came.
        let unneeded = event.outcome == Outcome::Failure
            && match allowances.get(&key) {
                Some(Allowance::Never) => true,
                Some(Allowance::Call { not_before }) => event.at < *not_before,
                None => false,
            };
        if unneeded {
            totals.calls_saved += 1;
        }
        let (classification, step) = match (event.outcome, report) {
            (Outcome::Success, _) => {
                recovery.record_success(&event.tool, event.at);
                allowances.remove(&key);
                (None, None)
            }
            (Outcome::Failure, Some(report)) => {
                totals.failures += 1;
                let c = classify(rules, report, event.at);
                let ctx = Context::for_report(
                    Context {
                        tool: Some(event.tool.clone()),
                        operation: event.operation.clone(),
                        ..Context::default()
                    },
                    report,
                );
                let step = recovery.next(&event.task, &c, &ctx, event.at);
                count(&mut totals, &step);
                allowances.insert(key, allowance(&step, event.at));
                (Some(c), Some(step))
            }
            (Outcome::Failure, None) => (None, None),
        };
        lines.push(ReplayLine {
            line: *n,
            at: event.at,
            task: event.task.clone(),
            tool: event.tool.clone(),
            outcome: event.outcome,
            classification,
            step,
            unneeded,
        });
    }
    (lines, totals)
}

fn count(totals: &mut ReplayTotals, step: &Step) {
    match step.action {
        Action::RetrySame | Action::RetryPromoted => totals.retries += 1,
        Action::Wait => totals.waits += 1,
        Action::FallbackTool => totals.fallbacks += 1,
        Action::Escalate => totals.escalations += 1,
        Action::Stop => totals.stops += 1,
        _ => {}
    }
    if step.action.is_retry() {
        totals.waited_ms += step.delay_ms;
    }
}

fn allowance(step: &Step, at: Timestamp) -> Allowance {
    if step.action.calls_same_tool() {
        let not_before = step.defer_until.unwrap_or_else(|| {
            at.checked_add(jiff::SignedDuration::from_millis(
                i64::try_from(step.delay_ms).unwrap_or(i64::MAX),
            ))
            .unwrap_or(at)
        });
        Allowance::Call { not_before }
    } else {
        Allowance::Never
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;
    use crate::recover::{RecoveryOptions, StrategyTable};

    fn run(trace: &str) -> (Vec<ReplayLine>, ReplayTotals) {
        let events = parse_trace(trace).unwrap();
        let mut recovery = Recovery::new(StrategyTable::builtin(), RecoveryOptions { seed: 1 });
        replay(&RuleSet::builtin(), &mut recovery, &events)
    }

    #[test]
    fn a_blind_retry_loop_after_a_policy_denial_is_all_saved() {
        let mut trace = String::new();
        for s in 0..5 {
            let _ = writeln!(
                trace,
                "{{\"at\": \"2026-01-01T00:00:0{s}Z\", \"task\": \"t\", \"tool\": \"shell\", \"outcome\": \"failure\", \"report\": {{\"message\": \"blocked by sandbox policy\"}}}}"
            );
        }
        let (lines, totals) = run(&trace);
        assert_eq!(lines[0].step.as_ref().unwrap().action, Action::Stop);
        assert_eq!(
            (totals.stops, totals.calls_saved, totals.retries),
            (5, 4, 0)
        );
        assert!(!lines[0].unneeded && lines[1].unneeded);
    }

    #[test]
    fn a_retry_before_the_delay_is_unneeded_and_a_success_clears() {
        let trace = concat!(
            "{\"at\": \"2026-01-01T00:00:00Z\", \"task\": \"t\", \"tool\": \"api\", \"outcome\": \"failure\", \"report\": {\"http_status\": 429, \"headers\": {\"retry-after\": \"10\"}}}\n",
            "{\"at\": \"2026-01-01T00:00:01Z\", \"task\": \"t\", \"tool\": \"api\", \"outcome\": \"failure\", \"report\": {\"http_status\": 429, \"headers\": {\"retry-after\": \"10\"}}}\n",
            "{\"at\": \"2026-01-01T00:00:30Z\", \"task\": \"t\", \"tool\": \"api\", \"outcome\": \"success\"}\n",
        );
        let (lines, totals) = run(trace);
        assert!(lines[1].unneeded, "called 1 s into a 10 s wait");
        assert!(!lines[2].unneeded);
        assert_eq!((totals.waits, totals.calls_saved), (2, 1));
        assert!(totals.waited_ms >= 20_000);
    }

    #[test]
    fn a_success_is_never_a_saved_call_even_inside_the_wait() {
        let trace = concat!(
            "{\"at\": \"2026-01-01T00:00:00Z\", \"task\": \"t\", \"tool\": \"api\", \"outcome\": \"failure\", \"report\": {\"http_status\": 429, \"headers\": {\"retry-after\": \"10\"}}}\n",
            "{\"at\": \"2026-01-01T00:00:05Z\", \"task\": \"t\", \"tool\": \"api\", \"outcome\": \"success\"}\n",
        );
        let (lines, totals) = run(trace);
        assert!(
            !lines[1].unneeded,
            "it worked: nothing was saved by not calling"
        );
        assert_eq!(totals.calls_saved, 0);
    }

    #[test]
    fn bad_lines_are_all_listed() {
        let trace = concat!(
            "{\"at\": \"2026-01-01T00:00:05Z\", \"task\": \"t\", \"tool\": \"api\", \"outcome\": \"failure\"}\n",
            "not json\n",
            "{\"at\": \"2026-01-01T00:00:01Z\", \"task\": \"t\", \"tool\": \"api\", \"outcome\": \"success\"}\n",
            "{\"at\": \"2026-01-01T00:00:09Z\", \"task\": \"t\", \"tool\": \"api\", \"outcome\": \"failure\", \"report\": {\"http_status\": 1}}\n",
            "{\"at\": \"2026-01-01T00:00:09Z\", \"task\": \"t\", \"tool\": \"api\", \"outcome\": \"maybe\"}\n",
        );
        let issues = parse_trace(trace).unwrap_err();
        let found: Vec<_> = issues
            .iter()
            .map(|i| (i.path.as_str(), i.code.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("line 1: report", "missing"),
                ("line 2", "bad_event"),
                ("line 3: at", "out_of_order"),
                ("line 4: report.http_status", "out_of_range"),
                ("line 5: outcome", "bad_event"),
            ]
        );
    }
}
