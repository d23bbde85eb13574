//! Notifications reach a person: a held case posted, signed, to a real local receiver; a
//! receiver that refuses connections, then answers 503, then comes back gets every
//! notification, each delivered once under its one id; the Slack shape; two servers on one
//! ledger send each notification once; a process that sends none (`backstop mcp`) leaves the
//! ledger's targets as they are.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use backstop_core::notify::{DeliveryPolicy, NotifyFormat, NotifyKind, NotifyStatus};
use backstop_core::recover::breaker::BreakerConfig;
use backstop_core::recover::strategy::{BackoffConfig, BackoffKind};
use backstop_server::AppState;
use backstop_server::catalog::Catalog;
use backstop_server::config::{NotifyConfig, NotifyTarget};
use backstop_server::effects::signature::verify;
use backstop_store::{NotificationFilter, NotificationRecord};
use jiff::SignedDuration;
use serde_json::Value;

use crate::receiver::{Received, Receiver};
use crate::support::{AGENT_A, Server, start_beside, start_with, vendor};

const SECRET: &str = "notify-secret-0123456789";
/// An excerpt that holds a vendor-risk case in `review_privacy`.
const PII: &str = "The processor handles personal data of customers.";
const WAIT: Duration = Duration::from_secs(30);

/// Tries every 50 ms or so, a breaker that opens for 300 ms: a test's "a while".
fn fast() -> DeliveryPolicy {
    DeliveryPolicy {
        backoff: BackoffConfig {
            kind: BackoffKind::EqualJitter,
            base_ms: 40,
            multiplier: 2.0,
            cap_ms: 300,
            hint_jitter_ms: 0,
        },
        breaker: BreakerConfig {
            window: 10,
            failure_rate: 0.5,
            min_calls: 3,
            open_ms: 300,
            half_open_probes: 1,
        },
        max_attempts: 1000,
        lease: SignedDuration::from_secs(30),
        timeout_ms: 2_000,
        poll_ms: 30,
        ..DeliveryPolicy::default()
    }
}

fn target(url: &str, events: &[NotifyKind], format: NotifyFormat) -> NotifyTarget {
    NotifyTarget {
        name: "ops".to_owned(),
        url: url.to_owned(),
        secret: SECRET.to_owned(),
        events: events.to_vec(),
        format,
    }
}

fn server_notifying(target: NotifyTarget) -> Server {
    start_with(|config| {
        config.notify = NotifyConfig {
            targets: vec![target],
            delivery: fast(),
        };
    })
}

/// Holds the case `case` (one held result: `review_opened` and `escalation`).
fn hold(server: &Server, execution: &str, case: &str) {
    let answer = server.post(
        "/v1/jobs/vendor-risk/decisions",
        Some(AGENT_A),
        &vendor(execution, case, PII),
    );
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["status"], "held", "{}", answer.text);
}

fn outbox(server: &Server) -> Vec<NotificationRecord> {
    server
        .state
        .store
        .notifications(&NotificationFilter {
            status: None,
            limit: Some(1000),
        })
        .unwrap()
}

