//! The proxy as an MCP server: the upstream's tools, resources and prompts passed through, and
//! every `tools/call` governed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use backstop_core::issue::{MAX_NAME_CHARS, check_name};
use backstop_core::recover::Action;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, GetPromptRequestParams, GetPromptResponse, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, ServiceError};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::govern::{Answered, Governor};
use super::outcome::{Outcome, operation_of};
use super::settings::ProxySettings;
use super::upstream::{CallLimits, Upstream};
use crate::backend::Backend;
use crate::lines;

/// The `_meta` key a client names its task with, when the session is not the task.
pub const TASK_META_KEY: &str = "backstop/task";

/// The most times the proxy sends one call, resends included.
const MAX_SENDS: u32 = 10;

/// `backstop proxy`: one upstream MCP server behind backstop.
#[derive(Debug)]
pub struct ProxyServer<B> {
    settings: ProxySettings,
    session: String,
    upstream: Arc<Upstream>,
    governor: Arc<Governor<B>>,
    info: ServerConfig,
}

impl<B: Backend> ProxyServer<B> {
    /// Starts the upstream and readies the proxy for the session `session` (a task name). An
    /// upstream that cannot start is not fatal: the proxy serves, each request tries again,
    /// and the failure is what the client reads.
    pub async fn start(settings: ProxySettings, session: String, backend: B) -> Self {
        let upstream = Arc::new(Upstream::new(
            settings.command.clone(),
            Duration::from_secs(settings.start_timeout_s),
        ));
        let info = match upstream.peer().await {
            Ok(_) => upstream
                .info()
                .await
                .unwrap_or_else(|| fallback_info(&settings)),
            Err(why) => {
                tracing::error!(proxy = %settings.name, "proxy: the upstream is not running: {why}");
                fallback_info(&settings)
            }
        };
        ProxyServer {
            settings,
            session,
            upstream,
            governor: Arc::new(Governor::new(backend)),
            info,
        }
    }

    /// The task a call belongs to: the one the client names in `_meta`, else the session.
    fn task_of(&self, context: &RequestContext<RoleServer>) -> Result<String, String> {
        let path = format!("_meta.{TASK_META_KEY}");
        match context.meta.get(TASK_META_KEY) {
            None | Some(Value::Null) => Ok(self.session.clone()),
            Some(Value::String(task)) => {
                let mut issues = Vec::new();
                let fits = check_name(task, &path, "bad_name", "a task name", &mut issues);
                if fits && !task.chars().any(char::is_control) {
                    Ok(task.clone())
                } else {
                    Err(format!(
                        "{path} must be a task name: 1 to {MAX_NAME_CHARS} characters, not blank, no control characters"
                    ))
                }
            }
            Some(_) => Err(format!("{path} must be a string: the task's name")),
        }
    }

    /// Whether a call of `tool` may be sent again; the upstream's tool list is read once when
    /// its hints are not known yet.
    async fn resend_safe(&self, tool: &str) -> bool {
        if self.upstream.hints(tool).is_none()
            && let Ok(peer) = self.upstream.peer().await
            && let Ok(listed) = peer.list_all_tools().await
        {
            self.upstream.learn(&listed);
        }
        self.settings
            .resend_safe(tool, self.upstream.hints(tool).unwrap_or_default())
    }

    async fn govern(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let task = match self.task_of(context) {
            Ok(task) => task,
            Err(why) => {
                let body = json!({"refused": "bad_request", "tool": tool, "message": why});
                return Ok(
                    failure(format!("backstop: {why}; nothing was sent"), None, body).into(),
                );
            }
        };
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let operation = operation_of(&arguments);
        match self.governor.refusal(&task, &tool, &operation).await {
            Ok(Some(refusal)) => {
                return Ok(
                    failure(format!("backstop: {}", refusal.line), None, refusal.body).into(),
                );
            }
            Ok(None) => {}
            // backstop never blocks a call because it failed itself.
            Err(why) => tracing::warn!(%tool, "proxy: the call goes on unchecked: {why}"),
        }
        let safe = self.resend_safe(&tool).await;
        let limits = CallLimits {
            idle: self.settings.timeout_of(&tool),
            total: self.settings.max_timeout(),
        };
        let mut sends = 0;
        loop {
            sends += 1;
            let started = Instant::now();
            let outcome = self.upstream.call(request.clone(), limits, context).await;
            let Some(report) = outcome.report(&tool, &operation, safe, started.elapsed()) else {
                return match outcome {
                    Outcome::Success(response) => {
                        // Reported off the answer's path: the model has its result at once.
                        let governor = Arc::clone(&self.governor);
                        tokio::spawn(async move {
                            if let Err(why) = governor.succeeded(&task, &tool).await {
                                tracing::warn!(%tool, "proxy: a success went unrecorded: {why}");
                            }
                        });
                        Ok(response)
                    }
                    _ => Err(ErrorData::internal_error("the call was cancelled", None)),
                };
            };
            let answered = match self
                .governor
                .failed(&task, &report, outcome.may_have_taken_effect())
                .await
            {
                Ok(answered) => answered,
                Err(why) => {
                    tracing::warn!(%tool, "proxy: a failure went uncounted: {why}");
                    return Ok(ungoverned(&outcome, &why).into());
                }
            };
            let wait = Duration::from_millis(answered.delay_ms);
            let resend = safe
                && matches!(answered.action, Some(Action::RetrySame | Action::Wait))
                && !answered.deferred
                && wait <= Duration::from_secs(self.settings.resend_wait_max_s)
                && sends < MAX_SENDS;
            if !resend {
                return Ok(governed(&answered, &task, &tool, &outcome).into());
            }
            tracing::info!(%tool, attempt = sends, "proxy: resending a retry-safe call after {wait:?}");
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = context.ct.cancelled() => {
                    return Err(ErrorData::internal_error("the call was cancelled", None));
                }
            }
        }
    }
}

