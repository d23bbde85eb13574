//! The one refusal shape for every 4xx, and 5xx answers that never show internals.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use backstop_core::Issue;
use backstop_core::case::Refusal;

/// A request the service refuses, or a failure of its own.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The refusal body (boxed: results carry errors up many frames).
    pub refusal: Box<Refusal>,
    /// Seconds to wait, for 429 and 503.
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// A refusal with this status, code and message.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            refusal: Box::new(Refusal::new(code, message)),
            retry_after: None,
        }
    }

    /// A malformed request: 400 with every issue.
    pub fn malformed(issues: Vec<Issue>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            refusal: Box::new(Refusal::malformed(issues)),
            retry_after: None,
        }
    }

    /// A refusal the core or the store decided, with the status its code maps to.
    pub fn refused(refusal: Refusal) -> Self {
        let status = match refusal.code() {
            "malformed" => StatusCode::BAD_REQUEST,
            "unknown_case" | "unknown_job" | "unknown_review" => StatusCode::NOT_FOUND,
            "issued_case_limit" => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::CONFLICT,
        };
        Self {
            status,
            refusal: Box::new(refusal),
            retry_after: None,
        }
    }

    /// A store failure: a busy or unreachable store is 503 `busy` with `Retry-After` (nothing
    /// was changed; the same request may pass later), anything else [`ApiError::internal`].
    pub fn store(what: &str, error: &backstop_store::StoreError) -> Self {
        if let backstop_store::StoreError::Busy(detail) = error {
            tracing::warn!(error = %detail, "{what}: the store is busy");
            let mut busy = Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "the ledger is busy; nothing was changed: send the same request again shortly",
            );
            busy.retry_after = Some(1);
            return busy;
        }
        Self::internal(what, error)
    }

    /// A failure of the service itself: logged in full, answered without internals.
    pub fn internal(what: &str, error: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %error, "{what}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "backstop failed to answer; the failure is in its log. Nothing was decided if no \
             result came back: send the same request again with the same execution_id",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(*self.refusal)).into_response();
        if let Some(seconds) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use axum::body::to_bytes;

    use super::*;

    #[tokio::test]
    async fn a_5xx_says_what_to_do_and_nothing_of_the_failure() {
        let secret = "disk I/O error at /var/lib/backstop/ledger.db-wal page 7";
        let response = ApiError::internal("the ledger failed", &secret).into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = to_bytes(response.into_body(), 1 << 16).await.unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(text.contains("\"code\":\"internal\""), "{text}");
        assert!(
            !text.contains("ledger.db") && !text.contains("disk"),
            "{text}"
        );
    }

    #[test]
    fn refusal_codes_map_to_their_statuses() {
        for (code, status) in [
            ("malformed", 400),
            ("unknown_case", 404),
            ("attempt_limit_reached", 409),
            ("execution_id_conflict", 409),
            ("case_in_review", 409),
            ("issued_case_limit", 429),
        ] {
            let error = ApiError::refused(Refusal::new(code, "m"));
            assert_eq!(error.status.as_u16(), status, "{code}");
        }
    }
}
