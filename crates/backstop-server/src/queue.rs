//! Attempts and call-journal events go to the ledger through one thread, first come first
//! served.
//!
//! Every attempt is one write transaction, and the ledger takes one at a time. Under load, many
//! blocking threads contending for its lock are served in no order, and some wait far longer
//! than the rest; one thread taking work from a queue serves it in arrival order, stays busy
//! while there is work, and leaves the async workers free (no database call ever runs on one).
//!
//! The call journal is the call-level state's source of truth, shared by every process on the
//! ledger. This thread follows it: to journal an event it appends it and reads back every
//! event after its position (other processes' too), in the journal's one order, and applies
//! them all to the recovery before it answers, so the answer reflects everything any process
//! recorded before it. Reads catch up the same way first.

use backstop_core::case::RefusalCode;
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread;

use backstop_core::case::Request;
use backstop_core::pack::Pack;

use backstop_store::{CallEvent, DeliveryWrites, JournalEntry, Reply, Store, StoreError};

use crate::journal::{Applied, CallState};

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
    /// One attempt deciding a recorded delivery, written with what `then` asks of its reply
    /// in one transaction.
    Delivery {
        pack: Arc<Pack>,
        caller: String,
        request: Request,
        delivery: i64,
        then: DeliveryFollowUp,
        answer: oneshot::Sender<Result<(Reply, DeliveryWrites), StoreError>>,
    },
    /// One call-journal event: journaled, then everything up to it applied to the recovery; the
    /// answer is the step the event gave, if it was a task's failure.
    Journal {
        event: CallEvent,
        answer: JournalAnswer,
    },
    /// Applies what other processes journaled since this one last looked.
    CatchUp {
        answer: oneshot::Sender<Result<(), StoreError>>,
    },
    /// Resolves a review item, journaling in the same transaction the reset a task item's
    /// `retry` asks for.
    Resolve {
        id: i64,
        resolution: backstop_store::Resolution,
        answer: oneshot::Sender<Result<backstop_store::ReviewItem, StoreError>>,
    },
}

/// What a delivery's decision writes with its attempt, given the reply and the attempt's time.
pub type DeliveryFollowUp = Box<dyn Fn(&Reply, Timestamp) -> DeliveryWrites + Send>;

/// Where a journal event's step goes.
type JournalAnswer = oneshot::Sender<Result<Applied, StoreError>>;

/// The most journal events journaled in one transaction.
const MAX_BATCH: usize = 256;

/// Jobs waiting at most; past it a request is answered 503 at once rather than queued.
pub const QUEUE_BOUND: usize = 4096;

/// Why a job did not reach the ledger.
#[derive(Debug)]
pub enum QueueError {
    /// The queue is full: the service is over its capacity.
    Full,
    /// The ledger thread has stopped.
    Stopped,
}

/// The queue of attempts and journal events, and the thread that runs them; dropping it lets
/// the thread finish its queue and waits for it (so the store it holds is closed, and a `SQLite`
/// WAL truncated, before the process ends).
#[derive(Debug)]
pub struct AttemptQueue {
    jobs: Option<SyncSender<Job>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Drop for AttemptQueue {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Attempt { caller, .. } => f
                .debug_struct("Attempt")
                .field("caller", caller)
                .finish_non_exhaustive(),
            Job::Delivery { delivery, .. } => f
                .debug_struct("Delivery")
                .field("delivery", delivery)
                .finish_non_exhaustive(),
            Job::Journal { event, .. } => f
                .debug_struct("Journal")
                .field("kind", &event.kind)
                .finish_non_exhaustive(),
            Job::CatchUp { .. } => f.debug_struct("CatchUp").finish_non_exhaustive(),
            Job::Resolve { id, .. } => f
                .debug_struct("Resolve")
                .field("id", id)
                .finish_non_exhaustive(),
        }
    }
}

impl AttemptQueue {
    /// Starts the thread, following the journal from `position` into `calls`; it stops when
    /// the queue is dropped.
    pub fn start(
        store: Arc<dyn Store>,
        calls: Arc<Mutex<CallState>>,
        position: i64,
    ) -> std::io::Result<AttemptQueue> {
        let (jobs, queued) = mpsc::sync_channel::<Job>(QUEUE_BOUND);
        let thread = thread::Builder::new()
            .name("backstop-attempts".to_owned())
            .spawn(move || {
                let mut follower = Follower {
                    store,
                    calls,
                    position,
                    stale: false,
                    checkpointed: None,
                };
                let mut next = queued.recv().ok();
                while let Some(job) = next.take() {
                    match job {
                        // Journal events waiting together are journaled together: one
                        // transaction, one turn of the journal's lock, for the whole batch.
                        Job::Journal { event, answer } => {
                            let mut batch = vec![(event, answer)];
                            while batch.len() < MAX_BATCH {
                                match queued.try_recv() {
                                    Ok(Job::Journal { event, answer }) => {
                                        batch.push((event, answer));
                                    }
                                    Ok(other) => {
                                        next = Some(other);
                                        break;
                                    }
                                    Err(_) => break,
                                }
                            }
                            follower.journal(batch);
                        }
                        other => follower.run(other),
                    }
                    if next.is_none() {
                        next = queued.recv().ok();
                    }
                }
            })?;
        Ok(AttemptQueue {
            jobs: Some(jobs),
            thread: Some(thread),
        })
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
        self.send(job)?;
        answered.await.map_err(|_| QueueError::Stopped)
    }

