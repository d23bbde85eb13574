//! A circuit breaker per tool: closed, open, half-open.
//!
//! Closed, every call goes and its outcome is kept in a window of the last `window` calls.
//! When the window holds at least `min_calls` outcomes and the share of failures reaches
//! `failure_rate`, the breaker opens: every call is rejected for `open_ms`. Then it is
//! half-open: up to `half_open_probes` calls go as probes; one failed probe opens it again, and
//! that many successful probes close it with an empty window.
//!
//! Time is a parameter: the breaker moves from open to half-open when it is asked at or after
//! the time it was opened until, not on a timer. A probe that never reports (the caller lost
//! it) would leave the breaker half-open and rejecting forever, so a probe expires `open_ms`
//! after the last one was let through, and its place goes to a new probe.

use std::collections::VecDeque;

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::Class;
use crate::issue::{Issue, join_path};

/// The largest window accepted: outcomes are kept one per call, and ten thousand is more
/// history than a rate needs while keeping each tool's breaker small.
pub const MAX_WINDOW: u32 = 10_000;

/// How a breaker opens and closes; plain data with documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerConfig {
    /// How many of the latest calls the failure rate is taken over (default 20), 1 to
    /// [`MAX_WINDOW`].
    pub window: u32,
    /// The share of failures in the window that opens the breaker (default 0.5), above 0 and
    /// at most 1.
    pub failure_rate: f64,
    /// The fewest calls in the window before the breaker may open (default 10), 1 to `window`.
    pub min_calls: u32,
    /// How long the breaker stays open before it lets probes through, in milliseconds
    /// (default 30,000), at least 1.
    pub open_ms: u64,
    /// How many probes go through when half-open, and how many must succeed to close it
    /// (default 3), at least 1.
    pub half_open_probes: u32,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            window: 20,
            failure_rate: 0.5,
            min_calls: 10,
            open_ms: 30_000,
            half_open_probes: 3,
        }
    }
}

impl BreakerConfig {
    /// Every issue with these settings, with paths under `base` (`breaker.failure_rate`).
    pub fn validate(&self, base: &str) -> Vec<Issue> {
        let mut issues = Vec::new();
        let mut out_of_range = |field: &str, accepted: String| {
            issues.push(Issue::new(join_path(base, field), "out_of_range", accepted));
        };
        if !(1..=MAX_WINDOW).contains(&self.window) {
            out_of_range(
                "window",
                format!("must be 1 to {MAX_WINDOW} calls, not {}", self.window),
            );
        }
        if !(self.failure_rate.is_finite() && self.failure_rate > 0.0 && self.failure_rate <= 1.0) {
            out_of_range(
                "failure_rate",
                format!("must be above 0 and at most 1, not {}", self.failure_rate),
            );
        }
        if !(1..=self.window.max(1)).contains(&self.min_calls) {
            out_of_range(
                "min_calls",
                format!(
                    "must be 1 to the window ({}), not {}",
                    self.window, self.min_calls
                ),
            );
        }
        if self.open_ms == 0 {
            out_of_range(
                "open_ms",
                "must be at least 1 millisecond, not 0".to_owned(),
            );
        }
        if self.half_open_probes == 0 {
            out_of_range("half_open_probes", "must be at least 1, not 0".to_owned());
        }
        issues
    }
}

/// Where a breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum BreakerState {
    /// Calls go; outcomes are counted.
    Closed,
    /// Calls are rejected until the open period ends.
    Open,
    /// A few probe calls go to learn whether the tool is back.
    HalfOpen,
}

impl BreakerState {
    /// Its wire name (`closed`, `open`, `half_open`).
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
    }
}

/// What a caller may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The breaker is closed: call.
    Allowed,
    /// The breaker is half-open and this call is one of its probes: call, and report the
    /// outcome.
    Probe,
    /// No call now.
    Rejected {
        /// When to ask again: the end of the open period, or, when half-open with every probe
        /// out, the time those probes expire if they have not reported.
        until: Timestamp,
    },
}

