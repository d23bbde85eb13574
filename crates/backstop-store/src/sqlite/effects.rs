//! Dispatches, deliveries and suppressions in `SQLite`: the gate runs in one `BEGIN IMMEDIATE`
//! transaction, so two requests for the same content (from two threads or two processes on
//! one file) are answered one after the other: one permit, then a duplicate or a reconcile.

use backstop_core::effects::{DispatchRequest, DispatchState};
use backstop_core::pack::Pack;
use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};

use crate::StoreError;
use crate::codec::{millis, timestamp};
use crate::effects::{
    DeliveryRecord, DeliveryWrites, DispatchContext, DispatchFilter, DispatchRecord, DispatchReply,
    DispatchUpdate, EffectsTx, Lifted, SuppressionFilter, SuppressionRecord, run_dispatch,
};

const DISPATCH_COLUMNS: &str = "key, batch_key, caller, job, case_id, case_ref, recipient, contact,
    mode, state, sends, created_at, updated_at, last_sent_at, reconcile_at, rounds, failure_code,
    result_status, simulate";

const DELIVERY_COLUMNS: &str =
    "id, source, event_id, received_at, dispatch_key, state, detail, payload";

struct Tx<'a, 'b>(&'a Transaction<'b>);

impl EffectsTx for Tx<'_, '_> {
    fn prior(&mut self, key: &str) -> Result<Option<DispatchRecord>, StoreError> {
        let sql = format!("SELECT {DISPATCH_COLUMNS} FROM dispatches WHERE key = ?1");
        self.0
            .prepare_cached(&sql)?
            .query_row(params![key], dispatch_row)
            .optional()?
            .transpose()
    }

    fn standing(
        &mut self,
        caller: &str,
        job: &str,
        case_id: &str,
    ) -> Result<(u32, Option<String>), StoreError> {
        let cycle: Option<u32> = self
            .0
            .prepare_cached(
                "SELECT cycle FROM cases WHERE caller = ?1 AND job = ?2 AND case_id = ?3",
            )?
            .query_row(params![caller, job, case_id], |row| row.get(0))
            .optional()?;
        let lane: Option<String> = self
            .0
            .prepare_cached(
                "SELECT lane FROM reviews WHERE caller = ?1 AND job = ?2 AND case_id = ?3
                   AND resolved_at IS NULL AND kind = 'case' ORDER BY id DESC LIMIT 1",
            )?
            .query_row(params![caller, job, case_id], |row| row.get(0))
            .optional()?;
        Ok((cycle.unwrap_or(0), lane))
    }

    fn case_sends(
        &mut self,
        caller: &str,
        job: &str,
        case_id: &str,
        batch_key: &str,
        key: &str,
    ) -> Result<(u32, Option<Timestamp>), StoreError> {
        let (sends, last): (u32, Option<i64>) = self
            .0
            .prepare_cached(
                "SELECT COALESCE(SUM(sends), 0),
                        MAX(CASE WHEN batch_key <> ?4 OR key = ?5 THEN last_sent_at END)
                 FROM dispatches WHERE caller = ?1 AND job = ?2 AND case_id = ?3",
            )?
            .query_row(params![caller, job, case_id, batch_key, key], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })?;
        Ok((sends, last.map(timestamp).transpose()?))
    }

    fn suppressed(
        &mut self,
        caller: &str,
        job: &str,
        contact: &str,
        case_id: &str,
    ) -> Result<bool, StoreError> {
        Ok(self
            .0
            .prepare_cached(
                "SELECT 1 FROM suppressions WHERE caller = ?1 AND job = ?2 AND contact = ?3
                   AND (case_id = '' OR case_id = ?4) LIMIT 1",
            )?
            .query_row(params![caller, job, contact, case_id], |_| Ok(()))
            .optional()?
            .is_some())
    }

    fn put(&mut self, r: &DispatchRecord) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT OR REPLACE INTO dispatches ({DISPATCH_COLUMNS})
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                     ?18, ?19)"
        );
        self.0.prepare_cached(&sql)?.execute(params![
            r.key,
            r.batch_key,
            r.caller,
            r.job,
            r.case_id,
            r.case.to_string(),
            r.recipient,
            r.contact,
            r.mode.as_str(),
            r.state.as_str(),
            r.sends,
            millis(r.created_at),
            millis(r.updated_at),
            millis(r.last_sent_at),
            r.reconcile_at.map(millis),
            r.rounds,
            r.failure_code,
            r.result_status,
            r.simulate.as_ref().map(ToString::to_string),
        ])?;
        Ok(())
    }

    fn notify(
        &mut self,
        notice: &backstop_core::notify::Notice,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        super::notify::enqueue(self.0, std::slice::from_ref(notice), now)
    }
}

