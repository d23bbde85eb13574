//! The simulator: the target a dispatch goes to when it may not go live. It answers as a real
//! source would, with webhook deliveries, and misbehaves as real ones do: some deliveries come
//! twice, some late, some never (the reconciliation sweep then asks it). What it does to each
//! dispatch is drawn from a seed and the dispatch's key, so a run can be repeated.

use serde_json::{Value, json};

use crate::recover::backoff::{Jitter, task_hash};

/// How the simulator misbehaves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimulatorSettings {
    /// The share of deliveries sent twice (0 to 1).
    pub duplicate_share: f64,
    /// The share of deliveries never sent (0 to 1): the sweep finds them.
    pub lost_share: f64,
    /// The shortest delay before a delivery, in milliseconds.
    pub min_delay_ms: u64,
    /// The longest.
    pub max_delay_ms: u64,
    /// The seed.
    pub seed: u64,
}

impl Default for SimulatorSettings {
    fn default() -> Self {
        Self {
            duplicate_share: 0.1,
            lost_share: 0.05,
            min_delay_ms: 50,
            max_delay_ms: 500,
            seed: 1,
        }
    }
}

/// What the simulator does with one dispatch's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// How many times the delivery is sent: 0 (lost), 1, or 2 (a duplicate).
    pub copies: u32,
    /// The wait before the first, in milliseconds.
    pub delay_ms: u64,
}

/// The plan for the dispatch with `key`.
pub fn plan(settings: &SimulatorSettings, key: &str) -> Plan {
    let mut draw = Jitter::new(settings.seed, &[task_hash(key)]);
    let mut share = |p: f64| {
        #[allow(clippy::cast_precision_loss)] // a draw out of a million
        let x = draw.upto(999_999) as f64 / 1_000_000.0;
        x < p
    };
    let copies = if share(settings.lost_share) {
        0
    } else if share(settings.duplicate_share) {
        2
    } else {
        1
    };
    let spread = settings.max_delay_ms.saturating_sub(settings.min_delay_ms);
    Plan {
        copies,
        delay_ms: settings.min_delay_ms + draw.upto(spread),
    }
}

/// The delivery the simulator sends for a dispatch: the recipient's `simulate` answer (a
/// status, a result, a confidence), or, when it has none, a call nobody answered.
pub fn delivery(key: &str, event_id: &str, simulate: Option<&Value>) -> Value {
    let field = |name: &str| simulate.and_then(|s| s.get(name)).cloned();
    json!({
        "event_id": event_id,
        "dispatch_key": key,
        "status": field("status").unwrap_or_else(|| json!("no_answer")),
        "result": field("result").unwrap_or(Value::Null),
        "confidence": field("confidence").unwrap_or_else(|| json!(1.0)),
        "failure_code": field("failure_code").unwrap_or(Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_repeat_and_follow_the_shares() {
        let settings = SimulatorSettings {
            duplicate_share: 0.2,
            lost_share: 0.1,
            ..SimulatorSettings::default()
        };
        let keys: Vec<String> = (0..2000).map(|i| format!("dk_{i:032}")).collect();
        let plans: Vec<Plan> = keys.iter().map(|k| plan(&settings, k)).collect();
        assert_eq!(
            plans,
            keys.iter().map(|k| plan(&settings, k)).collect::<Vec<_>>()
        );
        let lost = plans.iter().filter(|p| p.copies == 0).count();
        let twice = plans.iter().filter(|p| p.copies == 2).count();
        assert!((150..250).contains(&lost), "{lost}");
        assert!((300..420).contains(&twice), "{twice}");
        assert!(plans.iter().all(|p| (50..=500).contains(&p.delay_ms)));
        let none = SimulatorSettings {
            duplicate_share: 0.0,
            lost_share: 0.0,
            ..settings
        };
        assert!(keys.iter().all(|k| plan(&none, k).copies == 1));
    }
}
