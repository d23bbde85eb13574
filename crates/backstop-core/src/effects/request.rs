//! A dispatch request read from JSON: every issue listed at once with its path, or a typed
//! request whose every recipient carries its case, its values and its content-derived key.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::{Map, Value};

use super::key::{batch_key, dispatch_key};
use super::scan::{placeholder, scan_value};
use crate::case::{RefusalCode, named_case, nul_characters, unknown_fields, wrong};
use crate::issue::{Issue, MAX_ID_CHARS, MAX_VALUE_CHARS, check_id, check_length, join_path};
use crate::pack::{DispatchPolicy, Pack};

/// The most recipients one dispatch request may name.
pub const MAX_RECIPIENTS: usize = 100;
/// The largest `content`, as JSON text, in bytes.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;
/// The largest `simulate` object a recipient may carry, as JSON.
pub const MAX_SIMULATE_BYTES: usize = 8 * 1024;

/// The fields a dispatch request may have.
pub const DISPATCH_FIELDS: [&str; 5] = ["case", "content", "values", "recipients", "not_before"];
/// The fields a recipient may have.
pub const RECIPIENT_FIELDS: [&str; 6] =
    ["id", "contact", "case", "values", "time_zone", "simulate"];

/// A well-formed dispatch request.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchRequest {
    /// The batch's key: its recipients' keys, sorted and hashed.
    pub batch_key: String,
    /// Not to be dispatched before this (the caller's "not due yet").
    pub not_before: Option<Timestamp>,
    /// The recipients, in the order sent.
    pub recipients: Vec<Recipient>,
}

/// One recipient of a dispatch.
#[derive(Debug, Clone, PartialEq)]
pub struct Recipient {
    /// The caller's id for it: results are correlated by it.
    pub id: String,
    /// How it is reached (a phone number, an address).
    pub contact: String,
    /// The normalized id of its case.
    pub case_id: String,
    /// Its case as the request named it, kept to name the case again when its result comes.
    pub case: Value,
    /// The time zone its quiet hours are read in.
    pub time_zone: String,
    /// The simulator's answer for it, used only when it is not dispatched live.
    pub simulate: Option<Value>,
    /// Its content-derived key.
    pub key: String,
    /// Why it may not be dispatched at all, with the refusal's code: `unsafe_value` (a name
    /// that is a placeholder, an untrusted value that holds one or an injected instruction),
    /// `unknown_time_zone`, or `duplicate_recipient`. Each issue has its path.
    pub refused: Option<(RefusalCode, Vec<Issue>)>,
    /// What the content fails of the pack's `disclose_ai` and `no_cross_disclosure`: a live
    /// dispatch is refused for it, a simulated one carries it as warnings.
    pub content_issues: Vec<Issue>,
}

