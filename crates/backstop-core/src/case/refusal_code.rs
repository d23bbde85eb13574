//! Every refusal code, with the HTTP status it is answered with: adding a code is a compile
//! error until its status is chosen, so no new code silently becomes a 409.

use serde::{Deserialize, Serialize};

/// Why a request was refused: the `code` of the one refusal shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub enum RefusalCode {
    /// The request is malformed: every issue is listed; nothing was decided or counted.
    Malformed,
    /// No pack is loaded for the job.
    UnknownJob,
    /// The caller has no such case.
    UnknownCase,
    /// No such review item.
    UnknownReview,
    /// No API key speaks for the caller named.
    UnknownCaller,
    /// The caller has no such dispatch.
    UnknownDispatch,
    /// No webhook source of that name is configured.
    UnknownSource,
    /// The job's pack has no `[dispatch]` table.
    NoDispatch,
    /// The case's attempts are spent: make the escalation.
    AttemptLimitReached,
    /// Too many new issued cases in 24 hours.
    IssuedCaseLimit,
    /// The same `execution_id` with another body.
    ExecutionIdConflict,
    /// The same `Idempotency-Key` with another request.
    IdempotencyKeyConflict,
    /// The case is held for a person.
    CaseInReview,
    /// The review item was resolved already.
    AlreadyResolved,
    /// A resolution the review item does not allow (not one of its pack's decisions, or not
    /// `retry` or `stop` for a task, or `handoff`).
    DecisionNotAllowed,
    /// An outcome reported after the dispatch's result was in.
    LateOutcome,
    /// The case is decided for good: nothing more is dispatched.
    CaseTerminal,
    /// The case has had its dispatches.
    DispatchBudgetSpent,
    /// A value sent to a recipient is a placeholder or an injected instruction.
    UnsafeValue,
    /// A recipient's time zone is unknown.
    UnknownTimeZone,
    /// A recipient id is listed twice.
    DuplicateRecipient,
    /// No key, or an unknown one.
    Unauthorized,
    /// A webhook's signature is missing or does not match.
    BadSignature,
    /// A webhook's signature is more than five minutes old.
    StaleSignature,
    /// The caller's role may not do this.
    Forbidden,
    /// Too many requests: wait `Retry-After`.
    RateLimited,
    /// The caller holds as many live tasks (or tools) as its quota allows: nothing was counted,
    /// and nothing anyone holds was dropped to make room.
    QuotaExceeded,
    /// The body is over the limit.
    TooLarge,
    /// The request took longer than the limit.
    Timeout,
    /// The ledger is busy: nothing changed; send it again.
    Busy,
    /// The service is not ready.
    NotReady,
    /// No such route.
    NotFound,
    /// The route does not take that method.
    MethodNotAllowed,
    /// backstop failed; the cause is in its log.
    Internal,
}

