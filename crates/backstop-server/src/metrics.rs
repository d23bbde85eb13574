//! Counters for `/metrics`, in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// The retention purge's runs and what they deleted.
fn render_purges(c: &Counters, out: &mut String) {
    let _ = writeln!(
        out,
        "# HELP backstop_purges_total Runs of the retention purge ([retention])."
    );
    let _ = writeln!(out, "# TYPE backstop_purges_total counter");
    let _ = writeln!(out, "backstop_purges_total {}", c.purges);
    let _ = writeln!(
        out,
        "# HELP backstop_purged_total Records the retention purge deleted, by kind."
    );
    let _ = writeln!(out, "# TYPE backstop_purged_total counter");
    for (kind, n) in &c.purged {
        let _ = writeln!(out, "backstop_purged_total{{kind=\"{kind}\"}} {n}");
    }
}

/// The store latency buckets, in seconds.
const BUCKETS: [f64; 8] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.05,
];

/// What the service counts.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    requests: BTreeMap<(String, String, u16), u64>,
    decisions: BTreeMap<String, u64>,
    escalations: BTreeMap<String, u64>,
    dispatches: BTreeMap<String, u64>,
    deliveries: BTreeMap<&'static str, u64>,
    notifications: BTreeMap<(String, &'static str), u64>,
    purged: BTreeMap<&'static str, u64>,
    purges: u64,
    store_buckets: [u64; BUCKETS.len()],
    store_count: u64,
    store_sum: f64,
}