/// Reads a dispatch request for `pack` (which must have a `[dispatch]` table) sent by
/// `caller`; `zone_known` says whether a time zone name exists.
///
/// # Errors
/// Every issue with its path: unknown fields, wrong types, a missing `content` or
/// `recipients`, duplicate recipient ids, a case the pack cannot name, an unknown time zone,
/// a value or id too long. A placeholder or an injected instruction in an untrusted value is
/// not an error of the request: that recipient is refused in the answer.
#[allow(
    clippy::too_many_lines,
    reason = "one read per field of a dispatch request, in the order the format lists them"
)]
pub fn parse_dispatch(
    pack: &Pack,
    caller: &str,
    body: &Value,
    zone_known: &dyn Fn(&str) -> bool,
) -> Result<DispatchRequest, Vec<Issue>> {
    let mut issues = Vec::new();
    let Some(policy) = pack.dispatch.as_ref() else {
        return Err(vec![Issue::new(
            "",
            "no_dispatch",
            format!(
                "the pack `{}` has no [dispatch] table: its cases take no side effects",
                pack.job
            ),
        )]);
    };
    let Some(top) = body.as_object() else {
        return Err(vec![wrong("", "a JSON object", body)]);
    };
    unknown_fields(top, "", &DISPATCH_FIELDS, &mut issues);
    nul_characters(body, "", &mut issues);
    let content = match top.get("content") {
        None | Some(Value::Null) => {
            issues.push(Issue::new(
                "content",
                "required",
                "`content` is required: what is sent (a task text, a message), as a string or an object",
            ));
            Value::Null
        }
        Some(c @ (Value::String(_) | Value::Object(_))) => {
            if c.to_string().len() > MAX_CONTENT_BYTES {
                issues.push(Issue::new(
                    "content",
                    "too_long",
                    format!("`content` is at most {MAX_CONTENT_BYTES} bytes as JSON"),
                ));
            }
            c.clone()
        }
        Some(other) => {
            issues.push(wrong("content", "a string or an object", other));
            Value::Null
        }
    };
    let shared = values_at(top.get("values"), "values", &mut issues);
    let not_before = match top.get("not_before") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => s.parse::<Timestamp>().map_or_else(
            |_| {
                issues.push(Issue::new(
                    "not_before",
                    "bad_time",
                    format!("`{s}` is not an RFC 3339 time such as 2026-12-02T09:00:00Z"),
                ));
                None
            },
            Some,
        ),
        Some(other) => {
            issues.push(wrong("not_before", "an RFC 3339 time", other));
            None
        }
    };
    let list = match top.get("recipients") {
        Some(Value::Array(list)) if !list.is_empty() && list.len() <= MAX_RECIPIENTS => {
            list.as_slice()
        }
        Some(Value::Array(list)) => {
            issues.push(Issue::new(
                "recipients",
                "out_of_range",
                format!("send 1 to {MAX_RECIPIENTS} recipients, not {}", list.len()),
            ));
            &[]
        }
        None | Some(Value::Null) => {
            issues.push(Issue::new(
                "recipients",
                "required",
                "`recipients` is required: a list of {\"id\", \"contact\"}",
            ));
            &[]
        }
        Some(other) => {
            issues.push(wrong("recipients", "a list of recipients", other));
            &[]
        }
    };
    // The case every recipient without its own shares: read (and its issues listed) once.
    let shared_case = top.get("case").filter(|v| !v.is_null()).map(|case| {
        let id = named_case(pack, caller, Some(case), "", &mut issues);
        (case.clone(), id)
    });
    let mut seen = BTreeSet::new();
    let mut recipients = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let path = format!("recipients[{i}]");
        let Some(fields) = entry.as_object() else {
            issues.push(wrong(&path, "an object with `id` and `contact`", entry));
            continue;
        };
        let read = RecipientRead {
            pack,
            policy,
            caller,
            shared_case: shared_case.as_ref(),
            shared: &shared,
            content: &content,
            zone_known,
        };
        if let Some(mut recipient) = read.recipient(fields, &path, &mut issues) {
            if !seen.insert(recipient.id.clone()) {
                recipient.refused = Some((
                    RefusalCode::DuplicateRecipient,
                    vec![Issue::new(
                        join_path(&path, "id"),
                        "duplicate",
                        format!(
                            "recipient id `{}` is listed twice: results are matched by it, so \
                             only its first entry is gated",
                            recipient.id
                        ),
                    )],
                ));
            }
            recipients.push(recipient);
        }
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    let checked = {
        let heard: Vec<super::disclosure::Heard<'_>> = recipients
            .iter()
            .zip(list)
            .enumerate()
            .map(|(i, (recipient, entry))| super::disclosure::Heard {
                path: format!("recipients[{i}]"),
                id: &recipient.id,
                own: entry.get("values").and_then(Value::as_object),
                case: &recipient.case,
            })
            .collect();
        super::disclosure::check(policy, &content, &shared, &heard)
    };
    for (recipient, found) in recipients.iter_mut().zip(checked) {
        recipient.content_issues = found;
    }
    Ok(DispatchRequest {
        batch_key: batch_key(recipients.iter().map(|r| r.key.as_str())),
        not_before,
        recipients,
    })
}