impl RefusalCode {
    /// Every code.
    pub const ALL: [RefusalCode; 34] = [
        RefusalCode::Malformed,
        RefusalCode::UnknownJob,
        RefusalCode::UnknownCase,
        RefusalCode::UnknownReview,
        RefusalCode::UnknownCaller,
        RefusalCode::UnknownDispatch,
        RefusalCode::UnknownSource,
        RefusalCode::NoDispatch,
        RefusalCode::AttemptLimitReached,
        RefusalCode::IssuedCaseLimit,
        RefusalCode::ExecutionIdConflict,
        RefusalCode::IdempotencyKeyConflict,
        RefusalCode::CaseInReview,
        RefusalCode::AlreadyResolved,
        RefusalCode::DecisionNotAllowed,
        RefusalCode::LateOutcome,
        RefusalCode::CaseTerminal,
        RefusalCode::DispatchBudgetSpent,
        RefusalCode::UnsafeValue,
        RefusalCode::UnknownTimeZone,
        RefusalCode::DuplicateRecipient,
        RefusalCode::Unauthorized,
        RefusalCode::BadSignature,
        RefusalCode::StaleSignature,
        RefusalCode::Forbidden,
        RefusalCode::RateLimited,
        RefusalCode::QuotaExceeded,
        RefusalCode::TooLarge,
        RefusalCode::Timeout,
        RefusalCode::Busy,
        RefusalCode::NotReady,
        RefusalCode::NotFound,
        RefusalCode::MethodNotAllowed,
        RefusalCode::Internal,
    ];

    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::Malformed => "malformed",
            RefusalCode::UnknownJob => "unknown_job",
            RefusalCode::UnknownCase => "unknown_case",
            RefusalCode::UnknownReview => "unknown_review",
            RefusalCode::UnknownCaller => "unknown_caller",
            RefusalCode::UnknownDispatch => "unknown_dispatch",
            RefusalCode::UnknownSource => "unknown_source",
            RefusalCode::NoDispatch => "no_dispatch",
            RefusalCode::AttemptLimitReached => "attempt_limit_reached",
            RefusalCode::IssuedCaseLimit => "issued_case_limit",
            RefusalCode::ExecutionIdConflict => "execution_id_conflict",
            RefusalCode::IdempotencyKeyConflict => "idempotency_key_conflict",
            RefusalCode::CaseInReview => "case_in_review",
            RefusalCode::AlreadyResolved => "already_resolved",
            RefusalCode::DecisionNotAllowed => "decision_not_allowed",
            RefusalCode::LateOutcome => "late_outcome",
            RefusalCode::CaseTerminal => "case_terminal",
            RefusalCode::DispatchBudgetSpent => "dispatch_budget_spent",
            RefusalCode::UnsafeValue => "unsafe_value",
            RefusalCode::UnknownTimeZone => "unknown_time_zone",
            RefusalCode::DuplicateRecipient => "duplicate_recipient",
            RefusalCode::Unauthorized => "unauthorized",
            RefusalCode::BadSignature => "bad_signature",
            RefusalCode::StaleSignature => "stale_signature",
            RefusalCode::Forbidden => "forbidden",
            RefusalCode::RateLimited => "rate_limited",
            RefusalCode::QuotaExceeded => "quota_exceeded",
            RefusalCode::TooLarge => "too_large",
            RefusalCode::Timeout => "timeout",
            RefusalCode::Busy => "busy",
            RefusalCode::NotReady => "not_ready",
            RefusalCode::NotFound => "not_found",
            RefusalCode::MethodNotAllowed => "method_not_allowed",
            RefusalCode::Internal => "internal",
        }
    }

    /// The HTTP status it is answered with (the CLI's exit code is its own: 3 for a refusal).
    /// The dispatch refusals of one recipient are answered inside a 200; their status says
    /// what they would be on their own.
    pub fn status(self) -> u16 {
        match self {
            RefusalCode::Malformed => 400,
            RefusalCode::Unauthorized | RefusalCode::BadSignature | RefusalCode::StaleSignature => {
                401
            }
            RefusalCode::Forbidden => 403,
            RefusalCode::UnknownJob
            | RefusalCode::UnknownCase
            | RefusalCode::UnknownReview
            | RefusalCode::UnknownCaller
            | RefusalCode::UnknownDispatch
            | RefusalCode::UnknownSource
            | RefusalCode::NoDispatch
            | RefusalCode::NotFound => 404,
            RefusalCode::MethodNotAllowed => 405,
            RefusalCode::AttemptLimitReached
            | RefusalCode::ExecutionIdConflict
            | RefusalCode::IdempotencyKeyConflict
            | RefusalCode::CaseInReview
            | RefusalCode::AlreadyResolved
            | RefusalCode::DecisionNotAllowed
            | RefusalCode::LateOutcome
            | RefusalCode::CaseTerminal
            | RefusalCode::DispatchBudgetSpent => 409,
            RefusalCode::TooLarge => 413,
            RefusalCode::UnsafeValue
            | RefusalCode::UnknownTimeZone
            | RefusalCode::DuplicateRecipient => 422,
            RefusalCode::IssuedCaseLimit
            | RefusalCode::RateLimited
            | RefusalCode::QuotaExceeded => 429,
            RefusalCode::Internal => 500,
            RefusalCode::Timeout | RefusalCode::Busy | RefusalCode::NotReady => 503,
        }
    }
}

impl std::fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_wire_name_and_a_4xx_or_5xx() {
        for code in RefusalCode::ALL {
            let wire = serde_json::to_value(code).unwrap();
            assert_eq!(wire, code.as_str(), "{code:?}");
            let back: RefusalCode = serde_json::from_value(wire).unwrap();
            assert_eq!(back, code);
            assert!((400..600).contains(&code.status()), "{code:?}");
        }
        let mut names: Vec<&str> = RefusalCode::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RefusalCode::ALL.len());
    }
}
