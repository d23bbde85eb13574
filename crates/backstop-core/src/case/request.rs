//! A decision request read from JSON: every issue listed at once, or a typed request.
//!
//! The request is walked by hand rather than by serde so that one pass finds every unknown
//! field, wrong type, unknown question and over-long excerpt, each with its path.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::identity::{
    content_case_id, fields_case_id, full_hash, issued_case_id, normalize_subject, opening_hash,
};
use crate::issue::{Issue, MAX_LOCATOR_CHARS, MAX_VALUE_CHARS, check_id, check_length, join_path};
use crate::judge::{Excerpt, QuestionEvidence};
use crate::pack::{IdentityMode, Judge, Pack};

/// The longest `execution_id`, in characters.
pub const MAX_EXECUTION_ID_CHARS: usize = crate::issue::MAX_ID_CHARS;

/// The fields a request may have; any other makes it malformed.
pub const REQUEST_FIELDS: [&str; 6] = [
    "execution_id",
    "case",
    "questions",
    "related",
    "confidence",
    "source_status",
];

/// A well-formed decision request.
#[derive(Debug, Clone)]
pub struct Request {
    /// Makes a resend free: the same id with the same body returns the stored result.
    pub execution_id: String,
    /// The SHA-256 of the body in canonical form (keys sorted): a different body under the
    /// same `execution_id` is a conflict.
    pub fingerprint: String,
    /// How the case is found.
    pub case: CaseLookup,
    /// The evidence, by question key.
    pub questions: BTreeMap<String, QuestionEvidence>,
    /// The related records sent, by kind.
    pub related: BTreeMap<String, RelatedRecord>,
    /// The envelope's confidence, 0 to 1.
    pub confidence: Option<f64>,
    /// The envelope's source status; anything but `completed` decides nothing.
    pub source_status: Option<String>,
}

/// How a request's case is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseLookup {
    /// A case id worked out from the request (id, fields and content modes, and issued-mode
    /// retries). `issued` says the case must already exist.
    Named {
        /// The normalized case id.
        id: String,
        /// Issued mode: only an id backstop issued to this caller names a case.
        issued: bool,
        /// Fields mode: the normalized fields, shown in the result.
        fields: Option<BTreeMap<String, String>>,
    },
    /// An issued-mode first request: reuse the caller's case opened with the same excerpts in
    /// the last 24 hours, or open a new one with `candidate` as its id.
    Open {
        /// The hash of the request's excerpt texts; `None` when it sent none, so it can only
        /// open a new case.
        opening_hash: Option<String>,
        /// The id a new case gets.
        candidate: String,
    },
}

/// A related record: its id and the excerpts that show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelatedRecord {
    /// The record's id in its own system.
    pub id: String,
    /// Quotes about it.
    pub excerpts: Vec<Excerpt>,
    /// Facts from its own system that rules may bound typed answers by (`due_date`), as text:
    /// a string as sent, a number as JSON writes it.
    pub fields: BTreeMap<String, String>,
}

impl Request {
    /// Every excerpt sent, with the question key or related kind it was sent under.
    pub fn excerpts(&self) -> impl Iterator<Item = (&str, &Excerpt)> {
        let questions = self.questions.iter().flat_map(|(key, evidence)| {
            evidence
                .excerpts
                .iter()
                .flatten()
                .map(move |e| (key.as_str(), e))
        });
        let related = self
            .related
            .iter()
            .flat_map(|(kind, record)| record.excerpts.iter().map(move |e| (kind.as_str(), e)));
        questions.chain(related)
    }
}

