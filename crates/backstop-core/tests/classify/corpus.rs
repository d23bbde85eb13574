//! The labeled corpus: each line is a real-world failure shape with the class it should get.

use backstop_core::classify::{RuleSet, classify};
use backstop_core::{Class, Report};
use jiff::Timestamp;
use serde::Deserialize;

const CORPUS: &str = include_str!("../data/labeled_reports.jsonl");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Labeled {
    source: String,
    report: serde_json::Value,
    class: Class,
    retryable: Option<bool>,
    #[serde(default)]
    retry_after_ms: Hint,
    now: Option<Timestamp>,
}

/// What the entry says of the retry hint: nothing, none (`null`), or a number of milliseconds.
#[derive(Debug, Default)]
enum Hint {
    #[default]
    Unspecified,
    Expect(Option<u64>),
}

impl<'de> Deserialize<'de> for Hint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Option::<u64>::deserialize(d).map(Hint::Expect)
    }
}

#[test]
fn every_labeled_report_gets_its_label() {
    let rules = RuleSet::builtin();
    let default_now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    for (i, line) in CORPUS
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        count += 1;
        let n = i + 1;
        let entry: Labeled = serde_json::from_str(line).unwrap_or_else(|e| panic!("line {n}: {e}"));
        assert!(!entry.source.trim().is_empty(), "line {n} names no source");
        let report = Report::from_json(&entry.report.to_string())
            .unwrap_or_else(|e| panic!("line {n}: report refused: {e:?}"));
        let got = classify(&rules, &report, entry.now.unwrap_or(default_now));
        let mut wrong = Vec::new();
        if got.class != entry.class {
            wrong.push(format!(
                "class {} (rule {:?}: {}), want {}",
                got.class, got.rule, got.reason, entry.class
            ));
        }
        if let Some(retryable) = entry.retryable
            && got.retryable != retryable
        {
            wrong.push(format!("retryable {}, want {retryable}", got.retryable));
        }
        if let Hint::Expect(hint) = entry.retry_after_ms
            && got.retry_after_ms != hint
        {
            wrong.push(format!(
                "retry_after_ms {:?}, want {hint:?}",
                got.retry_after_ms
            ));
        }
        if !wrong.is_empty() {
            failures.push(format!("line {n} ({}): {}", entry.source, wrong.join("; ")));
        }
    }
    assert!(
        count >= 200,
        "the corpus has {count} reports; it should have at least 200"
    );
    assert!(
        failures.is_empty(),
        "{} of {count} mislabeled:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every family of built-in rules (`http`, `aws`, `errno`, ... : the part of an id before its
/// first dot) decides or hints at least one labeled report, so no family goes untested.
#[test]
fn every_rule_family_is_exercised_by_the_corpus() {
    let rules = RuleSet::builtin();
    let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    let family = |id: &str| id.split('.').next().unwrap_or(id).to_owned();
    let mut used = std::collections::BTreeMap::<String, usize>::new();
    for line in CORPUS.lines().filter(|l| !l.trim().is_empty()) {
        let entry: Labeled = serde_json::from_str(line).unwrap();
        let report = Report::from_json(&entry.report.to_string()).unwrap();
        let got = classify(&rules, &report, entry.now.unwrap_or(now));
        let ids = got
            .rule
            .iter()
            .chain(got.evidence.iter().filter_map(|e| e.rule.as_ref()));
        for id in ids.collect::<std::collections::BTreeSet<_>>() {
            *used.entry(family(id)).or_default() += 1;
        }
    }
    let families: std::collections::BTreeSet<String> =
        rules.rules().map(|r| family(&r.id)).collect();
    let untested: Vec<&String> = families.iter().filter(|f| !used.contains_key(*f)).collect();
    assert!(
        untested.is_empty(),
        "families no labeled report exercises: {untested:?}; used: {used:?}"
    );
}
