//! Dispatches, deliveries and suppressions in `PostgreSQL`: the gate runs in one transaction
//! that first takes the advisory lock of every case it touches (in sorted order, the same
//! lock attempts take), so concurrent requests for the same content on any connection of any
//! process are answered one after the other.

use std::collections::BTreeSet;

use backstop_core::effects::{DispatchRequest, DispatchState};
use backstop_core::pack::Pack;
use jiff::Timestamp;
use postgres::{Client, GenericClient, Row, Transaction};

use super::ledger::lock_case;
use super::{int, uint};
use crate::StoreError;
use crate::codec::timestamp;
use crate::effects::{
    DeliveryRecord, DeliveryWrites, DispatchContext, DispatchFilter, DispatchRecord, DispatchReply,
    DispatchUpdate, EffectsTx, Lifted, SuppressionFilter, SuppressionRecord, json_of, mode_of,
    run_dispatch, state_of,
};

const DISPATCH_COLUMNS: &str = "key, batch_key, caller, job, case_id, case_ref, recipient, contact,
    mode, state, sends, created_at, updated_at, last_sent_at, reconcile_at, rounds, failure_code,
    result_status, simulate";

const DELIVERY_COLUMNS: &str =
    "id, source, event_id, received_at, dispatch_key, state, detail, payload";

struct Tx<'a, 'b>(&'a mut Transaction<'b>);

fn prior_in(
    client: &mut impl GenericClient,
    key: &str,
) -> Result<Option<DispatchRecord>, StoreError> {
    let sql = format!("SELECT {DISPATCH_COLUMNS} FROM dispatches WHERE key = $1");
    client
        .query_opt(&sql, &[&key])?
        .map(|r| dispatch_row(&r))
        .transpose()
}

fn put_in(client: &mut impl GenericClient, r: &DispatchRecord) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO dispatches ({DISPATCH_COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
         ON CONFLICT (key) DO UPDATE SET batch_key = EXCLUDED.batch_key, state = EXCLUDED.state,
             mode = EXCLUDED.mode, sends = EXCLUDED.sends, updated_at = EXCLUDED.updated_at,
             last_sent_at = EXCLUDED.last_sent_at, reconcile_at = EXCLUDED.reconcile_at,
             rounds = EXCLUDED.rounds, failure_code = EXCLUDED.failure_code,
             result_status = EXCLUDED.result_status, simulate = EXCLUDED.simulate"
    );
    client.execute(
        &sql,
        &[
            &r.key,
            &r.batch_key,
            &r.caller,
            &r.job,
            &r.case_id,
            &r.case.to_string(),
            &r.recipient,
            &r.contact,
            &r.mode.as_str(),
            &r.state.as_str(),
            &int(r.sends),
            &r.created_at.as_millisecond(),
            &r.updated_at.as_millisecond(),
            &r.last_sent_at.as_millisecond(),
            &r.reconcile_at.map(Timestamp::as_millisecond),
            &int(r.rounds),
            &r.failure_code,
            &r.result_status,
            &r.simulate.as_ref().map(ToString::to_string),
        ],
    )?;
    Ok(())
}

impl EffectsTx for Tx<'_, '_> {
    fn prior(&mut self, key: &str) -> Result<Option<DispatchRecord>, StoreError> {
        prior_in(self.0, key)
    }

