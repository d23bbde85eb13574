//! A notification's payload and its stable id, built from the event that calls for it.
//!
//! The payload carries ids, names, times and the pack's own hand-off text (`why`, `to`,
//! `nextStep`): never an excerpt, and never a result's `reason` (which may quote what an
//! agent sent). Its id is a hash of the event's identity, so the same event, recorded again
//! by a resend, a second server or a retry, gives the same id, and a store's UNIQUE constraint
//! keeps one row per event and target.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::NotifyKind;
use crate::case::identity::text_hash;
use crate::case::{DecisionResult, EscalationView, Next, Refusal, RefusalCode, ResultStatus};

/// One notification, as stored and as sent in the `backstop` format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notice {
    /// Its stable id: `ntf_` and 32 hex digits derived from the event (the
    /// `Backstop-Event-Id` header; the same on every retry).
    pub id: String,
    /// What happened.
    pub kind: NotifyKind,
    /// When it happened.
    pub at: Timestamp,
    /// Whose case or task it is.
    pub caller: String,
    /// The job (case events).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub job: Option<String>,
    /// The case id (case events).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub case_id: Option<String>,
    /// The task, the tool and the failure's class (task events).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub task: Option<TaskFailure>,
    /// The review item that was opened, or that holds the case.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub review_id: Option<i64>,
    /// The lane a held case is in.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub lane: Option<String>,
    /// The refusal code (`attempt_limit` and `dispatch_refused`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub code: Option<RefusalCode>,
    /// The dispatch recipient that was refused (`dispatch_refused`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recipient: Option<String>,
    /// Attempts used in the case's cycle, when an attempt was counted or refused.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub attempts_used: Option<u32>,
    /// The pack's hand-off: id, why, to, `nextStep`, and the trigger that showed it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub escalation: Option<EscalationView>,
    /// One line a person can act on.
    pub text: String,
}

/// A case, as the events on it name it.
#[derive(Debug, Clone, Copy)]
pub struct CaseRef<'a> {
    /// Whose case.
    pub caller: &'a str,
    /// The job.
    pub job: &'a str,
    /// The normalized case id.
    pub case_id: &'a str,
}

/// What a task's escalation names of the failure that escalated it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFailure {
    /// The task.
    pub task: String,
    /// The tool that failed, when named.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tool: Option<String>,
    /// The failure's class.
    pub class: String,
    /// Who the escalation goes to.
    pub to: String,
}

/// `ntf_` and the first 128 bits of the SHA-256 of the kind and the parts, in hex.
fn notice_id(kind: NotifyKind, parts: &[&str]) -> String {
    let mut text = kind.as_str().to_owned();
    for part in parts {
        text.push('\u{1f}');
        text.push_str(part);
    }
    format!("ntf_{}", text_hash(&text))
}

impl Notice {
    /// A notice with nothing but its id, kind, time and caller.
    fn bare(kind: NotifyKind, id: String, caller: &str, at: Timestamp) -> Notice {
        Notice {
            id,
            kind,
            at,
            caller: caller.to_owned(),
            job: None,
            case_id: None,
            task: None,
            review_id: None,
            lane: None,
            code: None,
            recipient: None,
            attempts_used: None,
            escalation: None,
            text: String::new(),
        }
    }

    /// A notice about `case`.
    fn on_case(kind: NotifyKind, id: String, case: CaseRef<'_>, at: Timestamp) -> Notice {
        Notice {
            job: Some(case.job.to_owned()),
            case_id: Some(case.case_id.to_owned()),
            ..Notice::bare(kind, id, case.caller, at)
        }
    }

