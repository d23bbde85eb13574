//! Failed approaches over HTTP: a task that spends a class's attempts on a tool and operation
//! is remembered for its caller; the caller's next task starts by changing approach; the
//! record is listed, shown with the task, kept across a restart, and forgotten when the tool
//! succeeds.

use serde_json::{Value, json};

use crate::support::{AGENT_A, AGENT_B, OPERATOR, start, start_beside};

fn failure(task: &str) -> Value {
    json!({"task": task, "report": {"http_status": 503, "tool": "search", "operation": "GET /v1/search"}})
}

#[test]
fn a_spent_approach_is_remembered_for_its_callers_next_task() {
    let server = start();
    let mut spent = 0;
    loop {
        let step = server
            .post("/v1/recover", Some(AGENT_A), &failure("t1"))
            .json();
        spent += 1;
        if step["action"] == "escalate" {
            assert!(step.get("failed_approach").is_none(), "{step}");
            break;
        }
        assert!(spent < 10, "no hand-off: {step}");
    }

    // The caller's next task on the same tool and operation: change approach first.
    let next = server
        .post("/v1/recover", Some(AGENT_A), &failure("t2"))
        .json();
    assert_eq!(next["action"], "change_approach", "{next}");
    assert_eq!(next["failed_approach"]["failures"], spent, "{next}");
    assert_eq!(next["failed_approach"]["class"], "transient");
    assert!(
        next["hint"]
            .as_str()
            .unwrap()
            .starts_with("This approach failed before"),
        "{next}"
    );
    // Another caller's task is not told.
    let other = server
        .post("/v1/recover", Some(AGENT_B), &failure("t2"))
        .json();
    assert_eq!(other["action"], "retry_same", "{other}");

    // Listed: the agent sees its own, another agent none, an operator every caller's.
    let own = server.get("/v1/approaches", Some(AGENT_A));
    assert_eq!(own.status, 200, "{}", own.text);
    let own = own.json();
    assert_eq!(own["approaches"].as_array().unwrap().len(), 1, "{own}");
    assert_eq!(own["approaches"][0]["caller"], "agent-a");
    assert_eq!(own["approaches"][0]["tool"], "search");
    assert_eq!(own["approaches"][0]["operation"], "GET /v1/search");
    let b = server.get("/v1/approaches", Some(AGENT_B)).json();
    assert_eq!(b["approaches"], json!([]), "{b}");
    let all = server.get("/v1/approaches", Some(OPERATOR)).json();
    assert_eq!(all["approaches"].as_array().unwrap().len(), 1, "{all}");
    let refused = server.get("/v1/approaches?caller=agent-a", Some(AGENT_B));
    assert_eq!(
        (refused.status, refused.refused()),
        (400, "malformed".to_owned())
    );
    let unknown = server.get("/v1/approaches?colour=red", Some(AGENT_A));
    assert_eq!(unknown.status, 400, "{}", unknown.text);

    // Shown with the task that spent it.
    let task = server.get("/v1/tasks/t1", Some(AGENT_A)).json();
    assert_eq!(task["failed_approaches"][0]["tool"], "search", "{task}");

    // A second server on the ledger keeps it.
    let restarted = start_beside(&server);
    let listed = restarted.get("/v1/approaches", Some(AGENT_A)).json();
    assert_eq!(
        listed["approaches"].as_array().unwrap().len(),
        1,
        "{listed}"
    );

    // The tool works again: forgotten.
    let outcome = json!({"tool": "search", "outcome": "success"});
    assert_eq!(
        server.post("/v1/outcomes", Some(AGENT_A), &outcome).status,
        200
    );
    let after = server.get("/v1/approaches", Some(AGENT_A)).json();
    assert_eq!(after["approaches"], json!([]), "{after}");
}
