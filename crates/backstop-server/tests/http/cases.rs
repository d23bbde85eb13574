//! `POST /v1/jobs/{job}/decisions` and `GET /v1/jobs/{job}/cases/{id}` with their refusals.

use serde_json::json;

use crate::support::{AGENT_A, start, vendor};

const PATH: &str = "/v1/jobs/vendor-risk/decisions";

#[test]
fn an_attempt_returns_the_result_of_packs_md() {
    let server = start();
    let answer = server.post(
        PATH,
        Some(AGENT_A),
        &vendor("e1", "Northwind.com", "I think so."),
    );
    assert_eq!(answer.status, 200);
    assert!(answer.content_type.starts_with("application/json"));
    let result = answer.json();
    for field in [
        "status",
        "outcome",
        "nextStep",
        "case",
        "attempts",
        "answers",
        "retry",
        "missing",
        "escalation",
    ] {
        assert!(result.get(field).is_some(), "{field} missing from {result}");
    }
    assert_eq!(result["case"]["id"], "northwind.com");
    assert_eq!(
        result["attempts"],
        json!({"used": 1, "remaining": 2, "next": "retry"})
    );
    assert_eq!(
        result["retry"]["data_access"]["notUsed"][0]["why"],
        "hedged"
    );
}

#[test]
fn a_resend_returns_the_stored_bytes() {
    let server = start();
    let body = vendor("e1", "r.com", "Security first.");
    let first = server.post(PATH, Some(AGENT_A), &body);
    let again = server.post(PATH, Some(AGENT_A), &body);
    assert_eq!(first.text, again.text);
    assert_eq!(again.status, 200);
    let case = server
        .get("/v1/jobs/vendor-risk/cases/r.com", Some(AGENT_A))
        .json();
    assert_eq!(case["attempts"].as_array().unwrap().len(), 1);
    let other = server.post(PATH, Some(AGENT_A), &vendor("e1", "r.com", "Other words."));
    assert_eq!(
        (other.status, other.refused()),
        (409, "execution_id_conflict".to_owned())
    );
}

#[test]
fn every_case_refusal_has_its_status() {
    let server = start();
    let unknown_job = server.post(
        "/v1/jobs/nope/decisions",
        Some(AGENT_A),
        &vendor("e", "x.com", "t"),
    );
    assert_eq!(
        (unknown_job.status, unknown_job.refused()),
        (404, "unknown_job".to_owned())
    );
    let mut bad = vendor("e1", "m.com", &"x".repeat(1001));
    bad.as_object_mut().unwrap().remove("execution_id");
    bad["extra"] = json!(1);
    let malformed = server.post(PATH, Some(AGENT_A), &bad);
    assert_eq!(
        (malformed.status, malformed.refused()),
        (400, "malformed".to_owned())
    );
    assert_eq!(
        malformed.json()["error"]["issues"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let not_found = server.get("/v1/jobs/vendor-risk/cases/m.com", Some(AGENT_A));
    assert_eq!(not_found.status, 404, "a malformed request leaves no case");
    // Past the limit: the refusal carries the escalation.
    for (i, text) in ["a", "b", "c", "d"].iter().enumerate() {
        server.post(
            PATH,
            Some(AGENT_A),
            &vendor(&format!("l{i}"), "lim.com", text),
        );
    }
    let past = server.post(PATH, Some(AGENT_A), &vendor("l9", "lim.com", "e"));
    assert_eq!(
        (past.status, past.refused()),
        (409, "attempt_limit_reached".to_owned())
    );
    assert_eq!(
        past.json()["error"]["escalation"]["trigger"],
        "attempt_limit"
    );
    // A held case is in review.
    server.post(
        PATH,
        Some(AGENT_A),
        &vendor("h1", "held.com", "personal data of customers"),
    );
    let in_review = server.post(PATH, Some(AGENT_A), &vendor("h2", "held.com", "more"));
    assert_eq!(
        (in_review.status, in_review.refused()),
        (409, "case_in_review".to_owned())
    );
    // An issued id nobody issued.
    let issued = server.post(
        "/v1/jobs/company-classification/decisions",
        Some(AGENT_A),
        &json!({"execution_id": "c1", "case": {"id": "i-nope"}}),
    );
    assert_eq!(
        (issued.status, issued.refused()),
        (404, "unknown_case".to_owned())
    );
}

#[test]
fn bad_json_unknown_routes_and_methods_are_refusals() {
    let server = start();
    let syntax = server.call("POST", PATH, Some(AGENT_A), Some("{\"execution_id\": "));
    assert_eq!(
        (syntax.status, syntax.refused()),
        (400, "malformed".to_owned())
    );
    assert_eq!(syntax.json()["error"]["issues"][0]["code"], "bad_json");
    let array = server.call("POST", PATH, Some(AGENT_A), Some("[]"));
    assert_eq!(array.refused(), "malformed");
    let bad_path = server.call("POST", "/v1/jobs/%FF/decisions", Some(AGENT_A), Some("{}"));
    assert_eq!(
        (bad_path.status, bad_path.refused()),
        (400, "malformed".to_owned())
    );
    let route = server.get("/v2/nothing", Some(AGENT_A));
    assert_eq!(
        (route.status, route.refused()),
        (404, "not_found".to_owned())
    );
    let method = server.get(PATH, Some(AGENT_A));
    assert_eq!(
        (method.status, method.refused()),
        (405, "method_not_allowed".to_owned())
    );
}

#[test]
fn nul_and_control_characters_are_refused_with_their_path_on_every_backend() {
    let server = start();
    let mut nul_id = vendor("e-1", "northwind.com", "Security first.");
    nul_id["execution_id"] = json!("e\u{0}1");
    let mut bell_id = vendor("e-2", "northwind.com", "Security first.");
    bell_id["execution_id"] = json!("e\u{7}2");
    let nul_text = vendor("e-3", "northwind.com", "Security\u{0} first.");
    for (body, path) in [
        (nul_id, "execution_id"),
        (bell_id, "execution_id"),
        (nul_text, "questions.data_access.excerpts[0].text"),
    ] {
        crate::support::refused_at(&server, AGENT_A, PATH, &body, path, "bad_characters");
    }
    let case = server.get("/v1/jobs/vendor-risk/cases/northwind.com", Some(AGENT_A));
    assert_eq!(case.status, 404, "nothing was stored: {}", case.text);
}

/// An issued case is reused only for exactly the same text: the same words in other case or
/// spacing open a new case.
#[test]
fn an_issued_case_is_reused_only_for_exactly_the_same_text() {
    let server = start();
    let said = |execution: &str, text: &str| {
        let body = json!({"execution_id": execution, "questions": {"business_model": {"excerpts": [
            {"source": "site", "locator": "/about", "text": text}]}}});
        let answer = server.post(
            "/v1/jobs/company-classification/decisions",
            Some(AGENT_A),
            &body,
        );
        assert_eq!(answer.status, 200, "{}", answer.text);
        answer.json()["case"]["id"].as_str().unwrap().to_owned()
    };
    let first = said("e1", "We sell SaaS subscriptions to retailers.");
    assert_eq!(
        said("e2", "We sell SaaS subscriptions to retailers."),
        first
    );
    assert_ne!(
        said("e3", "WE SELL  SaaS subscriptions to retailers."),
        first
    );
}
