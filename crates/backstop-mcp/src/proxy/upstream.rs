//! The upstream MCP server: started as a child process, spoken to as its client, started again
//! after it dies. Its notifications (list changes, resource updates, progress) go on to the client
//! downstream.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientRequest, InitializeResult, ProgressNotificationParam, ProgressToken,
    ResourceUpdatedNotificationParam, ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RunningService, ServiceError,
};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, RoleServer, ServiceExt};

use super::outcome::Outcome;
use super::settings::ToolHints;

/// The client a call came from, and its progress token.
type Downstream = (Peer<RoleServer>, ProgressToken);

/// The client side of the proxy: what it hears from the upstream goes on downstream.
#[derive(Debug, Clone, Default)]
pub struct UpstreamClient {
    /// The one client of a stdio proxy, told when the upstream's lists change.
    downstream: Arc<OnceLock<Peer<RoleServer>>>,
    /// The client and its progress token of each call out, by the upstream's token.
    progress: Arc<Mutex<HashMap<ProgressToken, Downstream>>>,
}

impl UpstreamClient {
    fn downstream(&self) -> Option<&Peer<RoleServer>> {
        self.downstream.get()
    }
}

impl ClientHandler for UpstreamClient {
    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let found = self
            .progress
            .lock()
            .ok()
            .and_then(|map| map.get(&params.progress_token).cloned());
        if let Some((peer, token)) = found {
            params.progress_token = token;
            let _ = peer.notify_progress(params).await;
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(peer) = self.downstream() {
            let _ = peer.notify_resource_updated(params).await;
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(peer) = self.downstream() {
            let _ = peer.notify_resource_list_changed().await;
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(peer) = self.downstream() {
            let _ = peer.notify_tool_list_changed().await;
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(peer) = self.downstream() {
            let _ = peer.notify_prompt_list_changed().await;
        }
    }
}

/// The upstream server, connected on first need and again after it died.
#[derive(Debug)]
pub struct Upstream {
    command: Vec<String>,
    start_timeout: Duration,
    client: UpstreamClient,
    connection: tokio::sync::Mutex<Option<RunningService<RoleClient, UpstreamClient>>>,
    hints: Mutex<HashMap<String, ToolHints>>,
    /// What the upstream said of itself when it last connected.
    info: Mutex<Option<InitializeResult>>,
}

/// The limits of one call.
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    /// Without an answer or progress.
    pub idle: Duration,
    /// At all.
    pub total: Duration,
}

impl Upstream {
    /// The upstream started by `command` (program first), given `start_timeout` to answer
    /// `initialize`.
    pub fn new(command: Vec<String>, start_timeout: Duration) -> Self {
        Upstream {
            command,
            start_timeout,
            client: UpstreamClient::default(),
            connection: tokio::sync::Mutex::new(None),
            hints: Mutex::new(HashMap::new()),
            info: Mutex::new(None),
        }
    }

    /// The upstream a proxy's settings name.
    pub fn for_settings(settings: &super::ProxySettings) -> Self {
        Upstream::new(
            settings.command.clone(),
            Duration::from_secs(settings.start_timeout_s),
        )
    }

    /// Where the upstream's notifications go, once the downstream client is there.
    pub fn set_downstream(&self, peer: Peer<RoleServer>) {
        let _ = self.client.downstream.set(peer);
    }

    /// What the proxy says it is downstream: the upstream's capabilities, identity and
    /// instructions, as it last connected.
    pub fn info(&self) -> Option<InitializeResult> {
        self.info.lock().ok().and_then(|info| info.clone())
    }

    fn remember_info(&self, running: &RunningService<RoleClient, UpstreamClient>) {
        let Some(peer_info) = running.peer().peer_info() else {
            return;
        };
        let mut info = InitializeResult::new(peer_info.capabilities.clone());
        if let Some(server) = &peer_info.server_info {
            info.server_info = server.clone();
        }
        info.instructions.clone_from(&peer_info.instructions);
        if let Ok(mut kept) = self.info.lock() {
            *kept = Some(info);
        }
    }

    /// The connection's peer, starting the upstream when it is not running.
    ///
    /// # Errors
    /// Why the upstream could not be started or did not answer `initialize`.
    pub async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut guard = self.connection.lock().await;
        if let Some(running) = guard.as_ref()
            && !running.peer().is_transport_closed()
        {
            return Ok(running.peer().clone());
        }
        if let Some(dead) = guard.take() {
            let _ = dead.cancel().await;
        }
        let running = self.connect().await?;
        self.remember_info(&running);
        let peer = running.peer().clone();
        *guard = Some(running);
        Ok(peer)
    }

    async fn connect(&self) -> Result<RunningService<RoleClient, UpstreamClient>, String> {
        let shown = self.command.join(" ");
        let Some((program, args)) = self.command.split_first() else {
            return Err("no upstream command was given".to_owned());
        };
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("`{shown}` could not be started: {e}"))?;
        match tokio::time::timeout(self.start_timeout, self.client.clone().serve(transport)).await {
            Ok(Ok(running)) => {
                tracing::info!(upstream = %shown, "proxy: the upstream is connected");
                Ok(running)
            }
            Ok(Err(e)) => Err(format!("`{shown}` did not complete initialize: {e}")),
            Err(_) => Err(format!(
                "`{shown}` did not answer initialize within {} s",
                self.start_timeout.as_secs()
            )),
        }
    }

