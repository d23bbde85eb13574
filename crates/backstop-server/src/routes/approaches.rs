//! `GET /v1/approaches`: the failed approaches the journal remembers, so a new task starts by
//! not repeating what its caller's earlier tasks spent every attempt on.
//!
//! An agent sees its own; an operator sees every caller's, or one caller's with `caller`.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use backstop_core::Issue;
use backstop_core::recover::recovery::CallerApproach;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::recover::{check_name, lock};
use crate::auth::Caller;
use crate::config::Role;
use crate::error::ApiError;
use crate::state::AppState;

/// Whose approaches: an operator may name a caller (default: every caller's).
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct ApproachQuery {
    /// The caller (an operator only; an agent's approaches are its own).
    caller: Option<String>,
}

/// The failed approaches, the most recent first.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApproachList {
    /// Each with its caller, tool, operation, class, evidence, counts and times.
    pub approaches: Vec<CallerApproach>,
}

/// The failed approaches the journal remembers: a tool and operation on which a task spent
/// every attempt of a class, kept a day after its last failure or until the tool succeeds.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/v1/approaches", tag = "calls",
    params(ApproachQuery),
    responses((status = 200, body = ApproachList), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn list(
    State(state): State<Arc<AppState>>,
    query: Result<Query<ApproachQuery>, QueryRejection>,
    caller: Caller,
) -> Result<Json<ApproachList>, ApiError> {
    let Query(query) = query
        .map_err(|e| ApiError::malformed(vec![Issue::new("query", "bad_query", e.body_text())]))?;
    let mut issues = Vec::new();
    if let Some(named) = &query.caller {
        check_name(named, "caller", &mut issues);
        if caller.role == Role::Agent && *named != caller.id {
            issues.push(Issue::new(
                "caller",
                "forbidden",
                "an agent sees only its own approaches",
            ));
        }
    }
    if !issues.is_empty() {
        return Err(ApiError::malformed(issues));
    }
    let whose = match (caller.role, query.caller) {
        (Role::Agent, _) => Some(caller.id.clone()),
        (_, named) => named,
    };
    state.attempts.catch_up().await?;
    let approaches = lock(&state)
        .recovery
        .failed_approaches(whose.as_deref(), Timestamp::now());
    Ok(Json(ApproachList { approaches }))
}
