//! The purge `serve` runs on its own (`[retention]`): every `every`, records older than `days`
//! are deleted, as `backstop purge` deletes them. What a later decision depends on stays (open
//! cases and their review items, suppressions, call state within its window and the journal
//! past the kept position: the store's purge keeps them). Each run is logged and counted.

use std::sync::Arc;

use backstop_store::{Purged, StoreError};
use jiff::Timestamp;

use crate::state::AppState;

/// Purges what is older than the config's retention, as of `now`: what was deleted, or
/// `None` when the config turns the purge off.
pub async fn purge_once(state: &AppState, now: Timestamp) -> Result<Option<Purged>, StoreError> {
    let Some(keep) = state.config.retention.keep() else {
        return Ok(None);
    };
    let before = now.checked_sub(keep).unwrap_or(Timestamp::MIN);
    let store = Arc::clone(&state.store);
    let purged = tokio::task::spawn_blocking(move || store.purge(before))
        .await
        .map_err(|e| StoreError::Database(format!("the purge stopped: {e}")))??;
    state.metrics.purged(&purged);
    tracing::info!(
        before = %before,
        attempts = purged.attempts,
        reviews = purged.reviews,
        events = purged.events,
        cases = purged.cases,
        dispatches = purged.dispatches,
        deliveries = purged.deliveries,
        notifications = purged.notifications,
        "records past retention purged"
    );
    Ok(Some(purged))
}

/// Runs the purge every `[retention] every` (the first one interval after the start) until
/// the state is dropped elsewhere; nothing when `[retention] days = 0`.
pub(crate) fn start(state: &Arc<AppState>) {
    if state.config.retention.keep().is_none() {
        tracing::info!("[retention] days = 0: serve purges nothing on its own");
        return;
    }
    let every = state.config.retention.every;
    let state = Arc::clone(state);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if Arc::strong_count(&state) == 1 {
                return;
            }
            if let Err(e) = purge_once(&state, Timestamp::now()).await {
                tracing::warn!(error = %e, "the purge failed; it runs again at its next turn");
            }
        }
    });
}
