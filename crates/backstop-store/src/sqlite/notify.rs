//! The notification outbox in `SQLite`: enqueued inside the transaction that records each
//! event; claimed in one `BEGIN IMMEDIATE` transaction, so two workers (on one file, from
//! any process) never claim one row at once.

use backstop_core::notify::{Notice, NotifyStatus};
use jiff::{SignedDuration, Timestamp};
use rusqlite::{Connection, Row, Transaction, TransactionBehavior, params};

use crate::StoreError;
use crate::codec::millis;
use crate::notify::{
    COLUMNS, NotificationFilter, NotificationRecord, NotifyOutcome, Subscription, TARGET_REMOVED,
    finish_values, payload_text,
};

/// Enqueues each notice for every target subscribed to its kind; an event already enqueued
/// for a target (the same id) is left as it is.
pub fn enqueue(tx: &Transaction<'_>, notices: &[Notice], now: Timestamp) -> Result<(), StoreError> {
    if notices.is_empty() {
        return Ok(());
    }
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO notifications (id, target, kind, payload, next_at, created_at)
         SELECT ?1, target, ?2, ?3, ?4, ?4 FROM notify_targets WHERE kind = ?2",
    )?;
    for notice in notices {
        insert.execute(params![
            notice.id,
            notice.kind.as_str(),
            payload_text(notice)?,
            millis(now)
        ])?;
    }
    Ok(())
}

pub fn subscribe(
    connection: &mut Connection,
    subscriptions: &[Subscription],
    now: Timestamp,
) -> Result<u64, StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute("DELETE FROM notify_targets", [])?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT OR IGNORE INTO notify_targets (target, kind) VALUES (?1, ?2)",
        )?;
        for s in subscriptions {
            for kind in &s.kinds {
                insert.execute(params![s.target, kind.as_str()])?;
            }
        }
    }
    let at = millis(now);
    let given_up = tx.execute(
        "UPDATE notifications SET status = 'failed', finished_at = ?1, claim = NULL,
                                  last_error = ?2
         WHERE status = 'pending' AND target NOT IN (SELECT target FROM notify_targets)",
        params![at, TARGET_REMOVED],
    )?;
    tx.commit()?;
    Ok(u64::try_from(given_up).unwrap_or(u64::MAX))
}

pub fn claim(
    connection: &mut Connection,
    target: &str,
    claim: &str,
    now: Timestamp,
    lease: SignedDuration,
    limit: u32,
) -> Result<Vec<NotificationRecord>, StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let sql = format!(
        "SELECT {COLUMNS} FROM notifications
         WHERE status = 'pending' AND target = ?1 AND next_at <= ?2
         ORDER BY next_at, id LIMIT ?3"
    );
    let rows = tx
        .prepare_cached(&sql)?
        .query_map(params![target, millis(now), limit], row)?
        .collect::<Result<Vec<_>, _>>()?;
    let until = millis(now.checked_add(lease).unwrap_or(Timestamp::MAX));
    let mut claimed = Vec::with_capacity(rows.len());
    {
        let mut update = tx.prepare_cached(
            "UPDATE notifications SET claim = ?3, next_at = ?4 WHERE id = ?1 AND target = ?2",
        )?;
        for found in rows {
            update.execute(params![found.id, found.target, claim, until])?;
            let mut record = found.record()?;
            record.next_at = Some(crate::codec::timestamp(until)?);
            claimed.push(record);
        }
    }
    tx.commit()?;
    Ok(claimed)
}

pub fn finish(
    connection: &mut Connection,
    id: &str,
    target: &str,
    claim: &str,
    outcome: &NotifyOutcome,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let (status, tries, next_at, error, finished_at) = finish_values(outcome, now);
    let changed = connection
        .prepare_cached(
            "UPDATE notifications SET status = ?4, attempts = attempts + ?5, next_at = ?6,
                    last_error = COALESCE(?7, last_error), finished_at = ?8, claim = NULL
             WHERE id = ?1 AND target = ?2 AND claim = ?3 AND status = 'pending'",
        )?
        .execute(params![
            id,
            target,
            claim,
            status.as_str(),
            tries,
            next_at,
            error,
            finished_at
        ])?;
    Ok(changed == 1)
}

pub fn list(
    connection: &Connection,
    filter: &NotificationFilter,
) -> Result<Vec<NotificationRecord>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM notifications WHERE (?1 IS NULL OR status = ?1)
         ORDER BY created_at DESC, id, target LIMIT ?2"
    );
    let status = filter.status.map(NotifyStatus::as_str);
    connection
        .prepare_cached(&sql)?
        .query_map(params![status, filter.limit.unwrap_or(100)], row)?
        .map(|found| found?.record())
        .collect()
}

/// Delivered or given-up notifications finished before `cutoff`, and any enqueued before it
/// (a row that old, still pending, belongs to a target no worker delivers for).
pub fn purge(tx: &Transaction<'_>, cutoff: i64) -> Result<usize, StoreError> {
    Ok(tx.execute(
        "DELETE FROM notifications WHERE finished_at < ?1 OR created_at < ?1",
        params![cutoff],
    )?)
}

fn row(row: &Row<'_>) -> rusqlite::Result<crate::notify::Row> {
    Ok(crate::notify::Row {
        id: row.get(0)?,
        target: row.get(1)?,
        kind: row.get(2)?,
        payload: row.get(3)?,
        status: row.get(4)?,
        attempts: row.get(5)?,
        next_at: row.get(6)?,
        last_error: row.get(7)?,
        created_at: row.get(8)?,
        finished_at: row.get(9)?,
    })
}