/// Reads a request for `pack` sent by `caller`.
///
/// # Errors
/// Every issue, each with its path (`questions.data_access.excerpts[2].text`): unknown fields,
/// unknown questions or related kinds, wrong types, a missing or empty `execution_id`, excerpts
/// too long or too many, evidence of the wrong kind, and a case the pack's identity mode
/// cannot name.
pub fn parse_request(pack: &Pack, caller: &str, body: &Value) -> Result<Request, Vec<Issue>> {
    let mut issues = Vec::new();
    let Some(top) = body.as_object() else {
        return Err(vec![Issue::new(
            "",
            "wrong_type",
            format!("a request is a JSON object, not {}", kind_of(body)),
        )]);
    };
    unknown_fields(top, "", &REQUEST_FIELDS, &mut issues);
    nul_characters(body, "", &mut issues);
    let execution_id = execution_id(top.get("execution_id"), &mut issues);
    let questions = questions(pack, top.get("questions"), &mut issues);
    let related = related(pack, top.get("related"), &mut issues);
    let confidence = confidence(top.get("confidence"), &mut issues);
    let source_status = match top.get("source_status") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            check_id(s, "source_status", "`source_status`", &mut issues).then(|| s.clone())
        }
        Some(other) => {
            issues.push(wrong(
                "source_status",
                "a non-empty string such as `completed`",
                other,
            ));
            None
        }
    };
    let case = case_lookup(
        pack,
        caller,
        top.get("case"),
        &execution_id,
        &questions,
        &mut issues,
    );
    if !issues.is_empty() {
        return Err(issues);
    }
    Ok(Request {
        execution_id,
        fingerprint: full_hash(body.to_string().as_bytes()),
        case: case.expect("no issues means the case was worked out"),
        questions,
        related,
        confidence,
        source_status,
    })
}

/// The case a side effect is for, named as a decision request names it (`{"id": ...}` or
/// `{"fields": {...}}`), with issues at `path`: its normalized id, or `None` (reported).
/// A case named by content, or an issued case not yet issued, cannot be named this way.
pub(crate) fn named_case(
    pack: &Pack,
    caller: &str,
    value: Option<&Value>,
    path: &str,
    issues: &mut Vec<Issue>,
) -> Option<String> {
    let mut found = Vec::new();
    let lookup = case_lookup(pack, caller, value, "", &BTreeMap::new(), &mut found);
    let named = match lookup {
        Some(CaseLookup::Named { id, .. }) => Some(id),
        _ if !found.is_empty() => None,
        _ => {
            found.push(Issue::new(
                "case",
                "required",
                match pack.identity.mode {
                    IdentityMode::Content => {
                        "the pack names cases by content, which a side \
                         effect cannot name: use a pack that names cases by id or fields"
                    }
                    _ => {
                        "name the case with the id a decision result gave it: \
                         `case: {\"id\": \"...\"}`"
                    }
                },
            ));
            None
        }
    };
    for issue in found {
        let at = if path.is_empty() {
            issue.path.clone()
        } else {
            join_path(path, &issue.path)
        };
        issues.push(Issue { path: at, ..issue });
    }
    named
}

fn execution_id(value: Option<&Value>, issues: &mut Vec<Issue>) -> String {
    match value {
        None | Some(Value::Null) => issues.push(Issue::new(
            "execution_id",
            "required",
            "`execution_id` is required: one id per attempt, the same id on a resend",
        )),
        Some(Value::String(id)) => {
            if check_id(id, "execution_id", "`execution_id`", issues) {
                return id.clone();
            }
        }
        Some(other) => issues.push(wrong("execution_id", "a string", other)),
    }
    String::new()
}

/// Every string holding U+0000, with its path: no ledger can store it (`PostgreSQL` refuses it
/// in text), so the request is refused whole rather than failing half-way.
pub fn nul_characters(value: &Value, path: &str, issues: &mut Vec<Issue>) {
    match value {
        Value::String(text) if text.contains('\0') => issues.push(Issue::new(
            path,
            "bad_characters",
            "a string may not hold U+0000 (NUL)",
        )),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                nul_characters(item, &format!("{path}[{i}]"), issues);
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                nul_characters(item, &join_path(path, key), issues);
            }
        }
        _ => {}
    }
}

fn confidence(value: Option<&Value>, issues: &mut Vec<Issue>) -> Option<f64> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(c) if (0.0..=1.0).contains(&c) => Some(c),
            _ => {
                issues.push(Issue::new(
                    "confidence",
                    "out_of_range",
                    format!("`confidence` is between 0 and 1, not {n}"),
                ));
                None
            }
        },
        Some(other) => {
            issues.push(wrong("confidence", "a number between 0 and 1", other));
            None
        }
    }
}

