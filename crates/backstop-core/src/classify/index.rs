//! Finding the rules a report may match without visiting every rule.
//!
//! A rule is reached one of three ways: through its message pattern (see `message_set`),
//! through an exact value of its strongest exactly-matched field (an error code, a SQLSTATE,
//! an HTTP status...), or, failing both, through the group of rules that require the same
//! fields. The candidates are then checked in full, in rule order.

use std::collections::HashMap;

use super::field::{Field, FieldSet};
use super::matcher::{NumberMatch, TextMatch};
use super::rules::Conditions;

/// The fields that can anchor a rule, strongest first.
const ANCHORS: [Field; 8] = [
    Field::ErrorCode,
    Field::Sqlstate,
    Field::Errno,
    Field::GrpcCode,
    Field::Exception,
    Field::HttpStatus,
    Field::ExitCode,
    Field::Signal,
];

/// A value a rule is filed under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Text(String),
    Number(i64),
}

/// The rules filed by exact value, per field, and the rest grouped by required fields.
#[derive(Debug, Clone, Default)]
pub(super) struct RuleIndex {
    by_value: HashMap<Field, HashMap<Key, Vec<usize>>>,
    groups: Vec<(FieldSet, Vec<usize>)>,
}

/// What the index needs to know of a report: its values, as rules compare them.
pub(super) trait IndexedValues {
    /// The fields the report has.
    fn present(&self) -> FieldSet;
    /// A text field's value, lower-cased (the canonical name for gRPC codes and signals).
    fn text(&self, field: Field) -> Option<&str>;
    /// A number field's value.
    fn number(&self, field: Field) -> Option<i64>;
}

impl RuleIndex {
    /// Files a rule (one without a message condition) under its anchor, or in its group.
    pub(super) fn add(&mut self, index: usize, when: &Conditions, required: FieldSet) {
        for field in ANCHORS {
            if let Some(keys) = anchor_keys(when, field) {
                let by_key = self.by_value.entry(field).or_default();
                for key in keys {
                    let list = by_key.entry(key).or_default();
                    if list.last() != Some(&index) {
                        list.push(index);
                    }
                }
                return;
            }
        }
        match self
            .groups
            .iter_mut()
            .find(|(fields, _)| *fields == required)
        {
            Some((_, members)) => members.push(index),
            None => self.groups.push((required, vec![index])),
        }
    }

    /// Appends the rules a report may match (unordered).
    pub(super) fn candidates(&self, report: &impl IndexedValues, out: &mut Vec<usize>) {
        let present = report.present();
        for (required, members) in &self.groups {
            if present.is_superset(*required) {
                out.extend_from_slice(members);
            }
        }
        for (field, by_key) in &self.by_value {
            let key = match (report.text(*field), report.number(*field)) {
                (Some(text), _) if *field == Field::Exception => {
                    Key::Text(last_segment(text).to_owned())
                }
                (Some(text), _) => Key::Text(text.to_owned()),
                (None, Some(n)) => Key::Number(n),
                (None, None) => continue,
            };
            if let Some(rules) = by_key.get(&key) {
                out.extend_from_slice(rules);
            }
        }
    }
}

/// The exact values a rule's matcher on `field` accepts, if it accepts only a list of them.
fn anchor_keys(when: &Conditions, field: Field) -> Option<Vec<Key>> {
    let texts = |m: &Option<TextMatch>| match m {
        Some(TextMatch::OneOf(values)) => {
            Some(values.iter().map(|v| Key::Text(v.clone())).collect())
        }
        _ => None,
    };
    let numbers = |m: &Option<NumberMatch>| match m {
        Some(NumberMatch::OneOf(values)) => Some(values.iter().map(|v| Key::Number(*v)).collect()),
        _ => None,
    };
    match field {
        Field::ErrorCode => texts(&when.error_code),
        Field::Sqlstate => texts(&when.sqlstate),
        Field::Errno => texts(&when.errno),
        Field::Exception => match &when.exception {
            Some(TextMatch::OneOf(names)) => Some(
                names
                    .iter()
                    .map(|n| Key::Text(last_segment(n).to_owned()))
                    .collect(),
            ),
            _ => None,
        },
        Field::GrpcCode => when.grpc_code.as_ref().map(|codes| {
            codes
                .iter()
                .map(|c| Key::Text(c.to_ascii_lowercase()))
                .collect()
        }),
        Field::Signal => when.signal.as_ref().map(|names| {
            names
                .iter()
                .map(|n| Key::Text(n.to_ascii_lowercase()))
                .collect()
        }),
        Field::HttpStatus => numbers(&when.http_status),
        Field::ExitCode => numbers(&when.exit_code),
        _ => None,
    }
}

/// The last part of a qualified name (`requests.exceptions.Timeout` -> `Timeout`).
pub(super) fn last_segment(name: &str) -> &str {
    name.rsplit(['.', ':', '$']).next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_segments() {
        assert_eq!(last_segment("requests.exceptions.timeout"), "timeout");
        assert_eq!(last_segment("httpx::readtimeout"), "readtimeout");
        assert_eq!(last_segment("outer$inner"), "inner");
        assert_eq!(last_segment("plain"), "plain");
    }
}
