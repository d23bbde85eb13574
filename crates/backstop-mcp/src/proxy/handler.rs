//! The proxy as an MCP server: the upstream's tools, resources and prompts passed through, and
//! every `tools/call` governed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use backstop_core::issue::{MAX_NAME_CHARS, check_name};
use backstop_core::recover::Action;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, DiscoverResult, GetPromptRequestParams, GetPromptResponse, Implementation,
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
use crate::handler::authorization;
use crate::lines;

/// The `_meta` key a client names its task with, when the session is not the task.
pub const TASK_META_KEY: &str = "backstop/task";

/// The most times the proxy sends one call, resends included.
const MAX_SENDS: u32 = 10;

/// How a call's task is named when the client names none in `_meta`: the stdio session's
/// name, or (on HTTP) one read from the request.
#[derive(Clone)]
pub struct DefaultTask(Arc<NameTask>);

/// Names a call's task from its request.
type NameTask = dyn Fn(&RequestContext<RoleServer>) -> String + Send + Sync;

impl DefaultTask {
    /// Every call's task is `task` (a stdio session).
    pub fn fixed(task: String) -> Self {
        DefaultTask(Arc::new(move |_| task.clone()))
    }

    /// The task is what `name` reads from the request.
    pub fn from_request(
        name: impl Fn(&RequestContext<RoleServer>) -> String + Send + Sync + 'static,
    ) -> Self {
        DefaultTask(Arc::new(name))
    }
}

impl std::fmt::Debug for DefaultTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DefaultTask")
    }
}

/// `backstop proxy`: one upstream MCP server behind backstop. Handlers of one proxy (one per
/// HTTP session) share its upstream and its governor.
#[derive(Debug, Clone)]
pub struct ProxyServer<B> {
    settings: Arc<ProxySettings>,
    upstream: Arc<Upstream>,
    governor: Arc<Governor<B>>,
    default_task: DefaultTask,
    /// Whether the one client is told when the upstream's lists change (stdio).
    stdio: bool,
}

impl<B: Backend> ProxyServer<B> {
    /// A handler of a proxy whose parts are shared: its upstream and its governor.
    pub fn new(
        settings: Arc<ProxySettings>,
        upstream: Arc<Upstream>,
        governor: Arc<Governor<B>>,
        default_task: DefaultTask,
    ) -> Self {
        ProxyServer {
            settings,
            upstream,
            governor,
            default_task,
            stdio: false,
        }
    }

    /// The stdio proxy of one session (a task name): the upstream is started first. An
    /// upstream that cannot start is not fatal: the proxy serves, each request tries again,
    /// and the failure is what the client reads.
    pub async fn start_stdio(settings: ProxySettings, session: String, backend: B) -> Self {
        let upstream = Arc::new(Upstream::for_settings(&settings));
        if let Err(why) = upstream.peer().await {
            tracing::error!(proxy = %settings.name, "proxy: the upstream is not running: {why}");
        }
        let mut server = ProxyServer::new(
            Arc::new(settings),
            upstream,
            Arc::new(Governor::new(backend)),
            DefaultTask::fixed(session),
        );
        server.stdio = true;
        server
    }

    /// The task a call belongs to: the one the client names in `_meta`, else the session.
    fn task_of(&self, context: &RequestContext<RoleServer>) -> Result<String, String> {
        let path = format!("_meta.{TASK_META_KEY}");
        match context.meta.get(TASK_META_KEY) {
            None | Some(Value::Null) => Ok((self.default_task.0)(context)),
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
        if self.settings.heeds_hints(tool)
            && self.upstream.hints(tool).is_none()
            && let Ok(peer) = self.upstream.peer().await
            && let Ok(listed) = peer.list_all_tools().await
        {
            self.upstream.learn(&listed);
            // A tool the list does not name has no hints: not listed again for each call.
            if self.upstream.hints(tool).is_none() {
                self.upstream.learn_unlisted(tool);
            }
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
        let auth = authorization(context);
        let auth = auth.as_deref();
        match self.governor.refusal(&task, &tool, &operation, auth).await {
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
                        let auth = auth.map(str::to_owned);
                        // Only the recovery of a call that failed starts its task's
                        // counters again.
                        let reset = governor.recovered(&task, &tool, &operation);
                        tokio::spawn(async move {
                            let task = reset.then_some(task.as_str());
                            if let Err(why) = governor.succeeded(task, &tool, auth.as_deref()).await
                            {
                                tracing::warn!(%tool, "proxy: a success went unrecorded: {why}");
                            }
                        });
                        Ok(response)
                    }
                    _ => Err(ErrorData::internal_error("the call was cancelled", None)),
                };
            };
            self.governor.note_failure(&task, &tool, &operation);
            let answered = match self
                .governor
                .failed(&task, &report, Some(outcome.may_have_taken_effect()), auth)
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
        self.upstream
            .info()
            .unwrap_or_else(|| fallback_info(&self.settings))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // The upstream's capabilities are the proxy's: start it first (its failure is said
        // by the fallback's instructions and by each request).
        let _ = self.upstream.peer().await;
        context.peer.set_peer_info(request.clone());
        if self.stdio {
            self.upstream.set_downstream(context.peer.clone());
        }
        self.negotiate_initialize(&request)
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let _ = self.upstream.peer().await;
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
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
