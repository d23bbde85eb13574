//! The routes, one module per resource.

use backstop_core::case::RefusalCode;
use std::sync::Arc;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::auth::authenticate;
use crate::error::ApiError;
use crate::limits::{content_length_limit, timeout};
use crate::state::AppState;

pub mod approaches;
pub mod cases;
pub mod classify;
pub mod dispatches;
pub mod health;
pub mod jobs;
pub mod recover;
pub mod reviews;
pub mod suppressions;
pub mod tasks;
pub mod webhooks;

/// Every route, with authentication, limits and metrics; MCP at `/mcp` and each `[[proxy]]`
/// at `/proxy/NAME/mcp`; the operator's page at `/ui`.
pub fn router(state: Arc<AppState>) -> Router {
    let api = api_router(Arc::clone(&state));
    let proxies = crate::proxy::routes(&state, &api);
    let hooks = crate::hooks::routes(&state, &api);
    let mcp = crate::mcp::routes(&state, api)
        .merge(proxies)
        .merge(hooks)
        .route_layer(middleware::from_fn_with_state(Arc::clone(&state), count));
    let ui = crate::ui::routes(&state)
        .route_layer(middleware::from_fn_with_state(Arc::clone(&state), count));
    // One set of edge layers over every route: `/v1`, `/ui` and `/mcp` alike.
    let routes = api_routes(Arc::clone(&state)).merge(mcp).merge(ui);
    edge(routes, state)
}

/// Every API route, with authentication, limits and metrics: what MCP tool calls reach.
pub fn api_router(state: Arc<AppState>) -> Router {
    let routes = api_routes(Arc::clone(&state));
    edge(routes, state)
}

/// What every request passes first, outermost first: the edge's guard (a write from another
/// site refused, a path and query checked, a JSON route given only JSON), a declared body over
/// the limit refused at once, the request timeout, the body limit.
fn edge(router: Router, state: Arc<AppState>) -> Router {
    router
        .layer(axum::extract::DefaultBodyLimit::max(
            state.config.limits.body_bytes,
        ))
        .layer(middleware::from_fn_with_state(Arc::clone(&state), timeout))
        .layer(middleware::from_fn_with_state(state, content_length_limit))
        .layer(middleware::from_fn(crate::edge::guard))
}

/// The API's routes, their authentication and metrics, without the edge layers.
fn api_routes(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route("/v1/classify", post(classify::classify))
        .route("/v1/recover", post(recover::recover))
        .route("/v1/outcomes", post(recover::outcomes))
        .route("/v1/tools", get(recover::tools))
        .route("/v1/grants", post(recover::grants))
        .route("/v1/tasks/{task}", get(tasks::show))
        .route("/v1/tasks/{task}/reset", post(tasks::reset))
        .route("/v1/approaches", get(approaches::list))
        .route("/v1/jobs", get(jobs::list))
        .route("/v1/jobs/{job}", get(jobs::show))
        .route("/v1/jobs/{job}/decisions", post(cases::decide))
        .route("/v1/jobs/{job}/cases/{id}", get(cases::show))
        .route("/v1/jobs/{job}/dispatches", post(dispatches::dispatch))
        .route("/v1/dispatches/{key}", get(dispatches::show))
        .route("/v1/dispatches/{key}/outcome", post(dispatches::outcome))
        .route("/v1/reviews", get(reviews::list))
        .route("/v1/reviews/{id}/resolve", post(reviews::resolve))
        .route("/v1/suppressions", get(suppressions::list))
        .route("/v1/suppressions/lift", post(suppressions::lift))
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            authenticate,
        ));
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route("/openapi.json", get(crate::openapi::openapi_json))
        // Signed by their source (HMAC), not by an API key.
        .route("/v1/webhooks/{source}", post(webhooks::receive))
        .merge(api)
        // A route layer sees the matched route pattern; unmatched requests are not counted.
        .route_layer(middleware::from_fn_with_state(Arc::clone(&state), count))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::new(
        RefusalCode::NotFound,
        "no such route; see GET /openapi.json",
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        RefusalCode::MethodNotAllowed,
        "this route does not take that method; see GET /openapi.json",
    )
}

/// Counts every answer by method, route pattern and status.
async fn count(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let method = request.method().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(request).await.into_response();
    state
        .metrics
        .request(&method, &route, response.status().as_u16());
    response
}
