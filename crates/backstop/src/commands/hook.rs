//! `backstop hook`: backstop in the path of an agent that runs command hooks (Claude Code's
//! `PreToolUse`, `PostToolUse` and `PostToolUseFailure`; Codex and others send the same
//! shape). One hook document on stdin, one answer in the hook protocol on stdout.
//!
//! The session is the task and the tool is the tool. Before a call: a session a policy denial
//! stopped, a tool whose breaker is open, or a call (tool and arguments) on which the session's
//! caller already spent every attempt of a class is denied, with the reason the model reads.
//! After a failed call: the failure is counted as `POST /v1/recover` counts it, and the next
//! step goes back as the context the model reads (and, after `PostToolUse`, as a block when the
//! step is to stop or hand off). After a call that worked: the outcome is reported, so the
//! session's counters start again. backstop never blocks a call because it failed itself: a bad
//! document or an unreachable ledger is exit 1 (the hook protocol's non-blocking error), with
//! the reason on stderr.

use std::io::{self, Read, Write};

use backstop_core::Report;
use backstop_core::recover::{Action, Context};
use backstop_mcp::{ApiAnswer, ApiRequest};
use backstop_server::routes::recover::check_name;
use serde_json::{Map, Value, json};

use super::hint_counted::{Answer, Counted};
use crate::cli::HookArgs;
use crate::settings::{Counter, check_url, read_key};

/// The hook protocol's non-blocking error: the agent shows stderr and the call goes on.
const EXIT_HOOK_ERROR: u8 = 1;

/// The most characters of a tool's error text sent as the failure's message.
const ERROR_CHARS: usize = 4000;

/// One hook document, as read.
struct Document {
    event: String,
    session: String,
    tool: String,
    input: Value,
    response: Option<Value>,
    error: Option<String>,
}

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
    let document = match read_document(&text) {
        Ok(Some(document)) => document,
        // An event backstop does not govern: nothing to say.
        Ok(None) => return Ok(0),
        Err((path, why)) => return refuse(err, &path, &why),
    };
    let Some(destination) = counter(args, err)? else {
        return Ok(EXIT_HOOK_ERROR);
    };
    let Some(counted) = Counted::open(&destination, err)? else {
        return Ok(EXIT_HOOK_ERROR);
    };
    let answer = match document.event.as_str() {
        "PreToolUse" => before(&counted, &document),
        "PostToolUseFailure" => {
            let error = document.error.clone().unwrap_or_default();
            after_failure(&counted, &document, &error)
        }
        _ => match failure_of(document.response.as_ref()) {
            Some(error) => after_failure(&counted, &document, &error),
            None => after_success(&counted, &document),
        },
    };
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

/// The document's fields; `None` for an event backstop does not govern.
fn read_document(text: &str) -> Result<Option<Document>, (String, String)> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        (
            "stdin".to_owned(),
            format!("the hook document is not JSON: {e}"),
        )
    })?;
    let Value::Object(fields) = value else {
        return Err((
            "stdin".to_owned(),
            "the hook document must be a JSON object".to_owned(),
        ));
    };
    let text_field = |name: &str| -> Result<String, (String, String)> {
        match fields.get(name) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(_) => Err((name.to_owned(), "must be a non-empty string".to_owned())),
            None => Err((name.to_owned(), "is required".to_owned())),
        }
    };
    let event = text_field("hook_event_name")?;
    if !["PreToolUse", "PostToolUse", "PostToolUseFailure"].contains(&event.as_str()) {
        return Ok(None);
    }
    let session = text_field("session_id")?;
    let tool = text_field("tool_name")?;
    let mut issues = Vec::new();
    check_name(&session, "session_id", &mut issues);
    check_name(&tool, "tool_name", &mut issues);
    if let Some(issue) = issues.into_iter().next() {
        return Err((issue.path, issue.message));
    }
    let input = match fields.get("tool_input") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(value @ Value::Object(_)) => value.clone(),
        Some(_) => {
            return Err((
                "tool_input".to_owned(),
                "must be an object (the tool's arguments)".to_owned(),
            ));
        }
    };
    let error = match fields.get("error") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    if event == "PostToolUseFailure" && error.is_none() {
        return Err((
            "error".to_owned(),
            "is required for PostToolUseFailure".to_owned(),
        ));
    }
    Ok(Some(Document {
        event,
        session,
        tool,
        input,
        response: fields.get("tool_response").cloned(),
        error,
    }))
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

