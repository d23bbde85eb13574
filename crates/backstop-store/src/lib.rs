//! Where backstop keeps what the core decided.
//!
//! The [`Store`] trait is the whole contract: run one attempt on a case in one transaction,
//! show a case, list and resolve review items, and purge old records. [`SqliteStore`] is the
//! embedded default; a `PostgreSQL` backend implements the same trait and must pass the same
//! conformance suite (`tests/conformance/`).
//!
//! What is stored is what the core hands over: attempt records (question keys, source ids,
//! locators and text hashes), results kept for a resend, cases and review items. Excerpt text
//! never reaches a store.
#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;

use backstop_core::case::{AttemptRecord, DecisionResult, Refusal, Request};
use backstop_core::effects::{DispatchRequest, DispatchState};
use backstop_core::pack::Pack;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

/// A fault point between two steps of a transaction, named `$name`: nothing unless the
/// `faults` feature is on and a test configures it (`fail::cfg`), then `return` fails the
/// transaction there (as a database error would) and `panic` stops it as a crash would. The
/// fault-injection suite (`tests/faults.rs`) checks that each leaves nothing half-written.
macro_rules! fault {
    ($name:literal) => {
        fail::fail_point!($name, |_| Err($crate::StoreError::Database(
            concat!("a fault injected at ", $name).to_owned()
        )))
    };
}

mod codec;
mod effects;
mod notify;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(test)]
mod tests {
    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            super::display_location("postgres://app:s3cret@db:5432/ledger?sslmode=disable"),
            "postgres://app:***@db:5432/ledger?sslmode=disable"
        );
        assert_eq!(
            super::display_location("postgresql://app@db/l"),
            "postgresql://app@db/l"
        );
        assert_eq!(super::display_location("./backstop.db"), "./backstop.db");
    }
}
mod sqlite;

pub use backstop_core as core;
pub use effects::{
    AnswerKind, DeliveryRecord, DeliveryWrites, DispatchAnswer, DispatchContext, DispatchFilter,
    DispatchRecord, DispatchReply, DispatchUpdate, Lifted, Suppression, SuppressionFilter,
    SuppressionRecord,
};
pub use notify::{NotificationFilter, NotificationRecord, NotifyOutcome, Subscription};
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// Opens the store `location` names: a `postgres://` or `postgresql://` URL (a build with the
/// `postgres` feature), or else the path of a `SQLite` file, created if missing.
pub fn open(location: &str) -> Result<Box<dyn Store>, StoreError> {
    Location::new(location).open()
}

/// Where a ledger lives, as `--db` or a config's `db` names it: a `PostgreSQL` URL
/// (`postgres://` or `postgresql://`), or else the path of a `SQLite` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A `SQLite` file, created when missing.
    Sqlite(std::path::PathBuf),
    /// A `PostgreSQL` database, by URL.
    Postgres(String),
}

impl Location {
    /// The ledger `text` names.
    pub fn new(text: &str) -> Location {
        if is_postgres_url(text) {
            Location::Postgres(text.to_owned())
        } else {
            Location::Sqlite(text.into())
        }
    }

    /// Opens it; a `SQLite` file is created if missing.
    pub fn open(&self) -> Result<Box<dyn Store>, StoreError> {
        match self {
            Location::Sqlite(path) => Ok(Box::new(SqliteStore::open(path)?)),
            #[cfg(feature = "postgres")]
            Location::Postgres(url) => Ok(Box::new(PostgresStore::connect(url).map_err(|e| {
                StoreError::Database(e.to_string().replace(url.as_str(), &display_location(url)))
            })?)),
            #[cfg(not(feature = "postgres"))]
            Location::Postgres(_) => Err(StoreError::Database(
                "this backstop was built without PostgreSQL support (feature `postgres`)"
                    .to_owned(),
            )),
        }
    }

    /// Whether a ledger may be there without creating one: a `SQLite` file that exists; a
    /// `PostgreSQL` URL always (only connecting would tell).
    pub fn may_exist(&self) -> bool {
        match self {
            Location::Sqlite(path) => path.is_file(),
            Location::Postgres(_) => true,
        }
    }
}

impl std::str::FromStr for Location {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Location::new(text))
    }
}

