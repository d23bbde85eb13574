//! Job briefs: `GET /v1/jobs` and `GET /v1/jobs/{job}` tell an agent what a job asks.

use serde_json::json;

use crate::support::{AGENT_A, start, vendor};

#[test]
fn the_jobs_are_listed_for_any_caller_with_a_key() {
    let server = start();
    let answer = server.get("/v1/jobs", Some(AGENT_A));
    assert_eq!(answer.status, 200, "{}", answer.text);
    let jobs = answer.json()["jobs"].as_array().unwrap().clone();
    let names: Vec<&str> = jobs.iter().map(|j| j["job"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "company-classification",
            "po-acknowledgement",
            "vendor-risk"
        ]
    );
    let vendor_risk = &jobs[2];
    assert_eq!(vendor_risk["title"], "Vendor data-access review");
    assert_eq!(vendor_risk["questions"], 2);
    assert_eq!(vendor_risk["dispatch"], false);
    assert_eq!(jobs[1]["dispatch"], true);
    assert_eq!(server.get("/v1/jobs", None).refused(), "unauthorized");
}

#[test]
fn a_brief_has_what_a_first_request_needs_and_no_judging_patterns() {
    let server = start();
    let answer = server.get("/v1/jobs/vendor-risk", Some(AGENT_A));
    assert_eq!(answer.status, 200, "{}", answer.text);
    let brief = answer.json();
    assert_eq!(brief["questions"][0]["key"], "data_access");
    assert_eq!(
        brief["questions"][0]["answers"][1],
        json!({"value": "pii", "means": "The vendor handles personal data about customers."})
    );
    assert_eq!(
        brief["related"],
        json!([{"kind": "counterparty", "required": true}])
    );
    assert_eq!(
        brief["attempts"],
        json!({"max": 3, "window": "24h", "escalate": "vendor-desk"})
    );
    assert_eq!(brief["escalations"][1]["to"], "Privacy team");
    assert!(brief["escalations"][1]["nextStep"].is_string());
    assert!(!answer.text.contains("indicators"));
    assert!(!answer.text.contains("does not (use|engage)"));
    // The request schema in the brief is the one the service checks: a request built from
    // it is taken.
    let schema = &brief["request_schema"];
    assert_eq!(schema["required"], json!(["execution_id", "case"]));
    let decided = server.post(
        "/v1/jobs/vendor-risk/decisions",
        Some(AGENT_A),
        &vendor(
            "brief-1",
            "northwind.com",
            "The vendor does not process any customer data.",
        ),
    );
    assert_eq!(decided.status, 200, "{}", decided.text);
}

#[test]
fn an_unknown_job_is_404_naming_the_loaded_ones() {
    let server = start();
    let answer = server.get("/v1/jobs/payroll", Some(AGENT_A));
    assert_eq!(answer.status, 404);
    assert_eq!(answer.refused(), "unknown_job");
    assert!(answer.text.contains("vendor-risk"), "{}", answer.text);
}
