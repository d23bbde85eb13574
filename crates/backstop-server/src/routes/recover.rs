//! The call level: `POST /v1/recover`, `POST /v1/outcomes`, `GET /v1/tools`, `POST /v1/grants`.
//!
//! Each call that changes the call-level state is an event in the call journal, which every
//! process on the ledger shares: the ledger thread journals it, applies the journal up to it
//! (other processes' events too, in the journal's one order) and the answer comes from that
//! state. Reads catch up with the journal first. So a breaker opened, a task stopped or a
//! count spent through one server is what the next answer of any server reflects.

use backstop_core::case::RefusalCode;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use backstop_core::classify::classify;
use backstop_core::recover::breaker::BreakerView;
use backstop_core::recover::budget::BudgetView;
use backstop_core::recover::{Context, Recovery};
use backstop_core::{Class, Issue, Report};
use jiff::Timestamp;
use serde::Deserialize;
use serde_json::Value;

use crate::auth::Caller;
use crate::body::{JsonBody, typed};
use crate::error::ApiError;
use crate::journal::{Applied, CallState, Event, IdempotencyMark, redacted, task_key};
use crate::state::AppState;

/// A failed call: the task it belongs to, what was seen, and its context.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RecoverBody {
    /// The task the attempt counts against (1 to 200 characters).
    task: String,
    /// The report, as `POST /v1/classify` takes it.
    #[cfg_attr(feature = "openapi", schema(value_type = backstop_core::Report))]
    report: Value,
    /// The tool, operation, error and any action the agent asks leave for.
    #[serde(default)]
    context: Option<Context>,
}