/// Fit to show: a `PostgreSQL` URL's password replaced by `***`.
impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&display_location(url)),
        }
    }
}

/// `location` fit to show: a `PostgreSQL` URL's password replaced by `***`.
pub fn display_location(location: &str) -> String {
    if !is_postgres_url(location) {
        return location.to_owned();
    }
    let (scheme, rest) = location.split_once("://").unwrap_or(("postgres", location));
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or_default();
            format!("{scheme}://{name}:***@{host}{tail}")
        }
        _ => location.to_owned(),
    }
}

/// Whether `location` is a `PostgreSQL` URL rather than a file path.
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// How long records are kept by default: attempt records older than this are purged.
pub const DEFAULT_RETENTION: SignedDuration = SignedDuration::from_hours(30 * 24);

/// A durable ledger of cases, attempts and review items.
///
/// Every method is one transaction. Implementations must be safe to share between threads:
/// two attempts on one case never both see the same count.
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Runs one attempt: loads the case's state, lets the core decide, and stores the change,
    /// all in one transaction. A replay or refusal changes nothing.
    fn decide(
        &self,
        pack: Arc<Pack>,
        caller: &str,
        request: Request,
        now: Timestamp,
    ) -> Result<Reply, StoreError>;

    /// Decides recorded delivery `delivery` in one transaction: the attempt (as
    /// [`Store::decide`]), then what `then` asks of its reply (the contact suppressed, the
    /// dispatch moved on unless it is settled, the delivery marked done): the reply and what
    /// was written with it. A failure anywhere leaves none of it: the delivery stays pending,
    /// to be decided again.
    fn decide_delivery(
        &self,
        pack: Arc<Pack>,
        caller: &str,
        request: Request,
        now: Timestamp,
        delivery: i64,
        then: &dyn Fn(&Reply) -> DeliveryWrites,
    ) -> Result<(Reply, DeliveryWrites), StoreError>;

    /// One case of a caller on a job, with every attempt record kept.
    fn case(
        &self,
        caller: &str,
        job: &str,
        case_id: &str,
    ) -> Result<Option<CaseRecord>, StoreError>;

    /// Review items, newest first.
    fn reviews(&self, filter: &ReviewFilter) -> Result<Vec<ReviewItem>, StoreError>;

    /// One review item, open or resolved.
    fn review(&self, id: i64) -> Result<Option<ReviewItem>, StoreError>;

    /// Counted and kept attempts since `since`, by job and result status, sorted.
    fn attempt_counts(&self, since: Timestamp) -> Result<Vec<AttemptCount>, StoreError>;

    /// Resolves an open review item with an operator's decision; this ends the case's cycle,
    /// so its next attempt starts a new count.
    fn resolve_review(
        &self,
        id: i64,
        resolution: &Resolution,
        now: Timestamp,
    ) -> Result<ReviewItem, StoreError>;

    /// Deletes attempt records (with their stored results), call events, review items
    /// resolved before `before`, notifications finished or enqueued before it, and cases
    /// with nothing left.
    fn purge(&self, before: Timestamp) -> Result<Purged, StoreError>;

    /// Appends call-level events (a failure's step, an outcome, a grant), in order, to the
    /// call journal, hands every event after `after` (the new ones last) to `follow`, and
    /// writes what `follow` returns (the call-state rows, with the journal's position, and the
    /// review items of tasks' first escalations) in the same transaction. What it returns is
    /// what `follow` was given.
    ///
    /// One writer at a time across every process on the ledger (the journal has one order,
    /// and an event is visible only once every event before it is): a process that applies
    /// what `follow` is given, in order, has the state every other process has at that point,
    /// and the rows it returns bring the kept call state to that point.
    fn journal(
        &self,
        events: &[CallEvent],
        after: i64,
        follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
    ) -> Result<Vec<JournalEntry>, StoreError>;

    /// [`Store::journal`] for a batch that opens no review item and writes no checkpoint
    /// whatever was journaled before it, under `speculation`'s conditions
    /// ([`Speculation::holds`]). A store that can check them under the journal's lock may then
    /// append and commit without waiting for `follow` (handed the entries after the commit), and
    /// journals as [`Store::journal`] does when they fail; by default it always does.
    fn journal_speculating(
        &self,
        events: &[CallEvent],
        after: i64,
        speculation: &Speculation,
        follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
    ) -> Result<Vec<JournalEntry>, StoreError> {
        let _ = speculation;
        self.journal(events, after, follow)
    }

    /// Resolves an open review item (as [`Store::resolve_review`]) and, in the same
    /// transaction, journals the events `then` gives for the resolved item (the reset a task
    /// item's `retry` asks for) as [`Store::journal`] does: the item is never resolved without
    /// them, nor they journaled without it.
    ///
    /// # Errors
    /// As [`Store::resolve_review`] (`NotFound`, `Conflict`), or the ledger failed.
    #[allow(clippy::too_many_arguments)]
    fn resolve_review_journaled(
        &self,
        id: i64,
        resolution: &Resolution,
        now: Timestamp,
        then: &dyn Fn(&ReviewItem) -> Vec<CallEvent>,
        after: i64,
        follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
    ) -> Result<(ReviewItem, Vec<JournalEntry>), StoreError>;

    /// The events after `after`, in journal order: what other processes journaled since.
    fn journal_after(&self, after: i64) -> Result<Vec<JournalEntry>, StoreError>;

    /// The kept call state and the journal position it reflects, read together under the
    /// journal's lock: a process loads it, then applies the events after the position.
    fn call_state(&self) -> Result<(Vec<StateRow>, i64), StoreError>;

    /// Opens a review item for a task's escalation, unless the caller's task has one open
    /// already: the new item, or `None`.
    fn open_task_review(
        &self,
        caller: &str,
        escalation: &TaskEscalation,
        reason: &str,
        now: Timestamp,
    ) -> Result<Option<ReviewItem>, StoreError>;

    /// The secret named `name` that every server on the ledger shares (the operator page's
    /// session key): the stored one, or `fresh`, stored now, when there is none.
    fn secret(&self, name: &str, fresh: &str, now: Timestamp) -> Result<String, StoreError>;

    /// Replaces the secret named `name` with `fresh`: what was signed with the old one is no
    /// longer accepted.
    fn rotate_secret(&self, name: &str, fresh: &str, now: Timestamp) -> Result<(), StoreError>;

    /// Whether the store answers: a cheap read.
    fn ping(&self) -> Result<(), StoreError>;

    /// Gates a dispatch for `caller`, one answer per recipient, in one transaction: each
    /// recipient that goes out (live or to the simulator) is stored under its key before the
    /// answer returns, so the same content asked for again, from anywhere, gets a duplicate or
    /// a reconcile, never a second permit.
    fn dispatch(
        &self,
        pack: Arc<Pack>,
        caller: &str,
        request: &DispatchRequest,
        context: DispatchContext,
        now: Timestamp,
    ) -> Result<DispatchReply, StoreError>;

    /// The agent's report on a permitted dispatch: `sent`, `failed` or `unknown`.
    ///
    /// # Errors
    /// `NotFound` when the caller has no such dispatch; `Conflict` when the report comes too
    /// late or the dispatch went to the simulator.
    fn dispatch_outcome(
        &self,
        caller: &str,
        key: &str,
        outcome: DispatchState,
        failure_code: Option<&str>,
        now: Timestamp,
    ) -> Result<DispatchRecord, StoreError>;

    /// The dispatch with this key.
    fn dispatch_by_key(&self, key: &str) -> Result<Option<DispatchRecord>, StoreError>;

    /// The dispatch of `recipient` in the batch `batch_key`.
    fn dispatch_by_recipient(
        &self,
        batch_key: &str,
        recipient: &str,
    ) -> Result<Option<DispatchRecord>, StoreError>;

    /// Dispatches, oldest first.
    fn dispatches(&self, filter: &DispatchFilter) -> Result<Vec<DispatchRecord>, StoreError>;

    /// Changes a dispatch's state after its result was applied or reconciled.
    fn update_dispatch(
        &self,
        key: &str,
        update: &DispatchUpdate,
        now: Timestamp,
    ) -> Result<(), StoreError>;

    /// Records a delivery, unless one from `source` with `event_id` is recorded already (a
    /// UNIQUE constraint decides, not a read): its id, or `None` for a duplicate.
    fn record_delivery(
        &self,
        source: &str,
        event_id: &str,
        dispatch_key: Option<&str>,
        payload: &str,
        now: Timestamp,
    ) -> Result<Option<i64>, StoreError>;

    /// Deliveries, oldest first: only pending ones, or those of one dispatch.
    fn deliveries(
        &self,
        pending: bool,
        dispatch_key: Option<&str>,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError>;

    /// Marks a pending delivery done: `applied`, `unattributed` or `rejected`, with what
    /// became of it.
    fn finish_delivery(
        &self,
        id: i64,
        state: &str,
        detail: &str,
        now: Timestamp,
    ) -> Result<(), StoreError>;

    /// Puts a contact on the suppression list for one case, or (`case_id` `None`) for every
    /// case of the caller's on the job. Suppressions are kept until removed by hand; the
    /// purge leaves them.
    fn suppress(
        &self,
        caller: &str,
        job: &str,
        contact: &str,
        case_id: Option<&str>,
        reason: &str,
        now: Timestamp,
    ) -> Result<(), StoreError>;

    /// Suppressions in force (or, with `filter.lifted`, lifted ones), newest first.
    fn suppressions(
        &self,
        filter: &SuppressionFilter,
    ) -> Result<Vec<SuppressionRecord>, StoreError>;

    /// Lifts the suppression of `contact` for `caller` on `job` (for one case, or with
    /// `case_id` `None` the one for every case), keeping who lifted it, when and why, in one
    /// transaction: the contact may be reached again.
    ///
    /// # Errors
    /// `NotFound` when no such suppression is in force.
    #[allow(clippy::too_many_arguments)]
    fn lift_suppression(
        &self,
        caller: &str,
        job: &str,
        contact: &str,
        case_id: Option<&str>,
        lifted: &Lifted,
    ) -> Result<SuppressionRecord, StoreError>;

    /// Replaces the ledger's notification subscriptions (which targets each kind of event is
    /// enqueued for, from the next transaction on), and gives up the pending notifications of
    /// any target no longer subscribed: how many were given up.
    fn subscribe_notifications(
        &self,
        subscriptions: &[Subscription],
        now: Timestamp,
    ) -> Result<u64, StoreError>;

    /// Claims up to `limit` notifications of `target` due by `now`, oldest due first, under
    /// the token `claim`: none of them is due again, to anyone, before `now + lease`.
    fn claim_notifications(
        &self,
        target: &str,
        claim: &str,
        now: Timestamp,
        lease: SignedDuration,
        limit: u32,
    ) -> Result<Vec<NotificationRecord>, StoreError>;

    /// Records what a claimed try came to; `false` (nothing changed) when the claim was lost
    /// (its lease passed and another worker claimed it) or the notification is done.
    fn finish_notification(
        &self,
        id: &str,
        target: &str,
        claim: &str,
        outcome: &NotifyOutcome,
        now: Timestamp,
    ) -> Result<bool, StoreError>;

    /// Notifications, newest first.
    fn notifications(
        &self,
        filter: &NotificationFilter,
    ) -> Result<Vec<NotificationRecord>, StoreError>;
}

