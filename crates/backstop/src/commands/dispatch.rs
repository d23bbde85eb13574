//! `backstop dispatch` (permission, outcome, show) and `backstop key`: side effects on the
//! ledger, with no service running. A simulated dispatch made here is answered by the
//! simulator when `backstop reconcile` (or a running `serve`) sweeps it.

use backstop_core::case::RefusalCode;
use std::io::{self, Read, Write};
use std::sync::Arc;

use backstop_core::case::Refusal;
use backstop_core::effects::{DispatchState, parse_dispatch};
use backstop_server::Config;
use backstop_store::{DispatchContext, StoreError};
use serde_json::{Value, json};

use super::cases::{check_caller, load_pack, open, open_existing, read_request, store_failed};
use super::{EXIT_OK, EXIT_REFUSED};
use crate::cli::{DispatchArgs, KeyArgs, OutcomeArgs, OutcomeFlag, ShowDispatchArgs};
use crate::output;
use crate::settings::{OutputMode, resolve_now};

fn zone_known(zone: &str) -> bool {
    jiff::tz::TimeZone::get(zone).is_ok()
}

/// Gates the dispatch request on stdin and prints every recipient's answer.
pub fn dispatch(
    args: &DispatchArgs,
    input: &mut impl Read,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let mut issues = Vec::new();
    check_caller(&args.caller, &mut issues);
    let now = resolve_now(args.now.as_deref(), &mut issues);
    let pack = args.pack.as_deref().and_then(|p| load_pack(p, &mut issues));
    let live_key = match &args.config {
        None => false,
        Some(path) => match Config::load(path) {
            Ok(config) => config.effects.live_key.is_some(),
            Err(found) => {
                let origin = format!("--config {}", path.display());
                issues.extend(found.into_iter().map(|i| i.within(&origin)));
                false
            }
        },
    };
    let Some(pack) = pack.filter(|_| issues.is_empty()) else {
        return output::refuse_command(OutputMode::Json, &issues, out, err);
    };
    let value = match read_request(input) {
        Ok(value) => value,
        Err(refusal) => {
            output::json_line(out, &refusal)?;
            return Ok(EXIT_REFUSED);
        }
    };
    let request = match parse_dispatch(&pack, &args.caller, &value, &zone_known) {
        Ok(request) => request,
        Err(issues) => {
            let code = if pack.dispatch.is_none() {
                RefusalCode::NoDispatch
            } else {
                RefusalCode::Malformed
            };
            let mut refusal = Refusal::malformed(issues);
            refusal.error.code = code;
            output::json_line(out, &refusal)?;
            return Ok(EXIT_REFUSED);
        }
    };
    let Some(store) = open(&args.db.db, err)? else {
        return Ok(super::EXIT_ISSUES);
    };
    match store.dispatch(
        Arc::new(pack),
        &args.caller,
        &request,
        DispatchContext { live_key },
        now,
    ) {
        Ok(reply) => {
            output::json_line(out, &reply)?;
            Ok(EXIT_OK)
        }
        Err(e) => store_failed(&e, err),
    }
}

/// Records the agent's report on a permitted dispatch.
pub fn outcome(args: &OutcomeArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mut issues = Vec::new();
    check_caller(&args.caller, &mut issues);
    if let Some(code) = &args.failure_code {
        backstop_core::issue::check_length(code, "--failure-code", 200, &mut issues);
    }
    if !issues.is_empty() {
        return output::refuse_command(OutputMode::Json, &issues, out, err);
    }
    let store = match open_existing(&args.db.db, "dispatch outcome", err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    let state = match args.outcome {
        OutcomeFlag::Sent => DispatchState::Sent,
        OutcomeFlag::Failed => DispatchState::Failed,
        OutcomeFlag::Unknown => DispatchState::Unknown,
    };
    let reported = store.dispatch_outcome(
        &args.caller,
        &args.key,
        state,
        args.failure_code.as_deref(),
        jiff::Timestamp::now(),
    );
    match reported {
        Ok(record) => {
            output::json_line(out, &record)?;
            Ok(EXIT_OK)
        }
        Err(StoreError::NotFound(message)) => {
            output::json_line(out, &Refusal::new(RefusalCode::UnknownDispatch, message))?;
            Ok(EXIT_REFUSED)
        }
        Err(StoreError::Conflict(message)) => {
            output::json_line(out, &Refusal::new(RefusalCode::LateOutcome, message))?;
            Ok(EXIT_REFUSED)
        }
        Err(e) => store_failed(&e, err),
    }
}

/// Prints a dispatch with its deliveries.
pub fn show(args: &ShowDispatchArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let store = match open_existing(&args.db.db, "dispatch show", err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    // Deliveries first: one is marked done only after its dispatch was moved on.
    let found = store
        .deliveries(false, Some(&args.key), 1000)
        .and_then(|deliveries| Ok(store.dispatch_by_key(&args.key)?.map(|d| (d, deliveries))));
    match found {
        Ok(Some((dispatch, deliveries))) => {
            serde_json::to_writer_pretty(
                &mut *out,
                &json!({"dispatch": dispatch, "deliveries": deliveries}),
            )?;
            writeln!(out)?;
            Ok(EXIT_OK)
        }
        Ok(None) => {
            let refusal = Refusal::new(
                RefusalCode::UnknownDispatch,
                format!("no dispatch has key `{}`", args.key),
            );
            output::json_line(out, &refusal)?;
            Ok(EXIT_REFUSED)
        }
        Err(e) => store_failed(&e, err),
    }
}

/// Prints each recipient's key and the batch's key.
pub fn key(
    args: &KeyArgs,
    input: &mut impl Read,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let mut issues = Vec::new();
    check_caller(&args.caller, &mut issues);
    let pack = load_pack(&args.pack, &mut issues);
    let Some(pack) = pack.filter(|_| issues.is_empty()) else {
        return output::refuse_command(OutputMode::Json, &issues, out, err);
    };
    let value = match read_request(input) {
        Ok(value) => value,
        Err(refusal) => {
            output::json_line(out, &refusal)?;
            return Ok(EXIT_REFUSED);
        }
    };
    match parse_dispatch(&pack, &args.caller, &value, &zone_known) {
        Ok(request) => {
            let recipients: Vec<Value> = request
                .recipients
                .iter()
                .map(|r| json!({"recipient": r.id, "case_id": r.case_id, "key": r.key}))
                .collect();
            output::json_line(
                out,
                &json!({"batch_key": request.batch_key, "recipients": recipients}),
            )?;
            Ok(EXIT_OK)
        }
        Err(issues) => {
            output::json_line(out, &Refusal::malformed(issues))?;
            Ok(EXIT_REFUSED)
        }
    }
}