    /// Decides recorded delivery `delivery` with `request`, writing what `then` asks of the
    /// reply in the attempt's transaction: the reply and what was written.
    pub async fn decide_delivery(
        &self,
        pack: Arc<Pack>,
        caller: String,
        request: Request,
        delivery: i64,
        then: DeliveryFollowUp,
    ) -> Result<Result<(Reply, DeliveryWrites), StoreError>, QueueError> {
        let (answer, answered) = oneshot::channel();
        self.send(Job::Delivery {
            pack,
            caller,
            request,
            delivery,
            then,
            answer,
        })?;
        answered.await.map_err(|_| QueueError::Stopped)
    }

    /// Journals a call-level event and applies the journal up to it: what the event gave.
    pub async fn journal(&self, event: CallEvent) -> Result<Applied, JournalError> {
        let (answer, answered) = oneshot::channel();
        self.send(Job::Journal { event, answer })?;
        answered
            .await
            .map_err(|_| JournalError::Queue(QueueError::Stopped))?
            .map_err(JournalError::Store)
    }

    /// Resolves review item `id` with `resolution` and, in the same transaction, journals the
    /// reset a task item's `retry` asks for: the resolved item.
    pub async fn resolve(
        &self,
        id: i64,
        resolution: backstop_store::Resolution,
    ) -> Result<Result<backstop_store::ReviewItem, StoreError>, QueueError> {
        let (answer, answered) = oneshot::channel();
        self.send(Job::Resolve {
            id,
            resolution,
            answer,
        })?;
        answered.await.map_err(|_| QueueError::Stopped)
    }

    /// Applies what other processes journaled since this one last looked.
    pub async fn catch_up(&self) -> Result<(), JournalError> {
        let (answer, answered) = oneshot::channel();
        self.send(Job::CatchUp { answer })?;
        answered
            .await
            .map_err(|_| JournalError::Queue(QueueError::Stopped))?
            .map_err(JournalError::Store)
    }

    fn send(&self, job: Job) -> Result<(), QueueError> {
        let jobs = self.jobs.as_ref().ok_or(QueueError::Stopped)?;
        jobs.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => QueueError::Full,
            TrySendError::Disconnected(_) => QueueError::Stopped,
        })
    }
}

/// Why the journal could not be followed.
#[derive(Debug)]
pub enum JournalError {
    /// The queue refused the job.
    Queue(QueueError),
    /// The ledger failed.
    Store(StoreError),
}

impl From<JournalError> for crate::error::ApiError {
    fn from(error: JournalError) -> Self {
        match error {
            JournalError::Queue(QueueError::Full) => {
                let mut busy = crate::error::ApiError::new(
                    RefusalCode::Busy,
                    "too many calls are waiting for the ledger; nothing was counted: send the \
                     same request again later",
                );
                busy.retry_after = Some(1);
                busy
            }
            JournalError::Queue(QueueError::Stopped) => {
                crate::error::ApiError::internal("the ledger thread", &"has stopped")
            }
            JournalError::Store(e) => crate::error::ApiError::store("the call journal failed", &e),
        }
    }
}

impl From<QueueError> for JournalError {
    fn from(error: QueueError) -> Self {
        JournalError::Queue(error)
    }
}

/// The ledger thread's state: the store, the recovery it keeps, and how far into the journal
/// the recovery is.
struct Follower {
    store: Arc<dyn Store>,
    calls: Arc<Mutex<CallState>>,
    position: i64,
    /// A journal transaction failed: the state is loaded again before the next job.
    stale: bool,
    /// When this thread last wrote the call state's changed rows (`None`: not yet).
    checkpointed: Option<std::time::Instant>,
}

