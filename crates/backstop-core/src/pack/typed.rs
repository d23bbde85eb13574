//! Typed value questions (`type = "date"` or `"number"`) and the bounds rules put on them:
//! `ship_date = { at_least = "now-24h", at_most = "promised_date+48h" }`, `qty = { at_most =
//! "ordered" }`. A bound's anchor is `now` (dates), another typed question's answer, or a
//! literal; an offset may follow (`+48h` for dates, `+2` for numbers).

use jiff::{SignedDuration, Timestamp};
use toml::Value;

use crate::issue::Issue;

/// What a value question's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValueType {
    /// One of the question's answers (the default).
    #[default]
    Answer,
    /// A date (`2026-12-03`) or a time (`2026-12-03T15:00:00Z`); closes as the RFC 3339 time.
    Date,
    /// A JSON number.
    Number,
}

/// One side of a range a typed answer must fall in.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    /// Which side.
    pub op: BoundOp,
    /// What the answer is compared with.
    pub anchor: Anchor,
    /// Added to the anchor.
    pub offset: Offset,
}

/// Which side of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundOp {
    /// The answer is at least the reference.
    AtLeast,
    /// The answer is at most the reference.
    AtMost,
}

/// What a bound compares with.
#[derive(Debug, Clone, PartialEq)]
pub enum Anchor {
    /// The time of the request.
    Now,
    /// Another typed question's answer, or a related record's field
    /// (`related.<kind>.<field>`); the bound fails while it is missing.
    Question(String),
    /// A fixed time.
    Date(Timestamp),
    /// A fixed number.
    Number(f64),
}

/// What is added to the anchor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Offset {
    /// Nothing.
    None,
    /// A duration (dates).
    Duration(SignedDuration),
    /// A number (numbers).
    Number(f64),
}

/// Reads `type`: `date` or `number`; absent is an answer from the list.
pub(super) fn parse_value_type(
    text: Option<&str>,
    path: &str,
    issues: &mut Vec<Issue>,
) -> ValueType {
    match text {
        None => ValueType::Answer,
        Some("date") => ValueType::Date,
        Some("number") => ValueType::Number,
        Some(other) => {
            issues.push(Issue::new(
                path,
                "unknown_value",
                format!("`{other}` is not a value type; expected date or number"),
            ));
            ValueType::Answer
        }
    }
}

/// Reads `at_least` and `at_most` of a rule's condition table.
pub(super) fn parse_bounds(table: &toml::Table, path: &str, issues: &mut Vec<Issue>) -> Vec<Bound> {
    let mut bounds = Vec::new();
    for (key, op) in [("at_least", BoundOp::AtLeast), ("at_most", BoundOp::AtMost)] {
        let Some(value) = table.get(key) else {
            continue;
        };
        let at = format!("{path}.{key}");
        #[allow(clippy::cast_precision_loss)]
        let parsed = match value {
            Value::Integer(n) => Some((Anchor::Number(*n as f64), Offset::None)),
            Value::Float(x) if x.is_finite() => Some((Anchor::Number(*x), Offset::None)),
            Value::String(text) => parse_reference(text),
            _ => None,
        };
        match parsed {
            Some((anchor, offset)) => bounds.push(Bound { op, anchor, offset }),
            None => issues.push(Issue::new(
                at,
                "bad_bound",
                format!(
                    "`{value}` is not a bound; expected a number, a date (2026-12-31), `now` or a \
                     question's key, optionally with an offset (`now+48h`, `ordered-2`)"
                ),
            )),
        }
    }
    bounds
}

/// `now`, `now+48h`, `promised_date-24h`, `ordered+2`, `2026-12-31`, `2026-12-31T12:00:00Z`.
fn parse_reference(text: &str) -> Option<(Anchor, Offset)> {
    let text = text.trim();
    if text.starts_with(|c: char| c.is_ascii_digit()) {
        return parse_time(text).map(|t| (Anchor::Date(t), Offset::None));
    }
    let split = text.find(['+', '-']).unwrap_or(text.len());
    let (name, rest) = text.split_at(split);
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if !name_ok {
        return None;
    }
    let anchor = if name == "now" {
        Anchor::Now
    } else {
        Anchor::Question(name.to_owned())
    };
    if rest.is_empty() {
        return Some((anchor, Offset::None));
    }
    let negative = rest.starts_with('-');
    let amount = &rest[1..];
    let offset = if let Ok(n) = amount.parse::<f64>() {
        Offset::Number(if negative { -n } else { n })
    } else {
        let duration: SignedDuration = amount.parse().ok()?;
        Offset::Duration(if negative { -duration } else { duration })
    };
    Some((anchor, offset))
}

