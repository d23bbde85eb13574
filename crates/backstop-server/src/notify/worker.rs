//! The delivery loop, on a thread of its own (every call in it blocks: the ledger, the HTTP
//! tries): each round, for each target whose breaker lets calls through, claim what is due,
//! try each, record what it came to; then wait for the next round or the stop.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use backstop_core::notify::{Retry, after_failure};
use backstop_core::recover::breaker::{Admission, Breaker};
use backstop_store::{NotificationRecord, NotifyOutcome};
use jiff::Timestamp;

use super::send;
use crate::config::NotifyTarget;
use crate::state::AppState;

/// How many notifications of one target are claimed at once.
const BATCH: u32 = 16;

/// What the loop works with.
pub(super) struct Worker {
    pub state: Arc<AppState>,
    pub stopping: Arc<AtomicBool>,
    /// Unique to this worker: its claims are `<prefix>-<n>`.
    pub prefix: String,
}

impl Worker {
    /// Rounds until the stop comes (or its sender is dropped).
    pub fn run(self, stop: &Receiver<()>) {
        let policy = self.state.config.notify.delivery;
        let agent = send::agent(Duration::from_millis(policy.timeout_ms));
        let mut breakers: HashMap<String, Breaker> = HashMap::new();
        let mut claims: u64 = 0;
        let poll = Duration::from_millis(policy.poll_ms.max(1));
        loop {
            for target in &self.state.config.notify.targets {
                if self.stopping.load(Ordering::Relaxed) {
                    return;
                }
                let breaker = breakers
                    .entry(target.name.clone())
                    .or_insert_with(|| Breaker::new(policy.breaker));
                claims += 1;
                let claim = format!("{}-{claims}", self.prefix);
                self.round(target, breaker, &claim, &agent);
            }
            match stop.recv_timeout(poll) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// One target's due notifications, claimed and tried.
    fn round(
        &self,
        target: &NotifyTarget,
        breaker: &mut Breaker,
        claim: &str,
        agent: &ureq::Agent,
    ) {
        let policy = &self.state.config.notify.delivery;
        let now = Timestamp::now();
        let limit = match breaker.peek(now) {
            Admission::Rejected { .. } => return,
            Admission::Probe => 1,
            Admission::Allowed => BATCH,
        };
        let store = &self.state.store;
        // The lease outlasts the whole batch (each try may take the full timeout), so no other
        // server claims a row while this one may still be sending it.
        let lease = batch_lease(policy.lease, policy.timeout_ms, limit);
        let due = match store.claim_notifications(&target.name, claim, now, lease, limit) {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(to = %target.name, error = %e, "notifications could not be claimed; trying again next round");
                return;
            }
        };
        // The target's host resolved and checked once a round, not once a notification.
        let refused = if due.is_empty() {
            None
        } else {
            self.state.config.outbound.check_resolved(&target.url).err()
        };
        for row in due {
            let outcome = if self.stopping.load(Ordering::Relaxed) {
                NotifyOutcome::Release {
                    at: Timestamp::now(),
                }
            } else {
                self.try_one(target, breaker, &row, agent, refused.as_deref())
            };
            match store.finish_notification(
                &row.id,
                &target.name,
                claim,
                &outcome,
                Timestamp::now(),
            ) {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(id = %row.id, to = %target.name, "a notification's lease passed before its try was recorded; it is tried again");
                }
                Err(e) => {
                    tracing::warn!(id = %row.id, to = %target.name, error = %e, "a notification's try could not be recorded; it is tried again after its lease");
                }
            }
        }
    }

    /// One try of `row`, unless the breaker refuses it now; counted in the metrics.
    fn try_one(
        &self,
        target: &NotifyTarget,
        breaker: &mut Breaker,
        row: &NotificationRecord,
        agent: &ureq::Agent,
        refused: Option<&str>,
    ) -> NotifyOutcome {
        let policy = &self.state.config.notify.delivery;
        if let Admission::Rejected { until } = breaker.admit(Timestamp::now()) {
            return NotifyOutcome::Release { at: until };
        }
        let sent = match refused {
            None => send::post(agent, target, &row.payload, Timestamp::now().as_second()),
            Some(why) => Err(format!("not contacted: {why}")),
        };
        let now = Timestamp::now();
        let metrics = &self.state.metrics;
        match sent {
            Ok(()) => {
                breaker.record_success(now);
                metrics.notification(target.name.as_str(), "delivered");
                NotifyOutcome::Delivered
            }
            Err(error) => {
                breaker.record_failure(now);
                let tries = row.attempts + 1;
                match after_failure(policy, &row.id, tries, row.created_at, now) {
                    Retry::At(at) => {
                        metrics.notification(target.name.as_str(), "retried");
                        tracing::info!(id = %row.id, to = %target.name, tries, %error, "a notification was not delivered; it is tried again");
                        NotifyOutcome::Retry { at, error }
                    }
                    Retry::GiveUp => {
                        metrics.notification(target.name.as_str(), "failed");
                        tracing::warn!(id = %row.id, to = %target.name, tries, %error, "a notification was given up");
                        NotifyOutcome::Failed { error }
                    }
                }
            }
        }
    }
}

/// A claim's lease: the configured one, or longer than `limit` tries of `timeout_ms` each (and
/// a margin) when that is longer.
fn batch_lease(lease: jiff::SignedDuration, timeout_ms: u64, limit: u32) -> jiff::SignedDuration {
    let batch_ms = timeout_ms
        .saturating_mul(u64::from(limit))
        .saturating_add(10_000);
    let batch = jiff::SignedDuration::from_millis(i64::try_from(batch_ms).unwrap_or(i64::MAX));
    lease.max(batch)
}

#[cfg(test)]
mod lease_tests {
    #[test]
    fn a_lease_outlasts_a_batch_of_tries_at_their_timeout() {
        let configured = jiff::SignedDuration::from_secs(60);
        let lease = super::batch_lease(configured, 10_000, 16);
        assert!(
            lease > jiff::SignedDuration::from_secs(16 * 10),
            "{lease:?}"
        );
        assert_eq!(super::batch_lease(configured, 100, 1), configured);
    }
}
