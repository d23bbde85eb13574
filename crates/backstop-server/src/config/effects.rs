//! The side-effect part of the service's config: the live key (a pack's `live = true` alone
//! starts nothing), the webhook sources with their secrets, the simulator, and the sweep.
//!
//! ```toml
//! [dispatch]
//! live_key = "a long random string"   # dispatches may go live only with this set
//! sweep_interval_ms = 30000
//! [[webhooks]]
//! source = "calls"
//! secret = "the HMAC secret the source signs with"
//! [simulator]
//! duplicate_share = 0.1
//! lost_share = 0.05
//! ```

use std::time::Duration;

use backstop_core::Issue;
use backstop_core::effects::simulator::SimulatorSettings;
use toml::{Table, Value};

use super::{string, unknown_keys};

/// The source name the built-in simulator signs its deliveries as.
pub const SIMULATOR_SOURCE: &str = "simulator";
/// The shortest secret a webhook source may have.
pub const MIN_SECRET_CHARS: usize = 16;

/// Side-effect settings.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectsConfig {
    /// The live key: with it, a pack with `live = true` dispatches live.
    pub live_key: Option<String>,
    /// How often the sweep reconciles dispatches with no result (default 30 s).
    pub sweep_interval: Duration,
    /// Webhook sources and their HMAC secrets.
    pub webhooks: Vec<WebhookSource>,
    /// How the simulator misbehaves.
    pub simulator: SimulatorSettings,
    /// The simulator's signing secret; a random one per process when not set.
    pub simulator_secret: Option<String>,
}

impl Default for EffectsConfig {
    fn default() -> Self {
        Self {
            live_key: None,
            sweep_interval: Duration::from_secs(30),
            webhooks: Vec::new(),
            simulator: SimulatorSettings::default(),
            simulator_secret: None,
        }
    }
}

/// One webhook source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSource {
    /// Its name, as in `POST /v1/webhooks/{source}`.
    pub source: String,
    /// The HMAC-SHA256 secret it signs with.
    pub secret: String,
}

/// Reads `[dispatch]`, `[[webhooks]]` and `[simulator]` from the config's top table.
pub(super) fn parse(table: &Table, issues: &mut Vec<Issue>) -> EffectsConfig {
    let mut config = EffectsConfig::default();
    if let Some(value) = table.get("dispatch") {
        if let Some(t) = value.as_table() {
            unknown_keys(t, "dispatch", &["live_key", "sweep_interval_ms"], issues);
            config.live_key = string(t, "live_key", "dispatch.live_key", issues);
            if let Some(key) = &config.live_key
                && key.chars().count() < MIN_SECRET_CHARS
            {
                issues.push(Issue::new(
                    "dispatch.live_key",
                    "too_short",
                    format!("a live key has at least {MIN_SECRET_CHARS} characters"),
                ));
            }
            if let Some(ms) = whole(t, "sweep_interval_ms", "dispatch", 100, 86_400_000, issues) {
                config.sweep_interval = Duration::from_millis(ms);
            }
        } else {
            issues.push(Issue::new("dispatch", "wrong_type", "expected a table"));
        }
    }
    if let Some(value) = table.get("webhooks") {
        config.webhooks = webhooks(value, issues);
    }
    if let Some(value) = table.get("simulator") {
        simulator(value, &mut config, issues);
    }
    config
}

