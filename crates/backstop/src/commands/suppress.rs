//! `backstop suppress list` and `backstop suppress lift`: the suppression list, and an
//! operator's lifting of an entry, with who, when and why kept.

use std::io::{self, Write};

use backstop_core::Issue;
use backstop_core::case::{Refusal, RefusalCode};
use backstop_store::{Lifted, StoreError, SuppressionFilter, SuppressionRecord};
use jiff::Timestamp;

use super::EXIT_OK;
use super::cases::{open_existing, store_failed};
use crate::cli::{SuppressLiftArgs, SuppressListArgs};
use crate::output;
use crate::settings::OutputMode;

/// Lists the suppressions in force (or lifted): a table for a person, or JSON.
pub fn list(args: &SuppressListArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mode = args.output.mode();
    let mut issues = Vec::new();
    for (flag, value) in [
        ("--caller", &args.caller),
        ("--job", &args.job),
        ("--contact", &args.contact),
    ] {
        if let Some(name) = value {
            check(name, flag, &mut issues);
        }
    }
    if !issues.is_empty() {
        return output::refuse_command(mode, &issues, out, err);
    }
    let store = match open_existing(&args.db, "suppress list", mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    let filter = SuppressionFilter {
        caller: args.caller.clone(),
        job: args.job.clone(),
        contact: args.contact.clone(),
        lifted: args.lifted,
    };
    let rows = match store.suppressions(&filter) {
        Ok(rows) => rows,
        Err(e) => return store_failed(&e, err),
    };
    match mode {
        OutputMode::Json => {
            output::json_line(out, &serde_json::json!({"suppressions": rows}))?;
        }
        OutputMode::Human => table(out, &rows, args.lifted)?,
    }
    Ok(EXIT_OK)
}

/// Lifts a suppression: the record, with its lifting, as JSON.
pub fn lift(args: &SuppressLiftArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mut issues = Vec::new();
    check(&args.caller, "--caller", &mut issues);
    check(&args.job, "--job", &mut issues);
    check(&args.contact, "--contact", &mut issues);
    check(&args.by, "--by", &mut issues);
    if let Some(case) = &args.case_id {
        check(case, "--case", &mut issues);
    }
    if args.reason.trim().is_empty() {
        issues.push(Issue::new(
            "--reason",
            "required",
            "say why the suppression is lifted: it is kept with who lifted it and when",
        ));
    }
    backstop_core::issue::check_length(
        &args.reason,
        "--reason",
        backstop_core::issue::MAX_NOTE_CHARS,
        &mut issues,
    );
    let mode = args.output.mode();
    if !issues.is_empty() {
        return output::refuse_command(mode, &issues, out, err);
    }
    let store = match open_existing(&args.db, "suppress lift", mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    let lifted = Lifted {
        at: Timestamp::now(),
        by: args.by.clone(),
        why: args.reason.clone(),
    };
    let done = store.lift_suppression(
        &args.caller,
        &args.job,
        &args.contact,
        args.case_id.as_deref(),
        &lifted,
    );
    match done {
        Ok(record) => output::result(mode, out, &record),
        Err(StoreError::NotFound(message)) => output::refuse(
            mode,
            &Refusal::new(RefusalCode::NotFound, message),
            out,
            err,
        ),
        Err(e) => store_failed(&e, err),
    }
}

fn check(name: &str, flag: &str, issues: &mut Vec<Issue>) {
    backstop_core::issue::check_name(name, flag, "bad_name", &format!("`{flag}`"), issues);
}

/// One line per suppression, under a heading; a sentence when there are none.
fn table(out: &mut impl Write, rows: &[SuppressionRecord], lifted: bool) -> io::Result<()> {
    if rows.is_empty() {
        return writeln!(
            out,
            "{}",
            if lifted {
                "no lifted suppressions"
            } else {
                "no suppressions in force"
            }
        );
    }
    let mut heading = vec!["CONTACT", "JOB", "CALLER", "CASE", "SINCE", "REASON"];
    if lifted {
        heading.extend(["LIFTED", "BY", "WHY"]);
    }
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut line = vec![
                r.contact.clone(),
                r.job.clone(),
                r.caller.clone(),
                r.case_id.clone().unwrap_or_else(|| "every case".to_owned()),
                output::short_time(r.at),
                r.reason.clone(),
            ];
            if let Some(l) = &r.lifted {
                line.extend([output::short_time(l.at), l.by.clone(), l.why.clone()]);
            }
            line
        })
        .collect();
    output::table(out, "", &heading, &lines)
}