pub use backstop_core::recover::journal::{
    CLEARING_KINDS, CallEvent, JournalEntry, JournalWrites, STRATEGIES_KIND, Speculation,
    TaskEscalation, TaskReview,
};
pub use backstop_core::recover::recovery::{StateKind, StateRow};

/// What an attempt came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Counted and stored.
    Counted(Box<DecisionResult>),
    /// A resend: the stored result, as JSON, unchanged.
    Replayed(String),
    /// Refused before anything ran; nothing was stored.
    Refused(Refusal),
}

/// A case and what is kept of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CaseRecord {
    /// The caller who owns it.
    pub caller: String,
    /// The job.
    pub job: String,
    /// The normalized case id.
    pub id: String,
    /// Whether backstop issued the id.
    pub issued: bool,
    /// When it was opened.
    pub opened_at: Timestamp,
    /// The current cycle: it grows with each decision or resolved review.
    pub cycle: u32,
    /// Every kept attempt, oldest first, with its cycle.
    pub attempts: Vec<CycleAttempt>,
    /// Its review items, newest first.
    pub reviews: Vec<ReviewItem>,
}

/// An attempt record with the cycle it counted in.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CycleAttempt {
    /// The cycle.
    pub cycle: u32,
    /// The record.
    #[serde(flatten)]
    pub record: AttemptRecord,
    /// The answer each question got in this attempt's result (values of the pack's answer
    /// sets; no excerpt text).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub answers: BTreeMap<String, String>,
}

