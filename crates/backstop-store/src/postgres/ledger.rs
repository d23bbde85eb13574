//! One attempt in one `PostgreSQL` transaction, serialized per case by advisory locks.

use backstop_core::case::{
    AttemptRecord, Attempted, CaseLookup, CaseState, Change, Next, OpenReview, Request,
    StoredExecution, SuppressContacts, attempt,
};
use backstop_core::pack::{Pack, SuppressScope};
use jiff::{SignedDuration, Timestamp};
use postgres::{Client, GenericClient, Row, Transaction};

use super::notify::enqueue;
use super::{int, uint};
use crate::codec::{from_json, from_word, timestamp, to_json};
use crate::notify::refusal_notice;
use crate::{Reply, StoreError};
use backstop_core::notify::{CaseRef, Notice};

/// How far back an issued-mode first request looks, and issued cases are counted.
const ISSUED_LOOKBACK: SignedDuration = SignedDuration::from_hours(24);

pub fn decide(
    client: &mut Client,
    pack: &Pack,
    caller: &str,
    request: &Request,
    now: Timestamp,
) -> Result<Reply, StoreError> {
    let mut tx = client.transaction()?;
    let reply = decide_in(&mut tx, pack, caller, request, now)?;
    tx.commit()?;
    Ok(reply)
}

/// One attempt in `tx`, left for the caller to commit: a replay or refusal changes no case
/// (only the attempt limit's notification is kept).
pub fn decide_in(
    tx: &mut Transaction<'_>,
    pack: &Pack,
    caller: &str,
    request: &Request,
    now: Timestamp,
) -> Result<Reply, StoreError> {
    let job = pack.job.as_str();
    // Execution id first, then the case: every attempt takes its two locks in this order.
    lock(tx, &[caller, job, "execution", &request.execution_id])?;
    // The case the request names, or the issued case a fresh start reuses (found once, under
    // the issued lock): either way its lock is held before anything is read.
    let case_id = match &request.case {
        CaseLookup::Named { id, .. } => Some(id.clone()),
        CaseLookup::Open { opening_hash, .. } => {
            lock(tx, &[caller, job, "issued"])?;
            reused_case(tx, job, caller, opening_hash.as_deref(), now)?
        }
    };
    if let Some(id) = &case_id {
        lock_case(tx, caller, job, id)?;
    }
    let (state, cycle) = load(tx, job, caller, request, case_id.as_deref(), now)?;
    match attempt(pack, &state, request, now) {
        Attempted::Replay(stored) => Ok(Reply::Replayed(stored)),
        Attempted::Refused(refusal) => {
            if let Some(notice) = refusal_notice(job, caller, &state, &refusal, now) {
                enqueue(tx, &[notice], now)?;
            }
            Ok(Reply::Refused(refusal))
        }
        Attempted::Counted { result, change } => {
            let review = apply(tx, job, caller, &change, cycle, now)?;
            let case = CaseRef {
                caller,
                job,
                case_id: &change.case_id,
            };
            let notices = Notice::for_attempt(case, &request.execution_id, &result, review, now);
            enqueue(tx, &notices, now)?;
            fault!("decide.counted");
            Ok(Reply::Counted(result))
        }
    }
}

/// The lock every attempt on a case takes (after its execution id's).
pub fn lock_case(
    tx: &mut Transaction<'_>,
    caller: &str,
    job: &str,
    case_id: &str,
) -> Result<(), StoreError> {
    lock(tx, &[caller, job, "case", case_id])
}

/// The issued case a first request with these excerpts would reuse, if any.
fn reused_case(
    tx: &mut Transaction<'_>,
    job: &str,
    caller: &str,
    opening_hash: Option<&str>,
    now: Timestamp,
) -> Result<Option<String>, StoreError> {
    let Some(opening_hash) = opening_hash else {
        return Ok(None);
    };
    let since = lookback(now);
    Ok(tx
        .query_opt(
            "SELECT case_id FROM cases
             WHERE caller = $1 AND job = $2 AND opening_hash = $3 AND opened_at > $4
             ORDER BY opened_at DESC LIMIT 1",
            &[&caller, &job, &opening_hash, &since],
        )?
        .map(|row| row.get(0)))
}

