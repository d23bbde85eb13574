//! A result delivered for a dispatch (by a webhook, the simulator or the reconciliation sweep)
//! read from JSON, and turned into the decision request the case machinery judges. The
//! delivery is a notification: it is recorded first, and decided from the record.

use serde_json::{Map, Value, json};

use crate::case::{unknown_fields, wrong};
use crate::issue::{Issue, check_id};
use crate::pack::{Judge, Pack};

/// The fields a delivery may have.
pub const DELIVERY_FIELDS: [&str; 8] = [
    "event_id",
    "dispatch_key",
    "batch_key",
    "recipient",
    "status",
    "result",
    "confidence",
    "failure_code",
];

/// A well-formed delivery.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// The sender's id for this event: a second delivery with it changes nothing.
    pub event_id: String,
    /// Which dispatch it answers.
    pub target: Target,
    /// The recipient's status as the source reports it (`completed`, `no_answer`, ...).
    pub status: String,
    /// The structured result, if any (null is no evidence).
    pub result: Option<Map<String, Value>>,
    /// The source's confidence in the whole result, 0 to 1.
    pub confidence: Option<f64>,
    /// The source's failure code: stored and shown to a person, never branched on.
    pub failure_code: Option<String>,
}

/// How a delivery names the dispatch it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// By the dispatch's key.
    Key(String),
    /// By the batch's key and the recipient's id.
    Recipient {
        /// The batch.
        batch_key: String,
        /// The recipient's id.
        recipient: String,
    },
}

/// Reads a delivery.
///
/// # Errors
/// Every issue with its path: unknown fields, wrong types, no `event_id`, no `status`, no way
/// to name the dispatch, a confidence out of range.
pub fn parse_delivery(body: &Value) -> Result<Delivery, Vec<Issue>> {
    let mut issues = Vec::new();
    let Some(top) = body.as_object() else {
        return Err(vec![wrong("", "a JSON object", body)]);
    };
    unknown_fields(top, "", &DELIVERY_FIELDS, &mut issues);
    let text = |name: &str, issues: &mut Vec<Issue>| match top.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            check_id(s, name, &format!("`{name}`"), issues).then(|| s.clone())
        }
        Some(other) => {
            issues.push(wrong(name, "a string", other));
            None
        }
    };
    let event_id = text("event_id", &mut issues);
    if event_id.is_none() && !matches!(top.get("event_id"), Some(Value::String(_))) {
        issues.push(Issue::new(
            "event_id",
            "required",
            "`event_id` is required: deliveries are deduplicated by it",
        ));
    }
    let status = text("status", &mut issues);
    if status.is_none() && !matches!(top.get("status"), Some(Value::String(_))) {
        issues.push(Issue::new(
            "status",
            "required",
            "`status` is required: the recipient's status (completed, no_answer, ...)",
        ));
    }
    let key = text("dispatch_key", &mut issues);
    let batch = text("batch_key", &mut issues);
    let recipient = text("recipient", &mut issues);
    let target = match (key, batch, recipient) {
        (Some(key), _, _) => Some(Target::Key(key)),
        (None, Some(batch_key), Some(recipient)) => Some(Target::Recipient {
            batch_key,
            recipient,
        }),
        _ => {
            issues.push(Issue::new(
                "dispatch_key",
                "required",
                "name the dispatch: `dispatch_key`, or `batch_key` with `recipient`",
            ));
            None
        }
    };
    let result = match top.get("result") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => {
            check_result_strings(map, &mut issues);
            Some(map.clone())
        }
        Some(other) => {
            issues.push(wrong("result", "an object or null", other));
            None
        }
    };
    let confidence = match top.get("confidence") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(c) if (0.0..=1.0).contains(&c) => Some(c),
            _ => {
                issues.push(Issue::new(
                    "confidence",
                    "out_of_range",
                    "`confidence` is between 0 and 1",
                ));
                None
            }
        },
        Some(other) => {
            issues.push(wrong("confidence", "a number between 0 and 1", other));
            None
        }
    };
    let failure_code = match top.get("failure_code") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.chars().take(200).collect()),
        Some(n @ Value::Number(_)) => Some(n.to_string()),
        Some(other) => {
            issues.push(wrong("failure_code", "a string or a number", other));
            None
        }
    };
    if !issues.is_empty() {
        return Err(issues);
    }
    Ok(Delivery {
        event_id: event_id.unwrap_or_default(),
        target: target.expect("no issues means a target"),
        status: status.unwrap_or_default(),
        result,
        confidence,
        failure_code,
    })
}