/// The next step after a failed call: classified, counted against the task, answered.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/recover", tag = "calls", request_body = RecoverBody,
    params(("Idempotency-Key" = Option<String>, Header,
        description = "The same key from the same caller within 24 hours returns the step it first got and counts nothing; with another request it is refused (409)")),
    responses((status = 200, body = backstop_core::recover::Step), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn recover(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(value): JsonBody,
) -> Result<Response, ApiError> {
    let idempotency = idempotency_mark(&headers, &caller, &value)?;
    if value
        .get("context")
        .is_some_and(|c| !c.is_object() && !c.is_null())
    {
        return Err(ApiError::malformed(vec![Issue::new(
            "context",
            "wrong_type",
            "`context` is an object such as {\"tool\": \"search\"}",
        )]));
    }
    let mut body: RecoverBody = typed(&value)?;
    let mut issues = Vec::new();
    check_name(&body.task, "task", &mut issues);
    if let Some(given) = &body.context {
        check_context(given, &mut issues);
    }
    // A report with a JSON Schema compiles it, and its classification checks the output
    // against it: work of a size the caller chooses, so both run off the async workers.
    let with_schema = body.report.get("schema").is_some();
    let parsed = if with_schema {
        let value = std::mem::take(&mut body.report);
        tokio::task::spawn_blocking(move || Report::from_value(&value))
            .await
            .map_err(|e| ApiError::internal("reading a report with a schema", &e))?
    } else {
        Report::from_value(&body.report)
    };
    let report = match parsed {
        Ok(report) => Some(report),
        Err(found) => {
            issues.extend(found.into_iter().map(|issue| Issue {
                path: backstop_core::issue::join_path("report", &issue.path),
                ..issue
            }));
            None
        }
    };
    let Some(report) = report.filter(|_| issues.is_empty()) else {
        return Err(ApiError::malformed(issues));
    };
    let context = Context::for_report(body.context.unwrap_or_default(), &report);
    if let Some(tool) = context.tool.as_deref() {
        check_name(tool, "report.tool", &mut issues);
        if !issues.is_empty() {
            return Err(ApiError::malformed(issues));
        }
    }
    let now = Timestamp::now();
    let catalog = state.catalog();
    let classification = if with_schema {
        let report = report.clone();
        tokio::task::spawn_blocking(move || classify(&catalog.rules, &report, now))
            .await
            .map_err(|e| ApiError::internal("classifying a report with a schema", &e))?
    } else {
        classify(&catalog.rules, &report, now)
    };
    // A task is the caller's own: another caller's task of the same name is another task.
    let task = task_key(&caller.id, &body.task);
    let failure = redacted(classification, context, idempotency);
    let event = Event::Failure(Box::new(failure.clone()));
    let applied = state.attempts.journal(event.to_stored(now, task)).await?;
    match applied {
        Applied::Step {
            step,
            first_escalation,
        } => {
            // A task's first escalation since its reset opened a review item, in the journal's
            // transaction.
            if first_escalation && step.escalation.is_some() {
                state.metrics.escalation("task");
            }
            Ok(Json(step).into_response())
        }
        Applied::Replayed(step) => Ok(([(REPLAYED_HEADER, "true")], Json(step)).into_response()),
        Applied::Conflict => Err(ApiError::new(
            RefusalCode::IdempotencyKeyConflict,
            "this Idempotency-Key came with another request in the last 24 hours; nothing was \
             counted: send the first request again, or this one with a new key",
        )),
        Applied::OverQuota(quota) => Err(over_quota(quota)),
        Applied::Nothing => Err(ApiError::internal(
            "the call journal",
            &"gave no step for a failure",
        )),
    }
}

/// The refusal of a caller at its quota of live tasks or tools.
pub(crate) fn over_quota(quota: backstop_core::recover::recovery::Quota) -> ApiError {
    ApiError::new(RefusalCode::QuotaExceeded, quota.message())
}

/// Refuses an event the journal applied as over its caller's quota.
pub(crate) fn refuse_over_quota(applied: &Applied) -> Result<(), ApiError> {
    match applied {
        Applied::OverQuota(quota) => Err(over_quota(*quota)),
        _ => Ok(()),
    }
}

/// The header a resend gets when its step is the one its key first got.
const REPLAYED_HEADER: &str = "idempotent-replayed";

/// The longest `Idempotency-Key`.
const IDEMPOTENCY_KEY_MAX: usize = 255;

/// The caller's `Idempotency-Key`, if it sent one, marked with the request's hash; a bad key
/// is refused.
fn idempotency_mark(
    headers: &HeaderMap,
    caller: &Caller,
    body: &Value,
) -> Result<Option<IdempotencyMark>, ApiError> {
    // An empty key is the same as none (HTTP trims a value of spaces to nothing).
    let Some(value) = headers
        .get("idempotency-key")
        .filter(|v| !v.as_bytes().iter().all(u8::is_ascii_whitespace))
    else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .filter(|k| {
            !k.trim().is_empty()
                && k.len() <= IDEMPOTENCY_KEY_MAX
                && k.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
        })
        .ok_or_else(|| {
            ApiError::malformed(vec![Issue::new(
                "headers.idempotency-key",
                "bad_idempotency_key",
                format!(
                    "an Idempotency-Key is 1 to {IDEMPOTENCY_KEY_MAX} visible ASCII characters"
                ),
            )])
        })?;
    Ok(Some(IdempotencyMark {
        key: task_key(&caller.id, key),
        hash: backstop_core::case::identity::full_hash(body.to_string().as_bytes()),
    }))
}

/// A call's outcome for a tool.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OutcomeBody {
    /// The tool.
    tool: String,
    /// The caller's task the call was made for: a success resets the task's failure counters
    /// (never a policy denial's stop). A failure of a task goes to `/v1/recover`.
    #[serde(default)]
    task: Option<String>,
    /// `success` or `failure`.
    outcome: OutcomeKind,
    /// A failure's class (default `transient`); a success has none.
    #[serde(default)]
    class: Option<Class>,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum OutcomeKind {
    /// It worked.
    Success,
    /// It failed.
    Failure,
}

/// A tool's breaker and budget.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolView {
    /// The tool.
    pub tool: String,
    /// Its circuit breaker.
    pub breaker: Option<BreakerView>,
    /// Its retry budget.
    pub budget: Option<BudgetView>,
}

/// Every tool seen.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolList {
    /// The tools, by name.
    tools: Vec<ToolView>,
}