/// A breaker as a report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BreakerView {
    /// Where it stands now.
    pub state: BreakerState,
    /// Outcomes in the window.
    pub calls: u32,
    /// Failures among them.
    pub failures: u32,
    /// `failures / calls`, or 0 with no calls.
    pub failure_rate: f64,
    /// When an open breaker turns half-open; absent unless open.
    pub open_until: Option<Timestamp>,
    /// Probes that may still go; 0 unless half-open.
    pub probes_left: u32,
}

/// The phase as stored; [`Breaker::phase_at`] turns it into the phase at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Phase {
    Closed,
    Open {
        until: Timestamp,
    },
    HalfOpen {
        /// Probes let through and not expired.
        admitted: u32,
        /// Probes that reported success; never more than `admitted`.
        successes: u32,
        /// When the outstanding probes expire: `open_ms` after the last one went.
        expires: Option<Timestamp>,
    },
}

/// The circuit breaker of one tool (serialized whole: the ledger keeps it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Breaker {
    config: BreakerConfig,
    phase: Phase,
    /// The latest outcomes, oldest first; `true` is a failure.
    window: VecDeque<bool>,
    /// Failures in `window`.
    failures: u32,
}

impl Breaker {
    /// A closed breaker with an empty window.
    ///
    /// The settings are expected to be validated ([`BreakerConfig::validate`]); counts out of
    /// range are clamped into it so that a bad value cannot stall the breaker.
    pub fn new(config: BreakerConfig) -> Breaker {
        let window = config.window.clamp(1, MAX_WINDOW);
        let config = BreakerConfig {
            window,
            min_calls: config.min_calls.clamp(1, window),
            open_ms: config.open_ms.max(1),
            half_open_probes: config.half_open_probes.max(1),
            ..config
        };
        Breaker {
            config,
            phase: Phase::Closed,
            window: VecDeque::new(),
            failures: 0,
        }
    }

    /// Whether a call may go now.
    ///
    /// An open breaker whose period has passed turns half-open here. Half-open, at most
    /// `half_open_probes` calls are let through, each as a [`Admission::Probe`]; later calls
    /// are rejected until the probes report or expire.
    pub fn admit(&mut self, now: Timestamp) -> Admission {
        let mut phase = self.phase_at(now);
        let admission = self.admission(phase, now);
        if admission == Admission::Probe
            && let Phase::HalfOpen {
                admitted, expires, ..
            } = &mut phase
        {
            *admitted += 1;
            *expires = Some(self.after_open(now));
        }
        self.phase = phase;
        admission
    }

    /// What [`Breaker::admit`] would answer now, changing nothing.
    pub fn peek(&self, now: Timestamp) -> Admission {
        self.admission(self.phase_at(now), now)
    }

    /// A call succeeded.
    ///
    /// Closed, the success goes into the window. Half-open, it counts toward closing if a probe
    /// is out (a late success from before the breaker opened says nothing about the tool
    /// now); `half_open_probes` successes close the breaker with an empty window. Open, it is
    /// ignored.
    pub fn record_success(&mut self, now: Timestamp) {
        self.phase = self.phase_at(now);
        match &mut self.phase {
            Phase::Closed => self.push(false),
            Phase::Open { .. } => {}
            Phase::HalfOpen {
                admitted,
                successes,
                ..
            } => {
                if *successes < *admitted {
                    *successes += 1;
                    if *successes >= self.config.half_open_probes {
                        self.phase = Phase::Closed;
                        self.window.clear();
                        self.failures = 0;
                    }
                }
            }
        }
    }

    /// A call failed in a way that says something about the tool ([`counts_against_tool`]:
    /// the caller filters by class).
    ///
    /// Closed, the failure goes into the window, and the breaker opens for `open_ms` once the
    /// window holds `min_calls` calls and their failure rate reaches `failure_rate`.
    /// Half-open, it opens again at once: any failure then, probe or late, is evidence the tool
    /// is not back. Open, it is ignored.
    pub fn record_failure(&mut self, now: Timestamp) {
        self.phase = self.phase_at(now);
        match self.phase {
            Phase::Closed => {
                self.push(true);
                if self.calls() >= self.config.min_calls
                    && self.failure_rate() >= self.config.failure_rate
                {
                    self.phase = Phase::Open {
                        until: self.after_open(now),
                    };
                }
            }
            Phase::Open { .. } => {}
            Phase::HalfOpen { .. } => {
                self.phase = Phase::Open {
                    until: self.after_open(now),
                };
            }
        }
    }

