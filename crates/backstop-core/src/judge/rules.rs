//! Outcome selection: the pack's rules applied to the closed questions.
//!
//! The order of checks is the contract (DESIGN.md invariants 3 and 4): a source that did not
//! complete decides nothing; the first rule that fires gives the outcome; with none, an open
//! required question leaves the case undecided and otherwise the policy-gap lane holds it;
//! last, a low confidence may hold a decision back but never turns anything into one.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{QuestionEvidence, QuestionVerdict, judge_question};
use crate::pack::{OutcomeKind, POLICY_GAP_LANE, Pack, PackRule};

/// How a case stands after judging.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// A rule gave an outcome of kind `decision`.
    Decided,
    /// The result is held in a lane for review.
    Held,
    /// Nothing was decided: evidence is missing or the source did not complete.
    Undecided,
}

/// The result of judging one request against a pack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    /// How the case stands.
    pub status: Status,
    /// The decision or lane id; `None` when undecided.
    pub outcome: Option<String>,
    /// The closed questions' answers, by key.
    pub answers: BTreeMap<String, String>,
    /// The open questions' keys, in pack order.
    pub open: Vec<String>,
    /// One verdict per question, in pack order.
    pub verdicts: Vec<QuestionVerdict>,
    /// Why the case stands as it does, for people.
    pub reason: String,
}

/// Judges every question of `pack` and applies its rules.
///
/// `confidence` and `source_status` are the request's optional envelope fields: a source that
/// is not `completed` decides nothing, and a confidence below the pack's minimum holds a
/// decision in the pack's confidence lane.
pub fn decide(
    pack: &Pack,
    questions: &BTreeMap<String, QuestionEvidence>,
    confidence: Option<f64>,
    source_status: Option<&str>,
) -> Judgement {
    let verdicts: Vec<QuestionVerdict> = pack
        .questions
        .iter()
        .map(|q| judge_question(q, questions.get(&q.key), &pack.evidence.hedges))
        .collect();
    let answers: BTreeMap<String, String> = verdicts
        .iter()
        .filter_map(|v| Some((v.key.clone(), v.answer.clone()?)))
        .collect();
    let open: Vec<String> = verdicts
        .iter()
        .filter(|v| !v.is_closed())
        .map(|v| v.key.clone())
        .collect();
    let (status, outcome, reason) = select(pack, &answers, &open, confidence, source_status);
    Judgement {
        status,
        outcome,
        answers,
        open,
        verdicts,
        reason,
    }
}

/// The status, outcome and reason for these answers.
fn select(
    pack: &Pack,
    answers: &BTreeMap<String, String>,
    open: &[String],
    confidence: Option<f64>,
    source_status: Option<&str>,
) -> (Status, Option<String>, String) {
    if let Some(source) = source_status.filter(|s| *s != "completed") {
        return (
            Status::Undecided,
            None,
            format!("the source status is `{source}`, not `completed`: nothing is decided"),
        );
    }
    let Some((index, rule)) = pack
        .rules
        .iter()
        .enumerate()
        .find(|(_, rule)| fires(rule, answers))
    else {
        let open_required: Vec<&str> = pack
            .questions
            .iter()
            .filter(|q| q.required && open.contains(&q.key))
            .map(|q| q.key.as_str())
            .collect();
        if open_required.is_empty() {
            return (
                Status::Held,
                Some(POLICY_GAP_LANE.to_owned()),
                "no rule fires and every required question is closed: a policy gap".to_owned(),
            );
        }
        return (
            Status::Undecided,
            None,
            format!(
                "no rule fires and required questions are open: {}",
                open_required.join(", ")
            ),
        );
    };
    let kind = pack.outcome(&rule.outcome).map(|o| o.kind);
    if kind == Some(OutcomeKind::Lane) {
        return (
            Status::Held,
            Some(rule.outcome.clone()),
            format!("rules[{index}] fires: held in lane `{}`", rule.outcome),
        );
    }
    if let (Some(dampener), Some(given)) = (&pack.confidence, confidence)
        && given < dampener.min
    {
        return (
            Status::Held,
            Some(dampener.lane.clone()),
            format!(
                "rules[{index}] gives `{}`, but confidence {given} is below {}: held in lane `{}`",
                rule.outcome, dampener.min, dampener.lane
            ),
        );
    }
    (
        Status::Decided,
        Some(rule.outcome.clone()),
        format!("rules[{index}] fires: decided `{}`", rule.outcome),
    )
}

/// Whether every question the rule names is closed with an answer its condition allows.
fn fires(rule: &PackRule, answers: &BTreeMap<String, String>) -> bool {
    rule.when
        .iter()
        .all(|(key, condition)| answers.get(key).is_some_and(|a| condition.holds(a)))
}
