//! Recorded deliveries decided: each pending delivery is matched to its dispatch, turned into
//! the case's decision request and judged by the same machinery as `POST .../decisions`; the
//! dispatch takes the result's state, and a do-not-contact outcome suppresses the contact.

use std::sync::Arc;

use backstop_core::case::{DecisionResult, RefusalCode, ResultStatus, parse_request};
use backstop_core::effects::{
    Delivery, DispatchState, Target, decision_body, kept_fields, parse_delivery,
};
use backstop_core::pack::{Pack, SuppressScope};
use backstop_store::{
    DeliveryRecord, DeliveryWrites, DispatchRecord, DispatchUpdate, Reply, Store, StoreError,
    Suppression,
};
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::state::AppState;

pub use backstop_core::case::SUPPRESS_CONTACT;

/// What one delivery came to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Applied {
    /// The delivery's id.
    pub delivery: i64,
    /// `applied`, `unattributed` or `rejected`.
    pub state: &'static str,
    /// What happened, for people.
    pub detail: String,
    /// The dispatch it answered.
    pub dispatch_key: Option<String>,
    /// The case result's status, when it was judged.
    pub status: Option<String>,
}

/// Runs `work` on the store off the async workers.
pub(crate) async fn blocking<T: Send + 'static>(
    store: &Arc<dyn Store>,
    work: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    let store = Arc::clone(store);
    tokio::task::spawn_blocking(move || work(store.as_ref()))
        .await
        .map_err(|e| StoreError::Database(format!("a ledger task failed: {e}")))?
}

/// The dispatch a delivery names.
pub(crate) fn find(
    store: &dyn Store,
    target: &Target,
) -> Result<Option<DispatchRecord>, StoreError> {
    match target {
        Target::Key(key) => store.dispatch_by_key(key),
        Target::Recipient {
            batch_key,
            recipient,
        } => store.dispatch_by_recipient(batch_key, recipient),
    }
}

/// What is kept of a delivery: its ids, status, confidence and failure code, and the result's
/// fields as `kept_fields` keeps them (the values `pack` asks; other fields' names only).
pub(crate) fn kept(delivery: &Delivery, pack: Option<&Pack>) -> Value {
    let result = match (&delivery.result, pack) {
        (Some(fields), Some(pack)) => Some(Value::Object(kept_fields(pack, fields))),
        (Some(_), None) => Some(Value::Object(serde_json::Map::new())),
        (None, _) => None,
    };
    let (dispatch_key, batch_key, recipient) = match &delivery.target {
        Target::Key(key) => (Some(key.as_str()), None, None),
        Target::Recipient {
            batch_key,
            recipient,
        } => (None, Some(batch_key.as_str()), Some(recipient.as_str())),
    };
    json!({
        "event_id": delivery.event_id,
        "dispatch_key": dispatch_key,
        "batch_key": batch_key,
        "recipient": recipient,
        "status": delivery.status,
        "result": result,
        "confidence": delivery.confidence,
        "failure_code": delivery.failure_code,
    })
}

/// Decides every pending delivery, oldest first.
pub async fn apply_pending(state: &AppState) -> Result<Vec<Applied>, StoreError> {
    // One decider at a time in this process (the recorded-delivery task and the sweep both
    // call this); another server on the ledger deciding the same delivery gets the stored
    // result back (the same execution id), and only the first finish counts.
    let _one_at_a_time = state.effects.applying.lock().await;
    let mut done = Vec::new();
    loop {
        let pending = blocking(&state.store, |s| s.deliveries(true, None, 100)).await?;
        if pending.is_empty() {
            return Ok(done);
        }
        for record in pending {
            done.push(apply_one(state, &record).await?);
        }
    }
}

/// Decides one recorded delivery. Its attempt, the contact's suppression, the dispatch's new
/// state and the delivery's end are written in one transaction ([`Store::decide_delivery`]);
/// a delivery that cannot be decided (unreadable, unattributed, its result malformed) is
/// marked done with why.
async fn apply_one(state: &AppState, record: &DeliveryRecord) -> Result<Applied, StoreError> {
    let id = record.id;
    let delivery = match serde_json::from_str(&record.payload)
        .map_err(|e| vec![backstop_core::Issue::new("", "bad_json", e.to_string())])
        .and_then(|v: Value| parse_delivery(&v))
    {
        Ok(d) => d,
        Err(issues) => {
            return not_decided(
                state,
                id,
                "rejected",
                format!("unreadable: {}", issues[0]),
                None,
            )
            .await;
        }
    };
    let target = delivery.target.clone();
    let Some(dispatch) = blocking(&state.store, move |s| find(s, &target)).await? else {
        let why = "no dispatch matches it: recorded, and nothing was decided".to_owned();
        return not_decided(state, id, "unattributed", why, None).await;
    };
    let key = Some(dispatch.key.clone());
    let Some(pack) = state.catalog().packs.get(&dispatch.job).cloned() else {
        let why = format!("the job `{}` is no longer loaded", dispatch.job);
        return not_decided(state, id, "rejected", why, key).await;
    };
    let execution = format!("delivery:{}:{}", record.source, delivery.event_id);
    let (body, undeclared) = decision_body(&pack, &delivery, &dispatch.case, &execution);
    let request = match parse_request(&pack, &dispatch.caller, &body) {
        Ok(request) => request,
        Err(issues) => {
            let list: Vec<String> = issues.iter().map(ToString::to_string).collect();
            let why = format!("its result is malformed: {}", list.join("; "));
            return not_decided(state, id, "rejected", why, key).await;
        }
    };
    let (caller, deciding) = (dispatch.caller.clone(), Arc::clone(&pack));
    let follow_up = move |reply: &Reply, now: Timestamp| {
        let mut writes = writes_for(&pack, &dispatch, &delivery, reply, now);
        if !undeclared.is_empty() {
            writes.detail = format!(
                "invalid: its result has fields the pack's result schema does not declare \
                 ({}), so none of it was used; {}",
                undeclared.join(", "),
                writes.detail
            );
        }
        writes
    };
    let (_, writes) = state
        .attempts
        .decide_delivery(deciding, caller, request, id, Box::new(follow_up))
        .await
        .map_err(|e| StoreError::Busy(format!("the attempt queue: {e:?}")))??;
    Ok(Applied {
        delivery: id,
        state: writes.state,
        detail: writes.detail,
        status: writes.dispatch.and_then(|(_, update)| update.result_status),
        dispatch_key: key,
    })
}