    fn standing(
        &mut self,
        caller: &str,
        job: &str,
        case_id: &str,
    ) -> Result<(u32, Option<String>), StoreError> {
        let cycle = self
            .0
            .query_opt(
                "SELECT cycle FROM cases WHERE caller = $1 AND job = $2 AND case_id = $3",
                &[&caller, &job, &case_id],
            )?
            .map(|row| uint(row.get(0)))
            .transpose()?;
        let lane = self
            .0
            .query_opt(
                "SELECT lane FROM reviews WHERE caller = $1 AND job = $2 AND case_id = $3
                   AND resolved_at IS NULL AND kind = 'case' ORDER BY id DESC LIMIT 1",
                &[&caller, &job, &case_id],
            )?
            .map(|row| row.get(0));
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
        let row = self.0.query_one(
            "SELECT COALESCE(SUM(sends), 0)::BIGINT,
                    MAX(CASE WHEN batch_key <> $4 OR key = $5 THEN last_sent_at END)
             FROM dispatches WHERE caller = $1 AND job = $2 AND case_id = $3",
            &[&caller, &job, &case_id, &batch_key, &key],
        )?;
        let last: Option<i64> = row.get(1);
        Ok((uint(row.get(0))?, last.map(timestamp).transpose()?))
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
            .query_opt(
                "SELECT 1 FROM suppressions WHERE caller = $1 AND job = $2 AND contact = $3
                   AND (case_id = '' OR case_id = $4) LIMIT 1",
                &[&caller, &job, &contact, &case_id],
            )?
            .is_some())
    }

    fn put(&mut self, record: &DispatchRecord) -> Result<(), StoreError> {
        put_in(self.0, record)
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
    client: &mut Client,
    pack: &Pack,
    caller: &str,
    request: &DispatchRequest,
    context: DispatchContext,
    now: Timestamp,
) -> Result<DispatchReply, StoreError> {
    let mut tx = client.transaction()?;
    let cases: BTreeSet<&str> = request
        .recipients
        .iter()
        .map(|r| r.case_id.as_str())
        .collect();
    for case_id in cases {
        lock_case(&mut tx, caller, &pack.job, case_id)?;
    }
    let reply = run_dispatch(&mut Tx(&mut tx), pack, caller, request, context, now)?;
    tx.commit()?;
    Ok(reply)
}

pub fn outcome(
    client: &mut Client,
    caller: &str,
    key: &str,
    outcome: DispatchState,
    failure_code: Option<&str>,
    now: Timestamp,
) -> Result<DispatchRecord, StoreError> {
    let mut tx = client.transaction()?;
    let Some(mut record) = tx
        .query_opt(
            &format!("SELECT {DISPATCH_COLUMNS} FROM dispatches WHERE key = $1 FOR UPDATE"),
            &[&key],
        )?
        .map(|r| dispatch_row(&r))
        .transpose()?
        .filter(|r| r.caller == caller)
    else {
        return Err(StoreError::NotFound(format!(
            "caller `{caller}` has no dispatch with key `{key}`"
        )));
    };
    crate::effects::apply_outcome(&mut record, outcome, failure_code, now)?;
    put_in(&mut tx, &record)?;
    tx.commit()?;
    Ok(record)
}

pub fn by_key(client: &mut Client, key: &str) -> Result<Option<DispatchRecord>, StoreError> {
    prior_in(client, key)
}

pub fn by_recipient(
    client: &mut Client,
    batch_key: &str,
    recipient: &str,
) -> Result<Option<DispatchRecord>, StoreError> {
    let sql = format!(
        "SELECT {DISPATCH_COLUMNS} FROM dispatches WHERE batch_key = $1 AND recipient = $2"
    );
    client
        .query_opt(&sql, &[&batch_key, &recipient])?
        .map(|r| dispatch_row(&r))
        .transpose()
}

pub fn list(
    client: &mut Client,
    filter: &DispatchFilter,
) -> Result<Vec<DispatchRecord>, StoreError> {
    let awaiting: Vec<String> = DispatchState::ALL
        .into_iter()
        .filter(|s| s.awaits_result())
        .map(|s| s.as_str().to_owned())
        .collect();
    let sql = format!(
        "SELECT {DISPATCH_COLUMNS} FROM dispatches
         WHERE ($1::TEXT IS NULL OR caller = $1) AND ($2::TEXT IS NULL OR job = $2)
           AND ($3::TEXT IS NULL OR batch_key = $3)
           AND ($4::BIGINT IS NULL OR (reconcile_at <= $4 AND state = ANY($5)))
         ORDER BY created_at, key LIMIT $6"
    );
    let rows = client.query(
        &sql,
        &[
            &filter.caller,
            &filter.job,
            &filter.batch_key,
            &filter.due_by.map(Timestamp::as_millisecond),
            &awaiting,
            &i64::from(filter.limit.unwrap_or(500)),
        ],
    )?;
    rows.iter().map(dispatch_row).collect()
}

