//! Suppressions: `GET /v1/suppressions` and `POST /v1/suppressions/lift` (operators only). A
//! contact goes on the list when its result asks not to be contacted; only an operator takes it
//! off, and who did, when and why is kept.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use backstop_core::Issue;
use backstop_store::{Lifted, StoreError, SuppressionFilter, SuppressionRecord};
use jiff::Timestamp;
use serde::Deserialize;

use crate::auth::Caller;
use crate::body::{JsonBody, typed};
use crate::error::ApiError;
use crate::state::AppState;

/// The query of `GET /v1/suppressions`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only this caller's.
    #[serde(default)]
    caller: Option<String>,
    /// Only this job's.
    #[serde(default)]
    job: Option<String>,
    /// Only this contact's.
    #[serde(default)]
    contact: Option<String>,
    /// `true`: the lifted ones, with who lifted each, when and why (default: those in force).
    #[serde(default)]
    lifted: Option<bool>,
}

/// Suppressions.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SuppressionList {
    /// Newest first, at most 1,000.
    suppressions: Vec<SuppressionRecord>,
}

/// Suppressions in force (or lifted ones), newest first.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/v1/suppressions", tag = "suppressions",
    params(ListQuery),
    responses((status = 200, body = SuppressionList), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<SuppressionList>, ApiError> {
    caller.require_operator("list suppressions")?;
    let Query(query) = query
        .map_err(|e| ApiError::malformed(vec![Issue::new("query", "bad_query", e.body_text())]))?;
    let mut issues = Vec::new();
    for (path, value) in [
        ("caller", &query.caller),
        ("job", &query.job),
        ("contact", &query.contact),
    ] {
        if let Some(name) = value {
            crate::routes::recover::check_name(name, path, &mut issues);
        }
    }
    if !issues.is_empty() {
        return Err(ApiError::malformed(issues));
    }
    let filter = SuppressionFilter {
        caller: query.caller,
        job: query.job,
        contact: query.contact,
        lifted: query.lifted.unwrap_or(false),
    };
    let store = Arc::clone(&state.store);
    let found = tokio::task::spawn_blocking(move || store.suppressions(&filter))
        .await
        .map_err(|e| ApiError::internal("a suppression listing failed", &e))?
        .map_err(|e| ApiError::store("the ledger failed", &e))?;
    Ok(Json(SuppressionList {
        suppressions: found,
    }))
}

/// An operator's lifting of a suppression.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LiftBody {
    /// Whose contact it is (the caller whose dispatch's result asked for it).
    pub caller: String,
    /// The job.
    pub job: String,
    /// The contact.
    pub contact: String,
    /// The one case it holds for; absent: the suppression for every case.
    #[serde(default)]
    pub case_id: Option<String>,
    /// Why it is lifted, for the record (required).
    pub reason: String,
}

/// An operator lifts a suppression: the contact may be reached again; who, when and why is
/// kept. An agent's key is refused.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/suppressions/lift", tag = "suppressions",
    request_body = LiftBody,
    responses((status = 200, body = SuppressionRecord), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn lift(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(value): JsonBody,
) -> Result<Json<SuppressionRecord>, ApiError> {
    caller.require_operator("lift a suppression")?;
    let body: LiftBody = typed(&value)?;
    lift_as(&state, &caller, body).await.map(Json)
}

/// Lifts a suppression as `caller` (an operator): every field checked, the reason required
/// and kept. The API and the operator's page both lift through here.
pub async fn lift_as(
    state: &AppState,
    caller: &Caller,
    body: LiftBody,
) -> Result<SuppressionRecord, ApiError> {
    let mut issues = Vec::new();
    crate::routes::recover::check_name(&body.caller, "caller", &mut issues);
    crate::routes::recover::check_name(&body.job, "job", &mut issues);
    crate::routes::recover::check_name(&body.contact, "contact", &mut issues);
    if let Some(case) = &body.case_id {
        crate::routes::recover::check_name(case, "case_id", &mut issues);
    }
    if body.reason.trim().is_empty() {
        issues.push(Issue::new(
            "reason",
            "required",
            "say why the suppression is lifted: it is kept with who lifted it and when",
        ));
    }
    backstop_core::issue::check_length(
        &body.reason,
        "reason",
        backstop_core::issue::MAX_NOTE_CHARS,
        &mut issues,
    );
    // Kept as text: no NUL (PostgreSQL refuses one in text); the names refuse every control
    // character already.
    backstop_core::case::nul_characters(
        &serde_json::Value::from(body.reason.as_str()),
        "reason",
        &mut issues,
    );
    if !issues.is_empty() {
        return Err(ApiError::malformed(issues));
    }
    let lifted = Lifted {
        at: Timestamp::now(),
        by: caller.id.clone(),
        why: body.reason.trim().to_owned(),
    };
    let store = Arc::clone(&state.store);
    let done = tokio::task::spawn_blocking(move || {
        store.lift_suppression(
            &body.caller,
            &body.job,
            &body.contact,
            body.case_id.as_deref(),
            &lifted,
        )
    })
    .await
    .map_err(|e| ApiError::internal("lifting a suppression failed", &e))?;
    match done {
        Ok(record) => Ok(record),
        Err(StoreError::NotFound(why)) => Err(ApiError::new(
            backstop_core::case::RefusalCode::NotFound,
            why,
        )),
        Err(e) => Err(ApiError::store("the ledger failed", &e)),
    }
}
