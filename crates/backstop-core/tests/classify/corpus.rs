//! The labeled corpus: real failures, each with the class and retryable it should get.
//!
//! `tests/data/labeled_reports.jsonl` holds structured reports, each of which must get its
//! label. `tests/data/corpus/*.jsonl` holds failures as agents hold them (exception strings,
//! response bodies, command output), each line with its `family`; the test prints accuracy
//! per family and per combination of fields, and holds a floor per family and overall.
//! Run it with `--nocapture` to see the table and every miss.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use backstop_core::classify::{RuleSet, classify};
use backstop_core::{Class, Report};
use jiff::Timestamp;
use serde::Deserialize;

const LABELED: &str = include_str!("../data/labeled_reports.jsonl");

/// The corpus files, by name. `tuning_new_families` is the part of the newest families the
/// rules were tuned on; its held-out part is [`HELD_OUT`], measured by a test of its own.
const CORPUS: [(&str, &str); 6] = [
    (
        "tuning_new_families",
        include_str!("../data/corpus/tuning_new_families.jsonl"),
    ),
    (
        "sdk_clients",
        include_str!("../data/corpus/sdk_clients.jsonl"),
    ),
    (
        "envelopes_stores",
        include_str!("../data/corpus/envelopes_stores.jsonl"),
    ),
    ("commands", include_str!("../data/corpus/commands.jsonl")),
    (
        "more_families",
        include_str!("../data/corpus/more_families.jsonl"),
    ),
    (
        "agent_surfaces",
        include_str!("../data/corpus/agent_surfaces.jsonl"),
    ),
];

/// The lowest share of lines whose class is right, per family (every family has one): about
/// five points under what the rules reach today, so a change that costs a family shows.
const FAMILY_FLOORS: &[(&str, f64)] = &[
    ("batch_partial", 0.90),
    ("botocore", 0.85),
    ("browser", 0.95),
    ("browser_automation", 0.85),
    ("cargo", 0.75),
    ("cli_output", 0.85),
    ("cloud_cli", 0.90),
    ("clouds_infra", 0.80),
    ("curl", 0.85),
    ("datastores", 0.85),
    ("datastores_brokers", 0.85),
    ("docker", 0.95),
    ("exit_codes", 0.85),
    ("generic_retryability", 0.80),
    ("gh", 0.75),
    ("git", 0.90),
    ("go_errors", 0.95),
    ("google_api_core", 0.90),
    ("graphql_jsonrpc", 0.90),
    ("http_clients", 0.95),
    ("json_bodies", 0.75),
    ("json_envelope", 0.90),
    ("jvm_dotnet", 0.90),
    ("kubectl", 0.90),
    ("llm_providers", 0.75),
    ("llm_sdk", 0.85),
    ("message_brokers", 0.85),
    ("no_results", 0.75),
    ("no_results_and_partial", 0.75),
    ("node_errors", 0.95),
    ("npm", 0.95),
    ("other_cli", 0.85),
    ("pip", 0.95),
    ("python_http", 0.95),
    ("ruby_php_rust", 0.90),
    ("schema_parse", 0.75),
    ("sdk_text", 0.85),
    ("sqlstate_text", 0.95),
    ("web_and_browser", 0.95),
    // The newest families (tuning part; 5 to 15 lines each, so the floors sit lower).
    ("cassandra_scylla", 0.85),
    ("data_warehouses", 0.80),
    ("dotnet_clients", 0.85),
    ("empty_answers", 0.85),
    ("go_clients", 0.75),
    ("iac_tools", 0.85),
    ("job_queues_workflows", 0.85),
    ("llm_gateways", 0.65),
    ("oracle_ora", 0.85),
    ("package_managers_more", 0.80),
    ("partial_batches", 0.65),
    ("payments_apis", 0.80),
    ("rust_clients", 0.85),
    ("saas_apis", 0.70),
    ("search_engines", 0.85),
    ("smtp_email", 0.85),
    ("sqlserver_dotnet", 0.85),
    ("ssh_sftp", 0.80),
    ("vector_dbs", 0.55),
];

/// Labeled failures from the newest families that no rule was tuned on: two thirds of what was
/// gathered, split off by a hash of each line before any rule saw them
/// (`tests/data/corpus/NEW_FAMILIES_SOURCES.md` names the sources).
const HELD_OUT: &str = include_str!("../data/corpus/heldout_new_families.jsonl");

/// What the held-out part reached when it was first measured after tuning (class 67.6%,
/// retryable 92.4%, 6 of 279 non-retryable called retryable): floors just under, so a change
/// that costs it shows. The goal is class 92%, retryable 97%, at most 1% called retryable.
const HELD_OUT_CLASS_FLOOR: f64 = 0.67;
const HELD_OUT_RETRYABLE_FLOOR: f64 = 0.92;
const HELD_OUT_FALSE_RETRY_CEILING: f64 = 0.025;