    /// What a counted attempt calls for: `review_opened` when it opened the review item
    /// `review`, and `escalation` when its result tells the agent to stop and hand the case to
    /// a person (the attempt limit, no progress, or a held lane with no retry left).
    ///
    /// Ids: the review item's id for `review_opened`; the attempt's execution id (unique per
    /// caller and job) for `escalation`.
    pub fn for_attempt(
        case: CaseRef<'_>,
        execution_id: &str,
        result: &DecisionResult,
        review: Option<i64>,
        at: Timestamp,
    ) -> Vec<Notice> {
        let mut notices = Vec::new();
        let lane = (result.status == ResultStatus::Held)
            .then(|| result.outcome.clone())
            .flatten();
        if let Some(id) = review {
            let mut n = Notice::on_case(
                NotifyKind::ReviewOpened,
                notice_id(NotifyKind::ReviewOpened, &["review", &id.to_string()]),
                case,
                at,
            );
            n.review_id = Some(id);
            n.lane.clone_from(&lane);
            n.attempts_used = Some(result.attempts.used);
            n.escalation.clone_from(&result.escalation);
            n.text = n.summary();
            notices.push(n);
        }
        if result.attempts.next == Some(Next::Escalate) {
            let id = notice_id(
                NotifyKind::Escalation,
                &[case.caller, case.job, execution_id],
            );
            let mut n = Notice::on_case(NotifyKind::Escalation, id, case, at);
            n.review_id = review;
            n.lane = lane;
            n.attempts_used = Some(result.attempts.used);
            n.escalation.clone_from(&result.escalation);
            n.text = n.summary();
            notices.push(n);
        }
        notices
    }

    /// What a refusal calls for: `attempt_limit` for `attempt_limit_reached`, once per case
    /// and cycle (the id is the case's and the cycle's), nothing for any other code.
    pub fn for_refusal(
        case: CaseRef<'_>,
        cycle: u32,
        attempts_used: u32,
        refusal: &Refusal,
        at: Timestamp,
    ) -> Option<Notice> {
        if refusal.code() != RefusalCode::AttemptLimitReached {
            return None;
        }
        let id = notice_id(
            NotifyKind::AttemptLimit,
            &[case.caller, case.job, case.case_id, &cycle.to_string()],
        );
        let mut n = Notice::on_case(NotifyKind::AttemptLimit, id, case, at);
        n.code = Some(RefusalCode::AttemptLimitReached);
        n.attempts_used = Some(attempts_used);
        n.escalation.clone_from(&refusal.error.escalation);
        n.text = n.summary();
        Some(n)
    }

    /// What a refused dispatch recipient calls for: `dispatch_refused` for `case_terminal`,
    /// `case_in_review` and `dispatch_budget_spent`, once per case, cycle and code (a second
    /// recipient, or the same content asked again, is the same event), nothing for a refusal
    /// the request itself caused (`unsafe_value`, ...).
    pub fn for_dispatch_refusal(
        case: CaseRef<'_>,
        cycle: u32,
        recipient: &str,
        code: RefusalCode,
        escalation: Option<&EscalationView>,
        at: Timestamp,
    ) -> Option<Notice> {
        if !matches!(
            code,
            RefusalCode::CaseTerminal
                | RefusalCode::CaseInReview
                | RefusalCode::DispatchBudgetSpent
        ) {
            return None;
        }
        let id = notice_id(
            NotifyKind::DispatchRefused,
            &[
                case.caller,
                case.job,
                case.case_id,
                &cycle.to_string(),
                code.as_str(),
            ],
        );
        let mut n = Notice::on_case(NotifyKind::DispatchRefused, id, case, at);
        n.code = Some(code);
        n.recipient = Some(recipient.to_owned());
        n.escalation = escalation.cloned();
        n.text = n.summary();
        Some(n)
    }

    /// What a task's escalation (a review item of kind `task`, `review`) calls for:
    /// `review_opened` and `escalation`, both named by the review item.
    pub fn for_task_review(
        caller: &str,
        review: i64,
        failure: &TaskFailure,
        at: Timestamp,
    ) -> Vec<Notice> {
        [NotifyKind::ReviewOpened, NotifyKind::Escalation]
            .into_iter()
            .map(|kind| {
                let id = notice_id(kind, &["task-review", &review.to_string()]);
                let mut n = Notice::bare(kind, id, caller, at);
                n.task = Some(failure.clone());
                n.review_id = Some(review);
                n.text = n.summary();
                n
            })
            .collect()
    }