pub fn update(
    client: &mut impl GenericClient,
    key: &str,
    update: &DispatchUpdate,
    now: Timestamp,
) -> Result<(), StoreError> {
    let changed = client.execute(
        "UPDATE dispatches SET state = $2, reconcile_at = $3, rounds = rounds + $4,
             failure_code = COALESCE($5, failure_code),
             result_status = COALESCE($6, result_status), updated_at = $7
         WHERE key = $1 AND state NOT IN ('answered', 'escalated')",
        &[
            &key,
            &update.state.as_str(),
            &update.reconcile_at.map(Timestamp::as_millisecond),
            &i64::from(update.add_round),
            &update.failure_code,
            &update.result_status,
            &now.as_millisecond(),
        ],
    )?;
    if changed == 0 {
        // A settled dispatch never moves back (a late delivery is recorded, and changes it not).
        let exists: bool = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM dispatches WHERE key = $1)",
                &[&key],
            )?
            .get(0);
        if !exists {
            return Err(StoreError::NotFound(format!(
                "no dispatch with key `{key}`"
            )));
        }
    }
    Ok(())
}

pub fn record_delivery(
    client: &mut Client,
    source: &str,
    event_id: &str,
    dispatch_key: Option<&str>,
    payload: &str,
    now: Timestamp,
) -> Result<Option<i64>, StoreError> {
    let row = client.query_opt(
        "INSERT INTO deliveries (source, event_id, received_at, dispatch_key, payload)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (source, event_id) DO NOTHING RETURNING id",
        &[
            &source,
            &event_id,
            &now.as_millisecond(),
            &dispatch_key,
            &payload,
        ],
    )?;
    Ok(row.map(|r| r.get(0)))
}

pub fn deliveries(
    client: &mut Client,
    pending: bool,
    dispatch_key: Option<&str>,
    limit: u32,
) -> Result<Vec<DeliveryRecord>, StoreError> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries
         WHERE (NOT $1 OR state = 'pending') AND ($2::TEXT IS NULL OR dispatch_key = $2)
         ORDER BY id LIMIT $3"
    );
    let rows = client.query(&sql, &[&pending, &dispatch_key, &i64::from(limit)])?;
    rows.iter()
        .map(|row| {
            Ok(DeliveryRecord {
                id: row.get(0),
                source: row.get(1),
                event_id: row.get(2),
                received_at: timestamp(row.get(3))?,
                dispatch_key: row.get(4),
                state: row.get(5),
                detail: row.get(6),
                payload: row.get(7),
            })
        })
        .collect()
}

pub fn finish_delivery(
    client: &mut impl GenericClient,
    id: i64,
    state: &str,
    detail: &str,
    now: Timestamp,
) -> Result<(), StoreError> {
    client.execute(
        "UPDATE deliveries SET state = $2, detail = $3, finished_at = $4
         WHERE id = $1 AND state = 'pending'",
        &[&id, &state, &detail, &now.as_millisecond()],
    )?;
    Ok(())
}

pub fn suppress(
    client: &mut impl GenericClient,
    caller: &str,
    job: &str,
    contact: &str,
    case_id: Option<&str>,
    reason: &str,
    now: Timestamp,
) -> Result<(), StoreError> {
    client.execute(
        "INSERT INTO suppressions (caller, job, contact, case_id, at, reason)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
        &[
            &caller,
            &job,
            &contact,
            &case_id.unwrap_or(""),
            &now.as_millisecond(),
            &reason,
        ],
    )?;
    Ok(())
}

