//! One attempt on a case, decided purely from the pack, the stored state and the request.
//!
//! The order is the contract of seed 000: a resend returns the stored result; a case that is
//! unknown, over the issued-case limit, in review or past its attempt limit is refused before
//! anything runs; otherwise the evidence is judged, the attempt is counted, and the result
//! says what comes next — with the escalation the pack names for it.

use crate::case::RefusalCode;
use std::collections::BTreeSet;

use jiff::Timestamp;

use super::identity::text_hash;
use super::request::{CaseLookup, Request};
use super::result::{
    AnswerView, AttemptsView, CaseView, DecisionResult, EscalationView, Next, Refusal,
    ResultStatus, RetryGuidance, Trigger,
};
use super::{
    AttemptRecord, Attempted, CaseState, Change, Citation, ISSUED_CASES_PER_DAY, NewCase,
    NewReview, StoredExecution,
};
use crate::judge::{Judgement, Status, judge_case_with_facts};
use crate::pack::{
    AfterDecision, LOW_CONFIDENCE_LANE, MISSING_FIELDS_LANE, POLICY_GAP_LANE, Pack,
    UNRECONCILED_LANE,
};

/// Decides one attempt: a replay, a refusal, or a counted result with its change.
///
/// `state` must be what the store holds for `request`'s case at `now`, loaded in the same
/// transaction the change is applied in.
pub fn attempt(pack: &Pack, state: &CaseState, request: &Request, now: Timestamp) -> Attempted {
    if let Some(answer) = resent(state, request) {
        return answer;
    }
    let (case, open_case) = match resolve_case(state, request) {
        Ok(found) => found,
        Err(refusal) => return Attempted::Refused(*refusal),
    };
    if pack.attempts.after_decision == AfterDecision::Final && state.cycle > 0 {
        return noop(state, request, case, now);
    }
    let in_window: Vec<&AttemptRecord> = state
        .attempts
        .iter()
        // `duration_since` cannot overflow, whatever the times and the window.
        .filter(|a| now.duration_since(a.at) < pack.attempts.window)
        .collect();
    let reconciled = in_window
        .iter()
        .any(|a| a.status == ResultStatus::Reconcile);
    // A reconcile uses no attempt.
    let counted: Vec<&AttemptRecord> = in_window
        .into_iter()
        .filter(|a| a.status.counts())
        .collect();
    let lane_retry = match review_allows(pack, state, &case) {
        Ok(lane_retry) => lane_retry,
        Err(refusal) => return Attempted::Refused(*refusal),
    };
    if let Some(refusal) = past_the_limit(pack, &counted, &case) {
        return Attempted::Refused(refusal);
    }
    let number = u32::try_from(counted.len()).unwrap_or(u32::MAX) + 1;
    let judgement = judged(pack, request, reconciled, now);
    let missing: Vec<String> = pack
        .related
        .iter()
        .filter(|r| r.required && !request.related.contains_key(&r.kind))
        .map(|r| r.kind.clone())
        .collect();
    let gap = !missing.is_empty();
    let no_evidence = judgement.status == Status::Reconcile || judgement.source_unfinished;
    let (closed, cited) = if gap || no_evidence {
        (Vec::new(), Vec::new())
    } else {
        (
            judgement.answers.keys().cloned().collect(),
            citations(request),
        )
    };
    let progress =
        judgement.status != Status::Reconcile && made_progress(&counted, &closed, &cited);
    let shape = Shape {
        pack,
        number,
        progress,
        lane_retry,
        review_escalation: state.review.as_ref().map(|r| r.escalation.as_str()),
    };
    let mut result = if gap {
        shape.gap(&judgement, missing)
    } else {
        match judgement.status {
            Status::Decided => shape.decided(&judgement),
            Status::Held => shape.held(&judgement),
            Status::Undecided => shape.undecided(&judgement),
            Status::Reconcile => shape.reconcile(&judgement),
        }
    };
    result.case = case;
    let record = AttemptRecord {
        number,
        at: now,
        execution_id: request.execution_id.clone(),
        status: result.status,
        outcome: result.outcome.clone(),
        next: result.attempts.next,
        progress,
        closed,
        cited,
        lane_retry,
    };
    let mut change = change(state, request, &result, record, open_case);
    change.suppress = suppression(pack, &result);
    Attempted::Counted {
        result: Box::new(result),
        change: Box::new(change),
    }
}

