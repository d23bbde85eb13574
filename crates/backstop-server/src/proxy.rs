//! `[[proxy]]` on streamable HTTP: each entry's upstream MCP server at `/proxy/NAME/mcp`,
//! behind the API keys, every tool call governed on this service's ledger.
//!
//! One upstream per entry, started at the first request and shared by every client of it; a
//! handler per MCP session. A call's task is the one the client names in `_meta`
//! (`backstop/task`), else its MCP session (`NAME-<session id>`), else its caller
//! (`NAME-<caller>`). Answers stream as server-sent events, so a long call is not cut by the
//! service's request timeout (the proxy's own timeouts bound it).

use std::sync::Arc;

use axum::{Router, middleware};
use backstop_mcp::proxy::{DefaultTask, Governor, ProxyServer, Upstream};
use backstop_mcp::rmcp::RoleServer;
use backstop_mcp::rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::auth::{Caller, require_key};
use crate::mcp::InProcess;
use crate::state::AppState;

/// The header a legacy MCP session is named by.
const SESSION_HEADER: &str = "mcp-session-id";

/// The path of a proxy's MCP endpoint.
pub fn path_of(name: &str) -> String {
    format!("/proxy/{name}/mcp")
}

/// A route per `[[proxy]]` entry; none without entries.
pub fn routes(state: &Arc<AppState>, api: &Router) -> Router {
    let mut router = Router::new();
    if state.config.proxy.is_empty() {
        return router;
    }
    for entry in &state.config.proxy {
        let settings = Arc::new(entry.clone());
        let upstream = Arc::new(Upstream::for_settings(entry));
        let governor = Arc::new(Governor::new(InProcess::new(
            api.clone(),
            state.config.limits.body_bytes,
        )));
        let name = entry.name.clone();
        let default_task = DefaultTask::from_request(move |context| task_of(&name, context));
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(true)
            .with_max_request_body_bytes(state.config.limits.body_bytes);
        if !state.is_open() {
            config = config.disable_allowed_hosts();
        }
        let service: StreamableHttpService<ProxyServer<InProcess>, LocalSessionManager> =
            StreamableHttpService::new(
                move || {
                    Ok(ProxyServer::new(
                        Arc::clone(&settings),
                        Arc::clone(&upstream),
                        Arc::clone(&governor),
                        default_task.clone(),
                    ))
                },
                Arc::default(),
                config,
            );
        router = router.route_service(&path_of(&entry.name), service);
    }
    router.route_layer(middleware::from_fn_with_state(
        Arc::clone(state),
        require_key,
    ))
}

/// The task of a call whose client names none: its MCP session, else its caller.
fn task_of(name: &str, context: &RequestContext<RoleServer>) -> String {
    let parts = context.extensions.get::<axum::http::request::Parts>();
    if let Some(session) = parts
        .and_then(|p| p.headers.get(SESSION_HEADER))
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128)
    {
        return format!("{name}-{session}");
    }
    let caller = parts
        .and_then(|p| p.extensions.get::<Caller>())
        .map_or("local", |c| c.id.as_str());
    format!("{name}-{caller}")
}
