//! When a notification that was not delivered is tried again, and when it is given up: the
//! recovery backoff (`recover::backoff`), seeded by the notification's id so two servers
//! compute the same delay, and a limit on tries and on age.

use jiff::{SignedDuration, Timestamp};

use crate::recover::backoff::{Jitter, delay_ms, task_hash};
use crate::recover::breaker::BreakerConfig;
use crate::recover::strategy::{BackoffConfig, BackoffKind};

/// How notifications are delivered: plain data with documented defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeliveryPolicy {
    /// The delay after a failed try: equal jitter, from 1 s doubling to 15 minutes.
    pub backoff: BackoffConfig,
    /// Each target's breaker: past half of the last 10 tries failed (at least 3), no try for
    /// 30 s, then one probe.
    pub breaker: BreakerConfig,
    /// Tries before a notification is given up (default 100).
    pub max_attempts: u32,
    /// Age past which a notification is given up (default 24 hours).
    pub max_age: SignedDuration,
    /// How long a claimed notification is kept from other workers (default 60 s): a worker
    /// that stops mid-try leaves it to be tried again after this.
    pub lease: SignedDuration,
    /// The longest one try may take, in milliseconds (default 10 s).
    pub timeout_ms: u64,
    /// How often the worker looks for due notifications, in milliseconds (default 1 s).
    pub poll_ms: u64,
}

impl Default for DeliveryPolicy {
    fn default() -> Self {
        Self {
            backoff: BackoffConfig {
                kind: BackoffKind::EqualJitter,
                base_ms: 1_000,
                multiplier: 2.0,
                cap_ms: 15 * 60 * 1_000,
                hint_jitter_ms: 0,
            },
            breaker: BreakerConfig {
                window: 10,
                failure_rate: 0.5,
                min_calls: 3,
                open_ms: 30_000,
                half_open_probes: 1,
            },
            max_attempts: 100,
            max_age: SignedDuration::from_hours(24),
            lease: SignedDuration::from_secs(60),
            timeout_ms: 10_000,
            poll_ms: 1_000,
        }
    }
}

/// What follows a failed try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Try again at this time.
    At(Timestamp),
    /// Give up: mark it failed.
    GiveUp,
}

/// What follows the failed try number `attempts` (from 1) of the notification `id`, made at
/// `created_at`, failed at `now`: the next try, or giving up once `max_attempts` tries are
/// spent or the next one would fall past `max_age`.
pub fn after_failure(
    policy: &DeliveryPolicy,
    id: &str,
    attempts: u32,
    created_at: Timestamp,
    now: Timestamp,
) -> Retry {
    if attempts >= policy.max_attempts {
        return Retry::GiveUp;
    }
    let mut jitter = Jitter::new(task_hash(id), &[u64::from(attempts)]);
    let ms = delay_ms(
        &policy.backoff,
        policy.backoff.kind,
        attempts.saturating_sub(1),
        0,
        &mut jitter,
    );
    let delay = SignedDuration::from_millis(i64::try_from(ms).unwrap_or(i64::MAX));
    let (Ok(next), Ok(deadline)) = (
        now.checked_add(delay),
        created_at.checked_add(policy.max_age),
    ) else {
        return Retry::GiveUp;
    };
    if next > deadline {
        Retry::GiveUp
    } else {
        Retry::At(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t0() -> Timestamp {
        "2026-11-01T09:00:00Z".parse().unwrap()
    }

    fn delay(policy: &DeliveryPolicy, attempts: u32) -> i64 {
        match after_failure(policy, "ntf_1", attempts, t0(), t0()) {
            Retry::At(at) => at.duration_since(t0()).as_millis().try_into().unwrap(),
            Retry::GiveUp => panic!("gave up after {attempts}"),
        }
    }

    #[test]
    fn delays_grow_from_the_base_to_the_cap_with_half_kept() {
        let policy = DeliveryPolicy::default();
        let first = delay(&policy, 1);
        assert!((500..=1_000).contains(&first), "{first}");
        let fifth = delay(&policy, 5);
        assert!((8_000..=16_000).contains(&fifth), "{fifth}");
        let late = delay(&policy, 40);
        assert!((450_000..=900_000).contains(&late), "{late}");
        assert_eq!(
            delay(&policy, 3),
            delay(&policy, 3),
            "the same id, the same delay"
        );
    }

    #[test]
    fn a_notification_is_given_up_after_its_tries_or_its_age() {
        let policy = DeliveryPolicy {
            max_attempts: 3,
            ..DeliveryPolicy::default()
        };
        assert!(matches!(
            after_failure(&policy, "ntf_1", 2, t0(), t0()),
            Retry::At(_)
        ));
        assert_eq!(
            after_failure(&policy, "ntf_1", 3, t0(), t0()),
            Retry::GiveUp
        );
        let day_later = t0() + SignedDuration::from_hours(24);
        let policy = DeliveryPolicy::default();
        assert_eq!(
            after_failure(&policy, "ntf_1", 2, t0(), day_later),
            Retry::GiveUp
        );
        let almost = t0() + SignedDuration::from_hours(23);
        assert!(matches!(
            after_failure(&policy, "ntf_1", 2, t0(), almost),
            Retry::At(_)
        ));
    }
}