struct RecipientRead<'a> {
    pack: &'a Pack,
    policy: &'a DispatchPolicy,
    caller: &'a str,
    shared_case: Option<&'a (Value, Option<String>)>,
    shared: &'a Map<String, Value>,
    content: &'a Value,
    zone_known: &'a dyn Fn(&str) -> bool,
}

impl RecipientRead<'_> {
    #[allow(
        clippy::too_many_lines,
        reason = "one read per field of a recipient, in the order the format lists them"
    )]
    fn recipient(
        &self,
        fields: &Map<String, Value>,
        path: &str,
        issues: &mut Vec<Issue>,
    ) -> Option<Recipient> {
        unknown_fields(fields, path, &RECIPIENT_FIELDS, issues);
        let id = required_id(
            fields.get("id"),
            &join_path(path, "id"),
            "a recipient id",
            issues,
        );
        let contact = required_id(
            fields.get("contact"),
            &join_path(path, "contact"),
            "a contact",
            issues,
        );
        let (case_value, case_id) = match (
            fields.get("case").filter(|v| !v.is_null()),
            self.shared_case,
        ) {
            (Some(case), _) => (
                case.clone(),
                named_case(self.pack, self.caller, Some(case), path, issues),
            ),
            (None, Some((case, id))) => (case.clone(), id.clone()),
            (None, None) => {
                issues.push(Issue::new(
                    join_path(path, "case"),
                    "required",
                    "name this recipient's case, or one `case` for every recipient",
                ));
                (Value::Null, None)
            }
        };
        let own = values_at(fields.get("values"), &join_path(path, "values"), issues);
        let mut values = self.shared.clone();
        values.extend(own.clone());
        let mut zone_issue = None;
        let time_zone = match fields.get("time_zone") {
            None | Some(Value::Null) => self.policy.time_zone.clone(),
            Some(Value::String(zone)) if zone.len() <= MAX_ID_CHARS && (self.zone_known)(zone) => {
                zone.clone()
            }
            Some(Value::String(zone))
                if zone.trim().is_empty() || zone.chars().count() > MAX_ID_CHARS =>
            {
                issues.push(Issue::new(
                    join_path(path, "time_zone"),
                    "out_of_range",
                    format!("a time zone name is 1 to {MAX_ID_CHARS} characters, such as America/Chicago"),
                ));
                String::new()
            }
            Some(Value::String(zone)) => {
                let shown: String = zone.chars().take(MAX_ID_CHARS).collect();
                zone_issue = Some(Issue::new(
                    join_path(path, "time_zone"),
                    "unknown_time_zone",
                    format!(
                        "`{shown}` is not a time zone this machine knows (an IANA name such as \
                         America/Chicago)"
                    ),
                ));
                String::new()
            }
            Some(other) => {
                issues.push(wrong(
                    &join_path(path, "time_zone"),
                    "an IANA time zone name",
                    other,
                ));
                String::new()
            }
        };
        let simulate = match fields.get("simulate") {
            None | Some(Value::Null) => None,
            // It is kept with the dispatch until the simulator answers: held to a small size.
            Some(s @ Value::Object(_)) if s.to_string().len() > MAX_SIMULATE_BYTES => {
                issues.push(Issue::new(
                    join_path(path, "simulate"),
                    "too_long",
                    format!("`simulate` is at most {MAX_SIMULATE_BYTES} bytes as JSON"),
                ));
                None
            }
            Some(s @ Value::Object(_)) => Some(s.clone()),
            Some(other) => {
                issues.push(wrong(
                    &join_path(path, "simulate"),
                    "an object like a webhook's result",
                    other,
                ));
                None
            }
        };
        let (id, contact, case_id) = (id?, contact?, case_id?);
        let values = Value::Object(values);
        let key = dispatch_key(
            self.caller,
            &self.pack.job,
            &case_id,
            self.content,
            &id,
            &contact,
            &values,
        );
        let own_case = fields.get("case").is_some_and(|v| !v.is_null());
        let case_fields = Fields {
            values: case_value.get("fields").and_then(Value::as_object),
            path: if own_case {
                join_path(&join_path(path, "case"), "fields")
            } else {
                "case.fields".to_owned()
            },
        };
        let unsafe_values = self.unsafe_values(&values, &own, path, &case_fields);
        let refused = match zone_issue {
            Some(issue) => Some((RefusalCode::UnknownTimeZone, vec![issue])),
            None => {
                (!unsafe_values.is_empty()).then_some((RefusalCode::UnsafeValue, unsafe_values))
            }
        };
        Some(Recipient {
            id,
            contact,
            case_id,
            case: case_value,
            time_zone,
            simulate,
            key,
            refused,
            content_issues: Vec::new(),
        })
    }

    /// The company and sender must be real names; untrusted values must hold no placeholder
    /// and no instruction. Each issue's path is where the value was sent.
    fn unsafe_values(
        &self,
        values: &Value,
        own: &Map<String, Value>,
        path: &str,
        case_fields: &Fields<'_>,
    ) -> Vec<Issue> {
        let at = |name: &str| {
            if own.contains_key(name) {
                join_path(&join_path(path, "values"), name)
            } else {
                join_path("values", name)
            }
        };
        let mut found = Vec::new();
        let named = [Some(&self.policy.company), self.policy.sender.as_ref()];
        for name in named.into_iter().flatten() {
            match values.get(name).and_then(Value::as_str) {
                None => found.push(Issue::new(
                    at(name),
                    "missing_name",
                    format!("`{name}` must name who the dispatch speaks for: nothing is sent without a truthful name"),
                )),
                Some(text) => {
                    if let Some(why) = placeholder(text) {
                        found.push(Issue::new(at(name), "placeholder", format!("`{name}` cannot be sent: {why}")));
                    }
                }
            }
        }
        for name in &self.policy.untrusted {
            // A name is a value, or (the case's fields name it) one of the case's fields.
            let (value, at) = match values.get(name) {
                Some(value) => (value, at(name)),
                None => match case_fields.values.and_then(|f| f.get(name)) {
                    Some(value) => (value, join_path(&case_fields.path, name)),
                    None => continue,
                },
            };
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if let Some((code, why)) = scan_value(&text, &self.policy.forbidden_terms)
                && !found.iter().any(|i| i.path == at)
            {
                found.push(Issue::new(
                    at,
                    code,
                    format!("`{name}` cannot be sent: {why}"),
                ));
            }
        }
        found
    }
}

