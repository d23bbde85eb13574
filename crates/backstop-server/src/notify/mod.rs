//! Notifications for people: `[[notify]]` targets subscribed on the ledger, and the worker that
//! delivers the outbox the store fills (`backstop_store`'s notification methods).
//!
//! - `send`: one signed try over HTTP
//! - `worker`: the delivery loop, on a thread of its own, with a breaker per target
//!
//! The worker claims rows under a lease, so several servers on one ledger never try one row
//! at once; a try cut short by a stop or a crash is tried again after the lease, under the
//! same `Backstop-Event-Id`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use backstop_store::{Store, StoreError, Subscription};
use jiff::Timestamp;

use crate::config::NotifyTarget;
use crate::state::AppState;

mod send;
mod worker;

pub use send::{EVENT_HEADER, EVENT_ID_HEADER};

/// Makes `targets` the ledger's subscriptions (the last server to start sets them for every
/// process on the ledger); pending notifications of a target no longer named are given up.
///
/// It writes the ledger: call it outside an async runtime, or in `spawn_blocking`.
pub fn subscribe(
    store: &dyn Store,
    targets: &[NotifyTarget],
    now: Timestamp,
) -> Result<(), StoreError> {
    let subscriptions: Vec<Subscription> = targets
        .iter()
        .map(|t| Subscription {
            target: t.name.clone(),
            kinds: t.events.clone(),
        })
        .collect();
    let given_up = store.subscribe_notifications(&subscriptions, now)?;
    if given_up > 0 {
        tracing::warn!(
            given_up,
            "pending notifications of targets no longer in [[notify]] were given up"
        );
    }
    Ok(())
}

/// The running worker; [`Notifier::stop`] ends it.
#[derive(Debug)]
pub struct Notifier {
    stopping: Arc<AtomicBool>,
    stop: mpsc::Sender<()>,
    thread: Option<JoinHandle<()>>,
    /// The longest a try in flight may take.
    timeout: Duration,
}

impl Notifier {
    /// Starts delivering for the state's targets; `None` when the config names none.
    pub fn start(state: &Arc<AppState>) -> Option<Notifier> {
        if state.config.notify.targets.is_empty() {
            return None;
        }
        let stopping = Arc::new(AtomicBool::new(false));
        let (stop, stopped) = mpsc::channel();
        let worker = worker::Worker {
            state: Arc::clone(state),
            stopping: Arc::clone(&stopping),
            prefix: crate::effects::fresh_secret()[..16].to_owned(),
        };
        let thread = std::thread::Builder::new()
            .name("backstop-notify".to_owned())
            .spawn(move || worker.run(&stopped));
        let thread = match thread {
            Ok(thread) => thread,
            Err(e) => {
                tracing::error!(error = %e, "the notification worker could not start");
                return None;
            }
        };
        Some(Notifier {
            stopping,
            stop,
            thread: Some(thread),
            timeout: Duration::from_millis(state.config.notify.delivery.timeout_ms),
        })
    }

    /// Stops the worker: no new try starts, and a try in flight is waited for (up to its
    /// timeout); what was claimed and not tried is released at once.
    pub async fn stop(mut self) {
        self.stopping.store(true, Ordering::Relaxed);
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let joined = tokio::task::spawn_blocking(move || thread.join());
            let wait = self.timeout + Duration::from_secs(1);
            if tokio::time::timeout(wait, joined).await.is_err() {
                tracing::warn!("the notification worker did not stop in time; its claims expire");
            }
        }
    }
}
