//! `GET /v1/tasks/{task}` (the peek) and `POST /v1/tasks/{task}/reset` over a real socket.

use serde_json::{Value, json};

use crate::support::{AGENT_A, OPERATOR, start, start_beside};

fn next_of<'a>(view: &'a Value, class: &str) -> &'a Value {
    view["next"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["class"] == class)
        .map_or_else(
            || panic!("no next step for {class}: {view}"),
            |n| &n["step"],
        )
}

#[test]
fn a_task_shows_its_counters_tools_and_next_steps_without_spending_any() {
    let server = start();
    let fresh = server.get("/v1/tasks/t1", Some(AGENT_A));
    assert_eq!(fresh.status, 200, "{}", fresh.text);
    let fresh = fresh.json();
    assert_eq!(
        (fresh["task"].as_str(), fresh["caller"].as_str()),
        (Some("t1"), Some("agent-a"))
    );
    assert_eq!(fresh["task_used"], 0);
    assert_eq!(fresh["classes"], json!([]));
    assert_eq!(next_of(&fresh, "transient")["action"], "retry_same");
    assert_eq!(next_of(&fresh, "policy_denied")["action"], "stop");

    let failure =
        json!({"task": "t1", "report": {"http_status": 503}, "context": {"tool": "search"}});
    server.post("/v1/recover", Some(AGENT_A), &failure);
    server.post("/v1/recover", Some(AGENT_A), &failure);
    let view = server.get("/v1/tasks/t1", Some(AGENT_A)).json();
    assert_eq!(
        view["classes"],
        json!([{"class": "transient", "used": 2}]),
        "{view}"
    );
    assert_eq!(view["task_used"], 2);
    assert_eq!(view["tools"][0]["tool"], "search");
    assert_eq!(view["tools"][0]["breaker"]["state"], "closed");
    assert_eq!(next_of(&view, "transient")["attempts"]["class_used"], 3);
    // The peek spent nothing: the next real failure is the third.
    let third = server.post("/v1/recover", Some(AGENT_A), &failure).json();
    assert_eq!(third["attempts"]["class_used"], 3, "{third}");
}

#[test]
fn an_agent_resets_its_counters_but_only_an_operator_lifts_a_stop() {
    let server = start();
    let failure =
        json!({"task": "t2", "report": {"http_status": 503}, "context": {"tool": "search"}});
    server.post("/v1/recover", Some(AGENT_A), &failure);
    let reset = server.post("/v1/tasks/t2/reset", Some(AGENT_A), &json!({}));
    assert_eq!(reset.status, 200, "{}", reset.text);
    assert_eq!(reset.json()["task_used"], 0);
    let after = server.post("/v1/recover", Some(AGENT_A), &failure).json();
    assert_eq!(after["attempts"]["class_used"], 1, "{after}");

    let denied = json!({"task": "t3", "report": {"http_status": 403, "error_code": "content_policy_violation"}});
    server.post("/v1/recover", Some(AGENT_A), &denied);
    let stopped = server.get("/v1/tasks/t3", Some(AGENT_A)).json();
    assert!(
        stopped["stopped_by"]
            .as_str()
            .is_some_and(|s| s.contains("policy denial")),
        "{stopped}"
    );
    let refused = server.post("/v1/tasks/t3/reset", Some(AGENT_A), &json!({}));
    assert_eq!(
        (refused.status, refused.refused()),
        (403, "forbidden".to_owned())
    );
    assert_eq!(
        server.get("/v1/tasks/t3", Some(AGENT_A)).json()["stopped_by"],
        stopped["stopped_by"],
        "a refused reset changes nothing"
    );
    let lifted = server.post(
        "/v1/tasks/t3/reset?caller=agent-a",
        Some(OPERATOR),
        &json!({}),
    );
    assert_eq!(lifted.status, 200, "{}", lifted.text);
    assert_eq!(lifted.json()["stopped_by"], Value::Null);
    let later = json!({"task": "t3", "report": {"http_status": 503}});
    assert_eq!(
        server.post("/v1/recover", Some(AGENT_A), &later).json()["action"],
        "retry_same"
    );
}

#[test]
fn bad_task_names_and_other_callers_tasks_are_refused() {
    let server = start();
    let other = server.get("/v1/tasks/t1?caller=agent-b", Some(AGENT_A));
    assert_eq!(
        (other.status, other.refused()),
        (400, "malformed".to_owned())
    );
    let long = format!("/v1/tasks/{}", "x".repeat(300));
    assert_eq!(server.get(&long, Some(AGENT_A)).status, 400);
    let unknown = server.get("/v1/tasks/t1?who=me", Some(AGENT_A));
    assert_eq!(unknown.status, 400, "{}", unknown.text);
    let anonymous = server.get("/v1/tasks/t1", None);
    assert_eq!(anonymous.status, 401);
}

#[test]
fn a_reset_through_one_server_is_seen_by_the_other() {
    let a = start();
    let b = start_beside(&a);
    let failure =
        json!({"task": "t4", "report": {"http_status": 503}, "context": {"tool": "search"}});
    a.post("/v1/recover", Some(AGENT_A), &failure);
    a.post("/v1/recover", Some(AGENT_A), &failure);
    assert_eq!(b.get("/v1/tasks/t4", Some(AGENT_A)).json()["task_used"], 2);
    assert_eq!(
        b.post("/v1/tasks/t4/reset", Some(AGENT_A), &json!({}))
            .status,
        200
    );
    let next = a.post("/v1/recover", Some(AGENT_A), &failure).json();
    assert_eq!(next["attempts"]["class_used"], 1, "{next}");
}

#[test]
fn an_escalation_opens_one_review_item_and_a_retry_decision_resets_the_task() {
    let server = start();
    let missing =
        json!({"task": "t1", "report": {"http_status": 501}, "context": {"tool": "search"}});
    let steps: Vec<Value> = (0..4)
        .map(|_| server.post("/v1/recover", Some(AGENT_A), &missing).json())
        .collect();
    assert_eq!(steps[2]["action"], "escalate", "{}", steps[2]);
    assert_eq!(steps[3]["action"], "escalate", "{}", steps[3]);

    let open = server.get("/v1/reviews?status=open", Some(OPERATOR)).json();
    let items: Vec<&Value> = open["reviews"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "task")
        .collect();
    assert_eq!(items.len(), 1, "one open item per task: {open}");
    let item = items[0];
    assert_eq!(item["case_id"], "t1");
    assert_eq!(item["caller"], "agent-a");
    assert_eq!(item["task"]["tool"], "search");
    assert_eq!(item["task"]["class"], "capability_missing");
    assert!(
        item["task"]["evidence"]
            .as_array()
            .is_some_and(|e| !e.is_empty()),
        "{item}"
    );
    assert_eq!(item["escalation"], steps[2]["escalation"]["to"]);
    let metrics = server.get("/metrics", None).text;
    assert!(
        metrics.contains("backstop_escalations_total{trigger=\"task\"} 1"),
        "{metrics}"
    );

    let id = item["id"].as_i64().unwrap();
    let resolved = server.post(
        &format!("/v1/reviews/{id}/resolve"),
        Some(OPERATOR),
        &json!({"decision": "retry", "note": "the search index is rebuilt"}),
    );
    assert_eq!(resolved.status, 200, "{}", resolved.text);
    let view = server.get("/v1/tasks/t1", Some(AGENT_A)).json();
    assert_eq!(
        view["task_used"], 0,
        "a retry decision resets the task: {view}"
    );
    let again = server.post("/v1/recover", Some(AGENT_A), &missing).json();
    assert_eq!(again["action"], "fallback_tool", "{again}");
}