    /// Forgets a connection that closed, so the next call starts the upstream again.
    async fn forget(&self) {
        let mut guard = self.connection.lock().await;
        if let Some(dead) = guard.take() {
            let _ = dead.cancel().await;
        }
    }

    /// What the upstream says of `tool`'s safety, from its last tool list.
    pub fn hints(&self, tool: &str) -> Option<ToolHints> {
        self.hints.lock().ok().and_then(|h| h.get(tool).copied())
    }

    /// Keeps the hints of each tool in a list the upstream gave.
    pub fn learn(&self, tools: &[rmcp::model::Tool]) {
        let Ok(mut hints) = self.hints.lock() else {
            return;
        };
        for tool in tools {
            let annotations = tool.annotations.as_ref();
            hints.insert(
                tool.name.to_string(),
                ToolHints {
                    read_only: annotations.and_then(|a| a.read_only_hint) == Some(true),
                    idempotent: annotations.and_then(|a| a.idempotent_hint) == Some(true),
                },
            );
        }
    }

    /// Keeps `tool`, which the upstream's list does not name, as a tool without hints.
    pub fn learn_unlisted(&self, tool: &str) {
        if let Ok(mut hints) = self.hints.lock() {
            hints.insert(tool.to_owned(), ToolHints::default());
        }
    }

    /// Sends one `tools/call` and reads what came back; `cancelled` passes the client's
    /// cancellation upstream.
    pub async fn call(
        &self,
        params: CallToolRequestParams,
        limits: CallLimits,
        downstream: &RequestContext<RoleServer>,
    ) -> Outcome {
        let peer = match self.peer().await {
            Ok(peer) => peer,
            Err(why) => return Outcome::Unreachable(why),
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let options = PeerRequestOptions::with_timeout(limits.idle)
            .reset_timeout_on_progress()
            .with_max_total_timeout(limits.total);
        let handle = match peer.send_request_with_option(request, options).await {
            Ok(handle) => handle,
            Err(e) => {
                self.forget().await;
                return Outcome::Unreachable(format!("the call could not be sent: {e}"));
            }
        };
        let id = handle.id.clone();
        let upstream_token = handle.progress_token.clone();
        if let Some(token) = downstream.meta.get_progress_token()
            && let Ok(mut map) = self.client.progress.lock()
        {
            map.insert(upstream_token.clone(), (downstream.peer.clone(), token));
        }
        let outcome = tokio::select! {
            answer = handle.await_response() => self.read_answer(answer).await,
            () = downstream.ct.cancelled() => {
                let notification = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some("cancelled by the client".to_owned()),
                ));
                let _ = peer.send_notification(notification.into()).await;
                Outcome::Cancelled
            }
        };
        if let Ok(mut map) = self.client.progress.lock() {
            map.remove(&upstream_token);
        }
        outcome
    }

    async fn read_answer(&self, answer: Result<ServerResult, ServiceError>) -> Outcome {
        match answer {
            Ok(ServerResult::CallToolResult(result)) if result.is_error == Some(true) => {
                Outcome::ToolError(result)
            }
            Ok(ServerResult::CallToolResult(result)) => Outcome::Success(result.into()),
            Ok(ServerResult::InputRequiredResult(result)) => {
                Outcome::Success(rmcp::model::CallToolResponse::InputRequired(result))
            }
            Ok(ServerResult::CreateTaskResult(result)) => {
                Outcome::Success(rmcp::model::CallToolResponse::Task(result))
            }
            Ok(_) => Outcome::RpcError {
                code: -32603,
                message:
                    "the MCP server answered tools/call with something that is not a tool result"
                        .to_owned(),
            },
            Err(ServiceError::McpError(error)) => Outcome::RpcError {
                code: error.code.0,
                message: error.message.to_string(),
            },
            Err(ServiceError::Timeout { timeout }) => Outcome::TimedOut(timeout),
            Err(ServiceError::TransportClosed) => {
                self.forget().await;
                Outcome::Dropped(
                    "the MCP server closed the connection (its process exited?)".to_owned(),
                )
            }
            Err(other) => {
                self.forget().await;
                Outcome::Dropped(other.to_string())
            }
        }
    }
}
