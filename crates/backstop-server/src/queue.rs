//! Attempts and call-journal events go to the ledger through one thread, first come first
//! served.
//!
//! Every attempt is one write transaction, and the ledger takes one at a time. Under load, many
//! blocking threads contending for its lock are served in no order, and some wait far longer
//! than the rest; one thread taking work from a queue serves it in arrival order, stays busy
//! while there is work, and leaves the async workers free (no database call ever runs on one).
//! Journal events are queued under the hinter's lock, so they reach the ledger in the order the
//! hinter applied them, and replaying the journal rebuilds the same state.

use std::sync::Arc;
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread;

use backstop_core::case::Request;
use backstop_core::pack::Pack;
use backstop_store::{CallEvent, Reply, Store, StoreError};
use jiff::Timestamp;
use tokio::sync::oneshot;

/// Work for the ledger thread.
enum Job {
    /// One attempt of a case.
    Attempt {
        pack: Arc<Pack>,
        caller: String,
        request: Request,
        answer: oneshot::Sender<(Result<Reply, StoreError>, std::time::Duration)>,
    },
    /// One call-journal event.
    Journal {
        event: CallEvent,
        answer: oneshot::Sender<Result<(), StoreError>>,
    },
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
        match self {
            Job::Attempt { caller, .. } => f
                .debug_struct("Attempt")
                .field("caller", caller)
                .finish_non_exhaustive(),
            Job::Journal { event, .. } => f
                .debug_struct("Journal")
                .field("kind", &event.kind)
                .finish_non_exhaustive(),
        }
    }
}

/// A journal event on its way to the ledger.
#[derive(Debug)]
pub struct JournalReceipt(Option<oneshot::Receiver<Result<(), StoreError>>>);

impl JournalReceipt {
    /// Waits until the event is written; a failure is logged, never fatal to the call.
    pub async fn written(self) {
        let Some(written) = self.0 else {
            return;
        };
        match written.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "could not journal a call event"),
            Err(_) => tracing::error!("could not journal a call event: the ledger thread stopped"),
        }
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
                    run(store.as_ref(), job);
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
        let job = Job::Attempt {
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

    /// Queues a call-journal event without waiting; the receipt says when it is written. Call
    /// it under the hinter's lock, so events keep the hinter's order.
    pub fn journal(&self, event: CallEvent) -> JournalReceipt {
        let (answer, written) = oneshot::channel();
        match self.jobs.try_send(Job::Journal { event, answer }) {
            Ok(()) => JournalReceipt(Some(written)),
            Err(e) => {
                let why = match e {
                    TrySendError::Full(_) => "the ledger queue is full",
                    TrySendError::Disconnected(_) => "the ledger thread stopped",
                };
                tracing::error!("could not journal a call event: {why}");
                JournalReceipt(None)
            }
        }
    }
}

/// Runs one job on the ledger thread. A panic fails this job, not the thread.
fn run(store: &dyn Store, job: Job) {
    match job {
        Job::Attempt {
            pack,
            caller,
            request,
            answer,
        } => {
            let started = std::time::Instant::now();
            // The time is taken when the attempt runs, in arrival order, so the ledger's
            // times never go backwards.
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
        Job::Journal { event, answer } => {
            let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                store.append_event(&event)
            }))
            .unwrap_or_else(|_| {
                Err(StoreError::Database(
                    "journaling panicked; see the log".to_owned(),
                ))
            });
            let _ = answer.send(written);
        }
    }
}