/// Over the whole corpus: class right, retryable right, and the most non-retryable failures
/// called retryable.
const CLASS_FLOOR: f64 = 0.90;
const RETRYABLE_FLOOR: f64 = 0.95;
const FALSE_RETRY_CEILING: f64 = 0.01;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Labeled {
    #[serde(default)]
    family: Option<String>,
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

fn default_now() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

/// Every non-blank line of a file, parsed, with its line number.
fn entries(name: &str, text: &str) -> Vec<(usize, Labeled)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            let entry: Labeled =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{name} line {}: {e}", i + 1));
            assert!(
                !entry.source.trim().is_empty(),
                "{name} line {} names no source",
                i + 1
            );
            (i + 1, entry)
        })
        .collect()
}

#[test]
fn every_labeled_report_gets_its_label() {
    let rules = RuleSet::builtin();
    let mut failures = Vec::new();
    let labeled = entries("labeled_reports", LABELED);
    for (n, entry) in &labeled {
        let report = Report::from_json(&entry.report.to_string())
            .unwrap_or_else(|e| panic!("line {n}: report refused: {e:?}"));
        let got = classify(&rules, &report, entry.now.unwrap_or_else(default_now));
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
    assert!(labeled.len() >= 200, "the labeled reports are too few");
    assert!(
        failures.is_empty(),
        "{} of {} mislabeled:\n{}",
        failures.len(),
        labeled.len(),
        failures.join("\n")
    );
}

/// Right answers out of all, for one group of lines.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    lines: usize,
    class_right: usize,
    retryable_right: usize,
    /// Lines whose label is not retryable.
    not_retryable: usize,
    /// Of those, the ones called retryable.
    false_retry: usize,
}

/// What one line got against its label.
#[derive(Debug, Clone, Copy)]
#[allow(clippy::struct_excessive_bools)] // four facts about one line, not a state machine
struct Outcome {
    class_right: bool,
    retryable_right: bool,
    want_retryable: bool,
    got_retryable: bool,
}

impl Tally {
    fn add(&mut self, outcome: Outcome) {
        self.lines += 1;
        self.class_right += usize::from(outcome.class_right);
        self.retryable_right += usize::from(outcome.retryable_right);
        if !outcome.want_retryable {
            self.not_retryable += 1;
            self.false_retry += usize::from(outcome.got_retryable);
        }
    }

    #[allow(clippy::cast_precision_loss)] // counts of corpus lines, far below 2^52
    fn share(part: usize, whole: usize) -> f64 {
        if whole == 0 {
            1.0
        } else {
            part as f64 / whole as f64
        }
    }

    fn class(&self) -> f64 {
        Self::share(self.class_right, self.lines)
    }

    fn retryable(&self) -> f64 {
        Self::share(self.retryable_right, self.lines)
    }

    fn false_retry(&self) -> f64 {
        if self.not_retryable == 0 {
            0.0
        } else {
            Self::share(self.false_retry, self.not_retryable)
        }
    }

    fn row(&self, name: &str) -> String {
        format!(
            "{name:<32} {:>4}  class {:>5.1}%  retryable {:>5.1}%  non-retryable called retryable {}/{}\n",
            self.lines,
            100.0 * self.class(),
            100.0 * self.retryable(),
            self.false_retry,
            self.not_retryable
        )
    }
}

/// The report's fields, joined: `exit_code+message+tool`.
fn field_combination(report: &serde_json::Value) -> String {
    let mut keys: Vec<&str> = report
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    keys.join("+")
}

