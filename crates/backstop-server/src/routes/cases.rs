//! The case level: `POST /v1/jobs/{job}/decisions` and `GET /v1/jobs/{job}/cases/{id}`.

use backstop_core::case::RefusalCode;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use backstop_core::case::{identity::normalize_subject, parse_request};
use backstop_core::pack::{IdentityMode, Pack};
use backstop_store::{CaseRecord, Reply};

use crate::auth::Caller;
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::queue::QueueError;
use crate::state::AppState;

/// One attempt on a case of `job`, for the authenticated caller.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/jobs/{job}/decisions", tag = "cases",
    params(("job" = String, Path, description = "The pack's job")),
    request_body = backstop_core::case::RequestBody,
    responses(
        (status = 200, body = backstop_core::case::DecisionResult),
        (status = "4XX", description = "malformed, unknown_job, unknown_case, attempt_limit_reached, execution_id_conflict, case_in_review, issued_case_limit", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn decide(
    State(state): State<Arc<AppState>>,
    job: Result<Path<String>, PathRejection>,
    caller: Caller,
    JsonBody(value): JsonBody,
) -> Result<Response, ApiError> {
    let Path(job) = job.map_err(bad_path)?;
    let pack = pack_for(&state, &job)?;
    let request = parse_request(&pack, &caller.id, &value).map_err(ApiError::malformed)?;
    let (reply, took) = match state.attempts.decide(pack, caller.id, request).await {
        Ok(answer) => answer,
        Err(QueueError::Full) => {
            let mut busy = ApiError::new(
                RefusalCode::Busy,
                "too many attempts are waiting for the ledger; nothing was counted: send the \
                 same request again later",
            );
            busy.retry_after = Some(1);
            return Err(busy);
        }
        Err(QueueError::Stopped) => {
            return Err(ApiError::internal("the attempt queue", &"has stopped"));
        }
    };
    let reply = reply.map_err(|e| ApiError::store("the ledger failed", &e))?;
    state.metrics.store_latency(took);
    match reply {
        Reply::Counted(result) => {
            let trigger = result.escalation.as_ref().map(|e| e.trigger.as_str());
            state.metrics.decision(result.status.as_str(), trigger);
            Ok(Json(result).into_response())
        }
        Reply::Replayed(stored) => {
            Ok(([(header::CONTENT_TYPE, "application/json")], stored).into_response())
        }
        Reply::Refused(refusal) => Err(ApiError::refused(refusal)),
    }
}

/// The caller's own case, with every kept attempt record and its review items.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/v1/jobs/{job}/cases/{id}", tag = "cases",
    params(("job" = String, Path, description = "The pack's job"),
           ("id" = String, Path, description = "The case id (normalized as results show it)")),
    responses((status = 200, body = CaseRecord), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn show(
    State(state): State<Arc<AppState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    caller: Caller,
) -> Result<Json<CaseRecord>, ApiError> {
    let Path((job, id)) = path.map_err(bad_path)?;
    let pack = pack_for(&state, &job)?;
    // A subject named by id is looked up as the results name it: normalized.
    let id = match pack.identity.mode {
        IdentityMode::Id => normalize_subject(&id, pack.identity.match_rule).unwrap_or(id),
        _ => id,
    };
    let store = Arc::clone(&state.store);
    let found = {
        let (job, id, caller) = (job.clone(), id.clone(), caller.id.clone());
        tokio::task::spawn_blocking(move || store.case(&caller, &job, &id))
            .await
            .map_err(|e| ApiError::internal("a case lookup failed", &e))?
            .map_err(|e| ApiError::store("the ledger failed", &e))?
    };
    found.map(Json).ok_or_else(|| {
        ApiError::new(
            RefusalCode::UnknownCase,
            format!("caller `{}` has no case `{id}` on job `{job}`", caller.id),
        )
    })
}

/// A path that could not be read, in the refusal shape (a `map_err` callback, so by value).
#[allow(clippy::needless_pass_by_value)]
pub fn bad_path(rejection: PathRejection) -> ApiError {
    ApiError::malformed(vec![backstop_core::Issue::new(
        "path",
        "bad_path",
        rejection.body_text(),
    )])
}

/// The pack of `job`, or 404 `unknown_job` naming the jobs there are.
pub(crate) fn pack_for(state: &AppState, job: &str) -> Result<Arc<Pack>, ApiError> {
    let catalog = state.catalog();
    catalog.packs.get(job).cloned().ok_or_else(|| {
        let jobs: Vec<&str> = catalog.packs.keys().map(String::as_str).collect();
        ApiError::new(
            RefusalCode::UnknownJob,
            format!(
                "no pack is loaded for job `{job}`; loaded: {}",
                if jobs.is_empty() {
                    "none".to_owned()
                } else {
                    jobs.join(", ")
                }
            ),
        )
    })
}