    /// Where the breaker stands at `now`: half-open once the open period has passed, even
    /// before the next [`Breaker::admit`].
    pub fn state(&self, now: Timestamp) -> BreakerState {
        match self.phase_at(now) {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { .. } => BreakerState::Open,
            Phase::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }

    /// The breaker at `now`, for reports.
    pub fn view(&self, now: Timestamp) -> BreakerView {
        let phase = self.phase_at(now);
        BreakerView {
            state: self.state(now),
            calls: self.calls(),
            failures: self.failures,
            failure_rate: self.failure_rate(),
            open_until: match phase {
                Phase::Open { until } => Some(until),
                _ => None,
            },
            probes_left: match phase {
                Phase::HalfOpen { admitted, .. } => {
                    self.config.half_open_probes.saturating_sub(admitted)
                }
                _ => 0,
            },
        }
    }

    /// The stored phase as it stands at `now`: an open period that has passed is half-open,
    /// and probes out past their expiry give their places back.
    fn phase_at(&self, now: Timestamp) -> Phase {
        match self.phase {
            Phase::Open { until } if now >= until => Phase::HalfOpen {
                admitted: 0,
                successes: 0,
                expires: None,
            },
            Phase::HalfOpen {
                admitted,
                successes,
                expires: Some(at),
            } if now >= at && admitted > successes => Phase::HalfOpen {
                admitted: successes,
                successes,
                expires: None,
            },
            phase => phase,
        }
    }

    fn admission(&self, phase: Phase, now: Timestamp) -> Admission {
        match phase {
            Phase::Closed => Admission::Allowed,
            Phase::Open { until } => Admission::Rejected { until },
            Phase::HalfOpen { admitted, .. } if admitted < self.config.half_open_probes => {
                Admission::Probe
            }
            Phase::HalfOpen { expires, .. } => Admission::Rejected {
                until: expires.unwrap_or_else(|| self.after_open(now)),
            },
        }
    }

    /// `now` plus the open period, or the last representable time.
    fn after_open(&self, now: Timestamp) -> Timestamp {
        let ms = i64::try_from(self.config.open_ms).unwrap_or(i64::MAX);
        now.checked_add(SignedDuration::from_millis(ms))
            .unwrap_or(Timestamp::MAX)
    }

    /// Adds an outcome, dropping the oldest when the window is full.
    fn push(&mut self, failed: bool) {
        if self.window.len() >= self.config.window as usize && self.window.pop_front() == Some(true)
        {
            self.failures -= 1;
        }
        self.window.push_back(failed);
        if failed {
            self.failures += 1;
        }
    }

    fn calls(&self) -> u32 {
        // The window never holds more than `MAX_WINDOW` outcomes.
        u32::try_from(self.window.len()).unwrap_or(u32::MAX)
    }

    fn failure_rate(&self) -> f64 {
        match self.calls() {
            0 => 0.0,
            calls => f64::from(self.failures) / f64::from(calls),
        }
    }
}

/// Whether a failure of this class says something about the tool's health, and so counts
/// toward opening its breaker.
///
/// Counted: `transient` (timeouts, 5xx, resets), `rate_limited` (the tool is saturated;
/// backing off all callers helps it), `model_error`, and `schema_violation`: a tool that
/// answers, but with garbage, is unhealthy, and calling it again is likely to get more.
///
/// Not counted: failures of the caller's request, credentials, account or rules
/// (`invalid_input`, `auth`, `quota_exhausted`, `policy_denied`, `business`), and answers that
/// are not failures of the tool (`empty_results`). `capability_missing` is not counted: the
/// tool lacks a feature and is not failing, and opening its breaker would block the calls it
/// can serve. `partial_success` is not counted: the class records what happened to side
/// effects, which hides why the call stopped. `unclassified` is not counted: nothing is known,
/// and a breaker must not open on a guess.
pub fn counts_against_tool(class: Class) -> bool {
    match class {
        Class::Transient | Class::RateLimited | Class::ModelError | Class::SchemaViolation => true,
        Class::QuotaExhausted
        | Class::InvalidInput
        | Class::Auth
        | Class::PolicyDenied
        | Class::CapabilityMissing
        | Class::EmptyResults
        | Class::Business
        | Class::PartialSuccess
        | Class::Unclassified => false,
    }
}

#[cfg(test)]
// The floats compared here are exact: whole token counts and ratios of small integers.
#[allow(clippy::float_cmp)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::class::ALL_CLASSES;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    /// Window 10, opens at 50% after 4 calls, open 30 s, 2 probes.
    fn small() -> Breaker {
        Breaker::new(BreakerConfig {
            window: 10,
            failure_rate: 0.5,
            min_calls: 4,
            open_ms: 30_000,
            half_open_probes: 2,
        })
    }

