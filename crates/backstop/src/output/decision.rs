//! A case's result for a person (`decide`): what it says, what to do next, and why.

use std::io::{self, Write};

use backstop_core::case::{DecisionResult, Next, ResultStatus};

/// Writes one attempt's result for a person.
pub fn decision_human(out: &mut impl Write, result: &DecisionResult) -> io::Result<()> {
    let outcome = result.outcome.as_deref();
    let headline = match (result.status, outcome) {
        (ResultStatus::Decided, Some(outcome)) => format!("decided `{outcome}`"),
        (ResultStatus::Held, Some(lane)) => format!("held for a person in `{lane}`"),
        (ResultStatus::Held, None) => "held for a person".to_owned(),
        (ResultStatus::Undecided, _) => "undecided".to_owned(),
        (ResultStatus::Gap, _) => "a required related record is missing".to_owned(),
        (ResultStatus::Reconcile, _) => "waiting for the source's final result".to_owned(),
        (ResultStatus::Noop, _) => "already final: nothing changed".to_owned(),
        (ResultStatus::Decided, None) => "decided".to_owned(),
    };
    writeln!(out, "{headline}  (case {})", result.case.id)?;
    writeln!(out, "  next step: {}", result.next_step)?;
    writeln!(out, "  attempts: {}", attempts_words(result))?;
    if !result.answers.is_empty() {
        let answers: Vec<String> = result
            .answers
            .iter()
            .map(|(question, answer)| match answer {
                serde_json::Value::String(text) => format!("{question} = {text}"),
                other => format!("{question} = {other}"),
            })
            .collect();
        writeln!(out, "  answers: {}", answers.join(", "))?;
    }
    if !result.retry.is_empty() {
        writeln!(out, "  fix, then send again:")?;
        for (question, guidance) in &result.retry {
            writeln!(out, "    {question}: {}", guidance.fix)?;
            writeln!(out, "      look in: {}", guidance.where_to_look)?;
        }
    }
    if !result.missing.is_empty() {
        writeln!(out, "  missing: {}", result.missing.join(", "))?;
    }
    if let Some(escalation) = &result.escalation {
        writeln!(
            out,
            "  escalation `{}` ({}): {} takes it: {} Next: {}",
            escalation.id,
            escalation.trigger.as_str(),
            escalation.to,
            escalation.why,
            escalation.next_step
        )?;
    }
    if !result.effects.is_empty() {
        writeln!(out, "  effects to carry out: {}", result.effects.join(", "))?;
    }
    writeln!(out, "  why: {}", result.reason)?;
    Ok(())
}

/// The attempts, in words: how many were used and what comes after this one.
fn attempts_words(result: &DecisionResult) -> String {
    let a = result.attempts;
    let used = if a.used == 1 {
        "1 used".to_owned()
    } else {
        format!("{} used", a.used)
    };
    match (a.next, a.remaining) {
        (None, _) => format!("{used}; none needed: the case is settled"),
        (Some(Next::Escalate), _) => format!("{used}; no more: the case goes to a person"),
        (Some(Next::Retry), 1) => format!("{used}; 1 more may be sent"),
        (Some(Next::Retry), left) => format!("{used}; {left} more may be sent"),
    }
}
