//! The one line of text each tool result carries beside its JSON: what an LLM should do next,
//! in words it can act on ("retry in 2.0 s", "stop: policy denial — do not use another tool").

use backstop_core::Class;
use backstop_core::case::{DecisionResult, Next, ResultStatus};
use backstop_core::classify::Classification;
use backstop_core::recover::Action;
use serde::Deserialize;
use serde_json::Value;

/// The parts of a recovery step a line is made from.
#[derive(Debug, Deserialize)]
struct StepLine {
    class: Class,
    action: Action,
    hint: String,
    delay_ms: u64,
    defer_until: Option<String>,
    escalation: Option<Handoff>,
    fallback_tool: Option<String>,
    #[serde(default)]
    explanation: String,
}

/// Who a task goes to.
#[derive(Debug, Deserialize)]
struct Handoff {
    to: String,
    why: String,
}

/// The line for a recovery step (`next_step`).
pub fn step(body: &Value) -> Option<String> {
    let step = StepLine::deserialize(body).ok()?;
    let hint = &step.hint;
    let line = match step.action {
        Action::RetrySame | Action::Wait | Action::RetryPromoted => {
            let again = if step.action == Action::RetryPromoted {
                "retry on a stronger model or tier"
            } else {
                "retry"
            };
            match &step.defer_until {
                Some(when) => format!("{again} after {when}: {hint}"),
                None if step.delay_ms == 0 => format!("{again} now: {hint}"),
                None => format!("{again} in {}: {hint}", seconds(step.delay_ms)),
            }
        }
        Action::FixInput => format!("fix the input, then retry: {hint}"),
        Action::Reconcile => format!(
            "the outcome is unknown: do not call it again until you have checked whether it took effect: {hint}"
        ),
        Action::ChangeApproach | Action::BroadenQuery | Action::ReduceScope => {
            format!("change approach ({}): {hint}", step.action.as_str())
        }
        Action::FallbackTool => match &step.fallback_tool {
            Some(tool) => format!("fall back to {tool}: {hint}"),
            None => format!("fall back to another tool: {hint}"),
        },
        Action::LocalOnly | Action::IncreaseBudget | Action::Compensate | Action::SkipAndLog => {
            format!("{}: {hint}", step.action.as_str())
        }
        Action::Stop if step.class == Class::PolicyDenied => format!(
            "stop: policy denial — do not retry and do not use another tool; report it: {hint}"
        ),
        Action::Stop => format!("stop: {hint}"),
        Action::Escalate => match &step.escalation {
            Some(handoff) if step.explanation.is_empty() => {
                format!("escalate to {}: {}", handoff.to, handoff.why)
            }
            Some(handoff) => format!("escalate to {}: {hint}", handoff.to),
            None => format!("escalate to a person: {hint}"),
        },
    };
    // The sentence a person reads about the failure follows what to do.
    Some(if step.explanation.is_empty() {
        line
    } else {
        format!("{line} Why: {}", step.explanation)
    })
}

/// The line for a classification (`classify`).
pub fn classification(body: &Value) -> Option<String> {
    let found = Classification::deserialize(body).ok()?;
    let class = found.class.as_str();
    let line = if found.class == Class::PolicyDenied {
        format!(
            "{class}: do not retry and do not use another tool — {}",
            found.reason
        )
    } else if let Some(wait) = found.retry_after_ms {
        format!(
            "{class}, retryable after {}: {}",
            seconds(wait),
            found.reason
        )
    } else if found.retryable {
        format!("{class}, retryable: {}", found.reason)
    } else {
        format!("{class}, not retryable: {}", found.reason)
    };
    Some(line)
}

/// The line for a case's result (`decide_<job>`).
pub fn decision(body: &Value) -> Option<String> {
    let result = DecisionResult::deserialize(body).ok()?;
    let handoff = result.escalation.as_ref();
    // The case is handed off now: held, or out of attempts.
    if let Some(escalation) = handoff
        && (result.status == ResultStatus::Held || result.attempts.next == Some(Next::Escalate))
    {
        return Some(format!("escalate to {}: {}", escalation.to, escalation.why));
    }
    let outcome = result.outcome.as_deref().unwrap_or("no outcome");
    let next = &result.next_step;
    let line = match result.status {
        ResultStatus::Decided => format!("decided ({outcome}): {next}"),
        ResultStatus::Held => format!("held for review ({outcome}): {next}"),
        ResultStatus::Undecided => {
            let fixes: Vec<String> = result
                .retry
                .iter()
                .map(|(question, guidance)| format!("{question}: {}", guidance.fix))
                .collect();
            format!(
                "undecided, {} attempt(s) left; fix and send again: {}",
                result.attempts.remaining,
                if fixes.is_empty() {
                    next.clone()
                } else {
                    fixes.join("; ")
                }
            )
        }
        ResultStatus::Gap => format!(
            "a required related record is missing ({}): {next}",
            result.missing.join(", ")
        ),
        ResultStatus::Reconcile => {
            format!("fetch the source's final result and send it again (no attempt used): {next}")
        }
        ResultStatus::Noop => format!("already final ({outcome}); nothing changed: {next}"),
    };
    // An escalation still ahead is named, so the agent knows who gets the case if it fails.
    Some(match handoff {
        Some(escalation) => format!("{line} (if it stays unresolved: {})", escalation.to),
        None => line,
    })
}

