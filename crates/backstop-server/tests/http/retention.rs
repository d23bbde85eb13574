//! The purge `serve` runs on its own (`[retention]`): records past retention are deleted on
//! the schedule, what a later decision depends on stays (an open case and its review item, a
//! suppression), and each run is counted in `/metrics`.

use std::time::{Duration, Instant};

use backstop_core::case::parse_request;
use backstop_server::config::Retention;
use jiff::{SignedDuration, Timestamp};
use serde_json::json;

use crate::support::{AGENT_A, start_with};

/// A vendor-risk request whose one excerpt is `text`.
fn vendor(execution: &str, case: &str, text: &str) -> serde_json::Value {
    json!({"execution_id": execution, "case": {"id": case},
           "questions": {"data_access": {"excerpts": [
               {"source": "dpa.pdf", "locator": "§4", "text": text}]}},
           "related": {"counterparty": {"id": "acct-991"}}})
}

#[test]
fn serve_purges_past_retention_on_its_schedule_and_keeps_what_decisions_need() {
    let server = start_with(|config| {
        config.retention = Retention {
            days: Some(1),
            every: Duration::from_millis(200),
        };
    });
    let store = &server.state.store;
    let pack = server.state.catalog().packs["vendor-risk"].clone();
    let old = Timestamp::now() - SignedDuration::from_hours(72);
    let ask = |execution: &str, case: &str, text: &str| {
        let request = parse_request(&pack, "agent-a", &vendor(execution, case, text)).unwrap();
        store.decide(pack.clone(), "agent-a", request, old).unwrap();
    };
    // Left undecided three days ago: past retention. Held three days ago: its review is open.
    ask(
        "e1",
        "undecided.com",
        "I think they may process personal data.",
    );
    ask(
        "e2",
        "held.com",
        "The processor handles personal data of customers.",
    );
    store
        .suppress(
            "agent-a",
            "po-acknowledgement",
            "+15550177",
            None,
            "do_not_call",
            old,
        )
        .unwrap();

    let start = Instant::now();
    let metrics = loop {
        let text = server.get("/metrics", None).text;
        if text.contains("backstop_purges_total 1") || text.contains("backstop_purges_total 2") {
            break text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "no purge ran: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        metrics.contains("backstop_purged_total{kind=\"attempts\"}"),
        "{metrics}"
    );
    assert!(
        store
            .case("agent-a", "vendor-risk", "undecided.com")
            .unwrap()
            .is_none(),
        "the case past retention is purged"
    );
    assert!(
        store
            .case("agent-a", "vendor-risk", "held.com")
            .unwrap()
            .is_some(),
        "the case in review stays"
    );
    // The suppression stays: the contact is still refused.
    let body = json!({
        "content": {"task": "Say you are an AI assistant calling for {{company}}. Ask whether the order was received."},
        "values": {"company": "Northwind Traders"},
        "recipients": [{"id": "r1", "contact": "+15550177",
                        "case": {"fields": {"supplier": "Acme Supply", "po_number": "PO-77"}}}],
    });
    let answer = server.post(
        "/v1/jobs/po-acknowledgement/dispatches",
        Some(AGENT_A),
        &body,
    );
    assert_eq!(
        answer.json()["answers"][0]["answer"],
        "suppressed",
        "{}",
        answer.text
    );
}