pub fn dispatch(
    connection: &mut Connection,
    pack: &Pack,
    caller: &str,
    request: &DispatchRequest,
    context: DispatchContext,
    now: Timestamp,
) -> Result<DispatchReply, StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let reply = run_dispatch(&mut Tx(&tx), pack, caller, request, context, now)?;
    tx.commit()?;
    Ok(reply)
}

pub fn outcome(
    connection: &mut Connection,
    caller: &str,
    key: &str,
    outcome: DispatchState,
    failure_code: Option<&str>,
    now: Timestamp,
) -> Result<DispatchRecord, StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let Some(mut record) = Tx(&tx).prior(key)?.filter(|r| r.caller == caller) else {
        return Err(StoreError::NotFound(format!(
            "caller `{caller}` has no dispatch with key `{key}`"
        )));
    };
    crate::effects::apply_outcome(&mut record, outcome, failure_code, now)?;
    Tx(&tx).put(&record)?;
    tx.commit()?;
    Ok(record)
}

pub fn by_key(connection: &Connection, key: &str) -> Result<Option<DispatchRecord>, StoreError> {
    let sql = format!("SELECT {DISPATCH_COLUMNS} FROM dispatches WHERE key = ?1");
    connection
        .prepare_cached(&sql)?
        .query_row(params![key], dispatch_row)
        .optional()?
        .transpose()
}

pub fn by_recipient(
    connection: &Connection,
    batch_key: &str,
    recipient: &str,
) -> Result<Option<DispatchRecord>, StoreError> {
    let sql = format!(
        "SELECT {DISPATCH_COLUMNS} FROM dispatches WHERE batch_key = ?1 AND recipient = ?2"
    );
    connection
        .prepare_cached(&sql)?
        .query_row(params![batch_key, recipient], dispatch_row)
        .optional()?
        .transpose()
}

pub fn list(
    connection: &Connection,
    filter: &DispatchFilter,
) -> Result<Vec<DispatchRecord>, StoreError> {
    let awaiting: Vec<String> = DispatchState::ALL
        .into_iter()
        .filter(|s| s.awaits_result())
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    let sql = format!(
        "SELECT {DISPATCH_COLUMNS} FROM dispatches
         WHERE (?1 IS NULL OR caller = ?1) AND (?2 IS NULL OR job = ?2)
           AND (?3 IS NULL OR batch_key = ?3)
           AND (?4 IS NULL OR (reconcile_at <= ?4 AND state IN ({})))
         ORDER BY created_at, key LIMIT ?5",
        awaiting.join(", ")
    );
    let mut statement = connection.prepare_cached(&sql)?;
    let rows = statement.query_map(
        params![
            filter.caller,
            filter.job,
            filter.batch_key,
            filter.due_by.map(millis),
            filter.limit.unwrap_or(500)
        ],
        dispatch_row,
    )?;
    rows.map(|row| row?).collect()
}

pub fn update(
    connection: &Connection,
    key: &str,
    update: &DispatchUpdate,
    now: Timestamp,
) -> Result<(), StoreError> {
    let changed = connection
        .prepare_cached(
            "UPDATE dispatches SET state = ?2, reconcile_at = ?3, rounds = rounds + ?4,
                 failure_code = COALESCE(?5, failure_code),
                 result_status = COALESCE(?6, result_status), updated_at = ?7
             WHERE key = ?1 AND state NOT IN ('answered', 'escalated')",
        )?
        .execute(params![
            key,
            update.state.as_str(),
            update.reconcile_at.map(millis),
            u32::from(update.add_round),
            update.failure_code,
            update.result_status,
            millis(now)
        ])?;
    if changed == 0 {
        // A settled dispatch never moves back (a late delivery is recorded, and changes it not).
        let exists = connection
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM dispatches WHERE key = ?1)")?
            .query_row(params![key], |row| row.get::<_, bool>(0))?;
        if !exists {
            return Err(StoreError::NotFound(format!(
                "no dispatch with key `{key}`"
            )));
        }
    }
    Ok(())
}

