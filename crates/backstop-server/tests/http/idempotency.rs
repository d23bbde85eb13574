//! `Idempotency-Key` on `POST /v1/recover`: a resend counts nothing and gets the first step; the
//! key with another request is refused; keys are the caller's own; a fleet honours them.

use serde_json::{Value, json};

use crate::support::{AGENT_A, AGENT_B, Server, start, start_beside};

fn recover(server: &Server, key: &str, idempotency: &str, body: &Value) -> crate::support::Answer {
    server.call_with(
        "POST",
        "/v1/recover",
        Some(key),
        &[("Idempotency-Key", idempotency)],
        Some(&body.to_string()),
    )
}

fn failure(task: &str) -> Value {
    json!({"task": task, "report": {"http_status": 503}, "context": {"tool": "search"}})
}

#[test]
fn a_resend_with_the_same_key_gets_the_first_step_and_counts_nothing() {
    let server = start();
    let first = recover(&server, AGENT_A, "k-1", &failure("t1"));
    assert_eq!(first.status, 200, "{}", first.text);
    assert!(!first.replayed);
    let again = recover(&server, AGENT_A, "k-1", &failure("t1"));
    assert_eq!(again.status, 200, "{}", again.text);
    assert!(again.replayed, "a resend says so");
    assert_eq!(again.json(), first.json(), "the stored step, as it was");
    let next = recover(&server, AGENT_A, "k-2", &failure("t1")).json();
    assert_eq!(
        next["attempts"]["class_used"], 2,
        "the resend counted nothing: {next}"
    );
}

#[test]
fn the_same_key_with_another_request_is_refused_and_counts_nothing() {
    let server = start();
    recover(&server, AGENT_A, "k-1", &failure("t1"));
    let other = recover(&server, AGENT_A, "k-1", &failure("t2"));
    assert_eq!(
        (other.status, other.refused()),
        (409, "idempotency_key_conflict".to_owned())
    );
    let view = server.get("/v1/tasks/t2", Some(AGENT_A)).json();
    assert_eq!(view["task_used"], 0, "{view}");
    // Another caller's key of the same name is another key.
    let theirs = recover(&server, AGENT_B, "k-1", &failure("t2"));
    assert_eq!(theirs.status, 200, "{}", theirs.text);
    assert!(!theirs.replayed);
}

#[test]
fn a_bad_key_is_refused_with_its_header() {
    let server = start();
    let long = "k".repeat(300);
    for bad in [long.as_str(), "k\t1"] {
        let answer = recover(&server, AGENT_A, bad, &failure("t1"));
        assert_eq!(answer.status, 400, "{bad:?}: {}", answer.text);
        assert!(
            answer.text.contains("headers.idempotency-key"),
            "{}",
            answer.text
        );
    }
    let view = server.get("/v1/tasks/t1", Some(AGENT_A)).json();
    assert_eq!(view["task_used"], 0, "nothing counted: {view}");
    // An empty key (or one HTTP trims to nothing) is the same as none: counted, never replayed.
    for empty in ["", "   "] {
        let answer = recover(&server, AGENT_A, empty, &failure("t1"));
        assert_eq!(answer.status, 200, "{empty:?}: {}", answer.text);
        assert!(!answer.replayed);
    }
    let view = server.get("/v1/tasks/t1", Some(AGENT_A)).json();
    assert_eq!(view["task_used"], 2, "{view}");
}

#[test]
fn a_key_sent_to_two_servers_counts_once_and_survives_a_restart() {
    let a = start();
    let b = start_beside(&a);
    let first = recover(&a, AGENT_A, "k-9", &failure("t9"));
    let again = recover(&b, AGENT_A, "k-9", &failure("t9"));
    assert!(again.replayed, "{}", again.text);
    assert_eq!(again.json(), first.json());
    let c = start_beside(&a);
    let later = recover(&c, AGENT_A, "k-9", &failure("t9"));
    assert!(
        later.replayed,
        "a new process replays the key too: {}",
        later.text
    );
    assert_eq!(c.get("/v1/tasks/t9", Some(AGENT_A)).json()["task_used"], 1);
}
