//! Attempts go to the ledger through one thread, first come first served.
//!
//! Every attempt is one write transaction, and the ledger takes one at a time. Under load, many
//! blocking threads contending for its lock are served in no order, and some wait far longer
//! than the rest; one thread taking attempts from a queue serves them in arrival order, stays
//! busy while there is work, and leaves the async workers free.

use std::sync::Arc;
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread;

use backstop_core::case::Request;
use backstop_core::pack::Pack;
use backstop_store::{Reply, Store, StoreError};
use jiff::Timestamp;
use tokio::sync::oneshot;

struct Job {
    pack: Arc<Pack>,
    caller: String,
    request: Request,
    answer: oneshot::Sender<(Result<Reply, StoreError>, std::time::Duration)>,
}

/// Attempts waiting at most; past it a request is answered 503 at once rather than queued.
pub const QUEUE_BOUND: usize = 4096;

/// Why an attempt did not reach the ledger.
#[derive(Debug)]
pub enum QueueError {
    /// The queue is full: the service is over its capacity.
    Full,
    /// The attempt thread has stopped.
    Stopped,
}

/// The queue of attempts and the thread that runs them.
#[derive(Debug)]
pub struct AttemptQueue {
    jobs: SyncSender<Job>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("caller", &self.caller)
            .finish_non_exhaustive()
    }
}

impl AttemptQueue {
    /// Starts the thread; it stops when the queue is dropped.
    pub fn start(store: Arc<dyn Store>) -> std::io::Result<AttemptQueue> {
        let (jobs, queued) = mpsc::sync_channel::<Job>(QUEUE_BOUND);
        thread::Builder::new()
            .name("backstop-attempts".to_owned())
            .spawn(move || {
                while let Ok(job) = queued.recv() {
                    let started = std::time::Instant::now();
                    // The time is taken when the attempt runs, in arrival order, so the ledger's
                    // times never go backwards. A panic fails this attempt, not the thread.
                    let Job {
                        pack,
                        caller,
                        request,
                        answer,
                    } = job;
                    let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        store.decide(pack, &caller, request, Timestamp::now())
                    }))
                    .unwrap_or_else(|_| {
                        Err(StoreError::Database(
                            "an attempt panicked; see the log".to_owned(),
                        ))
                    });
                    let _ = answer.send((reply, started.elapsed()));
                }
            })?;
        Ok(AttemptQueue { jobs })
    }

    /// Runs one attempt; the answer comes once it is committed (or refused), with the time the
    /// ledger took.
    pub async fn decide(
        &self,
        pack: Arc<Pack>,
        caller: String,
        request: Request,
    ) -> Result<(Result<Reply, StoreError>, std::time::Duration), QueueError> {
        let (answer, answered) = oneshot::channel();
        let job = Job {
            pack,
            caller,
            request,
            answer,
        };
        self.jobs.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => QueueError::Full,
            TrySendError::Disconnected(_) => QueueError::Stopped,
        })?;
        answered.await.map_err(|_| QueueError::Stopped)
    }
}
