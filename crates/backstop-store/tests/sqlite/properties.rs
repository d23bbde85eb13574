//! Property tests for invariants 1, 2 and 7 over random sequences of attempts.

use std::collections::BTreeMap;

use backstop_store::Store;
use proptest::prelude::*;
use serde_json::Value;

use crate::conformance::support::{Answer, ask, at, vendor};

/// The evidence choices: hedged, vague at a few locators, closing as none or pii, or none.
fn evidence(choice: u8, marker: &str) -> Vec<(String, String, String)> {
    let text = |t: &str| format!("{t} {marker}");
    match choice {
        0 => vec![(
            "dpa.pdf".into(),
            "§1".into(),
            text("I think there is no customer data."),
        )],
        1 => vec![("q.pdf".into(), "a".into(), text("Security matters."))],
        2 => vec![("q.pdf".into(), "b".into(), text("Security matters."))],
        3 => vec![(
            "dpa.pdf".into(),
            "§4".into(),
            text("It does not process any customer data."),
        )],
        4 => vec![(
            "dpa.pdf".into(),
            "§5".into(),
            text("Personal data of customers is stored."),
        )],
        _ => Vec::new(),
    }
}

fn body(execution: u8, choice: u8, gap: bool) -> Value {
    let marker = format!("planted-{execution}-{choice}-zq");
    let excerpts = evidence(choice, &marker);
    let refs: Vec<(&str, &str, &str)> = excerpts
        .iter()
        .map(|(s, l, t)| (s.as_str(), l.as_str(), t.as_str()))
        .collect();
    let mut body = vendor(&format!("x{execution}"), "prop.com", &refs);
    if gap {
        body.as_object_mut().unwrap().remove("related");
    }
    body
}

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed),
        cases: 48,
        ..ProptestConfig::default()
    })]

    /// Invariants 1, 2 and 7 hold whatever agents send, in whatever order and timing.
    #[test]
    fn the_ledger_holds_its_invariants(
        ops in proptest::collection::vec((0u8..6, 0u8..6, any::<bool>(), 0i64..400), 1..14),
        max in 1u32..4,
    ) {
        let store = crate::fresh();
        let pack = crate::conformance::support::vendor_risk_max(max);
        let mut minute = 0;
        let mut results: BTreeMap<String, Value> = BTreeMap::new();
        for (execution, choice, gap, advance) in ops {
            minute += advance;
            let sent = body(execution, choice, gap);
            let answer = ask(&*store, &pack, "a", &sent, at(minute));
            let key = sent.to_string();
            match answer {
                Answer::Result(v) => {
                    // Invariant 1: a counted execution is never counted again.
                    prop_assert!(!results.contains_key(&key), "counted twice: {key}");
                    results.insert(key, v);
                }
                Answer::Replayed(v) => {
                    prop_assert_eq!(results.get(&key), Some(&v), "a replay is the stored result");
                }
                Answer::Refused(v) => {
                    let code = v["error"]["code"].as_str().unwrap_or_default().to_owned();
                    prop_assert!(
                        ["attempt_limit_reached", "execution_id_conflict", "case_in_review"]
                            .contains(&code.as_str()),
                        "unexpected refusal {}", v
                    );
                }
            }
        }
        if let Some(record) = store.case("a", "vendor-risk", "prop.com").unwrap() {
            // Invariant 1 on disk: one record per execution id.
            let mut ids: Vec<&str> =
                record.attempts.iter().map(|a| a.record.execution_id.as_str()).collect();
            let total = ids.len();
            ids.sort_unstable();
            ids.dedup();
            prop_assert_eq!(ids.len(), total);
            // Invariant 2: within one cycle and one window, never more than max + 1.
            let window = pack.attempts.window;
            for a in &record.attempts {
                let within = record
                    .attempts
                    .iter()
                    .filter(|b| b.cycle == a.cycle && b.record.at <= a.record.at
                        && b.record.at + window > a.record.at)
                    .count();
                prop_assert!(within <= max as usize + 1, "{} attempts in one window", within);
                prop_assert!(a.record.number <= max + 1);
            }
        }
        // Invariant 7: no excerpt text on disk.
        let mut on_disk = Vec::new();
        for entry in std::fs::read_dir(store.path().parent().unwrap()).unwrap() {
            on_disk.extend(std::fs::read(entry.unwrap().path()).unwrap());
        }
        prop_assert!(!on_disk.windows(8).any(|w| w == b"planted-"));
    }
}
