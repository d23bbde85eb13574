//! Dispatches, deliveries and suppressions: the records side effects leave, and the one
//! algorithm both backends run inside their transaction to gate a dispatch (the backends only
//! answer the questions [`EffectsTx`] asks and write what it hands them).

use backstop_core::case::{Refusal, RefusalBody, RefusalCode};
use backstop_core::effects::{
    DispatchMode, DispatchRequest, DispatchState, GateFacts, GateInput, Recipient, Verdict, gate,
    kept_fields, simulated_because,
};
use backstop_core::notify::{CaseRef, Notice};
use backstop_core::pack::{AfterDecision, Pack};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::Serialize;
use serde_json::Value;

use crate::StoreError;

/// One recipient's dispatch, as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DispatchRecord {
    /// Its content-derived key.
    pub key: String,
    /// The batch it was permitted in.
    pub batch_key: String,
    /// Whose it is.
    pub caller: String,
    /// The job.
    pub job: String,
    /// The case it is for.
    pub case_id: String,
    /// The case as the request named it.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub case: Value,
    /// The recipient's id.
    pub recipient: String,
    /// How the recipient is reached.
    pub contact: String,
    /// Live or simulated.
    pub mode: DispatchMode,
    /// Where it stands.
    pub state: DispatchState,
    /// How many times it was permitted (a failed send may be tried again).
    pub sends: u32,
    /// When it was first permitted.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// When it was last permitted.
    pub last_sent_at: Timestamp,
    /// When the sweep reconciles it if no result has come (null once settled).
    pub reconcile_at: Option<Timestamp>,
    /// How many times it was reconciled.
    pub rounds: u32,
    /// The source's failure code, for a person: never branched on.
    pub failure_code: Option<String>,
    /// The status of the case's result its delivery led to (`decided`, `held`, ...).
    pub result_status: Option<String>,
    /// The simulator's answer for it (simulated dispatches only).
    #[serde(skip)]
    pub simulate: Option<Value>,
}

/// What a recipient was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum AnswerKind {
    /// Go: perform the side effect with this key, then report the outcome.
    Permitted,
    /// Not live, or not on the allowlist: the simulator takes it instead.
    Simulated,
    /// Not now (quiet hours, not due, backoff): ask again after `not_before`. Never escalated.
    Deferred,
    /// The contact asked not to be contacted.
    Suppressed,
    /// This content was dispatched already: `dispatch` is the original.
    Duplicate,
    /// An earlier dispatch of this content has an unknown outcome: reconcile it first.
    Reconcile,
    /// Refused: make the hand-off in `error.escalation`.
    Refused,
}

impl AnswerKind {
    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerKind::Permitted => "permitted",
            AnswerKind::Simulated => "simulated",
            AnswerKind::Deferred => "deferred",
            AnswerKind::Suppressed => "suppressed",
            AnswerKind::Duplicate => "duplicate",
            AnswerKind::Reconcile => "reconcile",
            AnswerKind::Refused => "refused",
        }
    }
}

/// One recipient's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DispatchAnswer {
    /// The recipient's id.
    pub recipient: String,
    /// Its case id.
    pub case_id: String,
    /// The answer.
    pub answer: AnswerKind,
    /// Its content-derived key.
    pub key: String,
    /// Deferred: not before this.
    pub not_before: Option<Timestamp>,
    /// Why, for people.
    pub reason: String,
    /// The dispatch record: the new one, or the original a duplicate or reconcile names.
    pub dispatch: Option<DispatchRecord>,
    /// Refused: the code, message, issues and escalation.
    pub error: Option<RefusalBody>,
    /// What a live dispatch would have been refused for (the content's checks, the pack's
    /// `disclose_ai` and `no_cross_disclosure`), each with its path: sent to the simulator,
    /// it goes, but the content must be fixed before it can go live.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<backstop_core::Issue>,
}

/// A dispatch request's answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DispatchReply {
    /// The batch's key.
    pub batch_key: String,
    /// One answer per recipient, in the order sent.
    pub answers: Vec<DispatchAnswer>,
}

/// What the service brings to a dispatch besides the request.
#[derive(Debug, Clone, Copy)]
pub struct DispatchContext {
    /// Whether the service holds a live key.
    pub live_key: bool,
}

