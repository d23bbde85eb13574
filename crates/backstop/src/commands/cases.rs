//! `backstop decide` and `backstop cases show`: attempts on a case, on the ledger.

use backstop_core::case::RefusalCode;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use backstop_core::case::identity::normalize_subject;
use backstop_core::case::{DecisionResult, Refusal, parse_request};
use backstop_core::pack::{IdentityMode, Pack};
use backstop_core::{Issue, input};
use backstop_server::files::read_text;
use backstop_store::{Location, Reply, Store, StoreError};

use super::{EXIT_ISSUES, EXIT_OK};
use crate::cli::{CasesShowArgs, DecideArgs};
use crate::output;
use crate::settings::{OutputMode, resolve_now};

/// Reads one request from `input`, runs it as an attempt and prints the result or refusal.
pub fn decide(
    args: &DecideArgs,
    input: &mut impl Read,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let mut issues = Vec::new();
    check_caller(&args.caller, &mut issues);
    let now = resolve_now(args.now.as_deref(), &mut issues);
    let pack = load_pack(&args.pack, &mut issues);
    let mode = args.output.mode();
    let Some(pack) = pack.filter(|_| issues.is_empty()) else {
        return output::refuse_command(mode, &issues, out, err);
    };
    let value = match read_request(input) {
        Ok(value) => value,
        Err(refusal) => return output::refuse(mode, &refusal, out, err),
    };
    let request = match parse_request(&pack, &args.caller, &value) {
        Ok(request) => request,
        Err(issues) => return output::refuse(mode, &Refusal::malformed(issues), out, err),
    };
    let Some(store) = open(&args.db.db, err)? else {
        return Ok(EXIT_ISSUES);
    };
    match store.decide(Arc::new(pack), &args.caller, request, now) {
        Ok(Reply::Counted(result)) => decided(mode, &result, out),
        // A resend: the stored result, as it was first sent.
        Ok(Reply::Replayed(stored)) => match serde_json::from_str::<DecisionResult>(&stored) {
            Ok(result) if mode == OutputMode::Human => decided(mode, &result, out),
            _ => {
                writeln!(out, "{stored}")?;
                Ok(EXIT_OK)
            }
        },
        Ok(Reply::Refused(refusal)) => output::refuse(mode, &refusal, out, err),
        Err(e) => store_failed(&e, err),
    }
}

/// Prints a result as JSON, or for a person.
fn decided(mode: OutputMode, result: &DecisionResult, out: &mut impl Write) -> io::Result<u8> {
    match mode {
        OutputMode::Json => output::json_line(out, result)?,
        OutputMode::Human => output::decision_human(out, result)?,
    }
    Ok(EXIT_OK)
}

/// The JSON request on stdin, or the malformed refusal to print (unreadable, not JSON).
pub(crate) fn read_request(stdin: &mut impl Read) -> Result<serde_json::Value, Box<Refusal>> {
    let mut body = String::new();
    stdin.read_to_string(&mut body).map_err(|e| {
        Box::new(Refusal::malformed(vec![Issue::new(
            "",
            "unreadable",
            format!("cannot read the request from stdin: {e}"),
        )]))
    })?;
    input::json_value(&body).map_err(|issue| {
        let message = format!("the request is not JSON: {}", issue.message);
        Box::new(Refusal::malformed(vec![Issue::new(
            "",
            &issue.code,
            message,
        )]))
    })
}