fn webhooks(value: &Value, issues: &mut Vec<Issue>) -> Vec<WebhookSource> {
    let Some(items) = value.as_array() else {
        issues.push(Issue::new(
            "webhooks",
            "wrong_type",
            "expected [[webhooks]] tables",
        ));
        return Vec::new();
    };
    let mut out: Vec<WebhookSource> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("webhooks[{i}]");
        let Some(t) = item.as_table() else {
            issues.push(Issue::new(path, "wrong_type", "expected a table"));
            continue;
        };
        unknown_keys(t, &path, &["source", "secret"], issues);
        let source = string(t, "source", &format!("{path}.source"), issues);
        let secret = string(t, "secret", &format!("{path}.secret"), issues);
        if t.get("source").is_none() {
            issues.push(Issue::new(
                format!("{path}.source"),
                "missing",
                "this key is required",
            ));
        }
        if t.get("secret").is_none() {
            issues.push(Issue::new(
                format!("{path}.secret"),
                "missing",
                "this key is required",
            ));
        }
        let (Some(source), Some(secret)) = (source, secret) else {
            continue;
        };
        let url_safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if source.len() > 100 || !source.chars().all(url_safe) || source == SIMULATOR_SOURCE {
            issues.push(Issue::new(
                format!("{path}.source"),
                "bad_name",
                format!(
                    "`{source}` cannot name a webhook source: 1 to 100 letters, digits, `-`, `_` \
                     or `.`, and not `{SIMULATOR_SOURCE}` (the built-in simulator's)"
                ),
            ));
        } else if out.iter().any(|w| w.source == source) {
            issues.push(Issue::new(
                format!("{path}.source"),
                "duplicate",
                format!("`{source}` is listed twice"),
            ));
        }
        if secret.chars().count() < MIN_SECRET_CHARS {
            issues.push(Issue::new(
                format!("{path}.secret"),
                "too_short",
                format!("a webhook secret has at least {MIN_SECRET_CHARS} characters"),
            ));
        }
        out.push(WebhookSource { source, secret });
    }
    out
}

fn simulator(value: &Value, config: &mut EffectsConfig, issues: &mut Vec<Issue>) {
    let Some(t) = value.as_table() else {
        issues.push(Issue::new("simulator", "wrong_type", "expected a table"));
        return;
    };
    let known = [
        "duplicate_share",
        "lost_share",
        "min_delay_ms",
        "max_delay_ms",
        "seed",
        "secret",
    ];
    unknown_keys(t, "simulator", &known, issues);
    let sim = &mut config.simulator;
    for (key, slot) in [
        ("duplicate_share", &mut sim.duplicate_share),
        ("lost_share", &mut sim.lost_share),
    ] {
        match t.get(key) {
            None => {}
            #[allow(clippy::cast_precision_loss)] // 0 or 1
            Some(Value::Integer(n)) if (0..=1).contains(n) => *slot = *n as f64,
            Some(Value::Float(x)) if (0.0..=1.0).contains(x) => *slot = *x,
            Some(other) => issues.push(Issue::new(
                format!("simulator.{key}"),
                "out_of_range",
                format!("expected a share from 0 to 1, found {other}"),
            )),
        }
    }
    if let Some(ms) = whole(t, "min_delay_ms", "simulator", 0, 600_000, issues) {
        sim.min_delay_ms = ms;
    }
    if let Some(ms) = whole(t, "max_delay_ms", "simulator", 0, 600_000, issues) {
        sim.max_delay_ms = ms;
    }
    if sim.max_delay_ms < sim.min_delay_ms {
        issues.push(Issue::new(
            "simulator.max_delay_ms",
            "out_of_range",
            "the longest delay cannot be shorter than the shortest",
        ));
    }
    if let Some(seed) = whole(t, "seed", "simulator", 0, u64::MAX, issues) {
        sim.seed = seed;
    }
    config.simulator_secret = string(t, "secret", "simulator.secret", issues);
}

fn whole(
    t: &Table,
    key: &str,
    table: &str,
    min: u64,
    max: u64,
    issues: &mut Vec<Issue>,
) -> Option<u64> {
    let value = t.get(key)?;
    match value {
        Value::Integer(n) if u64::try_from(*n).is_ok_and(|n| (min..=max).contains(&n)) => {
            u64::try_from(*n).ok()
        }
        other => {
            issues.push(Issue::new(
                format!("{table}.{key}"),
                "out_of_range",
                format!("expected a whole number from {min} to {max}, found {other}"),
            ));
            None
        }
    }
}