/// The start of the issued-case lookback, in stored milliseconds.
fn lookback(now: Timestamp) -> i64 {
    now.checked_sub(ISSUED_LOOKBACK)
        .unwrap_or(Timestamp::MIN)
        .as_millisecond()
}

/// A transaction-scoped advisory lock on the parts, joined.
fn lock(tx: &mut Transaction<'_>, parts: &[&str]) -> Result<(), StoreError> {
    let key = parts.join("\u{1f}");
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        &[&key],
    )?;
    Ok(())
}

fn load(
    tx: &mut Transaction<'_>,
    job: &str,
    caller: &str,
    request: &Request,
    case_id: Option<&str>,
    now: Timestamp,
) -> Result<(CaseState, u32), StoreError> {
    let execution = tx
        .query_opt(
            "SELECT fingerprint, result FROM attempts
             WHERE caller = $1 AND job = $2 AND execution_id = $3",
            &[&caller, &job, &request.execution_id],
        )?
        .map(|row| StoredExecution {
            fingerprint: row.get(0),
            result: row.get(1),
        });
    let mut state = CaseState {
        execution,
        ..CaseState::default()
    };
    if state.execution.is_some() {
        return Ok((state, 0));
    }
    let found = match case_id {
        Some(id) => tx.query_opt(
            "SELECT case_id, cycle FROM cases WHERE caller = $1 AND job = $2 AND case_id = $3",
            &[&caller, &job, &id],
        )?,
        None => None,
    };
    let Some(row) = found else {
        if matches!(request.case, CaseLookup::Open { .. }) {
            let since = lookback(now);
            let count: i64 = tx
                .query_one(
                    "SELECT count(*) FROM cases
                     WHERE caller = $1 AND job = $2 AND issued AND opened_at > $3",
                    &[&caller, &job, &since],
                )?
                .get(0);
            state.issued_last_day = u32::try_from(count).unwrap_or(u32::MAX);
        }
        return Ok((state, 0));
    };
    let case_id: String = row.get(0);
    let cycle = uint(row.get(1))?;
    state.attempts = attempts(tx, caller, job, &case_id, Some(cycle))?
        .into_iter()
        .map(|(_, record)| record)
        .collect();
    state.review = tx
        .query_opt(
            "SELECT id, lane, escalation, retry_allowed, retry_used FROM reviews
             WHERE caller = $1 AND job = $2 AND case_id = $3 AND resolved_at IS NULL
             ORDER BY id DESC LIMIT 1",
            &[&caller, &job, &case_id],
        )?
        .map(|row| OpenReview {
            id: row.get(0),
            lane: row.get(1),
            escalation: row.get(2),
            retry_allowed: row.get(3),
            retry_used: row.get(4),
        });
    state.case_id = Some(case_id);
    state.cycle = cycle;
    Ok((state, cycle))
}

/// The attempt records of a case, oldest first, with their cycles; `cycle` limits them to one.
pub fn attempts(
    client: &mut impl GenericClient,
    caller: &str,
    job: &str,
    case_id: &str,
    cycle: Option<u32>,
) -> Result<Vec<(u32, AttemptRecord)>, StoreError> {
    let columns = "cycle, number, at, execution_id, status, outcome, next, progress, closed, \
                   cited, lane_retry";
    let rows = match cycle {
        Some(cycle) => client.query(
            &format!(
                "SELECT {columns} FROM attempts
                 WHERE caller = $1 AND job = $2 AND case_id = $3 AND cycle = $4 ORDER BY id"
            ),
            &[&caller, &job, &case_id, &int(cycle)],
        )?,
        None => client.query(
            &format!(
                "SELECT {columns} FROM attempts
                 WHERE caller = $1 AND job = $2 AND case_id = $3 ORDER BY id"
            ),
            &[&caller, &job, &case_id],
        )?,
    };
    rows.iter().map(attempt_row).collect()
}

