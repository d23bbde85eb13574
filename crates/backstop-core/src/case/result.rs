//! The wire shapes of `PACKS.md`: the result of an attempt and the one refusal shape.

use super::RefusalCode;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::issue::Issue;
use crate::judge::NotUsed;

/// How a case stands after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ResultStatus {
    /// A rule gave a decision.
    Decided,
    /// The result is held in a review lane.
    Held,
    /// Nothing decided yet: follow `retry`.
    Undecided,
    /// A required related record is missing.
    Gap,
    /// The source did not complete or sent nothing: fetch its final result and send it again.
    /// No attempt is used.
    Reconcile,
    /// The case was decided (or resolved by a person) and its pack makes that final: this
    /// result is kept as history and changes nothing.
    Noop,
}

impl ResultStatus {
    /// Its wire name (`decided`, `held`, `undecided`, `gap`, `reconcile`, `noop`).
    pub fn as_str(self) -> &'static str {
        match self {
            ResultStatus::Decided => "decided",
            ResultStatus::Held => "held",
            ResultStatus::Undecided => "undecided",
            ResultStatus::Gap => "gap",
            ResultStatus::Reconcile => "reconcile",
            ResultStatus::Noop => "noop",
        }
    }

    /// Whether an attempt with this status counts against the limit.
    pub fn counts(self) -> bool {
        !matches!(self, ResultStatus::Reconcile | ResultStatus::Noop)
    }
}

/// What the agent does after this result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Next {
    /// Ask again, following `retry`.
    Retry,
    /// Stop and hand the case off.
    Escalate,
}

impl Next {
    /// Its wire name (`retry`, `escalate`).
    pub fn as_str(self) -> &'static str {
        match self {
            Next::Retry => "retry",
            Next::Escalate => "escalate",
        }
    }
}

/// Why an escalation is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Trigger {
    /// Undecided, and the agent may still retry.
    Unresolved,
    /// The attempt limit is reached.
    AttemptLimit,
    /// An attempt made no progress.
    NoProgress,
    /// The result is held in a lane.
    Held,
}

impl Trigger {
    /// Its wire name (`unresolved`, `attempt_limit`, `no_progress`, `held`).
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Unresolved => "unresolved",
            Trigger::AttemptLimit => "attempt_limit",
            Trigger::NoProgress => "no_progress",
            Trigger::Held => "held",
        }
    }
}

/// The result of one attempt, as `PACKS.md` fixes it (with `effects` and `reason` added).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DecisionResult {
    /// `decided`, `held`, `undecided` or `gap`.
    pub status: ResultStatus,
    /// The decision or lane id; null when undecided or gap.
    pub outcome: Option<String>,
    /// What the agent does next, quoted from the pack.
    #[serde(rename = "nextStep")]
    pub next_step: String,
    /// The case this attempt counted against.
    pub case: CaseView,
    /// Attempts used and left.
    pub attempts: AttemptsView,
    /// The closed questions' answers: a number question's answer is a JSON number, every
    /// other answer a string (a date question's is its RFC 3339 time).
    #[cfg_attr(feature = "openapi", schema(value_type = BTreeMap<String, AnswerValue>))]
    pub answers: BTreeMap<String, serde_json::Value>,
    /// Guidance for each open question (undecided and gap results only).
    pub retry: BTreeMap<String, RetryGuidance>,
    /// The required related records that were not sent.
    pub missing: Vec<String>,
    /// The hand-off the pack names for this result.
    pub escalation: Option<EscalationView>,
    /// Effects for the agent's shell to carry out (`suppress_contact`).
    pub effects: Vec<String>,
    /// Why the case stands as it does, for people.
    pub reason: String,
}

/// One closed question's answer in a result: a string, or a number for a number question.
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema, Serialize)]
#[serde(untagged)]
#[allow(dead_code, reason = "only its schema is used")]
pub enum AnswerValue {
    /// An answer from the question's list, or a date question's time.
    Text(String),
    /// A number question's answer.
    Number(f64),
}