/// The suppression a result asks for: its effects name [`super::SUPPRESS_CONTACT`]; in the
/// pack's scope (a case's, by default).
fn suppression(pack: &Pack, result: &DecisionResult) -> Option<super::SuppressContacts> {
    if !result.effects.iter().any(|e| e == super::SUPPRESS_CONTACT) {
        return None;
    }
    Some(super::SuppressContacts {
        scope: pack
            .dispatch
            .as_ref()
            .map_or(crate::pack::SuppressScope::Case, |d| d.suppress_scope),
        reason: result
            .outcome
            .clone()
            .unwrap_or_else(|| super::SUPPRESS_CONTACT.to_owned()),
    })
}

/// A resend: the stored result when the request is the same as the one first sent under its
/// execution id, a conflict when it is not; `None` for a new execution id.
fn resent(state: &CaseState, request: &Request) -> Option<Attempted> {
    let stored = state.execution.as_ref()?;
    if stored.fingerprint == request.fingerprint {
        return Some(Attempted::Replay(stored.result.clone()));
    }
    Some(Attempted::Refused(Refusal::new(
        RefusalCode::ExecutionIdConflict,
        format!(
            "execution_id `{}` was already used with a different request; a resend must carry \
             the same fields and values (key order and spacing do not matter), and a new \
             attempt needs a new execution_id",
            request.execution_id
        ),
    )))
}

/// Whether the case's open review item lets this attempt run, and whether it is the one
/// retry a gather lane allows; a case held in a lane is refused until a person resolves it.
fn review_allows(pack: &Pack, state: &CaseState, case: &CaseView) -> Result<bool, Box<Refusal>> {
    match &state.review {
        None => Ok(false),
        Some(review) if review.retry_allowed && !review.retry_used => Ok(true),
        // An item opened by an escalation (attempt limit, no progress) puts the case in a
        // person's queue without holding it: attempts go on as the limit allows, and a
        // request past the limit is refused with the escalation, as without the item.
        Some(review) if is_escalation_lane(&review.lane) => Ok(false),
        Some(review) => Err(Box::new(
            Refusal::new(
                RefusalCode::CaseInReview,
                format!(
                    "case `{}` is held in lane `{}` for review (item {}); no attempt is \
                 taken until an operator resolves it: escalate with the escalation shown",
                    case.id, review.lane, review.id
                ),
            )
            .with_escalation(escalation(pack, &review.escalation, Trigger::Held)),
        )),
    }
}

/// The refusal of a request past the case's attempt limit, with the escalation.
fn past_the_limit(pack: &Pack, counted: &[&AttemptRecord], case: &CaseView) -> Option<Refusal> {
    let spent = counted
        .last()
        .is_some_and(|a| a.next == Some(Next::Escalate));
    (spent || counted.len() > pack.attempts.max as usize).then(|| {
        Refusal::new(
            RefusalCode::AttemptLimitReached,
            format!(
                "case `{}` has no attempts left ({} used in this cycle): stop and escalate \
                 with the escalation shown",
                case.id,
                counted.len()
            ),
        )
        .with_escalation(limit_escalation(pack))
    })
}

/// The evidence judged against the pack, the related records' facts included; a second
/// reconcile in a cycle is held for a person instead.
fn judged(pack: &Pack, request: &Request, reconciled: bool, now: Timestamp) -> Judgement {
    let facts: std::collections::BTreeMap<String, String> = request
        .related
        .iter()
        .flat_map(|(kind, record)| {
            record
                .fields
                .iter()
                .map(move |(field, value)| (format!("related.{kind}.{field}"), value.clone()))
        })
        .collect();
    let mut judgement = judge_case_with_facts(
        pack,
        &request.questions,
        &facts,
        request.confidence,
        request.source_status.as_deref(),
        now,
    );
    if judgement.status == Status::Reconcile && reconciled {
        // Reconcile once, then a person: never an automatic redial.
        let lane = pack.envelope.unreconciled.clone();
        judgement.reason = format!(
            "{}; a reconcile was already asked for in this cycle, so the case is held in lane `{lane}`",
            judgement.reason
        );
        judgement.status = Status::Held;
        judgement.outcome = Some(lane);
    }
    judgement
}

