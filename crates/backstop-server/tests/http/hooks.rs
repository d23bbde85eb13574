//! `POST /v1/hooks/{agent}` over a real socket: an agent's hook documents answered as
//! `backstop hook` answers them, on the service's ledger and behind its keys.

use serde_json::{Value, json};

use crate::support::{AGENT_A, AGENT_B, start};

fn pre(session: &str, path: &str) -> Value {
    json!({"hook_event_name": "PreToolUse", "session_id": session, "tool_name": "Read",
           "tool_input": {"file_path": path}, "cwd": "/work", "tool_use_id": "toolu_01"})
}

fn failed(session: &str, path: &str, error: &str) -> Value {
    json!({"hook_event_name": "PostToolUseFailure", "session_id": session, "tool_name": "Read",
           "tool_input": {"file_path": path}, "error": error, "is_interrupt": false})
}

#[test]
fn a_policy_denial_in_one_hook_denies_the_sessions_next_call() {
    let server = start();
    let path = "/v1/hooks/claude-code";
    let allowed = server.post(path, Some(AGENT_A), &pre("s-1", "/srv/a"));
    assert_eq!(allowed.status, 200, "{}", allowed.text);
    assert_eq!(
        allowed.json(),
        json!({}),
        "nothing to say before a first call"
    );

    let counted = server.post(
        path,
        Some(AGENT_A),
        &failed(
            "s-1",
            "/etc/shadow",
            "Access denied - path outside allowed directories: /etc/shadow not in /srv",
        ),
    );
    assert_eq!(counted.status, 200, "{}", counted.text);
    let context = counted.json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        context.starts_with("backstop: stop: policy denial"),
        "{context}"
    );

    let denied = server
        .post(path, Some(AGENT_A), &pre("s-1", "/srv/b"))
        .json();
    let output = &denied["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny", "{denied}");
    assert!(
        output["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("stopped by"),
        "{denied}"
    );
    // The failure is on the service's ledger, under the session's name.
    let task = server.get("/v1/tasks/s-1", Some(AGENT_A)).json();
    assert!(task["stopped_by"].is_string(), "{task}");
    // Another caller's session of the same name is its own.
    let other = server
        .post(path, Some(AGENT_B), &pre("s-1", "/srv/b"))
        .json();
    assert_eq!(other, json!({}), "{other}");
}

#[test]
fn a_failed_post_tool_use_whose_step_ends_is_blocked_and_a_success_is_recorded() {
    let server = start();
    let path = "/v1/hooks/codex";
    let mut last = Value::Null;
    for _ in 0..8 {
        last = server
            .post(
                path,
                Some(AGENT_A),
                &json!({"hook_event_name": "PostToolUse", "session_id": "s-2", "tool_name": "Fetch",
                        "tool_input": {"url": "https://api.example.com/x"},
                        "tool_response": {"is_error": true, "content": "HTTP 503 Service Unavailable"}}),
            )
            .json();
        if last.get("decision").is_some() {
            break;
        }
    }
    assert_eq!(last["decision"], "block", "{last}");
    assert!(
        last["reason"].as_str().unwrap().starts_with("backstop: "),
        "{last}"
    );
    let worked = server.post(
        path,
        Some(AGENT_A),
        &json!({"hook_event_name": "PostToolUse", "session_id": "s-3", "tool_name": "Fetch",
                "tool_input": {"url": "https://api.example.com/y"}, "tool_response": {"ok": true}}),
    );
    assert_eq!(
        (worked.status, worked.json()),
        (200, json!({})),
        "{}",
        worked.text
    );
}

#[test]
fn bad_documents_and_agents_are_refused_with_their_paths_and_count_nothing() {
    let server = start();
    let cases = [
        (
            "/v1/hooks/claude-code",
            json!({"hook_event_name": "PreToolUse", "tool_name": "Bash"}),
            "session_id",
        ),
        (
            "/v1/hooks/claude-code",
            json!({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash", "tool_input": "ls"}),
            "tool_input",
        ),
        (
            "/v1/hooks/claude-code",
            json!({"hook_event_name": "SessionStart", "session_id": "s"}),
            "hook_event_name",
        ),
        ("/v1/hooks/claude-code", json!([1, 2]), "body"),
        ("/v1/hooks/cursor", pre("s", "/a"), "agent"),
    ];
    for (path, body, at) in cases {
        let answer = server.post(path, Some(AGENT_A), &body);
        assert_eq!(
            (answer.status, answer.refused()),
            (400, "malformed".to_owned()),
            "{at}: {}",
            answer.text
        );
        let issues = answer.json()["error"]["issues"].clone();
        assert!(
            issues.as_array().unwrap().iter().any(|i| i["path"] == at),
            "expected an issue at {at}: {issues}"
        );
    }
    let task = server.get("/v1/tasks/s", Some(AGENT_A)).json();
    assert_eq!(task["task_used"], 0, "{task}");
    let unauthenticated = server.post("/v1/hooks/claude-code", None, &pre("s", "/a"));
    assert_eq!(unauthenticated.status, 401, "{}", unauthenticated.text);
}
