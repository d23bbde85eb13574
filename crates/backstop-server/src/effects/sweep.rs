//! The reconciliation sweep: a dispatch whose result has not come by its `reconcile_at` is
//! asked for (the pack's status URL, or the simulator for a simulated one). What comes back is
//! recorded as a delivery and decided like any other; when nothing comes back, the sweep
//! records that the source's status is `unknown`, which the pack reconciles once and then
//! hands to a person. Reconciling uses no attempt; nothing is ever redialled.

use std::sync::Arc;

use backstop_core::effects::{DispatchMode, parse_delivery, simulator};
use backstop_store::{DispatchFilter, DispatchRecord, StoreError};
use jiff::Timestamp;
use serde_json::{Value, json};

use super::apply::{Applied, apply_pending, blocking, kept};
use crate::state::AppState;

/// The source reconciled deliveries are recorded under.
pub const RECONCILE_SOURCE: &str = "reconcile";

/// What one sweep did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Swept {
    /// Dispatches looked at.
    pub due: usize,
    /// Of those, how many a status answer settled.
    pub answered: usize,
    /// How many stayed unknown.
    pub unknown: usize,
    /// What every delivery decided came to (the pending ones too).
    pub applied: Vec<Applied>,
}

/// Reconciles every dispatch due by `now`, then decides what was recorded.
pub async fn sweep_once(state: &AppState, now: Timestamp) -> Result<Swept, StoreError> {
    let due = blocking(&state.store, move |s| {
        s.dispatches(&DispatchFilter {
            due_by: Some(now),
            ..DispatchFilter::default()
        })
    })
    .await?;
    let mut swept = Swept {
        due: due.len(),
        ..Swept::default()
    };
    for dispatch in due {
        let asked = ask_status(state, &dispatch).await;
        let event_id = format!(
            "{RECONCILE_SOURCE}:{}:{}:{}",
            dispatch.key, dispatch.sends, dispatch.rounds
        );
        let unknown = json!({"event_id": event_id, "dispatch_key": dispatch.key,
                             "status": "unknown", "result": null, "confidence": 0.0});
        // An answer that cannot be read counts as no answer: reconciled once, then a person's,
        // never asked for again and again.
        let answered = asked.and_then(|mut body| {
            body["event_id"] = json!(event_id);
            body["dispatch_key"] = json!(dispatch.key);
            match parse_delivery(&body) {
                Ok(delivery) => Some(delivery),
                Err(issues) => {
                    let listed: Vec<String> = issues.iter().map(ToString::to_string).collect();
                    tracing::warn!(key = %dispatch.key, issues = %listed.join("; "), "the status answer could not be read; it counts as unknown");
                    None
                }
            }
        });
        let delivery = if let Some(delivery) = answered {
            swept.answered += 1;
            delivery
        } else {
            swept.unknown += 1;
            match parse_delivery(&unknown) {
                Ok(delivery) => delivery,
                Err(_) => continue,
            }
        };
        let pack = state.catalog().packs.get(&dispatch.job).cloned();
        let payload = kept(&delivery, pack.as_deref()).to_string();
        let key = dispatch.key.clone();
        blocking(&state.store, move |s| {
            s.record_delivery(RECONCILE_SOURCE, &event_id, Some(&key), &payload, now)
        })
        .await?;
    }
    swept.applied = apply_pending(state).await?;
    Ok(swept)
}

/// The dispatch's result as its source tells it now, if it tells.
async fn ask_status(state: &AppState, dispatch: &DispatchRecord) -> Option<Value> {
    if dispatch.mode == DispatchMode::Simulated {
        // The simulator always answers when asked: a lost delivery is found here.
        return Some(simulator::delivery(
            &dispatch.key,
            "",
            dispatch.simulate.as_ref(),
        ));
    }
    let url = state
        .catalog()
        .packs
        .get(&dispatch.job)?
        .dispatch
        .as_ref()?
        .status_url
        .as_ref()?
        .replace("{key}", &dispatch.key);
    let policy = state.config.outbound;
    let fetched = tokio::task::spawn_blocking(move || {
        if let Err(why) = policy.check_resolved(&url) {
            tracing::warn!(%why, "the status URL is not contacted");
            return None;
        }
        // A redirect is not followed: it could point anywhere the policy forbids.
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(std::time::Duration::from_secs(10)))
            .http_status_as_error(true)
            .max_redirects(0)
            .build()
            .new_agent();
        agent
            .get(&url)
            .call()
            .ok()?
            .body_mut()
            .read_json::<Value>()
            .ok()
    })
    .await
    .ok()
    .flatten();
    if fetched.is_none() {
        tracing::warn!(key = %dispatch.key, "the status URL did not answer");
    }
    fetched.filter(Value::is_object)
}

/// Runs the sweep every `interval` until the state is dropped elsewhere.
pub(crate) fn start(state: Arc<AppState>, interval: std::time::Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if Arc::strong_count(&state) == 1 {
                return;
            }
            if let Err(e) = sweep_once(&state, Timestamp::now()).await {
                tracing::warn!(error = %e, "the reconciliation sweep failed; it runs again");
            }
        }
    });
}
