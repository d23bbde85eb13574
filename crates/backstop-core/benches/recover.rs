//! `Recovery::next` throughput with 1,024 live tasks: a realistic mix of failures spread over
//! the tasks, each step consuming an attempt, tasks reset when they escalate or stop.

use std::hint::black_box;

use backstop_core::classify::{RuleSet, classify};
use backstop_core::recover::{Context, Recovery, RecoveryOptions, StrategyTable};
use backstop_core::{Classification, Report};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jiff::Timestamp;

const STEPS: usize = 10_000;
const TASKS: usize = 1024;

fn failures(now: Timestamp) -> Vec<Classification> {
    let rules = RuleSet::builtin();
    [
        r#"{"http_status": 503}"#,
        r#"{"http_status": 429, "headers": {"retry-after": "2"}}"#,
        r#"{"http_status": 400}"#,
        r#"{"message": "connection reset by peer"}"#,
        r#"{"message": "no results found"}"#,
        r#"{"error_code": "context_length_exceeded"}"#,
        r#"{"http_status": 451}"#,
        r#"{"http_status": 502}"#,
    ]
    .iter()
    .map(|json| classify(&rules, &Report::from_json(json).unwrap(), now))
    .collect()
}

fn bench(c: &mut Criterion) {
    let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    let failures = failures(now);
    let tasks: Vec<String> = (0..TASKS).map(|i| format!("task-{i}")).collect();
    let tools = ["search", "db", "llm", "crm"];
    let contexts: Vec<Context> = tools
        .iter()
        .map(|t| Context {
            tool: Some((*t).to_owned()),
            operation: Some("call".into()),
            ..Context::default()
        })
        .collect();
    let mut recovery = Recovery::new(StrategyTable::builtin(), RecoveryOptions { seed: 7 });
    // Make every task live before measuring.
    for (i, task) in tasks.iter().enumerate() {
        recovery.next(task, &failures[i % failures.len()], &contexts[i % 4], now);
    }
    assert_eq!(recovery.live_tasks(), TASKS);
    let mut group = c.benchmark_group("recovery");
    group.throughput(Throughput::Elements(STEPS as u64));
    group.sample_size(30);
    let mut round = 0usize;
    group.bench_function("next_10k_steps_1024_tasks", |b| {
        b.iter(|| {
            for i in 0..STEPS {
                let n = round.wrapping_mul(7919).wrapping_add(i);
                let task = &tasks[n % TASKS];
                let step =
                    recovery.next(task, &failures[n % failures.len()], &contexts[n % 4], now);
                if step.action.is_terminal() {
                    recovery.reset(task);
                }
                black_box(step);
            }
            round += 1;
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
