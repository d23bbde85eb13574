//! Agents' tool hooks (Claude Code's `PreToolUse`, `PostToolUse`, `PostToolUseFailure`; Codex
//! and others send the same shape), answered over any [`Backend`]: `backstop hook` reads the
//! document on stdin, `POST /v1/hooks/{agent}` in its body.
//!
//! The session is the task and the tool is the tool. Before a call: a session a policy denial
//! stopped, a tool whose breaker is open, or a call (tool and arguments) on which the session's
//! caller already spent every attempt of a class is denied, with the reason the model reads.
//! After a failed call: the failure is counted as `POST /v1/recover` counts it, and the next
//! step goes back as the context the model reads (and, after `PostToolUse`, as a block when the
//! step is to stop, hand off or reconcile). After a call that worked: the outcome is reported.

use backstop_core::Report;
use backstop_core::issue::{MAX_NAME_CHARS, check_name};
use backstop_core::recover::Action;
use serde_json::{Map, Value, json};

use crate::backend::Backend;
use crate::lines;
use crate::proxy::{Governor, operation_of};

/// The most characters of a tool's error text sent as the failure's message.
const ERROR_CHARS: usize = 4000;

/// The agents whose hook documents are read: their documents have one shape.
pub const AGENTS: [&str; 2] = ["claude-code", "codex"];

/// One hook document, as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// `PreToolUse`, `PostToolUse` or `PostToolUseFailure`.
    pub event: String,
    /// The agent's session: the task.
    pub session: String,
    /// The tool.
    pub tool: String,
    /// The call's arguments.
    pub input: Value,
    /// `PostToolUse`'s `tool_response`.
    pub response: Option<Value>,
    /// `PostToolUseFailure`'s `error`.
    pub error: Option<String>,
}

/// A field of the document that cannot be read: its path and why.
pub type DocumentIssue = (String, String);

/// Reads a hook document; `None` for an event backstop does not govern.
///
/// # Errors
/// The first field that cannot be read, with its path.
pub fn read_document(value: &Value) -> Result<Option<Document>, DocumentIssue> {
    let Value::Object(fields) = value else {
        return Err((
            "body".to_owned(),
            "the hook document must be a JSON object".to_owned(),
        ));
    };
    let text_field = |name: &str| -> Result<String, DocumentIssue> {
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
    for (name, path) in [(&session, "session_id"), (&tool, "tool_name")] {
        let mut issues = Vec::new();
        if !check_name(name, path, "bad_name", &format!("`{path}`"), &mut issues)
            || name.chars().any(char::is_control)
        {
            return Err((
                path.to_owned(),
                format!(
                    "must be 1 to {MAX_NAME_CHARS} characters, not blank, no control characters"
                ),
            ));
        }
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
    Ok(Some(Document {
        event,
        session,
        tool,
        input,
        response: fields.get("tool_response").cloned(),
        error,
    }))
}

/// The answer to one document in the hook protocol's JSON; `None` when there is nothing to say.
/// `authorization` is the caller's `Authorization` header, for a service with keys.
///
/// # Errors
/// backstop could not be asked: why (the agent goes on with the call).
pub async fn answer<B: Backend>(
    governor: &Governor<B>,
    document: &Document,
    authorization: Option<&str>,
) -> Result<Option<Value>, String> {
    let operation = operation_of(&document.input);
    if document.event == "PreToolUse" {
        let refusal = governor
            .refusal(&document.session, &document.tool, &operation, authorization)
            .await?;
        return Ok(refusal.map(|refusal| {
            json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": format!("backstop: {}", refusal.line),
            }})
        }));
    }
    let error = if document.event == "PostToolUseFailure" {
        // The event says the call failed: counted even when it carries no words.
        Some(document.error.clone().unwrap_or_default())
    } else {
        failure_of(document.response.as_ref())
    };
    let Some(error) = error else {
        // A call that worked: its breaker and budget, and the session's counters, hear it.
        governor
            .succeeded(Some(&document.session), &document.tool, authorization)
            .await?;
        return Ok(None);
    };
    let message: String = error.chars().take(ERROR_CHARS).collect();
    let report = Report {
        tool: Some(document.tool.clone()),
        operation: Some(operation),
        message: Some(if message.trim().is_empty() {
            "the tool failed and said nothing".to_owned()
        } else {
            message
        }),
        ..Report::default()
    };
    let answered = governor
        .failed(&document.session, &report, None, authorization)
        .await?;
    let line = lines::step(&answered.step).unwrap_or_else(|| "see the step".to_owned());
    let context_line = format!("backstop: {line}");
    let ends = matches!(
        answered.action,
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
