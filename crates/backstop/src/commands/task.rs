//! `backstop task show|reset`: a task's call-level state, from the ledger's call journal.

use std::io::{self, Write};

use backstop_server::journal::{self, Event, task_key};
use backstop_server::routes::recover::check_name;
use backstop_server::routes::tasks::TaskAnswer;
use jiff::Timestamp;

use super::cases::{open_existing, store_failed};
use crate::cli::TaskArgs;
use crate::output;

/// Prints the task as it stands.
pub fn show(args: &TaskArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    run(args, false, out, err)
}

/// Journals an operator's reset of the task, then prints it.
pub fn reset(args: &TaskArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    run(args, true, out, err)
}

fn run(args: &TaskArgs, reset: bool, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mut issues = Vec::new();
    check_name(&args.task, "task", &mut issues);
    check_name(&args.caller, "--caller", &mut issues);
    let mode = args.output.mode();
    if !issues.is_empty() {
        return output::refuse_command(mode, &issues, out, err);
    }
    let command = if reset { "task reset" } else { "task show" };
    let store = match open_existing(&args.db.db, command, mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    let now = Timestamp::now();
    let key = task_key(&args.caller, &args.task);
    let loaded = if reset {
        let event = Event::TaskResetAll {
            by: "cli".to_owned(),
            review: None,
        }
        .to_stored(now, key.clone());
        journal::journal_once(store.as_ref(), &[event])
    } else {
        journal::load(store.as_ref()).map(|(calls, _)| calls)
    };
    let calls = match loaded {
        Ok(calls) => calls,
        Err(e) => return store_failed(&e, err),
    };
    let answer = TaskAnswer {
        task: args.task.clone(),
        caller: args.caller.clone(),
        view: calls.recovery.task_view(&key, now),
    };
    output::result(mode, out, &answer)
}