/// A recorded delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeliveryRecord {
    /// Its position.
    pub id: i64,
    /// Who sent it (a webhook source, `simulator`, `reconcile`).
    pub source: String,
    /// The sender's event id.
    pub event_id: String,
    /// When it came.
    pub received_at: Timestamp,
    /// The dispatch it names, when one matched.
    pub dispatch_key: Option<String>,
    /// `pending`, `applied`, `unattributed` or `rejected`.
    pub state: String,
    /// What applying it came to, for people.
    pub detail: Option<String>,
    /// The delivery as recorded: ids, status, confidence, failure code and the result fields
    /// the pack asks (nothing else is kept).
    pub payload: String,
}

/// A change to a dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchUpdate {
    /// The new state.
    pub state: DispatchState,
    /// When the sweep looks at it next (`None`: never).
    pub reconcile_at: Option<Timestamp>,
    /// Count one more reconcile round.
    pub add_round: bool,
    /// A failure code to keep (`None` keeps the one stored).
    pub failure_code: Option<String>,
    /// The case result's status to keep (`None` keeps the one stored).
    pub result_status: Option<String>,
}

/// What deciding a recorded delivery writes after its attempt, in the attempt's own
/// transaction ([`crate::Store::decide_delivery`]): the contact's suppression, the dispatch's
/// new state (never moving a settled dispatch back) and the delivery marked done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryWrites {
    /// A contact to put on the suppression list.
    pub suppression: Option<Suppression>,
    /// The dispatch the delivery answered, and its change.
    pub dispatch: Option<(String, DispatchUpdate)>,
    /// The delivery's end: `applied`, `unattributed` or `rejected`.
    pub state: &'static str,
    /// What became of it, for people.
    pub detail: String,
}

/// A suppression as the ledger keeps it: in force, or lifted by an operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SuppressionRecord {
    /// Whose contact it is.
    pub caller: String,
    /// The job.
    pub job: String,
    /// The contact.
    pub contact: String,
    /// The one case it holds for; `None`: every case of the caller's on the job.
    pub case_id: Option<String>,
    /// When it was put on the list.
    pub at: Timestamp,
    /// Why (the outcome that asked for it, `do_not_call`).
    pub reason: String,
    /// Its lifting, once an operator lifted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifted: Option<Lifted>,
}

/// Who lifted a suppression, when and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Lifted {
    /// When.
    pub at: Timestamp,
    /// The operator.
    pub by: String,
    /// Why, in their words.
    pub why: String,
}

/// Which suppressions to list.
#[derive(Debug, Clone, Default)]
pub struct SuppressionFilter {
    /// Only this caller's.
    pub caller: Option<String>,
    /// Only this job's.
    pub job: Option<String>,
    /// Only this contact's.
    pub contact: Option<String>,
    /// Lifted ones instead of those in force.
    pub lifted: bool,
}

/// The refusal of a lift with nothing to lift.
pub(crate) fn not_in_force(
    caller: &str,
    job: &str,
    contact: &str,
    case_id: Option<&str>,
) -> StoreError {
    let scope = case_id.map_or_else(|| "every case".to_owned(), |case| format!("case `{case}`"));
    StoreError::NotFound(format!(
        "no suppression of `{contact}` for `{caller}` on `{job}` ({scope}) is in force"
    ))
}

/// A contact put on the suppression list: for one case, or (`case_id` `None`) for every case
/// of the caller's on the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suppression {
    /// Whose contact it is.
    pub caller: String,
    /// The job.
    pub job: String,
    /// The contact.
    pub contact: String,
    /// The one case it holds for, or every case.
    pub case_id: Option<String>,
    /// Why.
    pub reason: String,
}

/// Which dispatches to list.
#[derive(Debug, Clone, Default)]
pub struct DispatchFilter {
    /// Only this caller's.
    pub caller: Option<String>,
    /// Only this job's.
    pub job: Option<String>,
    /// Only this batch's.
    pub batch_key: Option<String>,
    /// Only those the sweep should look at by then: awaiting a result, `reconcile_at` passed.
    pub due_by: Option<Timestamp>,
    /// At most this many (default 500).
    pub limit: Option<u32>,
}

/// The reads and writes a backend offers the dispatch algorithm, inside one transaction.
pub(crate) trait EffectsTx {
    /// The dispatch stored under `key`.
    fn prior(&mut self, key: &str) -> Result<Option<DispatchRecord>, StoreError>;
    /// The case's cycle (0 for no case) and its open review item's lane.
    fn standing(
        &mut self,
        caller: &str,
        job: &str,
        case_id: &str,
    ) -> Result<(u32, Option<String>), StoreError>;
    /// The case's sends so far, and the latest send that is not another recipient's in the
    /// same batch (those go out together, with no backoff between them).
    fn case_sends(
        &mut self,
        caller: &str,
        job: &str,
        case_id: &str,
        batch_key: &str,
        key: &str,
    ) -> Result<(u32, Option<Timestamp>), StoreError>;
    /// Whether the contact is suppressed for this case (or for all of them).
    fn suppressed(
        &mut self,
        caller: &str,
        job: &str,
        contact: &str,
        case_id: &str,
    ) -> Result<bool, StoreError>;
    /// Stores a new dispatch, or (a failed one sent again) replaces it.
    fn put(&mut self, record: &DispatchRecord) -> Result<(), StoreError>;
    /// Enqueues the notification a refused recipient calls for, in this transaction.
    fn notify(&mut self, notice: &Notice, now: Timestamp) -> Result<(), StoreError>;
}

