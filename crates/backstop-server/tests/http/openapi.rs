//! `GET /openapi.json`: it names every route, and real responses match its schemas.

use serde_json::{Value, json};

use crate::support::{AGENT_A, Answer, OPERATOR, Server, start, vendor};

/// Every route the router serves.
const ROUTES: [(&str, &str); 24] = [
    ("post", "/v1/classify"),
    ("post", "/v1/recover"),
    ("post", "/v1/outcomes"),
    ("get", "/v1/tools"),
    ("post", "/v1/grants"),
    ("get", "/v1/tasks/{task}"),
    ("post", "/v1/tasks/{task}/reset"),
    ("get", "/v1/approaches"),
    ("post", "/v1/hooks/{agent}"),
    ("get", "/v1/jobs"),
    ("get", "/v1/jobs/{job}"),
    ("get", "/v1/jobs/{job}/cases/{id}"),
    ("get", "/v1/reviews"),
    ("post", "/v1/reviews/{id}/resolve"),
    ("get", "/v1/suppressions"),
    ("post", "/v1/suppressions/lift"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/openapi.json"),
    ("get", "/v1/dispatches/{key}"),
    ("post", "/v1/dispatches/{key}/outcome"),
    ("post", "/v1/webhooks/{source}"),
    // Only packs with a [dispatch] table have a dispatch route.
    ("post", "/v1/jobs/po-acknowledgement/dispatches"),
];

fn document(server: &Server) -> Value {
    let answer = server.get("/openapi.json", None);
    assert_eq!(answer.status, 200);
    answer.json()
}

#[test]
fn the_document_names_every_route_and_needs_no_key() {
    let server = start();
    let doc = document(&server);
    assert_eq!(doc["openapi"], "3.1.0");
    let mut listed: Vec<(String, String)> = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            listed.push((method.clone(), path.clone()));
        }
    }
    listed.sort();
    // The decision route is listed once per loaded pack, with the pack's exact request.
    let per_job = [
        "company-classification",
        "po-acknowledgement",
        "vendor-risk",
    ]
    .map(|job| ("post".to_owned(), format!("/v1/jobs/{job}/decisions")));
    let mut expected: Vec<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .chain(per_job)
        .collect();
    expected.sort();
    assert_eq!(listed, expected);
    assert_eq!(
        doc["components"]["securitySchemes"]["key"]["scheme"],
        "bearer"
    );
    // Every $ref points at a schema that exists.
    let text = doc.to_string();
    for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = piece.split('"').next().unwrap();
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "{name} is missing"
        );
    }
}

/// Checks `answer` against the schema the document gives for `method path` and its status.
fn matches(doc: &Value, method: &str, path: &str, answer: &Answer) {
    let errors = schema_errors(doc, method, path, answer);
    assert!(
        errors.is_empty(),
        "{method} {path} {}: {errors:?}\n{}",
        answer.status,
        answer.text
    );
}

/// What the schema for `method path` and the answer's status finds wrong with its body.
fn schema_errors(doc: &Value, method: &str, path: &str, answer: &Answer) -> Vec<String> {
    let responses = &doc["paths"][path][method]["responses"];
    let status = answer.status.to_string();
    let response = responses
        .get(&status)
        .or_else(|| responses.get(format!("{}XX", &status[..1])))
        .unwrap_or_else(|| panic!("{method} {path}: no response {status} in the document"));
    let schema = &response["content"]["application/json"]["schema"];
    assert!(
        !schema.is_null(),
        "{method} {path} {status}: no JSON schema"
    );
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "allOf": [schema],
        "components": doc["components"],
    });
    let validator = jsonschema::validator_for(&root).unwrap();
    let body = answer.json();
    validator
        .iter_errors(&body)
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn a_body_unlike_its_schema_is_caught() {
    let server = start();
    let doc = document(&server);
    let wrong = Answer {
        status: 200,
        retry_after: None,
        content_type: "application/json".to_owned(),
        replayed: false,
        text: json!({"status": "maybe", "attempts": {"used": -1}}).to_string(),
    };
    let decisions = "/v1/jobs/vendor-risk/decisions";
    assert!(!schema_errors(&doc, "post", decisions, &wrong).is_empty());
}

