//! Outcome selection: the pack's rules applied to the closed questions.
//!
//! The order of checks is the contract (DESIGN.md invariants 3 and 4): a missing envelope field
//! the pack requires holds the case; a source that did not complete, or a result with no
//! evidence at all, decides nothing (it is judged as sent, reconciled, or held, as the pack's
//! `[envelope]` says); the first rule that fires gives the outcome; with none, an `unknown` the
//! pack sends to a lane holds the case there, an open required question leaves the case
//! undecided, and otherwise the policy-gap lane holds it; last, a low confidence may hold a
//! decision back but never turns anything into one.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{QuestionEvidence, QuestionVerdict, judge_question};
use jiff::Timestamp;

use crate::pack::{
    Condition, EnvelopeField, OnUnknown, OutcomeKind, POLICY_GAP_LANE, Pack, PackRule,
    SourceAction, bounds_hold,
};

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
    /// The source did not complete or sent nothing: fetch its final result and send it again;
    /// no attempt is used.
    Reconcile,
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
    /// Whether the source did not complete: its values are not evidence, and a retry it
    /// causes is not judged for progress.
    pub source_unfinished: bool,
}

/// Judges every question of `pack` and applies its rules.
///
/// `confidence` and `source_status` are the request's optional envelope fields: a source that
/// is not `completed` decides nothing, and a confidence below the pack's minimum holds a
/// decision in the pack's confidence lane.
pub fn judge_case(
    pack: &Pack,
    questions: &BTreeMap<String, QuestionEvidence>,
    confidence: Option<f64>,
    source_status: Option<&str>,
    now: Timestamp,
) -> Judgement {
    let facts = BTreeMap::new();
    judge_case_with_facts(pack, questions, &facts, confidence, source_status, now)
}

/// [`judge_case`] with the related records' facts (`related.<kind>.<field>` to its text), which
/// typed answers' bounds may name.
pub fn judge_case_with_facts(
    pack: &Pack,
    questions: &BTreeMap<String, QuestionEvidence>,
    facts: &BTreeMap<String, String>,
    confidence: Option<f64>,
    source_status: Option<&str>,
    now: Timestamp,
) -> Judgement {
    let ctx = Context { facts, now };
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
    let envelope = Sent {
        confidence,
        source_status,
        evidence: questions.values().any(|e| {
            e.value.as_ref().is_some_and(|v| !v.is_null())
                || e.excerpts.as_ref().is_some_and(|x| !x.is_empty())
        }),
    };
    let (status, outcome, reason) = before_rules(pack, &envelope)
        .or_else(|| unknown_lane(pack, &verdicts, &answers, &ctx))
        .unwrap_or_else(|| select(pack, &answers, &open, confidence, &ctx));
    let source_unfinished = source_status.is_some_and(|s| !pack.envelope.finished(s));
    if source_unfinished {
        // A source that did not finish gave no evidence, whatever its result object says.
        return Judgement {
            status,
            outcome,
            answers: BTreeMap::new(),
            open: pack.questions.iter().map(|q| q.key.clone()).collect(),
            verdicts,
            reason,
            source_unfinished,
        };
    }
    Judgement {
        status,
        outcome,
        answers,
        open,
        verdicts,
        reason,
        source_unfinished,
    }
}

/// What the request said about itself.
struct Sent<'a> {
    confidence: Option<f64>,
    source_status: Option<&'a str>,
    /// Whether any question got a value or an excerpt.
    evidence: bool,
}

/// The outcome of a check that ends judging early: status, outcome, reason.
type Early = Option<(Status, Option<String>, String)>;

