//! Review items: `GET /v1/reviews` and `POST /v1/reviews/{id}/resolve` (operators only).

use backstop_core::case::RefusalCode;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use backstop_core::Issue;
use backstop_core::case::resolution;
use backstop_store::{Resolution, ReviewFilter, ReviewItem, StoreError};
use serde::Deserialize;

use crate::auth::Caller;
use crate::body::{JsonBody, typed};
use crate::config::Role;
use crate::error::ApiError;
use crate::state::AppState;

/// The query of `GET /v1/reviews`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// `open` (default), `resolved` or `all`.
    #[serde(default)]
    status: Option<String>,
    /// Only this job's items.
    #[serde(default)]
    job: Option<String>,
    /// Operators only: only this caller's items.
    #[serde(default)]
    caller: Option<String>,
    /// At most this many (default 100, at most 1,000).
    #[serde(default)]
    limit: Option<u32>,
}

/// Review items.
#[derive(Debug, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewList {
    /// Newest first.
    reviews: Vec<ReviewItem>,
}

/// Review items, newest first: an agent sees its own, an operator everyone's.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/v1/reviews", tag = "reviews", params(ListQuery),
    responses((status = 200, body = ReviewList), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn list(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<ReviewList>, ApiError> {
    let Query(query) = query
        .map_err(|e| ApiError::malformed(vec![Issue::new("query", "bad_query", e.body_text())]))?;
    let mut issues = Vec::new();
    let open = match query.status.as_deref() {
        None | Some("open") => Some(true),
        Some("resolved") => Some(false),
        Some("all") => None,
        Some(other) => {
            issues.push(Issue::new(
                "status",
                "unknown_status",
                format!("`{other}` is not open, resolved or all"),
            ));
            None
        }
    };
    for (path, value) in [("job", &query.job), ("caller", &query.caller)] {
        if let Some(name) = value {
            crate::routes::recover::check_name(name, path, &mut issues);
        }
    }
    if query.limit.is_some_and(|l| l == 0 || l > 1000) {
        issues.push(Issue::new("limit", "out_of_range", "limit is 1 to 1000"));
    }
    let owner = match caller.role {
        Role::Operator => query.caller,
        Role::Agent => {
            if query.caller.as_ref().is_some_and(|c| *c != caller.id) {
                issues.push(Issue::new(
                    "caller",
                    "forbidden",
                    "an agent sees only its own review items",
                ));
            }
            Some(caller.id.clone())
        }
    };
    if !issues.is_empty() {
        return Err(ApiError::malformed(issues));
    }
    let filter = ReviewFilter {
        open,
        job: query.job,
        caller: owner,
        limit: query.limit,
    };
    let store = Arc::clone(&state.store);
    let items = tokio::task::spawn_blocking(move || store.reviews(&filter))
        .await
        .map_err(|e| ApiError::internal("a review listing failed", &e))?
        .map_err(|e| ApiError::store("the ledger failed", &e))?;
    Ok(Json(ReviewList { reviews: items }))
}

/// An operator's resolution.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    /// The decision (an outcome id of the pack, or words).
    decision: String,
    /// A note for the record; required (not blank) with `handoff`: who takes it over, and why.
    #[serde(default)]
    note: Option<String>,
}

/// An operator resolves a review item; this ends the case's cycle. A task's item resolved
/// with `retry` also resets the task (lifting a policy stop), so its agent may try again.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/v1/reviews/{id}/resolve", tag = "reviews",
    params(("id" = i64, Path, description = "The review item")),
    request_body = ResolveBody,
    responses((status = 200, body = ReviewItem), (status = "4XX", body = backstop_core::case::Refusal)),
    security(("key" = []))))]
