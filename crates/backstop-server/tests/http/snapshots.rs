//! Contracts as snapshots: one representative answer of each route family (its status and JSON
//! body, under a description naming the request) and the whole `/openapi.json`, in
//! `snapshots/`.
//!
//! What varies from run to run is filtered out: timestamps (`[time]`), the retry budget's
//! tokens (they refill with the clock: `[tokens]`) and ledger row ids (`[id]`). Delays stay: the
//! recovery's jitter has a fixed seed (`journal::HINTER_SEED`), so a delay that changes is a
//! change of contract. Content-derived keys (`dk_…`, excerpt hashes) stay for the same reason.
//! No body here carries a port, a temporary path, a key or an excerpt's text.

use serde_json::json;

use crate::support::{AGENT_A, Answer, OPERATOR, start, start_with, vendor};

/// Snapshots `answer` (its status and JSON body) as `name`, described by `request`.
#[track_caller]
fn snap(name: &str, request: &str, answer: &Answer) {
    let mut settings = insta::Settings::clone_current();
    settings.set_description(request);
    settings.set_omit_expression(true);
    settings.add_filter(
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
        "[time]",
    );
    settings.add_filter(r#""tokens": [0-9.]+"#, r#""tokens": "[tokens]""#);
    settings.add_filter(r#""id": \d+"#, r#""id": "[id]""#);
    let shown = json!({"status": answer.status, "body": answer.json()});
    settings.bind(|| insta::assert_json_snapshot!(name, shown));
}

#[test]
fn classify() {
    let server = start();
    let report = json!({"http_status": 429, "headers": {"Retry-After": "2"}});
    snap(
        "classify",
        "POST /v1/classify: HTTP 429 with Retry-After: 2",
        &server.post("/v1/classify", Some(AGENT_A), &report),
    );
}

#[test]
fn recover_a_wait_a_policy_stop_and_an_escalation() {
    let server = start();
    let limited = json!({
        "task": "t1",
        "report": {"http_status": 429, "headers": {"Retry-After": "2"}},
        "context": {"tool": "search"},
    });
    snap(
        "recover_wait",
        "POST /v1/recover: task t1's HTTP 429 with Retry-After: 2 from tool search",
        &server.post("/v1/recover", Some(AGENT_A), &limited),
    );
    let denied = json!({"task": "t2", "report": {"http_status": 403, "error_code": "content_policy_violation"}});
    snap(
        "recover_policy_stop",
        "POST /v1/recover: task t2's HTTP 403 content_policy_violation",
        &server.post("/v1/recover", Some(AGENT_A), &denied),
    );
    let missing =
        json!({"task": "t3", "report": {"http_status": 501}, "context": {"tool": "search"}});
    for _ in 0..2 {
        server.post("/v1/recover", Some(AGENT_A), &missing);
    }
    snap(
        "recover_escalate",
        "POST /v1/recover: task t3's third HTTP 501 from tool search",
        &server.post("/v1/recover", Some(AGENT_A), &missing),
    );
}

#[test]
fn a_task_its_tools_an_outcome_and_a_grant() {
    let server = start();
    let failure =
        json!({"task": "t1", "report": {"http_status": 503}, "context": {"tool": "search"}});
    for _ in 0..2 {
        server.post("/v1/recover", Some(AGENT_A), &failure);
    }
    snap(
        "task_show",
        "GET /v1/tasks/t1 after two HTTP 503s from tool search",
        &server.get("/v1/tasks/t1", Some(AGENT_A)),
    );
    let success = json!({"tool": "search", "outcome": "success"});
    snap(
        "outcome",
        "POST /v1/outcomes: a success of tool search after two failures",
        &server.post("/v1/outcomes", Some(AGENT_A), &success),
    );
    snap(
        "tools",
        "GET /v1/tools: tool search after two failures and a success",
        &server.get("/v1/tools", Some(AGENT_A)),
    );
    let grant = json!({"task": "t1", "caller": "agent-a"});
    snap(
        "grant",
        "POST /v1/grants by operator dana: one retry of agent-a's task t1",
        &server.post("/v1/grants", Some(OPERATOR), &grant),
    );
}

#[test]
fn the_jobs_and_a_brief() {
    let server = start();
    snap(
        "jobs_list",
        "GET /v1/jobs with the shipped packs",
        &server.get("/v1/jobs", Some(AGENT_A)),
    );
    snap(
        "job_brief",
        "GET /v1/jobs/vendor-risk",
        &server.get("/v1/jobs/vendor-risk", Some(AGENT_A)),
    );
}

const DECISIONS: &str = "/v1/jobs/vendor-risk/decisions";

#[test]
fn decisions_decided_held_and_undecided_and_a_case() {
    let server = start();
    let mut decided = vendor(
        "e1",
        "northwind.com",
        "The vendor does not process any customer data.",
    );
    decided["questions"]["subprocessors"] = json!({"excerpts": [
        {"source": "dpa.pdf", "locator": "annex 2", "text": "The vendor does not use any subprocessors."}
    ]});
    snap(
        "decision_decided",
        "POST /v1/jobs/vendor-risk/decisions: quotes for no customer data and no subprocessors",
        &server.post(DECISIONS, Some(AGENT_A), &decided),
    );
    let held = vendor("e2", "held.com", "personal data of customers");
    snap(
        "decision_held",
        "POST /v1/jobs/vendor-risk/decisions: a quote about personal data",
        &server.post(DECISIONS, Some(AGENT_A), &held),
    );
    let undecided = vendor("e3", "maybe.com", "I think so.");
    snap(
        "decision_undecided",
        "POST /v1/jobs/vendor-risk/decisions: a hedged quote",
        &server.post(DECISIONS, Some(AGENT_A), &undecided),
    );
    snap(
        "case",
        "GET /v1/jobs/vendor-risk/cases/northwind.com after its decision",
        &server.get("/v1/jobs/vendor-risk/cases/northwind.com", Some(AGENT_A)),
    );
}

#[test]
fn the_reviews_and_a_resolution() {
    let server = start();
    let held = vendor("e1", "held.com", "personal data of customers");
    server.post(DECISIONS, Some(AGENT_A), &held);
    let open = server.get("/v1/reviews?status=open", Some(OPERATOR));
    let id = open.json()["reviews"][0]["id"].as_i64().unwrap();
    snap(
        "reviews_list",
        "GET /v1/reviews?status=open with one held vendor-risk case",
        &open,
    );
    let resolution = json!({"decision": "handoff", "note": "the privacy team takes it"});
    snap(
        "review_resolution",
        "POST /v1/reviews/{id}/resolve by operator dana: a hand-off with a note",
        &server.post(
            &format!("/v1/reviews/{id}/resolve"),
            Some(OPERATOR),
            &resolution,
        ),
    );
}

#[test]
fn a_dispatch_answer() {
    let server = start_with(|config| {
        // The PO pack, live and without its quiet hours (tests run at any hour).
        let backstop_store::Location::Sqlite(ledger) = &config.db else {
            panic!("the suite's ledgers start as files");
        };
        let packs = ledger.with_file_name("packs");
        std::fs::create_dir_all(&packs).unwrap();
        for entry in std::fs::read_dir(crate::support::packs_dir()).unwrap() {
            let path = entry.unwrap().path();
            let mut text = std::fs::read_to_string(&path).unwrap();
            if path.ends_with("po-acknowledgement.toml") {
                text = text
                    .replace("quiet_hours = { start = \"20:00\", end = \"08:00\" }\n", "")
                    .replace("live = false", "live = true");
            }
            std::fs::write(packs.join(path.file_name().unwrap()), text).unwrap();
        }
        config.packs = vec![packs];
        config.effects.live_key = Some("live-key-0123456789abcdef".to_owned());
    });
    let call = json!({
        "content": {"task": "Say you are an AI assistant calling for {{company}}. Ask whether the order was received."},
        "values": {"company": "Northwind Traders"},
        "recipients": [{"id": "r-1", "contact": "+15550101",
                        "case": {"fields": {"supplier": "Acme Supply", "po_number": "PO-1"}}}],
    });
    snap(
        "dispatch",
        "POST /v1/jobs/po-acknowledgement/dispatches: one call, the pack live",
        &server.post(
            "/v1/jobs/po-acknowledgement/dispatches",
            Some(AGENT_A),
            &call,
        ),
    );
}

#[test]
fn refusals_have_one_shape() {
    let server = start();
    let mut bad = vendor("e1", "m.com", "t");
    bad.as_object_mut().unwrap().remove("execution_id");
    bad["extra"] = json!(1);
    snap(
        "refusal_malformed",
        "POST /v1/jobs/vendor-risk/decisions: no execution_id, an unknown field",
        &server.post(DECISIONS, Some(AGENT_A), &bad),
    );
    snap(
        "refusal_unauthorized",
        "GET /v1/jobs with a key nobody holds",
        &server.get("/v1/jobs", Some("key-nobody")),
    );
    snap(
        "refusal_not_found",
        "GET /v2/nothing",
        &server.get("/v2/nothing", Some(AGENT_A)),
    );
    snap(
        "refusal_unknown_case",
        "GET /v1/jobs/vendor-risk/cases/nobody.com",
        &server.get("/v1/jobs/vendor-risk/cases/nobody.com", Some(AGENT_A)),
    );
}

#[test]
fn health_and_readiness() {
    let server = start();
    snap("healthz", "GET /healthz", &server.get("/healthz", None));
    snap(
        "readyz",
        "GET /readyz with the shipped packs",
        &server.get("/readyz", None),
    );
}

#[test]
fn the_openapi_document() {
    let server = start();
    let answer = server.get("/openapi.json", None);
    assert_eq!(answer.status, 200, "{}", answer.text);
    let doc = answer.json();
    insta::with_settings!({
        description => "GET /openapi.json with the shipped packs",
        omit_expression => true,
    }, {
        insta::assert_json_snapshot!("openapi", doc);
    });
}