/// What the proxy says it is when the upstream has not answered `initialize`.
fn fallback_info(settings: &ProxySettings) -> ServerConfig {
    let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().build());
    info.server_info = Implementation::new(
        format!("backstop proxy ({})", settings.name),
        env!("CARGO_PKG_VERSION"),
    );
    info.instructions = Some(format!(
        "The MCP server behind this proxy (`{}`) is not running; every request tries to start it again.",
        settings.command.join(" ")
    ));
    info
}

/// A governed failure: the line to act on first, the upstream's words, and the JSON.
fn failure(line: String, upstream: Option<String>, body: Value) -> CallToolResult {
    let mut result = CallToolResult::structured_error(body);
    result.content.insert(0, ContentBlock::text(line));
    if let Some(text) = upstream {
        result
            .content
            .insert(1, ContentBlock::text(format!("The tool said: {text}")));
    }
    result
}

/// The result the model reads after a counted failure.
fn governed(answered: &Answered, task: &str, tool: &str, outcome: &Outcome) -> CallToolResult {
    let step = &answered.step;
    let line = match answered.action {
        Some(Action::Escalate) => {
            let to = step
                .pointer("/escalation/to")
                .and_then(Value::as_str)
                .unwrap_or("a person");
            let why = step
                .pointer("/escalation/why")
                .and_then(Value::as_str)
                .unwrap_or_default();
            format!("handed to {to}: do not call {tool} again for this. {why}")
        }
        _ => lines::step(step).unwrap_or_else(|| "see the step".to_owned()),
    };
    let mut body = step.clone();
    if let Value::Object(fields) = &mut body {
        fields.insert("task".to_owned(), json!(task));
        fields.insert("tool".to_owned(), json!(tool));
    }
    failure(format!("backstop: {line}"), outcome.upstream_text(), body)
}

/// A failure backstop could not count: passed on as the upstream gave it, with why.
fn ungoverned(outcome: &Outcome, why: &str) -> CallToolResult {
    if let Outcome::ToolError(result) = outcome {
        return result.clone();
    }
    let text = outcome.upstream_text().unwrap_or_default();
    CallToolResult::error(vec![ContentBlock::text(format!(
        "{text} (backstop could not count this failure: {why})"
    ))])
}

/// An upstream request's failure, as the downstream client reads it.
fn upstream_error(error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => ErrorData::internal_error(
            format!("the MCP server behind backstop proxy: {other}"),
            None,
        ),
    }
}

impl<B: Backend> ServerHandler for ProxyServer<B> {
    fn get_info(&self) -> ServerConfig {
        self.info.clone()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        self.upstream.set_downstream(context.peer.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let peer = self
            .upstream
            .peer()
            .await
            .map_err(|why| ErrorData::internal_error(why, None))?;
        let listed = peer.list_tools(request).await.map_err(upstream_error)?;
        self.upstream.learn(&listed.tools);
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.govern(request, &context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let peer = self
            .upstream
            .peer()
            .await
            .map_err(|why| ErrorData::internal_error(why, None))?;
        peer.list_resources(request).await.map_err(upstream_error)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let peer = self
            .upstream
            .peer()
            .await
            .map_err(|why| ErrorData::internal_error(why, None))?;
        peer.list_resource_templates(request)
            .await
            .map_err(upstream_error)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let peer = self
            .upstream
            .peer()
            .await
            .map_err(|why| ErrorData::internal_error(why, None))?;
        peer.read_resource_once(request)
            .await
            .map_err(upstream_error)
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let peer = self
            .upstream
            .peer()
            .await
            .map_err(|why| ErrorData::internal_error(why, None))?;
        peer.list_prompts(request).await.map_err(upstream_error)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let peer = self
            .upstream
            .peer()
            .await
            .map_err(|why| ErrorData::internal_error(why, None))?;
        peer.get_prompt_once(request).await.map_err(upstream_error)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let peer = self
            .upstream
            .peer()
            .await
            .map_err(|why| ErrorData::internal_error(why, None))?;
        peer.complete(request).await.map_err(upstream_error)
    }
}
