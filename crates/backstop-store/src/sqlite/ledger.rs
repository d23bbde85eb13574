//! One attempt in one transaction: the state loaded, the core's decision, its change applied.

use backstop_core::case::{
    AttemptRecord, Attempted, CaseLookup, CaseState, Change, Next, OpenReview, Request,
    ResultStatus, StoredExecution, SuppressContacts, attempt,
};
use backstop_core::pack::{Pack, SuppressScope};
use jiff::{SignedDuration, Timestamp};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::notify::enqueue;
use crate::codec::{from_json, from_word, to_json};
use crate::codec::{millis, timestamp};
use crate::notify::refusal_notice;
use crate::{Reply, StoreError};
use backstop_core::notify::{CaseRef, Notice};

/// How far back an issued-mode first request looks for the same excerpts, and how far back
/// issued cases are counted against the daily limit.
const ISSUED_LOOKBACK: SignedDuration = SignedDuration::from_hours(24);

pub fn decide(
    connection: &mut Connection,
    pack: &Pack,
    caller: &str,
    request: &Request,
    now: Timestamp,
) -> Result<Reply, StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let reply = decide_in(&tx, pack, caller, request, now)?;
    tx.commit()?;
    Ok(reply)
}

/// One attempt in `tx`, left for the caller to commit: a replay or refusal changes no case
/// (only the attempt limit's notification is kept).
pub fn decide_in(
    tx: &Transaction<'_>,
    pack: &Pack,
    caller: &str,
    request: &Request,
    now: Timestamp,
) -> Result<Reply, StoreError> {
    let (state, cycle) = load(tx, &pack.job, caller, request, now)?;
    match attempt(pack, &state, request, now) {
        Attempted::Replay(stored) => Ok(Reply::Replayed(stored)),
        Attempted::Refused(refusal) => {
            if let Some(notice) = refusal_notice(&pack.job, caller, &state, &refusal, now) {
                enqueue(tx, &[notice], now)?;
            }
            Ok(Reply::Refused(refusal))
        }
        Attempted::Counted { result, change } => {
            let review = apply(tx, &pack.job, caller, &change, cycle, now)?;
            let case = CaseRef {
                caller,
                job: &pack.job,
                case_id: &change.case_id,
            };
            let notices = Notice::for_attempt(case, &request.execution_id, &result, review, now);
            enqueue(tx, &notices, now)?;
            fault!("decide.counted");
            Ok(Reply::Counted(result))
        }
    }
}

