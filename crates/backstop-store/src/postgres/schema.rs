//! The `PostgreSQL` schema and its migrations, recorded in `backstop_schema`.

use postgres::Client;

use crate::StoreError;

/// The migrations, in order; the same tables as the `SQLite` store's.
const MIGRATIONS: [&str; 10] = [
    r"
CREATE TABLE cases (
    caller       TEXT    NOT NULL,
    job          TEXT    NOT NULL,
    case_id      TEXT    NOT NULL,
    issued       BOOLEAN NOT NULL,
    opening_hash TEXT,
    opened_at    BIGINT  NOT NULL,
    last_at      BIGINT  NOT NULL,
    cycle        BIGINT  NOT NULL DEFAULT 0,
    PRIMARY KEY (caller, job, case_id)
);
CREATE INDEX cases_opening ON cases (caller, job, opening_hash, opened_at)
    WHERE opening_hash IS NOT NULL;
CREATE INDEX cases_issued ON cases (caller, job, opened_at) WHERE issued;

CREATE TABLE attempts (
    id           BIGSERIAL PRIMARY KEY,
    caller       TEXT    NOT NULL,
    job          TEXT    NOT NULL,
    case_id      TEXT    NOT NULL,
    cycle        BIGINT  NOT NULL,
    number       BIGINT  NOT NULL,
    at           BIGINT  NOT NULL,
    execution_id TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    outcome      TEXT,
    next         TEXT,
    progress     BOOLEAN NOT NULL,
    closed       TEXT    NOT NULL,
    cited        TEXT    NOT NULL,
    lane_retry   BOOLEAN NOT NULL,
    fingerprint  TEXT    NOT NULL,
    result       TEXT    NOT NULL
);
CREATE INDEX attempts_case ON attempts (caller, job, case_id, cycle);
CREATE UNIQUE INDEX attempts_execution ON attempts (caller, job, execution_id);
CREATE INDEX attempts_at ON attempts (at);

CREATE TABLE reviews (
    id            BIGSERIAL PRIMARY KEY,
    caller        TEXT    NOT NULL,
    job           TEXT    NOT NULL,
    case_id       TEXT    NOT NULL,
    lane          TEXT    NOT NULL,
    escalation    TEXT    NOT NULL,
    reason        TEXT    NOT NULL,
    opened_at     BIGINT  NOT NULL,
    retry_allowed BOOLEAN NOT NULL,
    retry_used    BOOLEAN NOT NULL DEFAULT FALSE,
    resolved_at   BIGINT,
    resolved_by   TEXT,
    decision      TEXT,
    note          TEXT
);
CREATE INDEX reviews_case ON reviews (caller, job, case_id) WHERE resolved_at IS NULL;
CREATE INDEX reviews_resolved ON reviews (resolved_at);
",
    r"
CREATE TABLE events (
    id      BIGSERIAL PRIMARY KEY,
    at      BIGINT NOT NULL,
    kind    TEXT   NOT NULL,
    subject TEXT   NOT NULL,
    body    TEXT   NOT NULL
);
CREATE INDEX events_at ON events (at);
",
    // The call journal in one round trip: the lock first, then the insert, then the read, each
    // statement with a snapshot of its own (so the read sees every event committed before the
    // lock was granted); the lock is held until the caller's transaction ends. Its commit does
    // not wait for the disk (see docs/decisions.md, "The call journal"): the lock, held through
    // the commit, would make every process wait for every flush in turn.
    r"
CREATE FUNCTION backstop_journal(p_at BIGINT[], p_kind TEXT[], p_subject TEXT[], p_body TEXT[], p_after BIGINT)
RETURNS TABLE (id BIGINT, at BIGINT, kind TEXT, subject TEXT, body TEXT)
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM pg_advisory_xact_lock(hashtextextended('backstop-journal', 0));
    -- Rows are inserted, and take their ids, in the order given.
    INSERT INTO events (at, kind, subject, body)
        SELECT a, k, s, b FROM unnest(p_at, p_kind, p_subject, p_body) WITH ORDINALITY AS t(a, k, s, b, n)
        ORDER BY n;
    -- Planned for the position given (EXECUTE plans each time): a cached generic plan of
    -- `id > $1` scans and sorts the whole table. (A SET clause on the function would do it
    -- too, but would also undo the set_config above when the function returns.)
    RETURN QUERY EXECUTE 'SELECT e.id, e.at, e.kind, e.subject, e.body FROM events e '
        'WHERE e.id > $1 ORDER BY e.id' USING p_after;
END
$$;
",
    // Review items for tasks' escalations beside held cases.
    r"
ALTER TABLE reviews ADD COLUMN kind TEXT NOT NULL DEFAULT 'case';
ALTER TABLE reviews ADD COLUMN detail TEXT;
CREATE INDEX reviews_task ON reviews (caller, case_id) WHERE kind = 'task' AND resolved_at IS NULL;
",
    // Side effects, as in the SQLite store: a dispatch per key, deliveries unique per
    // sender's event id, suppressions.
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
    sends         BIGINT  NOT NULL,
    created_at    BIGINT  NOT NULL,
    updated_at    BIGINT  NOT NULL,
    last_sent_at  BIGINT  NOT NULL,
    reconcile_at  BIGINT,
    rounds        BIGINT  NOT NULL DEFAULT 0,
    failure_code  TEXT,
    result_status TEXT,
    simulate      TEXT
);
CREATE INDEX dispatches_case ON dispatches (caller, job, case_id);
CREATE INDEX dispatches_batch ON dispatches (batch_key, recipient);
CREATE INDEX dispatches_due ON dispatches (reconcile_at) WHERE reconcile_at IS NOT NULL;
CREATE INDEX dispatches_updated ON dispatches (updated_at);