/// A delivery marked done without a decision.
async fn not_decided(
    state: &AppState,
    id: i64,
    end: &'static str,
    detail: String,
    dispatch_key: Option<String>,
) -> Result<Applied, StoreError> {
    let kept = detail.clone();
    blocking(&state.store, move |s| {
        s.finish_delivery(id, end, &kept, Timestamp::now())
    })
    .await?;
    Ok(Applied {
        delivery: id,
        state: end,
        detail,
        dispatch_key,
        status: None,
    })
}

/// What a delivery's decision writes with its attempt. A counted attempt suppresses its case's
/// contacts itself; a resend of a decision (recorded perhaps by a version that did not) does
/// each step again, each kept once: a suppression once, a settled dispatch never moved back.
pub(crate) fn writes_for(
    pack: &Pack,
    dispatch: &DispatchRecord,
    delivery: &Delivery,
    reply: &Reply,
    now: Timestamp,
) -> DeliveryWrites {
    let reconcile_after = pack.dispatch.clone().unwrap_or_default().reconcile_after;
    let (update, suppression, detail) = match reply {
        // The attempt's own change suppressed the case's contacts (`Change::suppress`).
        Reply::Counted(result) => {
            let (update, detail) = outcome_update(pack, result, delivery, now, reconcile_after);
            (update, None, detail)
        }
        Reply::Replayed(stored) => {
            if let Ok(result) = serde_json::from_str::<DecisionResult>(stored) {
                let (update, detail) =
                    outcome_update(pack, &result, delivery, now, reconcile_after);
                let detail = format!("{detail} (a resend: its steps done again, once each)");
                (update, suppression(pack, dispatch, &result), detail)
            } else {
                // A refusal's body: already decided, nothing to do again.
                let status = serde_json::from_str::<Value>(stored)
                    .ok()
                    .and_then(|v| v["status"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                let detail = format!("a resend of a result already decided ({status})");
                (None, None, detail)
            }
        }
        Reply::Refused(refusal) => {
            let code = refusal.code();
            let escalated = matches!(
                code,
                RefusalCode::AttemptLimitReached | RefusalCode::CaseInReview
            );
            let update = DispatchUpdate {
                state: if escalated {
                    DispatchState::Escalated
                } else {
                    DispatchState::Answered
                },
                reconcile_at: None,
                add_round: false,
                failure_code: delivery.failure_code.clone(),
                result_status: Some(format!("refused:{code}")),
            };
            (Some(update), None, format!("the case refused it: {code}"))
        }
    };
    DeliveryWrites {
        suppression,
        dispatch: update.map(|update| (dispatch.key.clone(), update)),
        state: "applied",
        detail,
    }
}

/// The dispatch's new state after its case's result.
fn outcome_update(
    pack: &Pack,
    result: &DecisionResult,
    delivery: &Delivery,
    now: Timestamp,
    reconcile_after: jiff::SignedDuration,
) -> (Option<DispatchUpdate>, String) {
    let status = result.status.as_str().to_owned();
    let unreconciled = result.outcome.as_deref() == Some(pack.envelope.unreconciled.as_str());
    let (state, reconcile_at, add_round) = match result.status {
        ResultStatus::Reconcile => (
            DispatchState::Reconciling,
            now.checked_add(reconcile_after).ok(),
            true,
        ),
        ResultStatus::Held if unreconciled => (DispatchState::Escalated, None, false),
        _ => (DispatchState::Answered, None, false),
    };
    let detail = match &result.outcome {
        Some(outcome) => format!("{status} `{outcome}`"),
        None => status.clone(),
    };
    (
        Some(DispatchUpdate {
            state,
            reconcile_at,
            add_round,
            failure_code: delivery.failure_code.clone(),
            result_status: Some(status),
        }),
        detail,
    )
}

/// The suppression a result asks for (its effects name [`SUPPRESS_CONTACT`]), in the pack's
/// scope.
fn suppression(
    pack: &Pack,
    dispatch: &DispatchRecord,
    result: &DecisionResult,
) -> Option<Suppression> {
    if !result.effects.iter().any(|e| e == SUPPRESS_CONTACT) {
        return None;
    }
    let scope = pack
        .dispatch
        .as_ref()
        .map_or(SuppressScope::Case, |d| d.suppress_scope);
    Some(Suppression {
        caller: dispatch.caller.clone(),
        job: dispatch.job.clone(),
        contact: dispatch.contact.clone(),
        case_id: (scope == SuppressScope::Case).then(|| dispatch.case_id.clone()),
        reason: result
            .outcome
            .clone()
            .unwrap_or_else(|| SUPPRESS_CONTACT.to_owned()),
    })
}