/// The case's state, and its current cycle.
fn load(
    tx: &Transaction<'_>,
    job: &str,
    caller: &str,
    request: &Request,
    now: Timestamp,
) -> Result<(CaseState, u32), StoreError> {
    let execution = tx
        .prepare_cached(
            "SELECT fingerprint, result FROM attempts
             WHERE caller = ?1 AND job = ?2 AND execution_id = ?3",
        )?
        .query_row(params![caller, job, request.execution_id], |row| {
            Ok(StoredExecution {
                fingerprint: row.get(0)?,
                result: row.get(1)?,
            })
        })
        .optional()?;
    let mut state = CaseState {
        execution,
        ..CaseState::default()
    };
    if state.execution.is_some() {
        return Ok((state, 0));
    }
    let since = millis(now.checked_sub(ISSUED_LOOKBACK).unwrap_or(Timestamp::MIN));
    let found: Option<(String, u32)> = match &request.case {
        CaseLookup::Named { id, .. } => tx
            .prepare_cached(
                "SELECT case_id, cycle FROM cases WHERE caller = ?1 AND job = ?2 AND case_id = ?3",
            )?
            .query_row(params![caller, job, id], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?,
        CaseLookup::Open {
            opening_hash: None, ..
        } => None,
        CaseLookup::Open {
            opening_hash: Some(opening_hash),
            ..
        } => tx
            .prepare_cached(
                "SELECT case_id, cycle FROM cases
                 WHERE caller = ?1 AND job = ?2 AND opening_hash = ?3 AND opened_at > ?4
                 ORDER BY opened_at DESC LIMIT 1",
            )?
            .query_row(params![caller, job, opening_hash, since], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?,
    };
    let Some((case_id, cycle)) = found else {
        if matches!(request.case, CaseLookup::Open { .. }) {
            state.issued_last_day = tx
                .prepare_cached(
                    "SELECT count(*) FROM cases
                     WHERE caller = ?1 AND job = ?2 AND issued = 1 AND opened_at > ?3",
                )?
                .query_row(params![caller, job, since], |row| row.get(0))?;
        }
        return Ok((state, 0));
    };
    state.attempts = attempts(tx, caller, job, &case_id, Some(cycle))?
        .into_iter()
        .map(|(_, record)| record)
        .collect();
    state.review = tx
        .prepare_cached(
            "SELECT id, lane, escalation, retry_allowed, retry_used FROM reviews
             WHERE caller = ?1 AND job = ?2 AND case_id = ?3 AND resolved_at IS NULL
             ORDER BY id DESC LIMIT 1",
        )?
        .query_row(params![caller, job, case_id], |row| {
            Ok(OpenReview {
                id: row.get(0)?,
                lane: row.get(1)?,
                escalation: row.get(2)?,
                retry_allowed: row.get(3)?,
                retry_used: row.get(4)?,
            })
        })
        .optional()?;
    state.case_id = Some(case_id);
    state.cycle = cycle;
    Ok((state, cycle))
}

/// The attempt records of a case, oldest first, with their cycles; `cycle` limits them to one.
pub fn attempts(
    connection: &Connection,
    caller: &str,
    job: &str,
    case_id: &str,
    cycle: Option<u32>,
) -> Result<Vec<(u32, AttemptRecord)>, StoreError> {
    // Two statements rather than `(?4 IS NULL OR cycle = ?4)`: a plan that depends on a bound
    // value is prepared again at every call.
    let mut statement = match cycle {
        Some(_) => connection.prepare_cached(
            "SELECT cycle, number, at, execution_id, status, outcome, next, progress, closed,
                    cited, lane_retry
             FROM attempts
             WHERE caller = ?1 AND job = ?2 AND case_id = ?3 AND cycle = ?4
             ORDER BY id",
        )?,
        None => connection.prepare_cached(
            "SELECT cycle, number, at, execution_id, status, outcome, next, progress, closed,
                    cited, lane_retry
             FROM attempts
             WHERE caller = ?1 AND job = ?2 AND case_id = ?3 AND ?4 IS NULL
             ORDER BY id",
        )?,
    };
    let rows = statement.query_map(params![caller, job, case_id, cycle], |row| {
        Ok((
            row.get::<_, u32>(0)?,
            row.get::<_, u32>(1)?,
            row.get::<_, i64>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, String>(4)?,
            row.get::<_, Option<String>>(5)?,
            row.get::<_, Option<String>>(6)?,
            row.get::<_, bool>(7)?,
            row.get::<_, String>(8)?,
            row.get::<_, String>(9)?,
            row.get::<_, bool>(10)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (cycle, number, at, execution_id, status, outcome, next, progress, closed, cited, lane) =
            row?;
        let record = AttemptRecord {
            number,
            at: timestamp(at)?,
            execution_id,
            status: from_word(&status)?,
            outcome,
            next: next.as_deref().map(from_word::<Next>).transpose()?,
            progress,
            closed: from_json(&closed)?,
            cited: from_json(&cited)?,
            lane_retry: lane,
        };
        out.push((cycle, record));
    }
    Ok(out)
}

/// Stores what the core decided; the id of the review item it opened, if any.
fn apply(
    tx: &Transaction<'_>,
    job: &str,
    caller: &str,
    change: &Change,
    cycle: u32,
    now: Timestamp,
) -> Result<Option<i64>, StoreError> {
    let at = millis(now);
    let case_id = &change.case_id;
    if let Some(new) = &change.open_case {
        tx.prepare_cached(
            "INSERT INTO cases (caller, job, case_id, issued, opening_hash, opened_at, last_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        )?
        .execute(params![
            caller,
            job,
            case_id,
            new.issued,
            new.opening_hash,
            at
        ])?;
    }
    let record = &change.attempt;
    // The result is kept on the attempt's own row, for a resend with the same execution id.
    tx.prepare_cached(
        "INSERT INTO attempts (caller, job, case_id, cycle, number, at, execution_id, status,
                               outcome, next, progress, closed, cited, lane_retry, fingerprint,
                               result)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    )?
    .execute(params![
        caller,
        job,
        case_id,
        cycle,
        record.number,
        at,
        record.execution_id,
        record.status.as_str(),
        record.outcome,
        record.next.map(Next::as_str),
        record.progress,
        to_json(&record.closed)?,
        to_json(&record.cited)?,
        record.lane_retry,
        change.execution.fingerprint,
        change.execution.result,
    ])?;
    // Relative, so nothing read before this transaction's lock can undo a resolution.
    tx.prepare_cached(
        "UPDATE cases SET last_at = ?4, cycle = cycle + ?5
         WHERE caller = ?1 AND job = ?2 AND case_id = ?3",
    )?
    .execute(params![
        caller,
        job,
        case_id,
        at,
        i64::from(change.end_cycle)
    ])?;
    if let Some(suppress) = &change.suppress {
        suppress_case_contacts(tx, caller, job, case_id, suppress, at)?;
    }
    let mut opened = None;
    if let Some(review) = &change.open_review {
        tx.prepare_cached(
            "INSERT INTO reviews (caller, job, case_id, lane, escalation, reason, opened_at,
                                  retry_allowed)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            caller,
            job,
            case_id,
            review.lane,
            review.escalation,
            review.reason,
            at,
            review.retry_allowed
        ])?;
        opened = Some(tx.last_insert_rowid());
    }
    if let Some(id) = change.use_review_retry {
        tx.prepare_cached("UPDATE reviews SET retry_used = 1 WHERE id = ?1")?
            .execute(params![id])?;
    }
    if let Some(id) = change.close_review {
        tx.prepare_cached(
            "UPDATE reviews SET resolved_at = ?2, resolved_by = 'backstop', decision = ?3,
                                note = 'decided by the retry the lane allowed'
             WHERE id = ?1 AND resolved_at IS NULL",
        )?
        .execute(params![id, at, record.outcome])?;
    }
    debug_assert!(record.status != ResultStatus::Decided || change.end_cycle);
    Ok(opened)
}

/// Every contact the case was dispatched to put on the suppression list (a do-not-call
/// result), whichever route the result came by.
fn suppress_case_contacts(
    tx: &Transaction<'_>,
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
    tx.prepare_cached(
        "INSERT INTO suppressions (caller, job, contact, case_id, at, reason)
         SELECT DISTINCT caller, job, contact, ?4, ?5, ?6 FROM dispatches
         WHERE caller = ?1 AND job = ?2 AND case_id = ?3
         ON CONFLICT DO NOTHING",
    )?
    .execute(params![
        caller,
        job,
        case_id,
        scope_case,
        at,
        suppress.reason
    ])?;
    Ok(())
}