#[test]
#[allow(clippy::too_many_lines, reason = "a table: one request per route")]
fn responses_match_their_schemas() {
    let server = start();
    let doc = document(&server);
    let check =
        |method: &str, path: &str, concrete: &str, key: Option<&str>, body: Option<Value>| {
            let answer = match body {
                Some(body) => server.post(concrete, key, &body),
                None => server.get(concrete, key),
            };
            matches(&doc, method, path, &answer);
            answer
        };
    check(
        "post",
        "/v1/classify",
        "/v1/classify",
        Some(AGENT_A),
        Some(json!({"http_status": 429, "headers": {"Retry-After": "3"}})),
    );
    check(
        "post",
        "/v1/classify",
        "/v1/classify",
        Some(AGENT_A),
        Some(json!({"colour": 1})),
    );
    check(
        "post",
        "/v1/classify",
        "/v1/classify",
        None,
        Some(json!({"http_status": 503})),
    );
    let recover =
        json!({"task": "t", "report": {"http_status": 503}, "context": {"tool": "search"}});
    check(
        "post",
        "/v1/recover",
        "/v1/recover",
        Some(AGENT_A),
        Some(recover),
    );
    check(
        "post",
        "/v1/outcomes",
        "/v1/outcomes",
        Some(AGENT_A),
        Some(json!({"tool": "search", "outcome": "failure", "class": "transient"})),
    );
    check("get", "/v1/tools", "/v1/tools", Some(AGENT_A), None);
    check(
        "post",
        "/v1/grants",
        "/v1/grants",
        Some(OPERATOR),
        Some(json!({"task": "t"})),
    );
    check(
        "post",
        "/v1/grants",
        "/v1/grants",
        Some(AGENT_A),
        Some(json!({"task": "t"})),
    );
    // A job no pack has is not listed; its refusal has the shape of any 4xx.
    let decisions = "/v1/jobs/vendor-risk/decisions";
    check(
        "post",
        decisions,
        "/v1/jobs/vendor-risk/decisions",
        Some(AGENT_A),
        Some(vendor("e1", "n.com", "I think so.")),
    );
    check(
        "post",
        decisions,
        "/v1/jobs/vendor-risk/decisions",
        Some(AGENT_A),
        Some(vendor("e2", "p.com", "personal data of customers")),
    );
    check(
        "post",
        decisions,
        "/v1/jobs/vendor-risk/decisions",
        Some(AGENT_A),
        Some(json!({"x": 1})),
    );
    check(
        "post",
        decisions,
        "/v1/jobs/nope/decisions",
        Some(AGENT_A),
        Some(json!({})),
    );
    check(
        "get",
        "/v1/jobs/{job}/cases/{id}",
        "/v1/jobs/vendor-risk/cases/n.com",
        Some(AGENT_A),
        None,
    );
    check(
        "get",
        "/v1/jobs/{job}/cases/{id}",
        "/v1/jobs/vendor-risk/cases/zzz.com",
        Some(AGENT_A),
        None,
    );
    let dispatch_route = "/v1/jobs/po-acknowledgement/dispatches";
    let dispatched = check(
        "post",
        dispatch_route,
        dispatch_route,
        Some(AGENT_A),
        Some(
            json!({"content": "Ask about the order.", "values": {"company": "Northwind"},
            "case": {"fields": {"supplier": "Acme", "po_number": "PO-1"}},
            "recipients": [{"id": "r1", "contact": "+15550100", "time_zone": "UTC"},
                           {"id": "r2", "contact": "+15550101", "time_zone": "Nowhere/Else"}]}),
        ),
    );
    check(
        "post",
        dispatch_route,
        dispatch_route,
        Some(AGENT_A),
        Some(json!({"x": 1})),
    );
    let key = dispatched.json()["answers"][0]["key"]
        .as_str()
        .unwrap()
        .to_owned();
    check(
        "get",
        "/v1/dispatches/{key}",
        &format!("/v1/dispatches/{key}"),
        Some(AGENT_A),
        None,
    );
    check(
        "post",
        "/v1/dispatches/{key}/outcome",
        &format!("/v1/dispatches/{key}/outcome"),
        Some(AGENT_A),
        Some(json!({"outcome": "sent"})),
    );
    check(
        "post",
        "/v1/dispatches/{key}/outcome",
        "/v1/dispatches/dk_nothing/outcome",
        Some(AGENT_A),
        Some(json!({"outcome": "sent"})),
    );
    check(
        "post",
        "/v1/webhooks/{source}",
        "/v1/webhooks/simulator",
        None,
        Some(json!({"event_id": "e", "dispatch_key": key, "status": "completed"})),
    );
    let list = check("get", "/v1/reviews", "/v1/reviews", Some(OPERATOR), None);
    let id = list.json()["reviews"][0]["id"].as_i64().unwrap();
    let resolve = format!("/v1/reviews/{id}/resolve");
    check(
        "post",
        "/v1/reviews/{id}/resolve",
        &resolve,
        Some(OPERATOR),
        Some(json!({"decision": "approve"})),
    );
    check(
        "post",
        "/v1/reviews/{id}/resolve",
        &resolve,
        Some(OPERATOR),
        Some(json!({"decision": "approve"})),
    );
    check(
        "get",
        "/v1/reviews",
        "/v1/reviews?status=all",
        Some(AGENT_A),
        None,
    );
    check("get", "/healthz", "/healthz", None, None);
    check("get", "/readyz", "/readyz", None, None);
}

#[test]
fn the_decision_request_schema_names_the_fields_the_parser_takes() {
    let server = start();
    let doc = document(&server);
    let mut named: Vec<&str> =
        doc["components"]["schemas"]["DecisionRequest_vendor_risk"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
    named.sort_unstable();
    let mut parsed = backstop_core::case::REQUEST_FIELDS.to_vec();
    parsed.sort_unstable();
    assert_eq!(named, parsed);
}
