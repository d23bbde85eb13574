//! `POST /v1/classify`: a report in, a classification out.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use backstop_core::classify::{Classification, classify as run_classify};
use backstop_core::{Issue, Report};
use jiff::Timestamp;

use crate::body::raw_body;
use crate::error::ApiError;
use crate::state::AppState;

/// Classifies one report (the JSON `backstop classify` reads on stdin).
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/classify", tag = "calls", request_body = Report,
    responses((status = 200, body = Classification), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn classify(
    State(state): State<Arc<AppState>>,
    request: Request,
) -> Result<Json<Classification>, ApiError> {
    let bytes = raw_body(request, &()).await?;
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        ApiError::malformed(vec![Issue::new(
            "",
            "bad_json",
            "the body is not UTF-8 text",
        )])
    })?;
    let catalog = state.catalog();
    let judge = move |text: &str| {
        let report = Report::from_json(text).map_err(ApiError::malformed)?;
        Ok(Json(run_classify(
            &catalog.rules,
            &report,
            Timestamp::now(),
        )))
    };
    // A report that may carry a JSON Schema compiles it and checks the output against it:
    // work of a size the caller chooses, so it runs off the async workers.
    if text.contains("\"schema\"") {
        let text = text.to_owned();
        return tokio::task::spawn_blocking(move || judge(&text))
            .await
            .map_err(|e| ApiError::internal("classifying a report with a schema", &e))?;
    }
    judge(text)
}
