//! The embedded `SQLite` store: one connection writes, in WAL mode, behind a mutex, so attempts
//! in one process are serialized; reads use their own connection.
//!
//! The writing connection runs on the caller's thread. A dedicated writer thread fed by a
//! channel was measured first: two thread wake-ups per attempt cost more than the attempt
//! itself on this VM (about 3,000 decisions/s against over 10,000; see bench/README.md).
//!
//! - `schema`: connection settings and migrations
//! - `ledger`: one attempt in one transaction (state loaded, the core's change applied)
//! - `queries`: cases, review items and the purge
//! - `notify`: the notification outbox: enqueued in each event's transaction, claimed, finished

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use backstop_core::case::Request;
use backstop_core::pack::Pack;
use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use backstop_core::effects::{DispatchRequest, DispatchState};

use crate::{
    AttemptCount, CallEvent, CaseRecord, DeliveryRecord, DeliveryWrites, DispatchContext,
    DispatchFilter, DispatchRecord, DispatchReply, DispatchUpdate, JournalEntry, JournalWrites,
    Lifted, NotificationFilter, NotificationRecord, NotifyOutcome, Purged, Reply, Resolution,
    ReviewFilter, ReviewItem, StateRow, Store, StoreError, Subscription, SuppressionFilter,
    SuppressionRecord, TaskEscalation,
};

mod call_state;
mod checkpoint;
mod effects;
mod ledger;
mod notify;
mod queries;
mod schema;

/// How many writes pass between two looks at the WAL's size.
const RESTART_CHECK_EVERY: u64 = 32;

