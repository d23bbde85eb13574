//! What the conformance scenarios share: packs, requests, and one attempt run end to end.

use std::path::PathBuf;
use std::sync::Arc;

use backstop_core::case::parse_request;
use backstop_core::pack::{Pack, parse_pack};
use backstop_store::{Reply, Store};
use jiff::Timestamp;
use serde_json::Value;

/// A pack from the repository's `packs/` folder.
pub fn shipped(name: &str) -> Arc<Pack> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../packs")
        .join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    Arc::new(parse_pack(&text).unwrap_or_else(|issues| panic!("{issues:?}")))
}

/// `packs/vendor-risk.toml` with its `[attempts]` table's `max` changed.
pub fn vendor_risk_max(max: u32) -> Arc<Pack> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../packs/vendor-risk.toml");
    let text =
        std::fs::read_to_string(&path)
            .unwrap()
            .replacen("max = 3", &format!("max = {max}"), 1);
    Arc::new(parse_pack(&text).unwrap_or_else(|issues| panic!("{issues:?}")))
}

/// A time `minutes` after a fixed start.
pub fn at(minutes: i64) -> Timestamp {
    let start: Timestamp = "2026-11-01T09:00:00Z".parse().unwrap();
    start + jiff::SignedDuration::from_mins(minutes)
}

/// What one attempt came to, as JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A counted result.
    Result(Value),
    /// A resend's stored result.
    Replayed(Value),
    /// A refusal (`{"error": ...}`), including malformed requests.
    Refused(Value),
}

impl Answer {
    /// The result (counted or replayed); panics on a refusal.
    pub fn result(&self) -> &Value {
        match self {
            Answer::Result(v) | Answer::Replayed(v) => v,
            Answer::Refused(v) => panic!("expected a result, got {v}"),
        }
    }

    /// The refusal's code; panics on a result.
    pub fn refused(&self) -> &str {
        match self {
            Answer::Refused(v) => v["error"]["code"].as_str().unwrap(),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// The refusal's JSON; panics on a result.
    pub fn refusal(&self) -> &Value {
        match self {
            Answer::Refused(v) => v,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}

/// Reads `body` as the shell does, then runs it on `store`.
pub fn ask(
    store: &dyn Store,
    pack: &Arc<Pack>,
    caller: &str,
    body: &Value,
    now: Timestamp,
) -> Answer {
    let request = match parse_request(pack, caller, body) {
        Ok(request) => request,
        Err(issues) => {
            let refusal = backstop_core::case::Refusal::malformed(issues);
            return Answer::Refused(serde_json::to_value(refusal).unwrap());
        }
    };
    match store
        .decide(Arc::clone(pack), caller, request, now)
        .unwrap()
    {
        Reply::Counted(result) => Answer::Result(serde_json::to_value(*result).unwrap()),
        Reply::Replayed(text) => Answer::Replayed(serde_json::from_str(&text).unwrap()),
        Reply::Refused(refusal) => Answer::Refused(serde_json::to_value(refusal).unwrap()),
    }
}

/// A vendor-risk request: `data_access` excerpts as (source, locator, text).
pub fn vendor(execution: &str, case: &str, excerpts: &[(&str, &str, &str)]) -> Value {
    let list: Vec<Value> = excerpts
        .iter()
        .map(|(s, l, t)| serde_json::json!({"source": s, "locator": l, "text": t}))
        .collect();
    serde_json::json!({
        "execution_id": execution,
        "case": {"id": case},
        "questions": {"data_access": {"excerpts": list}},
        "related": {"counterparty": {"id": "acct-991"}},
    })
}

/// A company-classification request: `business_model` excerpts, with a case id or none.
pub fn company(execution: &str, case: Option<&str>, texts: &[&str]) -> Value {
    let list: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"source": format!("site-{i}"), "locator": "/about", "text": t}))
        .collect();
    let mut body = serde_json::json!({
        "execution_id": execution,
        "questions": {"business_model": {"excerpts": list}},
    });
    if let Some(id) = case {
        body["case"] = serde_json::json!({"id": id});
    }
    body
}

/// `attempts` of a result as (used, remaining, next).
pub fn attempts(result: &Value) -> (u64, u64, Value) {
    let a = &result["attempts"];
    (
        a["used"].as_u64().unwrap(),
        a["remaining"].as_u64().unwrap(),
        a["next"].clone(),
    )
}

/// A hedged excerpt: never used.
pub const HEDGED: (&str, &str, &str) = ("dpa.pdf", "§4", "I think they may process personal data.");
/// An excerpt that closes `data_access` as `none`.
pub const NO_DATA: (&str, &str, &str) = (
    "dpa.pdf",
    "§4.2",
    "The vendor does not process any customer data.",
);
/// An excerpt that closes `data_access` as `pii`.
pub const PII: (&str, &str, &str) = (
    "dpa.pdf",
    "§4.3",
    "The processor handles personal data of customers.",
);
/// An excerpt that supports no answer, from a new place each time `locator` changes.
pub fn vague(locator: &'static str) -> (&'static str, &'static str, &'static str) {
    ("questionnaire.pdf", locator, "Security is important to us.")
}

/// A vendor-risk request that also closes `subprocessors` as `none`.
pub fn vendor_with_subprocessors(
    execution: &str,
    case: &str,
    excerpts: &[(&str, &str, &str)],
) -> Value {
    let mut body = vendor(execution, case, excerpts);
    body["questions"]["subprocessors"] = serde_json::json!({"excerpts": [
        {"source": "dpa.pdf", "locator": "annex B", "text": "The vendor uses no subprocessors."}
    ]});
    body
}
