//! `backstop hint --db | --server`: each failure counted where the service counts it. The
//! failure goes to `POST /v1/recover`, on the service's router in this process over the ledger
//! (`--db`) or on a running service (`--server`), so a step is journaled, counted and answered
//! exactly as the service answers an agent, and the next run starts from what this one left.

use std::io::{self, Write};

use backstop_core::Report;
use backstop_core::recover::{Context, Step};
use backstop_mcp::hooks;
use backstop_mcp::proxy::Governor;
use backstop_mcp::{ApiAnswer, ApiRequest, Backend, Remote};
use backstop_server::catalog::Catalog;
use backstop_server::mcp::InProcess;
use backstop_server::{Config, routes};
use serde_json::{Value, json};

use super::serve::{Notifies, build_state, open_store};
use super::{EXIT_ISSUES, EXIT_OK};
use crate::output;
use crate::settings::{Counter, OutputMode};

/// Where the failures go; also the one backend type of the stdio servers (`mcp`, `proxy`),
/// so each is built once for both, not once per backend.
#[derive(Debug, Clone)]
pub enum Sender {
    /// The service's router in this process, on the ledger.
    Local(InProcess),
    /// A running service.
    Remote(Remote),
}

impl Backend for Sender {
    async fn send(&self, request: ApiRequest) -> Result<ApiAnswer, backstop_mcp::BackendError> {
        match self {
            Sender::Local(backend) => backend.send(request).await,
            Sender::Remote(backend) => backend.send(request).await,
        }
    }
}

/// What `/v1/recover` answered for one failure.
#[derive(Debug)]
pub enum Answer {
    /// The step, as the service wrote it.
    Step(Value),
    /// A refusal: the HTTP status and the refusal body.
    Refused(u16, Value),
    /// Nothing came back: why.
    Unreachable(String),
}

/// A counter that is open: the runtime the router or the client runs on, and where to send.
#[derive(Debug)]
pub struct Counted {
    runtime: tokio::runtime::Runtime,
    sender: Sender,
}

impl Counted {
    /// Opens the ledger (`--db`) or readies the client (`--server`); `None` once why not is
    /// written to `err`.
    pub fn open(counter: &Counter, err: &mut impl Write) -> io::Result<Option<Counted>> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let sender = match counter {
            Counter::Server { url, key } => Sender::Remote(Remote::new(url, key.clone())),
            Counter::Ledger {
                db,
                rules,
                strategies,
            } => {
                let config = Config {
                    db: db.clone(),
                    packs: Vec::new(),
                    rules: rules.clone(),
                    strategies: strategies.iter().cloned().collect(),
                    ..Config::default()
                };
                let catalog = match Catalog::load(&config) {
                    Ok(catalog) => catalog,
                    Err(issues) => {
                        let mut sink = io::sink();
                        output::refuse_command(OutputMode::Human, &issues, &mut sink, err)?;
                        return Ok(None);
                    }
                };
                let Some(store) = open_store(&config, err)? else {
                    return Ok(None);
                };
                let body_limit = config.limits.body_bytes;
                let built = runtime.block_on(build_state(
                    config,
                    None,
                    catalog,
                    store,
                    Notifies::No,
                    err,
                ))?;
                let Some(state) = built else {
                    return Ok(None);
                };
                Sender::Local(InProcess::new(routes::api_router(state), body_limit))
            }
        };
        Ok(Some(Counted { runtime, sender }))
    }

    /// Sends one request to the router or the service and waits for its answer.
    ///
    /// # Errors
    /// Nothing came back: why.
    pub fn send(&self, request: ApiRequest) -> Result<ApiAnswer, String> {
        let sent = match &self.sender {
            Sender::Local(backend) => self.runtime.block_on(backend.send(request)),
            Sender::Remote(backend) => self.runtime.block_on(backend.send(request)),
        };
        sent.map_err(|e| e.to_string())
    }

    /// The answer to one hook document (`backstop hook`): what `POST /v1/hooks/{agent}`
    /// answers, on this ledger or service.
    ///
    /// # Errors
    /// backstop could not be asked: why.
    pub fn answer_hook(&self, document: &hooks::Document) -> Result<Option<Value>, String> {
        let governor = Governor::new(self.sender.clone());
        self.runtime
            .block_on(hooks::answer(&governor, document, None))
    }

    /// Sends one failure of `task` and reads the answer.
    pub fn step(&self, task: &str, report: &Report, context: &Context) -> Answer {
        let body = json!({"task": task, "report": report, "context": context});
        let sent = self.send(ApiRequest::post("/v1/recover", body));
        match sent {
            Ok(ApiAnswer { status: 200, body }) => Answer::Step(body),
            Ok(ApiAnswer { status, body }) => Answer::Refused(status, body),
            Err(why) => Answer::Unreachable(why),
        }
    }
}

/// Prints one answer: the step, or the refusal, as `mode` says; returns the exit code.
pub fn print(
    answer: &Answer,
    mode: OutputMode,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    match answer {
        Answer::Step(value) => {
            match (mode, serde_json::from_value::<Step>(value.clone())) {
                (OutputMode::Human, Ok(step)) => output::step_human(out, &step)?,
                _ => output::json_line(out, value)?,
            }
            Ok(EXIT_OK)
        }
        Answer::Refused(status, body) => {
            match mode {
                OutputMode::Json => output::json_line(out, body)?,
                OutputMode::Human => output::refusal_human(err, *status, body)?,
            }
            Ok(super::exit_for_status(*status))
        }
        Answer::Unreachable(why) => {
            writeln!(err, "backstop: {why}")?;
            Ok(EXIT_ISSUES)
        }
    }
}
