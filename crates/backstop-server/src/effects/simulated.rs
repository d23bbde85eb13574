//! The simulator, run by the service: each simulated dispatch is answered with a signed
//! webhook delivery to the service's own `/v1/webhooks/simulator`, after a delay, sometimes
//! twice, sometimes never (the sweep finds those), as its settings draw.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use backstop_core::effects::simulator::{SimulatorSettings, delivery, plan};
use backstop_store::DispatchRecord;
use tokio::sync::mpsc;

use super::signature::{SIGNATURE_HEADER, sign};
use crate::config::SIMULATOR_SOURCE;

/// What the simulator did, for the demo and for tests.
#[derive(Debug, Default)]
pub struct SimulatorStats {
    /// Deliveries sent (duplicates included).
    pub sent: AtomicU64,
    /// Of those, second copies.
    pub duplicates: AtomicU64,
    /// Deliveries the service answered as duplicates (recorded once, changed nothing).
    pub duplicates_dropped: AtomicU64,
    /// Dispatches whose delivery was never sent.
    pub lost: AtomicU64,
    /// Duplicates dropped, by dispatch key.
    pub dropped_by_key: std::sync::Mutex<std::collections::BTreeMap<String, u32>>,
}

impl SimulatorStats {
    /// The duplicates the service dropped for one dispatch.
    pub fn dropped(&self, key: &str) -> u32 {
        self.dropped_by_key
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .copied()
            .unwrap_or(0)
    }
}

/// Starts the simulator posting to `addr`; dispatches to answer come through the sender.
pub(crate) fn start(
    addr: SocketAddr,
    settings: SimulatorSettings,
    secret: String,
    stats: Arc<SimulatorStats>,
) -> mpsc::UnboundedSender<DispatchRecord> {
    let (send, mut receive) = mpsc::unbounded_channel::<DispatchRecord>();
    let url = format!(
        "http://127.0.0.1:{}/v1/webhooks/{SIMULATOR_SOURCE}",
        addr.port()
    );
    tokio::spawn(async move {
        while let Some(dispatch) = receive.recv().await {
            let planned = plan(&settings, &dispatch.key);
            if planned.copies == 0 {
                stats.lost.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let (url, secret, stats) = (url.clone(), secret.clone(), Arc::clone(&stats));
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(planned.delay_ms)).await;
                let event_id = format!("sim:{}:{}", dispatch.key, dispatch.sends);
                let body =
                    delivery(&dispatch.key, &event_id, dispatch.simulate.as_ref()).to_string();
                for copy in 0..planned.copies {
                    let (url, secret, body) = (url.clone(), secret.clone(), body.clone());
                    let answer = tokio::task::spawn_blocking(move || post(&url, &secret, &body))
                        .await
                        .ok()
                        .flatten();
                    stats.sent.fetch_add(1, Ordering::Relaxed);
                    if copy > 0 {
                        stats.duplicates.fetch_add(1, Ordering::Relaxed);
                    }
                    if answer.as_ref().is_some_and(|a| a["duplicate"] == true) {
                        stats.duplicates_dropped.fetch_add(1, Ordering::Relaxed);
                        *stats
                            .dropped_by_key
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .entry(dispatch.key.clone())
                            .or_default() += 1;
                    }
                    if answer.is_none() {
                        tracing::warn!(key = %dispatch.key, "the simulator's delivery was not taken");
                    }
                }
            });
        }
    });
    send
}

/// Posts one signed delivery; the service's answer, if it took it.
fn post(url: &str, secret: &str, body: &str) -> Option<serde_json::Value> {
    let now = jiff::Timestamp::now().as_second();
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(10)))
        .http_status_as_error(true)
        .build()
        .new_agent();
    agent
        .post(url)
        .header(SIGNATURE_HEADER, &sign(secret, now, body.as_bytes()))
        .header("content-type", "application/json")
        .send(body)
        .ok()?
        .body_mut()
        .read_json()
        .ok()
}
