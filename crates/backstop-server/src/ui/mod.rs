//! The operator's page at `/ui`: the review queue, one item with its resolution, and the
//! fleet's state, server-rendered (maud), no script, every asset from the binary.
//!
//! - `session`: signed session cookies and CSRF tokens, no server-side state
//! - `layout`: the page shell
//! - `queue`, `item`, `fleet`: the views
//!
//! Only operators sign in (with their API key); every page needs a session, every form a CSRF
//! token, and every answer carries a Content-Security-Policy that allows no script at all.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Form;
use axum::Router;
use axum::extract::{ConnectInfo, FromRequest, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use backstop_store::ReviewFilter;
use jiff::{SignedDuration, Timestamp};
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ApiError;
use crate::routes::reviews::{allowed_resolutions, resolve_item, review_item};
use crate::state::AppState;

mod fleet;
mod item;
mod layout;
mod queue;
pub mod session;
mod suppressions;

use session::{COOKIE, LIFETIME_SECONDS, LOGIN_COOKIE, Session};

/// Every answer of the page: no script, no frame, no referrer, no caching.
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

/// The page's routes, with their security headers.
pub fn routes(state: &Arc<AppState>) -> Router {
    Router::new()
        // A browser pointed at the service finds the page.
        .route("/", get(|| async { Redirect::to("/ui") }))
        .route("/ui", get(queue_page))
        .route("/ui/style.css", get(stylesheet))
        .route("/ui/login", get(login_page).post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/items/{id}", get(item_page))
        .route("/ui/items/{id}/resolve", post(resolve))
        .route("/ui/fleet", get(fleet_page))
        .route("/ui/suppressions", get(suppressions_page))
        .route("/ui/suppressions/lift", post(lift_suppression))
        .layer(middleware::from_fn(security_headers))
        .with_state(Arc::clone(state))
}

async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

async fn stylesheet() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("style.css"),
    )
}

/// A cookie's value from the request.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// The request's session, if it has a valid one.
fn session(state: &AppState, headers: &HeaderMap) -> Option<Session> {
    session::verify(state, cookie(headers, COOKIE)?, Timestamp::now())
}

/// A page with a status.
fn render(status: StatusCode, title: &str, session: Option<&Session>, body: &Markup) -> Response {
    (
        status,
        Html(layout::page(title, session, body).into_string()),
    )
        .into_response()
}

/// A refusal page: what went wrong and where to go.
fn refused(status: StatusCode, message: &str) -> Response {
    let body = html! {
        (layout::notice("error", message))
        p { a href="/ui/login" { "Sign in" } " · " a href="/ui" { "Queue" } }
    };
    render(status, "refused", None, &body)
}

/// Runs `work` on a blocking thread (the ledger's calls block).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, backstop_store::StoreError> + Send + 'static,
) -> Result<T, Response> {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(refused(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("the ledger failed: {e}"),
        )),
        Err(e) => Err(refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the page failed: {e}"),
        )),
    }
}

#[derive(Debug, Deserialize)]
struct LoginForm {
    #[serde(default)]
    key: String,
    #[serde(default)]
    csrf: String,
}

#[derive(Debug, Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

#[derive(Debug, Deserialize)]
struct ResolveForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    decision: Option<String>,
    #[serde(default)]
    note: Option<String>,
}

fn login_form(state: &AppState, nonce: &str, error: Option<&str>) -> Markup {
    html! {
        div.login {
            @if let Some(error) = error { (layout::notice("error", error)) }
            section {
                h1 { "Sign in" }
                form #login method="post" action="/ui/login" {
                    input type="hidden" name="csrf" value=(nonce);
                    @if state.is_open() {
                        p.muted { "This service has no API keys: you sign in as the local operator." }
                    } @else {
                        label for="key" { "Operator API key" }
                        p { input #key type="password" name="key" autocomplete="off" required; }
                    }
                    p { button.primary type="submit" { "Sign in" } }
                }
            }
        }
    }
}