pub fn record_delivery(
    connection: &mut Connection,
    source: &str,
    event_id: &str,
    dispatch_key: Option<&str>,
    payload: &str,
    now: Timestamp,
) -> Result<Option<i64>, StoreError> {
    let inserted = connection
        .prepare_cached(
            "INSERT INTO deliveries (source, event_id, received_at, dispatch_key, payload)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (source, event_id) DO NOTHING",
        )?
        .execute(params![
            source,
            event_id,
            millis(now),
            dispatch_key,
            payload
        ])?;
    Ok((inserted == 1).then(|| connection.last_insert_rowid()))
}

pub fn deliveries(
    connection: &Connection,
    pending: bool,
    dispatch_key: Option<&str>,
    limit: u32,
) -> Result<Vec<DeliveryRecord>, StoreError> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries
         WHERE (?1 = 0 OR state = 'pending') AND (?2 IS NULL OR dispatch_key = ?2)
         ORDER BY id LIMIT ?3"
    );
    let mut statement = connection.prepare_cached(&sql)?;
    let rows = statement.query_map(params![pending, dispatch_key, limit], delivery_row)?;
    rows.map(|row| row?).collect()
}

pub fn finish_delivery(
    connection: &Connection,
    id: i64,
    state: &str,
    detail: &str,
    now: Timestamp,
) -> Result<(), StoreError> {
    connection
        .prepare_cached(
            "UPDATE deliveries SET state = ?2, detail = ?3, finished_at = ?4
             WHERE id = ?1 AND state = 'pending'",
        )?
        .execute(params![id, state, detail, millis(now)])?;
    Ok(())
}

pub fn suppress(
    connection: &Connection,
    caller: &str,
    job: &str,
    contact: &str,
    case_id: Option<&str>,
    reason: &str,
    now: Timestamp,
) -> Result<(), StoreError> {
    connection
        .prepare_cached(
            "INSERT INTO suppressions (caller, job, contact, case_id, at, reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
        )?
        .execute(params![
            caller,
            job,
            contact,
            case_id.unwrap_or(""),
            millis(now),
            reason
        ])?;
    Ok(())
}

/// Suppressions in force, or lifted ones, newest first (at most 1,000).
pub fn suppressions(
    connection: &Connection,
    filter: &SuppressionFilter,
) -> Result<Vec<SuppressionRecord>, StoreError> {
    let sql = if filter.lifted {
        "SELECT caller, job, contact, case_id, suppressed_at, reason, lifted_at, lifted_by, why
         FROM suppression_lifts
         WHERE (?1 IS NULL OR caller = ?1) AND (?2 IS NULL OR job = ?2)
           AND (?3 IS NULL OR contact = ?3)
         ORDER BY lifted_at DESC LIMIT 1000"
    } else {
        "SELECT caller, job, contact, case_id, at, reason, NULL, NULL, NULL FROM suppressions
         WHERE (?1 IS NULL OR caller = ?1) AND (?2 IS NULL OR job = ?2)
           AND (?3 IS NULL OR contact = ?3)
         ORDER BY at DESC LIMIT 1000"
    };
    let mut statement = connection.prepare_cached(sql)?;
    let rows = statement.query_map(
        params![filter.caller, filter.job, filter.contact],
        suppression_row,
    )?;
    rows.map(|row| row?).collect()
}

/// A suppression row (the lifting's columns null for one in force); the outer result is the
/// driver's, the inner one a stored time read back.
fn suppression_row(row: &Row<'_>) -> rusqlite::Result<Result<SuppressionRecord, StoreError>> {
    let (at, lifted_at): (i64, Option<i64>) = (row.get(4)?, row.get(6)?);
    let lifted = match lifted_at {
        Some(when) => Some((when, row.get::<_, String>(7)?, row.get::<_, String>(8)?)),
        None => None,
    };
    let (caller, job, contact, case, reason): (String, String, String, String, String) = (
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(5)?,
    );
    Ok((|| {
        Ok(SuppressionRecord {
            caller,
            job,
            contact,
            case_id: Some(case).filter(|c| !c.is_empty()),
            at: timestamp(at)?,
            reason,
            lifted: match lifted {
                Some((when, by, why)) => Some(Lifted {
                    at: timestamp(when)?,
                    by,
                    why,
                }),
                None => None,
            },
        })
    })())
}