    /// One line for a person: what happened, to what, and who takes it.
    pub fn summary(&self) -> String {
        let subject = match (&self.job, &self.case_id, &self.task) {
            (Some(job), Some(case), _) => format!("{job} case `{case}`"),
            (_, _, Some(task)) => format!("task `{}` of {}", task.task, self.caller),
            _ => format!("a case of {}", self.caller),
        };
        let to = self
            .escalation
            .as_ref()
            .map(|e| e.to.as_str())
            .or(self.task.as_ref().map(|t| t.to.as_str()))
            .unwrap_or("a person");
        let next = self
            .escalation
            .as_ref()
            .map(|e| format!(" Next: {}", e.next_step))
            .unwrap_or_default();
        let review = self
            .review_id
            .map(|id| format!(" (review {id})"))
            .unwrap_or_default();
        let what = match (self.kind, &self.task) {
            (NotifyKind::ReviewOpened, Some(t)) => format!(
                "is waiting for {to}{review}: a {} failure{} escalated it.",
                t.class,
                t.tool
                    .as_ref()
                    .map(|tool| format!(" of `{tool}`"))
                    .unwrap_or_default()
            ),
            (NotifyKind::ReviewOpened, None) => format!(
                "is held in `{}` for {to}{review}.",
                self.lane.as_deref().unwrap_or("review")
            ),
            (NotifyKind::Escalation, _) => {
                let why = self
                    .escalation
                    .as_ref()
                    .map(|e| format!(" ({})", e.trigger.as_str()))
                    .unwrap_or_default();
                format!("escalates to {to}{why}{review}.")
            }
            (NotifyKind::AttemptLimit, _) => format!(
                "has no attempts left ({} used) and was refused: hand it to {to}.",
                self.attempts_used.unwrap_or_default()
            ),
            (NotifyKind::DispatchRefused, _) => format!(
                "could not be dispatched to `{}` ({}): hand it to {to}.",
                self.recipient.as_deref().unwrap_or_default(),
                self.code.map(RefusalCode::as_str).unwrap_or_default()
            ),
        };
        format!("{subject} {what}{next}")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::case::{AttemptsView, CaseView, Trigger};

    const CASE: CaseRef<'static> = CaseRef {
        caller: "agent-a",
        job: "vendor-risk",
        case_id: "acme",
    };

    fn at() -> Timestamp {
        "2026-11-01T09:00:00Z".parse().unwrap()
    }

    fn handoff(trigger: Trigger) -> EscalationView {
        EscalationView {
            id: "security-review".to_owned(),
            why: "The vendor's data access is unclear.".to_owned(),
            to: "Security".to_owned(),
            next_step: "Open a security review ticket.".to_owned(),
            trigger,
        }
    }

    fn result(status: ResultStatus, next: Option<Next>, trigger: Trigger) -> DecisionResult {
        DecisionResult {
            status,
            outcome: (status == ResultStatus::Held).then(|| "human_review".to_owned()),
            next_step: String::new(),
            case: CaseView {
                id: "acme".to_owned(),
                fields: None,
            },
            attempts: AttemptsView {
                used: 2,
                remaining: 0,
                next,
            },
            answers: BTreeMap::new(),
            retry: BTreeMap::new(),
            missing: Vec::new(),
            escalation: Some(handoff(trigger)),
            effects: Vec::new(),
            reason: "the excerpt said SECRET-EXCERPT-TEXT".to_owned(),
        }
    }

    #[test]
    fn a_held_result_gives_review_opened_and_escalation_without_its_reason() {
        let held = result(ResultStatus::Held, Some(Next::Escalate), Trigger::Held);
        let notices = Notice::for_attempt(CASE, "run-2", &held, Some(7), at());
        let kinds: Vec<_> = notices.iter().map(|n| n.kind).collect();
        assert_eq!(kinds, [NotifyKind::ReviewOpened, NotifyKind::Escalation]);
        assert_eq!(notices[0].review_id, Some(7));
        assert_eq!(notices[0].lane.as_deref(), Some("human_review"));
        let text = serde_json::to_string(&notices).unwrap();
        assert!(!text.contains("SECRET-EXCERPT-TEXT"), "{text}");
        assert!(notices[0].text.contains("vendor-risk case `acme`"));
        assert!(notices[0].text.contains("Open a security review ticket."));
        assert_ne!(notices[0].id, notices[1].id);
    }

