//! `backstop calibrate calls` on a ledger `serve` wrote: how often each retry recovered, per
//! tool and class, and the limit it recommends from enough failures only.

use serde_json::{Value, json};

use crate::serve_cmd::{Setup, post};
use crate::serve_postgres::Schema;
use crate::support::{arg, run};

#[test]
fn calibrate_calls_reads_the_services_journal_per_tool_and_class() {
    let setup = Setup::new("calibrate-calls", &[], "");
    let ledger = setup.dir.path().join("ledger.db");
    calibrate_calls_on(&setup, arg(&ledger), &[]);
    // No ledger there: refused, nothing created.
    let missing = setup.dir.path().join("none.db");
    let refused = run(
        &["calibrate", "calls", "--db", arg(&missing), "--json"],
        b"",
    );
    refused.expect_code(2);
    assert!(!missing.exists());
}

#[test]
#[cfg_attr(
    not(backstop_postgres_url),
    ignore = "needs BACKSTOP_TEST_POSTGRES_URL (a PostgreSQL database)"
)]
fn calibrate_calls_reads_a_postgresql_journal() {
    let Some(schema) = Schema::fresh("calibrate") else {
        return;
    };
    let setup = Setup::new("calibrate-calls-postgres", &[], "");
    calibrate_calls_on(&setup, &schema.url, &["--db", &schema.url]);
}

/// Failures and successes through a service started with `serve_args`, then `calibrate calls
/// --db DB` on its ledger.
fn calibrate_calls_on(setup: &Setup, db: &str, serve_args: &[&str]) {
    let mut server = setup.start(serve_args);
    let fail = |task: &str, tool: &str, status: u16| {
        let body =
            json!({"task": task, "report": {"http_status": status}, "context": {"tool": tool}});
        let (code, answer) = post(&server, "/v1/recover", None, &body);
        assert_eq!(code, 200, "{answer}");
    };
    let succeed = |task: &str, tool: &str| {
        let body = json!({"tool": tool, "outcome": "success", "task": task});
        let (code, answer) = post(&server, "/v1/outcomes", None, &body);
        assert_eq!(code, 200, "{answer}");
    };
    // search: 24 tasks recover on the first retry, 8 on the second.
    for t in 0..24 {
        fail(&format!("s{t}"), "search", 503);
        succeed(&format!("s{t}"), "search");
    }
    for t in 0..8 {
        fail(&format!("d{t}"), "search", 503);
        fail(&format!("d{t}"), "search", 503);
        succeed(&format!("d{t}"), "search");
    }
    // crm: a handful of rate limits, too few to recommend anything.
    for t in 0..3 {
        fail(&format!("c{t}"), "crm", 429);
        succeed(&format!("c{t}"), "crm");
    }
    server.stop();

    let ran = run(&["calibrate", "calls", "--db", db, "--json"], b"");
    ran.expect_code(0);
    let c: Value = ran.json();
    assert_eq!(
        (c["failures"].as_u64(), c["successes"].as_u64()),
        (Some(43), Some(35)),
        "{c}"
    );
    let search = &c["rows"][0];
    assert_eq!(
        (search["tool"].as_str(), search["class"].as_str()),
        (Some("search"), Some("transient"))
    );
    assert_eq!(search["failures"], 40);
    assert_eq!(search["retries"][0]["tried"], 32);
    assert_eq!(search["retries"][0]["recovered"], 24);
    assert_eq!(search["retries"][1]["tried"], 8);
    assert_eq!(search["retries"][1]["recovered"], 8);
    assert_eq!(search["recommended"]["max_attempts"], 2, "{search}");
    let crm = &c["rows"][1];
    assert_eq!(crm["tool"], "crm");
    assert_eq!(crm["recommended"], Value::Null);
    assert!(
        crm["note"].as_str().unwrap().contains("fewer than 30"),
        "{crm}"
    );

    // For a person: a block per tool and class.
    let human = run(
        &["calibrate", "calls", "--db", db, "--output-format", "human"],
        b"",
    );
    human.expect_code(0);
    assert!(
        human
            .stdout
            .contains("search transient: 40 failures in 32 episodes"),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains("recommended: max_attempts 2"),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains("crm rate_limited: 3 failures"),
        "{}",
        human.stdout
    );

    // No ledger there: refused, nothing created.
    let missing = setup.dir.path().join("none.db");
    let refused = run(
        &["calibrate", "calls", "--db", arg(&missing), "--json"],
        b"",
    );
    refused.expect_code(2);
    assert!(!missing.exists());
}
