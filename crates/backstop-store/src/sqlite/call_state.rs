//! The call journal and the call state it builds, in `SQLite`: events appended and state rows
//! written in one `BEGIN IMMEDIATE` transaction (the database's write lock orders the journal
//! across processes), and the state read back whole with its position.

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::queries::journal_after;
use crate::codec::{millis, state_row};
use crate::{CallEvent, JournalEntry, JournalWrites, StateRow, StoreError};

/// Appends `events`, hands every event after `after` to `follow`, and writes the rows it
/// returns and the position, in one write transaction.
pub fn journal(
    connection: &mut Connection,
    events: &[CallEvent],
    after: i64,
    follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
) -> Result<Vec<JournalEntry>, StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let entries = journal_in(&tx, events, after, follow)?;
    tx.commit()?;
    Ok(entries)
}

/// Resolves review item `id` and journals the events `then` gives for it (a task item's
/// `retry` resets the task), in one write transaction.
pub fn resolve_journaled(
    connection: &mut Connection,
    id: i64,
    resolution: &crate::Resolution,
    now: jiff::Timestamp,
    then: &dyn Fn(&crate::ReviewItem) -> Vec<CallEvent>,
    after: i64,
    follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
) -> Result<(crate::ReviewItem, Vec<JournalEntry>), StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let item = super::queries::resolve_in(&tx, id, resolution, now)?;
    fault!("review.resolved");
    let entries = journal_in(&tx, &then(&item), after, follow)?;
    tx.commit()?;
    Ok((item, entries))
}

/// [`journal`] inside a write transaction the caller commits.
fn journal_in(
    tx: &Transaction<'_>,
    events: &[CallEvent],
    after: i64,
    follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
) -> Result<Vec<JournalEntry>, StoreError> {
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO events (at, kind, subject, body) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for event in events {
            insert.execute(params![
                millis(event.at),
                event.kind,
                event.subject,
                event.body
            ])?;
        }
    }
    let entries = journal_after(tx, after)?;
    fault!("journal.appended");
    let writes = follow(&entries);
    if let Some(rows) = &writes.checkpoint {
        write_rows(tx, rows)?;
        if let Some(last) = entries.last() {
            tx.prepare_cached(
                "UPDATE call_position SET position = MAX(position, ?1) WHERE id = 1",
            )?
            .execute(params![last.id])?;
        }
    }
    fault!("journal.rows_written");
    for review in &writes.task_reviews {
        super::queries::open_task_review_in(
            tx,
            &review.caller,
            &review.escalation,
            &review.reason,
            review.at,
        )?;
    }
    fault!("journal.reviews_opened");
    Ok(entries)
}

fn write_rows(tx: &Transaction<'_>, rows: &[StateRow]) -> Result<(), StoreError> {
    let mut upsert = tx.prepare_cached(
        "INSERT INTO call_state (kind, key, caller, body, expires) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (kind, key) DO UPDATE
           SET caller = excluded.caller, body = excluded.body, expires = excluded.expires",
    )?;
    let mut delete = tx.prepare_cached("DELETE FROM call_state WHERE kind = ?1 AND key = ?2")?;
    for row in rows {
        match &row.body {
            Some(body) => {
                upsert.execute(params![
                    row.kind.as_str(),
                    row.key,
                    row.caller,
                    body,
                    row.expires.map(millis)
                ])?;
            }
            None => {
                delete.execute(params![row.kind.as_str(), row.key])?;
            }
        }
    }
    Ok(())
}

/// The kept call state and its position, read in one transaction.
pub fn load(connection: &Connection) -> Result<(Vec<StateRow>, i64), StoreError> {
    let tx = connection.unchecked_transaction()?;
    let position: i64 = tx.query_row(
        "SELECT position FROM call_position WHERE id = 1",
        [],
        |row| row.get(0),
    )?;
    let rows = {
        let mut statement = tx.prepare(
            "SELECT kind, key, caller, body, expires FROM call_state ORDER BY kind, key",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, Option<i64>>(4)?,
            ))
        })?;
        let mut kept = Vec::new();
        for row in rows {
            let (kind, key, caller, body, expires) = row?;
            kept.push(state_row(&kind, key, caller, body, expires)?);
        }
        kept
    };
    tx.commit()?;
    Ok((rows, position))
}
