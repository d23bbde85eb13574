//! The proxy's questions to backstop, over the same API `/v1/recover` answers agents on: is
//! this call allowed, what now after this failure, this call worked.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use backstop_core::Report;
use backstop_core::recover::{Action, Context};
use serde_json::{Value, json};

use crate::backend::{ApiAnswer, ApiRequest, Backend};
use crate::tools::encode;

/// How long the state a call is checked against is reused: a failure this proxy counts
/// forgets it at once; what another proxy or an operator changed is seen within this.
pub const CHECK_TTL: Duration = Duration::from_secs(1);

/// The most (task, caller) checks kept at once.
const CHECKS_KEPT: usize = 1024;

/// Whose checks: the task, and the caller's `Authorization` (approaches are the caller's).
type CheckKey = (String, Option<String>);

/// The state a call is checked against, as read.
#[derive(Debug)]
struct Checked {
    at: Instant,
    task: Value,
    tools: Value,
    approaches: Value,
}

/// Asks backstop, on the ledger in this process or a service (`--server`).
#[derive(Debug)]
pub struct Governor<B> {
    backend: B,
    /// The last state read per task and `Authorization` (approaches are the caller's).
    checked: Mutex<HashMap<CheckKey, Arc<Checked>>>,
    /// The calls (task, tool, operation) that failed since their task's counters last started
    /// again: only a success of one of them starts them again.
    failing: Mutex<HashSet<(String, String, String)>>,
}

/// A recovery step, as the service wrote it, and the parts the proxy acts on.
#[derive(Debug, Clone)]
pub struct Answered {
    /// The step's JSON.
    pub step: Value,
    /// What to do.
    pub action: Option<Action>,
    /// How long to wait first, in milliseconds.
    pub delay_ms: u64,
    /// Whether the step says to come back later rather than wait now.
    pub deferred: bool,
}

impl<B: Backend> Governor<B> {
    /// A governor asking `backend`.
    pub fn new(backend: B) -> Self {
        Governor {
            backend,
            checked: Mutex::new(HashMap::new()),
            failing: Mutex::new(HashSet::new()),
        }
    }

    /// The task's state, its tools' and the caller's approaches: read at most once per
    /// [`CHECK_TTL`], the three reads at once.
    async fn checked(
        &self,
        task: &str,
        authorization: Option<&str>,
    ) -> Result<Arc<Checked>, String> {
        let key = (task.to_owned(), authorization.map(str::to_owned));
        if let Some(found) = self.checked.lock().ok().and_then(|m| m.get(&key).cloned())
            && found.at.elapsed() < CHECK_TTL
        {
            return Ok(found);
        }
        let task_path = format!("/v1/tasks/{}", encode(task));
        let (view, tools, approaches) = tokio::join!(
            self.ask(ApiRequest::get(task_path), authorization),
            self.ask(ApiRequest::get("/v1/tools"), authorization),
            self.ask(ApiRequest::get("/v1/approaches"), authorization),
        );
        let found = Arc::new(Checked {
            at: Instant::now(),
            task: view?,
            tools: tools?,
            approaches: approaches?,
        });
        if let Ok(mut kept) = self.checked.lock() {
            if kept.len() >= CHECKS_KEPT {
                kept.clear();
            }
            kept.insert(key, Arc::clone(&found));
        }
        Ok(found)
    }

    /// Notes that `tool` as `operation` failed in `task`.
    pub fn note_failure(&self, task: &str, tool: &str, operation: &str) {
        if let Ok(mut failing) = self.failing.lock() {
            if failing.len() >= CHECKS_KEPT * 4 {
                failing.clear();
            }
            failing.insert((task.to_owned(), tool.to_owned(), operation.to_owned()));
        }
    }

    /// Whether a success of `tool` as `operation` in `task` is the recovery of a call that
    /// failed: then (and only then) the task's counters start again, and its noted failures
    /// are forgotten. A success of another call leaves them counting, so a model that keeps
    /// sending one failing call between calls that work is still stopped.
    pub fn recovered(&self, task: &str, tool: &str, operation: &str) -> bool {
        let Ok(mut failing) = self.failing.lock() else {
            return false;
        };
        let key = (task.to_owned(), tool.to_owned(), operation.to_owned());
        if !failing.contains(&key) {
            return false;
        }
        failing.retain(|(t, _, _)| t != task);
        true
    }

    /// Forgets every state read: this proxy just changed it.
    fn forget_checks(&self) {
        if let Ok(mut kept) = self.checked.lock() {
            kept.clear();
        }
    }