fn questions(
    pack: &Pack,
    value: Option<&Value>,
    issues: &mut Vec<Issue>,
) -> BTreeMap<String, QuestionEvidence> {
    let mut out = BTreeMap::new();
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return out;
    };
    let Some(map) = value.as_object() else {
        issues.push(wrong("questions", "an object of question keys", value));
        return out;
    };
    for (key, evidence) in map {
        let path = join_path("questions", key);
        let Some(question) = pack.question(key) else {
            let known: Vec<&str> = pack.questions.iter().map(|q| q.key.as_str()).collect();
            issues.push(Issue::new(
                path,
                "unknown_question",
                format!(
                    "the pack `{}` has no question `{key}`; its questions are: {}",
                    pack.job,
                    known.join(", ")
                ),
            ));
            continue;
        };
        let Some(fields) = evidence.as_object() else {
            issues.push(wrong(
                &path,
                "an object with `excerpts` or `value`",
                evidence,
            ));
            continue;
        };
        unknown_fields(fields, &path, &["excerpts", "value"], issues);
        let excerpts = fields.get("excerpts").filter(|v| !v.is_null());
        let value = fields.get("value").filter(|v| !v.is_null());
        match (question.judge, excerpts, value) {
            (Judge::Quotes, _, Some(_)) => issues.push(Issue::new(
                join_path(&path, "value"),
                "wrong_evidence",
                format!("`{key}` is judged from quotes: send `excerpts`, not `value`"),
            )),
            (Judge::Value, Some(_), _) => issues.push(Issue::new(
                join_path(&path, "excerpts"),
                "wrong_evidence",
                format!("`{key}` is judged from a value: send `value`, not `excerpts`"),
            )),
            _ => {}
        }
        if let Some(Value::String(text)) = value {
            check_length(text, &join_path(&path, "value"), MAX_VALUE_CHARS, issues);
        }
        let excerpts =
            excerpts.map(|v| excerpt_list(pack, v, &join_path(&path, "excerpts"), issues));
        out.insert(
            key.clone(),
            QuestionEvidence {
                excerpts,
                value: value.cloned(),
            },
        );
    }
    out
}