impl CycleAttempt {
    /// The record, with the answers its stored result gave.
    pub fn new(cycle: u32, record: AttemptRecord, result: &str) -> Self {
        let answers = serde_json::from_str::<serde_json::Value>(result)
            .ok()
            .and_then(|result| {
                serde_json::from_value::<BTreeMap<String, String>>(result.get("answers")?.clone())
                    .ok()
            })
            .unwrap_or_default();
        CycleAttempt {
            cycle,
            record,
            answers,
        }
    }
}

/// How many attempts of one job ended in one status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttemptCount {
    /// The job.
    pub job: String,
    /// The result status (`decided`, `held`, `undecided`, ...).
    pub status: String,
    /// How many.
    pub count: u64,
}

/// Which review items to list.
#[derive(Debug, Clone, Default)]
pub struct ReviewFilter {
    /// Only these: open, resolved, or both (`None`).
    pub open: Option<bool>,
    /// Only this job's.
    pub job: Option<String>,
    /// Only this caller's.
    pub caller: Option<String>,
    /// At most this many (default 100).
    pub limit: Option<u32>,
}

/// A review item: a held case waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewItem {
    /// Its id.
    pub id: i64,
    /// The caller whose case it is.
    pub caller: String,
    /// The job.
    pub job: String,
    /// The case id.
    pub case_id: String,
    /// The lane the case is held in.
    pub lane: String,
    /// The escalation it carries.
    pub escalation: String,
    /// Why the case was held.
    pub reason: String,
    /// When it opened.
    pub opened_at: Timestamp,
    /// Whether the lane lets the agent gather more and ask once more, and whether it did.
    pub retry_allowed: bool,
    /// Whether that one retry was used.
    pub retry_used: bool,
    /// The resolution, once resolved.
    pub resolution: Option<ResolvedBy>,
    /// `case` (a held case: `job` and `case_id` name it) or `task` (a call-level escalation:
    /// `case_id` is the task, `job` is empty).
    pub kind: String,
    /// For a `task` item: the task, tool, class and evidence of the failure that escalated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskEscalation>,
}

