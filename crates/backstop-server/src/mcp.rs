//! MCP over streamable HTTP at `/mcp`, behind the same keys as the API: each tool call becomes
//! a request to this service's own router, carrying the caller's key, so it is authenticated,
//! rated, counted and journaled like any other.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, header};
use axum::middleware;
use backstop_mcp::backend::json_or_text;
use backstop_mcp::rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use backstop_mcp::rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService,
};
use backstop_mcp::{ApiAnswer, ApiRequest, Backend, BackendError, BackstopMcp};
use tower_service::Service;

use crate::auth::require_key;
use crate::state::AppState;

/// The API's router in this process, as the backend of MCP tool calls.
#[derive(Debug, Clone)]
pub struct InProcess {
    router: Router,
    body_limit: usize,
}

impl InProcess {
    /// Tool calls go to `router` (the API without `/mcp`); answers over `body_limit` bytes fail.
    pub fn new(router: Router, body_limit: usize) -> Self {
        InProcess { router, body_limit }
    }
}

impl Backend for InProcess {
    async fn send(&self, request: ApiRequest) -> Result<ApiAnswer, BackendError> {
        let mut builder = Request::builder()
            .method(request.method.as_str())
            .uri(&request.path);
        if let Some(authorization) = &request.authorization {
            builder = builder.header(header::AUTHORIZATION, authorization);
        }
        let body = match &request.body {
            Some(json) => {
                builder = builder.header(header::CONTENT_TYPE, "application/json");
                Body::from(json.to_string())
            }
            None => Body::empty(),
        };
        let built = builder
            .body(body)
            .map_err(|e| BackendError(format!("{}: {e}", request.path)))?;
        let response = match self.router.clone().call(built).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), self.body_limit.max(1 << 20))
            .await
            .map_err(|e| BackendError(format!("{}: {e}", request.path)))?;
        Ok(ApiAnswer {
            status,
            body: json_or_text(&bytes),
        })
    }
}

/// `/mcp`: stateless streamable HTTP (any server on the ledger can answer any request), JSON
/// answers, behind the API keys. An open service (no keys, loopback only) also checks the
/// `Host` header against loopback names, so a web page cannot reach it by DNS rebinding.
pub fn routes(state: &Arc<AppState>, api: Router) -> Router {
    let backend = InProcess::new(api, state.config.limits.body_bytes);
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(state.config.limits.body_bytes);
    if !state.is_open() {
        config = config.disable_allowed_hosts();
    }
    let service: StreamableHttpService<BackstopMcp<InProcess>, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(BackstopMcp::new(backend.clone())),
            Arc::default(),
            config,
        );
    Router::new()
        .route_service("/mcp", service)
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(state),
            require_key,
        ))
}
