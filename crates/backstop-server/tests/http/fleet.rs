//! Two servers on one ledger (two processes of a fleet): the call-level state is one state.
//! Each test runs on `SQLite` (one file) and, in the second CI run, on `PostgreSQL` (one schema).

use serde_json::{Value, json};

use crate::support::{AGENT_A, OPERATOR, Server, start, start_beside};

fn failure(task: &str, status: u16, tool: &str) -> Value {
    json!({"task": task, "report": {"http_status": status}, "context": {"tool": tool}})
}

fn breaker_state(server: &Server, tool: &str) -> Option<String> {
    let tools = server.get("/v1/tools", Some(AGENT_A)).json();
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == tool)
        .map(|t| t["breaker"]["state"].as_str().unwrap().to_owned())
}

#[test]
fn a_breaker_opened_through_one_server_is_open_on_the_other() {
    let a = start();
    let b = start_beside(&a);
    assert_eq!(breaker_state(&b, "search"), None);
    let mut opened = false;
    for _ in 0..50 {
        let outcome = json!({"tool": "search", "outcome": "failure", "class": "transient"});
        assert_eq!(a.post("/v1/outcomes", Some(AGENT_A), &outcome).status, 200);
        if breaker_state(&a, "search").as_deref() == Some("open") {
            opened = true;
            break;
        }
    }
    assert!(opened, "the breaker never opened on A");
    assert_eq!(breaker_state(&b, "search").as_deref(), Some("open"));
    let step = b
        .post("/v1/recover", Some(AGENT_A), &failure("t1", 503, "search"))
        .json();
    assert_eq!(step["action"], "fallback_tool", "{step}");
}

#[test]
fn a_policy_stop_on_one_server_stops_the_task_on_the_other() {
    let a = start();
    let b = start_beside(&a);
    let denied = json!({"task": "t2", "report": {"http_status": 403, "error_code": "content_policy_violation"}});
    assert_eq!(
        a.post("/v1/recover", Some(AGENT_A), &denied).json()["action"],
        "stop"
    );
    let step = b
        .post("/v1/recover", Some(AGENT_A), &failure("t2", 503, "python"))
        .json();
    assert_eq!(step["action"], "stop", "{step}");
}

#[test]
fn a_grant_through_one_server_lets_the_other_retry_once() {
    let a = start();
    let b = start_beside(&a);
    let unclassified = json!({"task": "t3", "report": {"message": "the frobnicator declined"}});
    let without = a.post("/v1/recover", Some(AGENT_A), &unclassified).json();
    assert_eq!(without["action"], "stop", "{without}");
    let grant = json!({"task": "t5", "caller": "agent-a"});
    assert_eq!(b.post("/v1/grants", Some(OPERATOR), &grant).status, 200);
    let granted = json!({"task": "t5", "report": {"message": "the frobnicator declined"}});
    let with = a.post("/v1/recover", Some(AGENT_A), &granted).json();
    assert_ne!(with["action"], "stop", "{with}");
}

/// The answers a sequence of failures gets, as `(class_used, task_used, action)`, sorted.
fn answers(steps: &[Value]) -> Vec<(u64, u64, String)> {
    let mut out: Vec<(u64, u64, String)> = steps
        .iter()
        .map(|s| {
            (
                s["attempts"]["class_used"].as_u64().unwrap(),
                s["attempts"]["task_used"].as_u64().unwrap(),
                s["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn concurrent_failures_split_across_two_servers_count_as_one_server_would() {
    let alone = start();
    let sequential: Vec<Value> = (0..16)
        .map(|_| {
            alone
                .post("/v1/recover", Some(AGENT_A), &failure("t4", 503, "search"))
                .json()
        })
        .collect();

    let a = start();
    let b = start_beside(&a);
    let concurrent: Vec<Value> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let server = if i % 2 == 0 { &a } else { &b };
                scope.spawn(move || {
                    server
                        .post("/v1/recover", Some(AGENT_A), &failure("t4", 503, "search"))
                        .json()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(answers(&concurrent), answers(&sequential));
    // And each server now reports the same state for the tool.
    assert_eq!(breaker_state(&a, "search"), breaker_state(&b, "search"));
}
