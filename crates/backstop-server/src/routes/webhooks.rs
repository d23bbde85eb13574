//! `POST /v1/webhooks/{source}`: a result delivered for a dispatch. The signature is checked,
//! the delivery recorded once per event id (a UNIQUE constraint: a duplicate answers 200 and
//! changes nothing) and the answer returns at once; the decision is made from the record.

use backstop_core::case::RefusalCode;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use backstop_core::Issue;
use backstop_core::effects::parse_delivery;
use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

use super::cases::bad_path;
use crate::body::raw_body;
use crate::config::SIMULATOR_SOURCE;
use crate::effects::apply::{blocking, find, kept};
use crate::effects::signature::{SIGNATURE_HEADER, verify};
use crate::error::ApiError;
use crate::state::AppState;

/// What a delivery came to.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Received {
    /// Whether it was recorded now (false: this event id was recorded before).
    pub recorded: bool,
    /// Whether it was a duplicate, which changes nothing.
    pub duplicate: bool,
    /// The recorded delivery's id (null for a duplicate).
    pub delivery: Option<i64>,
}

/// A signed delivery from `source`.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/webhooks/{source}", tag = "side effects",
    params(("source" = String, Path, description = "The webhook source, as the config names it"),
           ("Backstop-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">")),
    request_body(content = Object, description = "A delivered result"),
    responses(
        (status = 200, body = Received),
        (status = "4XX", description = "unknown_source, bad_signature, stale_signature, malformed", body = backstop_core::case::Refusal))))]
pub async fn receive(
    State(state): State<Arc<AppState>>,
    source: Result<Path<String>, PathRejection>,
    request: Request,
) -> Result<Json<Received>, ApiError> {
    let Path(source) = source.map_err(bad_path)?;
    let secret = if source == SIMULATOR_SOURCE {
        Some(state.effects.simulator_secret.clone())
    } else {
        state
            .config
            .effects
            .webhooks
            .iter()
            .find(|w| w.source == source)
            .map(|w| w.secret.clone())
    };
    let Some(secret) = secret else {
        return Err(ApiError::new(
            RefusalCode::UnknownSource,
            format!(
                "no webhook source `{source}` is configured ([[webhooks]] in the service's config)"
            ),
        ));
    };
    let signature = request
        .headers()
        .get(SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = raw_body(request, &()).await?;
    verify(
        &secret,
        signature.as_deref(),
        &body,
        Timestamp::now().as_second(),
    )
    .map_err(|e| ApiError::new(e.code(), e.message()))?;
    let value: Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::malformed(vec![Issue::new(
            "",
            "bad_json",
            format!("the body is not JSON: {e}"),
        )])
    })?;
    let delivery = parse_delivery(&value).map_err(ApiError::malformed)?;
    let store = Arc::clone(&state.store);
    let catalog = state.catalog();
    let recorded = blocking(&store, move |s| {
        let dispatch = find(s, &delivery.target)?;
        let pack = dispatch
            .as_ref()
            .and_then(|d| catalog.packs.get(&d.job).cloned());
        let payload = kept(&delivery, pack.as_deref()).to_string();
        let key = dispatch.map(|d| d.key);
        s.record_delivery(
            &source,
            &delivery.event_id,
            key.as_deref(),
            &payload,
            Timestamp::now(),
        )
    })
    .await
    .map_err(|e| ApiError::store("a delivery could not be recorded", &e))?;
    state.metrics.delivery(recorded.is_some());
    if recorded.is_some() {
        state.effects.recorded.notify_one();
    }
    Ok(Json(Received {
        recorded: recorded.is_some(),
        duplicate: recorded.is_none(),
        delivery: recorded,
    }))
}
