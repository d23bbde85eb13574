//! What came back from the upstream for one `tools/call`, and the failure report it makes.
//!
//! Four kinds of failure: the upstream answered with a JSON-RPC error; it answered with a
//! result whose `isError` is true (the tool ran and failed: its text is read by the
//! classifier's extractors, statuses, errno, gRPC codes and exception names included); the call
//! was sent and no answer came (a timeout, or the connection closed under it: its effect is
//! unknown); or the upstream could not be reached before the call was sent.

use std::time::Duration;

use backstop_core::Report;
use backstop_core::case::identity::text_hash;
use rmcp::model::{CallToolResponse, CallToolResult};
use serde_json::Value;

/// The most characters of a tool's error text sent as the failure's message.
const MESSAGE_CHARS: usize = 4000;

/// One call's outcome.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The tool worked (or asked for input, or became a task): passed on unchanged.
    Success(CallToolResponse),
    /// The tool ran and failed (`isError: true`).
    ToolError(CallToolResult),
    /// The upstream refused the request with a JSON-RPC error.
    RpcError {
        /// The error's code (`-32602`).
        code: i32,
        /// Its message.
        message: String,
    },
    /// The call was sent and no answer came in time: it may have taken effect.
    TimedOut(Duration),
    /// The connection closed while the call was out: it may have taken effect.
    Dropped(String),
    /// The upstream could not be started or reached: the call was never sent.
    Unreachable(String),
    /// The client cancelled the call; the cancellation was passed upstream.
    Cancelled,
}

impl Outcome {
    /// Whether the call may have done its work although no answer says so.
    pub fn may_have_taken_effect(&self) -> bool {
        matches!(self, Outcome::TimedOut(_) | Outcome::Dropped(_))
    }

    /// The failure report of a failed outcome (`None` for a success), for the call of `tool`
    /// as `operation`, safe to resend or not, after `elapsed`.
    pub fn report(
        &self,
        tool: &str,
        operation: &str,
        resend_safe: bool,
        elapsed: Duration,
    ) -> Option<Report> {
        let mut report = Report {
            tool: Some(tool.to_owned()),
            operation: Some(operation.to_owned()),
            idempotent: Some(resend_safe),
            elapsed_ms: Some(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)),
            ..Report::default()
        };
        match self {
            Outcome::Success(_) | Outcome::Cancelled => return None,
            Outcome::ToolError(result) => {
                let text = result_text(result);
                if text.trim().is_empty() {
                    match &result.structured_content {
                        Some(structured) => report.output = Some(structured.clone()),
                        None => report.message = Some("the tool failed and said nothing".into()),
                    }
                } else {
                    report.message = Some(text);
                }
            }
            Outcome::RpcError { code, message } => {
                report.error_code = Some(code.to_string());
                report.message = Some(format!("JSON-RPC error {code}: {message}"));
            }
            Outcome::TimedOut(after) => {
                report.exception = Some("TimeoutError".to_owned());
                report.message = Some(format!(
                    "the MCP server gave no answer to tools/call within {} s (timed out; the call was cancelled)",
                    after.as_secs()
                ));
            }
            Outcome::Dropped(why) => {
                report.exception = Some("ConnectionResetError".to_owned());
                report.message = Some(format!(
                    "the connection to the MCP server was reset while the call was out: {why}"
                ));
            }
            Outcome::Unreachable(why) => {
                report.exception = Some("ConnectionRefusedError".to_owned());
                report.message = Some(format!(
                    "connection refused: the MCP server could not be started or reached: {why}"
                ));
            }
        }
        Some(report)
    }

    /// The upstream's own words of a failure, for the model to read after backstop's line.
    pub fn upstream_text(&self) -> Option<String> {
        match self {
            Outcome::Success(_) | Outcome::Cancelled => None,
            Outcome::ToolError(result) => Some(result_text(result)).filter(|t| !t.is_empty()),
            Outcome::RpcError { code, message } => Some(format!(
                "the MCP server refused the call ({code}): {message}"
            )),
            Outcome::TimedOut(after) => Some(format!(
                "no answer within {} s; the call was cancelled",
                after.as_secs()
            )),
            Outcome::Dropped(why) | Outcome::Unreachable(why) => Some(why.clone()),
        }
    }
}

/// The text blocks of a result, joined, at most [`MESSAGE_CHARS`] characters.
fn result_text(result: &CallToolResult) -> String {
    let mut text = String::new();
    for block in &result.content {
        if let Some(part) = block.as_text() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&part.text);
        }
    }
    text.chars().take(MESSAGE_CHARS).collect()
}

/// A call as an operation: a short account of its arguments and their hash, so the same call
/// with the same arguments is one operation (`path: /srv/a.txt #3fa2c1d0`) and its attempts
/// are counted together.
pub fn operation_of(arguments: &Value) -> String {
    // serde_json's map keeps its keys sorted: the text is canonical.
    let canonical = arguments.to_string();
    let hash = text_hash(&canonical);
    let shown = [
        "command",
        "file_path",
        "path",
        "url",
        "query",
        "pattern",
        "name",
    ]
    .iter()
    .find_map(|key| {
        arguments
            .get(*key)
            .and_then(Value::as_str)
            .map(|v| format!("{key}: {}", v.chars().take(80).collect::<String>()))
    });
    match shown {
        Some(shown) => format!("{shown} #{}", &hash[..8]),
        None => format!("input #{}", &hash[..8]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;
    use serde_json::json;

    #[test]
    fn a_tools_error_text_is_the_failures_message_and_resend_safety_is_said() {
        let result = CallToolResult::error(vec![ContentBlock::text(
            "upstream said: 503 Service Unavailable",
        )]);
        let report = Outcome::ToolError(result)
            .report("fetch", "url: x #1", false, Duration::from_millis(12))
            .unwrap();
        assert_eq!(
            report.message.as_deref(),
            Some("upstream said: 503 Service Unavailable")
        );
        assert_eq!(report.idempotent, Some(false));
        assert_eq!(report.elapsed_ms, Some(12));
        assert_eq!(report.tool.as_deref(), Some("fetch"));
    }

    #[test]
    fn only_a_call_sent_and_unanswered_may_have_taken_effect() {
        assert!(Outcome::TimedOut(Duration::from_secs(1)).may_have_taken_effect());
        assert!(Outcome::Dropped("closed".into()).may_have_taken_effect());
        assert!(!Outcome::Unreachable("spawn failed".into()).may_have_taken_effect());
        assert!(
            !Outcome::RpcError {
                code: -32602,
                message: "bad".into()
            }
            .may_have_taken_effect()
        );
        assert!(
            Outcome::Success(CallToolResult::success(Vec::new()).into())
                .report("t", "o", true, Duration::ZERO)
                .is_none()
        );
    }

    #[test]
    fn the_same_arguments_in_any_key_order_are_one_operation() {
        let a = operation_of(&json!({"path": "/srv/a", "mode": "r"}));
        let b: Value = serde_json::from_str(r#"{"mode":"r","path":"/srv/a"}"#).unwrap();
        assert_eq!(a, operation_of(&b));
        assert!(a.starts_with("path: /srv/a #"));
        assert_ne!(a, operation_of(&json!({"path": "/srv/b", "mode": "r"})));
    }
}