/// The envelope's checks, before any rule: required fields, then a source that did not
/// complete, then a result with no evidence.
fn before_rules(pack: &Pack, sent: &Sent<'_>) -> Early {
    let envelope = &pack.envelope;
    let missing: Vec<&str> = envelope
        .require
        .iter()
        .filter(|field| match field {
            EnvelopeField::Confidence => sent.confidence.is_none(),
            EnvelopeField::SourceStatus => sent.source_status.is_none(),
        })
        .map(|field| field.as_str())
        .collect();
    if !missing.is_empty() {
        return Some((
            Status::Held,
            Some(envelope.missing_lane.clone()),
            format!(
                "the pack requires {} and the request did not send it: null is never success, \
                 held in lane `{}`",
                missing.join(" and "),
                envelope.missing_lane
            ),
        ));
    }
    if let Some(source) = sent.source_status.filter(|s| !envelope.finished(s)) {
        let why = format!(
            "the source status is `{source}`, not {}: its values are ignored",
            envelope.completed.join(" or ")
        );
        let action = envelope
            .statuses
            .get(source)
            .unwrap_or(&envelope.not_completed);
        return Some(source_action(action, &why));
    }
    if !sent.evidence && envelope.empty != SourceAction::Retry {
        let why = "the result gave no question any evidence".to_owned();
        return Some(source_action(&envelope.empty, &why));
    }
    None
}

fn source_action(action: &SourceAction, why: &str) -> (Status, Option<String>, String) {
    match action {
        SourceAction::Retry => (
            Status::Undecided,
            None,
            format!("{why}: nothing is decided"),
        ),
        SourceAction::Reconcile => (
            Status::Reconcile,
            None,
            format!(
                "{why}: reconcile (fetch the final result and send it again); no attempt is used"
            ),
        ),
        SourceAction::Lane(lane) => (
            Status::Held,
            Some(lane.clone()),
            format!("{why}: held in lane `{lane}`"),
        ),
    }
}

/// The lane of the first question (in pack order) sent `unknown` whose pack sends it to a
/// lane, when no rule fires first.
fn unknown_lane(
    pack: &Pack,
    verdicts: &[QuestionVerdict],
    answers: &BTreeMap<String, String>,
    ctx: &Context<'_>,
) -> Early {
    if pack
        .rules
        .iter()
        .any(|rule| fires(pack, rule, answers, ctx))
    {
        return None;
    }
    pack.questions.iter().zip(verdicts).find_map(|(q, v)| match &q.on_unknown {
        OnUnknown::Lane(lane) if v.unknown => Some((
            Status::Held,
            Some(lane.clone()),
            format!("`{}` is unknown and no rule fires: ambiguity is never resolved, held in lane `{lane}`", q.key),
        )),
        _ => None,
    })
}

/// The status, outcome and reason for these answers, by the rules.
fn select(
    pack: &Pack,
    answers: &BTreeMap<String, String>,
    open: &[String],
    confidence: Option<f64>,
    ctx: &Context<'_>,
) -> (Status, Option<String>, String) {
    let Some((index, rule)) = pack
        .rules
        .iter()
        .enumerate()
        .find(|(_, rule)| fires(pack, rule, answers, ctx))
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
    if let Some(dampener) = pack
        .confidence
        .as_ref()
        .filter(|d| d.close_needs_confidence)
        && confidence.is_none()
    {
        return (
            Status::Held,
            Some(dampener.lane.clone()),
            format!(
                "rules[{index}] gives `{}`, but no confidence was reported and the pack needs \
                 one to close: held in lane `{}`",
                rule.outcome, dampener.lane
            ),
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

/// What bounds are read against besides the answers.
struct Context<'a> {
    facts: &'a BTreeMap<String, String>,
    now: Timestamp,
}

/// Whether every question the rule names is closed with an answer its condition allows.
fn fires(
    pack: &Pack,
    rule: &PackRule,
    answers: &BTreeMap<String, String>,
    ctx: &Context<'_>,
) -> bool {
    rule.when.iter().all(|(key, condition)| {
        answers.get(key).is_some_and(|answer| match condition {
            Condition::Bounds(bounds) => pack.question(key).is_some_and(|q| {
                let known = |name: &str| answers.get(name).or_else(|| ctx.facts.get(name)).cloned();
                bounds_hold(q.value_type, bounds, answer, &known, ctx.now)
            }),
            other => other.holds(answer),
        })
    })
}
