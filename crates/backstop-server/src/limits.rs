//! Per-caller rate limits (a token bucket each) and the request timeout.

use backstop_core::case::RefusalCode;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// Token buckets by caller.
#[derive(Debug)]
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

/// Keys (callers, client addresses) past which full buckets are forgotten.
const MAX_KEYS: usize = 10_000;

/// The default failed authentications a client address may make per second, and at once
/// (`limits.auth_failures_per_second`, `auth_failures_burst`): past them it is
/// answered 429 with `Retry-After`, so guessing keys is slow.
pub const AUTH_FAILURES_PER_SECOND: f64 = 5.0;
/// See [`AUTH_FAILURES_PER_SECOND`].
pub const AUTH_FAILURES_BURST: f64 = 20.0;

impl RateLimiter {
    /// `rate` requests per second, `burst` at once.
    pub fn new(rate: f64, burst: f64) -> Self {
        Self {
            rate,
            burst,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token for `caller`, or says how many whole seconds until one is there.
    pub fn take(&self, caller: &str) -> Result<(), u64> {
        let now = Instant::now();
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if buckets.len() >= MAX_KEYS && !buckets.contains_key(caller) {
            // Forget the keys whose buckets are full again: they lose nothing.
            let (rate, burst) = (self.rate, self.burst);
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * rate < burst
            });
        }
        let (tokens, at) = buckets
            .entry(caller.to_owned())
            .or_insert((self.burst, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * self.rate).min(self.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let wait = ((1.0 - *tokens) / self.rate).ceil().max(1.0) as u64;
            Err(wait)
        }
    }
}

/// Answers 413 at once when a request's `Content-Length` is over the body limit: the body is
/// not waited for (a client declaring 5 MiB and sending 64 KiB was held until the timeout).
pub async fn content_length_limit(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let limit = state.config.limits.body_bytes;
    if declared.is_some_and(|n| n > u64::try_from(limit).unwrap_or(u64::MAX)) {
        let mut refused = ApiError::new(
            RefusalCode::TooLarge,
            format!(
                "the body is declared larger than the service accepts ({limit} bytes, \
                 limits.body_bytes); nothing was read"
            ),
        )
        .into_response();
        // The unread body is not wanted: the connection is closed after this answer.
        refused.headers_mut().insert(
            axum::http::header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
        return refused;
    }
    next.run(request).await
}

/// Answers 503 with the refusal shape when a request takes longer than the configured timeout.
pub async fn timeout(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let limit = state.config.limits.timeout;
    if let Ok(response) = tokio::time::timeout(limit, next.run(request)).await {
        response
    } else {
        let mut error = ApiError::new(
            RefusalCode::Timeout,
            format!(
                "the request took longer than {} ms; an attempt may still have been counted, so \
                 send it again with the same execution_id (a resend is never counted twice)",
                limit.as_millis()
            ),
        );
        error.retry_after = Some(1);
        error.into_response()
    }
}