/// Gates every recipient of `request`, persisting each one that goes out (live or to the
/// simulator) before the answer is returned.
pub(crate) fn run_dispatch(
    tx: &mut impl EffectsTx,
    pack: &Pack,
    caller: &str,
    request: &DispatchRequest,
    context: DispatchContext,
    now: Timestamp,
) -> Result<DispatchReply, StoreError> {
    // Kept to the millisecond, as the ledger keeps it: a fresh answer and a later read agree.
    let now = Timestamp::from_millisecond(now.as_millisecond()).unwrap_or(now);
    let mut answers = Vec::new();
    let batch: Vec<&str> = request
        .recipients
        .iter()
        .map(|r| r.contact.as_str())
        .collect();
    for recipient in &request.recipients {
        let answer = if let Some(refused) = refused_up_front(recipient) {
            refused
        } else {
            let one = Gated {
                request,
                recipient,
                batch: &batch,
            };
            gate_one(tx, pack, caller, &one, context, now)?
        };
        answers.push(answer);
        fault!("dispatch.recipient_gated");
    }
    Ok(DispatchReply {
        batch_key: request.batch_key.clone(),
        answers,
    })
}

/// An answer with no record and no error yet.
fn blank_answer(recipient: &Recipient, kind: AnswerKind, reason: String) -> DispatchAnswer {
    DispatchAnswer {
        recipient: recipient.id.clone(),
        case_id: recipient.case_id.clone(),
        answer: kind,
        key: recipient.key.clone(),
        not_before: None,
        reason,
        dispatch: None,
        error: None,
        warnings: Vec::new(),
    }
}

/// The refusal of a live dispatch whose content fails the pack's checks: nothing is sent.
fn refused_content(recipient: &Recipient) -> DispatchAnswer {
    let message = "a live call must say it is an AI assistant and name the company it calls \
                   for, and must not disclose another recipient's order: nothing is sent; fix \
                   the content or the values listed and ask again";
    let mut refusal = Refusal::new(RefusalCode::UnsafeValue, message);
    refusal.error.issues.clone_from(&recipient.content_issues);
    let mut refused = blank_answer(recipient, AnswerKind::Refused, message.to_owned());
    refused.error = Some(refusal.error);
    refused
}

/// The refusal of a recipient the request itself disqualifies (a placeholder or injected
/// value, an unknown time zone, a repeated id): nothing about the ledger can change it.
fn refused_up_front(recipient: &Recipient) -> Option<DispatchAnswer> {
    let (code, issues) = recipient.refused.as_ref()?;
    let message = match *code {
        RefusalCode::UnsafeValue => {
            "a value spoken or written to the recipient is a placeholder, reads like an \
             instruction, asks for a secret, holds a card number or carries a term the job has \
             no authority over: nothing is sent; fix the values listed and ask again"
        }
        RefusalCode::UnknownTimeZone => {
            "the recipient's time zone is unknown, so its quiet hours cannot be kept: nothing \
             is sent"
        }
        _ => "the recipient is listed twice: nothing more is sent for its second entry",
    };
    let mut refusal = Refusal::new(*code, message);
    refusal.error.issues.clone_from(issues);
    let mut refused = blank_answer(recipient, AnswerKind::Refused, message.to_owned());
    refused.error = Some(refusal.error);
    Some(refused)
}

/// A permitted dispatch's answer kind and what it tells the caller to do.
fn permitted_words(
    pack: &Pack,
    mode: DispatchMode,
    live_key: bool,
    one: &Gated<'_>,
) -> (AnswerKind, String) {
    match mode {
        DispatchMode::Live => (
            AnswerKind::Permitted,
            "go: perform it with this key, then report sent, failed or unknown".to_owned(),
        ),
        DispatchMode::Simulated => {
            let policy = pack.dispatch.clone().unwrap_or_default();
            let why = simulated_because(&policy, live_key, &one.recipient.contact, one.batch);
            (
                AnswerKind::Simulated,
                format!("sent to the simulator: {why}"),
            )
        }
    }
}

