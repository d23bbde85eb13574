//! The call journal and the call state it builds, in `PostgreSQL`: events appended (under the
//! journal's advisory lock, taken by `backstop_journal`) and state rows written in one
//! transaction, and the state read back whole with its position under the same lock.

use postgres::Client;

use super::connection::Session;
use super::queries::entries;
use crate::codec::state_row;
use crate::{CallEvent, JournalEntry, JournalWrites, StateRow, StoreError};

/// The journal's advisory lock, as `backstop_journal` takes it.
const JOURNAL_LOCK: &str = "SELECT pg_advisory_xact_lock(hashtextextended('backstop-journal', 0))";

/// Appends `events`, hands every event after `after` to `follow`, and writes the rows it
/// returns and the position, in one transaction holding the journal's lock: ids are taken
/// and committed in lock order, so the journal has one order across processes and a reader
/// never sees an event before an earlier one commits.
pub fn journal(
    session: &mut Session,
    events: &[CallEvent],
    after: i64,
    follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
) -> Result<Vec<JournalEntry>, StoreError> {
    let mut tx = session.client.transaction()?;
    let entries = journal_in(&mut tx, &session.journal, events, after, follow)?;
    tx.commit()?;
    Ok(entries)
}

/// Resolves review item `id` and journals the events `then` gives for it (a task item's
/// `retry` resets the task), in one transaction.
pub fn resolve_journaled(
    session: &mut Session,
    id: i64,
    resolution: &crate::Resolution,
    now: jiff::Timestamp,
    then: &dyn Fn(&crate::ReviewItem) -> Vec<CallEvent>,
    after: i64,
    follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
) -> Result<(crate::ReviewItem, Vec<JournalEntry>), StoreError> {
    let mut tx = session.client.transaction()?;
    let item = super::queries::resolve_in(&mut tx, id, resolution, now)?;
    fault!("review.resolved");
    let entries = journal_in(&mut tx, &session.journal, &then(&item), after, follow)?;
    tx.commit()?;
    Ok((item, entries))
}

/// [`journal`] inside a transaction the caller commits.
fn journal_in(
    tx: &mut postgres::Transaction<'_>,
    statements: &super::queries::JournalStatements,
    events: &[CallEvent],
    after: i64,
    follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
) -> Result<Vec<JournalEntry>, StoreError> {
    let at: Vec<i64> = events.iter().map(|e| e.at.as_millisecond()).collect();
    let kind: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    let subject: Vec<&str> = events.iter().map(|e| e.subject.as_str()).collect();
    let body: Vec<&str> = events.iter().map(|e| e.body.as_str()).collect();
    let entries = entries(&tx.query(&statements.append, &[&at, &kind, &subject, &body, &after])?)?;
    fault!("journal.appended");
    let writes = follow(&entries);
    let (kept, gone): (Vec<&StateRow>, Vec<&StateRow>) =
        writes.rows.iter().partition(|row| row.body.is_some());
    let text = |rows: &[&StateRow], part: fn(&StateRow) -> &str| -> Vec<String> {
        rows.iter().map(|r| part(r).to_owned()).collect()
    };
    let expires: Vec<Option<i64>> = kept
        .iter()
        .map(|r| r.expires.map(jiff::Timestamp::as_millisecond))
        .collect();
    let position = entries.last().map_or(0, |last| last.id);
    // One statement: the rows kept, the rows gone, the position.
    tx.execute(
        &statements.write_state,
        &[
            &text(&kept, |r| r.kind.as_str()),
            &text(&kept, |r| &r.key),
            &text(&kept, |r| &r.caller),
            &text(&kept, |r| r.body.as_deref().unwrap_or("")),
            &expires,
            &text(&gone, |r| r.kind.as_str()),
            &text(&gone, |r| &r.key),
            &position,
        ],
    )?;
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

/// The kept call state and its position, read under the journal's lock (so no journal
/// transaction is half seen).
pub fn load(client: &mut Client) -> Result<(Vec<StateRow>, i64), StoreError> {
    let mut tx = client.transaction()?;
    tx.execute(JOURNAL_LOCK, &[])?;
    let position: i64 = tx
        .query_one("SELECT position FROM call_position WHERE id = 1", &[])?
        .get(0);
    let rows = tx
        .query(
            "SELECT kind, key, caller, body, expires FROM call_state ORDER BY kind, key",
            &[],
        )?
        .iter()
        .map(|row| {
            state_row(
                row.get::<_, &str>(0),
                row.get(1),
                row.get(2),
                row.get(3),
                row.get(4),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    tx.commit()?;
    Ok((rows, position))
}
