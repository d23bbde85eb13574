//! Side effects in the service: dispatches gated by the ledger, deliveries received by
//! webhook (signed, deduplicated by event id, recorded before anything is decided), decided
//! from the record through the case machinery, a reconciliation sweep for results that never
//! came, and the simulator that stands in for a live target.
//!
//! - `signature`: the webhook HMAC and its five-minute window
//! - `apply`: recorded deliveries decided, dispatches moved on, contacts suppressed
//! - `sweep`: dispatches with no result reconciled, then escalated
//! - `simulated`: the simulator's deliveries over HTTP

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use backstop_store::DispatchRecord;
use tokio::sync::{Notify, mpsc};

pub mod apply;
pub mod signature;
pub mod simulated;
pub mod sweep;

pub use apply::{Applied, apply_pending};
pub use simulated::SimulatorStats;
pub use sweep::{Swept, sweep_once};

/// What the side-effect tasks share with the handlers.
#[derive(Debug)]
pub struct Effects {
    /// Wakes the task that decides recorded deliveries.
    pub recorded: Notify,
    /// The simulator's signing secret.
    pub simulator_secret: String,
    /// What the simulator did.
    pub stats: Arc<SimulatorStats>,
    /// Held while recorded deliveries are decided, so this process decides each once.
    pub(crate) applying: tokio::sync::Mutex<()>,
    simulator: Mutex<Option<mpsc::UnboundedSender<DispatchRecord>>>,
}

impl Effects {
    /// Side effects with the simulator signing as `secret`.
    pub fn new(simulator_secret: String) -> Self {
        Self {
            recorded: Notify::new(),
            simulator_secret,
            stats: Arc::new(SimulatorStats::default()),
            applying: tokio::sync::Mutex::new(()),
            simulator: Mutex::new(None),
        }
    }

    /// Hands a simulated dispatch to the simulator, when it runs (under `serve`).
    pub fn simulate(&self, dispatch: DispatchRecord) {
        let sender = self
            .simulator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(sender) = sender.as_ref() {
            let _ = sender.send(dispatch);
        }
    }
}

/// A signing secret no other process has and nobody can guess (256 bits from the system's
/// random source): the simulator's, when the config names none. (It was a hash of the process
/// id, the time and the thread: guessable, and a guess signs simulator deliveries.)
pub fn fresh_secret() -> String {
    crate::ui::session::fresh_secret()
}

/// Starts the tasks: deliveries decided as they are recorded, the sweep on its interval, and
/// the simulator posting to the service at `addr`.
pub fn start(state: &Arc<crate::AppState>, addr: SocketAddr) {
    let effects = &state.effects;
    let sender = simulated::start(
        addr,
        state.config.effects.simulator,
        effects.simulator_secret.clone(),
        Arc::clone(&effects.stats),
    );
    *effects
        .simulator
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sender);
    let applying = Arc::clone(state);
    tokio::spawn(async move {
        loop {
            let _ = tokio::time::timeout(
                std::time::Duration::from_secs(1),
                applying.effects.recorded.notified(),
            )
            .await;
            if Arc::strong_count(&applying) == 1 {
                return;
            }
            if let Err(e) = apply_pending(&applying).await {
                tracing::warn!(error = %e, "recorded deliveries could not be decided yet");
            }
        }
    });
    sweep::start(Arc::clone(state), state.config.effects.sweep_interval);
}