/// What the ledger knows of a recipient when it reaches the gate, and its case's cycle.
fn gate_facts(
    tx: &mut impl EffectsTx,
    pack: &Pack,
    caller: &str,
    request: &DispatchRequest,
    recipient: &Recipient,
    prior: Option<&DispatchRecord>,
) -> Result<(GateFacts, u32), StoreError> {
    let (cycle, review_lane) = tx.standing(caller, &pack.job, &recipient.case_id)?;
    let (case_sends, last_send_at) = tx.case_sends(
        caller,
        &pack.job,
        &recipient.case_id,
        &request.batch_key,
        &recipient.key,
    )?;
    let facts = GateFacts {
        prior: prior.map(|p| (p.state, p.sends)),
        terminal: cycle > 0 && pack.attempts.after_decision == AfterDecision::Final,
        review_lane,
        case_sends,
        last_send_at,
        suppressed: tx.suppressed(caller, &pack.job, &recipient.contact, &recipient.case_id)?,
    };
    Ok((facts, cycle))
}

/// A recipient on its way through the gate: its request, and every contact of its batch.
struct Gated<'a> {
    request: &'a DispatchRequest,
    recipient: &'a Recipient,
    batch: &'a [&'a str],
}

/// One recipient through the gate: its facts loaded, the core's verdict, and a permitted or
/// simulated dispatch stored under its key.
fn gate_one(
    tx: &mut impl EffectsTx,
    pack: &Pack,
    caller: &str,
    one: &Gated<'_>,
    context: DispatchContext,
    now: Timestamp,
) -> Result<DispatchAnswer, StoreError> {
    let (request, recipient) = (one.request, one.recipient);
    let prior = tx.prior(&recipient.key)?;
    let (facts, cycle) = gate_facts(tx, pack, caller, request, recipient, prior.as_ref())?;
    let zone = TimeZone::get(&recipient.time_zone).unwrap_or(TimeZone::UTC);
    let input = GateInput {
        pack,
        live_key: context.live_key,
        contact: &recipient.contact,
        batch: one.batch,
        zone: &zone,
        not_before: request.not_before,
        now,
    };
    let answer = match gate(&input, &facts) {
        Verdict::Permitted(DispatchMode::Live) if !recipient.content_issues.is_empty() => {
            refused_content(recipient)
        }
        Verdict::Permitted(mode) => {
            let record = new_record(pack, caller, request, recipient, prior.as_ref(), mode, now);
            tx.put(&record)?;
            let (kind, reason) = permitted_words(pack, mode, context.live_key, one);
            let mut a = blank_answer(recipient, kind, reason);
            a.dispatch = Some(record);
            a.warnings.clone_from(&recipient.content_issues);
            a
        }
        Verdict::Deferred {
            not_before,
            reason,
            message,
        } => {
            let mut a = blank_answer(
                recipient,
                AnswerKind::Deferred,
                format!("{reason}: {message}"),
            );
            a.not_before = Some(not_before);
            a
        }
        Verdict::Suppressed => blank_answer(
            recipient,
            AnswerKind::Suppressed,
            "the contact asked not to be contacted: nothing is sent".to_owned(),
        ),
        Verdict::Duplicate => {
            let mut a = blank_answer(
                recipient,
                AnswerKind::Duplicate,
                "this content was dispatched already: the original stands".to_owned(),
            );
            a.dispatch = prior;
            a
        }
        Verdict::Reconcile => {
            let mut a = blank_answer(
                recipient,
                AnswerKind::Reconcile,
                "an earlier dispatch of this content has an unknown outcome: reconcile it (its \
                 result, or `backstop reconcile`) before anything is sent again"
                    .to_owned(),
            );
            a.dispatch = prior;
            a
        }
        Verdict::Refused {
            code,
            message,
            escalation,
        } => {
            let case = CaseRef {
                caller,
                job: &pack.job,
                case_id: &recipient.case_id,
            };
            let notice = Notice::for_dispatch_refusal(
                case,
                cycle,
                &recipient.id,
                code,
                escalation.as_ref(),
                now,
            );
            if let Some(notice) = notice {
                tx.notify(&notice, now)?;
            }
            let refusal = Refusal::new(code, message).with_escalation(escalation);
            let mut a = blank_answer(
                recipient,
                AnswerKind::Refused,
                refusal.error.message.clone(),
            );
            a.error = Some(refusal.error);
            a
        }
    };
    Ok(answer)
}