/// Lifts a suppression in force, keeping who lifted it, when and why, in one transaction.
pub fn lift(
    connection: &mut Connection,
    key: (&str, &str, &str, Option<&str>),
    lifted: &Lifted,
) -> Result<SuppressionRecord, StoreError> {
    let (caller, job, contact, case_id) = key;
    let case = case_id.unwrap_or("");
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found: Option<(i64, String)> = tx
        .prepare_cached(
            "SELECT at, reason FROM suppressions
             WHERE caller = ?1 AND job = ?2 AND contact = ?3 AND case_id = ?4",
        )?
        .query_row(params![caller, job, contact, case], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()?;
    let Some((at, reason)) = found else {
        return Err(crate::effects::not_in_force(caller, job, contact, case_id));
    };
    tx.prepare_cached(
        "INSERT INTO suppression_lifts (caller, job, contact, case_id, suppressed_at, reason,
                                        lifted_at, lifted_by, why)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        caller,
        job,
        contact,
        case,
        at,
        reason,
        millis(lifted.at),
        lifted.by,
        lifted.why
    ])?;
    tx.prepare_cached(
        "DELETE FROM suppressions WHERE caller = ?1 AND job = ?2 AND contact = ?3 AND case_id = ?4",
    )?
    .execute(params![caller, job, contact, case])?;
    tx.commit()?;
    Ok(SuppressionRecord {
        caller: caller.to_owned(),
        job: job.to_owned(),
        contact: contact.to_owned(),
        case_id: case_id.map(str::to_owned),
        at: timestamp(at)?,
        reason,
        lifted: Some(lifted.clone()),
    })
}

/// What deciding a delivery writes after its attempt, in the attempt's transaction.
pub fn write_decided(
    tx: &Transaction<'_>,
    delivery: i64,
    writes: &DeliveryWrites,
    now: Timestamp,
) -> Result<(), StoreError> {
    if let Some(s) = &writes.suppression {
        suppress(
            tx,
            &s.caller,
            &s.job,
            &s.contact,
            s.case_id.as_deref(),
            &s.reason,
            now,
        )?;
    }
    fault!("delivery.suppressed");
    if let Some((key, change)) = &writes.dispatch {
        match update(tx, key, change, now) {
            // A dispatch purged since is not waited for: the delivery is done all the same.
            Ok(()) | Err(StoreError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
    }
    fault!("delivery.dispatch_moved");
    finish_delivery(tx, delivery, writes.state, &writes.detail, now)
}

fn dispatch_row(row: &Row<'_>) -> rusqlite::Result<Result<DispatchRecord, StoreError>> {
    let text = |i: usize| row.get::<_, String>(i);
    let case: String = text(5)?;
    let mode: String = text(8)?;
    let state: String = text(9)?;
    let simulate: Option<String> = row.get(18)?;
    let (created, updated, sent): (i64, i64, i64) = (row.get(11)?, row.get(12)?, row.get(13)?);
    let reconcile_at: Option<i64> = row.get(14)?;
    let partial = (
        text(0)?,
        text(1)?,
        text(2)?,
        text(3)?,
        text(4)?,
        text(6)?,
        text(7)?,
        row.get::<_, u32>(10)?,
        row.get::<_, u32>(15)?,
        row.get::<_, Option<String>>(16)?,
        row.get::<_, Option<String>>(17)?,
    );
    Ok((|| {
        let (
            key,
            batch_key,
            caller,
            job,
            case_id,
            recipient,
            contact,
            sends,
            rounds,
            failure_code,
            result_status,
        ) = partial;
        Ok(DispatchRecord {
            key,
            batch_key,
            caller,
            job,
            case_id,
            case: crate::effects::json_of(&case)?,
            recipient,
            contact,
            mode: crate::effects::mode_of(&mode)?,
            state: crate::effects::state_of(&state)?,
            sends,
            created_at: timestamp(created)?,
            updated_at: timestamp(updated)?,
            last_sent_at: timestamp(sent)?,
            reconcile_at: reconcile_at.map(timestamp).transpose()?,
            rounds,
            failure_code,
            result_status,
            simulate: simulate
                .as_deref()
                .map(crate::effects::json_of)
                .transpose()?,
        })
    })())
}

fn delivery_row(row: &Row<'_>) -> rusqlite::Result<Result<DeliveryRecord, StoreError>> {
    let received: i64 = row.get(3)?;
    let record = (
        row.get::<_, i64>(0)?,
        row.get::<_, String>(1)?,
        row.get::<_, String>(2)?,
        row.get::<_, Option<String>>(4)?,
        row.get::<_, String>(5)?,
        row.get::<_, Option<String>>(6)?,
        row.get::<_, String>(7)?,
    );
    Ok(timestamp(received).map(|received_at| {
        let (id, source, event_id, dispatch_key, state, detail, payload) = record;
        DeliveryRecord {
            id,
            source,
            event_id,
            received_at,
            dispatch_key,
            state,
            detail,
            payload,
        }
    }))
}