CREATE TABLE deliveries (
    id           BIGSERIAL PRIMARY KEY,
    source       TEXT    NOT NULL,
    event_id     TEXT    NOT NULL,
    received_at  BIGINT  NOT NULL,
    dispatch_key TEXT,
    state        TEXT    NOT NULL DEFAULT 'pending',
    detail       TEXT,
    finished_at  BIGINT,
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
    at      BIGINT  NOT NULL,
    reason  TEXT    NOT NULL,
    PRIMARY KEY (caller, job, contact, case_id)
);
",
    // Notifications, as in the SQLite store: subscriptions, and the outbox with one row per
    // event and target.
    r"
CREATE TABLE notify_targets (
    target TEXT NOT NULL,
    kind   TEXT NOT NULL,
    PRIMARY KEY (target, kind)
);

CREATE TABLE notifications (
    id          TEXT    NOT NULL,
    target      TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    payload     TEXT    NOT NULL,
    status      TEXT    NOT NULL DEFAULT 'pending',
    attempts    BIGINT  NOT NULL DEFAULT 0,
    next_at     BIGINT  NOT NULL,
    claim       TEXT,
    last_error  TEXT,
    created_at  BIGINT  NOT NULL,
    finished_at BIGINT,
    PRIMARY KEY (id, target)
);
CREATE INDEX notifications_due ON notifications (target, next_at) WHERE status = 'pending';
CREATE INDEX notifications_created ON notifications (created_at);
CREATE INDEX notifications_finished ON notifications (finished_at) WHERE finished_at IS NOT NULL;
",
    // The call state, as in the SQLite store: one row per task, tool, idempotency record and
    // the strategies in use, written in the journal's transaction; `position` is the last
    // journal event it reflects.
    r"
CREATE TABLE call_state (
    kind    TEXT   NOT NULL,
    key     TEXT   NOT NULL,
    caller  TEXT   NOT NULL,
    body    TEXT   NOT NULL,
    expires BIGINT,
    PRIMARY KEY (kind, key)
);
CREATE INDEX call_state_expires ON call_state (expires) WHERE expires IS NOT NULL;
CREATE TABLE call_position (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    position BIGINT  NOT NULL
);
INSERT INTO call_position (id, position) VALUES (1, 0);
CREATE TABLE secrets (
    name       TEXT   PRIMARY KEY,
    value      TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);
",
    // What a journal transaction writes beside its events, in one call: the call-state rows
    // kept, the rows gone, and the position they reflect (the journal sends it with COMMIT in
    // one round trip; see `call_state.rs`).
    r"
