//! The notification outbox in `PostgreSQL`: enqueued inside the transaction that records each
//! event; claimed with `FOR UPDATE SKIP LOCKED`, so workers on any connection of any process
//! take disjoint rows without waiting on each other.

use backstop_core::notify::{Notice, NotifyStatus};
use jiff::{SignedDuration, Timestamp};
use postgres::{Client, GenericClient};

use crate::StoreError;
use crate::notify::{
    COLUMNS, NotificationFilter, NotificationRecord, NotifyOutcome, Subscription, TARGET_REMOVED,
    finish_values, payload_text,
};

/// Enqueues each notice for every target subscribed to its kind; an event already enqueued
/// for a target (the same id) is left as it is.
pub fn enqueue(
    client: &mut impl GenericClient,
    notices: &[Notice],
    now: Timestamp,
) -> Result<(), StoreError> {
    for notice in notices {
        client.execute(
            "INSERT INTO notifications (id, target, kind, payload, next_at, created_at)
             SELECT $1, target, $2, $3, $4, $4 FROM notify_targets WHERE kind = $2
             ON CONFLICT DO NOTHING",
            &[
                &notice.id,
                &notice.kind.as_str(),
                &payload_text(notice)?,
                &now.as_millisecond(),
            ],
        )?;
    }
    Ok(())
}

pub fn subscribe(
    client: &mut Client,
    subscriptions: &[Subscription],
    now: Timestamp,
) -> Result<u64, StoreError> {
    let mut tx = client.transaction()?;
    // One replacement at a time: two servers starting together each leave a whole set.
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('backstop-notify-targets', 0))",
        &[],
    )?;
    tx.execute("DELETE FROM notify_targets", &[])?;
    for s in subscriptions {
        for kind in &s.kinds {
            tx.execute(
                "INSERT INTO notify_targets (target, kind) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&s.target, &kind.as_str()],
            )?;
        }
    }
    let given_up = tx.execute(
        "UPDATE notifications SET status = 'failed', finished_at = $1, claim = NULL,
                                  last_error = $2
         WHERE status = 'pending' AND target NOT IN (SELECT target FROM notify_targets)",
        &[&now.as_millisecond(), &TARGET_REMOVED],
    )?;
    tx.commit()?;
    Ok(given_up)
}

pub fn claim(
    client: &mut Client,
    target: &str,
    claim: &str,
    now: Timestamp,
    lease: SignedDuration,
    limit: u32,
) -> Result<Vec<NotificationRecord>, StoreError> {
    let until = now
        .checked_add(lease)
        .unwrap_or(Timestamp::MAX)
        .as_millisecond();
    let rows = client.query(
        &format!(
            "WITH due AS (
                 SELECT id, target FROM notifications
                 WHERE status = 'pending' AND target = $1 AND next_at <= $2
                 ORDER BY next_at, id LIMIT $3
                 FOR UPDATE SKIP LOCKED)
             UPDATE notifications n SET claim = $4, next_at = $5
             FROM due WHERE n.id = due.id AND n.target = due.target
             RETURNING {}",
            qualified("n")
        ),
        &[
            &target,
            &now.as_millisecond(),
            &i64::from(limit),
            &claim,
            &until,
        ],
    )?;
    let mut claimed = rows
        .iter()
        .map(|r| row(r).record())
        .collect::<Result<Vec<_>, _>>()?;
    claimed.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    Ok(claimed)
}

pub fn finish(
    client: &mut Client,
    id: &str,
    target: &str,
    claim: &str,
    outcome: &NotifyOutcome,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let (status, tries, next_at, error, finished_at) = finish_values(outcome, now);
    let changed = client.execute(
        "UPDATE notifications SET status = $4, attempts = attempts + $5, next_at = $6,
                last_error = COALESCE($7, last_error), finished_at = $8, claim = NULL
         WHERE id = $1 AND target = $2 AND claim = $3 AND status = 'pending'",
        &[
            &id,
            &target,
            &claim,
            &status.as_str(),
            &tries,
            &next_at,
            &error,
            &finished_at,
        ],
    )?;
    Ok(changed == 1)
}

pub fn list(
    client: &mut Client,
    filter: &NotificationFilter,
) -> Result<Vec<NotificationRecord>, StoreError> {
    let status = filter.status.map(NotifyStatus::as_str);
    let limit = i64::from(filter.limit.unwrap_or(100));
    client
        .query(
            &format!(
                "SELECT {COLUMNS} FROM notifications WHERE ($1::TEXT IS NULL OR status = $1)
                 ORDER BY created_at DESC, id, target LIMIT $2"
            ),
            &[&status, &limit],
        )?
        .iter()
        .map(|r| row(r).record())
        .collect()
}

/// Delivered or given-up notifications finished before `cutoff`, and any enqueued before it.
pub fn purge(client: &mut impl GenericClient, cutoff: i64) -> Result<u64, StoreError> {
    Ok(client.execute(
        "DELETE FROM notifications WHERE finished_at < $1 OR created_at < $1",
        &[&cutoff],
    )?)
}

/// [`COLUMNS`], each prefixed with a table alias.
fn qualified(alias: &str) -> String {
    COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn row(row: &postgres::Row) -> crate::notify::Row {
    crate::notify::Row {
        id: row.get(0),
        target: row.get(1),
        kind: row.get(2),
        payload: row.get(3),
        status: row.get(4),
        attempts: row.get(5),
        next_at: row.get(6),
        last_error: row.get(7),
        created_at: row.get(8),
        finished_at: row.get(9),
    }
}
