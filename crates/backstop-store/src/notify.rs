//! The notification outbox: one row per event and target, written in the transaction that
//! records the event (a held case, an escalation, a refusal at the attempt limit, a refused
//! dispatch, a task's review item), so an event that committed always has its notifications,
//! and one that rolled back has none.
//!
//! Which targets an event goes to is the ledger's own table of subscriptions, which `serve`
//! replaces at start ([`crate::Store::subscribe_notifications`]): so an event recorded by any
//! process on the ledger (a `backstop decide`, another server) is enqueued for every target.
//! Delivery is claimed row by row under a lease, so two servers never try one row at once.

use backstop_core::case::{CaseState, Refusal};
use backstop_core::notify::{CaseRef, Notice, NotifyKind, NotifyStatus, TaskFailure};
use jiff::Timestamp;
use serde::Serialize;

use crate::StoreError;

/// A target and the kinds of events it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// The target's name (a `[[notify]]` entry's `name`).
    pub target: String,
    /// The kinds it is sent.
    pub kinds: Vec<NotifyKind>,
}

/// One notification to one target, as the outbox keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotificationRecord {
    /// The notification's stable id (`Backstop-Event-Id`).
    pub id: String,
    /// The target it goes to.
    pub target: String,
    /// What happened.
    pub kind: NotifyKind,
    /// Where its delivery stands.
    pub status: NotifyStatus,
    /// Tries so far.
    pub attempts: u32,
    /// When it is due next (pending only).
    pub next_at: Option<Timestamp>,
    /// Why the last try failed, short and redacted.
    pub last_error: Option<String>,
    /// When it was enqueued.
    pub created_at: Timestamp,
    /// When it was delivered or given up.
    pub finished_at: Option<Timestamp>,
    /// What is sent: ids, names, times and the pack's hand-off, never excerpt text.
    pub payload: Notice,
}

/// Which notifications to list.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotificationFilter {
    /// Only these (`None`: all).
    pub status: Option<NotifyStatus>,
    /// At most this many (default 100).
    pub limit: Option<u32>,
}

/// What became of one claimed try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyOutcome {
    /// The receiver answered 2xx: delivered, for good.
    Delivered,
    /// It failed: try again at `at`.
    Retry {
        /// The next try.
        at: Timestamp,
        /// Why, short and redacted.
        error: String,
    },
    /// It failed and is given up.
    Failed {
        /// Why, short and redacted.
        error: String,
    },
    /// Not tried (the target's breaker is open): due again at `at`, no try counted.
    Release {
        /// When it is due again.
        at: Timestamp,
    },
}

/// The error kept for notifications whose target no server names any more.
pub(crate) const TARGET_REMOVED: &str = "its target is in no server's [[notify]] any more";

/// The notification a refused attempt calls for, if any (the attempt limit, on a case that
/// exists).
pub(crate) fn refusal_notice(
    job: &str,
    caller: &str,
    state: &CaseState,
    refusal: &Refusal,
    now: Timestamp,
) -> Option<Notice> {
    let case_id = state.case_id.as_deref()?;
    let used = state.attempts.iter().filter(|a| a.status.counts()).count();
    Notice::for_refusal(
        CaseRef {
            caller,
            job,
            case_id,
        },
        state.cycle,
        u32::try_from(used).unwrap_or(u32::MAX),
        refusal,
        now,
    )
}

/// A notice as its payload column holds it.
pub(crate) fn payload_text(notice: &Notice) -> Result<String, StoreError> {
    serde_json::to_string(notice)
        .map_err(|e| StoreError::Corrupt(format!("a notification's payload: {e}")))
}

/// The parts of a stored row read back into a record.
pub(crate) struct Row {
    pub id: String,
    pub target: String,
    pub kind: String,
    pub payload: String,
    pub status: String,
    pub attempts: i64,
    pub next_at: i64,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

impl Row {
    /// The record the row holds.
    pub fn record(self) -> Result<NotificationRecord, StoreError> {
        let status = NotifyStatus::parse(&self.status).ok_or_else(|| {
            StoreError::Corrupt(format!("`{}` is not a notification status", self.status))
        })?;
        Ok(NotificationRecord {
            kind: NotifyKind::parse(&self.kind).ok_or_else(|| {
                StoreError::Corrupt(format!("`{}` is not a notification kind", self.kind))
            })?,
            payload: serde_json::from_str(&self.payload)
                .map_err(|e| StoreError::Corrupt(format!("a notification's payload: {e}")))?,
            attempts: u32::try_from(self.attempts)
                .map_err(|_| StoreError::Corrupt(format!("{} tries", self.attempts)))?,
            next_at: (status == NotifyStatus::Pending)
                .then(|| crate::codec::timestamp(self.next_at))
                .transpose()?,
            created_at: crate::codec::timestamp(self.created_at)?,
            finished_at: self.finished_at.map(crate::codec::timestamp).transpose()?,
            id: self.id,
            target: self.target,
            status,
            last_error: self.last_error,
        })
    }
}

/// The columns [`Row`] is read from, in its order.
pub(crate) const COLUMNS: &str =
    "id, target, kind, payload, status, attempts, next_at, last_error, created_at, finished_at";

/// What a finished try writes: status, tries added, next try, error, finished time.
pub(crate) fn finish_values(
    outcome: &NotifyOutcome,
    now: Timestamp,
) -> (NotifyStatus, i64, i64, Option<&str>, Option<i64>) {
    let at = now.as_millisecond();
    match outcome {
        NotifyOutcome::Delivered => (NotifyStatus::Delivered, 1, at, None, Some(at)),
        NotifyOutcome::Retry { at: next, error } => (
            NotifyStatus::Pending,
            1,
            next.as_millisecond(),
            Some(error),
            None,
        ),
        NotifyOutcome::Failed { error } => (NotifyStatus::Failed, 1, at, Some(error), Some(at)),
        NotifyOutcome::Release { at: next } => {
            (NotifyStatus::Pending, 0, next.as_millisecond(), None, None)
        }
    }
}

/// What a task's escalation names, as its notifications carry it.
pub(crate) fn task_failure(escalation: &crate::TaskEscalation) -> TaskFailure {
    TaskFailure {
        task: escalation.task.clone(),
        tool: escalation.tool.clone(),
        class: escalation.class.clone(),
        to: escalation.to.clone(),
    }
}