/// The case, as a result names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CaseView {
    /// The normalized case id: send it back on every retry.
    pub id: String,
    /// Fields mode: the normalized fields the id stands for.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fields: Option<BTreeMap<String, String>>,
}

/// `attempts` of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptsView {
    /// Attempts made on the case in this cycle, this one included.
    pub used: u32,
    /// Attempts left; includes the extra attempt once progress has earned it.
    pub remaining: u32,
    /// `retry` or `escalate`; null once decided.
    pub next: Option<Next>,
}

/// What to fix for one open question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RetryGuidance {
    /// What to change.
    pub fix: String,
    /// The excerpts that were not used, by position, and why.
    #[serde(rename = "notUsed")]
    pub not_used: Vec<NotUsed>,
    /// The answers the question may have.
    pub answers: Vec<AnswerView>,
    /// Where the policy says to look.
    #[serde(rename = "whereToLook")]
    pub where_to_look: String,
}

/// One answer a question may have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AnswerView {
    /// The answer.
    pub value: String,
    /// What it means.
    pub means: String,
}

/// A named hand-off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EscalationView {
    /// The pack's escalation id: report it exactly.
    pub id: String,
    /// Why the case goes to them.
    pub why: String,
    /// Who takes over.
    pub to: String,
    /// What they do.
    #[serde(rename = "nextStep")]
    pub next_step: String,
    /// Why it is shown now.
    pub trigger: Trigger,
}

/// A request refused before anything ran: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Refusal {
    /// The refusal itself.
    pub error: RefusalBody,
}

/// The body of a refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RefusalBody {
    /// `malformed`, `attempt_limit_reached`, `issued_case_limit`, `execution_id_conflict`,
    /// `case_in_review`, `unknown_case`, `unknown_job`, ... ([`RefusalCode`]).
    pub code: RefusalCode,
    /// What happened and what to do, for people and agents.
    pub message: String,
    /// Every issue, each with its path (malformed requests).
    pub issues: Vec<Issue>,
    /// The hand-off to make instead of asking again.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub escalation: Option<EscalationView>,
}

impl Refusal {
    /// A refusal with `code` and `message`.
    pub fn new(code: RefusalCode, message: impl Into<String>) -> Self {
        Self {
            error: RefusalBody {
                code,
                message: message.into(),
                issues: Vec::new(),
                escalation: None,
            },
        }
    }

    /// A malformed request: every issue listed; no attempt was used.
    pub fn malformed(issues: Vec<Issue>) -> Self {
        let mut refusal = Self::new(
            RefusalCode::Malformed,
            format!(
                "the request is malformed ({} issue{}): nothing was decided and no attempt was \
                 used; fix every issue and send it again",
                issues.len(),
                if issues.len() == 1 { "" } else { "s" }
            ),
        );
        refusal.error.issues = issues;
        refusal
    }

    /// The same refusal carrying an escalation.
    #[must_use]
    pub fn with_escalation(mut self, escalation: Option<EscalationView>) -> Self {
        self.error.escalation = escalation;
        self
    }

    /// The refusal's code.
    pub fn code(&self) -> RefusalCode {
        self.error.code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names written to the ledger and shown to people are the serde names, so a stored
    /// word reads back as what was written.
    #[test]
    fn wire_names_are_the_serde_names() {
        let serde_name = |value: serde_json::Value| value.as_str().unwrap().to_owned();
        for status in [
            ResultStatus::Decided,
            ResultStatus::Held,
            ResultStatus::Undecided,
            ResultStatus::Gap,
            ResultStatus::Reconcile,
            ResultStatus::Noop,
        ] {
            assert_eq!(
                status.as_str(),
                serde_name(serde_json::to_value(status).unwrap())
            );
        }
        for next in [Next::Retry, Next::Escalate] {
            assert_eq!(
                next.as_str(),
                serde_name(serde_json::to_value(next).unwrap())
            );
        }
        for trigger in [
            Trigger::Unresolved,
            Trigger::AttemptLimit,
            Trigger::NoProgress,
            Trigger::Held,
        ] {
            assert_eq!(
                trigger.as_str(),
                serde_name(serde_json::to_value(trigger).unwrap())
            );
        }
    }
}