CREATE FUNCTION backstop_write_state(p_kind TEXT[], p_key TEXT[], p_caller TEXT[], p_body TEXT[],
                                     p_expires BIGINT[], p_gone_kind TEXT[], p_gone_key TEXT[],
                                     p_position BIGINT)
RETURNS VOID
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    -- PL/pgSQL keeps each statement's plan for the session (an SQL function plans every call).
    INSERT INTO call_state (kind, key, caller, body, expires)
        SELECT * FROM unnest(p_kind, p_key, p_caller, p_body, p_expires)
        ON CONFLICT (kind, key) DO UPDATE
            SET caller = excluded.caller, body = excluded.body, expires = excluded.expires;
    IF cardinality(p_gone_kind) > 0 THEN
        DELETE FROM call_state c USING unnest(p_gone_kind, p_gone_key) AS g(kind, key)
            WHERE c.kind = g.kind AND c.key = g.key;
    END IF;
    UPDATE call_position SET position = GREATEST(position, p_position) WHERE id = 1;
END
$$;
",
    // Lifted suppressions: who lifted each, when and why, kept beside what it was.
    r"
CREATE TABLE suppression_lifts (
    caller        TEXT    NOT NULL,
    job           TEXT    NOT NULL,
    contact       TEXT    NOT NULL,
    case_id       TEXT    NOT NULL,
    suppressed_at BIGINT  NOT NULL,
    reason        TEXT    NOT NULL,
    lifted_at     BIGINT  NOT NULL,
    lifted_by     TEXT    NOT NULL,
    why           TEXT    NOT NULL
);
CREATE INDEX suppression_lifts_contact ON suppression_lifts (job, contact);
",
    // A batch that opens no review item whatever was journaled before it (the core's
    // `Speculation`): appended and committed in one round trip when, under the journal's
    // lock, no event read back (others' since `p_after`, and the batch's own, which never
    // match) clears the escalation of one of its tasks, changes the strategies, or is dated at
    // or after `p_expires`; otherwise SQLSTATE BJ001, and the writer applies the batch under
    // the lock instead. The rows backstop_journal returns are checked, not read twice.
    r"
CREATE FUNCTION backstop_journal_unless(p_at BIGINT[], p_kind TEXT[], p_subject TEXT[], p_body TEXT[], p_after BIGINT,
                                        p_tasks TEXT[], p_clearing TEXT[], p_strategies TEXT, p_expires BIGINT)
RETURNS TABLE (id BIGINT, at BIGINT, kind TEXT, subject TEXT, body TEXT)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    r RECORD;
BEGIN
    FOR r IN SELECT * FROM backstop_journal(p_at, p_kind, p_subject, p_body, p_after) LOOP
        IF r.kind = p_strategies OR r.at >= p_expires
           OR (r.kind = ANY(p_clearing) AND r.subject = ANY(p_tasks)) THEN
            RAISE EXCEPTION 'the journal moved under a speculative batch' USING ERRCODE = 'BJ001';
        END IF;
        id := r.id;
        at := r.at;
        kind := r.kind;
        subject := r.subject;
        body := r.body;
        RETURN NEXT;
    END LOOP;
END
$$;
",
];

/// Runs the migrations the database has not seen, in one transaction, one migrator at a time.
pub fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let mut tx = client.transaction()?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('backstop-migrate', 0))",
        &[],
    )?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS backstop_schema (version BIGINT NOT NULL)")?;
    let version: i64 = tx
        .query_opt("SELECT version FROM backstop_schema", &[])?
        .map_or(0, |row| row.get(0));
    let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
    if version > known {
        return Err(StoreError::Database(format!(
            "the database's schema version {version} is newer than this backstop knows \
             ({known}); upgrade backstop"
        )));
    }
    for migration in &MIGRATIONS[usize::try_from(version).unwrap_or(0)..] {
        tx.batch_execute(migration)?;
    }
    tx.execute("DELETE FROM backstop_schema", &[])?;
    tx.execute(
        "INSERT INTO backstop_schema (version) VALUES ($1)",
        &[&known],
    )?;
    tx.commit()?;
    Ok(())
}
