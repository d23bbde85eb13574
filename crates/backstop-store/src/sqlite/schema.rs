//! Connection settings and the schema's migrations.

use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::StoreError;

/// The migrations, in order; `PRAGMA user_version` records how many have run.
const MIGRATIONS: [&str; 9] = [
    r"
CREATE TABLE cases (
    caller       TEXT    NOT NULL,
    job          TEXT    NOT NULL,
    case_id      TEXT    NOT NULL,
    issued       INTEGER NOT NULL,
    opening_hash TEXT,
    opened_at    INTEGER NOT NULL,
    last_at      INTEGER NOT NULL,
    cycle        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (caller, job, case_id)
) WITHOUT ROWID;
CREATE INDEX cases_opening ON cases (caller, job, opening_hash, opened_at)
    WHERE opening_hash IS NOT NULL;
CREATE INDEX cases_issued ON cases (caller, job, opened_at) WHERE issued = 1;

CREATE TABLE attempts (
    id           INTEGER PRIMARY KEY,
    caller       TEXT    NOT NULL,
    job          TEXT    NOT NULL,
    case_id      TEXT    NOT NULL,
    cycle        INTEGER NOT NULL,
    number       INTEGER NOT NULL,
    at           INTEGER NOT NULL,
    execution_id TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    outcome      TEXT,
    next         TEXT,
    progress     INTEGER NOT NULL,
    closed       TEXT    NOT NULL,
    cited        TEXT    NOT NULL,
    lane_retry   INTEGER NOT NULL,
    fingerprint  TEXT    NOT NULL,
    result       TEXT    NOT NULL
);
CREATE INDEX attempts_case ON attempts (caller, job, case_id, cycle);
CREATE UNIQUE INDEX attempts_execution ON attempts (caller, job, execution_id);
CREATE INDEX attempts_at ON attempts (at);

CREATE TABLE reviews (
    id            INTEGER PRIMARY KEY,
    caller        TEXT    NOT NULL,
    job           TEXT    NOT NULL,
    case_id       TEXT    NOT NULL,
    lane          TEXT    NOT NULL,
    escalation    TEXT    NOT NULL,
    reason        TEXT    NOT NULL,
    opened_at     INTEGER NOT NULL,
    retry_allowed INTEGER NOT NULL,
    retry_used    INTEGER NOT NULL DEFAULT 0,
    resolved_at   INTEGER,
    resolved_by   TEXT,
    decision      TEXT,
    note          TEXT
);
CREATE INDEX reviews_case ON reviews (caller, job, case_id) WHERE resolved_at IS NULL;
CREATE INDEX reviews_resolved ON reviews (resolved_at);
",
    r"
CREATE TABLE events (
    id      INTEGER PRIMARY KEY,
    at      INTEGER NOT NULL,
    kind    TEXT    NOT NULL,
    subject TEXT    NOT NULL,
    body    TEXT    NOT NULL
);
CREATE INDEX events_at ON events (at);
",
    // Journal positions never go back, even when a purge empties the table: processes on one
    // ledger follow the journal by position.
    r"
CREATE TABLE events_journal (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      INTEGER NOT NULL,
    kind    TEXT    NOT NULL,
    subject TEXT    NOT NULL,
    body    TEXT    NOT NULL
);
INSERT INTO events_journal (id, at, kind, subject, body) SELECT id, at, kind, subject, body FROM events;
DROP TABLE events;
ALTER TABLE events_journal RENAME TO events;
CREATE INDEX events_at ON events (at);
",
    // Review items for tasks' escalations beside held cases.
    r"
ALTER TABLE reviews ADD COLUMN kind TEXT NOT NULL DEFAULT 'case';
ALTER TABLE reviews ADD COLUMN detail TEXT;
CREATE INDEX reviews_task ON reviews (caller, case_id) WHERE kind = 'task' AND resolved_at IS NULL;
",
    // Side effects: a dispatch per content-derived key (the primary key is what makes a
    // second permit impossible), deliveries deduplicated by their sender's event id, and the
    // contacts who asked not to be contacted (`case_id` '' covers every case).
    r"
CREATE TABLE dispatches (
    key           TEXT    PRIMARY KEY,
    batch_key     TEXT    NOT NULL,
    caller        TEXT    NOT NULL,
    job           TEXT    NOT NULL,
    case_id       TEXT    NOT NULL,
    case_ref      TEXT    NOT NULL,
    recipient     TEXT    NOT NULL,
    contact       TEXT    NOT NULL,
    mode          TEXT    NOT NULL,
    state         TEXT    NOT NULL,
    sends         INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    last_sent_at  INTEGER NOT NULL,
    reconcile_at  INTEGER,
    rounds        INTEGER NOT NULL DEFAULT 0,
    failure_code  TEXT,
    result_status TEXT,
    simulate      TEXT
) WITHOUT ROWID;
CREATE INDEX dispatches_case ON dispatches (caller, job, case_id);
CREATE INDEX dispatches_batch ON dispatches (batch_key, recipient);
CREATE INDEX dispatches_due ON dispatches (reconcile_at) WHERE reconcile_at IS NOT NULL;
CREATE INDEX dispatches_updated ON dispatches (updated_at);

CREATE TABLE deliveries (
    id           INTEGER PRIMARY KEY,
    source       TEXT    NOT NULL,
    event_id     TEXT    NOT NULL,
    received_at  INTEGER NOT NULL,
    dispatch_key TEXT,
    state        TEXT    NOT NULL DEFAULT 'pending',
    detail       TEXT,
    finished_at  INTEGER,
    payload      TEXT    NOT NULL,
    UNIQUE (source, event_id)
);
CREATE INDEX deliveries_pending ON deliveries (id) WHERE state = 'pending';
CREATE INDEX deliveries_dispatch ON deliveries (dispatch_key);
CREATE INDEX deliveries_received ON deliveries (received_at);

CREATE TABLE suppressions (
    caller  TEXT    NOT NULL,
    job     TEXT    NOT NULL,
    contact TEXT    NOT NULL,
    case_id TEXT    NOT NULL,
    at      INTEGER NOT NULL,
    reason  TEXT    NOT NULL,
    PRIMARY KEY (caller, job, contact, case_id)
) WITHOUT ROWID;
",
    // Notifications: the targets each kind of event goes to (replaced by `serve` at start),
    // and the outbox, one row per event and target (the primary key keeps an event once per
    // target); `claim` is the token of the worker trying it, `next_at` its lease or next try.
    r"
CREATE TABLE notify_targets (
    target TEXT NOT NULL,
    kind   TEXT NOT NULL,
    PRIMARY KEY (target, kind)
) WITHOUT ROWID;

CREATE TABLE notifications (
    id          TEXT    NOT NULL,
    target      TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    payload     TEXT    NOT NULL,
    status      TEXT    NOT NULL DEFAULT 'pending',
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_at     INTEGER NOT NULL,
    claim       TEXT,
    last_error  TEXT,
    created_at  INTEGER NOT NULL,
    finished_at INTEGER,
    PRIMARY KEY (id, target)
);
CREATE INDEX notifications_due ON notifications (target, next_at) WHERE status = 'pending';
CREATE INDEX notifications_created ON notifications (created_at);
CREATE INDEX notifications_finished ON notifications (finished_at) WHERE finished_at IS NOT NULL;
",
    // The call state (tasks' counters and stops, tools' breakers and budgets, idempotency
    // records, the strategies in use), one row each, written in the transaction of the journal
    // events that changed it; `position` is the last journal event it reflects. A ledger from
    // before has position 0: its first start replays the whole journal.
    r"
CREATE TABLE call_state (
    kind    TEXT    NOT NULL,
    key     TEXT    NOT NULL,
    caller  TEXT    NOT NULL,
    body    TEXT    NOT NULL,
    expires INTEGER,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
CREATE INDEX call_state_expires ON call_state (expires) WHERE expires IS NOT NULL;
CREATE TABLE call_position (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    position INTEGER NOT NULL
);
INSERT INTO call_position (id, position) VALUES (1, 0);
CREATE TABLE secrets (
    name       TEXT   PRIMARY KEY,
    value      TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);
",
    // Review ids never repeat, even after a purge deleted the newest items (a notification's
    // id is made from its item's): the table again, with AUTOINCREMENT.
    r"
CREATE TABLE reviews_once (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    caller        TEXT    NOT NULL,
    job           TEXT    NOT NULL,
    case_id       TEXT    NOT NULL,
    lane          TEXT    NOT NULL,
    escalation    TEXT    NOT NULL,
    reason        TEXT    NOT NULL,
    opened_at     INTEGER NOT NULL,
    retry_allowed INTEGER NOT NULL,
    retry_used    INTEGER NOT NULL DEFAULT 0,
    resolved_at   INTEGER,
    resolved_by   TEXT,
    decision      TEXT,
    note          TEXT,
    kind          TEXT    NOT NULL DEFAULT 'case',
    detail        TEXT
);
INSERT INTO reviews_once (id, caller, job, case_id, lane, escalation, reason, opened_at,
                          retry_allowed, retry_used, resolved_at, resolved_by, decision, note,
                          kind, detail)
    SELECT id, caller, job, case_id, lane, escalation, reason, opened_at, retry_allowed,
           retry_used, resolved_at, resolved_by, decision, note, kind, detail FROM reviews;
DROP TABLE reviews;
ALTER TABLE reviews_once RENAME TO reviews;
CREATE INDEX reviews_case ON reviews (caller, job, case_id) WHERE resolved_at IS NULL;
CREATE INDEX reviews_resolved ON reviews (resolved_at);
CREATE INDEX reviews_task ON reviews (caller, case_id) WHERE kind = 'task' AND resolved_at IS NULL;
",
    // Lifted suppressions: who lifted each, when and why, kept beside what it was.
    r"
CREATE TABLE suppression_lifts (
    caller        TEXT    NOT NULL,
    job           TEXT    NOT NULL,
    contact       TEXT    NOT NULL,
    case_id       TEXT    NOT NULL,
    suppressed_at INTEGER NOT NULL,
    reason        TEXT    NOT NULL,
    lifted_at     INTEGER NOT NULL,
    lifted_by     TEXT    NOT NULL,
    why           TEXT    NOT NULL
);
CREATE INDEX suppression_lifts_contact ON suppression_lifts (job, contact);
",
];

/// Opens a connection with the store's settings: WAL, `synchronous = NORMAL` (a commit
/// survives a crash of the process; see docs/decisions.md), foreign keys, a 5 s busy timeout,
/// stable query plans.
pub fn connect(path: &Path) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(path, flags).map_err(|e| {
        StoreError::Database(format!("cannot open the database {}: {e}", path.display()))
    })?;
    connection.busy_timeout(Duration::from_secs(5))?;
    connection.pragma_update(None, "page_size", 2048)?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    // When a checkpoint starts the WAL over, the file is cut back to this size.
    connection.pragma_update(
        None,
        "journal_size_limit",
        i64::try_from(super::checkpoint::RESTART_BYTES).unwrap_or(i64::MAX),
    )?;
    connection.pragma_update(None, "foreign_keys", "ON")?;
    connection.pragma_update(None, "cache_size", -32_000)?;
    // A fixed plan per statement: without it, bundled SQLite (built with STAT4) prepares a
    // statement with ORDER BY again every time its parameters are bound, which cost a third
    // of each attempt.
    connection.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    connection.set_prepared_statement_cache_capacity(64);
    Ok(connection)
}

/// Runs the migrations the database has not seen, in one transaction.
pub fn migrate(connection: &mut Connection) -> Result<(), StoreError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let stored: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let version = usize::try_from(stored).unwrap_or(usize::MAX);
    if version > MIGRATIONS.len() {
        return Err(StoreError::Database(format!(
            "the database's schema version {stored} is newer than this backstop knows ({}); \
             upgrade backstop",
            MIGRATIONS.len()
        )));
    }
    for migration in &MIGRATIONS[version..] {
        tx.execute_batch(migration)?;
    }
    tx.pragma_update(
        None,
        "user_version",
        i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX),
    )?;
    tx.commit()?;
    Ok(())
}