/// The sign-in page, with a fresh double-submit token in a cookie and in the form.
fn login_response(state: &AppState, status: StatusCode, error: Option<&str>) -> Response {
    let nonce = session::nonce();
    let mut response = render(status, "sign in", None, &login_form(state, &nonce, error));
    let cookie =
        format!("{LOGIN_COOKIE}={nonce}; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=600");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

async fn login_page(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if session(&state, &headers).is_some() {
        return Redirect::to("/ui").into_response();
    }
    login_response(&state, StatusCode::OK, None)
}

async fn login(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let address = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| "unknown".to_owned(), |c| c.0.ip().to_string());
    let headers = request.headers().clone();
    let Ok(Form(form)) = Form::<LoginForm>::from_request(request, &()).await else {
        return login_response(
            &state,
            StatusCode::BAD_REQUEST,
            Some("The form could not be read; sign in again."),
        );
    };
    let expected = cookie(&headers, LOGIN_COOKIE).unwrap_or_default();
    if expected.is_empty() || !session::same(expected, &form.csrf) {
        return login_response(
            &state,
            StatusCode::FORBIDDEN,
            Some("The form expired or did not come from this page; sign in again."),
        );
    }
    match session::sign_in(&state, &form.key, Timestamp::now()) {
        Ok(session) => {
            let mut response = Redirect::to("/ui").into_response();
            let set = [
                format!(
                    "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/ui; Max-Age={LIFETIME_SECONDS}",
                    session.token
                ),
                format!("{LOGIN_COOKIE}=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0"),
            ];
            for cookie in set {
                if let Ok(value) = HeaderValue::from_str(&cookie) {
                    response.headers_mut().append(header::SET_COOKIE, value);
                }
            }
            response
        }
        Err(why) => {
            if let Err(wait) = state.auth_failures.take(&address) {
                let message =
                    format!("Too many failed sign-ins from {address}; try again in {wait} s.");
                return login_response(&state, StatusCode::TOO_MANY_REQUESTS, Some(&message));
            }
            let message = match why {
                session::SignInError::UnknownKey => "That key is not one this service knows.",
                session::SignInError::NotAnOperator => {
                    "That is an agent's key: the page is for operators."
                }
            };
            login_response(&state, StatusCode::UNAUTHORIZED, Some(message))
        }
    }
}