pub async fn resolve(
    State(state): State<Arc<AppState>>,
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
    caller: Caller,
    JsonBody(value): JsonBody,
) -> Result<Json<ReviewItem>, ApiError> {
    caller.require_operator("resolve a review item")?;
    let Path(id) = id.map_err(crate::routes::cases::bad_path)?;
    let body: ResolveBody = typed(&value)?;
    let mut issues = Vec::new();
    let id: Option<i64> = id.parse().ok();
    if id.is_none() {
        issues.push(Issue::new("id", "bad_id", "a review item id is a number"));
    }
    backstop_core::issue::check_id(&body.decision, "decision", "`decision`", &mut issues);
    if let Some(note) = &body.note {
        backstop_core::issue::check_length(
            note,
            "note",
            backstop_core::issue::MAX_NOTE_CHARS,
            &mut issues,
        );
    }
    let (Some(id), true) = (id, issues.is_empty()) else {
        return Err(ApiError::malformed(issues));
    };
    let resolved = resolve_item(&state, &caller, id, body.decision, body.note).await?;
    Ok(Json(resolved))
}

/// Resolves item `id` as `caller` (an operator): the decision must be one the item allows; a
/// task's item resolved with `retry` also resets the task. The API and the operator's page
/// both resolve through here.
pub async fn resolve_item(
    state: &AppState,
    caller: &Caller,
    id: i64,
    decision: String,
    note: Option<String>,
) -> Result<ReviewItem, ApiError> {
    if let Some(note) = &note {
        // The page's form reaches here without the API's body checks: the same caps for both.
        let mut issues = Vec::new();
        backstop_core::issue::check_length(
            note,
            "note",
            backstop_core::issue::MAX_NOTE_CHARS,
            &mut issues,
        );
        backstop_core::case::nul_characters(
            &serde_json::Value::from(note.as_str()),
            "note",
            &mut issues,
        );
        if !issues.is_empty() {
            return Err(ApiError::malformed(issues));
        }
    }
    if let Err(issue) = resolution::check_note(&decision, note.as_deref(), "note") {
        return Err(ApiError::malformed(vec![issue]));
    }
    let item = review_item(state, id).await?;
    let allowed = allowed_resolutions(state, &item)?;
    if let Err(issue) = resolution::check(&decision, &allowed, "decision") {
        // The body is well formed; what it asks is not what this item allows.
        let mut refusal = ApiError::new(RefusalCode::DecisionNotAllowed, issue.message.clone());
        refusal.refusal.error.issues.push(issue);
        return Err(refusal);
    }
    let resolution = Resolution {
        by: caller.id.clone(),
        decision,
        note: note.filter(|n| !n.trim().is_empty()),
    };
    // On the ledger thread: the item and a task's reset commit together.
    let resolved = state
        .attempts
        .resolve(id, resolution)
        .await
        .map_err(crate::queue::JournalError::Queue)?;
    match resolved {
        Ok(item) => Ok(item),
        Err(StoreError::NotFound(message)) => {
            Err(ApiError::new(RefusalCode::UnknownReview, message))
        }
        Err(StoreError::Conflict(message)) => {
            Err(ApiError::new(RefusalCode::AlreadyResolved, message))
        }
        Err(e) => Err(ApiError::store("the ledger failed", &e)),
    }
}

/// The review item `id`, or `unknown_review`.
pub async fn review_item(state: &AppState, id: i64) -> Result<ReviewItem, ApiError> {
    let store = Arc::clone(&state.store);
    tokio::task::spawn_blocking(move || store.review(id))
        .await
        .map_err(|e| ApiError::internal("a review lookup failed", &e))?
        .map_err(|e| ApiError::store("the ledger failed", &e))?
        .ok_or_else(|| ApiError::new(RefusalCode::UnknownReview, format!("no review item {id}")))
}

/// The decisions `item` may be resolved with: its job's pack's decisions for a case, `retry`
/// or `stop` for a task, and `handoff` for both. A case whose pack is not loaded cannot be
/// checked, so it is refused rather than resolved blind.
pub fn allowed_resolutions(state: &AppState, item: &ReviewItem) -> Result<Vec<String>, ApiError> {
    if item.kind == "task" {
        return Ok(resolution::allowed(None));
    }
    let catalog = state.catalog();
    let Some(pack) = catalog.packs.get(&item.job) else {
        return Err(ApiError::new(
            RefusalCode::UnknownJob,
            format!(
                "the pack of job `{}` is not loaded, so the decision cannot be checked; load \
                 it (packs in the config, then SIGHUP) and resolve again",
                item.job
            ),
        ));
    };
    Ok(resolution::allowed(Some(pack)))
}