    /// A breaker opened at second 0, until second 30.
    fn opened() -> Breaker {
        let mut breaker = small();
        for _ in 0..4 {
            breaker.record_failure(at(0));
        }
        assert_eq!(breaker.state(at(0)), BreakerState::Open);
        breaker
    }

    #[test]
    fn the_defaults_are_valid_and_fill_missing_fields() {
        assert!(BreakerConfig::default().validate("breaker").is_empty());
        let config: BreakerConfig =
            serde_json::from_str(r#"{"window": 5, "min_calls": 5}"#).unwrap();
        assert_eq!(config.window, 5);
        assert_eq!(config.open_ms, 30_000);
        assert!(serde_json::from_str::<BreakerConfig>(r#"{"windw": 5}"#).is_err());
    }

    #[test]
    fn every_bad_setting_is_an_issue_with_its_path() {
        let config = BreakerConfig {
            window: 0,
            failure_rate: f64::NAN,
            min_calls: 0,
            open_ms: 0,
            half_open_probes: 0,
        };
        let paths: Vec<String> = config
            .validate("breaker")
            .into_iter()
            .inspect(|issue| assert_eq!(issue.code, "out_of_range"))
            .map(|issue| issue.path)
            .collect();
        assert_eq!(
            paths,
            [
                "breaker.window",
                "breaker.failure_rate",
                "breaker.min_calls",
                "breaker.open_ms",
                "breaker.half_open_probes"
            ]
        );
        for rate in [0.0, -0.5, 1.5, f64::INFINITY] {
            let config = BreakerConfig {
                failure_rate: rate,
                ..BreakerConfig::default()
            };
            assert_eq!(config.validate("").len(), 1, "{rate}");
        }
        let config = BreakerConfig {
            window: 5,
            min_calls: 6,
            ..BreakerConfig::default()
        };
        assert_eq!(config.validate("")[0].path, "min_calls");
        let config = BreakerConfig {
            window: MAX_WINDOW + 1,
            ..BreakerConfig::default()
        };
        assert_eq!(config.validate("")[0].path, "window");
    }

    #[test]
    fn closed_stays_closed_under_min_calls() {
        let mut breaker = small();
        for _ in 0..3 {
            breaker.record_failure(at(0));
            assert_eq!(breaker.admit(at(0)), Admission::Allowed);
        }
        assert_eq!(breaker.state(at(0)), BreakerState::Closed);
        assert_eq!(breaker.view(at(0)).failure_rate, 1.0);
    }

    #[test]
    fn opens_exactly_at_the_threshold() {
        let mut breaker = small();
        for _ in 0..5 {
            breaker.record_success(at(0));
        }
        for _ in 0..4 {
            breaker.record_failure(at(0));
            assert_eq!(breaker.state(at(0)), BreakerState::Closed);
        }
        // 5 failures in 10 calls is 0.5.
        breaker.record_failure(at(1));
        let view = breaker.view(at(1));
        assert_eq!(view.state, BreakerState::Open);
        assert_eq!((view.calls, view.failures), (10, 5));
        assert_eq!(view.open_until, Some(at(31)));
    }

    #[test]
    fn rejected_while_open_with_until() {
        let mut breaker = opened();
        let rejected = Admission::Rejected { until: at(30) };
        assert_eq!(breaker.admit(at(0)), rejected);
        assert_eq!(breaker.admit(at(29)), rejected);
        // Outcomes reported while open change nothing.
        breaker.record_success(at(10));
        breaker.record_failure(at(20));
        assert_eq!(breaker.peek(at(29)), rejected);
    }

    #[test]
    fn half_open_after_open_ms() {
        let mut breaker = opened();
        assert_eq!(breaker.state(at(30)), BreakerState::HalfOpen);
        assert_eq!(breaker.view(at(30)).open_until, None);
        assert_eq!(breaker.admit(at(30)), Admission::Probe);
    }

    #[test]
    fn probes_are_limited_until_they_report() {
        let mut breaker = opened();
        assert_eq!(breaker.admit(at(30)), Admission::Probe);
        assert_eq!(breaker.admit(at(31)), Admission::Probe);
        assert_eq!(breaker.view(at(31)).probes_left, 0);
        assert_eq!(breaker.admit(at(32)), Admission::Rejected { until: at(61) });
        // One success frees no place: the limit is on probes let through.
        breaker.record_success(at(33));
        assert_eq!(breaker.admit(at(34)), Admission::Rejected { until: at(61) });
    }

    #[test]
    fn lost_probes_expire_and_give_their_places_back() {
        let mut breaker = opened();
        assert_eq!(breaker.admit(at(30)), Admission::Probe);
        assert_eq!(breaker.admit(at(30)), Admission::Probe);
        breaker.record_success(at(31));
        assert_eq!(breaker.admit(at(59)), Admission::Rejected { until: at(60) });
        // The unreported probe's place is free again; the success still counts.
        assert_eq!(breaker.admit(at(60)), Admission::Probe);
        assert_eq!(breaker.admit(at(60)), Admission::Rejected { until: at(90) });
        breaker.record_success(at(61));
        assert_eq!(breaker.state(at(61)), BreakerState::Closed);
    }

    #[test]
    fn one_probe_failure_reopens() {
        let mut breaker = opened();
        assert_eq!(breaker.admit(at(30)), Admission::Probe);
        assert_eq!(breaker.admit(at(30)), Admission::Probe);
        breaker.record_success(at(31));
        breaker.record_failure(at(32));
        assert_eq!(breaker.state(at(32)), BreakerState::Open);
        assert_eq!(breaker.admit(at(40)), Admission::Rejected { until: at(62) });
    }

    #[test]
    fn enough_probe_successes_close_and_clear_the_window() {
        let mut breaker = opened();
        // A success with no probe out is stale and does not count.
        breaker.record_success(at(30));
        assert_eq!(breaker.state(at(30)), BreakerState::HalfOpen);
        breaker.admit(at(30));
        breaker.admit(at(30));
        breaker.record_success(at(31));
        assert_eq!(breaker.state(at(31)), BreakerState::HalfOpen);
        breaker.record_success(at(32));
        let view = breaker.view(at(32));
        assert_eq!(view.state, BreakerState::Closed);
        assert_eq!((view.calls, view.failures, view.probes_left), (0, 0, 0));
        assert_eq!(breaker.admit(at(32)), Admission::Allowed);
    }

    #[test]
    fn the_window_forgets_old_outcomes() {
        let mut breaker = small();
        for _ in 0..6 {
            breaker.record_success(at(0));
        }
        for _ in 0..4 {
            breaker.record_failure(at(0));
        }
        assert_eq!(breaker.view(at(0)).failures, 4);
        for _ in 0..10 {
            breaker.record_success(at(1));
        }
        let view = breaker.view(at(1));
        assert_eq!((view.calls, view.failures), (10, 0));
        // 4 failures alone are now under 0.5 of a full window of 10.
        for _ in 0..4 {
            breaker.record_failure(at(2));
        }
        assert_eq!(breaker.state(at(2)), BreakerState::Closed);
        breaker.record_failure(at(2));
        assert_eq!(breaker.state(at(2)), BreakerState::Open);
    }

    #[test]
    fn a_rate_of_one_needs_every_call_to_fail() {
        let mut breaker = Breaker::new(BreakerConfig {
            window: 4,
            failure_rate: 1.0,
            min_calls: 4,
            ..BreakerConfig::default()
        });
        breaker.record_success(at(0));
        for _ in 0..3 {
            breaker.record_failure(at(0));
        }
        assert_eq!(breaker.state(at(0)), BreakerState::Closed);
        breaker.record_failure(at(0));
        assert_eq!(breaker.state(at(0)), BreakerState::Open);
    }

    #[test]
    fn which_classes_count_against_the_tool() {
        let counted: Vec<&str> = ALL_CLASSES
            .into_iter()
            .filter(|class| counts_against_tool(*class))
            .map(Class::as_str)
            .collect();
        assert_eq!(
            counted,
            [
                "transient",
                "rate_limited",
                "schema_violation",
                "model_error"
            ]
        );
        assert!(!counts_against_tool(Class::InvalidInput));
        assert!(!counts_against_tool(Class::PolicyDenied));
    }

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Admit,
        Success,
        Failure,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![Just(Op::Admit), Just(Op::Success), Just(Op::Failure)]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(7),
            ..ProptestConfig::default()
        })]

