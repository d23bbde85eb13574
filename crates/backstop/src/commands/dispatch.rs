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

use crate::cli::{DispatchArgs, KeyArgs, OutcomeArgs, OutcomeFlag, ShowDispatchArgs};
use crate::output;
use crate::settings::resolve_now;

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
    let mode = args.output.mode();
    let Some(pack) = pack.filter(|_| issues.is_empty()) else {
        return output::refuse_command(mode, &issues, out, err);
    };
    let value = match read_request(input) {
        Ok(value) => value,
        Err(refusal) => return output::refuse(mode, &refusal, out, err),
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
            return output::refuse(mode, &refusal, out, err);
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
        Ok(reply) => output::result(mode, out, &reply),
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
    let mode = args.output.mode();
    if !issues.is_empty() {
        return output::refuse_command(mode, &issues, out, err);
    }
    let store = match open_existing(&args.db.db, "dispatch outcome", mode, out, err)? {
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
        Ok(record) => output::result(mode, out, &record),
        Err(StoreError::NotFound(message)) => {
            let refusal = Refusal::new(RefusalCode::UnknownDispatch, message);
            output::refuse(mode, &refusal, out, err)
        }
        Err(StoreError::Conflict(message)) => {
            let refusal = Refusal::new(RefusalCode::LateOutcome, message);
            output::refuse(mode, &refusal, out, err)
        }
        Err(e) => store_failed(&e, err),
    }
}

/// Prints a dispatch with its deliveries.
pub fn show(args: &ShowDispatchArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mode = args.output.mode();
    let store = match open_existing(&args.db.db, "dispatch show", mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    // Deliveries first: one is marked done only after its dispatch was moved on.
    let found = store
        .deliveries(false, Some(&args.key), 1000)
        .and_then(|deliveries| Ok(store.dispatch_by_key(&args.key)?.map(|d| (d, deliveries))));
    match found {
        Ok(Some((dispatch, deliveries))) => output::result(
            mode,
            out,
            &json!({"dispatch": dispatch, "deliveries": deliveries}),
        ),
        Ok(None) => {
            let refusal = Refusal::new(
                RefusalCode::UnknownDispatch,
                format!("no dispatch has key `{}`", args.key),
            );
            output::refuse(mode, &refusal, out, err)
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
    let mode = args.output.mode();
    let Some(pack) = pack.filter(|_| issues.is_empty()) else {
        return output::refuse_command(mode, &issues, out, err);
    };
    let value = match read_request(input) {
        Ok(value) => value,
        Err(refusal) => return output::refuse(mode, &refusal, out, err),
    };
    match parse_dispatch(&pack, &args.caller, &value, &zone_known) {
        Ok(request) => {
            let recipients: Vec<Value> = request
                .recipients
                .iter()
                .map(|r| json!({"recipient": r.id, "case_id": r.case_id, "key": r.key}))
                .collect();
            output::result(
                mode,
                out,
                &json!({"batch_key": request.batch_key, "recipients": recipients}),
            )
        }
        Err(issues) => output::refuse(mode, &Refusal::malformed(issues), out, err),
    }
}
