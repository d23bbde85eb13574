//! The one refusal shape for every 4xx, and 5xx answers that never show internals.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use backstop_core::Issue;
use backstop_core::case::{Refusal, RefusalCode};

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
    /// A refusal with this code (its status beside it, [`RefusalCode::status`]) and message.
    pub fn new(code: RefusalCode, message: impl Into<String>) -> Self {
        Self::refused(Refusal::new(code, message))
    }

    /// A malformed request: 400 with every issue.
    pub fn malformed(issues: Vec<Issue>) -> Self {
        Self::refused(Refusal::malformed(issues))
    }

    /// A refusal the core or the store made, answered with its code's status.
    pub fn refused(refusal: Refusal) -> Self {
        Self {
            status: StatusCode::from_u16(refusal.code().status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            refusal: Box::new(refusal),
            retry_after: None,
        }
    }

    /// A failed store call: 503 `busy` (with `Retry-After`) when the store says the same call
    /// may pass later, otherwise a 500 whose cause goes to the log only.
    pub fn store(what: &str, error: &backstop_store::StoreError) -> Self {
        if let backstop_store::StoreError::Busy(detail) = error {
            tracing::warn!(error = %detail, "{what}: the store is busy");
            let mut busy = Self::new(
                RefusalCode::Busy,
                "the ledger is busy; nothing was changed: send the same request again shortly",
            );
            busy.retry_after = Some(1);
            return busy;
        }
        Self::internal(what, error)
    }

    /// A failure of the service's own: logged with its cause, answered 500 without it.
    pub fn internal(what: &str, error: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %error, "{what}");
        Self::new(
            RefusalCode::Internal,
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
            (RefusalCode::Malformed, 400),
            (RefusalCode::UnknownCase, 404),
            (RefusalCode::AttemptLimitReached, 409),
            (RefusalCode::ExecutionIdConflict, 409),
            (RefusalCode::CaseInReview, 409),
            (RefusalCode::IssuedCaseLimit, 429),
            (RefusalCode::Busy, 503),
        ] {
            let error = ApiError::refused(Refusal::new(code, "m"));
            assert_eq!(error.status.as_u16(), status, "{code}");
        }
    }
}
