//! Classification throughput on realistic mixes of 10,000 reports, with the built-in rules.
//!
//! `message_only`: reports that carry only a message (the text path: extractors, then the
//! message patterns), the labeled reports' messages.
//! `mixed`: every shape of the labeled reports (codes, statuses, headers, schemas, messages).
//! `corpus`: the text corpus as agents send it (messages, JSON bodies, command output).

use std::hint::black_box;

use backstop_core::Report;
use backstop_core::classify::{RuleSet, classify};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jiff::Timestamp;

const CORPUS: &str = include_str!("../tests/data/labeled_reports.jsonl");
const TEXT_CORPUS: [&str; 5] = [
    include_str!("../tests/data/corpus/sdk_clients.jsonl"),
    include_str!("../tests/data/corpus/envelopes_stores.jsonl"),
    include_str!("../tests/data/corpus/commands.jsonl"),
    include_str!("../tests/data/corpus/more_families.jsonl"),
    include_str!("../tests/data/corpus/agent_surfaces.jsonl"),
];
const MIX: usize = 10_000;

fn reports_of(text: &str) -> impl Iterator<Item = serde_json::Value> + '_ {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["report"].clone())
}

/// The labeled reports (the same mix as earlier runs of this benchmark, so figures compare).
fn corpus_reports() -> Vec<serde_json::Value> {
    reports_of(CORPUS).collect()
}

fn text_corpus() -> Vec<Report> {
    let reports: Vec<Report> = TEXT_CORPUS
        .iter()
        .flat_map(|t| reports_of(t))
        .map(|r| Report::from_json(&r.to_string()).unwrap())
        .collect();
    (0..MIX)
        .map(|i| reports[i % reports.len()].clone())
        .collect()
}

/// 10,000 message-only reports: the corpus's messages, each varied with ids and numbers the way
/// real messages are, plus a few long tracebacks.
fn message_only() -> Vec<Report> {
    let messages: Vec<String> = corpus_reports()
        .iter()
        .filter_map(|r| r["message"].as_str().map(str::to_owned))
        .collect();
    (0..MIX)
        .map(|i| {
            let base = &messages[i % messages.len()];
            let message = if i % 500 == 0 {
                format!(
                    "Traceback (most recent call last):\n{}\n{base}",
                    "  File \"x.py\", line 1\n".repeat(400)
                )
            } else {
                format!("{base} (request id req_{i:08x}, attempt {})", i % 7)
            };
            Report {
                message: Some(message),
                ..Report::default()
            }
        })
        .collect()
}

fn mixed() -> Vec<Report> {
    let reports: Vec<Report> = reports_of(CORPUS)
        .map(|r| Report::from_json(&r.to_string()).unwrap())
        .collect();
    (0..MIX)
        .map(|i| reports[i % reports.len()].clone())
        .collect()
}

fn bench(c: &mut Criterion) {
    let rules = RuleSet::builtin();
    let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    let mut group = c.benchmark_group("classify");
    group.throughput(Throughput::Elements(MIX as u64));
    group.sample_size(20);
    for (name, reports) in [
        ("message_only_10k", message_only()),
        ("mixed_10k", mixed()),
        ("corpus_10k", text_corpus()),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                for report in &reports {
                    black_box(classify(&rules, black_box(report), now));
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
