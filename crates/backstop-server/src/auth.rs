//! Who is asking: an API key (`Authorization: Bearer KEY`) names a caller and a role; the key is
//! compared by its SHA-256, never stored.

use backstop_core::case::RefusalCode;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::config::{Role, hash_key};
use crate::error::ApiError;
use crate::state::{AppState, local_operator};

/// The authenticated caller of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The caller id cases belong to.
    pub id: String,
    /// What it may do.
    pub role: Role,
}

impl Caller {
    /// Refuses anyone but an operator.
    pub fn require_operator(&self, what: &str) -> Result<(), ApiError> {
        if self.role == Role::Operator {
            Ok(())
        } else {
            Err(ApiError::new(
                RefusalCode::Forbidden,
                format!(
                    "only an operator may {what}; caller `{}` is an agent",
                    self.id
                ),
            ))
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ApiError::internal("a route ran without authentication", &"no caller"))
    }
}

/// Authenticates the request, then applies the caller's rate limit.
pub async fn authenticate(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let caller = match identify(&state, &request) {
        Ok(caller) => caller,
        Err(refusal) => return refusal.into_response(),
    };
    if let Err(wait) = state.limiter.take(&caller.id) {
        let mut error = ApiError::new(
            RefusalCode::RateLimited,
            format!(
                "caller `{}` is over its request rate; retry after {wait} s",
                caller.id
            ),
        );
        error.retry_after = Some(wait);
        return error.into_response();
    }
    request.extensions_mut().insert(caller);
    next.run(request).await
}

/// Authenticates the request but takes nothing from the caller's rate: for `/mcp`, whose tool
/// calls each become an API request that is authenticated and rated on its own.
pub async fn require_key(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    match identify(&state, &request) {
        Ok(caller) => {
            // A proxy names a client's task by its caller when it names none.
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(refusal) => refusal.into_response(),
    }
}

/// The caller the request's API key names (the local operator when the service is open), or
/// the refusal to answer with.
fn identify(state: &AppState, request: &Request) -> Result<Caller, ApiError> {
    if state.is_open() {
        return Ok(local_operator());
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    let known = presented
        .filter(|k| !k.is_empty())
        .and_then(|key| state.keys.get(&hash_key(key)));
    if let Some(caller) = known {
        return Ok(caller.clone());
    }
    let address = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| "unknown".to_owned(), |c| c.0.ip().to_string());
    if let Err(wait) = state.auth_failures.take(&address) {
        let mut error = ApiError::new(
            RefusalCode::RateLimited,
            format!("too many failed authentications from {address}; retry after {wait} s"),
        );
        error.retry_after = Some(wait);
        return Err(error);
    }
    let message = if presented.is_some_and(|k| !k.is_empty()) {
        "the API key is not known"
    } else {
        "send an API key as `Authorization: Bearer KEY`"
    };
    Err(ApiError::new(RefusalCode::Unauthorized, message))
}
