//! A task as it stands, and its reset: `GET /v1/tasks/{task}`, `POST /v1/tasks/{task}/reset`.
//!
//! Both follow the call journal first, so they show (and change) the state every server on the
//! ledger shares. An agent sees and resets its own tasks; an operator names any caller's with
//! `caller`, and only an operator lifts a policy denial's stop.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use backstop_core::Issue;
use backstop_core::recover::recovery::TaskView;
use jiff::Timestamp;
use serde::Deserialize;

use super::cases::bad_path;
use super::recover::{check_name, lock};
use crate::auth::Caller;
use crate::config::Role;
use crate::error::ApiError;
use crate::journal::{Event, task_key};
use crate::state::AppState;

/// Whose task: an operator may name any caller (default: its own).
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct TaskQuery {
    /// The task's caller (an operator only; an agent's tasks are its own).
    caller: Option<String>,
}

/// A task, as `GET /v1/tasks/{task}` (and `backstop task show`) shows it.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskAnswer {
    /// The task.
    pub task: String,
    /// Whose task.
    pub caller: String,
    /// Its counters, stop, tools and the next step per class.
    #[serde(flatten)]
    pub view: TaskView,
}

/// The task's counters per class, the tools it used and their breakers, whether a policy
/// denial stopped it, and the step the next failure of each class would get (changing nothing).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/v1/tasks/{task}", tag = "calls",
    params(("task" = String, Path, description = "The task"), TaskQuery),
    responses((status = 200, body = TaskAnswer), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn show(
    State(state): State<Arc<AppState>>,
    task: Result<Path<String>, PathRejection>,
    query: Result<Query<TaskQuery>, QueryRejection>,
    caller: Caller,
) -> Result<Json<TaskAnswer>, ApiError> {
    let (task, owner) = whose(task, query, &caller)?;
    state.attempts.catch_up().await?;
    let view = lock(&state)
        .recovery
        .task_view(&task_key(&owner, &task), Timestamp::now());
    Ok(Json(TaskAnswer {
        task,
        caller: owner,
        view,
    }))
}

/// Resets the task's counters. An agent's reset keeps a policy denial's stop (it is refused on
/// a stopped task: nothing changes); an operator's lifts it too.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/tasks/{task}/reset", tag = "calls",
    params(("task" = String, Path, description = "The task"), TaskQuery),
    responses((status = 200, body = TaskAnswer), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn reset(
    State(state): State<Arc<AppState>>,
    task: Result<Path<String>, PathRejection>,
    query: Result<Query<TaskQuery>, QueryRejection>,
    caller: Caller,
) -> Result<Json<TaskAnswer>, ApiError> {
    let (task, owner) = whose(task, query, &caller)?;
    let key = task_key(&owner, &task);
    state.attempts.catch_up().await?;
    let stopped = lock(&state)
        .recovery
        .task_view(&key, Timestamp::now())
        .stopped_by
        .is_some();
    if stopped {
        caller.require_operator("lift the stop a policy denial put on a task")?;
    }
    let by = caller.id.clone();
    let event = if caller.role == Role::Operator {
        Event::TaskResetAll { by, review: None }
    } else {
        Event::TaskReset { by }
    };
    let stored = event.to_stored(Timestamp::now(), key.clone());
    state.attempts.journal(stored).await?;
    let view = lock(&state).recovery.task_view(&key, Timestamp::now());
    Ok(Json(TaskAnswer {
        task,
        caller: owner,
        view,
    }))
}

/// The task named in the path and whose it is; every bad part refused at once.
fn whose(
    task: Result<Path<String>, PathRejection>,
    query: Result<Query<TaskQuery>, QueryRejection>,
    caller: &Caller,
) -> Result<(String, String), ApiError> {
    let Path(task) = task.map_err(bad_path)?;
    let Query(query) = query
        .map_err(|e| ApiError::malformed(vec![Issue::new("query", "bad_query", e.body_text())]))?;
    let mut issues = Vec::new();
    check_name(&task, "task", &mut issues);
    let owner = query.caller.unwrap_or_else(|| caller.id.clone());
    check_name(&owner, "caller", &mut issues);
    if caller.role == Role::Agent && owner != caller.id {
        issues.push(Issue::new(
            "caller",
            "forbidden",
            "an agent sees and resets only its own tasks",
        ));
    }
    if issues.is_empty() {
        Ok((task, owner))
    } else {
        Err(ApiError::malformed(issues))
    }
}