/// The embedded store: a `SQLite` file in WAL mode.
///
/// Writes go through one connection behind a mutex; each attempt is one `BEGIN IMMEDIATE`
/// transaction, so two processes on one file also stay correct (the second waits up to the
/// busy timeout).
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    /// The WAL file, and the writes since the store opened (its size is looked at every
    /// [`RESTART_CHECK_EVERY`] writes).
    wal: PathBuf,
    writes: AtomicU64,
    writer: Mutex<Connection>,
    reader: Mutex<Connection>,
    // Dropped last: its final checkpoint runs after the connections above are closed.
    _checkpointer: checkpoint::Checkpointer,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let mut writing = schema::connect(&path)?;
        schema::migrate(&mut writing)?;
        writing.pragma_update(None, "wal_autocheckpoint", 0)?;
        let reader = schema::connect(&path)?;
        let checkpointer = checkpoint::Checkpointer::start(&path)?;
        Ok(Self {
            wal: PathBuf::from(format!("{}-wal", path.display())),
            writes: AtomicU64::new(0),
            path,
            writer: Mutex::new(writing),
            reader: Mutex::new(reader),
            _checkpointer: checkpointer,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` on the writing connection, one caller at a time.
    fn write<T>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut connection = self
            .writer
            .lock()
            // A panic mid-call rolled its transaction back: the connection is sound.
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let done = work(&mut connection);
        // Between two writes, the WAL is kept from growing without bound (see `checkpoint`).
        if self
            .writes
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(RESTART_CHECK_EVERY)
        {
            checkpoint::restart_if_large(&connection, &self.wal);
        }
        done
    }

    fn read<T>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let connection = self
            .reader
            .lock()
            // A panic mid-call rolled its transaction back: the connection is sound.
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        work(&connection)
    }
}

impl Store for SqliteStore {
    fn decide(
        &self,
        pack: Arc<Pack>,
        caller: &str,
        request: Request,
        now: Timestamp,
    ) -> Result<Reply, StoreError> {
        self.write(|connection| ledger::decide(connection, &pack, caller, &request, now))
    }

    fn decide_delivery(
        &self,
        pack: Arc<Pack>,
        caller: &str,
        request: Request,
        now: Timestamp,
        delivery: i64,
        then: &dyn Fn(&Reply) -> DeliveryWrites,
    ) -> Result<(Reply, DeliveryWrites), StoreError> {
        self.write(|connection| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let reply = ledger::decide_in(&tx, &pack, caller, &request, now)?;
            let writes = then(&reply);
            effects::write_decided(&tx, delivery, &writes, now)?;
            tx.commit()?;
            Ok((reply, writes))
        })
    }

    fn case(
        &self,
        caller: &str,
        job: &str,
        case_id: &str,
    ) -> Result<Option<CaseRecord>, StoreError> {
        self.read(|connection| queries::case(connection, caller, job, case_id))
    }

    fn reviews(&self, filter: &ReviewFilter) -> Result<Vec<ReviewItem>, StoreError> {
        self.read(|connection| queries::reviews(connection, filter))
    }

    fn review(&self, id: i64) -> Result<Option<ReviewItem>, StoreError> {
        self.read(|connection| queries::review(connection, id))
    }

    fn attempt_counts(&self, since: Timestamp) -> Result<Vec<AttemptCount>, StoreError> {
        self.read(|connection| queries::attempt_counts(connection, since))
    }

    fn resolve_review(
        &self,
        id: i64,
        resolution: &Resolution,
        now: Timestamp,
    ) -> Result<ReviewItem, StoreError> {
        self.write(|connection| queries::resolve(connection, id, resolution, now))
    }

    fn purge(&self, before: Timestamp) -> Result<Purged, StoreError> {
        self.write(|connection| queries::purge(connection, before))
    }

    fn journal(
        &self,
        events: &[CallEvent],
        after: i64,
        follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
    ) -> Result<Vec<JournalEntry>, StoreError> {
        self.write(|connection| call_state::journal(connection, events, after, follow))
    }

    fn resolve_review_journaled(
        &self,
        id: i64,
        resolution: &Resolution,
        now: Timestamp,
        then: &dyn Fn(&ReviewItem) -> Vec<CallEvent>,
        after: i64,
        follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
    ) -> Result<(ReviewItem, Vec<JournalEntry>), StoreError> {
        self.write(|connection| {
            call_state::resolve_journaled(connection, id, resolution, now, then, after, follow)
        })
    }

    fn journal_after(&self, after: i64) -> Result<Vec<JournalEntry>, StoreError> {
        self.read(|connection| queries::journal_after(connection, after))
    }

    fn call_state(&self) -> Result<(Vec<StateRow>, i64), StoreError> {
        self.read(call_state::load)
    }

    fn secret(&self, name: &str, fresh: &str, now: Timestamp) -> Result<String, StoreError> {
        // Read first: the write (and the ledger's write lock) only for the first server.
        let stored = self.read(|connection| {
            Ok(connection
                .query_row("SELECT value FROM secrets WHERE name = ?1", [name], |row| {
                    row.get(0)
                })
                .optional()?)
        })?;
        if let Some(stored) = stored {
            return Ok(stored);
        }
        self.write(|connection| {
            connection.execute(
                "INSERT INTO secrets (name, value, created_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO NOTHING",
                rusqlite::params![name, fresh, now.as_millisecond()],
            )?;
            Ok(connection.query_row(
                "SELECT value FROM secrets WHERE name = ?1",
                [name],
                |row| row.get(0),
            )?)
        })
    }

    fn rotate_secret(&self, name: &str, fresh: &str, now: Timestamp) -> Result<(), StoreError> {
        self.write(|connection| {
            connection.execute(
                "INSERT INTO secrets (name, value, created_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value,
                                                  created_at = excluded.created_at",
                rusqlite::params![name, fresh, now.as_millisecond()],
            )?;
            Ok(())
        })
    }

    fn open_task_review(
        &self,
        caller: &str,
        escalation: &TaskEscalation,
        reason: &str,
        now: Timestamp,
    ) -> Result<Option<ReviewItem>, StoreError> {
        self.write(|connection| {
            queries::open_task_review(connection, caller, escalation, reason, now)
        })
    }

    fn ping(&self) -> Result<(), StoreError> {
        self.read(|connection| {
            connection.query_row("SELECT 1", [], |_| Ok(()))?;
            Ok(())
        })
    }

    fn dispatch(
        &self,
        pack: Arc<Pack>,
        caller: &str,
        request: &DispatchRequest,
        context: DispatchContext,
        now: Timestamp,
    ) -> Result<DispatchReply, StoreError> {
        self.write(|c| effects::dispatch(c, &pack, caller, request, context, now))
    }

    fn dispatch_outcome(
        &self,
        caller: &str,
        key: &str,
        outcome: DispatchState,
        failure_code: Option<&str>,
        now: Timestamp,
    ) -> Result<DispatchRecord, StoreError> {
        self.write(|c| effects::outcome(c, caller, key, outcome, failure_code, now))
    }

    fn dispatch_by_key(&self, key: &str) -> Result<Option<DispatchRecord>, StoreError> {
        self.read(|c| effects::by_key(c, key))
    }

    fn dispatch_by_recipient(
        &self,
        batch_key: &str,
        recipient: &str,
    ) -> Result<Option<DispatchRecord>, StoreError> {
        self.read(|c| effects::by_recipient(c, batch_key, recipient))
    }

    fn dispatches(&self, filter: &DispatchFilter) -> Result<Vec<DispatchRecord>, StoreError> {
        self.read(|c| effects::list(c, filter))
    }

    fn update_dispatch(
        &self,
        key: &str,
        update: &DispatchUpdate,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.write(|c| effects::update(c, key, update, now))
    }

    fn record_delivery(
        &self,
        source: &str,
        event_id: &str,
        dispatch_key: Option<&str>,
        payload: &str,
        now: Timestamp,
    ) -> Result<Option<i64>, StoreError> {
        self.write(|c| effects::record_delivery(c, source, event_id, dispatch_key, payload, now))
    }

    fn deliveries(
        &self,
        pending: bool,
        dispatch_key: Option<&str>,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        self.read(|c| effects::deliveries(c, pending, dispatch_key, limit))
    }

    fn finish_delivery(
        &self,
        id: i64,
        state: &str,
        detail: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.write(|c| effects::finish_delivery(c, id, state, detail, now))
    }

    fn suppress(
        &self,
        caller: &str,
        job: &str,
        contact: &str,
        case_id: Option<&str>,
        reason: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.write(|c| effects::suppress(c, caller, job, contact, case_id, reason, now))
    }

    fn suppressions(
        &self,
        filter: &SuppressionFilter,
    ) -> Result<Vec<SuppressionRecord>, StoreError> {
        self.read(|c| effects::suppressions(c, filter))
    }

    fn lift_suppression(
        &self,
        caller: &str,
        job: &str,
        contact: &str,
        case_id: Option<&str>,
        lifted: &Lifted,
    ) -> Result<SuppressionRecord, StoreError> {
        self.write(|c| effects::lift(c, (caller, job, contact, case_id), lifted))
    }

    fn subscribe_notifications(
        &self,
        subscriptions: &[Subscription],
        now: Timestamp,
    ) -> Result<u64, StoreError> {
        self.write(|c| notify::subscribe(c, subscriptions, now))
    }

    fn claim_notifications(
        &self,
        target: &str,
        claim: &str,
        now: Timestamp,
        lease: jiff::SignedDuration,
        limit: u32,
    ) -> Result<Vec<NotificationRecord>, StoreError> {
        self.write(|c| notify::claim(c, target, claim, now, lease, limit))
    }

    fn finish_notification(
        &self,
        id: &str,
        target: &str,
        claim: &str,
        outcome: &NotifyOutcome,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.write(|c| notify::finish(c, id, target, claim, outcome, now))
    }

    fn notifications(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Vec<NotificationRecord>, StoreError> {
        self.read(|c| notify::list(c, filter))
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                StoreError::Busy(error.to_string())
            }
            _ => StoreError::Database(error.to_string()),
        }
    }
}