/// Waits until every notification in the ledger is delivered.
fn all_delivered(server: &Server, expected: usize) -> Vec<NotificationRecord> {
    let deadline = Instant::now() + WAIT;
    loop {
        let rows = outbox(server);
        if rows.len() == expected && rows.iter().all(|r| r.status == NotifyStatus::Delivered) {
            return rows;
        }
        assert!(Instant::now() < deadline, "not all delivered: {rows:#?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Checks the request's signature and its id header; the body as JSON.
#[track_caller]
fn signed_body(request: &Received) -> Value {
    let now = jiff::Timestamp::now().as_second();
    let signature = request
        .headers
        .get("backstop-signature")
        .map(String::as_str);
    assert_eq!(
        verify(SECRET, signature, request.body.as_bytes(), now),
        Ok(()),
        "{request:#?}"
    );
    assert_eq!(
        verify(
            "another-secret-0123",
            signature,
            request.body.as_bytes(),
            now
        ),
        Err(backstop_server::effects::signature::SignatureError::Mismatch)
    );
    assert!(request.headers["backstop-event-id"].starts_with("ntf_"));
    serde_json::from_str(&request.body).unwrap()
}

#[test]
fn a_held_case_reaches_the_receiver_signed() {
    let receiver = Receiver::start();
    let server = server_notifying(target(
        &receiver.url(),
        &[NotifyKind::ReviewOpened],
        NotifyFormat::Backstop,
    ));
    hold(&server, "e1", "held.example");
    let requests = receiver.wait_for(WAIT, |r| !r.is_empty());
    let request = &requests[0];
    let body = signed_body(request);
    assert_eq!(request.headers["backstop-event"], "review_opened");
    assert_eq!(request.headers["content-type"], "application/json");
    assert_eq!(body["id"], request.headers["backstop-event-id"].as_str());
    assert_eq!(body["kind"], "review_opened");
    assert_eq!(body["job"], "vendor-risk");
    assert_eq!(body["case_id"], "held.example");
    assert_eq!(body["caller"], "agent-a");
    assert_eq!(body["lane"], "review_privacy");
    assert_eq!(body["escalation"]["id"], "privacy-team");
    assert!(
        body["text"].as_str().unwrap().contains("held.example"),
        "{body}"
    );
    assert!(!request.body.contains(PII), "no excerpt text: {body}");
    let rows = all_delivered(&server, 1);
    assert_eq!(rows[0].id, body["id"].as_str().unwrap());
    assert_eq!(rows[0].attempts, 1);
    let metrics = server.get("/metrics", None).text;
    assert!(
        metrics.contains(r#"backstop_notifications_total{target="ops",outcome="delivered"} 1"#),
        "{metrics}"
    );
    assert_eq!(receiver.received().len(), 1, "sent once");
}

#[test]
fn a_receiver_down_for_a_while_gets_every_notification_once() {
    // Down first: the port refuses connections.
    let down = Receiver::start().down();
    let server = server_notifying(target(
        &down.url(),
        &[NotifyKind::ReviewOpened, NotifyKind::Escalation],
        NotifyFormat::Backstop,
    ));
    for n in 0..4 {
        hold(&server, &format!("e{n}"), &format!("case-{n}.example"));
    }
    // Tried and refused, and still pending, for a while.
    let deadline = Instant::now() + WAIT;
    while !outbox(&server)
        .iter()
        .any(|r| r.attempts >= 2 && r.last_error.is_some())
    {
        assert!(Instant::now() < deadline, "{:#?}", outbox(&server));
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let waiting = outbox(&server);
    assert_eq!(waiting.len(), 8);
    assert!(
        waiting.iter().all(|r| r.status == NotifyStatus::Pending),
        "{waiting:#?}"
    );
    // Back, but failing: the first answers are 503.
    let receiver = down.up();
    receiver.script(&[503, 503, 503, 503, 503]);
    let rows = all_delivered(&server, 8);
    let requests = receiver.received();
    let mut delivered: BTreeMap<String, usize> = BTreeMap::new();
    for request in &requests {
        let body = signed_body(request);
        let id = request.headers["backstop-event-id"].clone();
        assert_eq!(
            body["id"],
            id.as_str(),
            "the body and the header name one event"
        );
        if request.status == 200 {
            *delivered.entry(id).or_default() += 1;
        }
    }
    let ids: BTreeSet<String> = rows.iter().map(|r| r.id.clone()).collect();
    assert_eq!(
        delivered.keys().cloned().collect::<BTreeSet<_>>(),
        ids,
        "every notification arrived"
    );
    assert!(
        delivered.values().all(|n| *n == 1),
        "each once: {delivered:?}"
    );
    let refused: BTreeSet<String> = requests
        .iter()
        .filter(|r| r.status == 503)
        .map(|r| r.headers["backstop-event-id"].clone())
        .collect();
    assert!(
        !refused.is_empty() && refused.is_subset(&ids),
        "retries reuse the id"
    );
    let tries: u32 = rows.iter().map(|r| r.attempts).sum();
    assert!(tries > 8, "more tries than notifications: {rows:#?}");
    assert!(rows.iter().any(|r| r.last_error.is_some()), "{rows:#?}");
    let metrics = server.get("/metrics", None).text;
    assert!(
        metrics.contains(r#"backstop_notifications_total{target="ops",outcome="retried"}"#),
        "{metrics}"
    );
}

#[test]
fn a_slack_target_gets_text_and_blocks() {
    let receiver = Receiver::start();
    let server = server_notifying(target(
        &receiver.url(),
        &[NotifyKind::Escalation],
        NotifyFormat::Slack,
    ));
    hold(&server, "e1", "slack.example");
    let requests = receiver.wait_for(WAIT, |r| !r.is_empty());
    let body = signed_body(&requests[0]);
    let text = body["text"].as_str().unwrap();
    assert!(
        text.starts_with("backstop: vendor-risk case `slack.example` escalates"),
        "{text}"
    );
    assert_eq!(body["blocks"][0]["type"], "section");
    assert_eq!(body["blocks"][1]["type"], "context");
    assert!(body.get("kind").is_none(), "only Slack's fields: {body}");
    all_delivered(&server, 1);
}

#[test]
fn two_servers_on_one_ledger_send_each_notification_once() {
    let receiver = Receiver::start();
    let first = server_notifying(target(
        &receiver.url(),
        &[NotifyKind::ReviewOpened, NotifyKind::Escalation],
        NotifyFormat::Backstop,
    ));
    let second = start_beside(&first);
    for n in 0..6 {
        let server = if n % 2 == 0 { &first } else { &second };
        hold(server, &format!("e{n}"), &format!("fleet-{n}.example"));
    }
    all_delivered(&first, 12);
    // A moment more: a second send of anything would show now.
    std::thread::sleep(Duration::from_millis(300));
    let requests = receiver.received();
    let ids: BTreeSet<&str> = requests
        .iter()
        .map(|r| r.headers["backstop-event-id"].as_str())
        .collect();
    assert_eq!((requests.len(), ids.len()), (12, 12), "{requests:#?}");
}

#[test]
fn a_process_that_sends_no_notifications_keeps_the_ledgers_targets() {
    let receiver = Receiver::start();
    let server = server_notifying(target(
        &receiver.url(),
        &[NotifyKind::ReviewOpened],
        NotifyFormat::Backstop,
    ));
    // `backstop mcp` on the same ledger: no [[notify]] of its own.
    let mut config = server.state.config.clone();
    config.notify = NotifyConfig::default();
    let catalog = Catalog::load(&config).unwrap();
    let guest = AppState::new_keeping_subscriptions(
        config.clone(),
        None,
        catalog,
        std::sync::Arc::clone(&server.state.store),
        jiff::Timestamp::now(),
    )
    .unwrap();
    drop(guest);
    hold(&server, "kept-1", "kept.example");
    assert_eq!(outbox(&server).len(), 1, "the target is still subscribed");

    // A server with no [[notify]] does set the ledger's targets: none.
    let catalog = Catalog::load(&config).unwrap();
    let server_without = AppState::new(
        config,
        None,
        catalog,
        std::sync::Arc::clone(&server.state.store),
        jiff::Timestamp::now(),
    )
    .unwrap();
    drop(server_without);
    hold(&server, "kept-2", "gone.example");
    assert_eq!(outbox(&server).len(), 1, "nothing new is enqueued");
}