/// A call's outcome for a tool's breaker and budget: a success, or a failure of a class.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/outcomes", tag = "calls", request_body = OutcomeBody,
    responses((status = 200, body = ToolView), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn outcomes(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(value): JsonBody,
) -> Result<Json<ToolView>, ApiError> {
    let body: OutcomeBody = typed(&value)?;
    let mut issues = Vec::new();
    check_name(&body.tool, "tool", &mut issues);
    if body.outcome == OutcomeKind::Success && body.class.is_some() {
        issues.push(Issue::new("class", "unexpected", "a success has no class"));
    }
    if let Some(task) = &body.task {
        check_name(task, "task", &mut issues);
        if body.outcome == OutcomeKind::Failure {
            issues.push(Issue::new(
                "task",
                "unexpected",
                "a task's failure is reported to /v1/recover, which counts it and answers the next step",
            ));
        }
    }
    if !issues.is_empty() {
        return Err(ApiError::malformed(issues));
    }
    let class = body.class.unwrap_or(Class::Transient);
    let now = Timestamp::now();
    let event = match body.outcome {
        OutcomeKind::Success => Event::Success {
            class,
            caller: caller.id.clone(),
        },
        OutcomeKind::Failure => Event::ToolFailure {
            class,
            caller: caller.id.clone(),
        },
    };
    let tool = body.tool.clone();
    refuse_over_quota(&state.attempts.journal(event.to_stored(now, tool)).await?)?;
    if let Some(task) = body.task.as_deref() {
        let task = task_key(&caller.id, task);
        let event = Event::TaskSuccess {};
        state.attempts.journal(event.to_stored(now, task)).await?;
    }
    let view = tool_view(&lock(&state).recovery, &body.tool, now);
    Ok(Json(view))
}

/// Each tool's breaker and budget.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/v1/tools", tag = "calls",
    responses((status = 200, body = ToolList), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn tools(
    State(state): State<Arc<AppState>>,
    _caller: Caller,
) -> Result<Json<ToolList>, ApiError> {
    state.attempts.catch_up().await?;
    let now = Timestamp::now();
    let calls = lock(&state);
    let recovery = &calls.recovery;
    let tools = recovery
        .tool_names(now)
        .iter()
        .map(|tool| tool_view(recovery, tool, now))
        .collect();
    Ok(Json(ToolList { tools }))
}

/// An operator's grant of one retry.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct GrantBody {
    /// The task whose next unclassified failure may be retried once.
    task: String,
    /// Whose task it is (default: the operator's own).
    #[serde(default)]
    caller: Option<String>,
}

/// A grant, as made.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GrantAnswer {
    /// The task.
    task: String,
    /// Whose task.
    caller: String,
    /// What was granted.
    granted: String,
    /// The operator.
    by: String,
}

/// An operator grants one retry to a task's unclassified failure.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/grants", tag = "calls", request_body = GrantBody,
    responses((status = 200, body = GrantAnswer), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn grants(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    JsonBody(value): JsonBody,
) -> Result<Json<GrantAnswer>, ApiError> {
    caller.require_operator("grant a retry")?;
    let body: GrantBody = typed(&value)?;
    let mut issues = Vec::new();
    check_name(&body.task, "task", &mut issues);
    let owner = body.caller.unwrap_or_else(|| caller.id.clone());
    check_name(&owner, "caller", &mut issues);
    // A grant for a caller no key speaks for could never be used.
    let keys = &state.config.keys;
    let known = if keys.is_empty() {
        owner == caller.id
    } else {
        keys.iter().any(|k| k.caller == owner)
    };
    if !issues.is_empty() {
        return Err(ApiError::malformed(issues));
    }
    if !known {
        // Like an unknown job: the request is well formed, the caller is not there.
        return Err(ApiError::new(
            RefusalCode::UnknownCaller,
            format!("no API key speaks for caller `{owner}`, so its tasks can never use a grant"),
        ));
    }
    let now = Timestamp::now();
    let task = task_key(&owner, &body.task);
    let event = Event::Grant {
        by: caller.id.clone(),
    };
    refuse_over_quota(&state.attempts.journal(event.to_stored(now, task)).await?)?;
    Ok(Json(GrantAnswer {
        task: body.task,
        caller: owner,
        granted: "one retry of the task's next unclassified failure".to_owned(),
        by: caller.id,
    }))
}

pub(crate) fn tool_view(recovery: &Recovery, tool: &str, now: Timestamp) -> ToolView {
    let (breaker, budget) = recovery.tool_views(tool, now).unzip();
    ToolView {
        tool: tool.to_owned(),
        breaker,
        budget,
    }
}

pub(crate) fn lock(state: &AppState) -> std::sync::MutexGuard<'_, CallState> {
    state
        .recovery
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The caps on what an agent says about its call: a tool's name, the operation, its error.
fn check_context(context: &Context, issues: &mut Vec<Issue>) {
    use backstop_core::issue::{MAX_LOCATOR_CHARS, MAX_NOTE_CHARS, check_length};
    if let Some(tool) = &context.tool {
        check_name(tool, "context.tool", issues);
    }
    if let Some(operation) = &context.operation {
        check_length(operation, "context.operation", MAX_LOCATOR_CHARS, issues);
    }
    if let Some(error) = &context.error {
        check_length(error, "context.error", MAX_NOTE_CHARS, issues);
    }
    if let Some(key) = &context.idempotency_key {
        check_name(key, "context.idempotency_key", issues);
    }
}

/// A task, tool or caller name: the shared length rule, and no control characters (they end
/// up in metric labels and logs).
pub fn check_name(name: &str, path: &str, issues: &mut Vec<Issue>) {
    if backstop_core::issue::check_name(name, path, "bad_name", &format!("`{path}`"), issues)
        && name.chars().any(char::is_control)
    {
        issues.push(Issue::new(
            path,
            "bad_name",
            format!("`{path}` may not hold control characters"),
        ));
    }
}
