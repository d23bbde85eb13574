//! Keys, callers and roles: one caller cannot see or spend another's cases; only operators
//! resolve reviews and grant retries.

use serde_json::json;

use crate::support::{AGENT_A, AGENT_B, OPERATOR, start, start_with, vendor};

#[test]
fn a_missing_or_unknown_key_is_401_in_the_refusal_shape() {
    let server = start();
    for key in [None, Some("not-a-key")] {
        let answer = server.post("/v1/classify", key, &json!({"http_status": 503}));
        assert_eq!(answer.status, 401);
        assert_eq!(answer.refused(), "unauthorized");
    }
    let answer = server.call("GET", "/v1/tools", Some(""), None);
    assert_eq!(answer.status, 401);
}

#[test]
fn health_readiness_and_metrics_need_no_key() {
    let server = start();
    assert_eq!(server.get("/healthz", None).status, 200);
    let ready = server.get("/readyz", None);
    assert_eq!(ready.status, 200);
    assert!(ready.json()["jobs"].as_array().unwrap().len() >= 3);
    assert_eq!(server.get("/metrics", None).status, 200);
}

#[test]
fn the_caller_of_a_case_is_the_key_never_the_body() {
    let server = start();
    let path = "/v1/jobs/vendor-risk/decisions";
    let first = server.post(
        path,
        Some(AGENT_A),
        &vendor("e1", "northwind.com", "Security first."),
    );
    assert_eq!(first.status, 200, "{}", first.text);
    // A body field naming a caller is refused, not obeyed.
    let mut spoof = vendor("e2", "northwind.com", "x");
    spoof["caller"] = json!("agent-b");
    assert_eq!(
        server.post(path, Some(AGENT_A), &spoof).refused(),
        "malformed"
    );
    // B cannot read A's case, and B's attempts are B's own.
    let read = server.get("/v1/jobs/vendor-risk/cases/northwind.com", Some(AGENT_B));
    assert_eq!(
        (read.status, read.refused()),
        (404, "unknown_case".to_owned())
    );
    let own = server.get("/v1/jobs/vendor-risk/cases/Northwind.com", Some(AGENT_A));
    assert_eq!(own.status, 200);
    assert_eq!(own.json()["caller"], "agent-a");
    let b = server.post(
        path,
        Some(AGENT_B),
        &vendor("e1", "northwind.com", "Security first."),
    );
    assert_eq!(
        b.json()["attempts"]["used"],
        1,
        "A's execution id and attempts are not B's"
    );
}

#[test]
fn only_an_operator_resolves_reviews_and_grants_retries() {
    let server = start();
    let held = server.post(
        "/v1/jobs/vendor-risk/decisions",
        Some(AGENT_A),
        &vendor("e1", "h.com", "The processor handles personal data."),
    );
    assert_eq!(held.json()["status"], "held");
    let mine = server.get("/v1/reviews", Some(AGENT_A)).json();
    let id = mine["reviews"][0]["id"].as_i64().unwrap();
    assert!(
        server.get("/v1/reviews", Some(AGENT_B)).json()["reviews"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let peek = server.get("/v1/reviews?caller=agent-a", Some(AGENT_B));
    assert_eq!(peek.status, 400, "an agent cannot list another's items");
    let path = format!("/v1/reviews/{id}/resolve");
    let body = json!({"decision": "approve", "note": "DPA signed"});
    let agent = server.post(&path, Some(AGENT_A), &body);
    assert_eq!(
        (agent.status, agent.refused()),
        (403, "forbidden".to_owned())
    );
    let grant = server.post("/v1/grants", Some(AGENT_A), &json!({"task": "t1"}));
    assert_eq!(
        (grant.status, grant.refused()),
        (403, "forbidden".to_owned())
    );
    // Only a decision the pack has (or a hand-off): anything else is refused with the list.
    let made_up = server.post(
        &path,
        Some(OPERATOR),
        &json!({"decision": "totally_made_up"}),
    );
    assert_eq!(
        (made_up.status, made_up.refused()),
        (409, "decision_not_allowed".to_owned()),
        "{}",
        made_up.text
    );
    let issue = &made_up.json()["error"]["issues"][0];
    assert_eq!(
        (issue["path"].as_str(), issue["code"].as_str()),
        (Some("decision"), Some("unknown_decision"))
    );
    assert!(
        issue["message"]
            .as_str()
            .unwrap()
            .ends_with("approve, reject, handoff"),
        "{issue}"
    );
    // A hand-off says who takes it over: without a note it is refused, as on the page.
    for note in [json!(null), json!("   ")] {
        let bare = server.post(
            &path,
            Some(OPERATOR),
            &json!({"decision": "handoff", "note": note}),
        );
        assert_eq!((bare.status, bare.refused()), (400, "malformed".to_owned()));
        assert_eq!(bare.json()["error"]["issues"][0]["code"], "missing_note");
    }
    let still_open = server.get("/v1/reviews", Some(OPERATOR)).json();
    assert_eq!(
        still_open["reviews"][0]["resolution"],
        serde_json::Value::Null
    );
    let resolved = server.post(&path, Some(OPERATOR), &body);
    assert_eq!(resolved.status, 200, "{}", resolved.text);
    assert_eq!(resolved.json()["resolution"]["by"], "dana");
    let again = server.post(&path, Some(OPERATOR), &body);
    assert_eq!(
        (again.status, again.refused()),
        (409, "already_resolved".to_owned())
    );
    let missing = server.post("/v1/reviews/999/resolve", Some(OPERATOR), &body);
    assert_eq!(
        (missing.status, missing.refused()),
        (404, "unknown_review".to_owned())
    );
    let granted = server.post("/v1/grants", Some(OPERATOR), &json!({"task": "t1"}));
    assert_eq!(granted.status, 200);
}

#[test]
fn with_no_keys_every_request_is_the_local_operator() {
    let server = start_with(|config| config.keys.clear());
    let answer = server.post("/v1/grants", None, &json!({"task": "t1"}));
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json()["by"], "local");
}

#[test]
fn guessing_keys_from_one_address_is_slowed_to_429_and_a_known_key_still_passes() {
    let server = crate::support::start();
    let statuses: Vec<(u16, Option<String>)> = (0..40)
        .map(|i| {
            let answer = server.get("/v1/tools", Some(&format!("guess-{i}")));
            (answer.status, answer.retry_after)
        })
        .collect();
    assert_eq!(statuses[0].0, 401);
    let limited: Vec<&(u16, Option<String>)> = statuses.iter().filter(|(s, _)| *s == 429).collect();
    assert!(
        !limited.is_empty(),
        "40 wrong keys at once all got 401: {statuses:?}"
    );
    assert!(limited.iter().all(|(_, retry)| retry.is_some()));
    let known = server.get("/v1/tools", Some(crate::support::AGENT_A));
    assert_eq!(known.status, 200, "{}", known.text);
}
