//! A busy ledger answers 503 `busy` with `Retry-After`, changes nothing, and the same request
//! passes once the ledger is free. (`SQLite`: another process holds the write lock past the busy
//! timeout; the run on `PostgreSQL` skips it.)

use crate::support::{AGENT_A, start, vendor};

#[test]
fn a_busy_ledger_is_a_503_with_retry_after_and_nothing_changes() {
    if std::env::var_os("BACKSTOP_TEST_HTTP_POSTGRES").is_some() {
        return;
    }
    let server = start();
    let holder = rusqlite::Connection::open(&server.ledger).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let body = vendor("e-busy", "northwind.com", "Security first.");
    let busy = server.post("/v1/jobs/vendor-risk/decisions", Some(AGENT_A), &body);
    assert_eq!(busy.status, 503, "{}", busy.text);
    assert_eq!(busy.refused(), "busy");
    assert_eq!(busy.retry_after.as_deref(), Some("1"));
    assert!(
        !busy.text.contains("db error") && !busy.text.contains("locked"),
        "{}",
        busy.text
    );
    holder.execute_batch("ROLLBACK").unwrap();
    let passed = server.post("/v1/jobs/vendor-risk/decisions", Some(AGENT_A), &body);
    assert_eq!(passed.status, 200, "{}", passed.text);
    assert_eq!(
        passed.json()["attempts"]["used"],
        1,
        "the busy try counted nothing: {}",
        passed.text
    );
}
