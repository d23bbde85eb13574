//! `[retention]`: how long the ledger keeps records, and the purge `serve` runs on its own.

use std::time::Duration;

use backstop_core::Issue;
use jiff::SignedDuration;
use toml::{Table, Value};

/// The longest retention a config may set, in days (ten years).
const MAX_DAYS: i64 = 3650;

/// What `serve` purges, and how often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Records older than this many days are purged; `None` (`days = 0`): `serve` never
    /// purges on its own (`backstop purge` still does).
    pub days: Option<u32>,
    /// How often the purge runs (default an hour; the first run comes one interval after the
    /// start).
    pub every: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            days: Some(30),
            every: Duration::from_hours(1),
        }
    }
}

impl Retention {
    /// How long records are kept, when `serve` purges at all.
    pub fn keep(&self) -> Option<SignedDuration> {
        self.days
            .map(|days| SignedDuration::from_hours(i64::from(days) * 24))
    }
}

/// Reads `[retention]` from the config's top table; every issue has its path.
pub fn parse(table: &Table, issues: &mut Vec<Issue>) -> Retention {
    let mut retention = Retention::default();
    let Some(value) = table.get("retention") else {
        return retention;
    };
    let Some(section) = value.as_table() else {
        issues.push(Issue::new(
            "retention",
            "wrong_type",
            "expected a [retention] table",
        ));
        return retention;
    };
    backstop_core::input::unknown_keys(
        section.keys(),
        "retention",
        &["days", "every"],
        backstop_core::input::Format::Toml,
        issues,
    );
    match section.get("days") {
        None => {}
        Some(Value::Integer(0)) => retention.days = None,
        Some(Value::Integer(n)) if (1..=MAX_DAYS).contains(n) => {
            retention.days = u32::try_from(*n).ok();
        }
        Some(other) => issues.push(Issue::new(
            "retention.days",
            "out_of_range",
            format!(
                "expected a whole number of days from 1 to {MAX_DAYS}, or 0 for no purge by \
                 `serve`; found {other}"
            ),
        )),
    }
    match section.get("every") {
        None => {}
        Some(Value::String(text)) => match text.parse::<SignedDuration>() {
            Ok(every) if every.is_positive() => {
                retention.every = every.unsigned_abs();
            }
            _ => issues.push(Issue::new(
                "retention.every",
                "bad_duration",
                format!("`{text}` is not a positive duration such as \"1h\" or \"30m\""),
            )),
        },
        Some(other) => issues.push(Issue::new(
            "retention.every",
            "wrong_type",
            format!(
                "expected a duration such as \"1h\", found {}",
                other.type_str()
            ),
        )),
    }
    retention
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Retention, Vec<(String, String)>) {
        let table: Table = text.parse().unwrap();
        let mut issues = Vec::new();
        let retention = parse(&table, &mut issues);
        let found = issues.into_iter().map(|i| (i.path, i.code)).collect();
        (retention, found)
    }

    #[test]
    fn thirty_days_hourly_unless_set_and_zero_days_is_off() {
        assert_eq!(read("").0, Retention::default());
        assert_eq!(read("").0.keep(), Some(SignedDuration::from_hours(720)));
        let (off, issues) = read("[retention]\ndays = 0");
        assert!(issues.is_empty());
        assert_eq!(off.keep(), None);
        let (set, _) = read("[retention]\ndays = 7\nevery = \"10m\"");
        assert_eq!(set.days, Some(7));
        assert_eq!(set.every, Duration::from_mins(10));
    }

    #[test]
    fn every_bad_value_is_an_issue_at_its_path() {
        let (_, issues) = read("[retention]\ndays = -1\nevery = \"soon\"\nkeep = 1");
        let has = |path: &str, code: &str| issues.iter().any(|(p, c)| p == path && c == code);
        assert!(has("retention.days", "out_of_range"), "{issues:?}");
        assert!(has("retention.every", "bad_duration"), "{issues:?}");
        assert!(has("retention.keep", "unknown_key"), "{issues:?}");
        let (_, issues) = read("[retention]\ndays = 99999\nevery = 5");
        assert!(
            issues.iter().any(|(p, _)| p == "retention.days"),
            "{issues:?}"
        );
        assert!(
            issues
                .iter()
                .any(|(p, c)| p == "retention.every" && c == "wrong_type")
        );
        let (_, issues) = read("retention = 3");
        assert_eq!(issues, [("retention".to_owned(), "wrong_type".to_owned())]);
    }
}
