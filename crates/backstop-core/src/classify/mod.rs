//! Classification: a report in, a class out, decided by data-driven rules.
//!
//! ```
//! use backstop_core::classify::{classify, RuleSet};
//! use backstop_core::{Class, Report};
//!
//! let rules = RuleSet::builtin();
//! let report = Report::from_json(r#"{"http_status": 429, "headers": {"Retry-After": "2"}}"#).unwrap();
//! let now = "2026-01-01T00:00:00Z".parse().unwrap();
//! let result = classify(&rules, &report, now);
//! assert_eq!(result.class, Class::RateLimited);
//! assert_eq!(result.retry_after_ms, Some(2000));
//! ```
//!
//! | module | what it holds |
//! |---|---|
//! | `extract` | structured signals read out of message and output text, before the rules |
//! | `field` | the report fields rules test, and their strength as evidence |
//! | `matcher` | the matcher forms of a rule's `when` |
//! | `rules` | rule files: parsing, compiling, the built-in rules |
//! | `index`, `message_set` | finding the rules a report may match without visiting all |
//! | `evaluate` | which rules match a report, and which of them decides |
//! | `hints` | retry hints read from headers |
//! | `schema` | output checked against its JSON Schema |
//! | `lint` | the checks `backstop rules check` adds: shadowed rules |

mod evaluate;
pub mod extract;
pub mod field;
mod hints;
mod index;
pub mod lint;
mod literal_scan;
pub mod matcher;
mod message_set;
pub mod rules;
pub(crate) mod schema;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

pub use self::hints::retry_hint;
pub use self::rules::{DEFAULT_RULES, Rule, RuleSet, parse_rules};
pub use self::schema::{CompiledSchema, compile as compile_schema};
use crate::class::Class;
use crate::report::Report;

/// Only this many bytes of a message are read, so a 10 MB traceback costs what a short one does.
pub const TEXT_CAP: usize = 4096;

/// What backstop concluded about one failed call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Classification {
    /// The failure class.
    pub class: Class,
    /// Whether the same call may be retried as it is.
    pub retryable: bool,
    /// Whether trying another tool is legitimate.
    pub fallback_allowed: bool,
    /// The id of the rule that decided; `None` when unclassified.
    pub rule: Option<String>,
    /// What the decision rests on: matched fields, hint notes, schema failures.
    pub evidence: Vec<Evidence>,
    /// How long the server asked the caller to wait, never shortened.
    pub retry_after_ms: Option<u64>,
    /// Why, in words; always present, and the whole story when unclassified.
    pub reason: String,
}

impl Classification {
    /// Appends this classification to `out` as one line of JSON, as `classify --jsonl` writes
    /// it. The serializer is built here, in the classifier's crate, which the release profile
    /// optimizes for speed, rather than in each caller's.
    pub fn write_json_line(&self, out: &mut Vec<u8>) {
        serde_json::to_writer(&mut *out, self).expect("a classification serializes");
        out.push(b'\n');
    }
}

/// One piece of evidence: a report field, its value, and the rule or note it bears on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Evidence {
    /// A path into the report (`http_status`, `headers.retry-after`, `output/items/1`).
    pub field: String,
    /// The field an extractor read out of `field`'s text (`error_code` out of `message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extracted: Option<String>,
    /// The field's value as text (shortened when long).
    pub value: String,
    /// The rule that used this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// What was made of it, when not a rule match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The extractor that read it (see `backstop rules show`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl Evidence {
    /// A field a rule matched.
    pub fn matched(field: impl Into<String>, value: impl Into<String>, rule: &str) -> Self {
        Self {
            field: field.into(),
            extracted: None,
            value: value.into(),
            rule: Some(rule.to_owned()),
            note: None,
            by: None,
        }
    }

    /// A field and what was made of it.
    pub fn note(
        field: impl Into<String>,
        value: impl Into<String>,
        note: impl Into<String>,
    ) -> Self {
        Self {
            field: field.into(),
            extracted: None,
            value: value.into(),
            rule: None,
            note: Some(note.into()),
            by: None,
        }
    }

    /// A value an extractor read out of a text field, and the rule that used it.
    pub fn extracted(
        from: extract::Source,
        field: &str,
        value: impl Into<String>,
        by: &str,
        rule: Option<&str>,
    ) -> Self {
        Self {
            field: from.name().to_owned(),
            extracted: Some(field.to_owned()),
            value: value.into(),
            rule: rule.map(str::to_owned),
            note: None,
            by: Some(by.to_owned()),
        }
    }
}

/// Classifies a report with a rule set, at time `now` (for HTTP-date retry hints).
///
/// Deterministic: the same rules, report and `now` always give the same classification.
pub fn classify(rules: &RuleSet, report: &Report, now: Timestamp) -> Classification {
    let mut extra_evidence = Vec::new();
    let schema_valid = match (&report.output, &report.schema) {
        (Some(output), Some(schema)) => {
            schema::check(output, schema, report.compiled_schema.as_ref()).map(|(valid, found)| {
                extra_evidence.extend(found);
                valid
            })
        }
        _ => None,
    };
    let (retry_after_ms, hint_notes) = hints::retry_hint(&report.headers, now);
    extra_evidence.extend(hint_notes);
    let extracted = extract::Extracted::from_report(report);
    let mut result = evaluate::class_of(rules, report, &extracted, schema_valid);
    result.evidence.extend(extra_evidence);
    result.retry_after_ms = retry_after_ms;
    result
}

/// The first [`TEXT_CAP`] bytes of a text, cut at a character boundary.
pub fn capped(text: &str) -> &str {
    &text[..text.floor_char_boundary(TEXT_CAP)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_cuts_at_a_char_boundary() {
        let long = "é".repeat(TEXT_CAP);
        let cut = capped(&long);
        assert!(cut.len() <= TEXT_CAP && cut.len() >= TEXT_CAP - 1);
        assert_eq!(capped("short"), "short");
    }

    #[test]
    fn a_json_line_is_the_classification_and_a_newline() {
        let report = Report::from_json(r#"{"http_status": 429, "message": "slow \"down\""}"#)
            .expect("a report");
        let classification = classify(&RuleSet::builtin(), &report, jiff::Timestamp::UNIX_EPOCH);
        let mut line = b"before\n".to_vec();
        classification.write_json_line(&mut line);
        let text = String::from_utf8(line).expect("UTF-8");
        let written = text.strip_prefix("before\n").expect("appended");
        assert_eq!(written.matches('\n').count(), 1, "{written}");
        let back: Classification = serde_json::from_str(written.trim_end()).expect("JSON");
        assert_eq!(back, classification);
    }
}