/// The record of a dispatch that goes out now: new, or a failed one sent again under its key.
fn new_record(
    pack: &Pack,
    caller: &str,
    request: &DispatchRequest,
    recipient: &Recipient,
    prior: Option<&DispatchRecord>,
    mode: DispatchMode,
    now: Timestamp,
) -> DispatchRecord {
    let policy = pack.dispatch.clone().unwrap_or_default();
    DispatchRecord {
        key: recipient.key.clone(),
        batch_key: request.batch_key.clone(),
        caller: caller.to_owned(),
        job: pack.job.clone(),
        case_id: recipient.case_id.clone(),
        case: recipient.case.clone(),
        recipient: recipient.id.clone(),
        contact: recipient.contact.clone(),
        mode,
        // The simulator has it at once; a live one waits for the agent's report.
        state: match mode {
            DispatchMode::Live => DispatchState::Permitted,
            DispatchMode::Simulated => DispatchState::Sent,
        },
        sends: prior.map_or(1, |p| p.sends + 1),
        created_at: prior.map_or(now, |p| p.created_at),
        updated_at: now,
        last_sent_at: now,
        reconcile_at: now.checked_add(policy.reconcile_after).ok(),
        rounds: 0,
        failure_code: None,
        result_status: None,
        simulate: match mode {
            DispatchMode::Live => None,
            DispatchMode::Simulated => recipient
                .simulate
                .as_ref()
                .map(|s| kept_simulation(pack, s)),
        },
    }
}

/// What is kept of a recipient's `simulate`: its status, confidence and failure code, and the
/// result's fields as [`kept_fields`] keeps them (no free text reaches the ledger).
fn kept_simulation(pack: &Pack, simulate: &Value) -> Value {
    let mut kept = serde_json::Map::new();
    for name in ["status", "confidence", "failure_code"] {
        if let Some(value) = simulate.get(name) {
            kept.insert(name.to_owned(), value.clone());
        }
    }
    if let Some(result) = simulate.get("result") {
        let asked = result.as_object().map_or(Value::Null, |fields| {
            Value::Object(kept_fields(pack, fields))
        });
        kept.insert("result".to_owned(), asked);
    }
    Value::Object(kept)
}

/// The agent's report on a dispatch it was permitted: `sent`, `failed` or `unknown`.
///
/// # Errors
/// [`StoreError::Conflict`] for a report that comes too late (its result is in, or it was
/// escalated), for a simulated dispatch (the simulator sent it), or for a state that is not a
/// report.
pub(crate) fn apply_outcome(
    record: &mut DispatchRecord,
    outcome: DispatchState,
    failure_code: Option<&str>,
    now: Timestamp,
) -> Result<(), StoreError> {
    if !matches!(
        outcome,
        DispatchState::Sent | DispatchState::Failed | DispatchState::Unknown
    ) {
        return Err(StoreError::Conflict(format!(
            "`{}` is not an outcome: report sent, failed or unknown",
            outcome.as_str()
        )));
    }
    if record.mode == DispatchMode::Simulated {
        return Err(StoreError::Conflict(
            "this dispatch went to the simulator, which reports its own outcome".to_owned(),
        ));
    }
    let open = matches!(
        record.state,
        DispatchState::Permitted | DispatchState::Sent | DispatchState::Unknown
    );
    // The same report again is a no-op; a report on a settled dispatch is too late.
    if record.state == outcome {
        return Ok(());
    }
    if !open || (record.state == DispatchState::Sent && outcome == DispatchState::Failed) {
        return Err(StoreError::Conflict(format!(
            "the dispatch is `{}`: a `{}` report changes nothing now",
            record.state.as_str(),
            outcome.as_str()
        )));
    }
    record.state = outcome;
    record.updated_at = now;
    if outcome == DispatchState::Failed {
        record.reconcile_at = None;
    }
    if let Some(code) = failure_code {
        record.failure_code = Some(code.chars().take(200).collect());
    }
    Ok(())
}

pub(crate) fn json_of(text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("a stored JSON value: {e}")))
}

pub(crate) fn state_of(name: &str) -> Result<DispatchState, StoreError> {
    DispatchState::parse(name)
        .ok_or_else(|| StoreError::Corrupt(format!("`{name}` is not a dispatch state")))
}

pub(crate) fn mode_of(name: &str) -> Result<DispatchMode, StoreError> {
    match name {
        "live" => Ok(DispatchMode::Live),
        "simulated" => Ok(DispatchMode::Simulated),
        other => Err(StoreError::Corrupt(format!(
            "`{other}` is not a dispatch mode"
        ))),
    }
}