    #[test]
    fn a_lane_that_allows_a_retry_opens_a_review_but_does_not_escalate_yet() {
        let held = result(ResultStatus::Held, Some(Next::Retry), Trigger::Held);
        let notices = Notice::for_attempt(CASE, "run-2", &held, Some(7), at());
        let kinds: Vec<_> = notices.iter().map(|n| n.kind).collect();
        assert_eq!(kinds, [NotifyKind::ReviewOpened]);
        let retry = result(
            ResultStatus::Undecided,
            Some(Next::Retry),
            Trigger::Unresolved,
        );
        assert!(Notice::for_attempt(CASE, "run-1", &retry, None, at()).is_empty());
        let limit = result(
            ResultStatus::Undecided,
            Some(Next::Escalate),
            Trigger::AttemptLimit,
        );
        let notices = Notice::for_attempt(CASE, "run-3", &limit, None, at());
        assert_eq!(notices.len(), 1);
        assert_eq!(notices[0].kind, NotifyKind::Escalation);
        assert!(
            notices[0].text.contains("(attempt_limit)"),
            "{}",
            notices[0].text
        );
    }

    #[test]
    fn ids_are_the_events_own_and_stable() {
        let held = result(ResultStatus::Held, Some(Next::Escalate), Trigger::Held);
        let one = Notice::for_attempt(CASE, "run-2", &held, Some(7), at());
        let later = at() + jiff::SignedDuration::from_hours(1);
        let again = Notice::for_attempt(CASE, "run-2", &held, Some(7), later);
        assert_eq!(one[0].id, again[0].id);
        assert_eq!(one[1].id, again[1].id);
        let other = Notice::for_attempt(CASE, "run-3", &held, Some(8), at());
        assert_ne!(one[0].id, other[0].id);
        assert_ne!(one[1].id, other[1].id);
        assert!(one[0].id.starts_with("ntf_") && one[0].id.len() == 36);

        let refusal = Refusal::new(RefusalCode::AttemptLimitReached, "no attempts left")
            .with_escalation(Some(handoff(Trigger::AttemptLimit)));
        let first = Notice::for_refusal(CASE, 0, 3, &refusal, at()).unwrap();
        let second = Notice::for_refusal(CASE, 0, 3, &refusal, later).unwrap();
        let next_cycle = Notice::for_refusal(CASE, 1, 3, &refusal, at()).unwrap();
        assert_eq!(first.id, second.id);
        assert_ne!(first.id, next_cycle.id);
        assert_eq!(first.code, Some(RefusalCode::AttemptLimitReached));
        let conflict = Refusal::new(RefusalCode::ExecutionIdConflict, "another body");
        assert!(Notice::for_refusal(CASE, 0, 3, &conflict, at()).is_none());
    }

    #[test]
    fn only_refusals_a_person_must_act_on_are_dispatch_notices() {
        let escalation = handoff(Trigger::AttemptLimit);
        let budget = |recipient| {
            Notice::for_dispatch_refusal(
                CASE,
                0,
                recipient,
                RefusalCode::DispatchBudgetSpent,
                Some(&escalation),
                at(),
            )
        };
        let (r1, r2) = (budget("r1").unwrap(), budget("r2").unwrap());
        assert_eq!(r1.id, r2.id, "one event per case, cycle and code");
        assert!(r1.text.contains("dispatch_budget_spent"), "{}", r1.text);
        for code in [
            RefusalCode::UnsafeValue,
            RefusalCode::UnknownTimeZone,
            RefusalCode::DuplicateRecipient,
        ] {
            assert!(Notice::for_dispatch_refusal(CASE, 0, "r1", code, None, at()).is_none());
        }
    }

    #[test]
    fn a_task_review_names_the_task_and_who_takes_it() {
        let failure = TaskFailure {
            task: "build-7".to_owned(),
            tool: Some("search".to_owned()),
            class: "policy_denied".to_owned(),
            to: "on-call".to_owned(),
        };
        let notices = Notice::for_task_review("agent-a", 4, &failure, at());
        assert_eq!(notices.len(), 2);
        assert!(notices.iter().all(|n| n.review_id == Some(4)));
        assert_eq!(
            notices[0].text,
            "task `build-7` of agent-a is waiting for on-call (review 4): a policy_denied \
             failure of `search` escalated it."
        );
        let wire = serde_json::to_value(&notices[1]).unwrap();
        assert_eq!(wire["kind"], "escalation");
        assert_eq!(wire["task"]["task"], "build-7");
        assert!(wire.get("job").is_none(), "{wire}");
    }
}