async fn logout(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    form: Result<Form<CsrfForm>, axum::extract::rejection::FormRejection>,
) -> Response {
    let Some(session) = session(&state, &headers) else {
        return refused(StatusCode::FORBIDDEN, "You are not signed in.");
    };
    let Ok(Form(form)) = form else {
        return refused(StatusCode::BAD_REQUEST, "The form could not be read.");
    };
    if !session::csrf_matches(&session, &form.csrf) {
        return refused(
            StatusCode::FORBIDDEN,
            "The form did not come from this page (its CSRF token is wrong).",
        );
    }
    let mut response = Redirect::to("/ui/login").into_response();
    let clear = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0");
    if let Ok(value) = HeaderValue::from_str(&clear) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

async fn queue_page(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    filter: Result<Query<queue::QueueFilter>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Some(session) = session(&state, &headers) else {
        return Redirect::to("/ui/login").into_response();
    };
    let Query(filter) = filter.unwrap_or_default();
    let store = Arc::clone(&state.store);
    let wanted = filter.store_filter();
    let items = match blocking(move || store.reviews(&wanted)).await {
        Ok(items) => items,
        Err(response) => return response,
    };
    let now = Timestamp::now();
    let items: Vec<_> = items.into_iter().filter(|i| filter.keeps(i, now)).collect();
    let body = queue::view(&session, &filter, &state.catalog(), &items, now);
    render(StatusCode::OK, "queue", Some(&session), &body)
}

/// The item page, with a refused resolution's reason when there is one.
async fn item_response(
    state: &AppState,
    session: &Session,
    id: i64,
    status: StatusCode,
    error: Option<&str>,
) -> Response {
    let item = match review_item(state, id).await {
        Ok(item) => item,
        Err(e) => return refused(e.status, &e.refusal.error.message),
    };
    let catalog = state.catalog();
    let pack = catalog.packs.get(&item.job).map(AsRef::as_ref);
    let case = if item.kind == "case" {
        let store = Arc::clone(&state.store);
        let (caller, job, case_id) = (item.caller.clone(), item.job.clone(), item.case_id.clone());
        match blocking(move || store.case(&caller, &job, &case_id)).await {
            Ok(case) => case,
            Err(response) => return response,
        }
    } else {
        None
    };
    let (allowed, cannot_check) = match allowed_resolutions(state, &item) {
        Ok(allowed) => (allowed, None),
        Err(e) => (Vec::new(), Some(refusal_text(&e))),
    };
    let view = item::ItemView {
        item: &item,
        pack,
        case: case.as_ref(),
        allowed: &allowed,
        error: error.or(cannot_check.as_deref()),
    };
    let body = item::view(session, &view, Timestamp::now());
    render(status, &format!("item {id}"), Some(session), &body)
}

/// A refusal's message with its issues, for a person.
fn refusal_text(error: &ApiError) -> String {
    let refusal = &error.refusal.error;
    let issues: Vec<&str> = refusal.issues.iter().map(|i| i.message.as_str()).collect();
    if issues.is_empty() {
        refusal.message.clone()
    } else {
        issues.join("; ")
    }
}

async fn item_page(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let Some(session) = session(&state, &headers) else {
        return Redirect::to("/ui/login").into_response();
    };
    let Ok(id) = id.parse::<i64>() else {
        return refused(StatusCode::NOT_FOUND, "A review item's id is a number.");
    };
    item_response(&state, &session, id, StatusCode::OK, None).await
}

async fn resolve(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    form: Result<Form<ResolveForm>, axum::extract::rejection::FormRejection>,
) -> Response {
    let Some(session) = session(&state, &headers) else {
        return refused(
            StatusCode::FORBIDDEN,
            "You are not signed in: nothing was resolved.",
        );
    };
    let Ok(Form(form)) = form else {
        return refused(
            StatusCode::BAD_REQUEST,
            "The form could not be read: nothing was resolved.",
        );
    };
    if !session::csrf_matches(&session, &form.csrf) {
        return refused(
            StatusCode::FORBIDDEN,
            "The form did not come from this page (its CSRF token is wrong): nothing was resolved.",
        );
    }
    let Ok(id) = id.parse::<i64>() else {
        return refused(StatusCode::NOT_FOUND, "A review item's id is a number.");
    };
    let Some(decision) = form.decision.filter(|d| !d.is_empty()) else {
        return item_response(
            &state,
            &session,
            id,
            StatusCode::BAD_REQUEST,
            Some("Choose a decision."),
        )
        .await;
    };
    let note = form
        .note
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty());
    if backstop_core::case::resolution::check_note(&decision, note.as_deref(), "note").is_err() {
        let message = "A hand-off needs a note: who takes it over, and why.";
        return item_response(&state, &session, id, StatusCode::BAD_REQUEST, Some(message)).await;
    }
    match resolve_item(&state, &session.caller, id, decision, note).await {
        Ok(_) => Redirect::to(&format!("/ui?resolved={id}")).into_response(),
        Err(e) => {
            let message = refusal_text(&e);
            item_response(&state, &session, id, e.status, Some(&message)).await
        }
    }
}

/// The lift form of the suppressions page.
#[derive(Debug, serde::Deserialize)]
struct LiftForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    caller: String,
    #[serde(default)]
    job: String,
    #[serde(default)]
    contact: String,
    #[serde(default)]
    case_id: Option<String>,
    #[serde(default)]
    reason: String,
}

async fn suppressions_page(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let Some(session) = session(&state, &headers) else {
        return Redirect::to("/ui/login").into_response();
    };
    suppressions_response(&state, &session, StatusCode::OK, None).await
}