impl Metrics {
    fn with(&self, f: impl FnOnce(&mut Counters)) {
        let mut counters = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut counters);
    }

    /// One request answered.
    pub fn request(&self, method: &str, route: &str, status: u16) {
        self.with(|c| {
            *c.requests
                .entry((method.to_owned(), route.to_owned(), status))
                .or_default() += 1;
        });
    }

    /// One counted decision, with its status and escalation trigger.
    pub fn decision(&self, status: &str, trigger: Option<&str>) {
        self.with(|c| {
            *c.decisions.entry(status.to_owned()).or_default() += 1;
            if let Some(trigger) = trigger {
                *c.escalations.entry(trigger.to_owned()).or_default() += 1;
            }
        });
    }

    /// One escalation that is not a decision's (a task's, from `/v1/recover`).
    pub fn escalation(&self, trigger: &str) {
        self.with(|c| {
            *c.escalations.entry(trigger.to_owned()).or_default() += 1;
        });
    }

    /// One recipient's dispatch answer (`permitted`, `simulated`, `deferred`, ...).
    pub fn dispatch(&self, answer: &str) {
        self.with(|c| *c.dispatches.entry(answer.to_owned()).or_default() += 1);
    }

    /// One webhook delivery: recorded, or a duplicate that changed nothing.
    pub fn delivery(&self, recorded: bool) {
        let kind = if recorded { "recorded" } else { "duplicate" };
        self.with(|c| *c.deliveries.entry(kind).or_default() += 1);
    }

    /// One notification try to `target`: `delivered`, `retried` (it failed and is tried
    /// again) or `failed` (it failed and is given up).
    pub fn notification(&self, target: &str, outcome: &'static str) {
        self.with(|c| {
            *c.notifications
                .entry((target.to_owned(), outcome))
                .or_default() += 1;
        });
    }

    /// One store call's time.
    pub fn store_latency(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        self.with(|c| {
            for (bucket, bound) in c.store_buckets.iter_mut().zip(BUCKETS) {
                if seconds <= bound {
                    *bucket += 1;
                }
            }
            c.store_count += 1;
            c.store_sum += seconds;
        });
    }

    /// One run of the retention purge, and what it deleted.
    pub fn purged(&self, purged: &backstop_store::Purged) {
        self.with(|c| {
            c.purges += 1;
            for (kind, n) in [
                ("attempts", purged.attempts),
                ("reviews", purged.reviews),
                ("events", purged.events),
                ("cases", purged.cases),
                ("dispatches", purged.dispatches),
                ("deliveries", purged.deliveries),
                ("notifications", purged.notifications),
            ] {
                *c.purged.entry(kind).or_default() += n;
            }
        });
    }

    /// The text of `/metrics`; `breakers` is each tool's breaker state. Label values are
    /// escaped as the text format requires.
    pub fn render(&self, breakers: &[(String, &str)]) -> String {
        let c = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP backstop_requests_total Requests answered, by route and status."
        );
        let _ = writeln!(out, "# TYPE backstop_requests_total counter");
        for ((method, route, status), n) in &c.requests {
            let (method, route) = (escape(method), escape(route));
            let _ = writeln!(
                out,
                "backstop_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP backstop_decisions_total Counted attempts, by result status."
        );
        let _ = writeln!(out, "# TYPE backstop_decisions_total counter");
        for (status, n) in &c.decisions {
            let _ = writeln!(out, "backstop_decisions_total{{status=\"{status}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP backstop_escalations_total Results carrying an escalation, by trigger."
        );
        let _ = writeln!(out, "# TYPE backstop_escalations_total counter");
        for (trigger, n) in &c.escalations {
            let _ = writeln!(
                out,
                "backstop_escalations_total{{trigger=\"{trigger}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP backstop_dispatches_total Dispatch answers, per recipient, by answer."
        );
        let _ = writeln!(out, "# TYPE backstop_dispatches_total counter");
        for (answer, n) in &c.dispatches {
            let _ = writeln!(out, "backstop_dispatches_total{{answer=\"{answer}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP backstop_deliveries_total Webhook deliveries: recorded, or duplicates dropped."
        );
        let _ = writeln!(out, "# TYPE backstop_deliveries_total counter");
        for (kind, n) in &c.deliveries {
            let _ = writeln!(out, "backstop_deliveries_total{{kind=\"{kind}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP backstop_notifications_total Notification tries, by target and outcome \
             (delivered, retried, failed)."
        );
        let _ = writeln!(out, "# TYPE backstop_notifications_total counter");
        for ((target, outcome), n) in &c.notifications {
            let target = escape(target);
            let _ = writeln!(
                out,
                "backstop_notifications_total{{target=\"{target}\",outcome=\"{outcome}\"}} {n}"
            );
        }
        render_purges(&c, &mut out);
        let _ = writeln!(
            out,
            "# HELP backstop_breaker_state Each tool's circuit breaker (1 in its state)."
        );
        let _ = writeln!(out, "# TYPE backstop_breaker_state gauge");
        for (tool, state) in breakers {
            let (tool, state) = (escape(tool), escape(state));
            let _ = writeln!(
                out,
                "backstop_breaker_state{{tool=\"{tool}\",state=\"{state}\"}} 1"
            );
        }
        let _ = writeln!(
            out,
            "# HELP backstop_store_seconds Time of each ledger call."
        );
        let _ = writeln!(out, "# TYPE backstop_store_seconds histogram");
        for (bound, n) in BUCKETS.iter().zip(c.store_buckets) {
            let _ = writeln!(out, "backstop_store_seconds_bucket{{le=\"{bound}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "backstop_store_seconds_bucket{{le=\"+Inf\"}} {}",
            c.store_count
        );
        let _ = writeln!(out, "backstop_store_seconds_sum {}", c.store_sum);
        let _ = writeln!(out, "backstop_store_seconds_count {}", c.store_count);
        out
    }
}

/// A label value with `\\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn label_values_cannot_break_the_format() {
        let text =
            super::Metrics::default().render(&[("x\"} 1\nfake_metric 9\n#".to_owned(), "closed")]);
        assert!(
            !text.lines().any(|l| l.starts_with("fake_metric")),
            "{text}"
        );
        assert!(
            text.contains(r#"tool="x\"} 1\nfake_metric 9\n#""#),
            "{text}"
        );
    }
}
