//! Request bodies: read within the size limit, parsed as JSON, every problem a refusal.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use backstop_core::case::RefusalCode;
use backstop_core::{Issue, input};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;

/// A request body that is a JSON value.
#[derive(Debug)]
pub struct JsonBody(pub Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = raw_body(request, state).await?;
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            ApiError::malformed(vec![Issue::new(
                "",
                "bad_json",
                format!("the body is not JSON: {e}"),
            )])
        })
    }
}

/// The body's bytes, or 413 past the limit.
pub async fn raw_body<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(request, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
            RefusalCode::TooLarge,
                "the body is larger than the service accepts (limits.body_bytes, 1 MiB by default)",
            )
        } else {
            ApiError::new(
            RefusalCode::Malformed,
                format!("the body could not be read: {rejection}"),
            )
        }
    })
}

/// A JSON value read into `T`, strictly: the first unknown field, missing field or wrong type,
/// with its path.
pub fn typed<T: DeserializeOwned>(value: &Value) -> Result<T, ApiError> {
    // Every body is an object; serde would also read a struct from an array of its fields.
    if !value.is_object() {
        return Err(ApiError::malformed(vec![Issue::new(
            "",
            "wrong_type",
            "the body is a JSON object",
        )]));
    }
    input::typed(value, input::Format::Json).map_err(|issue| ApiError::malformed(vec![issue]))
}