/// A time from RFC 3339, or a date (midnight UTC).
pub fn parse_time(text: &str) -> Option<Timestamp> {
    if let Ok(time) = text.parse::<Timestamp>() {
        return Some(time);
    }
    let date: jiff::civil::Date = text.parse().ok()?;
    date.to_zoned_datetime(jiff::tz::TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp())
}

/// The answer a typed value closes its question with, or `None` when it is not one.
pub fn typed_answer(kind: ValueType, value: &serde_json::Value) -> Option<String> {
    match kind {
        ValueType::Answer => None,
        ValueType::Date => parse_time(value.as_str()?).map(|t| t.to_string()),
        ValueType::Number => value
            .as_f64()
            .filter(|n| n.is_finite())
            .map(|_| value.to_string()),
    }
}

/// Whether `answer` (a typed question's canonical answer) falls within every bound; a bound
/// whose anchor question is open does not hold.
pub fn bounds_hold(
    kind: ValueType,
    bounds: &[Bound],
    answer: &str,
    known: &dyn Fn(&str) -> Option<String>,
    now: Timestamp,
) -> bool {
    bounds.iter().all(|bound| {
        let within = |ordering: std::cmp::Ordering| match bound.op {
            BoundOp::AtLeast => ordering.is_ge(),
            BoundOp::AtMost => ordering.is_le(),
        };
        match kind {
            ValueType::Date => {
                let (Some(value), Some(reference)) =
                    (parse_time(answer), date_reference(bound, known, now))
                else {
                    return false;
                };
                within(value.cmp(&reference))
            }
            ValueType::Number => {
                let (Ok(value), Some(reference)) =
                    (answer.parse::<f64>(), number_reference(bound, known))
                else {
                    return false;
                };
                value.partial_cmp(&reference).is_some_and(within)
            }
            ValueType::Answer => false,
        }
    })
}

fn date_reference(
    bound: &Bound,
    known: &dyn Fn(&str) -> Option<String>,
    now: Timestamp,
) -> Option<Timestamp> {
    let base = match &bound.anchor {
        Anchor::Now => now,
        Anchor::Date(time) => *time,
        Anchor::Question(key) => parse_time(&known(key)?)?,
        Anchor::Number(_) => return None,
    };
    match bound.offset {
        Offset::None => Some(base),
        Offset::Duration(duration) => base.checked_add(duration).ok(),
        Offset::Number(_) => None,
    }
}

fn number_reference(bound: &Bound, known: &dyn Fn(&str) -> Option<String>) -> Option<f64> {
    let base = match &bound.anchor {
        Anchor::Number(n) => *n,
        Anchor::Question(key) => known(key)?.parse().ok()?,
        Anchor::Now | Anchor::Date(_) => return None,
    };
    match bound.offset {
        Offset::None => Some(base),
        Offset::Number(n) => Some(base + n),
        Offset::Duration(_) => None,
    }
}

/// Why a bound cannot apply to a question of `kind` in this pack, if it cannot.
pub(super) fn bound_mismatch(
    kind: ValueType,
    bound: &Bound,
    anchor_kind: impl Fn(&str) -> Option<ValueType>,
) -> Option<String> {
    let anchor_ok = match (&bound.anchor, kind) {
        (Anchor::Now | Anchor::Date(_), ValueType::Date)
        | (Anchor::Number(_), ValueType::Number) => true,
        (Anchor::Question(key), _) => match anchor_kind(key) {
            Some(found) if found == kind => true,
            Some(_) => return Some(format!("`{key}` is not a question of the same type")),
            None => return Some(format!("no question is named `{key}`")),
        },
        _ => false,
    };
    let offset_ok = matches!(
        (bound.offset, kind),
        (Offset::None, _)
            | (Offset::Duration(_), ValueType::Date)
            | (Offset::Number(_), ValueType::Number)
    );
    (!anchor_ok || !offset_ok).then(|| match kind {
        ValueType::Date => "a date is bounded by `now`, a date or a date question, with a duration offset (`now+48h`)".to_owned(),
        _ => "a number is bounded by a number or a number question, with a number offset (`ordered+2`)".to_owned(),
    })
}