/// What the store applies for a counted attempt: the record, the stored result, the cycle's
/// end, and the review item opened, retried or closed.
fn change(
    state: &CaseState,
    request: &Request,
    result: &DecisionResult,
    record: AttemptRecord,
    open_case: Option<NewCase>,
) -> Change {
    let review_id = state.review.as_ref().map(|r| r.id);
    let lane_retry = record.lane_retry;
    Change {
        case_id: result.case.id.clone(),
        open_case,
        attempt: record,
        execution: StoredExecution {
            fingerprint: request.fingerprint.clone(),
            result: serde_json::to_string(result).unwrap_or_default(),
        },
        end_cycle: result.status == ResultStatus::Decided,
        open_review: review_to_open(result, state).map(|lane| NewReview {
            // Only a retry this result offers: a lane's retry past the limit is none.
            retry_allowed: result.attempts.next == Some(Next::Retry),
            escalation: result
                .escalation
                .as_ref()
                .map(|e| e.id.clone())
                .unwrap_or_default(),
            lane,
            reason: result.reason.clone(),
        }),
        use_review_retry: review_id.filter(|_| lane_retry),
        close_review: review_id.filter(|_| result.status == ResultStatus::Decided),
        suppress: None,
    }
}

/// The lane of the review item this result opens, if any: a held result's lane, or the
/// trigger of an escalation that hands the case to a person now (`attempt_limit`,
/// `no_progress`). A case with an open item opens no second one.
fn review_to_open(result: &DecisionResult, state: &CaseState) -> Option<String> {
    if state.review.is_some() {
        return None;
    }
    if result.status == ResultStatus::Held {
        return Some(result.outcome.clone().unwrap_or_default());
    }
    let trigger = result.escalation.as_ref()?.trigger;
    matches!(trigger, Trigger::AttemptLimit | Trigger::NoProgress)
        .then(|| trigger.as_str().to_owned())
}

/// Whether a review item's lane is an escalation's trigger rather than a pack's lane.
pub fn is_escalation_lane(lane: &str) -> bool {
    lane == Trigger::AttemptLimit.as_str() || lane == Trigger::NoProgress.as_str()
}

/// A request on a case whose pack makes its decision final: answered `noop` and kept as
/// history (in the ended cycle's place), changing nothing else.
fn noop(state: &CaseState, request: &Request, case: CaseView, now: Timestamp) -> Attempted {
    let number = u32::try_from(state.attempts.len()).unwrap_or(u32::MAX) + 1;
    let result = DecisionResult {
        status: ResultStatus::Noop,
        outcome: None,
        next_step: "Nothing: the case was decided earlier (or resolved by a person), and a late \
                    result never overwrites it. It is kept as history."
            .to_owned(),
        case,
        attempts: AttemptsView {
            used: 0,
            remaining: 0,
            next: None,
        },
        answers: std::collections::BTreeMap::new(),
        retry: std::collections::BTreeMap::new(),
        missing: Vec::new(),
        escalation: None,
        effects: Vec::new(),
        reason: "the case's decision is final (attempts.after_decision = \"final\"): a late \
                 result is a no-op"
            .to_owned(),
    };
    let change = Change {
        case_id: result.case.id.clone(),
        open_case: None,
        attempt: AttemptRecord {
            number,
            at: now,
            execution_id: request.execution_id.clone(),
            status: ResultStatus::Noop,
            outcome: None,
            next: None,
            progress: false,
            closed: Vec::new(),
            cited: Vec::new(),
            lane_retry: false,
        },
        execution: StoredExecution {
            fingerprint: request.fingerprint.clone(),
            result: serde_json::to_string(&result).unwrap_or_default(),
        },
        end_cycle: false,
        open_review: None,
        use_review_retry: None,
        close_review: None,
        suppress: None,
    };
    Attempted::Counted {
        result: Box::new(result),
        change: Box::new(change),
    }
}