impl Follower {
    /// Whether the next journal transaction writes the changed rows: once a checkpoint is
    /// [`crate::journal::CHECKPOINT_INTERVAL`] old, or [`crate::journal::CHECKPOINT_ROWS`]
    /// rows wait. Marks it written (a failed transaction reloads the state anyway).
    fn due(checkpointed: &mut Option<std::time::Instant>, calls: &CallState) -> bool {
        let due = checkpointed.is_none_or(|at| at.elapsed() >= crate::journal::CHECKPOINT_INTERVAL)
            || calls.pending_rows() >= crate::journal::CHECKPOINT_ROWS;
        if due {
            *checkpointed = Some(std::time::Instant::now());
        }
        due
    }

    /// Runs one job. A panic fails this job, not the thread.
    fn run(&mut self, job: Job) {
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
                let store = &self.store;
                let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    store.decide(pack, &caller, request, Timestamp::now())
                }))
                .unwrap_or_else(|_| Err(panicked("an attempt")));
                let _ = answer.send((reply, started.elapsed()));
            }
            Job::Delivery {
                pack,
                caller,
                request,
                delivery,
                then,
                answer,
            } => {
                let store = &self.store;
                let decided = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let now = Timestamp::now();
                    let then = |reply: &Reply| then(reply, now);
                    store.decide_delivery(pack, &caller, request, now, delivery, &then)
                }))
                .unwrap_or_else(|_| Err(panicked("deciding a delivery")));
                let _ = answer.send(decided);
            }
            Job::Journal { event, answer } => self.journal(vec![(event, answer)]),
            Job::CatchUp { answer } => {
                let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    self.reload_if_stale()?;
                    let entries = self.store.journal_after(self.position)?;
                    self.apply(entries);
                    Ok(())
                }))
                .unwrap_or_else(|_| Err(panicked("catching up with the journal")));
                let _ = answer.send(done);
            }
            Job::Resolve {
                id,
                resolution,
                answer,
            } => {
                let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    self.reload_if_stale()?;
                    let mut calls = self
                        .calls
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    let store = self.store.as_ref();
                    let checkpoint = Self::due(&mut self.checkpointed, &calls);
                    let resolved =
                        crate::journal::resolve(
                        &mut calls,
                        store,
                        id,
                        &resolution,
                        Timestamp::now(),
                        &mut self.position,
                        checkpoint,
                    );
                    // A refusal (unknown or resolved item) changed nothing; any other failure
                    // may have left the state ahead of the ledger.
                    if matches!(&resolved, Err(e) if !matches!(e, StoreError::NotFound(_) | StoreError::Conflict(_)))
                    {
                        self.stale = true;
                    }
                    resolved
                }))
                .unwrap_or_else(|_| {
                    self.stale = true;
                    Err(panicked("resolving a review item"))
                });
                let _ = answer.send(done);
            }
        }
    }

    /// Journals a batch of events (in arrival order) and applies the journal up to the last,
    /// writing the call state they changed in the same transaction; each event's answer is
    /// the step it gave.
    fn journal(&mut self, batch: Vec<(CallEvent, JournalAnswer)>) {
        let (events, answers): (Vec<CallEvent>, Vec<JournalAnswer>) = batch.into_iter().unzip();
        let steps = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.reload_if_stale()?;
            let mut calls = self
                .calls
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let checkpoint = Self::due(&mut self.checkpointed, &calls);
            let result = crate::journal::journal(
                &mut calls,
                self.store.as_ref(),
                &events,
                &mut self.position,
                checkpoint,
            );
            if result.is_err() {
                // The state may hold what the ledger did not keep: load it again first.
                self.stale = true;
            }
            result
        }))
        .unwrap_or_else(|_| {
            self.stale = true;
            Err(panicked("journaling"))
        });
        match steps {
            Ok(steps) => {
                for (answer, step) in answers.into_iter().zip(steps) {
                    let _ = answer.send(Ok(step));
                }
            }
            Err(e) => {
                for answer in answers {
                    let _ = answer.send(Err(e.clone()));
                }
            }
        }
    }

    /// Applies entries past the position, in order.
    fn apply(&mut self, entries: Vec<JournalEntry>) {
        let mut calls = self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for entry in entries {
            if entry.id > self.position {
                calls.apply(&entry.event);
                self.position = entry.id;
            }
        }
        crate::journal::log_notes(&mut calls);
    }

    /// After a failed journal transaction, the state is loaded from the ledger again: what it
    /// kept, and the journal after it.
    fn reload_if_stale(&mut self) -> Result<(), StoreError> {
        if !self.stale {
            return Ok(());
        }
        let (loaded, position) = crate::journal::load(self.store.as_ref())?;
        let mut calls = self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *calls = loaded;
        self.position = position;
        self.stale = false;
        tracing::info!(position, "call state loaded again after a failed write");
        Ok(())
    }
}

fn panicked(what: &str) -> StoreError {
    StoreError::Database(format!("{what} panicked; see the log"))
}