/// Suppressions in force, or lifted ones, newest first (at most 1,000).
pub fn suppressions(
    client: &mut Client,
    filter: &SuppressionFilter,
) -> Result<Vec<SuppressionRecord>, StoreError> {
    let sql = if filter.lifted {
        "SELECT caller, job, contact, case_id, suppressed_at, reason, lifted_at, lifted_by, why
         FROM suppression_lifts
         WHERE ($1::TEXT IS NULL OR caller = $1) AND ($2::TEXT IS NULL OR job = $2)
           AND ($3::TEXT IS NULL OR contact = $3)
         ORDER BY lifted_at DESC LIMIT 1000"
    } else {
        "SELECT caller, job, contact, case_id, at, reason, NULL::BIGINT, NULL::TEXT, NULL::TEXT
         FROM suppressions
         WHERE ($1::TEXT IS NULL OR caller = $1) AND ($2::TEXT IS NULL OR job = $2)
           AND ($3::TEXT IS NULL OR contact = $3)
         ORDER BY at DESC LIMIT 1000"
    };
    let rows = client.query(sql, &[&filter.caller, &filter.job, &filter.contact])?;
    rows.iter()
        .map(|row| {
            let case: String = row.get(3);
            let lifted_at: Option<i64> = row.get(6);
            Ok(SuppressionRecord {
                caller: row.get(0),
                job: row.get(1),
                contact: row.get(2),
                case_id: Some(case).filter(|c| !c.is_empty()),
                at: timestamp(row.get(4))?,
                reason: row.get(5),
                lifted: match lifted_at {
                    Some(at) => Some(Lifted {
                        at: timestamp(at)?,
                        by: row.get(7),
                        why: row.get(8),
                    }),
                    None => None,
                },
            })
        })
        .collect()
}

/// Lifts a suppression in force, keeping who lifted it, when and why, in one transaction.
pub fn lift(
    client: &mut Client,
    key: (&str, &str, &str, Option<&str>),
    lifted: &Lifted,
) -> Result<SuppressionRecord, StoreError> {
    let (caller, job, contact, case_id) = key;
    let case = case_id.unwrap_or("");
    let mut tx = client.transaction()?;
    let removed = tx.query_opt(
        "DELETE FROM suppressions WHERE caller = $1 AND job = $2 AND contact = $3 AND case_id = $4
         RETURNING at, reason",
        &[&caller, &job, &contact, &case],
    )?;
    let Some(row) = removed else {
        return Err(crate::effects::not_in_force(caller, job, contact, case_id));
    };
    let (at, reason): (i64, String) = (row.get(0), row.get(1));
    tx.execute(
        "INSERT INTO suppression_lifts (caller, job, contact, case_id, suppressed_at, reason,
                                        lifted_at, lifted_by, why)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &caller,
            &job,
            &contact,
            &case,
            &at,
            &reason,
            &lifted.at.as_millisecond(),
            &lifted.by,
            &lifted.why,
        ],
    )?;
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
    tx: &mut Transaction<'_>,
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

fn dispatch_row(row: &Row) -> Result<DispatchRecord, StoreError> {
    let case: String = row.get(5);
    let mode: String = row.get(8);
    let state: String = row.get(9);
    let simulate: Option<String> = row.get(18);
    let reconcile_at: Option<i64> = row.get(14);
    Ok(DispatchRecord {
        key: row.get(0),
        batch_key: row.get(1),
        caller: row.get(2),
        job: row.get(3),
        case_id: row.get(4),
        case: json_of(&case)?,
        recipient: row.get(6),
        contact: row.get(7),
        mode: mode_of(&mode)?,
        state: state_of(&state)?,
        sends: uint(row.get(10))?,
        created_at: timestamp(row.get(11))?,
        updated_at: timestamp(row.get(12))?,
        last_sent_at: timestamp(row.get(13))?,
        reconcile_at: reconcile_at.map(timestamp).transpose()?,
        rounds: uint(row.get(15))?,
        failure_code: row.get(16),
        result_status: row.get(17),
        simulate: simulate.as_deref().map(json_of).transpose()?,
    })
}
