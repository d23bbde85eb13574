//! `GET /healthz`, `GET /readyz` and `GET /metrics`: no key needed.

use backstop_core::case::RefusalCode;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use jiff::Timestamp;

use crate::error::ApiError;
use crate::state::AppState;

/// The process is up.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Health {
    /// `ok`.
    status: String,
}

/// The service is ready.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Ready {
    /// `ready`.
    status: String,
    /// The jobs with a pack loaded.
    jobs: Vec<String>,
}

/// The process is up.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthz", tag = "service", responses((status = 200, body = Health))))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".to_owned(),
    })
}

/// The ledger answers; the jobs with a pack loaded.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/readyz", tag = "service",
    responses((status = 200, body = Ready), (status = 503, body = backstop_core::case::Refusal))))]
pub async fn readyz(State(state): State<Arc<AppState>>) -> Result<Json<Ready>, ApiError> {
    let store = Arc::clone(&state.store);
    tokio::task::spawn_blocking(move || store.ping())
        .await
        .map_err(|e| ApiError::internal("a readiness check failed", &e))?
        .map_err(|e| {
            tracing::error!(error = %e, "the ledger does not answer");
            let mut not_ready = ApiError::new(RefusalCode::NotReady, "the ledger does not answer");
            not_ready.retry_after = Some(1);
            not_ready
        })?;
    let jobs: Vec<String> = state.catalog().packs.keys().cloned().collect();
    Ok(Json(Ready {
        status: "ready".to_owned(),
        jobs,
    }))
}

/// Counters in the Prometheus text format: requests, decisions by status, escalations by
/// trigger, breaker states, ledger latency.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/metrics", tag = "service",
    responses((status = 200, content_type = "text/plain", body = String))))]
pub async fn metrics(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let now = Timestamp::now();
    let breakers: Vec<(String, &str)> = {
        let calls = state
            .recovery
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let recovery = &calls.recovery;
        recovery
            .tool_names(now)
            .into_iter()
            .filter_map(|tool| {
                let (breaker, _) = recovery.tool_views(&tool, now)?;
                Some((tool, breaker.state.as_str()))
            })
            .collect()
    };
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(&breakers),
    )
}