        #[test]
        fn the_breaker_keeps_its_invariants(
            window in 1u32..12,
            min_calls in 1u32..12,
            rate_tenths in 1u32..=10,
            probes in 1u32..4,
            steps in prop::collection::vec((op(), 0i64..20_000), 1..200),
        ) {
            let config = BreakerConfig {
                window,
                failure_rate: f64::from(rate_tenths) / 10.0,
                min_calls: min_calls.min(window),
                open_ms: 10_000,
                half_open_probes: probes,
            };
            let mut breaker = Breaker::new(config);
            let mut now = at(0);
            // Probes let through and successes counted in the current half-open stretch, as
            // the breaker's contract describes them.
            let (mut out, mut succeeded, mut last_probe) = (0u32, 0u32, None::<Timestamp>);
            for (op, step_ms) in steps {
                now = now.checked_add(SignedDuration::from_millis(step_ms)).unwrap();
                let before = breaker.state(now);
                if before != BreakerState::HalfOpen {
                    (out, succeeded, last_probe) = (0, 0, None);
                } else if last_probe.is_some_and(|t| now.duration_since(t).as_millis() >= 10_000) {
                    out = succeeded;
                }
                match op {
                    Op::Admit => {
                        let admission = breaker.admit(now);
                        if admission == Admission::Probe {
                            out += 1;
                            last_probe = Some(now);
                        }
                        prop_assert!(out <= probes, "{out} probes out of {probes}");
                        let view = breaker.view(now);
                        if view.state == BreakerState::Open {
                            let until = view.open_until.unwrap();
                            prop_assert!(until > now);
                            prop_assert_eq!(admission, Admission::Rejected { until });
                        }
                    }
                    Op::Success => {
                        if before == BreakerState::HalfOpen && succeeded < out {
                            succeeded += 1;
                        }
                        breaker.record_success(now);
                    }
                    Op::Failure => breaker.record_failure(now),
                }
                let view = breaker.view(now);
                if view.state != BreakerState::HalfOpen {
                    (out, succeeded, last_probe) = (0, 0, None);
                }
                prop_assert!(matches!(
                    view.state,
                    BreakerState::Closed | BreakerState::Open | BreakerState::HalfOpen
                ));
                prop_assert!(view.calls <= window);
                prop_assert!(view.failures <= view.calls);
                prop_assert!(view.probes_left <= probes);
                prop_assert_eq!(view.open_until.is_some(), view.state == BreakerState::Open);
            }
        }
    }
}