    /// Sends `request` with the caller's `authorization`: the answer's body when it is a 200,
    /// else why not.
    async fn ask(
        &self,
        mut request: ApiRequest,
        authorization: Option<&str>,
    ) -> Result<Value, String> {
        request.authorization = authorization.map(str::to_owned);
        let (method, path) = (request.method.as_str(), request.path.clone());
        match self.backend.send(request).await {
            Ok(ApiAnswer { status: 200, body }) => Ok(body),
            Ok(ApiAnswer { status, body }) => {
                Err(format!("{method} {path} was refused ({status}): {body}"))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// Why a call of `tool` as `operation` in `task` must not reach the upstream, if it must
    /// not: the task was stopped, the tool's breaker is open, or the caller spent every attempt
    /// of a class on this very call before.
    ///
    /// `authorization` is the client's `Authorization` header, for a service with keys.
    pub async fn refusal(
        &self,
        task: &str,
        tool: &str,
        operation: &str,
        authorization: Option<&str>,
    ) -> Result<Option<Refusal>, String> {
        let checked = self.checked(task, authorization).await?;
        let (view, tools, approaches) = (&checked.task, &checked.tools, &checked.approaches);
        if let Some(by) = view.get("stopped_by").and_then(Value::as_str) {
            return Ok(Some(Refusal {
                line: format!(
                    "stop: this session was stopped by {by} — do not retry and do not use another tool; report it. An operator must reset the task before anything else runs."
                ),
                body: json!({"refused": "task_stopped", "task": task, "tool": tool, "stopped_by": by}),
            }));
        }
        let breaker = tools
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|t| t.get("tool").and_then(Value::as_str) == Some(tool))
            .and_then(|t| t.get("breaker"))
            .cloned();
        if breaker
            .as_ref()
            .and_then(|b| b.get("state"))
            .and_then(Value::as_str)
            == Some("open")
        {
            return Ok(Some(Refusal {
                line: format!(
                    "wait: {tool} is failing too often to call now (its circuit breaker is open); do not call it again until it closes, or use another tool that can do this."
                ),
                body: json!({"refused": "breaker_open", "task": task, "tool": tool, "breaker": breaker}),
            }));
        }
        let spent = approaches
            .get("approaches")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|a| {
                a.get("tool").and_then(Value::as_str) == Some(tool)
                    && a.get("operation").and_then(Value::as_str) == Some(operation)
            })
            .cloned();
        Ok(spent.map(|approach| Refusal {
            line: format!(
                "change approach: this exact call failed before and every attempt was spent ({}); use another tool, other arguments, or hand it to a person.",
                approach
                    .get("summary")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            ),
            body: json!({"refused": "approach_spent", "task": task, "tool": tool, "failed_approach": approach}),
        }))
    }

    /// One failure of `task`, counted; the step backstop answers. `may_have_taken_effect`
    /// says what the caller knows of it (a call sent and unanswered may have).
    pub async fn failed(
        &self,
        task: &str,
        report: &Report,
        may_have_taken_effect: Option<bool>,
        authorization: Option<&str>,
    ) -> Result<Answered, String> {
        // Unsaid, it is read from the report.
        let given = Context {
            may_have_taken_effect,
            ..Context::default()
        };
        let context = Context::for_report(given, report);
        let body = json!({"task": task, "report": report, "context": context});
        self.forget_checks();
        let step = self
            .ask(ApiRequest::post("/v1/recover", body), authorization)
            .await?;
        let action = step
            .get("action")
            .and_then(|a| serde_json::from_value(a.clone()).ok());
        Ok(Answered {
            action,
            delay_ms: step.get("delay_ms").and_then(Value::as_u64).unwrap_or(0),
            deferred: step.get("defer_until").is_some_and(|d| !d.is_null()),
            step,
        })
    }

    /// A call of `tool` worked: its breaker and its budget hear it, and, with `task`, the
    /// task's counters start again.
    pub async fn succeeded(
        &self,
        task: Option<&str>,
        tool: &str,
        authorization: Option<&str>,
    ) -> Result<(), String> {
        let mut body = json!({"tool": tool, "outcome": "success"});
        if let Some(task) = task {
            body["task"] = json!(task);
        }
        self.ask(ApiRequest::post("/v1/outcomes", body), authorization)
            .await
            .map(drop)
    }
}

/// A call refused before it reached the upstream: the line the model reads and the JSON.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// What to do, in one line.
    pub line: String,
    /// Why, as JSON (`refused`: `task_stopped`, `breaker_open` or `approach_spent`).
    pub body: Value,
}