fn attempt_row(row: &Row) -> Result<(u32, AttemptRecord), StoreError> {
    let next: Option<String> = row.get(6);
    let status: String = row.get(4);
    let closed: String = row.get(8);
    let cited: String = row.get(9);
    let record = AttemptRecord {
        number: uint(row.get(1))?,
        at: timestamp(row.get(2))?,
        execution_id: row.get(3),
        status: from_word(&status)?,
        outcome: row.get(5),
        next: next.as_deref().map(from_word::<Next>).transpose()?,
        progress: row.get(7),
        closed: from_json(&closed)?,
        cited: from_json(&cited)?,
        lane_retry: row.get(10),
    };
    Ok((uint(row.get(0))?, record))
}

/// Stores what the core decided; the id of the review item it opened, if any.
fn apply(
    tx: &mut Transaction<'_>,
    job: &str,
    caller: &str,
    change: &Change,
    cycle: u32,
    now: Timestamp,
) -> Result<Option<i64>, StoreError> {
    let at = now.as_millisecond();
    let case_id = &change.case_id;
    if let Some(new) = &change.open_case {
        tx.execute(
            "INSERT INTO cases (caller, job, case_id, issued, opening_hash, opened_at, last_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6)",
            &[&caller, &job, case_id, &new.issued, &new.opening_hash, &at],
        )?;
    }
    let record = &change.attempt;
    let status = record.status.as_str();
    let next = record.next.map(Next::as_str);
    tx.execute(
        "INSERT INTO attempts (caller, job, case_id, cycle, number, at, execution_id, status,
                               outcome, next, progress, closed, cited, lane_retry, fingerprint,
                               result)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        &[
            &caller,
            &job,
            case_id,
            &int(cycle),
            &int(record.number),
            &at,
            &record.execution_id,
            &status,
            &record.outcome,
            &next,
            &record.progress,
            &to_json(&record.closed)?,
            &to_json(&record.cited)?,
            &record.lane_retry,
            &change.execution.fingerprint,
            &change.execution.result,
        ],
    )?;
    // Relative, so nothing read before this transaction's locks can undo a resolution.
    tx.execute(
        "UPDATE cases SET last_at = $4, cycle = cycle + $5
         WHERE caller = $1 AND job = $2 AND case_id = $3",
        &[&caller, &job, case_id, &at, &i64::from(change.end_cycle)],
    )?;
    if let Some(suppress) = &change.suppress {
        suppress_case_contacts(tx, caller, job, case_id, suppress, at)?;
    }
    let mut opened = None;
    if let Some(review) = &change.open_review {
        let row = tx.query_one(
            "INSERT INTO reviews (caller, job, case_id, lane, escalation, reason, opened_at,
                                  retry_allowed)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            &[
                &caller,
                &job,
                case_id,
                &review.lane,
                &review.escalation,
                &review.reason,
                &at,
                &review.retry_allowed,
            ],
        )?;
        opened = Some(row.get(0));
    }
    if let Some(id) = change.use_review_retry {
        tx.execute("UPDATE reviews SET retry_used = TRUE WHERE id = $1", &[&id])?;
    }
    if let Some(id) = change.close_review {
        tx.execute(
            "UPDATE reviews SET resolved_at = $2, resolved_by = 'backstop', decision = $3,
                                note = 'decided by the retry the lane allowed'
             WHERE id = $1 AND resolved_at IS NULL",
            &[&id, &at, &record.outcome],
        )?;
    }
    Ok(opened)
}

/// Every contact the case was dispatched to put on the suppression list (a do-not-call
/// result), whichever route the result came by.
fn suppress_case_contacts(
    tx: &mut Transaction<'_>,
    caller: &str,
    job: &str,
    case_id: &str,
    suppress: &SuppressContacts,
    at: i64,
) -> Result<(), StoreError> {
    let scope_case = match suppress.scope {
        SuppressScope::Case => case_id,
        SuppressScope::Contact => "",
    };
    tx.execute(
        "INSERT INTO suppressions (caller, job, contact, case_id, at, reason)
         SELECT DISTINCT caller, job, contact, $4::TEXT, $5::BIGINT, $6::TEXT FROM dispatches
         WHERE caller = $1 AND job = $2 AND case_id = $3
         ON CONFLICT DO NOTHING",
        &[&caller, &job, &case_id, &scope_case, &at, &suppress.reason],
    )?;
    Ok(())
}