/// The line for a refusal: its status, code and message, and every issue with its path.
pub fn refusal(status: u16, body: &Value) -> String {
    let error = body.get("error").unwrap_or(body);
    let code = error.get("code").and_then(Value::as_str).unwrap_or("error");
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| body.to_string(), str::to_owned);
    let issues: Vec<String> = error
        .get("issues")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|issue| {
            format!(
                "{}: {}",
                issue.get("path").and_then(Value::as_str).unwrap_or(""),
                issue.get("message").and_then(Value::as_str).unwrap_or("")
            )
        })
        .collect();
    if issues.is_empty() {
        format!("refused ({status} {code}): {message}")
    } else {
        format!(
            "refused ({status} {code}): {message} — {}",
            issues.join("; ")
        )
    }
}

/// Milliseconds as seconds with one decimal ("2.0 s"), rounded up: an agent that waits as
/// long as the line says never waits less than the step asks.
fn seconds(ms: u64) -> String {
    let tenths = ms.div_ceil(100);
    format!("{}.{} s", tenths / 10, tenths % 10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step_body(class: &str, action: &str, delay_ms: u64) -> Value {
        json!({
            "class": class, "action": action, "hint": "the hint", "delay_ms": delay_ms,
            "defer_until": null, "escalation": null, "reason": "r",
            "attempts": {"class_used": 1, "class_max": 3, "task_used": 1, "task_max": 12}
        })
    }

    #[test]
    fn a_wait_says_how_long_in_seconds() {
        let line = step(&step_body("rate_limited", "wait", 2000)).unwrap();
        assert_eq!(line, "retry in 2.0 s: the hint");
        let line = step(&step_body("transient", "retry_same", 163)).unwrap();
        assert_eq!(line, "retry in 0.2 s: the hint");
    }

    #[test]
    fn a_line_ends_with_the_sentence_a_person_reads() {
        let mut body = step_body("quota_exhausted", "escalate", 0);
        body["escalation"] = json!({"to": "billing", "why": "quota_exhausted: strategy 1 of 1"});
        body["explanation"] = json!("The account's quota is used up.");
        let line = step(&body).unwrap();
        assert_eq!(
            line,
            "escalate to billing: the hint Why: The account's quota is used up."
        );
        assert!(!line.contains("strategy 1 of"), "{line}");
    }

    #[test]
    fn a_policy_stop_forbids_another_tool() {
        let line = step(&step_body("policy_denied", "stop", 0)).unwrap();
        assert!(
            line.starts_with("stop: policy denial — do not retry and do not use another tool"),
            "{line}"
        );
    }

    #[test]
    fn an_escalation_names_who_it_goes_to() {
        let mut body = step_body("business", "escalate", 0);
        body["escalation"] = json!({"to": "Refund desk", "why": "two refunds"});
        assert_eq!(step(&body).unwrap(), "escalate to Refund desk: two refunds");
    }

    fn decision_body(status: &str, next: &str) -> Value {
        json!({
            "status": status, "outcome": null, "nextStep": "Find the record.",
            "case": {"id": "c.com"}, "attempts": {"used": 1, "remaining": 2, "next": next},
            "answers": {}, "retry": {}, "missing": ["counterparty"], "effects": [], "reason": "r",
            "escalation": {"id": "desk", "why": "Unsettled.", "to": "Vendor management",
                           "nextStep": "Open a ticket.", "trigger": "unresolved"}
        })
    }

    #[test]
    fn an_escalation_ahead_is_named_and_one_due_now_leads() {
        let ahead = decision(&decision_body("gap", "retry")).unwrap();
        assert_eq!(
            ahead,
            "a required related record is missing (counterparty): Find the record. \
             (if it stays unresolved: Vendor management)"
        );
        let due = decision(&decision_body("undecided", "escalate")).unwrap();
        assert_eq!(due, "escalate to Vendor management: Unsettled.");
    }

    #[test]
    fn a_body_that_is_not_a_step_has_no_line() {
        assert!(step(&json!({"class": "transient"})).is_none());
    }

    #[test]
    fn a_refusal_lists_its_issues_with_their_paths() {
        let body = json!({"error": {"code": "malformed", "message": "the request is malformed",
            "issues": [{"path": "report.body", "code": "unknown_field", "message": "unknown field `body`"}]}});
        assert_eq!(
            refusal(400, &body),
            "refused (400 malformed): the request is malformed — report.body: unknown field `body`"
        );
    }

    #[test]
    fn seconds_round_up_to_a_tenth() {
        assert_eq!(seconds(0), "0.0 s");
        assert_eq!(seconds(1901), "2.0 s");
        assert_eq!(seconds(2000), "2.0 s");
        assert_eq!(seconds(2133), "2.2 s");
        assert_eq!(seconds(61_000), "61.0 s");
    }
}
