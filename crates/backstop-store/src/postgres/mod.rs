//! The `PostgreSQL` store: the same ledger for more than one machine.
//!
//! Each attempt is one transaction that first takes two transaction-scoped advisory locks —
//! one for the execution id, one for the case (or, for an issued-mode first request, for the
//! caller's issued cases on the job) — so attempts on one case are serialized across every
//! connection and process, and the limit holds under any concurrency. This process uses two
//! connections, each behind a mutex: one for attempts and the call journal, one for everything
//! else, so a review item or a listing never holds up an attempt.
//!
//! - `schema`: migrations, recorded in `backstop_schema`
//! - `ledger`: one attempt in one transaction
//! - `queries`: cases, review items, events, the purge
//! - `notify`: the notification outbox: enqueued in each event's transaction, claimed with
//!   `SKIP LOCKED`, finished

use std::sync::{Arc, Mutex};

use backstop_core::case::Request;
use backstop_core::pack::Pack;
use jiff::Timestamp;
use postgres::{Client, NoTls};

use backstop_core::effects::{DispatchRequest, DispatchState};

use crate::{
    AttemptCount, CallEvent, CaseRecord, DeliveryRecord, DispatchContext, DispatchFilter,
    DispatchRecord, DispatchReply, DispatchUpdate, JournalEntry, NotificationFilter,
    NotificationRecord, NotifyOutcome, Purged, Reply, Resolution, ReviewFilter, ReviewItem, Store,
    StoreError, Subscription, TaskEscalation,
};

mod effects;
mod ledger;
mod notify;
mod queries;
mod schema;

/// The `PostgreSQL` store.
pub struct PostgresStore {
    /// Attempts and the call journal: the service's ledger thread is its one user.
    client: Mutex<Client>,
    /// Everything else (case and review reads, review items, the purge), so that none of it
    /// ever holds up an attempt or a journal event.
    side: Mutex<Client>,
    /// The call journal's statements, prepared once: each call is then one round trip.
    journal: queries::JournalStatements,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects with a libpq-style string (`host=127.0.0.1 user=postgres dbname=backstop`, or
    /// a `postgres://` URL) and brings the schema up to date.
    pub fn connect(config: &str) -> Result<Self, StoreError> {
        let mut client = session(config)?;
        schema::migrate(&mut client)?;
        let journal = queries::JournalStatements::prepare(&mut client)?;
        Ok(Self {
            client: Mutex::new(client),
            side: Mutex::new(session(config)?),
            journal,
        })
    }

    /// Runs `work` on the side connection (see [`PostgresStore`]).
    fn side<T>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut client = self
            .side
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        work(&mut client)
    }

    fn with<T>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut client = self
            .client
            .lock()
            // A panic mid-call rolled its transaction back: the connection is sound.
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        work(&mut client)
    }
}

/// One connection, set up for the ledger's queries.
fn session(config: &str) -> Result<Client, StoreError> {
    let mut client = Client::connect(config, NoTls)
        .map_err(|e| StoreError::Database(format!("cannot connect to PostgreSQL: {e}")))?;
    // The ledger's queries touch a few rows each: a parallel plan only adds a worker's start
    // (about 5 ms) where the planner's estimate is stale, as it is for the newest journal
    // events.
    client
        .batch_execute("SET max_parallel_workers_per_gather = 0")
        .map_err(|e| StoreError::Database(format!("cannot configure the session: {e}")))?;
    Ok(client)
}

impl Store for PostgresStore {
    fn decide(
        &self,
        pack: Arc<Pack>,
        caller: &str,
        request: Request,
        now: Timestamp,
    ) -> Result<Reply, StoreError> {
        self.with(|client| ledger::decide(client, &pack, caller, &request, now))
    }

    fn case(
        &self,
        caller: &str,
        job: &str,
        case_id: &str,
    ) -> Result<Option<CaseRecord>, StoreError> {
        self.side(|client| queries::case(client, caller, job, case_id))
    }

    fn reviews(&self, filter: &ReviewFilter) -> Result<Vec<ReviewItem>, StoreError> {
        self.side(|client| queries::reviews(client, filter))
    }

    fn review(&self, id: i64) -> Result<Option<ReviewItem>, StoreError> {
        self.side(|client| queries::review(client, id))
    }

    fn attempt_counts(&self, since: Timestamp) -> Result<Vec<AttemptCount>, StoreError> {
        self.side(|client| queries::attempt_counts(client, since))
    }

    fn resolve_review(
        &self,
        id: i64,
        resolution: &Resolution,
        now: Timestamp,
    ) -> Result<ReviewItem, StoreError> {
        self.side(|client| queries::resolve(client, id, resolution, now))
    }

    fn purge(&self, before: Timestamp) -> Result<Purged, StoreError> {
        self.side(|client| queries::purge(client, before))
    }

