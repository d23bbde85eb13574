//! Properties of the recovery over any sequence of failures.

use backstop_core::Class;
use backstop_core::recover::recovery::{Quota, StateKind, StateRow, task_key};
use backstop_core::recover::{Action, Context, Recovery, RecoveryOptions, StrategyTable};
use proptest::prelude::*;

use crate::{failure, on, recovery, t};

const REPORTS: [&str; 10] = [
    r#"{"http_status": 503}"#,
    r#"{"http_status": 429, "headers": {"retry-after": "2"}}"#,
    r#"{"http_status": 400}"#,
    r#"{"http_status": 451}"#,
    r#"{"message": "blocked by sandbox policy"}"#,
    r#"{"message": "the frobnicator declined"}"#,
    r#"{"error_code": "insufficient_quota"}"#,
    r#"{"side_effects": {"done": 1, "total": 2}}"#,
    r#"{"message": "no results found"}"#,
    r#"{"http_status": 500, "headers": {"x-should-retry": "false"}}"#,
];

/// The four counts in "attempt 2 of 3 of this strategy, 2 of 4 for the class", if the reason
/// states them.
fn stated_counts(reason: &str) -> Option<[u32; 4]> {
    let (_, rest) = reason.split_once(", attempt ")?;
    let (strategy, rest) = rest.split_once(" of this strategy, ")?;
    let (class, _) = rest.split_once(" for the class")?;
    let pair = |text: &str| -> Option<(u32, u32)> {
        let (used, max) = text.split_once(" of ")?;
        Some((used.parse().ok()?, max.parse().ok()?))
    };
    let (strategy_used, strategy_max) = pair(strategy)?;
    let (class_used, class_max) = pair(class)?;
    Some([strategy_used, strategy_max, class_used, class_max])
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn attempts_never_pass_a_limit(seq in prop::collection::vec((0usize..REPORTS.len(), 0usize..3), 1..80)) {
        let mut h = recovery();
        let failures: Vec<_> = REPORTS.iter().map(|r| failure(r)).collect();
        for (which, task) in seq {
            let step = h.next(&format!("task-{task}"), &failures[which], &on("api"), t(0));
            prop_assert!(step.attempts.class_used <= step.attempts.class_max, "{step:?}");
            prop_assert!(step.attempts.task_used <= step.attempts.task_max, "{step:?}");
        }
    }

    #[test]
    fn the_counts_a_reason_states_are_the_steps_counters(seq in prop::collection::vec((0usize..REPORTS.len(), 0usize..3), 1..80)) {
        let mut h = recovery();
        let failures: Vec<_> = REPORTS.iter().map(|r| failure(r)).collect();
        for (which, task) in seq {
            let step = h.next(&format!("task-{task}"), &failures[which], &on("api"), t(0));
            let a = step.attempts;
            let stated = stated_counts(&step.reason);
            if a.strategy_max == 0 {
                prop_assert_eq!(stated, None, "a step that spends no strategy attempt names none: {:?}", step);
                prop_assert_eq!(a.strategy_used, 0);
            } else {
                prop_assert_eq!(stated, Some([a.strategy_used, a.strategy_max, a.class_used, a.class_max]), "{:?}", step);
                prop_assert!(a.strategy_used <= a.strategy_max);
            }
        }
    }

    #[test]
    fn policy_denials_never_yield_a_retry_or_a_fallback(seq in prop::collection::vec(0usize..REPORTS.len(), 1..60), grants in 0u8..3) {
        let mut h = recovery();
        for _ in 0..grants {
            h.grant("t", t(0));
        }
        let mut denied = false;
        for which in seq {
            let f = failure(REPORTS[which]);
            let step = h.next("t", &f, &on("api"), t(0));
            denied |= f.class == Class::PolicyDenied;
            if denied {
                // The denial and everything after it on this task: stop, never a way around.
                prop_assert_eq!(step.action, Action::Stop);
            }
            if f.class == Class::PartialSuccess {
                prop_assert!(!matches!(step.action, Action::RetrySame | Action::RetryPromoted));
            }
            if f.class == Class::QuotaExhausted {
                prop_assert!(!step.action.is_retry());
            }
        }
    }

    #[test]
    fn a_flood_of_tasks_and_tools_is_refused_at_its_quota_and_drops_nobodys_state(tasks in 1usize..400, bound in 1usize..50) {
        let table = StrategyTable::load(Some(("m", &format!("[limits]\ntasks = {bound}\ntools = {bound}\n")))).unwrap();
        let mut h = Recovery::new(table, RecoveryOptions { seed: 3 });
        // Another caller's task, stopped by a policy denial, before the flood.
        let stopped = task_key("victim", "t");
        let denial = failure(REPORTS[4]);
        h.admit(&stopped, Some("shell"), t(0)).unwrap();
        h.next(&stopped, &denial, &on("shell"), t(0));
        let f = failure(REPORTS[0]);
        let mut admitted = 0;
        for i in 0..tasks {
            let task = task_key("flooder", &format!("task-{i}"));
            let tool = format!("tool-{i}");
            match h.admit(&task, Some(&tool), t(1)) {
                Ok(()) => {
                    admitted += 1;
                    h.next(&task, &f, &on(&tool), t(1));
                }
                Err(Quota::Tasks { limit } | Quota::Tools { limit }) => prop_assert_eq!(limit, bound),
            }
            prop_assert!(h.live_tasks_of("flooder") <= bound);
        }
        prop_assert_eq!(admitted, tasks.min(bound));
        // The victim's stop holds, and its tool stays known.
        prop_assert_eq!(h.next(&stopped, &f, &on("api"), t(2)).action, Action::Stop);
        prop_assert!(h.tool_views("shell", t(2)).is_some());
    }

    #[test]
    fn a_recovery_loaded_from_its_rows_gives_the_same_steps(seq in prop::collection::vec((0usize..REPORTS.len(), 0usize..3, 0usize..3), 1..40), cut in 0usize..40) {
        let mut live = recovery();
        let mut rows: std::collections::BTreeMap<(StateKind, String), StateRow> = std::collections::BTreeMap::new();
        let tools = ["api", "db", "llm"];
        let step_of = |h: &mut Recovery, i: usize, (which, task, tool): (usize, usize, usize)| {
            let task = task_key("agent", &format!("t{task}"));
            let at = t(i64::try_from(i).unwrap());
            h.admit(&task, Some(tools[tool]), at).unwrap();
            h.next(&task, &failure(REPORTS[which]), &on(tools[tool]), at)
        };
        // Up to the cut, the ledger keeps what changed.
        let cut = cut.min(seq.len());
        for (i, &call) in seq[..cut].iter().enumerate() {
            step_of(&mut live, i, call);
            for row in live.take_changes() {
                match row.body {
                    Some(_) => { rows.insert((row.kind, row.key.clone()), row); }
                    None => { rows.remove(&(row.kind, row.key.clone())); }
                }
            }
        }
        // A restart: a new recovery from the rows alone.
        let mut loaded = recovery();
        for row in rows.values() {
            loaded.restore(row).unwrap();
        }
        for (i, &call) in seq.iter().enumerate().skip(cut) {
            let a = step_of(&mut live, i, call);
            let b = step_of(&mut loaded, i, call);
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_steps(seed in any::<u64>(), seq in prop::collection::vec(0usize..REPORTS.len(), 1..30)) {
        let run = |seed: u64| {
            let mut h = Recovery::new(StrategyTable::builtin(), RecoveryOptions { seed });
            seq.iter().map(|w| h.next("t", &failure(REPORTS[*w]), &on("api"), t(0))).collect::<Vec<_>>()
        };
        prop_assert_eq!(run(seed), run(seed));
    }

    #[test]
    fn a_delay_is_never_below_a_hint_nor_above_the_cap_without_one(hint in prop::option::of(0u64..50_000), retries in 1usize..4) {
        let mut h = recovery();
        let json = match hint {
            Some(ms) => format!(r#"{{"http_status": 503, "headers": {{"retry-after-ms": "{ms}"}}}}"#),
            None => r#"{"http_status": 503}"#.to_owned(),
        };
        let f = failure(&json);
        let cap = h.table().backoff.cap_ms;
        for _ in 0..retries {
            let step = h.next("t", &f, &Context::default(), t(0));
            if step.action == Action::RetrySame {
                match hint {
                    Some(ms) => prop_assert!(step.delay_ms >= ms),
                    None => prop_assert!(step.delay_ms <= cap),
                }
            }
        }
    }
}
