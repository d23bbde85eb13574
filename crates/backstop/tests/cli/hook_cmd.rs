//! `backstop hook`: hook documents as Claude Code sends them, answered in the hook protocol
//! (the documented output fields and exit codes), counted on a ledger or a running service.

use serde_json::{Value, json};

use crate::serve_cmd::{Setup, get};
use crate::support::{Run, TempDir, arg, run};

/// Runs `backstop hook --db DB` with `document` on stdin.
fn hook(db: &str, document: &Value) -> Run {
    run(&["hook", "--db", db], document.to_string().as_bytes())
}

fn pre(session: &str, tool: &str, input: &Value) -> Value {
    json!({"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/work",
        "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_01"})
}

fn failure(session: &str, tool: &str, input: &Value, error: &str) -> Value {
    json!({"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/work",
        "hook_event_name": "PostToolUseFailure", "tool_name": tool, "tool_input": input,
        "tool_use_id": "toolu_02", "error": error, "is_interrupt": false})
}

fn post(session: &str, tool: &str, input: &Value, response: &Value) -> Value {
    json!({"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/work",
        "hook_event_name": "PostToolUse", "tool_name": tool, "tool_input": input,
        "tool_response": response, "tool_use_id": "toolu_03"})
}

/// The answer printed: one JSON object, exit 0, nothing on stderr.
#[track_caller]
fn answered(run: &Run) -> Value {
    run.expect_code(0);
    assert_eq!(run.stderr, "", "{run:#?}");
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {run:#?}"))
}

/// Nothing to say: exit 0, nothing printed.
#[track_caller]
fn silent(run: &Run) {
    run.expect_code(0);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str()),
        ("", ""),
        "{run:#?}"
    );
}

