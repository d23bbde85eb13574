//! Side effects: `POST /v1/jobs/{job}/dispatches` (permission, per recipient),
//! `POST /v1/dispatches/{key}/outcome` (the agent's report) and `GET /v1/dispatches/{key}`.

use backstop_core::case::RefusalCode;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use backstop_core::effects::{AnswerOutcome, DispatchState, parse_dispatch};
use backstop_store::{
    AnswerKind, DeliveryRecord, DispatchContext, DispatchRecord, DispatchReply, StoreError,
};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::cases::{bad_path, pack_for};
use crate::auth::Caller;
use crate::body::{JsonBody, typed};
use crate::effects::apply::blocking;
use crate::error::ApiError;
use crate::state::AppState;

/// Permission for a side effect on a case, one answer per recipient.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/jobs/{job}/dispatches", tag = "side effects",
    params(("job" = String, Path, description = "The pack's job (one with a [dispatch] table)")),
    request_body(content = Object, description = "The pack's dispatch request"),
    responses(
        (status = 200, body = DispatchReply, description = "One answer per recipient: permitted, simulated, deferred, suppressed, duplicate, reconcile or refused"),
        (status = "4XX", description = "malformed, unknown_job, no_dispatch", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn dispatch(
    State(state): State<Arc<AppState>>,
    job: Result<Path<String>, PathRejection>,
    caller: Caller,
    JsonBody(value): JsonBody,
) -> Result<Json<DispatchReply>, ApiError> {
    let Path(job) = job.map_err(bad_path)?;
    let pack = pack_for(&state, &job)?;
    if pack.dispatch.is_none() {
        return Err(ApiError::new(
            RefusalCode::NoDispatch,
            format!("the pack `{job}` has no [dispatch] table: its cases take no side effects"),
        ));
    }
    let context = DispatchContext {
        live_key: state.config.effects.live_key.is_some(),
    };
    let store = Arc::clone(&state.store);
    let who = caller.id.clone();
    let reply = tokio::task::spawn_blocking(move || {
        let zone_known = |z: &str| jiff::tz::TimeZone::get(z).is_ok();
        let request =
            parse_dispatch(&pack, &who, &value, &zone_known).map_err(ApiError::malformed)?;
        store
            .dispatch(pack, &who, &request, context, Timestamp::now())
            .map_err(|e| ApiError::store("a dispatch failed", &e))
    })
    .await
    .map_err(|e| ApiError::internal("a dispatch failed", &e))??;
    for answer in &reply.answers {
        state.metrics.dispatch(answer.answer.as_str());
        if answer.answer == AnswerKind::Simulated
            && let Some(record) = &answer.dispatch
        {
            state.effects.simulate(record.clone());
        }
    }
    Ok(Json(reply))
}

/// The agent's report on a permitted dispatch.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DispatchOutcomeBody {
    /// `sent`, `failed` (it certainly did not go out) or `unknown` (a timeout after sending).
    pub outcome: AnswerOutcome,
    /// The target's failure code: stored and shown to a person, never branched on.
    #[serde(default)]
    pub failure_code: Option<String>,
}

/// Reports whether a permitted dispatch went out.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/dispatches/{key}/outcome", tag = "side effects",
    params(("key" = String, Path, description = "The dispatch's key")),
    request_body = DispatchOutcomeBody,
    responses(
        (status = 200, body = DispatchRecord),
        (status = "4XX", description = "malformed, unknown_dispatch, late_outcome", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn outcome(
    State(state): State<Arc<AppState>>,
    key: Result<Path<String>, PathRejection>,
    caller: Caller,
    JsonBody(value): JsonBody,
) -> Result<Json<DispatchRecord>, ApiError> {
    let Path(key) = key.map_err(bad_path)?;
    let body: DispatchOutcomeBody = typed(&value)?;
    if let Some(code) = &body.failure_code {
        let mut issues = Vec::new();
        backstop_core::issue::check_length(code, "failure_code", 200, &mut issues);
        if code.contains('\0') {
            issues.push(backstop_core::Issue::new(
                "failure_code",
                "bad_characters",
                "U+0000 is not allowed",
            ));
        }
        if !issues.is_empty() {
            return Err(ApiError::malformed(issues));
        }
    }
    let state_given: DispatchState = body.outcome.into();
    let who = caller.id.clone();
    let record = blocking(&state.store, move |s| {
        s.dispatch_outcome(
            &who,
            &key,
            state_given,
            body.failure_code.as_deref(),
            Timestamp::now(),
        )
    })
    .await
    .map_err(|e| match e {
        StoreError::NotFound(message) => ApiError::new(RefusalCode::UnknownDispatch, message),
        StoreError::Conflict(message) => ApiError::new(RefusalCode::LateOutcome, message),
        other => ApiError::store("a dispatch outcome failed", &other),
    })?;
    Ok(Json(record))
}

/// A dispatch and the deliveries recorded for it.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DispatchView {
    /// The dispatch.
    pub dispatch: DispatchRecord,
    /// Its deliveries, oldest first (duplicates were never recorded).
    pub deliveries: Vec<DeliveryRecord>,
}

/// A dispatch of the caller's (an operator sees every caller's).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/v1/dispatches/{key}", tag = "side effects",
    params(("key" = String, Path, description = "The dispatch's key")),
    responses((status = 200, body = DispatchView), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn show(
    State(state): State<Arc<AppState>>,
    key: Result<Path<String>, PathRejection>,
    caller: Caller,
) -> Result<Json<DispatchView>, ApiError> {
    let Path(key) = key.map_err(bad_path)?;
    let wanted = key.clone();
    let found = blocking(&state.store, move |s| {
        // Deliveries first: one is marked done only after its dispatch was moved on, so a
        // done delivery is never shown beside the dispatch as it stood before.
        let deliveries = s.deliveries(false, Some(&wanted), 1000)?;
        let Some(dispatch) = s.dispatch_by_key(&wanted)? else {
            return Ok(None);
        };
        Ok(Some(DispatchView {
            dispatch,
            deliveries,
        }))
    })
    .await
    .map_err(|e| ApiError::store("a dispatch lookup failed", &e))?;
    found
        .filter(|v| v.dispatch.caller == caller.id || caller.role == crate::config::Role::Operator)
        .map(Json)
        .ok_or_else(|| {
            ApiError::new(
                RefusalCode::UnknownDispatch,
                format!("caller `{}` has no dispatch with key `{key}`", caller.id),
            )
        })
}
