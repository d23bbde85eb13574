//! The call journal and the call state it builds, in `PostgreSQL`: events appended (under the
//! journal's advisory lock, taken by `backstop_journal`) and state rows written in one
//! transaction, and the state read back whole with its position under the same lock.

use postgres::{Client, SimpleQueryMessage};

use super::connection::Session;
use super::queries::entries;
use crate::codec::state_row;
use crate::{
    CLEARING_KINDS, CallEvent, JournalEntry, JournalWrites, STRATEGIES_KIND, Speculation, StateRow,
    StoreError,
};

/// The journal's advisory lock, as `backstop_journal` takes it.
const JOURNAL_LOCK: &str = "SELECT pg_advisory_xact_lock(hashtextextended('backstop-journal', 0))";

/// Appends `events`, hands every event after `after` to `follow`, and writes the rows it
/// returns and the position, in one transaction holding the journal's lock: ids are taken
/// and committed in lock order, so the journal has one order across processes and a reader
/// never sees an event before an earlier one commits.
///
/// Two round trips where nothing else is asked: `BEGIN` with the append (which takes the lock),
/// then the rows, the position and `COMMIT`, each one simple-protocol query with its values as
/// escaped literals. The lock is so held for one round trip, not three. A first escalation's
/// review item is opened on the extended protocol, in the same transaction.
pub fn journal(
    session: &mut Session,
    events: &[CallEvent],
    after: i64,
    follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
) -> Result<Vec<JournalEntry>, StoreError> {
    let mut open = Open {
        client: &mut session.client,
        ended: false,
    };
    let append = format!(
        "BEGIN; SELECT id, at, kind, subject, body FROM backstop_journal({}, {after})",
        append_arguments(events)
    );
    let entries = text_entries(&open.client.simple_query(&append)?)?;
    fault!("journal.appended");
    let writes = follow(&entries);
    let position = entries.last().map_or(0, |last| last.id);
    let write_state = writes
        .checkpoint
        .as_ref()
        .map(|rows| write_state_call(rows, position))
        .unwrap_or_default();
    if writes.task_reviews.is_empty() {
        open.client.simple_query(&format!("{write_state}COMMIT"))?;
        open.ended = true;
        return Ok(entries);
    }
    if !write_state.is_empty() {
        open.client.simple_query(&write_state)?;
    }
    fault!("journal.rows_written");
    open_task_reviews(open.client, &writes.task_reviews)?;
    fault!("journal.reviews_opened");
    open.client.batch_execute("COMMIT")?;
    open.ended = true;
    Ok(entries)
}

/// The SQLSTATE `backstop_journal_unless` raises when a speculation fails.
const SPECULATION_FAILED: &str = "BJ001";

/// [`journal`] for a batch that opens no review item under `speculation`: appended and
/// committed in one round trip when the speculation holds under the journal's lock (checked by
/// `backstop_journal_unless`, as [`Speculation::holds`] says), then handed to `follow`;
/// otherwise rolled back and journaled by [`journal`], the lock held while `follow` applies it.
pub fn journal_speculating(
    session: &mut Session,
    events: &[CallEvent],
    after: i64,
    speculation: &Speculation,
    follow: &mut dyn FnMut(&[JournalEntry]) -> JournalWrites,
) -> Result<Vec<JournalEntry>, StoreError> {
    let query = format!(
        "BEGIN; SELECT id, at, kind, subject, body FROM backstop_journal_unless({}, {after}, {}, {}, {}, {}); COMMIT",
        append_arguments(events),
        text_array(speculation.tasks.iter().map(String::as_str)),
        text_array(CLEARING_KINDS.into_iter()),
        postgres_protocol::escape::escape_literal(STRATEGIES_KIND),
        speculation.expires.as_millisecond(),
    );
    let mut open = Open {
        client: &mut session.client,
        ended: false,
    };
    match open.client.simple_query(&query) {
        Ok(messages) => {
            open.ended = true;
            let entries = text_entries(&messages)?;
            let writes = follow(&entries);
            // The speculation said no review item opens (and no checkpoint is asked: none is
            // speculated when one is due); should it be wrong, the items open at once rather
            // than being lost.
            debug_assert!(
                writes.task_reviews.is_empty(),
                "a speculation failed to hold"
            );
            if !writes.task_reviews.is_empty() {
                let mut tx = open.client.transaction()?;
                open_task_reviews(&mut tx, &writes.task_reviews)?;
                tx.commit()?;
            }
            Ok(entries)
        }
        Err(error) if error.code().is_some_and(|c| c.code() == SPECULATION_FAILED) => {
            drop(open);
            journal(session, events, after, follow)
        }
        Err(error) => Err(error.into()),
    }
}

