//! `backstop notify list`: the notification outbox, as a table or JSON.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

use backstop_core::Issue;
use backstop_core::notify::NotifyStatus;
use backstop_store::{NotificationFilter, NotificationRecord};

use super::EXIT_OK;
use super::cases::{open, store_failed};
use crate::cli::{NotifyListArgs, NotifyStatusArg};
use crate::output;
use crate::settings::OutputMode;

/// Lists notifications, newest first: a table for a person, or `{"notifications": [...]}`.
pub fn list(args: &NotifyListArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mode = args.output.mode();
    let location = args.db.to_string_lossy();
    if !backstop_store::is_postgres_url(&location) && !Path::new(&args.db).is_file() {
        let issue = Issue::new(
            "--db",
            "not_found",
            format!(
                "there is no ledger at {location}: `notify list` reads an existing ledger and \
                 never creates one (give the path `backstop serve` uses, or a postgres:// URL)"
            ),
        );
        return output::refuse_command(mode, &[issue], out, err);
    }
    let Some(store) = open(&args.db, err)? else {
        return Ok(super::EXIT_ISSUES);
    };
    let filter = NotificationFilter {
        status: match args.status {
            NotifyStatusArg::Pending => Some(NotifyStatus::Pending),
            NotifyStatusArg::Delivered => Some(NotifyStatus::Delivered),
            NotifyStatusArg::Failed => Some(NotifyStatus::Failed),
            NotifyStatusArg::All => None,
        },
        limit: Some(args.limit),
    };
    let rows = match store.notifications(&filter) {
        Ok(rows) => rows,
        Err(e) => return store_failed(&e, err),
    };
    match mode {
        OutputMode::Json => {
            serde_json::to_writer_pretty(&mut *out, &serde_json::json!({"notifications": rows}))?;
            writeln!(out)?;
        }
        OutputMode::Human => table(out, &rows)?,
    }
    Ok(EXIT_OK)
}

/// One line per notification, under a heading; a sentence when there are none.
fn table(out: &mut impl Write, rows: &[NotificationRecord]) -> io::Result<()> {
    if rows.is_empty() {
        return writeln!(out, "no notifications");
    }
    let lines: Vec<[String; 8]> = rows.iter().map(line).collect();
    let heading = [
        "ID",
        "TARGET",
        "KIND",
        "STATUS",
        "TRIES",
        "SUBJECT",
        "WHEN",
        "LAST ERROR",
    ]
    .map(str::to_owned);
    let mut widths = heading.clone().map(|h| h.chars().count());
    for line in &lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for line in std::iter::once(&heading).chain(&lines) {
        let mut text = String::new();
        for (i, (cell, width)) in line.iter().zip(widths).enumerate() {
            if i + 1 == line.len() {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<width$}  ");
            }
        }
        writeln!(out, "{}", text.trim_end())?;
    }
    Ok(())
}

fn line(row: &NotificationRecord) -> [String; 8] {
    let payload = &row.payload;
    let subject = match (&payload.job, &payload.case_id, &payload.task) {
        (Some(job), Some(case), _) => format!("{job}/{case}"),
        (_, _, Some(task)) => format!("task {}", task.task),
        _ => payload.caller.clone(),
    };
    let when = match (row.status, row.next_at, row.finished_at) {
        (NotifyStatus::Pending, Some(next), _) => format!("next {}", short_time(next)),
        (_, _, Some(done)) => short_time(done),
        _ => "-".to_owned(),
    };
    [
        row.id.clone(),
        row.target.clone(),
        row.kind.as_str().to_owned(),
        row.status.as_str().to_owned(),
        row.attempts.to_string(),
        subject,
        when,
        row.last_error.clone().unwrap_or_else(|| "-".to_owned()),
    ]
}

/// A time to the second, in UTC.
fn short_time(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%d %H:%M:%SZ").to_string()
}
