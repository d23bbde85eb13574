//! `POST /v1/hooks/{agent}`: an agent's tool hook sent over HTTP (Claude Code's `http` hooks;
//! Codex and others send the same document), answered as `backstop hook` answers it on stdin,
//! on this service's ledger and behind its keys.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::post;
use axum::{Json, Router, middleware};
use backstop_core::Issue;
use backstop_core::case::RefusalCode;
use backstop_mcp::hooks::{self, AGENTS};
use backstop_mcp::proxy::Governor;
use serde_json::{Value, json};

use crate::auth::require_key;
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::mcp::InProcess;
use crate::state::AppState;

/// What the route asks: the service's own API, in this process.
#[derive(Debug)]
pub struct HookState {
    governor: Governor<InProcess>,
}

/// The route, behind the keys.
pub fn routes(state: &Arc<AppState>, api: &Router) -> Router {
    let hook_state = Arc::new(HookState {
        governor: Governor::new(InProcess::new(api.clone(), state.config.limits.body_bytes)),
    });
    Router::new()
        .route("/v1/hooks/{agent}", post(answer))
        .with_state(hook_state)
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(state),
            require_key,
        ))
}

/// One hook document: `PreToolUse` is answered with a denial or nothing (`{}`); a failed call
/// (`PostToolUseFailure`, or a `PostToolUse` whose response is an error) is counted and answered
/// with the next step as `additionalContext` (and a block after `PostToolUse` when the step
/// ends the call's line); a call that worked is recorded. The answer is the hook protocol's
/// JSON output, as a command hook prints it.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/hooks/{agent}", tag = "calls",
    params(("agent" = String, Path, description = "The agent whose hook sends the document: claude-code or codex")),
    request_body = HookDocument,
    responses(
        (status = 200, body = HookAnswer, description = "The hook's output: a denial, the next step as context, or `{}` (nothing to say)"),
        (status = "4XX", body = backstop_core::case::Refusal),
        (status = 503, body = backstop_core::case::Refusal, description = "backstop could not answer: the agent goes on with the call")),
    security(("key" = []))))]
pub async fn answer(
    State(hook_state): State<Arc<HookState>>,
    Path(agent): Path<String>,
    headers: axum::http::HeaderMap,
    JsonBody(value): JsonBody,
) -> Result<Json<Value>, ApiError> {
    if !AGENTS.contains(&agent.as_str()) {
        return Err(ApiError::malformed(vec![Issue::new(
            "agent",
            "unknown_agent",
            format!("backstop reads the hooks of {}", AGENTS.join(" and ")),
        )]));
    }
    let document = match hooks::read_document(&value) {
        Ok(Some(document)) => document,
        Ok(None) => {
            return Err(ApiError::malformed(vec![Issue::new(
                "hook_event_name",
                "not_governed",
                "backstop answers PreToolUse, PostToolUse and PostToolUseFailure: send only those",
            )]));
        }
        Err((path, why)) => {
            return Err(ApiError::malformed(vec![Issue::new(path, "invalid", why)]));
        }
    };
    let authorization = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match hooks::answer(&hook_state.governor, &document, authorization).await {
        Ok(Some(reply)) => Ok(Json(reply)),
        Ok(None) => Ok(Json(json!({}))),
        Err(why) => Err(ApiError::new(
            RefusalCode::Busy,
            format!("backstop could not answer the hook: {why}; the agent goes on with the call"),
        )),
    }
}

/// A hook document as the agent sends it (other fields the agent sends are read past).
#[cfg(feature = "openapi")]
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code, reason = "a schema for the document, never built")]
pub struct HookDocument {
    /// `PreToolUse`, `PostToolUse` or `PostToolUseFailure`.
    hook_event_name: String,
    /// The agent's session: the task.
    session_id: String,
    /// The tool.
    tool_name: String,
    /// The call's arguments.
    #[schema(value_type = Option<Object>)]
    tool_input: Option<Value>,
    /// After the call (`PostToolUse`): the tool's response; a failure when it says `isError`,
    /// `is_error` or `success: false`.
    #[schema(value_type = Option<Object>)]
    tool_response: Option<Value>,
    /// After a failed call (`PostToolUseFailure`): the error.
    #[schema(value_type = Option<Object>)]
    error: Option<Value>,
}

/// The hook protocol's output.
#[cfg(feature = "openapi")]
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code, reason = "a schema for the answer, never built")]
pub struct HookAnswer {
    /// The event's output: `permissionDecision` and its reason, or `additionalContext`.
    #[schema(value_type = Option<Object>, rename = "hookSpecificOutput")]
    hook_specific_output: Option<Value>,
    /// `block`, after a `PostToolUse` whose step ends the call's line.
    decision: Option<String>,
    /// Why it is blocked.
    reason: Option<String>,
}
