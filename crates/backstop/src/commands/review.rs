//! `backstop review list|resolve` and `backstop purge`.

use backstop_core::case::RefusalCode;
use std::io::{self, Write};

use backstop_core::Issue;
use backstop_core::case::Refusal;
use backstop_store::{DEFAULT_RETENTION, Resolution, ReviewFilter, StoreError};
use jiff::SignedDuration;

use super::EXIT_OK;
use super::EXIT_REFUSED;
use super::cases::{open, store_failed};
use crate::cli::{PurgeArgs, ReviewListArgs, ReviewResolveArgs, ReviewStatus};
use crate::output;
use crate::settings::{OutputMode, resolve_now};

/// Lists review items as JSON: `{"reviews": [...]}`.
pub fn list(args: &ReviewListArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let Some(store) = open(&args.db.db, err)? else {
        return Ok(super::EXIT_ISSUES);
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
    match store.reviews(&filter) {
        Ok(items) => {
            serde_json::to_writer_pretty(&mut *out, &serde_json::json!({"reviews": items}))?;
            writeln!(out)?;
            Ok(EXIT_OK)
        }
        Err(e) => store_failed(&e, err),
    }
}

/// Resolves one review item; prints it.
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
    if !issues.is_empty() {
        return output::refuse_command(OutputMode::Json, &issues, out, err);
    }
    let Some(store) = open(&args.db.db, err)? else {
        return Ok(super::EXIT_ISSUES);
    };
    let resolution = Resolution {
        by: args.by.clone(),
        decision: args.decision.clone(),
        note: args.note.clone().filter(|n| !n.trim().is_empty()),
    };
    match store.resolve_review(args.id, &resolution, now) {
        Ok(item) => {
            // A task's item resolved with `retry` resets the task for every server on the
            // ledger (the position does not matter: nothing is read back).
            if let Some(reset) = backstop_server::journal::task_review_reset(&item, &args.by)
                && let Err(e) = store.journal(&[reset], i64::MAX)
            {
                return store_failed(&e, err);
            }
            serde_json::to_writer_pretty(&mut *out, &item)?;
            writeln!(out)?;
            Ok(EXIT_OK)
        }
        Err(StoreError::NotFound(message)) => {
            output::json_line(out, &Refusal::new(RefusalCode::UnknownReview, message))?;
            Ok(EXIT_REFUSED)
        }
        Err(StoreError::Conflict(message)) => {
            output::json_line(out, &Refusal::new(RefusalCode::AlreadyResolved, message))?;
            Ok(EXIT_REFUSED)
        }
        Err(e) => store_failed(&e, err),
    }
}

/// Deletes records older than `--older-than`; prints the counts.
pub fn purge(args: &PurgeArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mut issues = Vec::new();
    let now = resolve_now(args.now.as_deref(), &mut issues);
    let keep = parse_retention(&args.older_than).unwrap_or_else(|why| {
        issues.push(Issue::new("--older-than", "bad_duration", why));
        DEFAULT_RETENTION
    });
    if !issues.is_empty() {
        return output::refuse_command(OutputMode::Json, &issues, out, err);
    }
    let Some(store) = open(&args.db.db, err)? else {
        return Ok(super::EXIT_ISSUES);
    };
    let Some(before) = now.checked_sub(keep).ok() else {
        let issue = Issue::new(
            "--older-than",
            "out_of_range",
            format!(
                "`{}` reaches before the earliest time there is",
                args.older_than
            ),
        );
        return output::refuse_command(OutputMode::Json, &[issue], out, err);
    };
    match store.purge(before) {
        Ok(purged) => {
            let report = serde_json::json!({"before": before, "deleted": purged});
            output::json_line(out, &report)?;
            Ok(EXIT_OK)
        }
        Err(e) => store_failed(&e, err),
    }
}

/// A retention: `30d`, or any duration jiff reads (`72h`, `90m`); positive.
fn parse_retention(text: &str) -> Result<SignedDuration, String> {
    let parsed = match text.strip_suffix('d').map(str::parse::<i64>) {
        Some(Ok(days)) => days
            .checked_mul(86_400)
            .filter(|_| days < 3_650_000)
            .map(SignedDuration::from_secs)
            .ok_or_else(|| format!("`{text}` is too long")),
        _ => text
            .parse::<SignedDuration>()
            .map_err(|_| format!("`{text}` is not a duration like 30d, 72h or 90m")),
    }?;
    if parsed.is_positive() {
        Ok(parsed)
    } else {
        Err(format!("`{text}` must be longer than zero"))
    }
}
