//! Sixteen threads on one case: the limit is never passed, no execution is counted twice.

use std::collections::BTreeMap;
use std::sync::Mutex;

use backstop_store::Store;
use serde_json::Value;

use crate::conformance::support::{Answer, ask, at, shipped, vendor};

/// The body for execution `k`: the same every time it is sent, and each with its own
/// locator, so every counted attempt makes progress.
fn body(k: usize) -> Value {
    let locator = format!("q{k}");
    vendor(
        &format!("exec-{k}"),
        "northwind.com",
        &[("questionnaire.pdf", &locator, "Security matters to us.")],
    )
}

#[test]
fn sixteen_threads_never_pass_the_limit_nor_count_an_execution_twice() {
    for round in 0..5 {
        let store = crate::fresh();
        let pack = shipped("vendor-risk");
        let answers: Mutex<Vec<(usize, Answer)>> = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for thread in 0..16 {
                let (store, pack, answers) = (&store, &pack, &answers);
                scope.spawn(move || {
                    // Each thread sends the 8 execution ids in its own order, twice: distinct
                    // and repeated ids race on one case.
                    for pass in 0..2 {
                        for step in 0..8 {
                            let k = (step * (thread + 1) + pass + round) % 8;
                            let answer = ask(&**store, pack, "a", &body(k), at(0));
                            answers.lock().unwrap().push((k, answer));
                        }
                    }
                });
            }
        });
        let record = store
            .case("a", "vendor-risk", "northwind.com")
            .unwrap()
            .unwrap();
        let max = pack.attempts.max as usize;
        assert!(
            record.attempts.len() <= max + 1,
            "{} attempts",
            record.attempts.len()
        );
        assert_eq!(
            record.attempts.len(),
            max + 1,
            "every counted attempt made progress"
        );
        let mut counted: BTreeMap<String, usize> = BTreeMap::new();
        for attempt in &record.attempts {
            *counted
                .entry(attempt.record.execution_id.clone())
                .or_default() += 1;
        }
        assert!(counted.values().all(|&n| n == 1), "{counted:?}");
        let numbers: Vec<u32> = record.attempts.iter().map(|a| a.record.number).collect();
        assert_eq!(numbers, [1, 2, 3, 4]);
        // Every answer for one execution id is the same result, or a refusal for an id that
        // was never counted.
        let mut first: BTreeMap<usize, Value> = BTreeMap::new();
        for (k, answer) in answers.into_inner().unwrap() {
            match answer {
                Answer::Result(v) | Answer::Replayed(v) => {
                    assert!(counted.contains_key(&format!("exec-{k}")));
                    let seen = first.entry(k).or_insert_with(|| v.clone());
                    assert_eq!(*seen, v, "exec-{k} answered two ways");
                }
                Answer::Refused(v) => {
                    assert_eq!(v["error"]["code"], "attempt_limit_reached", "{v}");
                    assert!(!counted.contains_key(&format!("exec-{k}")));
                }
            }
        }
    }
}