/// A recipient's case fields, with the path they came at.
struct Fields<'a> {
    values: Option<&'a Map<String, Value>>,
    path: String,
}

fn required_id(
    value: Option<&Value>,
    path: &str,
    noun: &str,
    issues: &mut Vec<Issue>,
) -> Option<String> {
    match value {
        None | Some(Value::Null) => {
            issues.push(Issue::new(path, "required", format!("{noun} is required")));
            None
        }
        Some(Value::String(s)) => check_id(s, path, noun, issues).then(|| s.clone()),
        Some(other) => {
            issues.push(wrong(path, "a string", other));
            None
        }
    }
}

/// Interpolated values: an object of strings, numbers or booleans.
fn values_at(value: Option<&Value>, path: &str, issues: &mut Vec<Issue>) -> Map<String, Value> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Map::new();
    };
    let Some(map) = value.as_object() else {
        issues.push(wrong(path, "an object of named values", value));
        return Map::new();
    };
    for (name, item) in map {
        let at = join_path(path, name);
        match item {
            Value::String(s) => {
                check_length(s, &at, MAX_VALUE_CHARS, issues);
            }
            Value::Number(_) | Value::Bool(_) => {}
            other => issues.push(wrong(&at, "a string, a number or a boolean", other)),
        }
    }
    map.clone()
}