/// Opens the review item of each of `reviews` (unless its task has one open), in the
/// transaction `tx` is in.
fn open_task_reviews(
    tx: &mut impl postgres::GenericClient,
    reviews: &[crate::TaskReview],
) -> Result<(), StoreError> {
    for review in reviews {
        super::queries::open_task_review_in(
            tx,
            &review.caller,
            &review.escalation,
            &review.reason,
            review.at,
        )?;
    }
    Ok(())
}

/// A transaction begun by hand: rolled back when dropped before its `COMMIT` (a failure, a
/// fault, a panic), so the connection is never left inside it.
struct Open<'a> {
    client: &'a mut Client,
    ended: bool,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.ended {
            // A cut connection cannot roll back, and needs not: the server did.
            let _ = self.client.batch_execute("ROLLBACK");
        }
    }
}

/// The events' columns as the arguments `backstop_journal` takes first, as literals.
fn append_arguments(events: &[CallEvent]) -> String {
    let at: Vec<String> = events
        .iter()
        .map(|e| e.at.as_millisecond().to_string())
        .collect();
    format!(
        "{}::BIGINT[], {}, {}, {}",
        array(&at),
        text_array(events.iter().map(|e| e.kind.as_str())),
        text_array(events.iter().map(|e| e.subject.as_str())),
        text_array(events.iter().map(|e| e.body.as_str())),
    )
}

/// The `backstop_write_state` call that writes a checkpoint's rows at `position`, as literals.
fn write_state_call(rows: &[StateRow], position: i64) -> String {
    let (kept, gone): (Vec<&StateRow>, Vec<&StateRow>) =
        rows.iter().partition(|row| row.body.is_some());
    let expires: Vec<String> = kept
        .iter()
        .map(|r| {
            r.expires
                .map_or("NULL".to_owned(), |t| t.as_millisecond().to_string())
        })
        .collect();
    format!(
        "SELECT backstop_write_state({}, {}, {}, {}, {}::BIGINT[], {}, {}, {position}); ",
        text_array(kept.iter().map(|r| r.kind.as_str())),
        text_array(kept.iter().map(|r| r.key.as_str())),
        text_array(kept.iter().map(|r| r.caller.as_str())),
        text_array(kept.iter().map(|r| r.body.as_deref().unwrap_or(""))),
        array(&expires),
        text_array(gone.iter().map(|r| r.kind.as_str())),
        text_array(gone.iter().map(|r| r.key.as_str())),
    )
}

/// `ARRAY[...]` of SQL values written as they are (numbers, `NULL`); `'{}'` when empty.
fn array(values: &[String]) -> String {
    if values.is_empty() {
        "'{}'".to_owned()
    } else {
        format!("ARRAY[{}]", values.join(","))
    }
}

/// A `TEXT[]` of escaped literals (libpq's quoting: safe whatever the server's settings).
fn text_array<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let literals: Vec<String> = values
        .map(postgres_protocol::escape::escape_literal)
        .collect();
    format!("{}::TEXT[]", array(&literals))
}

/// The journal entries a simple-protocol query returned, read from their text.
fn text_entries(messages: &[SimpleQueryMessage]) -> Result<Vec<JournalEntry>, StoreError> {
    let unreadable = || StoreError::Corrupt("the journal returned an unreadable row".to_owned());
    let mut entries = Vec::new();
    for message in messages {
        let SimpleQueryMessage::Row(row) = message else {
            continue;
        };
        let text = |i: usize| row.get(i).ok_or_else(unreadable);
        let number = |i: usize| text(i)?.parse::<i64>().map_err(|_| unreadable());
        entries.push(JournalEntry {
            id: number(0)?,
            event: CallEvent {
                at: crate::codec::timestamp(number(1)?)?,
                kind: text(2)?.to_owned(),
                subject: text(3)?.to_owned(),
                body: text(4)?.to_owned(),
            },
        });
    }
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
    if let Some(rows) = &writes.checkpoint {
        let (kept, gone): (Vec<&StateRow>, Vec<&StateRow>) =
            rows.iter().partition(|row| row.body.is_some());
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
    }
    fault!("journal.rows_written");
    open_task_reviews(tx, &writes.task_reviews)?;
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
