//! `backstop review list|show|resolve`.

use std::io::{self, Write};
use std::path::PathBuf;

use backstop_core::Issue;
use backstop_core::case::{Refusal, RefusalCode, resolution};
use backstop_store::{Resolution, ReviewFilter, ReviewItem, Store, StoreError};

use super::EXIT_OK;
use super::cases::{open_existing, store_failed};
use super::pack::{job_list, packs_by_job, packs_searched};
use crate::cli::{ReviewListArgs, ReviewResolveArgs, ReviewShowArgs, ReviewStatus};
use crate::output;
use crate::settings::{OutputMode, resolve_now};

/// The `kind` of a task's review item (a call-level escalation); any other is a held case.
const TASK_KIND: &str = "task";

/// Lists review items, newest first: a table for a person, or `{"reviews": [...]}`.
pub fn list(args: &ReviewListArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mode = args.output.mode();
    let mut issues = Vec::new();
    let now = resolve_now(args.now.as_deref(), &mut issues);
    if !issues.is_empty() {
        return output::refuse_command(mode, &issues, out, err);
    }
    let store = match open_existing(&args.db.db, "review list", mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    let filter = ReviewFilter {
        open: match args.status {
            ReviewStatus::Open => Some(true),
            ReviewStatus::Resolved => Some(false),
            ReviewStatus::All => None,
        },
        job: args.job.clone(),
        caller: args.caller.clone(),
        limit: Some(args.limit),
    };
    let items = match store.reviews(&filter) {
        Ok(items) => items,
        Err(e) => return store_failed(&e, err),
    };
    match mode {
        OutputMode::Json => {
            output::json_line(out, &serde_json::json!({"reviews": items}))?;
        }
        OutputMode::Human => {
            let status = match args.status {
                ReviewStatus::Open => "open ",
                ReviewStatus::Resolved => "resolved ",
                ReviewStatus::All => "",
            };
            output::reviews_human(out, &items, status, args.limit, now)?;
        }
    }
    Ok(EXIT_OK)
}

/// Prints one review item: every field and its resolutions for a person, or the item as JSON.
pub fn show(args: &ReviewShowArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mode = args.output.mode();
    let mut issues = Vec::new();
    let now = resolve_now(args.now.as_deref(), &mut issues);
    if !issues.is_empty() {
        return output::refuse_command(mode, &issues, out, err);
    }
    let store = match open_existing(&args.db.db, "review show", mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    let item = match find(store.as_ref(), args.id) {
        Ok(item) => item,
        Err(Found::Refused(refusal)) => return output::refuse(mode, &refusal, out, err),
        Err(Found::Failed(e)) => return store_failed(&e, err),
    };
    // A resolved item takes no decision: its packs are not read.
    let allowed = item
        .resolution
        .is_none()
        .then(|| resolutions(&item, &args.packs));
    match mode {
        OutputMode::Json => {
            // The decisions `review resolve` takes for it: null once resolved, or when its
            // job's pack is not found (the person's form says why).
            let mut shown = serde_json::to_value(&item)?;
            shown["allowed_decisions"] = match &allowed {
                Some(Ok(list)) => serde_json::json!(list),
                _ => serde_json::Value::Null,
            };
            output::json_line(out, &shown)?;
        }
        OutputMode::Human => output::review_human(out, &item, allowed.as_ref(), now)?,
    }
    Ok(EXIT_OK)
}

/// Resolves one open review item with a decision it takes; prints it.
pub fn resolve(
    args: &ReviewResolveArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let mut issues = Vec::new();
    let now = resolve_now(args.now.as_deref(), &mut issues);
    for (flag, value) in [("--decision", &args.decision), ("--by", &args.by)] {
        backstop_core::issue::check_id(value, flag, flag, &mut issues);
    }
    if let Some(note) = &args.note {
        let max = backstop_core::issue::MAX_NOTE_CHARS;
        backstop_core::issue::check_length(note, "--note", max, &mut issues);
    }
    if let Err(issue) = resolution::check_note(&args.decision, args.note.as_deref(), "--note") {
        issues.push(issue);
    }
    let mode = args.output.mode();
    if !issues.is_empty() {
        return output::refuse_command(mode, &issues, out, err);
    }
    let store = match open_existing(&args.db.db, "review resolve", mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    // The decision is checked against the item before anything is written.
    let item = match find(store.as_ref(), args.id()) {
        Ok(item) => item,
        Err(Found::Refused(refusal)) => return output::refuse(mode, &refusal, out, err),
        Err(Found::Failed(e)) => return store_failed(&e, err),
    };
    if let Some(done) = &item.resolution {
        let refusal = Refusal::new(
            RefusalCode::AlreadyResolved,
            already_resolved(item.id, done),
        );
        return output::refuse(mode, &refusal, out, err);
    }
    let allowed = match resolutions(&item, &args.packs) {
        Ok(allowed) => allowed,
        Err(issues) => return output::refuse_command(mode, &issues, out, err),
    };
    if let Err(issue) = resolution::check(&args.decision, &allowed, "--decision") {
        // Well formed, but not what this item allows: the refusal HTTP answers 409 with.
        let mut refusal = Refusal::new(RefusalCode::DecisionNotAllowed, issue.message.clone());
        refusal.error.issues.push(issue);
        return output::refuse(mode, &refusal, out, err);
    }
    let resolution = Resolution {
        by: args.by.clone(),
        decision: args.decision.clone(),
        note: args.note.clone().filter(|n| !n.trim().is_empty()),
    };
    // A task's item resolved with `retry` resets the task for every server on the ledger, in
    // the same transaction.
    match backstop_server::journal::resolve_once(store.as_ref(), args.id(), &resolution, now) {
        Ok(item) => match mode {
            OutputMode::Json => output::result(mode, out, &item),
            OutputMode::Human => {
                output::review_human(out, &item, None, now)?;
                Ok(EXIT_OK)
            }
        },
        // Another operator may have resolved it since it was read.
        Err(StoreError::NotFound(message)) => {
            let refusal = Refusal::new(RefusalCode::UnknownReview, message);
            output::refuse(mode, &refusal, out, err)
        }
        Err(StoreError::Conflict(message)) => {
            let refusal = Refusal::new(RefusalCode::AlreadyResolved, message);
            output::refuse(mode, &refusal, out, err)
        }
        Err(e) => store_failed(&e, err),
    }
}

/// Why an item could not be had.
enum Found {
    /// There is none: `unknown_review`.
    Refused(Box<Refusal>),
    /// The ledger failed.
    Failed(StoreError),
}

/// The review item `id`, open or resolved.
fn find(store: &dyn Store, id: i64) -> Result<ReviewItem, Found> {
    match store.review(id) {
        Ok(Some(item)) => Ok(item),
        Ok(None) => Err(Found::Refused(Box::new(Refusal::new(
            RefusalCode::UnknownReview,
            format!("no review item {id}"),
        )))),
        Err(e) => Err(Found::Failed(e)),
    }
}

fn already_resolved(id: i64, done: &backstop_store::ResolvedBy) -> String {
    format!(
        "review item {id} was already resolved by {} at {}: {}",
        done.by, done.at, done.decision
    )
}

/// The decisions `item` may be resolved with: a task's `retry`, `stop` and `handoff`, or a
/// held case's pack decisions and `handoff`, its pack found by job among `packs`.
///
/// # Errors
/// For a case, when its pack cannot be had: the packs' issues, or `no_pack`; every issue is at
/// `--packs`.
fn resolutions(item: &ReviewItem, packs: &[PathBuf]) -> Result<Vec<String>, Vec<Issue>> {
    if item.kind == TASK_KIND {
        return Ok(resolution::allowed(None));
    }
    let loaded = packs_by_job(packs).map_err(|issues| {
        issues
            .into_iter()
            .map(|i| i.within("--packs"))
            .collect::<Vec<_>>()
    })?;
    match loaded.get(&item.job) {
        Some(pack) => Ok(resolution::allowed(Some(pack))),
        None => Err(vec![Issue::new(
            "--packs",
            "no_pack",
            format!(
                "no pack for job `{}` in {} (loaded: {}); the decision cannot be checked without \
                 it: give --packs the job's pack file or its folder",
                item.job,
                packs_searched(packs),
                job_list(&loaded)
            ),
        )]),
    }
}
