//! Cases, review items and the retention purge.

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::ledger::attempts;
use crate::codec::{millis, timestamp};
use crate::notify::task_failure;
use crate::{
    AttemptCount, CallEvent, CaseRecord, CycleAttempt, JournalEntry, Purged, Resolution,
    ResolvedBy, ReviewFilter, ReviewItem, StoreError, TaskEscalation,
};
use backstop_core::notify::Notice;

const REVIEW_COLUMNS: &str = "id, caller, job, case_id, lane, escalation, reason, opened_at,
    retry_allowed, retry_used, resolved_at, resolved_by, decision, note, kind, detail";

pub fn case(
    connection: &Connection,
    caller: &str,
    job: &str,
    case_id: &str,
) -> Result<Option<CaseRecord>, StoreError> {
    let found = connection
        .prepare_cached(
            "SELECT issued, opened_at, cycle FROM cases
             WHERE caller = ?1 AND job = ?2 AND case_id = ?3",
        )?
        .query_row(params![caller, job, case_id], |row| {
            Ok((
                row.get::<_, bool>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, u32>(2)?,
            ))
        })
        .optional()?;
    let Some((issued, opened_at, cycle)) = found else {
        return Ok(None);
    };
    let results: std::collections::HashMap<String, String> = connection
        .prepare_cached(
            "SELECT execution_id, result FROM attempts
             WHERE caller = ?1 AND job = ?2 AND case_id = ?3",
        )?
        .query_map(params![caller, job, case_id], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })?
        .collect::<Result<_, _>>()?;
    let attempts = attempts(connection, caller, job, case_id, None)?
        .into_iter()
        .map(|(cycle, record)| {
            let result = results.get(&record.execution_id).map_or("", String::as_str);
            CycleAttempt::new(cycle, record, result)
        })
        .collect();
    let sql = format!(
        "SELECT {REVIEW_COLUMNS} FROM reviews WHERE caller = ?1 AND job = ?2 AND case_id = ?3
         ORDER BY id DESC"
    );
    let mut statement = connection.prepare_cached(&sql)?;
    let reviews = statement
        .query_map(params![caller, job, case_id], review_row)?
        .map(|row| row?)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(CaseRecord {
        caller: caller.to_owned(),
        job: job.to_owned(),
        id: case_id.to_owned(),
        issued,
        opened_at: timestamp(opened_at)?,
        cycle,
        attempts,
        reviews,
    }))
}

pub fn reviews(
    connection: &Connection,
    filter: &ReviewFilter,
) -> Result<Vec<ReviewItem>, StoreError> {
    let sql = format!(
        "SELECT {REVIEW_COLUMNS} FROM reviews
         WHERE (?1 IS NULL OR (resolved_at IS NULL) = ?1)
           AND (?2 IS NULL OR job = ?2)
           AND (?3 IS NULL OR caller = ?3)
         ORDER BY id DESC LIMIT ?4"
    );
    let mut statement = connection.prepare_cached(&sql)?;
    let limit = filter.limit.unwrap_or(100);
    statement
        .query_map(
            params![filter.open, filter.job, filter.caller, limit],
            review_row,
        )?
        .map(|row| row?)
        .collect()
}

pub fn review(connection: &Connection, id: i64) -> Result<Option<ReviewItem>, StoreError> {
    let sql = format!("SELECT {REVIEW_COLUMNS} FROM reviews WHERE id = ?1");
    connection
        .prepare_cached(&sql)?
        .query_row(params![id], review_row)
        .optional()?
        .transpose()
}

pub fn attempt_counts(
    connection: &Connection,
    since: Timestamp,
) -> Result<Vec<AttemptCount>, StoreError> {
    connection
        .prepare_cached(
            "SELECT job, status, COUNT(*) FROM attempts WHERE at >= ?1
             GROUP BY job, status ORDER BY job, status",
        )?
        .query_map(params![millis(since)], |row| {
            Ok(AttemptCount {
                job: row.get(0)?,
                status: row.get(1)?,
                count: row.get::<_, i64>(2)?.try_into().unwrap_or(0),
            })
        })?
        .collect::<Result<_, _>>()
        .map_err(StoreError::from)
}