    fn journal(&self, events: &[CallEvent], after: i64) -> Result<Vec<JournalEntry>, StoreError> {
        self.with(|client| queries::journal(client, &self.journal, events, after))
    }

    fn journal_after(&self, after: i64) -> Result<Vec<JournalEntry>, StoreError> {
        self.with(|client| queries::journal_after(client, after))
    }

    fn events_since(&self, since: Timestamp) -> Result<(Vec<JournalEntry>, i64), StoreError> {
        self.with(|client| queries::events_since(client, since))
    }

    fn open_task_review(
        &self,
        caller: &str,
        escalation: &TaskEscalation,
        reason: &str,
        now: Timestamp,
    ) -> Result<Option<ReviewItem>, StoreError> {
        self.side(|client| queries::open_task_review(client, caller, escalation, reason, now))
    }

    fn ping(&self) -> Result<(), StoreError> {
        self.side(|client| {
            client.simple_query("SELECT 1")?;
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
        self.side(|c| effects::dispatch(c, &pack, caller, request, context, now))
    }

    fn dispatch_outcome(
        &self,
        caller: &str,
        key: &str,
        outcome: DispatchState,
        failure_code: Option<&str>,
        now: Timestamp,
    ) -> Result<DispatchRecord, StoreError> {
        self.side(|c| effects::outcome(c, caller, key, outcome, failure_code, now))
    }

    fn dispatch_by_key(&self, key: &str) -> Result<Option<DispatchRecord>, StoreError> {
        self.side(|c| effects::by_key(c, key))
    }

    fn dispatch_by_recipient(
        &self,
        batch_key: &str,
        recipient: &str,
    ) -> Result<Option<DispatchRecord>, StoreError> {
        self.side(|c| effects::by_recipient(c, batch_key, recipient))
    }

    fn dispatches(&self, filter: &DispatchFilter) -> Result<Vec<DispatchRecord>, StoreError> {
        self.side(|c| effects::list(c, filter))
    }

    fn update_dispatch(
        &self,
        key: &str,
        update: &DispatchUpdate,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.side(|c| effects::update(c, key, update, now))
    }

    fn record_delivery(
        &self,
        source: &str,
        event_id: &str,
        dispatch_key: Option<&str>,
        payload: &str,
        now: Timestamp,
    ) -> Result<Option<i64>, StoreError> {
        self.side(|c| effects::record_delivery(c, source, event_id, dispatch_key, payload, now))
    }

    fn deliveries(
        &self,
        pending: bool,
        dispatch_key: Option<&str>,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        self.side(|c| effects::deliveries(c, pending, dispatch_key, limit))
    }

    fn finish_delivery(
        &self,
        id: i64,
        state: &str,
        detail: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.side(|c| effects::finish_delivery(c, id, state, detail, now))
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
        self.side(|c| effects::suppress(c, caller, job, contact, case_id, reason, now))
    }

    fn subscribe_notifications(
        &self,
        subscriptions: &[Subscription],
        now: Timestamp,
    ) -> Result<u64, StoreError> {
        self.side(|c| notify::subscribe(c, subscriptions, now))
    }

    fn claim_notifications(
        &self,
        target: &str,
        claim: &str,
        now: Timestamp,
        lease: jiff::SignedDuration,
        limit: u32,
    ) -> Result<Vec<NotificationRecord>, StoreError> {
        self.side(|c| notify::claim(c, target, claim, now, lease, limit))
    }

    fn finish_notification(
        &self,
        id: &str,
        target: &str,
        claim: &str,
        outcome: &NotifyOutcome,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.side(|c| notify::finish(c, id, target, claim, outcome, now))
    }

    fn notifications(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Vec<NotificationRecord>, StoreError> {
        self.side(|c| notify::list(c, filter))
    }
}

impl From<postgres::Error> for StoreError {
    fn from(error: postgres::Error) -> Self {
        use postgres::error::SqlState;
        // The server's own words and code, never the driver's bare "db error".
        let Some(db) = error.as_db_error() else {
            // No answer from the server: the connection is gone or going.
            return if error.is_closed() {
                StoreError::Busy(format!("the PostgreSQL connection is closed: {error}"))
            } else {
                StoreError::Database(error.to_string())
            };
        };
        let text = format!("{} (SQLSTATE {})", db.message(), db.code().code());
        let busy = [
            SqlState::LOCK_NOT_AVAILABLE,
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::QUERY_CANCELED,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
        ];
        if busy.contains(db.code()) {
            StoreError::Busy(text)
        } else {
            StoreError::Database(text)
        }
    }
}

/// A count or number as the database stores it.
fn int(n: u32) -> i64 {
    i64::from(n)
}

/// A stored count or number read back.
fn uint(n: i64) -> Result<u32, StoreError> {
    u32::try_from(n).map_err(|_| StoreError::Corrupt(format!("{n} is out of range")))
}
