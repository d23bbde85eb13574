//! The JSON Schemas of one pack's dispatch request and of a delivered result: what they
//! accept, [`crate::effects::parse_dispatch`] and [`crate::effects::parse_delivery`] accept.
//! What a schema cannot say (a time zone this machine knows, recipient ids unique in the
//! list, a placeholder in a value) is answered per recipient in the dispatch's answers, never
//! by refusing the request.

use serde_json::{Value, json};

use super::request::case_schema;
use super::{ID_PATTERN, NO_NUL_PATTERN, NOT_BLANK_PATTERN, id, nullable};
use crate::effects::MAX_RECIPIENTS;
use crate::issue::MAX_VALUE_CHARS;
use crate::pack::{IdentityMode, Pack};

/// An RFC 3339 time as the parser reads it.
const TIME_PATTERN: &str = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$";

fn values() -> Value {
    json!({"type": "object", "description": "Values interpolated into what is sent, by name.",
    "additionalProperties": {"anyOf": [
        {"type": "string", "maxLength": MAX_VALUE_CHARS, "pattern": NO_NUL_PATTERN},
        {"type": ["number", "boolean"]},
    ]}})
}

/// How a dispatch names its case: as a decision request does, and an issued case by the id
/// it was issued.
fn case(pack: &Pack) -> Value {
    match pack.identity.mode {
        IdentityMode::Issued => json!({"type": "object", "additionalProperties": false,
            "required": ["id"], "properties": {"id": {"type": "string", "minLength": 1,
            "maxLength": crate::case::identity::MAX_CASE_ID_CHARS, "pattern": ID_PATTERN}}}),
        _ => case_schema(pack).0,
    }
}

/// The JSON Schema of a dispatch request for `pack`.
pub fn dispatch_schema(pack: &Pack) -> Value {
    let recipient = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "contact"],
        "properties": {
            "id": id("The recipient's id: results are matched to it."),
            "contact": id("How the recipient is reached (a phone number, an address)."),
            "case": nullable(case(pack)),
            "values": nullable(values()),
            "time_zone": nullable(json!({"type": "string", "minLength": 1, "maxLength": 200, "pattern": NOT_BLANK_PATTERN,
                "description": "An IANA time zone; quiet hours are read in it. An unknown one refuses this recipient."})),
            "simulate": nullable(json!({"type": "object", "additionalProperties": {"$ref": "#/$defs/nul_free"},
                "description": "The simulator's answer (status, result, confidence), used when not live."})),
        },
    });
    let mut with_case = recipient.clone();
    with_case["required"] = json!(["id", "contact", "case"]);
    with_case["properties"]["case"] = case(pack);
    json!({
        "title": format!("A dispatch request for `{}`", pack.job),
        "type": "object",
        "additionalProperties": false,
        "required": ["content", "recipients"],
        "properties": {
            "case": nullable(case(pack)),
            "content": {"anyOf": [
                {"type": "string", "pattern": NO_NUL_PATTERN},
                {"type": "object", "additionalProperties": {"$ref": "#/$defs/nul_free"}},
            ], "description": "What is sent (a task text, a message): part of the key, never scanned. At most 64 KiB as JSON."},
            "values": nullable(values()),
            "recipients": {"type": "array", "minItems": 1, "maxItems": MAX_RECIPIENTS, "items": recipient},
            "not_before": nullable(json!({"type": "string", "format": "date-time", "pattern": TIME_PATTERN})),
        },
        "anyOf": [
            {"required": ["case"], "properties": {"case": case(pack)}},
            {"properties": {"recipients": {"items": with_case}}},
        ],
        "$defs": {"nul_free": super::request::nul_free_value()},
    })
}

/// The JSON Schema of a delivered result (a webhook's body).
pub fn delivery_schema() -> Value {
    json!({
        "title": "A result delivered for a dispatch",
        "type": "object",
        "additionalProperties": false,
        "required": ["event_id", "status"],
        "properties": {
            "event_id": id("The sender's id for this event: a second delivery with it changes nothing."),
            "dispatch_key": nullable(id("The dispatch's key.")),
            "batch_key": nullable(id("The batch's key (with `recipient`).")),
            "recipient": nullable(id("The recipient's id (with `batch_key`).")),
            "status": id("The recipient's status: completed, no_answer, failed, in_progress, ..."),
            "result": nullable(json!({"type": "object", "additionalProperties": {"$ref": "#/$defs/nul_free"}})),
            "confidence": nullable(json!({"type": "number", "minimum": 0, "maximum": 1})),
            "failure_code": nullable(json!({"type": ["string", "number"], "pattern": NO_NUL_PATTERN})),
        },
        "anyOf": [
            {"required": ["dispatch_key"], "properties": {"dispatch_key": id("")}},
            {"required": ["batch_key", "recipient"], "properties": {"batch_key": id(""), "recipient": id("")}},
        ],
        "$defs": {"nul_free": super::request::nul_free_value()},
    })
}
