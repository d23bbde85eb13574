//! Where the tools' requests go: backstop's HTTP API, in this process or over the network.

use std::future::Future;

use serde_json::Value;

/// An HTTP method of backstop's API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Reads.
    Get,
    /// Everything that counts or decides.
    Post,
}

impl Method {
    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// One request to backstop's API.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRequest {
    /// The method.
    pub method: Method,
    /// The path, with its query (`/v1/jobs/vendor-risk`).
    pub path: String,
    /// The JSON body, for a `POST`.
    pub body: Option<Value>,
    /// The caller's `Authorization` header, when the MCP request carried one (streamable
    /// HTTP); a backend with a key of its own sends that instead.
    pub authorization: Option<String>,
}

impl ApiRequest {
    /// A `GET` of `path`.
    pub fn get(path: impl Into<String>) -> Self {
        ApiRequest {
            method: Method::Get,
            path: path.into(),
            body: None,
            authorization: None,
        }
    }

    /// A `POST` of `body` to `path`.
    pub fn post(path: impl Into<String>, body: Value) -> Self {
        ApiRequest {
            method: Method::Post,
            path: path.into(),
            body: Some(body),
            authorization: None,
        }
    }
}

/// The API's answer: its status and its JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body; a body that is not JSON is kept as a string.
    pub body: Value,
}

/// The API could not be reached or gave no answer.
#[derive(Debug, thiserror::Error)]
#[error("backstop could not be reached: {0}")]
pub struct BackendError(pub String);

/// Sends API requests: the service's router in this process, or a service over the network.
pub trait Backend: Send + Sync + 'static {
    /// Sends one request and reads its answer.
    fn send(
        &self,
        request: ApiRequest,
    ) -> impl Future<Output = Result<ApiAnswer, BackendError>> + Send;
}

/// Reads a body as JSON, or keeps it as text when it is not JSON.
pub fn json_or_text(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}
