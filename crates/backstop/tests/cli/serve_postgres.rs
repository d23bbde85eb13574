//! `backstop serve --db postgres://...` as a real process, started as the docs say: it starts,
//! answers calls and decisions over its socket, stops cleanly, and a second start on the same
//! database finds the call journal. Runs when `BACKSTOP_TEST_POSTGRES_URL` names a database
//! (`postgres://postgres@127.0.0.1:5432/test`; `.ci/run` sets it); without it each test returns
//! at once. Each test works in a schema of its own, dropped afterwards.

use serde_json::json;

use crate::serve_cmd::{Setup, VENDOR, get, post, ready_jobs, vendor};

const ENV: &str = "BACKSTOP_TEST_POSTGRES_URL";

/// A schema of the test database, dropped with it, and the URL that opens it.
pub(crate) struct Schema {
    base: String,
    name: String,
    pub(crate) url: String,
}

impl Schema {
    pub(crate) fn fresh(tag: &str) -> Option<Schema> {
        let Some(base) = std::env::var(ENV).ok().filter(|v| !v.trim().is_empty()) else {
            // Skipped visibly; in CI the database must be there.
            assert!(
                std::env::var("CI").ok().as_deref() != Some("true"),
                "CI=true but {ENV} is not set: the PostgreSQL tests must run in CI"
            );
            #[allow(clippy::print_stderr)]
            {
                eprintln!("skipped: {ENV} is not set, so this PostgreSQL test does not run");
            }
            return None;
        };
        let name = format!("backstop_cli_{tag}_{}", std::process::id());
        let mut admin = postgres::Client::connect(&base, postgres::NoTls)
            .unwrap_or_else(|e| panic!("{ENV}={base}: {e}"));
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
            ))
            .unwrap();
        let url = format!("{base}?options=-c%20search_path%3D{name}");
        Some(Schema { base, name, url })
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.base, postgres::NoTls) {
            let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

#[test]
#[cfg_attr(
    not(backstop_postgres_url),
    ignore = "needs BACKSTOP_TEST_POSTGRES_URL (a PostgreSQL database)"
)]
fn serve_on_postgres_answers_calls_and_decisions_and_a_restart_finds_the_journal() {
    let Some(schema) = Schema::fresh("serve") else {
        return;
    };
    let setup = Setup::new("serve-postgres", &[VENDOR], "");
    let mut server = setup.start(&["--db", &schema.url]);
    let started = server.stderr();
    assert!(started.contains("ledger postgres://"), "{started}");
    assert!(!started.contains("panicked"), "{started}");
    assert_eq!(get(&server, "/readyz", None).0, 200);
    assert_eq!(ready_jobs(&server), ["vendor-risk"]);

    let failure =
        json!({"task": "t1", "report": {"http_status": 503}, "context": {"tool": "search"}});
    for expected in 1..=2 {
        let (status, step) = post(&server, "/v1/recover", None, &failure);
        assert_eq!(status, 200, "{step}");
        assert_eq!(step["attempts"]["class_used"], expected, "{step}");
    }
    let (status, view) = post(
        &server,
        "/v1/outcomes",
        None,
        &json!({"tool": "search", "outcome": "failure"}),
    );
    assert_eq!(status, 200, "{view}");
    let (status, reply) = post(
        &server,
        "/v1/jobs/vendor-risk/decisions",
        None,
        &vendor("e-1", "northwind.com", "Security first."),
    );
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["status"], "undecided", "{reply}");
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // The journal is on the database: a new process replays it and counts on.
    let mut again = setup.start(&["--db", &schema.url]);
    let (status, step) = post(&again, "/v1/recover", None, &failure);
    assert_eq!(status, 200, "{step}");
    assert_eq!(step["attempts"]["class_used"], 3, "{step}");
    let (code, stderr) = again.stop();
    assert_eq!(code, Some(0), "{stderr}");
}
