//! The call level: classify, recover, outcomes, tools, grants; state that survives a restart.

use serde_json::json;

use crate::support::{AGENT_A, OPERATOR, start, start_config};

#[test]
fn classify_takes_a_report_as_the_cli_does() {
    let server = start();
    let answer = server.post(
        "/v1/classify",
        Some(AGENT_A),
        &json!({"http_status": 429, "headers": {"Retry-After": "2"}}),
    );
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json()["class"], "rate_limited");
    assert_eq!(answer.json()["retry_after_ms"], 2000);
    let bad = server.post(
        "/v1/classify",
        Some(AGENT_A),
        &json!({"http_status": "x", "colour": 1}),
    );
    assert_eq!((bad.status, bad.refused()), (400, "malformed".to_owned()));
}

#[test]
fn a_report_with_a_schema_is_judged_on_both_routes_and_a_bad_schema_refused() {
    let server = start();
    let report = json!({"output": {"id": 7}, "schema": {"properties": {"id": {"type": "string"}}}});
    let classified = server.post("/v1/classify", Some(AGENT_A), &report);
    assert_eq!(classified.status, 200, "{}", classified.text);
    assert_eq!(classified.json()["class"], "schema_violation");
    let recovered = server.post(
        "/v1/recover",
        Some(AGENT_A),
        &json!({"task": "schema-1", "report": report}),
    );
    assert_eq!(recovered.status, 200, "{}", recovered.text);
    assert_eq!(recovered.json()["class"], "schema_violation");
    // A pattern only a backtracking engine reads makes the schema unusable: 400, at its path.
    let bad = json!({"output": "x", "schema": {"type": "string", "pattern": "(?<=a)b"}});
    let refused = server.post("/v1/classify", Some(AGENT_A), &bad);
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert_eq!(refused.json()["error"]["issues"][0]["code"], "bad_schema");
    let refused = server.post(
        "/v1/recover",
        Some(AGENT_A),
        &json!({"task": "schema-2", "report": bad}),
    );
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert_eq!(
        refused.json()["error"]["issues"][0]["path"],
        "report.schema"
    );
}

#[test]
fn a_schema_that_refers_to_another_document_is_refused_and_counts_nothing() {
    let server = start();
    for reference in ["file:///etc/hostname", "https://example.com/schema.json"] {
        let report = json!({"output": 1, "schema": {"$ref": reference}});
        let refused = server.post(
            "/v1/recover",
            Some(AGENT_A),
            &json!({"task": "schema-ref", "report": report}),
        );
        assert_eq!(refused.status, 400, "{}", refused.text);
        let issue = &refused.json()["error"]["issues"][0];
        assert_eq!(
            (issue["path"].as_str(), issue["code"].as_str()),
            (Some("report.schema"), Some("bad_schema")),
            "{issue}"
        );
        assert!(
            issue["message"]
                .as_str()
                .is_some_and(|m| m.contains("must stand alone")),
            "{issue}"
        );
    }
    let task = server.get("/v1/tasks/schema-ref", Some(AGENT_A)).json();
    assert_eq!(task["task_used"], 0, "a refused report counted: {task}");
}

#[test]
fn recover_counts_per_task_and_outcomes_feed_the_tools() {
    let server = start();
    let body = json!({"task": "t1", "report": {"http_status": 503}, "context": {"tool": "search"}});
    let first = server.post("/v1/recover", Some(AGENT_A), &body).json();
    assert_eq!(first["action"], "retry_same");
    assert_eq!(first["attempts"]["class_used"], 1);
    let second = server.post("/v1/recover", Some(AGENT_A), &body).json();
    assert_eq!(second["attempts"]["class_used"], 2);
    let outcome = server.post(
        "/v1/outcomes",
        Some(AGENT_A),
        &json!({"tool": "search", "outcome": "success"}),
    );
    assert_eq!(outcome.status, 200);
    let tools = server.get("/v1/tools", Some(AGENT_A)).json();
    assert_eq!(tools["tools"][0]["tool"], "search");
    assert_eq!(tools["tools"][0]["breaker"]["state"], "closed");
    let bad = server.post(
        "/v1/recover",
        Some(AGENT_A),
        &json!({"task": "", "report": {}}),
    );
    assert_eq!(bad.refused(), "malformed");
    let unknown = server.post(
        "/v1/outcomes",
        Some(AGENT_A),
        &json!({"tool": "search", "outcome": "maybe"}),
    );
    assert_eq!(unknown.refused(), "malformed");
}