/// How a review item was resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResolvedBy {
    /// When.
    pub at: Timestamp,
    /// Who: an operator, or `backstop` when the lane's retry decided the case.
    pub by: String,
    /// The decision.
    pub decision: String,
    /// A note for the record.
    pub note: Option<String>,
}

/// An operator's resolution of a review item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The operator.
    pub by: String,
    /// Their decision (an outcome id, or words).
    pub decision: String,
    /// A note for the record.
    pub note: Option<String>,
}

/// What a purge deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Purged {
    /// Attempt records, each with the result kept for a resend.
    pub attempts: u64,
    /// Resolved review items.
    pub reviews: u64,
    /// Call-level events.
    pub events: u64,
    /// Cases with nothing left.
    pub cases: u64,
    /// Dispatches not changed since the cutoff.
    pub dispatches: u64,
    /// Deliveries received before the cutoff.
    pub deliveries: u64,
    /// Notifications delivered or given up before the cutoff, or enqueued before it.
    pub notifications: u64,
}

/// Why a store call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The database failed.
    #[error("the store failed: {0}")]
    Database(String),
    /// No such record.
    #[error("{0}")]
    NotFound(String),
    /// The record is not in a state that allows this.
    #[error("{0}")]
    Conflict(String),
    /// A stored value could not be read back.
    #[error("the store holds a record it cannot read: {0}")]
    Corrupt(String),
    /// The database is busy (locked past the busy timeout) or cannot be reached for now: the
    /// same call may pass later, and nothing was changed.
    #[error("the store is busy: {0}")]
    Busy(String),
}