pub fn resolve(
    connection: &mut Connection,
    id: i64,
    resolution: &Resolution,
    now: Timestamp,
) -> Result<ReviewItem, StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let item = resolve_in(&tx, id, resolution, now)?;
    tx.commit()?;
    Ok(item)
}

/// [`resolve`] inside a transaction the caller commits.
pub fn resolve_in(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    resolution: &Resolution,
    now: Timestamp,
) -> Result<ReviewItem, StoreError> {
    let sql = format!("SELECT {REVIEW_COLUMNS} FROM reviews WHERE id = ?1");
    let item = tx
        .prepare_cached(&sql)?
        .query_row(params![id], review_row)
        .optional()?
        .transpose()?
        .ok_or_else(|| StoreError::NotFound(format!("no review item {id}")))?;
    if let Some(done) = &item.resolution {
        return Err(StoreError::Conflict(format!(
            "review item {id} was already resolved by {} at {}: {}",
            done.by, done.at, done.decision
        )));
    }
    let at = millis(now);
    tx.prepare_cached(
        "UPDATE reviews SET resolved_at = ?2, resolved_by = ?3, decision = ?4, note = ?5
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        at,
        resolution.by,
        resolution.decision,
        resolution.note
    ])?;
    // The operator's decision ends the cycle: the case's next attempt starts a new count.
    tx.prepare_cached(
        "UPDATE cases SET cycle = cycle + 1, last_at = ?4
         WHERE caller = ?1 AND job = ?2 AND case_id = ?3",
    )?
    .execute(params![item.caller, item.job, item.case_id, at])?;
    Ok(ReviewItem {
        resolution: Some(ResolvedBy {
            at: timestamp(at)?,
            by: resolution.by.clone(),
            decision: resolution.decision.clone(),
            note: resolution.note.clone(),
        }),
        ..item
    })
}

/// Opens a task's review item unless one is open for the caller's task.
pub fn open_task_review(
    connection: &mut Connection,
    caller: &str,
    escalation: &TaskEscalation,
    reason: &str,
    now: Timestamp,
) -> Result<Option<ReviewItem>, StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let item = open_task_review_in(&tx, caller, escalation, reason, now)?;
    tx.commit()?;
    Ok(item)
}

/// [`open_task_review`] inside a transaction the caller commits (the journal's, say).
pub fn open_task_review_in(
    tx: &rusqlite::Transaction<'_>,
    caller: &str,
    escalation: &TaskEscalation,
    reason: &str,
    now: Timestamp,
) -> Result<Option<ReviewItem>, StoreError> {
    let open: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM reviews
         WHERE kind = 'task' AND resolved_at IS NULL AND caller = ?1 AND case_id = ?2)",
        params![caller, escalation.task],
        |row| row.get(0),
    )?;
    if open {
        return Ok(None);
    }
    let detail = serde_json::to_string(escalation)
        .map_err(|e| StoreError::Database(format!("cannot store the escalation: {e}")))?;
    tx.prepare_cached(
        "INSERT INTO reviews (caller, job, case_id, lane, escalation, reason, opened_at,
                              retry_allowed, kind, detail)
         VALUES (?1, '', ?2, 'task', ?3, ?4, ?5, 0, 'task', ?6)",
    )?
    .execute(params![
        caller,
        escalation.task,
        escalation.to,
        reason,
        millis(now),
        detail
    ])?;
    let id = tx.last_insert_rowid();
    let sql = format!("SELECT {REVIEW_COLUMNS} FROM reviews WHERE id = ?1");
    let item = tx
        .prepare_cached(&sql)?
        .query_row(params![id], review_row)??;
    let notices = Notice::for_task_review(caller, id, &task_failure(escalation), now);
    super::notify::enqueue(tx, &notices, now)?;
    Ok(Some(item))
}

