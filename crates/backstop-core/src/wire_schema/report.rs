//! The JSON Schema of a failure report, as [`crate::Report::from_json`] takes it.

use serde_json::{Value, json};

use super::{NO_CONTROL_PATTERN, NOT_BLANK_PATTERN, TRIMMED};
use crate::codes::{MAX_SIGNAL, grpc_names, signal_name};
use crate::issue::{MAX_HEADER_VALUE_CHARS, MAX_ID_CHARS, MAX_LOCATOR_CHARS};

/// An HTTP header name as a report keeps it: a lower-case token.
const HEADER_NAME_PATTERN: &str = r"^[a-z0-9!#$%&'*+.^_`|~-]+$";

/// Text of at most `max` characters.
fn short_text(max: usize, description: &str) -> Value {
    json!({"type": ["string", "null"], "maxLength": max, "description": description})
}

/// Every JSON type but `null`: a field that is set.
const SET: [&str; 6] = ["boolean", "number", "string", "array", "object", "integer"];

/// The fields that are observations: a report needs one, set and not blank.
fn observed() -> Value {
    let set = |field: &str| json!({"required": [field], "properties": {field: {"type": SET}}});
    let words = |field: &str| {
        json!({"required": [field], "properties": {field: {"anyOf": [
            {"type": "string", "pattern": NOT_BLANK_PATTERN}, {"type": "number"}]}}})
    };
    let mut any =
        vec![json!({"required": ["headers"], "properties": {"headers": {"minProperties": 1}}})];
    for field in [
        "http_status",
        "grpc_code",
        "exit_code",
        "signal",
        "output",
        "schema",
        "side_effects",
        "elapsed_ms",
    ] {
        any.push(set(field));
    }
    for field in ["errno", "sqlstate", "exception", "error_code", "message"] {
        any.push(words(field));
    }
    Value::Array(any)
}

/// The JSON Schema of a report. Two checks it cannot state: `side_effects.done` at most
/// `side_effects.total`, and `schema` being a JSON Schema the classifier can compile.
pub fn report_schema() -> Value {
    let signals: Vec<String> = (1..=MAX_SIGNAL).filter_map(signal_name).collect();
    json!({
        "title": "A failure report",
        "description": "What an agent saw of one failed call; at least one observation (a status, a code, a message, ...). `side_effects.done` is at most `side_effects.total`, and `schema` is a JSON Schema.",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "tool": {"type": ["string", "null"], "maxLength": MAX_ID_CHARS,
                "pattern": NO_CONTROL_PATTERN,
                "description": "The dependency that was called; no control characters."},
            "operation": short_text(MAX_LOCATOR_CHARS, "The call made on the tool."),
            "http_status": {"type": ["integer", "null"], "minimum": 100, "maximum": 599},
            "headers": {
                "type": "object",
                "description": "Response headers, lower-case names; a value is a string or a number.",
                "propertyNames": {"maxLength": MAX_ID_CHARS, "pattern": HEADER_NAME_PATTERN},
                "additionalProperties": {"anyOf": [
                    {"type": "string", "maxLength": MAX_HEADER_VALUE_CHARS},
                    {"type": "number"},
                ]},
            },
            "grpc_code": {"anyOf": [
                {"enum": grpc_names()},
                {"type": "integer", "minimum": 0, "maximum": grpc_names().len() - 1},
                {"type": "null"},
            ]},
            "exit_code": {"type": ["integer", "null"], "minimum": i64::MIN, "maximum": i64::MAX},
            "signal": {"anyOf": [
                {"enum": signals},
                {"type": "integer", "minimum": 1, "maximum": MAX_SIGNAL},
                {"type": "null"},
            ]},
            "errno": {"type": ["string", "null"],
                "pattern": format!("^[{TRIMMED}]*([Ee][A-Za-z0-9_]+[{TRIMMED}]*)?$"),
                "description": "A POSIX errno name (`ECONNRESET`); blank is the same as none."},
            "sqlstate": {"type": ["string", "null"],
                "pattern": format!("^[{TRIMMED}]*([A-Za-z0-9]{{5}}[{TRIMMED}]*)?$"),
                "description": "A five-character SQLSTATE; blank is the same as none."},
            "exception": short_text(MAX_ID_CHARS, "An exception type name."),
            "error_code": {"anyOf": [
                {"type": "string", "maxLength": MAX_ID_CHARS},
                {"type": "number"},
                {"type": "null"},
            ]},
            "message": {"type": ["string", "null"]},
            "output": {"description": "The tool's output, checked against `schema`."},
            "schema": {"type": ["object", "boolean", "null"],
                "description": "A JSON Schema the output should meet; needs `output`."},
            "side_effects": {"anyOf": [
                {"type": "object", "additionalProperties": false, "required": ["done", "total"],
                    "properties": {
                        "done": {"type": "integer", "minimum": 0, "maximum": u64::MAX},
                        "total": {"type": "integer", "minimum": 1, "maximum": u64::MAX},
                    }},
                {"type": "null"},
            ]},
            "elapsed_ms": {"type": ["integer", "null"], "minimum": 0, "maximum": u64::MAX},
            "idempotent": {"type": ["boolean", "null"],
                "description": "Whether sending the call again cannot do its effect twice; unsaid, inferred from the key, the tool's setting and the HTTP method."},
            "idempotency_key": short_text(MAX_ID_CHARS,
                "The idempotency key the call was sent with; a resend must use the same one."),
        },
        "anyOf": observed(),
        "if": {"required": ["schema"], "properties": {"schema": {"type": SET}}},
        "then": {"required": ["output"], "properties": {"output": {"type": SET}}},
    })
}