#[test]
fn a_failing_call_is_counted_and_once_its_attempts_are_spent_the_same_call_is_denied() {
    let dir = TempDir::new("hook-spent");
    let db = dir.path().join("hooks.db");
    let db = arg(&db);
    let fetch = json!({"url": "https://api.example.com/v1/items", "prompt": "list them"});
    silent(&hook(db, &pre("s-1", "WebFetch", &fetch)));
    let mut lines = Vec::new();
    for _ in 0..10 {
        let answer = answered(&hook(
            db,
            &failure(
                "s-1",
                "WebFetch",
                &fetch,
                "Request failed with status code 503",
            ),
        ));
        let output = &answer["hookSpecificOutput"];
        assert_eq!(output["hookEventName"], "PostToolUseFailure", "{answer}");
        assert!(
            answer.get("decision").is_none(),
            "a failure is only observed: {answer}"
        );
        let line = output["additionalContext"].as_str().unwrap().to_owned();
        assert!(line.starts_with("backstop: "), "{line}");
        lines.push(line.clone());
        if line.starts_with("backstop: escalate") {
            break;
        }
    }
    assert!(lines[0].starts_with("backstop: retry in "), "{lines:?}");
    assert!(
        lines.last().unwrap().starts_with("backstop: escalate"),
        "{lines:?}"
    );

    // The same call, from the next session: denied, with the reason the model reads.
    let denied = answered(&hook(db, &pre("s-2", "WebFetch", &fetch)));
    let output = &denied["hookSpecificOutput"];
    assert_eq!(output["hookEventName"], "PreToolUse");
    assert_eq!(output["permissionDecision"], "deny");
    assert!(
        output["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("this exact call failed before"),
        "{denied}"
    );
    // Another tool goes on.
    silent(&hook(
        db,
        &pre("s-2", "Read", &json!({"file_path": "/work/README.md"})),
    ));
}

#[test]
fn a_policy_denial_stops_the_session_for_every_tool() {
    let dir = TempDir::new("hook-denied");
    let db = dir.path().join("hooks.db");
    let db = arg(&db);
    let write = json!({"file_path": "/etc/hosts", "content": "x"});
    let answer = answered(&hook(
        db,
        &failure(
            "s-9",
            "Write",
            &write,
            "EPERM: operation not permitted, open '/etc/hosts'",
        ),
    ));
    let line = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(line.starts_with("backstop: stop: policy denial"), "{line}");
    let denied = answered(&hook(db, &pre("s-9", "Bash", &json!({"command": "ls"}))));
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        denied["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("stopped by"),
        "{denied}"
    );
    silent(&hook(db, &pre("s-10", "Bash", &json!({"command": "ls"}))));
}

#[test]
fn a_failed_post_tool_use_blocks_when_its_step_ends_and_a_success_resets_the_session() {
    let dir = TempDir::new("hook-post");
    let db_path = dir.path().join("hooks.db");
    let db = arg(&db_path);
    let call = json!({"server": "crm", "query": "accounts"});
    let forbidden = json!({"isError": true, "content": "HTTP 403 Forbidden: the token lacks the crm:read scope"});
    let answer = answered(&hook(
        db,
        &post("s-3", "mcp__crm__search", &call, &forbidden),
    ));
    assert_eq!(answer["decision"], "block", "{answer}");
    let reason = answer["reason"].as_str().unwrap();
    assert!(reason.starts_with("backstop: escalate"), "{reason}");
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    assert_eq!(answer["hookSpecificOutput"]["additionalContext"], reason);

    // A transient failure, then the call works: the session's counters start again.
    let flaky = json!({"isError": true, "content": "upstream timed out"});
    let retry = answered(&hook(db, &post("s-4", "mcp__crm__search", &call, &flaky)));
    assert!(
        retry.get("decision").is_none(),
        "a retry is no block: {retry}"
    );
    silent(&hook(
        db,
        &post(
            "s-4",
            "mcp__crm__search",
            &call,
            &json!({"content": "3 accounts"}),
        ),
    ));
    let task = run(&["task", "show", "s-4", "--db", db, "--json"], b"");
    task.expect_code(0);
    assert_eq!(task.json()["task_used"], 0, "{}", task.stdout);
}

#[test]
fn bad_documents_are_refused_on_stderr_with_exit_1_and_nothing_is_counted() {
    let dir = TempDir::new("hook-bad");
    let db_path = dir.path().join("hooks.db");
    let db = arg(&db_path);
    for (document, path) in [
        ("not json".to_owned(), "stdin"),
        ("[1, 2]".to_owned(), "stdin"),
        (json!({"hook_event_name": "PreToolUse", "tool_name": "Bash"}).to_string(), "session_id"),
        (json!({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash", "tool_input": "ls"}).to_string(), "tool_input"),
        (json!({"hook_event_name": "PostToolUseFailure", "session_id": "s", "tool_name": ""}).to_string(), "tool_name"),
        (json!({"hook_event_name": "PreToolUse", "session_id": "a\u{7}b", "tool_name": "Bash"}).to_string(), "session_id"),
    ] {
        let ran = run(&["hook", "--db", db], document.as_bytes());
        ran.expect_code(1);
        assert_eq!(ran.stdout, "", "{ran:#?}");
        assert!(ran.stderr.contains(&format!("backstop hook: {path}")), "{path}: {ran:#?}");
        assert!(ran.stderr.contains("the call goes on"), "{ran:#?}");
    }
    // An event backstop does not govern: nothing to say.
    silent(&run(
        &["hook", "--db", db],
        json!({"hook_event_name": "Stop", "session_id": "s"})
            .to_string()
            .as_bytes(),
    ));
    assert!(
        !db_path.exists(),
        "no ledger was made for a refused document"
    );
}

#[test]
fn hook_with_a_server_is_counted_by_the_service() {
    let setup = Setup::new("hook-server", &[], "");
    let mut server = setup.start(&[]);
    let base = server.url("");
    let fetch = json!({"url": "https://api.example.com/v1/items"});
    let document = failure(
        "s-5",
        "WebFetch",
        &fetch,
        "Request failed with status code 503",
    );
    let ran = run(
        &["hook", "--server", &base],
        document.to_string().as_bytes(),
    );
    let answer = answered(&ran);
    assert!(
        answer["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .starts_with("backstop: retry"),
        "{answer}"
    );
    let (status, task) = get(&server, "/v1/tasks/s-5", None);
    assert_eq!(status, 200, "{task}");
    assert_eq!(task["task_used"], 1, "{task}");
    server.stop();
    // A service that is not there: exit 1, the call goes on.
    let gone = run(
        &["hook", "--server", &base],
        document.to_string().as_bytes(),
    );
    gone.expect_code(1);
    assert!(gone.stderr.contains("the call goes on"), "{gone:#?}");
}
