//! Two `backstop serve` processes on one ledger, and one killed with SIGKILL in the middle of a
//! load: the other keeps answering, with every failure either process acknowledged in its
//! state. On a `SQLite` file, and on `PostgreSQL` when `BACKSTOP_TEST_POSTGRES_URL` names a
//! database.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::serve_cmd::{Setup, VENDOR, client, get, post, post_raw};
use crate::serve_postgres::Schema;

/// No per-caller rate limit: the load and the checks after it are one caller's.
const UNLIMITED: &str = "[limits]\nrate_per_second = 1000000000\nburst = 1000000000\n";

/// Sends failures of tasks `k-0`, `k-1`, ... to the two servers in turn, kills the first after
/// a while, and checks the second's state: the acknowledged ones all counted, and it answers.
fn one_killed_mid_load_leaves_the_other_with_the_same_state(setup: &Setup, extra: &[&str]) {
    let a = setup.start(extra);
    let b = setup.start(extra);
    let finished = AtomicBool::new(false);
    let (acknowledged, sent): (Vec<usize>, usize) = std::thread::scope(|scope| {
        let load = scope.spawn(|| {
            let agent = client();
            let mut acknowledged = Vec::new();
            let mut i = 0;
            while !finished.load(Ordering::Relaxed) && i < 2_000 {
                let server = if i % 2 == 0 { &a } else { &b };
                let failure = json!({"task": format!("k-{i}"), "report": {"http_status": 503}});
                let sent = post_raw(
                    &agent,
                    &server.url("/v1/recover"),
                    None,
                    &failure.to_string(),
                );
                if matches!(sent, Ok((200, _))) {
                    acknowledged.push(i);
                }
                i += 1;
            }
            (acknowledged, i)
        });
        std::thread::sleep(Duration::from_millis(400));
        a.signal("KILL");
        std::thread::sleep(Duration::from_millis(300));
        finished.store(true, Ordering::Relaxed);
        load.join().unwrap()
    });
    assert!(
        acknowledged.len() > 20,
        "too few calls went through: {acknowledged:?}"
    );
    assert!(
        acknowledged.len() < sent,
        "the kill came after the load: all {sent} calls were answered"
    );
    for i in &acknowledged {
        let (status, task) = get(&b, &format!("/v1/tasks/k-{i}"), None);
        assert_eq!(status, 200);
        assert_eq!(
            task["task_used"], 1,
            "k-{i} was acknowledged but B does not count it: {task}"
        );
    }
    let (status, step) = post(
        &b,
        "/v1/recover",
        None,
        &json!({"task": "after", "report": {"http_status": 503}}),
    );
    assert_eq!(
        (status, step["attempts"]["task_used"].as_u64()),
        (200, Some(1))
    );
}

#[test]
fn on_one_sqlite_file_a_killed_server_leaves_the_other_whole() {
    let setup = Setup::new("fleet-sqlite", &[VENDOR], UNLIMITED);
    one_killed_mid_load_leaves_the_other_with_the_same_state(&setup, &[]);
}

#[test]
#[cfg_attr(
    not(backstop_postgres_url),
    ignore = "needs BACKSTOP_TEST_POSTGRES_URL (a PostgreSQL database)"
)]
fn on_postgres_a_killed_server_leaves_the_other_whole() {
    let Some(schema) = Schema::fresh("fleet") else {
        return;
    };
    let setup = Setup::new("fleet-postgres", &[VENDOR], UNLIMITED);
    one_killed_mid_load_leaves_the_other_with_the_same_state(&setup, &["--db", &schema.url]);
}