#[test]
fn a_policy_denial_stops_the_task_over_http() {
    let server = start();
    let denied = json!({"task": "t2", "report": {"http_status": 403, "error_code": "content_policy_violation"}});
    let step = server.post("/v1/recover", Some(AGENT_A), &denied).json();
    assert_eq!(step["class"], "policy_denied");
    assert_eq!(step["action"], "stop");
    let later = json!({"task": "t2", "report": {"http_status": 503}});
    assert_eq!(
        server.post("/v1/recover", Some(AGENT_A), &later).json()["action"],
        "stop"
    );
}

#[test]
fn task_state_survives_a_restart() {
    let server = start();
    let body = json!({"task": "t1", "report": {"http_status": 503}, "context": {"tool": "search"}});
    server.post("/v1/recover", Some(AGENT_A), &body);
    server.post("/v1/recover", Some(AGENT_A), &body);
    server.post("/v1/grants", Some(OPERATOR), &json!({"task": "t9"}));
    // A second server on the same ledger, the first one still holding its files.
    let dir = crate::support::packs_dir();
    let mut config = backstop_server::Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        db: backstop_store::Location::Sqlite(server.dir.join("ledger.db")),
        packs: vec![dir],
        ..backstop_server::Config::default()
    };
    config.keys = vec![crate::support::key(
        AGENT_A,
        "agent-a",
        backstop_server::config::Role::Agent,
    )];
    let scratch =
        std::env::temp_dir().join(format!("backstop-http-restart-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let restarted = start_config(config, None, scratch);
    let third = restarted.post("/v1/recover", Some(AGENT_A), &body).json();
    assert_eq!(third["attempts"]["class_used"], 3, "{third}");
}

#[test]
fn a_task_is_the_callers_own() {
    let server = start();
    let denied = json!({"task": "build-1", "report": {"http_status": 403, "error_code": "content_policy_violation"}});
    let step = server
        .post("/v1/recover", Some(crate::support::AGENT_B), &denied)
        .json();
    assert_eq!(step["action"], "stop");
    let mine = json!({"task": "build-1", "report": {"http_status": 503}});
    let step = server.post("/v1/recover", Some(AGENT_A), &mine).json();
    assert_eq!(
        step["action"], "retry_same",
        "B's denial stopped B's task, not A's: {step}"
    );
    assert_eq!(step["attempts"]["task_used"], 1);
}

#[test]
fn a_tool_name_cannot_carry_control_characters() {
    let server = start();
    let body =
        json!({"task": "t", "report": {"http_status": 503}, "context": {"tool": "x\"} 1\nfake 9"}});
    let answer = server.post("/v1/recover", Some(AGENT_A), &body);
    assert_eq!(
        (answer.status, answer.refused()),
        (400, "malformed".to_owned())
    );
}

#[test]
fn a_task_success_resets_its_counters_survives_a_restart_and_lifts_no_stop() {
    let server = start();
    let failure =
        json!({"task": "t1", "report": {"http_status": 503}, "context": {"tool": "search"}});
    server.post("/v1/recover", Some(AGENT_A), &failure);
    let second = server.post("/v1/recover", Some(AGENT_A), &failure).json();
    assert_eq!(second["attempts"]["class_used"], 2, "{second}");
    let success = json!({"tool": "search", "outcome": "success", "task": "t1"});
    let answer = server.post("/v1/outcomes", Some(AGENT_A), &success);
    assert_eq!(answer.status, 200, "{}", answer.text);
    let after = server.post("/v1/recover", Some(AGENT_A), &failure).json();
    assert_eq!(after["attempts"]["class_used"], 1, "{after}");

    // A policy denial's stop stays after a success.
    let denied = json!({"task": "t2", "report": {"http_status": 403, "error_code": "content_policy_violation"}});
    server.post("/v1/recover", Some(AGENT_A), &denied);
    let success_t2 = json!({"tool": "search", "outcome": "success", "task": "t2"});
    server.post("/v1/outcomes", Some(AGENT_A), &success_t2);
    let later = json!({"task": "t2", "report": {"http_status": 503}});
    assert_eq!(
        server.post("/v1/recover", Some(AGENT_A), &later).json()["action"],
        "stop"
    );

    // A task's failure belongs to /v1/recover; a bad task name is refused. Nothing counted.
    let failed = json!({"tool": "search", "outcome": "failure", "task": "t1"});
    let refused = server.post("/v1/outcomes", Some(AGENT_A), &failed);
    assert_eq!(
        (refused.status, refused.refused()),
        (400, "malformed".to_owned())
    );
    let bad = json!({"tool": "search", "outcome": "success", "task": ""});
    assert_eq!(server.post("/v1/outcomes", Some(AGENT_A), &bad).status, 400);

    // The reset is journaled: a second server on the same ledger counts from it.
    let restarted = crate::support::start_beside(&server);
    let next = restarted
        .post("/v1/recover", Some(AGENT_A), &failure)
        .json();
    assert_eq!(next["attempts"]["class_used"], 2, "{next}");
}

#[test]
fn a_post_whose_answer_was_lost_is_reconciled_never_resent_and_a_restart_agrees() {
    let server = start();
    let lost = json!({"task": "charge-1", "report": {
        "tool": "payments", "operation": "POST /v1/charges", "exception": "httpx.ReadTimeout"}});
    let first = server.post("/v1/recover", Some(AGENT_A), &lost);
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.json();
    assert_eq!(first["action"], "reconcile", "{first}");
    assert_eq!(first["delay_ms"], 0);
    assert!(
        first["reason"]
            .as_str()
            .unwrap()
            .contains("POST is not idempotent"),
        "{first}"
    );
    // The same timeout on a read is resent.
    let read = json!({"task": "charge-2", "report": {
        "tool": "payments", "operation": "GET /v1/charges/ch_1", "exception": "httpx.ReadTimeout"}});
    assert_eq!(
        server.post("/v1/recover", Some(AGENT_A), &read).json()["action"],
        "retry_same"
    );
    // Under the key it was sent with, the charge is resent with that key.
    let keyed = json!({"task": "charge-3", "report": {
        "tool": "payments", "operation": "POST /v1/charges", "http_status": 502,
        "idempotency_key": "order-7-charge"}});
    let step = server.post("/v1/recover", Some(AGENT_A), &keyed).json();
    assert_eq!(step["action"], "retry_same", "{step}");
    assert!(
        step["hint"].as_str().unwrap().contains("`order-7-charge`"),
        "{step}"
    );
    // A second server on the ledger rebuilds the task from the journal: the next answer
    // counts on from the first, and is still no resend.
    let restarted = crate::support::start_beside(&server);
    let second = restarted.post("/v1/recover", Some(AGENT_A), &lost).json();
    assert_ne!(second["action"], "retry_same", "{second}");
    assert_eq!(second["attempts"]["task_used"], 2, "{second}");
}

#[test]
fn a_bad_idempotency_key_is_refused_with_its_path_and_counts_nothing() {
    let server = start();
    for (body, path) in [
        (
            json!({"task": "k1", "report": {"http_status": 502, "idempotency_key": "x".repeat(201)}}),
            "report.idempotency_key",
        ),
        (
            json!({"task": "k1", "report": {"http_status": 502}, "context": {"idempotency_key": "a\u{7}b"}}),
            "context.idempotency_key",
        ),
        (
            json!({"task": "k1", "report": {"http_status": 502, "idempotent": "yes"}}),
            "report.idempotent",
        ),
    ] {
        let refused = server.post("/v1/recover", Some(AGENT_A), &body);
        assert_eq!(refused.status, 400, "{}", refused.text);
        assert_eq!(
            refused.json()["error"]["issues"][0]["path"],
            path,
            "{}",
            refused.text
        );
    }
    let fresh = server
        .post(
            "/v1/recover",
            Some(AGENT_A),
            &json!({"task": "k1", "report": {"http_status": 502}}),
        )
        .json();
    assert_eq!(fresh["attempts"]["task_used"], 1, "{fresh}");
}