fn related(
    pack: &Pack,
    value: Option<&Value>,
    issues: &mut Vec<Issue>,
) -> BTreeMap<String, RelatedRecord> {
    let mut out = BTreeMap::new();
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return out;
    };
    let Some(map) = value.as_object() else {
        issues.push(wrong("related", "an object of related kinds", value));
        return out;
    };
    for (kind, record) in map {
        let path = join_path("related", kind);
        if !pack.related.iter().any(|r| &r.kind == kind) {
            let known: Vec<&str> = pack.related.iter().map(|r| r.kind.as_str()).collect();
            issues.push(Issue::new(
                path,
                "unknown_related",
                format!(
                    "the pack `{}` names no related record `{kind}`; it names: {}",
                    pack.job,
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
            continue;
        }
        let Some(fields) = record.as_object() else {
            issues.push(wrong(&path, "an object with `id` and `excerpts`", record));
            continue;
        };
        unknown_fields(fields, &path, &["id", "excerpts", "fields"], issues);
        let facts = record_fields(fields.get("fields"), &join_path(&path, "fields"), issues);
        let id = match fields.get("id") {
            Some(Value::String(id)) => {
                check_id(
                    id,
                    &join_path(&path, "id"),
                    "a related record's `id`",
                    issues,
                );
                id.clone()
            }
            None | Some(Value::Null) => {
                issues.push(Issue::new(
                    join_path(&path, "id"),
                    "required",
                    "a related record needs its `id`",
                ));
                String::new()
            }
            Some(other) => {
                issues.push(wrong(&join_path(&path, "id"), "a non-empty string", other));
                String::new()
            }
        };
        let excerpts = fields
            .get("excerpts")
            .filter(|v| !v.is_null())
            .map(|v| excerpt_list(pack, v, &join_path(&path, "excerpts"), issues))
            .unwrap_or_default();
        out.insert(
            kind.clone(),
            RelatedRecord {
                id,
                excerpts,
                fields: facts,
            },
        );
    }
    out
}

/// A related record's `fields`: names to strings (at most [`MAX_VALUE_CHARS`]) or numbers.
fn record_fields(
    value: Option<&Value>,
    path: &str,
    issues: &mut Vec<Issue>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return out;
    };
    let Some(map) = value.as_object() else {
        issues.push(wrong(
            path,
            "an object of field names to strings or numbers",
            value,
        ));
        return out;
    };
    for (name, item) in map {
        let at = join_path(path, name);
        match item {
            Value::String(text) => {
                if check_length(text, &at, MAX_VALUE_CHARS, issues) {
                    out.insert(name.clone(), text.clone());
                }
            }
            Value::Number(n) => {
                out.insert(name.clone(), n.to_string());
            }
            other => issues.push(wrong(&at, "a string or a number", other)),
        }
    }
    out
}

fn excerpt_list(pack: &Pack, value: &Value, path: &str, issues: &mut Vec<Issue>) -> Vec<Excerpt> {
    let Some(items) = value.as_array() else {
        issues.push(wrong(path, "a list of excerpts", value));
        return Vec::new();
    };
    let max = pack.evidence.max_excerpts as usize;
    if items.len() > max {
        issues.push(Issue::new(
            path,
            "too_many",
            format!(
                "at most {max} excerpts per question; {} were sent",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| excerpt(pack, item, &format!("{path}[{i}]"), issues))
        .collect()
}

fn excerpt(pack: &Pack, value: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<Excerpt> {
    let Some(fields) = value.as_object() else {
        issues.push(wrong(
            path,
            "an object with `source`, `locator` and `text`",
            value,
        ));
        return None;
    };
    unknown_fields(fields, path, &["source", "locator", "text"], issues);
    let before = issues.len();
    let mut field = |name: &str, may_be_empty: bool| -> String {
        let at = join_path(path, name);
        match fields.get(name) {
            Some(Value::String(s)) if may_be_empty || !s.trim().is_empty() => s.clone(),
            Some(Value::String(_)) => {
                issues.push(Issue::new(
                    at,
                    "empty",
                    format!("`{name}` must not be empty"),
                ));
                String::new()
            }
            None | Some(Value::Null) => {
                issues.push(Issue::new(
                    at,
                    "required",
                    format!("an excerpt needs `{name}`"),
                ));
                String::new()
            }
            Some(other) => {
                issues.push(wrong(&at, "a string", other));
                String::new()
            }
        }
    };
    let source = field("source", false);
    let locator = field("locator", false);
    let text = field("text", true);
    check_length(
        &source,
        &join_path(path, "source"),
        MAX_LOCATOR_CHARS,
        issues,
    );
    check_length(
        &locator,
        &join_path(path, "locator"),
        MAX_LOCATOR_CHARS,
        issues,
    );
    let max = pack.evidence.max_excerpt_chars as usize;
    let chars = text.chars().count();
    if chars > max {
        issues.push(Issue::new(
            join_path(path, "text"),
            "too_long",
            format!("an excerpt may have at most {max} characters; this one has {chars}"),
        ));
    }
    (issues.len() == before).then_some(Excerpt {
        source,
        locator,
        text,
    })
}

/// Works out how the case is found, by the pack's identity mode.
fn case_lookup(
    pack: &Pack,
    caller: &str,
    value: Option<&Value>,
    execution_id: &str,
    questions: &BTreeMap<String, QuestionEvidence>,
    issues: &mut Vec<Issue>,
) -> Option<CaseLookup> {
    let identity = &pack.identity;
    let case = match value.filter(|v| !v.is_null()) {
        None => None,
        Some(Value::Object(map)) => Some(map),
        Some(other) => {
            issues.push(wrong("case", "an object such as {\"id\": \"...\"}", other));
            return None;
        }
    };
    let allowed: &[&str] = match identity.mode {
        IdentityMode::Id | IdentityMode::Issued => &["id"],
        IdentityMode::Fields => &["fields"],
        IdentityMode::Content => &[],
    };
    if let Some(map) = case {
        for key in map.keys().filter(|k| !allowed.contains(&k.as_str())) {
            let why = match identity.mode {
                IdentityMode::Content => {
                    "the pack names cases by content: leave `case` out".to_owned()
                }
                _ => format!("expected only `{}` here", allowed.join("`, `")),
            };
            issues.push(Issue::new(join_path("case", key), "unknown_field", why));
        }
    }
    let id_value = case.and_then(|m| m.get("id")).filter(|v| !v.is_null());
    match identity.mode {
        IdentityMode::Id => {
            let Some(id) = id_value else {
                issues.push(Issue::new(
                    "case.id",
                    "required",
                    "the pack names cases by id: send `case: {\"id\": \"...\"}`",
                ));
                return None;
            };
            named_id(id, identity.match_rule, false, issues)
        }
        IdentityMode::Issued => {
            if let Some(id) = id_value {
                return named_id(id, crate::pack::MatchRule::Exact, true, issues);
            }
            let texts: Vec<(&str, &str)> = questions
                .iter()
                .flat_map(|(key, evidence)| {
                    evidence
                        .excerpts
                        .iter()
                        .flatten()
                        .map(move |e| (key.as_str(), e.text.as_str()))
                })
                .filter(|(_, text)| !text.trim().is_empty())
                .collect();
            Some(CaseLookup::Open {
                opening_hash: (!texts.is_empty())
                    .then(|| opening_hash(texts.into_iter(), identity.reuse_folded)),
                candidate: issued_case_id(caller, &pack.job, execution_id),
            })
        }
        IdentityMode::Fields => fields_lookup(pack, case.and_then(|m| m.get("fields")), issues),
        IdentityMode::Content => {
            let key = identity.question.as_deref().unwrap_or_default();
            let texts: Vec<&str> = questions
                .get(key)
                .and_then(|e| e.excerpts.as_ref())
                .map(|list| list.iter().map(|e| e.text.as_str()).collect())
                .unwrap_or_default();
            if texts.iter().all(|t| t.trim().is_empty()) {
                issues.push(Issue::new(
                    join_path(&join_path("questions", key), "excerpts"),
                    "required",
                    format!("the pack names cases by the text of `{key}`: send its excerpts"),
                ));
                return None;
            }
            Some(CaseLookup::Named {
                id: content_case_id(texts.into_iter()),
                issued: false,
                fields: None,
            })
        }
    }
}

fn named_id(
    id: &Value,
    rule: crate::pack::MatchRule,
    must_exist: bool,
    issues: &mut Vec<Issue>,
) -> Option<CaseLookup> {
    let Some(text) = id.as_str() else {
        issues.push(wrong("case.id", "a string", id));
        return None;
    };
    match normalize_subject(text, rule) {
        Ok(id) => Some(CaseLookup::Named {
            id,
            issued: must_exist,
            fields: None,
        }),
        Err(why) => {
            issues.push(Issue::new("case.id", "bad_case_id", why));
            None
        }
    }
}

fn fields_lookup(
    pack: &Pack,
    value: Option<&Value>,
    issues: &mut Vec<Issue>,
) -> Option<CaseLookup> {
    let names = &pack.identity.fields;
    let Some(value) = value.filter(|v| !v.is_null()) else {
        issues.push(Issue::new(
            "case.fields",
            "required",
            format!(
                "the pack names cases by fields: send `case: {{\"fields\": {{...}}}}` with {}",
                names.join(", ")
            ),
        ));
        return None;
    };
    let Some(map) = value.as_object() else {
        issues.push(wrong("case.fields", "an object of field values", value));
        return None;
    };
    let before = issues.len();
    let mut fields = BTreeMap::new();
    for key in map.keys().filter(|k| !names.contains(k)) {
        issues.push(Issue::new(
            join_path("case.fields", key),
            "unknown_field",
            format!("the case's fields are: {}", names.join(", ")),
        ));
    }
    for name in names {
        let path = join_path("case.fields", name);
        match map.get(name) {
            Some(Value::String(text)) => match normalize_subject(text, pack.identity.match_rule) {
                Ok(value) => {
                    fields.insert(name.clone(), value);
                }
                Err(why) => issues.push(Issue::new(path, "bad_case_id", why)),
            },
            None | Some(Value::Null) => issues.push(Issue::new(
                path,
                "required",
                format!("the case field `{name}` is required"),
            )),
            Some(other) => issues.push(wrong(&path, "a string", other)),
        }
    }
    (issues.len() == before).then(|| CaseLookup::Named {
        id: fields_case_id(&fields),
        issued: false,
        fields: Some(fields),
    })
}

/// One `unknown_field` issue per field of `map` not in `known`.
pub(crate) fn unknown_fields(
    map: &Map<String, Value>,
    path: &str,
    known: &[&str],
    issues: &mut Vec<Issue>,
) {
    crate::input::unknown_keys(map.keys(), path, known, crate::input::Format::Json, issues);
}

pub(crate) fn wrong(path: &str, expected: &str, found: &Value) -> Issue {
    Issue::new(
        path,
        "wrong_type",
        format!("expected {expected}, found {}", kind_of(found)),
    )
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
