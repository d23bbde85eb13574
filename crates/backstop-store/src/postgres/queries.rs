//! Cases, review items, call events and the retention purge, in `PostgreSQL`.

use jiff::Timestamp;
use postgres::{Client, GenericClient, Row, Statement};

use super::ledger::attempts;
use super::uint;
use crate::codec::timestamp;
use crate::notify::task_failure;
use crate::{
    AttemptCount, CallEvent, CaseRecord, CycleAttempt, JournalEntry, Purged, Resolution,
    ResolvedBy, ReviewFilter, ReviewItem, StoreError, TaskEscalation,
};
use backstop_core::notify::Notice;

const REVIEW_COLUMNS: &str = "id, caller, job, case_id, lane, escalation, reason, opened_at, \
    retry_allowed, retry_used, resolved_at, resolved_by, decision, note, kind, detail";

pub fn case(
    client: &mut Client,
    caller: &str,
    job: &str,
    case_id: &str,
) -> Result<Option<CaseRecord>, StoreError> {
    let Some(row) = client.query_opt(
        "SELECT issued, opened_at, cycle FROM cases
         WHERE caller = $1 AND job = $2 AND case_id = $3",
        &[&caller, &job, &case_id],
    )?
    else {
        return Ok(None);
    };
    let results: std::collections::HashMap<String, String> = client
        .query(
            "SELECT execution_id, result FROM attempts
             WHERE caller = $1 AND job = $2 AND case_id = $3",
            &[&caller, &job, &case_id],
        )?
        .iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .collect::<Result<_, postgres::Error>>()?;
    let attempts = attempts(client, caller, job, case_id, None)?
        .into_iter()
        .map(|(cycle, record)| {
            let result = results.get(&record.execution_id).map_or("", String::as_str);
            CycleAttempt::new(cycle, record, result)
        })
        .collect();
    let reviews = client
        .query(
            &format!(
                "SELECT {REVIEW_COLUMNS} FROM reviews
                 WHERE caller = $1 AND job = $2 AND case_id = $3 ORDER BY id DESC"
            ),
            &[&caller, &job, &case_id],
        )?
        .iter()
        .map(review_row)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(CaseRecord {
        caller: caller.to_owned(),
        job: job.to_owned(),
        id: case_id.to_owned(),
        issued: row.get(0),
        opened_at: timestamp(row.get(1))?,
        cycle: uint(row.get(2))?,
        attempts,
        reviews,
    }))
}

pub fn reviews(client: &mut Client, filter: &ReviewFilter) -> Result<Vec<ReviewItem>, StoreError> {
    let limit = i64::from(filter.limit.unwrap_or(100));
    client
        .query(
            &format!(
                "SELECT {REVIEW_COLUMNS} FROM reviews
                 WHERE ($1::BOOLEAN IS NULL OR (resolved_at IS NULL) = $1)
                   AND ($2::TEXT IS NULL OR job = $2)
                   AND ($3::TEXT IS NULL OR caller = $3)
                 ORDER BY id DESC LIMIT $4"
            ),
            &[&filter.open, &filter.job, &filter.caller, &limit],
        )?
        .iter()
        .map(review_row)
        .collect()
}

pub fn review(client: &mut Client, id: i64) -> Result<Option<ReviewItem>, StoreError> {
    let select = format!("SELECT {REVIEW_COLUMNS} FROM reviews WHERE id = $1");
    client
        .query_opt(&select, &[&id])?
        .as_ref()
        .map(review_row)
        .transpose()
}

pub fn attempt_counts(
    client: &mut Client,
    since: Timestamp,
) -> Result<Vec<AttemptCount>, StoreError> {
    client
        .query(
            "SELECT job, status, COUNT(*) FROM attempts WHERE at >= $1
             GROUP BY job, status ORDER BY job, status",
            &[&since.as_millisecond()],
        )?
        .iter()
        .map(|row| {
            Ok(AttemptCount {
                job: row.try_get(0)?,
                status: row.try_get(1)?,
                count: row.try_get::<_, i64>(2)?.try_into().unwrap_or(0),
            })
        })
        .collect()
}