/// What the pack asks of a result is kept: each string held to a value's cap, and no NUL.
fn check_result_strings(map: &Map<String, Value>, issues: &mut Vec<Issue>) {
    for (field, value) in map {
        if let Value::String(text) = value {
            crate::issue::check_length(
                text,
                &format!("result.{field}"),
                crate::issue::MAX_VALUE_CHARS,
                issues,
            );
        }
    }
    crate::case::nul_characters(&Value::Object(map.clone()), "result", issues);
}

/// What is kept of a result: the fields `pack` asks (its question keys) with their values, and
/// the name of any other field with no value (null). No free text a source sends reaches the
/// ledger, and a result with a field the schema does not declare stays invalid when it is
/// read back ([`decision_body`]).
pub fn kept_fields(pack: &Pack, fields: &Map<String, Value>) -> Map<String, Value> {
    fields
        .iter()
        .map(|(name, value)| {
            let kept = if pack.question(name).is_some() {
                value.clone()
            } else {
                Value::Null
            };
            (name.clone(), kept)
        })
        .collect()
}

/// The decision request a delivery makes for its dispatch's case: each result field that is
/// one of the pack's value questions becomes that question's value (a null is no evidence),
/// with the delivery's confidence and the recipient's status as the envelope. Also returns
/// the result's fields the pack's result schema does not declare (`additionalProperties:
/// false`): a result with any is invalid, and none of it is used (the request carries no
/// answers, as a result with no result does: reconciled, then a person's), since a source that
/// added a field did not fill the schema it was given.
pub fn decision_body(
    pack: &Pack,
    delivery: &Delivery,
    case: &Value,
    execution_id: &str,
) -> (Value, Vec<String>) {
    let mut questions = Map::new();
    let mut undeclared = Vec::new();
    for (name, value) in delivery.result.iter().flatten() {
        match pack.question(name) {
            Some(q) if q.judge == Judge::Value => {
                if !value.is_null() {
                    questions.insert(name.clone(), json!({"value": value}));
                }
            }
            _ => undeclared.push(name.clone()),
        }
    }
    if !undeclared.is_empty() {
        questions.clear();
    }
    let mut body = json!({
        "execution_id": execution_id,
        "questions": questions,
        "source_status": delivery.status,
    });
    if !case.is_null() {
        body["case"] = case.clone();
    }
    if let Some(c) = delivery.confidence {
        body["confidence"] = json!(c);
    }
    (body, undeclared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_issue_is_listed() {
        let issues =
            parse_delivery(&json!({"extra": 1, "result": [1], "confidence": 2})).unwrap_err();
        let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        for path in [
            "extra",
            "event_id",
            "status",
            "dispatch_key",
            "result",
            "confidence",
        ] {
            assert!(paths.contains(&path), "{path} in {paths:?}");
        }
    }

    #[test]
    fn a_result_with_an_undeclared_field_is_not_used() {
        let pack =
            crate::pack::parse_pack(include_str!("../../../../packs/po-acknowledgement.toml"))
                .unwrap();
        let result = json!({"needs_human": "no", "spoke_with": "intended_contact",
                            "received": "yes", "po_status": "on_time"});
        let delivery = |result: Value| {
            parse_delivery(&json!({"event_id": "e1", "dispatch_key": "dk_1",
                                   "status": "completed", "result": result, "confidence": 0.9}))
            .unwrap()
        };
        let (clean, undeclared) =
            decision_body(&pack, &delivery(result.clone()), &Value::Null, "x");
        assert!(undeclared.is_empty());
        assert_eq!(clean["questions"].as_object().unwrap().len(), 4);
        let mut extra = result;
        extra["notes"] = json!("they said yes");
        let (body, undeclared) = decision_body(&pack, &delivery(extra), &Value::Null, "x");
        assert_eq!(undeclared, ["notes"]);
        assert_eq!(body["questions"], json!({}), "nothing of it is used");
    }

    #[test]
    fn a_recipient_in_a_batch_names_the_dispatch() {
        let d = parse_delivery(
            &json!({"event_id": "e1", "batch_key": "db_1", "recipient": "r1",
            "status": "completed", "result": null}),
        )
        .unwrap();
        assert_eq!(
            d.target,
            Target::Recipient {
                batch_key: "db_1".into(),
                recipient: "r1".into()
            }
        );
        assert_eq!(d.result, None);
    }
}
