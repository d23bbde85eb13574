//! The JSON Schema of one pack's decision request: its question keys, each with the evidence
//! its judge takes, its related kinds, how it names a case, and every cap
//! [`crate::case::parse_request`] applies.
//!
//! The contract is one-way and tested: a request this schema accepts, `parse_request` accepts
//! (the service's `tests/parsers.rs`). Where a check cannot be said in JSON Schema exactly (a domain
//! name, what `trim` counts as blank), the schema says something stricter.

use serde_json::{Value, json};

use super::{DOMAIN_PATTERN, ID_PATTERN, NO_NUL_PATTERN, NOT_BLANK_PATTERN, id, nullable};
use crate::case::identity::MAX_CASE_ID_CHARS;
use crate::issue::{MAX_LOCATOR_CHARS, MAX_VALUE_CHARS};
use crate::pack::{IdentityMode, Judge, MatchRule, Pack};

/// A case id or identity field under `rule`.
fn subject(rule: MatchRule, description: &str) -> Value {
    match rule {
        MatchRule::Domain => json!({
            "type": "string", "minLength": 1, "maxLength": 253, "pattern": DOMAIN_PATTERN,
            "description": description,
        }),
        MatchRule::Exact | MatchRule::CaseInsensitive => json!({
            "type": "string", "minLength": 1, "maxLength": MAX_CASE_ID_CHARS,
            "pattern": ID_PATTERN, "description": description,
        }),
    }
}

/// One excerpt, as `pack` caps it; `text_required` says its text must not be blank.
fn excerpt(pack: &Pack, text_required: bool) -> Value {
    let text_pattern = if text_required {
        NOT_BLANK_PATTERN
    } else {
        NO_NUL_PATTERN
    };
    let locator = |description: &str| {
        json!({"type": "string", "minLength": 1, "maxLength": MAX_LOCATOR_CHARS,
            "pattern": NOT_BLANK_PATTERN, "description": description})
    };
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["source", "locator", "text"],
        "properties": {
            "source": locator("The document quoted."),
            "locator": locator("Where in it."),
            "text": {"type": "string", "maxLength": pack.evidence.max_excerpt_chars,
                "pattern": text_pattern, "description": "The quoted text; never stored."},
        },
    })
}

fn excerpt_list(pack: &Pack) -> Value {
    json!({"type": "array", "maxItems": pack.evidence.max_excerpts, "items": excerpt(pack, false)})
}

/// Any JSON value whose strings hold no U+0000 (`$defs/nul_free`).
pub(super) fn nul_free_value() -> Value {
    json!({"anyOf": [
        {"type": ["null", "boolean", "number"]},
        {"type": "string", "pattern": NO_NUL_PATTERN},
        {"type": "array", "items": {"$ref": "#/$defs/nul_free"}},
        {"type": "object", "additionalProperties": {"$ref": "#/$defs/nul_free"}},
    ]})
}

/// A value question's value: any JSON without U+0000, and a string at most
/// [`MAX_VALUE_CHARS`] characters.
fn answer_value() -> Value {
    json!({"allOf": [
        {"$ref": "#/$defs/nul_free"},
        {"if": {"type": "string"}, "then": {"maxLength": MAX_VALUE_CHARS}},
    ], "description": "One of the question's answers (another value leaves it open)."})
}

fn question_evidence(pack: &Pack, judge: Judge, identity_question: bool) -> Value {
    match judge {
        Judge::Quotes if identity_question => json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["excerpts"],
            "properties": {
                "excerpts": {
                    "type": "array", "minItems": 1, "maxItems": pack.evidence.max_excerpts,
                    "items": excerpt(pack, false),
                    "contains": excerpt(pack, true),
                    "description": "The case is named by these texts: at least one not blank.",
                },
                "value": {"type": "null"},
            },
        }),
        Judge::Quotes => json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "excerpts": nullable(excerpt_list(pack)),
                "value": {"type": "null"},
            },
        }),
        Judge::Value => json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "excerpts": {"type": "null"},
                "value": answer_value(),
            },
        }),
    }
}

/// How a request names its case in `pack`, and whether `case` is required.
pub(super) fn case_schema(pack: &Pack) -> (Value, bool) {
    let identity = &pack.identity;
    match identity.mode {
        IdentityMode::Id => (
            json!({"type": "object", "additionalProperties": false, "required": ["id"],
                "properties": {"id": subject(identity.match_rule, "The case id.")}}),
            true,
        ),
        IdentityMode::Issued => (
            nullable(json!({"type": "object", "additionalProperties": false,
                "properties": {"id": nullable(subject(MatchRule::Exact,
                    "The id backstop issued; leave it out on a first request."))}})),
            false,
        ),
        IdentityMode::Fields => {
            let fields: serde_json::Map<String, Value> = identity
                .fields
                .iter()
                .map(|name| {
                    (
                        name.clone(),
                        subject(identity.match_rule, "An identity field."),
                    )
                })
                .collect();
            (
                json!({"type": "object", "additionalProperties": false, "required": ["fields"],
                    "properties": {"fields": {"type": "object", "additionalProperties": false,
                        "required": identity.fields, "properties": fields}}}),
                true,
            )
        }
        IdentityMode::Content => (json!({"type": "null"}), false),
    }
}

/// A related record's facts: names to strings or numbers.
fn record_fields() -> Value {
    json!({
        "type": "object",
        "description": "Facts from the record's own system that rules may bound typed answers by.",
        "additionalProperties": {"anyOf": [
            {"type": "string", "maxLength": MAX_VALUE_CHARS, "pattern": NO_NUL_PATTERN},
            {"type": "number"},
        ]},
    })
}

/// The JSON Schema of a decision request for `pack`.
pub fn request_schema(pack: &Pack) -> Value {
    let identity_question = match pack.identity.mode {
        IdentityMode::Content => pack.identity.question.as_deref(),
        _ => None,
    };
    let questions: serde_json::Map<String, Value> = pack
        .questions
        .iter()
        .map(|q| {
            let named_by = identity_question == Some(q.key.as_str());
            (q.key.clone(), question_evidence(pack, q.judge, named_by))
        })
        .collect();
    let questions = match identity_question {
        Some(key) => json!({"type": "object", "additionalProperties": false,
            "required": [key], "properties": questions}),
        None => nullable(json!({"type": "object", "additionalProperties": false,
            "properties": questions})),
    };
    let related: serde_json::Map<String, Value> = pack
        .related
        .iter()
        .map(|r| {
            let record = json!({"type": "object", "additionalProperties": false,
            "required": ["id"], "properties": {
                "id": id("The record's id in its own system."),
                "excerpts": nullable(excerpt_list(pack)),
                "fields": nullable(record_fields()),
            }});
            (r.kind.clone(), record)
        })
        .collect();
    let (case, case_required) = case_schema(pack);
    let mut required = vec!["execution_id"];
    if case_required {
        required.push("case");
    }
    if identity_question.is_some() {
        required.push("questions");
    }
    json!({
        "title": format!("A decision request for `{}`", pack.job),
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": {
            "execution_id": id("One id per attempt; the same id on a resend."),
            "case": case,
            "questions": questions,
            "related": nullable(json!({"type": "object", "additionalProperties": false,
                "properties": related})),
            "confidence": nullable(json!({"type": "number", "minimum": 0, "maximum": 1})),
            "source_status": nullable(id("Anything but `completed` decides nothing.")),
        },
        "$defs": {"nul_free": nul_free_value()},
    })
}