/// `PreToolUse`: deny a call of a stopped session, to a tool whose breaker is open, or that
/// repeats a call on which the caller spent every attempt (the proxy's check); otherwise say
/// nothing.
fn before(counted: &Counted, document: &Document) -> Result<Option<Value>, String> {
    let operation = backstop_mcp::proxy::operation_of(&document.input);
    let refusal = counted.refusal(&document.session, &document.tool, &operation)?;
    Ok(refusal.map(|refusal| {
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": format!("backstop: {}", refusal.line),
        }})
    }))
}

/// What a `PostToolUse` tool response says of a failure, if it is one: an error flag or a
/// `success: false`, with the text it carries.
fn failure_of(response: Option<&Value>) -> Option<String> {
    let Some(Value::Object(fields)) = response else {
        return None;
    };
    let failed = ["is_error", "isError"]
        .iter()
        .any(|k| fields.get(*k) == Some(&Value::Bool(true)))
        || fields.get("success") == Some(&Value::Bool(false));
    if !failed {
        return None;
    }
    let text = ["error", "stderr", "content", "message", "output"]
        .iter()
        .filter_map(|k| fields.get(*k))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .find(|s| !s.trim().is_empty())
        .unwrap_or_else(|| Value::Object(fields.clone()).to_string());
    Some(text)
}

/// A failed call: counted on the session, the next step given back.
fn after_failure(
    counted: &Counted,
    document: &Document,
    error: &str,
) -> Result<Option<Value>, String> {
    let message: String = error.chars().take(ERROR_CHARS).collect();
    let report = Report {
        tool: Some(document.tool.clone()),
        operation: Some(backstop_mcp::proxy::operation_of(&document.input)),
        message: Some(if message.trim().is_empty() {
            "the tool failed and said nothing".to_owned()
        } else {
            message
        }),
        ..Report::default()
    };
    let context = Context::for_report(Context::default(), &report);
    let step = match counted.step(&document.session, &report, &context) {
        Answer::Step(step) => step,
        Answer::Refused(status, body) => {
            return Err(format!("POST /v1/recover was refused ({status}): {body}"));
        }
        Answer::Unreachable(why) => return Err(why),
    };
    let line = backstop_mcp::lines::step(&step).unwrap_or_else(|| "see the step".to_owned());
    let context_line = format!("backstop: {line}");
    let action: Option<Action> = step
        .get("action")
        .and_then(|a| serde_json::from_value(a.clone()).ok());
    let ends = matches!(
        action,
        Some(Action::Stop | Action::Escalate | Action::Reconcile)
    );
    let mut reply = json!({"hookSpecificOutput": {
        "hookEventName": document.event,
        "additionalContext": context_line,
    }});
    // After `PostToolUse` a block puts the reason before the model; `PostToolUseFailure` only
    // observes, and the next `PreToolUse` denies what must not run again.
    if ends && document.event == "PostToolUse" {
        reply["decision"] = json!("block");
        reply["reason"] = json!(context_line);
    }
    Ok(Some(reply))
}

/// A call that worked: the outcome reported (the tool's breaker and budget, and the session's
/// counters start again). Nothing to say to the model.
fn after_success(counted: &Counted, document: &Document) -> Result<Option<Value>, String> {
    let body = json!({"tool": document.tool, "outcome": "success", "task": document.session});
    match counted.send(ApiRequest::post("/v1/outcomes", body))? {
        ApiAnswer { status: 200, .. } => Ok(None),
        ApiAnswer { status, body } => {
            Err(format!("POST /v1/outcomes was refused ({status}): {body}"))
        }
    }
}
