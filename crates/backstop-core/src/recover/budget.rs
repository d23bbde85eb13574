//! A retry budget per tool: retries stay a bounded share of calls.
//!
//! A token bucket. Each retry takes one token; each success puts `ratio` of a token back, and
//! `min_per_sec` tokens accrue every second whatever happens, up to `capacity`. So over any
//! stretch the retries granted are at most what the bucket held, plus `ratio` per success,
//! plus the slow accrual: when a tool fails everywhere, retries fall to the slow rate instead
//! of multiplying the load on it. gRPC's retry throttling, Finagle's `RetryBudget` and Envoy's
//! retry budgets bound retries the same way.
//!
//! Time is a parameter. A time earlier than one already seen adds nothing, so a clock that
//! steps back never mints tokens.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::issue::{Issue, join_path};

/// What a spend may fall short of a whole token by: summing fractions such as 0.2 five times
/// can land a hair under 1.0, which must still buy a retry.
const EPSILON: f64 = 1e-9;

/// How a budget fills; plain data with documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    /// Tokens each success puts back (default 0.2: about one retry per five successes), 0 to 1.
    pub ratio: f64,
    /// Tokens that accrue each second whatever happens (default 1.0), at least 0: a tool with
    /// no successes can still be retried, slowly.
    pub min_per_sec: f64,
    /// The most tokens held, and what a new budget starts with (default 10.0), at least 1.
    pub capacity: f64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        Self {
            ratio: 0.2,
            min_per_sec: 1.0,
            capacity: 10.0,
        }
    }
}

impl BudgetConfig {
    /// Every issue with these settings, with paths under `base` (`budget.ratio`).
    pub fn validate(&self, base: &str) -> Vec<Issue> {
        let mut issues = Vec::new();
        let mut check = |field: &str, value: f64, ok: bool, accepted: &str| {
            if !(value.is_finite() && ok) {
                issues.push(Issue::new(
                    join_path(base, field),
                    "out_of_range",
                    format!("must be {accepted}, not {value}"),
                ));
            }
        };
        check(
            "ratio",
            self.ratio,
            (0.0..=1.0).contains(&self.ratio),
            "a number from 0 to 1",
        );
        check(
            "min_per_sec",
            self.min_per_sec,
            self.min_per_sec >= 0.0,
            "a number of tokens per second of at least 0",
        );
        check(
            "capacity",
            self.capacity,
            self.capacity >= 1.0,
            "a number of tokens of at least 1",
        );
        issues
    }
}

/// A budget as a report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BudgetView {
    /// Tokens held now.
    pub tokens: f64,
    /// The most tokens held.
    pub capacity: f64,
    /// Whether a retry may take a token now.
    pub retries_allowed: bool,
}

/// The retry budget of one tool (serialized whole: the ledger keeps it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RetryBudget {
    config: BudgetConfig,
    tokens: f64,
    /// The latest time seen; `None` until the first call.
    last_refill: Option<Timestamp>,
}

impl RetryBudget {
    /// A full budget.
    ///
    /// The settings are expected to be validated ([`BudgetConfig::validate`]).
    pub fn new(config: BudgetConfig) -> RetryBudget {
        RetryBudget {
            config,
            tokens: config.capacity,
            last_refill: None,
        }
    }

    /// A call succeeded: the time's accrual, then `ratio` more, up to `capacity`.
    pub fn record_success(&mut self, now: Timestamp) {
        self.refill(now);
        self.tokens = (self.tokens + self.config.ratio).min(self.config.capacity);
    }

    /// Takes a token for one retry if there is a whole one after the time's accrual; `false`
    /// means no retry now.
    pub fn try_spend(&mut self, now: Timestamp) -> bool {
        self.refill(now);
        let spent = self.tokens + EPSILON >= 1.0;
        if spent {
            self.tokens = (self.tokens - 1.0).max(0.0);
        }
        spent
    }

    /// What [`RetryBudget::try_spend`] would answer now, changing nothing.
    pub fn can_spend(&self, now: Timestamp) -> bool {
        self.tokens_at(now) + EPSILON >= 1.0
    }

    /// The budget at `now`, for reports.
    pub fn view(&self, now: Timestamp) -> BudgetView {
        BudgetView {
            tokens: self.tokens_at(now),
            capacity: self.config.capacity,
            retries_allowed: self.can_spend(now),
        }
    }

    fn refill(&mut self, now: Timestamp) {
        self.tokens = self.tokens_at(now);
        self.last_refill = Some(self.last_refill.map_or(now, |last| last.max(now)));
    }

    /// Tokens held at `now`: those held plus the accrual since the latest time seen.
    fn tokens_at(&self, now: Timestamp) -> f64 {
        let Some(last) = self.last_refill else {
            return self.tokens;
        };
        let elapsed = now.duration_since(last).as_secs_f64().max(0.0);
        (self.tokens + self.config.min_per_sec * elapsed).min(self.config.capacity)
    }
}

#[cfg(test)]
// The floats compared here are exact: whole token counts and ratios of small integers.
#[allow(clippy::float_cmp)]
mod tests {
    use jiff::SignedDuration;
    use proptest::prelude::*;

    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    /// No accrual by time, so only successes refill.
    fn no_accrual() -> RetryBudget {
        RetryBudget::new(BudgetConfig {
            min_per_sec: 0.0,
            ..BudgetConfig::default()
        })
    }