/// Prints one case: a timeline for a person, or the case as JSON.
pub fn show(args: &CasesShowArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mode = args.output.mode();
    let mut issues = Vec::new();
    check_caller(&args.caller, &mut issues);
    // Why the id is not normalized, when no pack for the job was found.
    let mut unfound = None;
    let pack = match &args.pack {
        Some(path) => load_pack(path, &mut issues).inspect(|pack| {
            if pack.job != args.job {
                issues.push(Issue::new(
                    format!("--pack {}", path.display()),
                    "wrong_job",
                    format!(
                        "the pack is job `{}`'s, not `--job {}`'s",
                        pack.job, args.job
                    ),
                ));
            }
        }),
        None => job_pack(&args.job, &args.packs)
            .map_err(|why| unfound = Some(why))
            .ok(),
    };
    if !issues.is_empty() {
        return output::refuse_command(mode, &issues, out, err);
    }
    let case_id = match &pack {
        Some(pack) if pack.identity.mode == IdentityMode::Id => {
            normalize_subject(&args.case_id, pack.identity.match_rule)
                .unwrap_or_else(|_| args.case_id.clone())
        }
        _ => args.case_id.clone(),
    };
    let store = match open_existing(&args.db.db, "cases show", mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    match store.case(&args.caller, &args.job, &case_id) {
        Ok(Some(case)) => {
            match mode {
                OutputMode::Json => {
                    output::json_line(out, &case)?;
                }
                OutputMode::Human => {
                    output::case_human(out, &case, pack.as_ref().map(|p| p.identity.mode))?;
                }
            }
            Ok(EXIT_OK)
        }
        Ok(None) => {
            let refusal = Refusal::new(
                RefusalCode::UnknownCase,
                match &unfound {
                    None => format!(
                        "caller `{}` has no case `{case_id}` on job `{}`",
                        args.caller, args.job
                    ),
                    Some(why) => format!(
                        "caller `{}` has no case `{case_id}` on job `{}` ({why})",
                        args.caller, args.job
                    ),
                },
            );
            output::refuse(mode, &refusal, out, err)
        }
        Err(e) => store_failed(&e, err),
    }
}

/// The pack of `job` among `packs` (default ./packs), to normalize a case id by its match rule;
/// when there is none, why (for the refusal, should the id as given find nothing).
fn job_pack(job: &str, packs: &[PathBuf]) -> Result<Pack, String> {
    let place = super::pack::packs_searched(packs);
    let why = match super::pack::packs_by_job(packs) {
        Ok(found) => match found.get(job) {
            Some(pack) => return Ok((**pack).clone()),
            None => format!("no pack for job `{job}` in {place}"),
        },
        Err(issues) => format!("the packs in {place} have {} issue(s)", issues.len()),
    };
    Err(format!(
        "{why}, so --case was looked up as given, not normalized by the pack's match rule (name \
         the pack with --pack or --packs)"
    ))
}

/// Opens a ledger that must exist, for `command`, or says why not and gives the exit code: a
/// `SQLite` path with no file is a bad `--db` (exit 2, as a missing file is for every command)
/// and is never created, so a mistyped `--db` reads as what it is rather than as an empty
/// ledger; a ledger that cannot be opened is exit 1. A `postgres://` URL is opened as it is.
pub fn open_existing(
    location: &Location,
    command: &str,
    mode: OutputMode,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<Result<Box<dyn Store>, u8>> {
    if !location.may_exist() {
        let issue = Issue::new(
            "--db",
            "no_ledger",
            format!(
                "{location}: no ledger there; `backstop {command}` reads an existing ledger and \
                 never creates one (give the --db PATH `backstop serve` or `backstop decide` \
                 writes, or a postgres:// URL)"
            ),
        );
        return Ok(Err(output::refuse_command(mode, &[issue], out, err)?));
    }
    Ok(open(location, err)?.ok_or(EXIT_ISSUES))
}

/// Opens the ledger (a `SQLite` file, created if missing, or a `postgres://` URL), or says why
/// it cannot.
pub fn open(location: &Location, err: &mut impl Write) -> io::Result<Option<Box<dyn Store>>> {
    match location.open() {
        Ok(store) => Ok(Some(store)),
        Err(e) => {
            writeln!(err, "backstop: --db {location}: {e}")?;
            Ok(None)
        }
    }
}

/// Reports a failed store call on stderr; exit 1.
pub fn store_failed(error: &StoreError, err: &mut impl Write) -> io::Result<u8> {
    writeln!(err, "backstop: the ledger failed: {error}")?;
    Ok(EXIT_ISSUES)
}

pub(crate) fn check_caller(caller: &str, issues: &mut Vec<Issue>) {
    backstop_core::issue::check_name(caller, "--caller", "bad_caller", "a caller name", issues);
}

/// Reads and parses `--pack`; every issue gets the file in its path.
pub(crate) fn load_pack(path: &std::path::Path, issues: &mut Vec<Issue>) -> Option<Pack> {
    let origin = format!("--pack {}", path.display());
    let text = match read_text(path, &origin, "the pack") {
        Ok(text) => text,
        Err(issue) => {
            issues.push(issue);
            return None;
        }
    };
    match backstop_server::catalog::read_pack(&text, path) {
        Ok(pack) => Some(pack),
        Err(found) => {
            issues.extend(found.into_iter().map(|issue| issue.within(&origin)));
            None
        }
    }
}