pub fn purge(connection: &mut Connection, before: Timestamp) -> Result<Purged, StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let cutoff = millis(before);
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let attempts = tx.execute("DELETE FROM attempts WHERE at < ?1", params![cutoff])?;
    fault!("purge.attempts_deleted");
    let reviews = tx.execute(
        "DELETE FROM reviews WHERE resolved_at IS NOT NULL AND resolved_at < ?1",
        params![cutoff],
    )?;
    // Only events the kept call state already reflects: the rest are still to be applied.
    let events = tx.execute(
        "DELETE FROM events WHERE at < ?1
           AND id <= (SELECT position FROM call_position WHERE id = 1)",
        params![cutoff],
    )?;
    // Call state past its window (a policy stop has none and stays).
    tx.execute(
        "DELETE FROM call_state WHERE expires IS NOT NULL AND expires < ?1",
        params![cutoff],
    )?;
    let dispatches = tx.execute(
        "DELETE FROM dispatches WHERE updated_at < ?1",
        params![cutoff],
    )?;
    let deliveries = tx.execute(
        "DELETE FROM deliveries WHERE received_at < ?1",
        params![cutoff],
    )?;
    let notifications = super::notify::purge(&tx, cutoff)?;
    let cases = tx.execute(
        "DELETE FROM cases WHERE last_at < ?1
           AND NOT EXISTS (SELECT 1 FROM reviews r
                           WHERE r.caller = cases.caller AND r.job = cases.job
                             AND r.case_id = cases.case_id AND r.resolved_at IS NULL)",
        params![cutoff],
    )?;
    tx.commit()?;
    Ok(Purged {
        attempts: count(attempts),
        reviews: count(reviews),
        events: count(events),
        cases: count(cases),
        dispatches: count(dispatches),
        deliveries: count(deliveries),
        notifications: count(notifications),
    })
}

/// The events after `after`, in journal order.
pub fn journal_after(connection: &Connection, after: i64) -> Result<Vec<JournalEntry>, StoreError> {
    let mut statement = connection.prepare_cached(
        "SELECT id, at, kind, subject, body FROM events WHERE id > ?1 ORDER BY id",
    )?;
    let rows = statement.query_map(params![after], entry_row)?;
    rows.map(|row| row?).collect()
}

/// A journal row; the outer result is the driver's, the inner one a stored time read back.
#[allow(clippy::unnecessary_wraps)]
fn entry_row(row: &Row<'_>) -> rusqlite::Result<Result<JournalEntry, StoreError>> {
    let (id, at, kind, subject, body): (i64, i64, String, String, String) = (
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
    );
    Ok(timestamp(at).map(|at| JournalEntry {
        id,
        event: CallEvent {
            at,
            kind,
            subject,
            body,
        },
    }))
}

/// A review row; the outer result is the driver's, the inner one a stored time read back.
#[allow(clippy::unnecessary_wraps)]
fn review_row(row: &Row<'_>) -> rusqlite::Result<Result<ReviewItem, StoreError>> {
    let resolved_at: Option<i64> = row.get(10)?;
    let opened_at: i64 = row.get(7)?;
    let mut item = ReviewItem {
        id: row.get(0)?,
        caller: row.get(1)?,
        job: row.get(2)?,
        case_id: row.get(3)?,
        lane: row.get(4)?,
        escalation: row.get(5)?,
        reason: row.get(6)?,
        opened_at: Timestamp::UNIX_EPOCH,
        retry_allowed: row.get(8)?,
        retry_used: row.get(9)?,
        resolution: None,
        kind: row.get(14)?,
        task: None,
    };
    let by: Option<String> = row.get(11)?;
    let decision: Option<String> = row.get(12)?;
    let note: Option<String> = row.get(13)?;
    let detail: Option<String> = row.get(15)?;
    Ok((|| {
        item.opened_at = timestamp(opened_at)?;
        item.task = crate::codec::task_detail(detail.as_deref())?;
        if let Some(at) = resolved_at {
            item.resolution = Some(ResolvedBy {
                at: timestamp(at)?,
                by: by.unwrap_or_default(),
                decision: decision.unwrap_or_default(),
                note,
            });
        }
        Ok(item)
    })())
}
