//! Integration tests of recovery: the recovery over the built-in strategy table.
//!
//! - `steps`: the step sequence of each class, hints, grants, breakers and budgets
//! - `properties`: limits, the LRU bound, policy denials, determinism, delays and hints
//! - `approaches`: a spent approach remembered for its caller's next tasks
//! - `idempotency`: a resend that could do a call's effect twice is held back

mod approaches;
mod idempotency;
mod properties;
mod steps;

use backstop_core::classify::{RuleSet, classify};
use backstop_core::recover::{Context, Recovery, RecoveryOptions, StrategyTable};
use backstop_core::{Classification, Report};
use jiff::Timestamp;

/// A recovery over the built-in table with a fixed seed.
pub fn recovery() -> Recovery {
    Recovery::new(StrategyTable::builtin(), RecoveryOptions { seed: 42 })
}

/// A classification of a report given as JSON, with the built-in rules.
pub fn failure(json: &str) -> Classification {
    static RULES: std::sync::OnceLock<RuleSet> = std::sync::OnceLock::new();
    let rules = RULES.get_or_init(RuleSet::builtin);
    classify(rules, &Report::from_json(json).unwrap(), t(0))
}

/// A time `seconds` after a fixed epoch.
pub fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_767_225_600 + seconds).unwrap()
}

/// A context naming a tool.
pub fn on(tool: &str) -> Context {
    Context {
        tool: Some(tool.to_owned()),
        operation: Some("search".to_owned()),
        ..Context::default()
    }
}
