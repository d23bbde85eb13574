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

use self::connection::{Reconnecting, Session};

use backstop_core::effects::{DispatchRequest, DispatchState};

use crate::{
    AttemptCount, CallEvent, CaseRecord, DeliveryRecord, DeliveryWrites, DispatchContext,
    DispatchFilter, DispatchRecord, DispatchReply, DispatchUpdate, JournalEntry, JournalWrites,
    Lifted, NotificationFilter, NotificationRecord, NotifyOutcome, Purged, Reply, Resolution,
    ReviewFilter, ReviewItem, StateRow, Store, StoreError, Subscription, SuppressionFilter,
    SuppressionRecord, TaskEscalation,
};

mod call_state;
mod connection;
mod effects;
mod ledger;
mod notify;
mod queries;
mod schema;

/// The `PostgreSQL` store.
pub struct PostgresStore {
    /// Attempts and the call journal: the service's ledger thread is its one user.
    client: Mutex<Reconnecting>,
    /// Everything else (case and review reads, review items, the purge), so that none of it
    /// ever holds up an attempt or a journal event.
    side: Mutex<Reconnecting>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects with a libpq-style string (`host=127.0.0.1 user=postgres dbname=backstop`, or
    /// a `postgres://` URL) and brings the schema up to date. Both connections come back on
    /// their own after the server closes them ([`connection`]).
    pub fn connect(config: &str) -> Result<Self, StoreError> {
        let mut migrator = Client::connect(config, NoTls)
            .map_err(|e| StoreError::Database(format!("cannot connect to PostgreSQL: {e}")))?;
        schema::migrate(&mut migrator)?;
        drop(migrator);
        Ok(Self {
            client: Mutex::new(Reconnecting::connect(config)?),
            side: Mutex::new(Reconnecting::connect(config)?),
        })
    }

    /// Runs `work` on the side connection (see [`PostgresStore`]).
    fn side<T>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut connection = self
            .side
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let client = &mut connection.session()?.client;
        let done = work(client);
        cut_is_busy(done, client.is_closed())
    }

    fn with<T>(
        &self,
        work: impl FnOnce(&mut Session) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut connection = self
            .client
            .lock()
            // A panic mid-call rolled its transaction back: the connection is sound.
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let session = connection.session()?;
        let done = work(session);
        cut_is_busy(done, session.client.is_closed())
    }
}

/// A failure that closed the connection (the server went away mid-call) is `Busy`: nothing was
/// committed, and the next call connects again.
fn cut_is_busy<T>(done: Result<T, StoreError>, closed: bool) -> Result<T, StoreError> {
    match done {
        Err(StoreError::Database(detail)) if closed => Err(StoreError::Busy(format!(
            "the PostgreSQL connection was cut: {detail}"
        ))),
        other => other,
    }
}

impl Store for PostgresStore {
    fn decide(
        &self,
        pack: Arc<Pack>,
        caller: &str,
        request: Request,
        now: Timestamp,
    ) -> Result<Reply, StoreError> {
        self.with(|session| ledger::decide(&mut session.client, &pack, caller, &request, now))
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
        self.with(|session| {
            let mut tx = session.client.transaction()?;
            let reply = ledger::decide_in(&mut tx, &pack, caller, &request, now)?;
            let writes = then(&reply);
            effects::write_decided(&mut tx, delivery, &writes, now)?;
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

    fn journal(
        &self,
        events: &[CallEvent],
        after: i64,
        follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
    ) -> Result<Vec<JournalEntry>, StoreError> {
        self.with(|session| call_state::journal(session, events, after, follow))
    }

    fn journal_speculating(
        &self,
        events: &[CallEvent],
        after: i64,
        speculation: &crate::Speculation,
        follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
    ) -> Result<Vec<JournalEntry>, StoreError> {
        self.with(|session| {
            call_state::journal_speculating(session, events, after, speculation, follow)
        })
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
        // On the journal's connection: one transaction holds the item and the journal.
        self.with(|session| {
            call_state::resolve_journaled(session, id, resolution, now, then, after, follow)
        })
    }

    fn journal_after(&self, after: i64) -> Result<Vec<JournalEntry>, StoreError> {
        self.with(|session| queries::journal_after(&mut session.client, after))
    }

    fn secret(&self, name: &str, fresh: &str, now: Timestamp) -> Result<String, StoreError> {
        self.side(|client| {
            // Read first: the insert only for the first server.
            if let Some(row) =
                client.query_opt("SELECT value FROM secrets WHERE name = $1", &[&name])?
            {
                return Ok(row.get(0));
            }
            client.execute(
                "INSERT INTO secrets (name, value, created_at) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO NOTHING",
                &[&name, &fresh, &now.as_millisecond()],
            )?;
            Ok(client
                .query_one("SELECT value FROM secrets WHERE name = $1", &[&name])?
                .get(0))
        })
    }

    fn rotate_secret(&self, name: &str, fresh: &str, now: Timestamp) -> Result<(), StoreError> {
        self.side(|client| {
            client.execute(
                "INSERT INTO secrets (name, value, created_at) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value,
                                                  created_at = excluded.created_at",
                &[&name, &fresh, &now.as_millisecond()],
            )?;
            Ok(())
        })
    }

    fn call_state(&self) -> Result<(Vec<StateRow>, i64), StoreError> {
        self.with(|session| call_state::load(&mut session.client))
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
        // Both connections: the service is ready only when each of them answers. A connection
        // found cut is made again and asked once more (a ping changes nothing).
        let ledger = || {
            self.with(|session| {
                session.client.simple_query("SELECT 1")?;
                Ok(())
            })
        };
        let side = || {
            self.side(|client| {
                client.simple_query("SELECT 1")?;
                Ok(())
            })
        };
        ledger().or_else(|_| ledger())?;
        side().or_else(|_| side())
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

    fn suppressions(
        &self,
        filter: &SuppressionFilter,
    ) -> Result<Vec<SuppressionRecord>, StoreError> {
        self.side(|c| effects::suppressions(c, filter))
    }

    fn lift_suppression(
        &self,
        caller: &str,
        job: &str,
        contact: &str,
        case_id: Option<&str>,
        lifted: &Lifted,
    ) -> Result<SuppressionRecord, StoreError> {
        self.side(|c| effects::lift(c, (caller, job, contact, case_id), lifted))
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
