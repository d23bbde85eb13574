//! `GET /v1/jobs` and `GET /v1/jobs/{job}`: the loaded jobs, and one job's brief — what an
//! agent needs to write a good first request (`backstop_core::pack::brief`).

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use backstop_core::pack::{JobBrief, JobSummary, brief};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::cases::{bad_path, pack_for};
use crate::state::AppState;

/// The loaded jobs.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobList {
    /// One line per loaded pack, by job name.
    pub jobs: Vec<JobSummary>,
}

/// Every loaded job, by name.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/v1/jobs", tag = "cases",
    responses((status = 200, body = JobList), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn list(State(state): State<Arc<AppState>>, _caller: Caller) -> Json<JobList> {
    let catalog = state.catalog();
    Json(JobList {
        jobs: catalog.packs.values().map(|p| JobSummary::of(p)).collect(),
    })
}

/// One job's brief: its questions and answers with what each means, related records, how a
/// case is named, the attempt limit and window, the outcomes and escalations (never the
/// indicator patterns, rules, hedges or confidence threshold).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/v1/jobs/{job}", tag = "cases",
    params(("job" = String, Path, description = "The pack's job")),
    responses((status = 200, body = JobBrief), (status = "4XX", description = "unknown_job", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn show(
    State(state): State<Arc<AppState>>,
    job: Result<Path<String>, PathRejection>,
    _caller: Caller,
) -> Result<Json<JobBrief>, ApiError> {
    let Path(job) = job.map_err(bad_path)?;
    let pack = pack_for(&state, &job)?;
    Ok(Json(brief(&pack)))
}
