//! Accuracy of the built-in rules on a labeled JSONL file (the corpus format):
//! `cargo run --release -p backstop-core --example corpus_eval -- FILE [--misses]`
//! (each miss starts with its line number in FILE).
// An example is a small program: it reads its argument and a file and prints, which the
// library itself never does.
#![allow(clippy::disallowed_methods, clippy::print_stdout)]

use std::collections::BTreeMap;

use backstop_core::classify::{RuleSet, classify};
use backstop_core::{Class, Report};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: corpus_eval FILE [--misses]");
    let show = args.iter().any(|a| a == "--misses");
    let text = std::fs::read_to_string(path).expect("a readable file");
    let rules = RuleSet::builtin();
    let now = "2026-01-01T00:00:00Z".parse().unwrap();
    let mut families: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let (mut false_retry, mut not_retryable) = (0, 0);
    for (number, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let entry: serde_json::Value = serde_json::from_str(line).expect("JSON lines");
        let want: Class = serde_json::from_value(entry["class"].clone()).expect("a class");
        let want_retry = entry["retryable"]
            .as_bool()
            .unwrap_or(want.default_retryable());
        let Ok(report) = Report::from_json(&entry["report"].to_string()) else {
            println!("refused: {line}");
            continue;
        };
        let got = classify(&rules, &report, now);
        let family = entry["family"].as_str().unwrap_or("-").to_owned();
        let tally = families.entry(family.clone()).or_default();
        tally.0 += 1;
        tally.1 += usize::from(got.class == want);
        tally.2 += usize::from(got.retryable == want_retry);
        if !want_retry {
            not_retryable += 1;
            false_retry += usize::from(got.retryable);
        }
        if show && (got.class != want || got.retryable != want_retry) {
            let report = entry["report"].to_string();
            println!(
                "{}: [{family}] got {} ({:?}) want {}: {}",
                number + 1,
                got.class,
                got.rule,
                want,
                &report[..report.floor_char_boundary(220)]
            );
        }
    }
    let mut all = (0, 0, 0);
    for (family, (n, class, retry)) in &families {
        println!(
            "{family:<24} {n:>4}  class {:>5.1}%  retryable {:>5.1}%",
            pct(*class, *n),
            pct(*retry, *n)
        );
        all = (all.0 + n, all.1 + class, all.2 + retry);
    }
    println!(
        "{:<24} {:>4}  class {:>5.1}%  retryable {:>5.1}%  non-retryable called retryable {false_retry}/{not_retryable}",
        "all",
        all.0,
        pct(all.1, all.0),
        pct(all.2, all.0)
    );
}

#[allow(clippy::cast_precision_loss)]
fn pct(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}