pub fn resolve(
    client: &mut Client,
    id: i64,
    resolution: &Resolution,
    now: Timestamp,
) -> Result<ReviewItem, StoreError> {
    let mut tx = client.transaction()?;
    let item = resolve_in(&mut tx, id, resolution, now)?;
    tx.commit()?;
    Ok(item)
}

/// [`resolve`] inside a transaction the caller commits.
pub fn resolve_in(
    tx: &mut postgres::Transaction<'_>,
    id: i64,
    resolution: &Resolution,
    now: Timestamp,
) -> Result<ReviewItem, StoreError> {
    let select = format!("SELECT {REVIEW_COLUMNS} FROM reviews WHERE id = $1");
    let found = tx
        .query_opt(&select, &[&id])?
        .ok_or_else(|| StoreError::NotFound(format!("no review item {id}")))?;
    let owner = review_row(&found)?;
    // The case's lock first, as every attempt takes it, then the row: an attempt racing this
    // resolution waits for it, or this waits for the attempt.
    super::ledger::lock_case(tx, &owner.caller, &owner.job, &owner.case_id)?;
    let row = tx
        .query_opt(&format!("{select} FOR UPDATE"), &[&id])?
        .ok_or_else(|| StoreError::NotFound(format!("no review item {id}")))?;
    let item = review_row(&row)?;
    if let Some(done) = &item.resolution {
        return Err(StoreError::Conflict(format!(
            "review item {id} was already resolved by {} at {}: {}",
            done.by, done.at, done.decision
        )));
    }
    let at = now.as_millisecond();
    tx.execute(
        "UPDATE reviews SET resolved_at = $2, resolved_by = $3, decision = $4, note = $5
         WHERE id = $1",
        &[
            &id,
            &at,
            &resolution.by,
            &resolution.decision,
            &resolution.note,
        ],
    )?;
    tx.execute(
        "UPDATE cases SET cycle = cycle + 1, last_at = $4
         WHERE caller = $1 AND job = $2 AND case_id = $3",
        &[&item.caller, &item.job, &item.case_id, &at],
    )?;
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

pub fn purge(client: &mut Client, before: Timestamp) -> Result<Purged, StoreError> {
    let mut tx = client.transaction()?;
    let cutoff = before.as_millisecond();
    let attempts = tx.execute("DELETE FROM attempts WHERE at < $1", &[&cutoff])?;
    fault!("purge.attempts_deleted");
    let reviews = tx.execute(
        "DELETE FROM reviews WHERE resolved_at IS NOT NULL AND resolved_at < $1",
        &[&cutoff],
    )?;
    // Only events the kept call state already reflects: the rest are still to be applied.
    let events = tx.execute(
        "DELETE FROM events WHERE at < $1
           AND id <= (SELECT position FROM call_position WHERE id = 1)",
        &[&cutoff],
    )?;
    // Call state past its window (a policy stop has none and stays).
    tx.execute(
        "DELETE FROM call_state WHERE expires IS NOT NULL AND expires < $1",
        &[&cutoff],
    )?;
    let dispatches = tx.execute("DELETE FROM dispatches WHERE updated_at < $1", &[&cutoff])?;
    let deliveries = tx.execute("DELETE FROM deliveries WHERE received_at < $1", &[&cutoff])?;
    let notifications = super::notify::purge(&mut tx, cutoff)?;
    let cases = tx.execute(
        "DELETE FROM cases WHERE last_at < $1
           AND NOT EXISTS (SELECT 1 FROM reviews r
                           WHERE r.caller = cases.caller AND r.job = cases.job
                             AND r.case_id = cases.case_id AND r.resolved_at IS NULL)",
        &[&cutoff],
    )?;
    tx.commit()?;
    Ok(Purged {
        attempts,
        reviews,
        events,
        cases,
        dispatches,
        deliveries,
        notifications,
    })
}

/// The call journal's statement, prepared once per connection.
#[derive(Debug, Clone)]
pub struct JournalStatements {
    pub(super) append: Statement,
    /// The call state's rows (kept, then gone) and the position, in one statement.
    pub(super) write_state: Statement,
}

impl JournalStatements {
    pub fn prepare(client: &mut Client) -> Result<Self, StoreError> {
        Ok(Self {
            // `backstop_journal` takes the journal's lock, inserts, then reads (see the schema).
            append: client.prepare(
                "SELECT id, at, kind, subject, body FROM backstop_journal($1, $2, $3, $4, $5)",
            )?,
            write_state: client.prepare(
                "SELECT backstop_write_state($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::TEXT[],
                                             $5::BIGINT[], $6::TEXT[], $7::TEXT[], $8::BIGINT)",
            )?,
        })
    }
}