async fn suppressions_response(
    state: &AppState,
    session: &Session,
    status: StatusCode,
    message: Option<&str>,
) -> Response {
    let store = Arc::clone(&state.store);
    let read = blocking(move || {
        let in_force = store.suppressions(&backstop_store::SuppressionFilter::default())?;
        let lifted = store.suppressions(&backstop_store::SuppressionFilter {
            lifted: true,
            ..backstop_store::SuppressionFilter::default()
        })?;
        Ok((in_force, lifted))
    })
    .await;
    match read {
        Ok((in_force, lifted)) => {
            let body = suppressions::view(session, &in_force, &lifted, message);
            render(status, "suppressions", Some(session), &body)
        }
        Err(response) => response,
    }
}

async fn lift_suppression(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    form: Result<Form<LiftForm>, axum::extract::rejection::FormRejection>,
) -> Response {
    let Some(session) = session(&state, &headers) else {
        return refused(
            StatusCode::FORBIDDEN,
            "You are not signed in: nothing was lifted.",
        );
    };
    let Ok(Form(form)) = form else {
        return refused(
            StatusCode::BAD_REQUEST,
            "The form could not be read: nothing was lifted.",
        );
    };
    if !session::csrf_matches(&session, &form.csrf) {
        return refused(
            StatusCode::FORBIDDEN,
            "The form did not come from this page (its CSRF token is wrong): nothing was lifted.",
        );
    }
    let body = crate::routes::suppressions::LiftBody {
        caller: form.caller,
        job: form.job,
        contact: form.contact,
        case_id: form.case_id.filter(|c| !c.is_empty()),
        reason: form.reason,
    };
    match crate::routes::suppressions::lift_as(&state, &session.caller, body).await {
        Ok(_) => Redirect::to("/ui/suppressions").into_response(),
        Err(e) => {
            let message = refusal_text(&e);
            suppressions_response(&state, &session, e.status, Some(&message)).await
        }
    }
}

async fn fleet_page(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let Some(session) = session(&state, &headers) else {
        return Redirect::to("/ui/login").into_response();
    };
    if let Err(e) = state.attempts.catch_up().await {
        let e = ApiError::from(e);
        return refused(e.status, &e.refusal.error.message);
    }
    let now = Timestamp::now();
    let since = now - SignedDuration::from_hours(24);
    let mut fleet = fleet::Fleet::default();
    {
        let calls = crate::routes::recover::lock(&state);
        let recovery = &calls.recovery;
        fleet.tools = recovery
            .tool_names(now)
            .iter()
            .map(|tool| crate::routes::recover::tool_view(recovery, tool, now))
            .collect();
        fleet.stopped = recovery
            .stopped_tasks()
            .into_iter()
            .map(|(key, why)| {
                let (caller, task) = crate::journal::caller_and_task(&key);
                (caller.to_owned(), task.to_owned(), why)
            })
            .collect();
        fleet.approaches = recovery.failed_approaches(None, now);
    }
    let store = Arc::clone(&state.store);
    let read = blocking(move || {
        let items = store.reviews(&ReviewFilter {
            open: None,
            job: None,
            caller: None,
            limit: Some(queue::QUEUE_LIMIT),
        })?;
        Ok((items, store.attempt_counts(since)?))
    })
    .await;
    let (items, attempts) = match read {
        Ok(read) => read,
        Err(response) => return response,
    };
    let hour_of = |at: Timestamp| -> String { at.to_string().chars().take(13).collect() };
    // Every hour of the last 24, the quiet ones too: the chart shows each.
    for back in (0..24).rev() {
        let hour = hour_of(now - SignedDuration::from_hours(back));
        fleet.escalations_per_hour.insert(hour, 0);
    }
    for item in items.iter().filter(|i| i.opened_at >= since) {
        // The hour that began just over 24 hours ago is not one of the 24.
        if let Some(count) = fleet.escalations_per_hour.get_mut(&hour_of(item.opened_at)) {
            *count += 1;
        }
    }
    fleet.attempts = attempts;
    render(
        StatusCode::OK,
        "fleet",
        Some(&session),
        &fleet::view(&fleet),
    )
}
