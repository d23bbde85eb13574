//! backstop's HTTP API: `router(state)` and `serve(listener, state, shutdown)`.
//!
//! - `config`: the service's TOML file, every issue with its path
//! - `catalog`: packs by job and classifier rules, swapped whole on a reload
//! - `state`: what handlers share (ledger, catalog, recovery, keys, limiter, metrics)
//! - `auth`: API keys by their SHA-256, callers and roles
//! - `connection`: the accept loop, its connection cap and header-read and idle timeouts
//! - `limits`: per-caller rate limits and the request timeout
//! - `body`: JSON bodies within the size limit
//! - `error`: the one refusal shape
//! - `metrics`: counters in the Prometheus text format
//! - `queue`: attempts and journal events run by one thread in arrival order
//! - `journal`: the call journal every server on a ledger follows, its events (one variant per
//!   kind) and its replay
//! - `openapi`: `/openapi.json`: `base.json`, which its tests check is what the handlers' types
//!   and the constraints they enforce give, with each loaded pack's routes
//! - `effects`: side effects: deliveries decided, the reconciliation sweep, the simulator
//! - `notify`: notifications for people: targets subscribed, the outbox delivered, signed
//! - `retention`: the purge `serve` runs every `[retention] every`
//! - `routes`: one module per resource
//! - `ui`: the operator's page at `/ui`: queue, item, resolution, fleet (signed sessions, CSRF)
//! - `mcp`: MCP over streamable HTTP at `/mcp`, each tool call a request to the API's router
#![deny(missing_docs)]

use std::future::Future;
use std::sync::Arc;

pub mod auth;
pub mod body;
pub mod catalog;
pub mod config;
pub mod connection;
pub mod edge;
pub mod effects;
pub mod error;
pub mod files;
pub mod hooks;
pub mod journal;
pub mod limits;
pub mod mcp;
pub mod metrics;
pub mod notify;
pub mod openapi;
pub mod outbound;
pub mod proxy;
pub mod queue;
pub mod retention;
pub mod routes;
pub mod state;
pub mod ui;

pub use backstop_store as store;
pub use config::Config;
pub use routes::router;
pub use state::AppState;

/// Reads the ledger's session secret again every [`state::SECRET_REFRESH`], so a rotation
/// reaches every server of the fleet.
async fn refresh_session_secret(state: Arc<AppState>) {
    loop {
        tokio::time::sleep(state::SECRET_REFRESH).await;
        let reading = Arc::clone(&state);
        match tokio::task::spawn_blocking(move || reading.refresh_session_secret()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the session secret could not be read again"),
            Err(e) => tracing::warn!(error = %e, "reading the session secret failed"),
        }
    }
}

/// Serves `state` on `listener` until `shutdown` completes; requests in flight finish first,
/// then the notification worker stops.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        effects::start(&state, addr);
    }
    retention::start(&state);
    let limits = state.config.limits;
    let connections = connection::ConnectionLimits {
        header_read: limits.header_timeout,
        idle: limits.idle_timeout,
        max_open: limits.max_connections,
        max_per_address: limits.max_connections_per_address,
    };
    let notifier = notify::Notifier::start(&state);
    let secrets = tokio::spawn(refresh_session_secret(Arc::clone(&state)));
    let served = connection::serve(listener, router(state), connections, shutdown).await;
    secrets.abort();
    if let Some(notifier) = notifier {
        notifier.stop().await;
    }
    served
}