/// The events after `after`, in journal order.
pub fn journal_after(client: &mut Client, after: i64) -> Result<Vec<JournalEntry>, StoreError> {
    // Prepared anew each time, so planned for this position (a generic plan of `id > $1`
    // scans and sorts the whole table).
    entries(&client.query(
        "SELECT id, at, kind, subject, body FROM events WHERE id > $1 ORDER BY id",
        &[&after],
    )?)
}

pub(super) fn entries(rows: &[Row]) -> Result<Vec<JournalEntry>, StoreError> {
    rows.iter()
        .map(|row| {
            Ok(JournalEntry {
                id: row.get(0),
                event: CallEvent {
                    at: timestamp(row.get(1))?,
                    kind: row.get(2),
                    subject: row.get(3),
                    body: row.get(4),
                },
            })
        })
        .collect()
}

fn review_row(row: &Row) -> Result<ReviewItem, StoreError> {
    let resolved_at: Option<i64> = row.get(10);
    Ok(ReviewItem {
        id: row.get(0),
        caller: row.get(1),
        job: row.get(2),
        case_id: row.get(3),
        lane: row.get(4),
        escalation: row.get(5),
        reason: row.get(6),
        opened_at: timestamp(row.get(7))?,
        retry_allowed: row.get(8),
        retry_used: row.get(9),
        resolution: match resolved_at {
            Some(at) => Some(ResolvedBy {
                at: timestamp(at)?,
                by: row.get::<_, Option<String>>(11).unwrap_or_default(),
                decision: row.get::<_, Option<String>>(12).unwrap_or_default(),
                note: row.get(13),
            }),
            None => None,
        },
        kind: row.get(14),
        task: crate::codec::task_detail(row.get::<_, Option<&str>>(15))?,
    })
}

/// Opens a task's review item unless one is open for the caller's task (one at a time per
/// task, across connections: an advisory lock on the caller's task).
pub fn open_task_review(
    client: &mut Client,
    caller: &str,
    escalation: &TaskEscalation,
    reason: &str,
    now: Timestamp,
) -> Result<Option<ReviewItem>, StoreError> {
    let mut tx = client.transaction()?;
    let item = open_task_review_in(&mut tx, caller, escalation, reason, now)?;
    tx.commit()?;
    Ok(item)
}

/// [`open_task_review`] inside a transaction the caller commits (the journal's, say).
pub fn open_task_review_in(
    tx: &mut impl GenericClient,
    caller: &str,
    escalation: &TaskEscalation,
    reason: &str,
    now: Timestamp,
) -> Result<Option<ReviewItem>, StoreError> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        &[&format!(
            "backstop-task-review\u{1f}{caller}\u{1f}{}",
            escalation.task
        )],
    )?;
    let open: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM reviews
             WHERE kind = 'task' AND resolved_at IS NULL AND caller = $1 AND case_id = $2)",
            &[&caller, &escalation.task],
        )?
        .get(0);
    if open {
        return Ok(None);
    }
    let detail = serde_json::to_string(escalation)
        .map_err(|e| StoreError::Database(format!("cannot store the escalation: {e}")))?;
    let row = tx.query_one(
        &format!(
            "INSERT INTO reviews (caller, job, case_id, lane, escalation, reason, opened_at,
                                  retry_allowed, kind, detail)
             VALUES ($1, '', $2, 'task', $3, $4, $5, FALSE, 'task', $6)
             RETURNING {REVIEW_COLUMNS}"
        ),
        &[
            &caller,
            &escalation.task,
            &escalation.to,
            &reason,
            &now.as_millisecond(),
            &detail,
        ],
    )?;
    let item = review_row(&row)?;
    let notices = Notice::for_task_review(caller, item.id, &task_failure(escalation), now);
    super::notify::enqueue(tx, &notices, now)?;
    Ok(Some(item))
}