    fn spend_all(budget: &mut RetryBudget, now: Timestamp) -> u32 {
        let mut granted = 0;
        while budget.try_spend(now) {
            granted += 1;
        }
        granted
    }

    #[test]
    fn the_defaults_are_valid_and_fill_missing_fields() {
        assert!(BudgetConfig::default().validate("budget").is_empty());
        let config: BudgetConfig = serde_json::from_str(r#"{"ratio": 0.5}"#).unwrap();
        assert_eq!(config.capacity, 10.0);
        assert!(serde_json::from_str::<BudgetConfig>(r#"{"rate": 0.5}"#).is_err());
    }

    #[test]
    fn bad_settings_give_every_issue_with_its_path() {
        let config = BudgetConfig {
            ratio: 1.5,
            min_per_sec: -1.0,
            capacity: 0.5,
        };
        let issues = config.validate("budget");
        let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(
            paths,
            ["budget.ratio", "budget.min_per_sec", "budget.capacity"]
        );
        assert!(issues.iter().all(|i| i.code == "out_of_range"));
        assert_eq!(issues[0].message, "must be a number from 0 to 1, not 1.5");
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let config = BudgetConfig {
                ratio: bad,
                min_per_sec: bad,
                capacity: bad,
            };
            assert_eq!(config.validate("").len(), 3, "{bad}");
        }
    }

    #[test]
    fn starts_full_and_empties_after_capacity_retries() {
        let mut budget = no_accrual();
        assert_eq!(budget.view(at(0)).tokens, 10.0);
        assert_eq!(spend_all(&mut budget, at(0)), 10);
        assert!(!budget.try_spend(at(100)));
        assert!(!budget.view(at(100)).retries_allowed);
    }

    #[test]
    fn five_successes_buy_one_retry_at_a_ratio_of_a_fifth() {
        let mut budget = no_accrual();
        spend_all(&mut budget, at(0));
        for _ in 0..4 {
            budget.record_success(at(1));
        }
        assert!(!budget.can_spend(at(1)));
        budget.record_success(at(1));
        assert!(budget.try_spend(at(1)));
        assert!(!budget.try_spend(at(1)));
    }

    #[test]
    fn the_minimum_rate_refills_over_time() {
        let mut budget = RetryBudget::new(BudgetConfig {
            ratio: 0.0,
            min_per_sec: 0.5,
            capacity: 2.0,
        });
        assert_eq!(spend_all(&mut budget, at(0)), 2);
        assert!(!budget.can_spend(at(1)));
        assert!(budget.try_spend(at(2)));
        assert!(!budget.try_spend(at(2)));
        // A time before one already seen adds nothing.
        assert!(!budget.try_spend(at(0)));
        assert!(!budget.can_spend(at(3)));
        assert!(budget.can_spend(at(4)));
    }

    #[test]
    fn capacity_caps() {
        let mut budget = RetryBudget::new(BudgetConfig::default());
        for _ in 0..100 {
            budget.record_success(at(0));
        }
        assert_eq!(budget.view(at(1_000)).tokens, 10.0);
        assert_eq!(spend_all(&mut budget, at(1_000)), 10);
    }

    #[test]
    fn can_spend_and_view_change_nothing() {
        let mut budget = RetryBudget::new(BudgetConfig {
            ratio: 0.0,
            min_per_sec: 1.0,
            capacity: 1.0,
        });
        assert!(budget.try_spend(at(0)));
        for _ in 0..3 {
            assert!(!budget.can_spend(at(0)));
            assert!(budget.can_spend(at(5)));
            assert!(budget.view(at(5)).retries_allowed);
        }
        assert!(!budget.try_spend(at(0)));
        assert!(budget.try_spend(at(1)));
    }

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Success,
        Retry,
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(7),
            ..ProptestConfig::default()
        })]

        #[test]
        fn retries_stay_within_the_budget(
            ratio in 0.0f64..=1.0,
            min_per_sec in 0.0f64..5.0,
            capacity in 1.0f64..20.0,
            steps in prop::collection::vec(
                (prop_oneof![Just(Op::Success), Just(Op::Retry)], 0i64..2_000),
                1..300,
            ),
        ) {
            let mut budget = RetryBudget::new(BudgetConfig { ratio, min_per_sec, capacity });
            let start = at(1_000);
            let mut now = start;
            let (mut successes, mut granted) = (0u32, 0u32);
            for (op, step_ms) in steps {
                now = now.checked_add(SignedDuration::from_millis(step_ms)).unwrap();
                match op {
                    Op::Success => {
                        budget.record_success(now);
                        successes += 1;
                    }
                    Op::Retry => {
                        let expected = budget.can_spend(now);
                        let spent = budget.try_spend(now);
                        prop_assert_eq!(spent, expected);
                        granted += u32::from(spent);
                    }
                }
                let span = now.duration_since(start).as_secs_f64();
                let bound = capacity + ratio * f64::from(successes) + min_per_sec * span;
                prop_assert!(
                    f64::from(granted) <= bound + 1e-6,
                    "{granted} retries granted, bound {bound}"
                );
                let tokens = budget.view(now).tokens;
                prop_assert!((0.0..=capacity).contains(&tokens));
            }
        }
    }
}
