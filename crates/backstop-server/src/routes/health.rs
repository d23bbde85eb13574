//! `GET /healthz`, `GET /readyz` and `GET /metrics`: no key needed.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::state::AppState;

/// The process is up.
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// The ledger answers and packs are loaded.
pub async fn readyz(State(state): State<Arc<AppState>>) -> Result<Json<Value>, ApiError> {
    let store = Arc::clone(&state.store);
    tokio::task::spawn_blocking(move || store.ping())
        .await
        .map_err(|e| ApiError::internal("a readiness check failed", &e))?
        .map_err(|e| {
            tracing::error!(error = %e, "the ledger does not answer");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "not_ready",
                "the ledger does not answer",
            )
        })?;
    let jobs: Vec<String> = state.catalog().packs.keys().cloned().collect();
    Ok(Json(json!({"status": "ready", "jobs": jobs})))
}

/// Counters in the Prometheus text format.
pub async fn metrics(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let now = Timestamp::now();
    let breakers: Vec<(String, String)> = {
        let hinter = state
            .hinter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        hinter
            .tool_names()
            .into_iter()
            .filter_map(|tool| {
                let (breaker, _) = hinter.tool_views(&tool, now)?;
                let state = serde_json::to_value(&breaker).ok()?["state"]
                    .as_str()?
                    .to_owned();
                Some((tool, state))
            })
            .collect()
    };
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(&breakers),
    )
}