/// The case the request counts against, and the case to create first if it is new.
fn resolve_case(
    state: &CaseState,
    request: &Request,
) -> Result<(CaseView, Option<NewCase>), Box<Refusal>> {
    match &request.case {
        CaseLookup::Named { id, issued, fields } => {
            let exists = state.case_id.is_some();
            if *issued && !exists {
                return Err(Box::new(Refusal::new(
                    RefusalCode::UnknownCase,
                    format!(
                        "no case `{id}` was issued to this caller on this job: leave `case` out \
                         of a first request, then send the `case.id` its result returns"
                    ),
                )));
            }
            let view = CaseView {
                id: id.clone(),
                fields: fields.clone(),
            };
            let open = (!exists).then_some(NewCase {
                issued: false,
                opening_hash: None,
            });
            Ok((view, open))
        }
        CaseLookup::Open {
            opening_hash,
            candidate,
        } => {
            // With no excerpt text there is nothing to recognize a fresh start by.
            if let Some(reused) = &state.case_id {
                let view = CaseView {
                    id: reused.clone(),
                    fields: None,
                };
                return Ok((view, None));
            }
            if state.issued_last_day >= ISSUED_CASES_PER_DAY {
                return Err(Box::new(Refusal::new(
                    RefusalCode::IssuedCaseLimit,
                    format!(
                        "this caller opened {} cases on this job in the last 24 hours, the most \
                         allowed ({ISSUED_CASES_PER_DAY}); retry an existing case with its \
                         `case.id`, or wait",
                        state.issued_last_day
                    ),
                )));
            }
            let view = CaseView {
                id: candidate.clone(),
                fields: None,
            };
            let open = NewCase {
                issued: true,
                opening_hash: opening_hash.clone(),
            };
            Ok((view, Some(open)))
        }
    }
}

/// Every excerpt's source, locator and text hash, sorted and without repeats.
fn citations(request: &Request) -> Vec<Citation> {
    let cited: BTreeSet<Citation> = request
        .excerpts()
        .map(|(under, e)| Citation {
            under: under.to_owned(),
            source: e.source.clone(),
            locator: e.locator.clone(),
            hash: text_hash(&e.text),
        })
        .collect();
    cited.into_iter().collect()
}

/// Whether the attempt closed a question or cited a source and locator that no counted
/// earlier attempt did. For a first attempt: whether it closed or cited anything.
fn made_progress(earlier: &[&AttemptRecord], closed: &[String], cited: &[Citation]) -> bool {
    let closed_before: BTreeSet<&str> = earlier
        .iter()
        .flat_map(|a| a.closed.iter().map(String::as_str))
        .collect();
    let cited_before: BTreeSet<(&str, &str)> = earlier
        .iter()
        .flat_map(|a| {
            a.cited
                .iter()
                .map(|c| (c.source.as_str(), c.locator.as_str()))
        })
        .collect();
    closed.iter().any(|k| !closed_before.contains(k.as_str()))
        || cited
            .iter()
            .any(|c| !cited_before.contains(&(c.source.as_str(), c.locator.as_str())))
}

/// The escalation the pack names for the attempt limit.
fn limit_escalation(pack: &Pack) -> Option<EscalationView> {
    escalation(pack, &pack.attempts.escalate, Trigger::AttemptLimit)
        .or_else(|| escalation(pack, &pack.unresolved.escalate, Trigger::AttemptLimit))
}

/// The pack's escalation `id`, shown with `trigger`.
pub(crate) fn escalation(pack: &Pack, id: &str, trigger: Trigger) -> Option<EscalationView> {
    pack.escalation(id).map(|e| EscalationView {
        id: e.id.clone(),
        why: e.why.clone(),
        to: e.to.clone(),
        next_step: e.next_step.clone(),
        trigger,
    })
}

/// What shapes a result beyond the judgement.
struct Shape<'a> {
    pack: &'a Pack,
    number: u32,
    progress: bool,
    lane_retry: bool,
    /// The open review item's escalation, when the case is in review.
    review_escalation: Option<&'a str>,
}