#[test]
fn the_corpus_holds_its_floors() {
    let rules = RuleSet::builtin();
    let mut total = Tally::default();
    let mut families: BTreeMap<String, Tally> = BTreeMap::new();
    let mut combinations: BTreeMap<String, Tally> = BTreeMap::new();
    let mut misses = String::new();
    for (file, text) in CORPUS {
        for (n, entry) in entries(file, text) {
            let family = entry
                .family
                .clone()
                .unwrap_or_else(|| panic!("{file} line {n} names no family"));
            let report = Report::from_json(&entry.report.to_string())
                .unwrap_or_else(|e| panic!("{file} line {n}: report refused: {e:?}"));
            let got = classify(&rules, &report, entry.now.unwrap_or_else(default_now));
            let want_retry = entry.retryable.unwrap_or(entry.class.default_retryable());
            let class_right = got.class == entry.class;
            let retry_right = got.retryable == want_retry;
            let outcome = Outcome {
                class_right,
                retryable_right: retry_right,
                want_retryable: want_retry,
                got_retryable: got.retryable,
            };
            for tally in [
                &mut total,
                families.entry(family.clone()).or_default(),
                combinations
                    .entry(field_combination(&entry.report))
                    .or_default(),
            ] {
                tally.add(outcome);
            }
            if !class_right || !retry_right {
                let _ = writeln!(
                    misses,
                    "{file}:{n} [{family}] got {} retryable={} (rule {:?}), want {} retryable={want_retry}: {}",
                    got.class,
                    got.retryable,
                    got.rule,
                    entry.class,
                    entry
                        .report
                        .to_string()
                        .chars()
                        .take(160)
                        .collect::<String>()
                );
            }
        }
    }
    let mut table = String::from("by family:\n");
    for (name, tally) in &families {
        table.push_str(&tally.row(name));
    }
    table.push_str("by fields given:\n");
    for (name, tally) in &combinations {
        table.push_str(&tally.row(name));
    }
    table.push_str(&total.row("all"));
    // The table is the point of this test: `--nocapture` shows it.
    #[allow(clippy::print_stdout)]
    {
        println!("{table}\nmisses:\n{misses}");
    }

    let mut below = Vec::new();
    for (name, tally) in &families {
        let floor = FAMILY_FLOORS.iter().find(|(f, _)| f == name).map_or_else(
            || panic!("family `{name}` has no floor in FAMILY_FLOORS"),
            |(_, floor)| *floor,
        );
        if tally.class() < floor {
            below.push(format!(
                "{name}: class {:.1}% < floor {:.1}%",
                100.0 * tally.class(),
                100.0 * floor
            ));
        }
    }
    if total.class() < CLASS_FLOOR {
        below.push(format!("all: class {:.3} < {CLASS_FLOOR}", total.class()));
    }
    if total.retryable() < RETRYABLE_FLOOR {
        below.push(format!(
            "all: retryable {:.3} < {RETRYABLE_FLOOR}",
            total.retryable()
        ));
    }
    if total.false_retry() > FALSE_RETRY_CEILING {
        below.push(format!(
            "all: non-retryable called retryable {:.3} > {FALSE_RETRY_CEILING}",
            total.false_retry()
        ));
    }
    assert!(total.lines >= 700, "the corpus has {} lines", total.lines);
    assert!(below.is_empty(), "{}\n{table}", below.join("\n"));
}

/// The held-out part of the newest families holds its floors; `--nocapture` prints its figures
/// and every miss (read them to learn, not to tune: a rule made for one of them makes this part
/// no longer held out).
#[test]
fn the_held_out_corpus_holds_its_floors() {
    let rules = RuleSet::builtin();
    let mut total = Tally::default();
    for (n, entry) in entries("heldout_new_families", HELD_OUT) {
        let report = Report::from_json(&entry.report.to_string())
            .unwrap_or_else(|e| panic!("held-out line {n}: report refused: {e:?}"));
        let got = classify(&rules, &report, entry.now.unwrap_or_else(default_now));
        let want_retry = entry.retryable.unwrap_or(entry.class.default_retryable());
        total.add(Outcome {
            class_right: got.class == entry.class,
            retryable_right: got.retryable == want_retry,
            want_retryable: want_retry,
            got_retryable: got.retryable,
        });
    }
    #[allow(clippy::print_stdout)]
    {
        println!("held out: {}", total.row("all"));
    }
    assert!(
        total.lines >= 300,
        "the held-out part has {} lines",
        total.lines
    );
    assert!(
        total.class() >= HELD_OUT_CLASS_FLOOR,
        "held out: class {:.3} < {HELD_OUT_CLASS_FLOOR}",
        total.class()
    );
    assert!(
        total.retryable() >= HELD_OUT_RETRYABLE_FLOOR,
        "held out: retryable {:.3} < {HELD_OUT_RETRYABLE_FLOOR}",
        total.retryable()
    );
    assert!(
        total.false_retry() <= HELD_OUT_FALSE_RETRY_CEILING,
        "held out: non-retryable called retryable {:.3} > {HELD_OUT_FALSE_RETRY_CEILING}",
        total.false_retry()
    );
}

/// Every family of built-in rules (`http`, `aws`, `errno`, ... : the part of an id before its
/// first dot) decides or hints at least one labeled report, so no family goes untested.
#[test]
fn every_rule_family_is_exercised_by_the_corpus() {
    let rules = RuleSet::builtin();
    let family = |id: &str| id.split('.').next().unwrap_or(id).to_owned();
    let mut used = BTreeMap::<String, usize>::new();
    let all = std::iter::once(("labeled_reports", LABELED)).chain(CORPUS);
    for (file, text) in all {
        for (_, entry) in entries(file, text) {
            let report = Report::from_json(&entry.report.to_string()).unwrap();
            let got = classify(&rules, &report, entry.now.unwrap_or_else(default_now));
            let ids = got
                .rule
                .iter()
                .chain(got.evidence.iter().filter_map(|e| e.rule.as_ref()));
            for id in ids.collect::<std::collections::BTreeSet<_>>() {
                *used.entry(family(id)).or_default() += 1;
            }
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
