//! `backstop notify list`: the notification outbox, as a table or JSON.

use std::io::{self, Write};

use backstop_core::notify::NotifyStatus;
use backstop_store::{NotificationFilter, NotificationRecord};

use super::EXIT_OK;
use super::cases::{open_existing, store_failed};
use crate::cli::{NotifyListArgs, NotifyStatusArg};
use crate::output;
use crate::settings::OutputMode;

/// Lists notifications, newest first: a table for a person, or `{"notifications": [...]}`.
pub fn list(args: &NotifyListArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mode = args.output.mode();
    let store = match open_existing(&args.db, "notify list", mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
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
            output::json_line(out, &serde_json::json!({"notifications": rows}))?;
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
    let heading = [
        "ID",
        "TARGET",
        "KIND",
        "STATUS",
        "TRIES",
        "SUBJECT",
        "WHEN",
        "LAST ERROR",
    ];
    let lines: Vec<Vec<String>> = rows.iter().map(line).collect();
    output::table(out, "", &heading, &lines)
}

fn line(row: &NotificationRecord) -> Vec<String> {
    let payload = &row.payload;
    let subject = match (&payload.job, &payload.case_id, &payload.task) {
        (Some(job), Some(case), _) => format!("{job}/{case}"),
        (_, _, Some(task)) => format!("task {}", task.task),
        _ => payload.caller.clone(),
    };
    let when = match (row.status, row.next_at, row.finished_at) {
        (NotifyStatus::Pending, Some(next), _) => format!("next {}", output::short_time(next)),
        (_, _, Some(done)) => output::short_time(done),
        _ => "-".to_owned(),
    };
    vec![
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
