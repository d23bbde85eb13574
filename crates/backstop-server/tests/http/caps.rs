//! Caps on every string field: an over-long value or a control character in an id is refused
//! with 400, its path and its code, and nothing is stored.

use serde_json::{Value, json};

use crate::support::{AGENT_A, OPERATOR, refused_at, start, vendor};

const DECISIONS: &str = "/v1/jobs/vendor-risk/decisions";

#[test]
fn over_long_decision_fields_are_refused_with_their_path_and_nothing_is_stored() {
    let server = start();
    let long = |n: usize| "x".repeat(n);
    let with = |change: &dyn Fn(&mut Value)| {
        let mut body = vendor("e-1", "northwind.com", "Security first.");
        change(&mut body);
        body
    };
    let excerpt = "questions.data_access.excerpts[0]";
    let cases: Vec<(Value, String, &str)> = vec![
        (
            with(&|b| b["questions"]["data_access"]["excerpts"][0]["source"] = json!(long(2001))),
            format!("{excerpt}.source"),
            "too_long",
        ),
        (
            with(&|b| b["questions"]["data_access"]["excerpts"][0]["locator"] = json!(long(2001))),
            format!("{excerpt}.locator"),
            "too_long",
        ),
        (
            with(&|b| b["related"]["counterparty"]["id"] = json!(long(201))),
            "related.counterparty.id".to_owned(),
            "too_long",
        ),
        (
            with(&|b| b["related"]["counterparty"]["id"] = json!("acct\u{7}991")),
            "related.counterparty.id".to_owned(),
            "bad_characters",
        ),
        (
            with(&|b| b["source_status"] = json!(long(201))),
            "source_status".to_owned(),
            "too_long",
        ),
        (
            with(&|b| b["source_status"] = json!("completed\r\n")),
            "source_status".to_owned(),
            "bad_characters",
        ),
        (
            with(&|b| b["execution_id"] = json!(long(201))),
            "execution_id".to_owned(),
            "too_long",
        ),
        (
            with(&|b| b["case"]["id"] = json!("northwind\u{1b}.com")),
            "case.id".to_owned(),
            "bad_case_id",
        ),
    ];
    for (body, at, code) in &cases {
        refused_at(&server, AGENT_A, DECISIONS, body, at, code);
    }
    let case = server.get("/v1/jobs/vendor-risk/cases/northwind.com", Some(AGENT_A));
    assert_eq!(case.status, 404, "nothing was stored: {}", case.text);
    // At the cap, each is accepted.
    let at_cap = with(&|b| {
        b["questions"]["data_access"]["excerpts"][0]["locator"] = json!(long(2000));
        b["related"]["counterparty"]["id"] = json!(long(200));
    });
    assert_eq!(server.post(DECISIONS, Some(AGENT_A), &at_cap).status, 200);
}

#[test]
fn over_long_recover_context_and_review_fields_are_refused_and_change_nothing() {
    let server = start();
    let failure =
        |context: Value| json!({"task": "t1", "report": {"http_status": 503}, "context": context});
    refused_at(
        &server,
        AGENT_A,
        "/v1/recover",
        &failure(json!({"error": "e".repeat(4001)})),
        "context.error",
        "too_long",
    );
    refused_at(
        &server,
        AGENT_A,
        "/v1/recover",
        &failure(json!({"operation": "o".repeat(2001)})),
        "context.operation",
        "too_long",
    );
    refused_at(
        &server,
        AGENT_A,
        "/v1/recover",
        &json!({"task": "t1", "report": {"http_status": 503, "exception": "E".repeat(201)}}),
        "report.exception",
        "too_long",
    );
    let task = server.get("/v1/tasks/t1", Some(AGENT_A)).json();
    assert_eq!(task["task_used"], 0, "a refused failure counted: {task}");

    let resolve = "/v1/reviews/1/resolve";
    refused_at(
        &server,
        OPERATOR,
        resolve,
        &json!({"decision": "retry", "note": "n".repeat(4001)}),
        "note",
        "too_long",
    );
    refused_at(
        &server,
        OPERATOR,
        resolve,
        &json!({"decision": "d".repeat(201)}),
        "decision",
        "too_long",
    );
    refused_at(
        &server,
        OPERATOR,
        resolve,
        &json!({"decision": "retry\u{0}"}),
        "decision",
        "bad_characters",
    );
    let long_job = format!("/v1/reviews?job={}", "j".repeat(201));
    let listing = server.get(&long_job, Some(OPERATOR));
    assert_eq!(listing.status, 400, "{}", listing.text);
}

#[test]
fn a_missing_field_is_reported_at_its_own_path() {
    let server = start();
    refused_at(
        &server,
        AGENT_A,
        "/v1/recover",
        &json!({"report": {"http_status": 503}}),
        "task",
        "required",
    );
    refused_at(
        &server,
        AGENT_A,
        "/v1/outcomes",
        &json!({"outcome": "success"}),
        "tool",
        "required",
    );
}

#[test]
fn a_grant_for_a_caller_no_key_names_is_refused() {
    let server = start();
    let unknown = server.post(
        "/v1/grants",
        Some(OPERATOR),
        &json!({"task": "t1", "caller": "nobody"}),
    );
    assert_eq!(
        (unknown.status, unknown.refused()),
        (404, "unknown_caller".to_owned()),
        "{}",
        unknown.text
    );
    let granted = server.post(
        "/v1/grants",
        Some(OPERATOR),
        &json!({"task": "t1", "caller": "agent-a"}),
    );
    assert_eq!(granted.status, 200, "{}", granted.text);
}
