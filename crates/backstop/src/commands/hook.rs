//! `backstop hook`: backstop in the path of an agent that runs command hooks (Claude Code's
//! `PreToolUse`, `PostToolUse` and `PostToolUseFailure`; Codex and others send the same
//! shape). One hook document on stdin, one answer in the hook protocol on stdout; what the
//! answer is, `backstop_mcp::hooks` decides (`POST /v1/hooks/{agent}` answers the same).
//! backstop never blocks a call because it failed itself: a bad document or an unreachable
//! ledger is exit 1 (the hook protocol's non-blocking error), with the reason on stderr.

use std::io::{self, Read, Write};

use backstop_mcp::hooks;
use serde_json::Value;

use super::hint_counted::Counted;
use crate::cli::HookArgs;
use crate::settings::{Counter, check_url, read_key};

/// The hook protocol's non-blocking error: the agent shows stderr and the call goes on.
const EXIT_HOOK_ERROR: u8 = 1;

/// Runs one hook.
pub fn run(
    args: &HookArgs,
    input: &mut impl Read,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let mut text = String::new();
    if input.read_to_string(&mut text).is_err() {
        return refuse(err, "stdin", "the hook document is not UTF-8 text");
    }
    let value: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => return refuse(err, "stdin", &format!("the hook document is not JSON: {e}")),
    };
    let document = match hooks::read_document(&value) {
        Ok(Some(document)) => document,
        // An event backstop does not govern: nothing to say.
        Ok(None) => return Ok(0),
        Err((path, why)) => {
            let path = if path == "body" {
                "stdin".to_owned()
            } else {
                path
            };
            return refuse(err, &path, &why);
        }
    };
    let Some(destination) = counter(args, err)? else {
        return Ok(EXIT_HOOK_ERROR);
    };
    let Some(counted) = Counted::open(&destination, err)? else {
        return Ok(EXIT_HOOK_ERROR);
    };
    let answer = counted.answer_hook(&document);
    match answer {
        Ok(Some(reply)) => {
            writeln!(out, "{reply}")?;
            Ok(0)
        }
        Ok(None) => Ok(0),
        Err(why) => {
            writeln!(
                err,
                "backstop hook: {why} (the call goes on: backstop never blocks a call because it failed itself)"
            )?;
            Ok(EXIT_HOOK_ERROR)
        }
    }
}

/// A bad document or flag: on stderr, exit 1, nothing counted.
fn refuse(err: &mut impl Write, path: &str, why: &str) -> io::Result<u8> {
    writeln!(
        err,
        "backstop hook: {path}: {why}; nothing was counted (the call goes on)"
    )?;
    Ok(EXIT_HOOK_ERROR)
}

/// Where the hook counts: the service (`--server`) or the ledger (`--db`).
fn counter(args: &HookArgs, err: &mut impl Write) -> io::Result<Option<Counter>> {
    let Some(url) = &args.server else {
        return Ok(Some(Counter::Ledger {
            db: args.db.clone(),
            rules: args.rules.clone(),
            strategies: args.strategies.clone(),
        }));
    };
    if let Err(issue) = check_url(url, "--server") {
        refuse(err, &issue.path, &issue.message)?;
        return Ok(None);
    }
    let key = match args.key_file.as_deref().map(read_key).transpose() {
        Ok(key) => key,
        Err(issue) => {
            refuse(err, &issue.path, &issue.message)?;
            return Ok(None);
        }
    };
    Ok(Some(Counter::Server {
        url: url.clone(),
        key,
    }))
}