impl Shape<'_> {
    /// Whether another attempt may follow this one: within the limit, or the one extra that
    /// progress on the last attempt earns.
    fn may_retry(&self, progress: bool) -> bool {
        let max = self.pack.attempts.max;
        self.number < max || (self.number == max && progress)
    }

    /// Attempts left after this one, when another may follow.
    fn remaining(&self) -> u32 {
        self.pack.attempts.max.saturating_sub(self.number).max(1)
    }

    /// An answer as the result shows it: a number question's as a JSON number.
    fn answer_value(&self, key: &str, answer: &str) -> serde_json::Value {
        let number = self
            .pack
            .question(key)
            .filter(|q| q.value_type == crate::pack::ValueType::Number)
            .and_then(|_| answer.parse::<serde_json::Number>().ok());
        number.map_or_else(
            || serde_json::Value::String(answer.to_owned()),
            serde_json::Value::Number,
        )
    }

    fn base(&self, status: ResultStatus, judgement: &Judgement) -> DecisionResult {
        DecisionResult {
            status,
            outcome: None,
            next_step: String::new(),
            case: CaseView {
                id: String::new(),
                fields: None,
            },
            attempts: AttemptsView {
                used: self.number,
                remaining: 0,
                next: Some(Next::Escalate),
            },
            answers: judgement
                .answers
                .iter()
                .map(|(key, answer)| (key.clone(), self.answer_value(key, answer)))
                .collect(),
            retry: std::collections::BTreeMap::new(),
            missing: Vec::new(),
            escalation: None,
            effects: Vec::new(),
            reason: judgement.reason.clone(),
        }
    }

    fn decided(&self, judgement: &Judgement) -> DecisionResult {
        let mut result = self.base(ResultStatus::Decided, judgement);
        let outcome = judgement.outcome.clone().unwrap_or_default();
        if let Some(defined) = self.pack.outcome(&outcome) {
            result.next_step.clone_from(&defined.next_step);
            result.effects.clone_from(&defined.effects);
        }
        result.outcome = Some(outcome);
        result.attempts.remaining = self.pack.attempts.max.saturating_sub(self.number);
        result.attempts.next = None;
        result
    }

    fn held(&self, judgement: &Judgement) -> DecisionResult {
        let mut result = self.base(ResultStatus::Held, judgement);
        let lane = judgement.outcome.clone().unwrap_or_default();
        let unresolved = &self.pack.unresolved.escalate;
        let (next_step, escalate, may_gather) = match self.pack.outcome(&lane) {
            Some(o) => {
                result.effects.clone_from(&o.effects);
                let escalate = o.escalate.as_deref().unwrap_or(unresolved);
                (o.next_step.clone(), escalate.to_owned(), o.allow_retry > 0)
            }
            None => (builtin_lane_step(&lane), unresolved.clone(), false),
        };
        result.next_step = next_step;
        result.escalation = escalation(self.pack, &escalate, Trigger::Held);
        if may_gather && !self.lane_retry && self.may_retry(true) {
            result.attempts.next = Some(Next::Retry);
            result.attempts.remaining = 1;
            result
                .reason
                .push_str("; the lane allows one more attempt after gathering more");
        }
        result.outcome = Some(lane);
        result
    }

    fn undecided(&self, judgement: &Judgement) -> DecisionResult {
        let mut result = self.base(ResultStatus::Undecided, judgement);
        result.next_step.clone_from(&self.pack.unresolved.next_step);
        result.retry = self.guidance(judgement);
        if self.lane_retry {
            self.back_to_review(&mut result);
            return result;
        }
        if judgement.source_unfinished {
            // The source failed: the count alone decides, up to the attempt limit.
            result.next_step = format!(
                "The source did not finish, so this attempt counts and gave no evidence; try \
                 the source again if attempts remain ({}), else escalate.",
                self.pack.attempts.max.saturating_sub(self.number)
            );
            self.count(&mut result);
            return result;
        }
        if self.number >= 2 && !self.progress {
            result.escalation =
                escalation(self.pack, &self.pack.attempts.escalate, Trigger::NoProgress);
            result.reason.push_str(
                "; this attempt closed no new question and cited no new source, so the case \
                 escalates now",
            );
            return result;
        }
        self.count(&mut result);
        result
    }

    /// Fetch the source's final result and send it again; no attempt is used, so the count
    /// stays where it was.
    fn reconcile(&self, judgement: &Judgement) -> DecisionResult {
        let mut result = self.base(ResultStatus::Reconcile, judgement);
        result.answers.clear();
        "Reconcile: fetch the source's final result (the call's record, not a new call) and \
         send it with a new execution_id; never redial to find out."
            .clone_into(&mut result.next_step);
        result.attempts.used = self.number - 1;
        result.attempts.remaining = self
            .pack
            .attempts
            .max
            .saturating_sub(self.number - 1)
            .max(1);
        result.attempts.next = Some(Next::Retry);
        result
    }

    fn gap(&self, judgement: &Judgement, missing: Vec<String>) -> DecisionResult {
        let mut result = self.base(ResultStatus::Gap, judgement);
        result.answers.clear();
        result.retry = self.guidance(judgement);
        result.next_step = format!(
            "Find the required related record{} ({}) and send {} under `related` with its id and \
             quotes, then ask again; or escalate.",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "it" } else { "them" },
        );
        result.reason = format!(
            "required related record missing: {}; a gap decides nothing, keeps nothing, and \
             counts as an attempt",
            missing.join(", ")
        );
        result.missing = missing;
        if self.lane_retry {
            self.back_to_review(&mut result);
        } else {
            self.count(&mut result);
        }
        result
    }

    /// The lane's one retry did not decide: the case stays in review, so the agent escalates
    /// with the lane's escalation; a further attempt is refused `case_in_review`.
    fn back_to_review(&self, result: &mut DecisionResult) {
        let id = self
            .review_escalation
            .unwrap_or(&self.pack.unresolved.escalate);
        result.escalation = escalation(self.pack, id, Trigger::Held);
        result.reason.push_str(
            "; this was the one retry the lane allowed, so the case stays in review: escalate",
        );
    }

    /// `attempts` and `escalation` of an undecided or gap result by the count alone.
    fn count(&self, result: &mut DecisionResult) {
        let progress = self.progress && result.status != ResultStatus::Gap;
        if self.may_retry(progress) {
            result.attempts.next = Some(Next::Retry);
            result.attempts.remaining = self.remaining();
            result.escalation = escalation(
                self.pack,
                &self.pack.unresolved.escalate,
                Trigger::Unresolved,
            );
        } else {
            result.escalation = limit_escalation(self.pack);
            result
                .reason
                .push_str("; the attempt limit is reached, so the case escalates now");
        }
    }

    /// Retry guidance for each open question.
    fn guidance(&self, judgement: &Judgement) -> std::collections::BTreeMap<String, RetryGuidance> {
        judgement
            .verdicts
            .iter()
            .filter(|v| !v.is_closed())
            .filter_map(|v| {
                let question = self.pack.question(&v.key)?;
                Some((
                    v.key.clone(),
                    RetryGuidance {
                        fix: question.fix.clone(),
                        not_used: v.not_used.clone(),
                        answers: question
                            .answers
                            .iter()
                            .map(|a| AnswerView {
                                value: a.value.clone(),
                                means: a.means.clone(),
                            })
                            .collect(),
                        where_to_look: question.where_to_look.clone(),
                    },
                ))
            })
            .collect()
    }
}

/// The next step of a built-in lane.
fn builtin_lane_step(lane: &str) -> String {
    match lane {
        POLICY_GAP_LANE => {
            "Hand the case to a person: no rule of the pack covers these answers.".to_owned()
        }
        LOW_CONFIDENCE_LANE => "Hand the case to a person: the evidence's confidence is below \
                                the pack's minimum."
            .to_owned(),
        MISSING_FIELDS_LANE => "Hand the case to a person: the result left out a field the \
                                pack requires, and a missing field is never success."
            .to_owned(),
        UNRECONCILED_LANE => "Hand the case to a person: the source still gave no usable \
                              result after a reconcile."
            .to_owned(),
        other => format!("Hand the case to the `{other}` lane."),
    }
}
