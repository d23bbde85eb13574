//! Body size, rate limits, metrics and reloads.

use std::time::Duration;

use serde_json::json;

use crate::support::{AGENT_A, AGENT_B, start_with, vendor};

#[test]
fn a_body_over_the_limit_is_413_in_the_refusal_shape() {
    let server = start_with(|config| config.limits.body_bytes = 4096);
    let big = json!({"message": "x".repeat(5000)});
    let answer = server.post("/v1/classify", Some(AGENT_A), &big);
    assert_eq!(
        (answer.status, answer.refused()),
        (413, "too_large".to_owned())
    );
    let small = server.post("/v1/classify", Some(AGENT_A), &json!({"http_status": 503}));
    assert_eq!(small.status, 200);
}

#[test]
fn a_caller_over_its_rate_gets_429_with_retry_after_and_others_do_not() {
    let server = start_with(|config| {
        config.limits.rate_per_second = 0.5;
        config.limits.burst = 3.0;
    });
    let body = json!({"http_status": 503});
    for _ in 0..3 {
        assert_eq!(
            server.post("/v1/classify", Some(AGENT_A), &body).status,
            200
        );
    }
    let over = server.post("/v1/classify", Some(AGENT_A), &body);
    assert_eq!(
        (over.status, over.refused()),
        (429, "rate_limited".to_owned())
    );
    let wait: u64 = over.retry_after.unwrap().parse().unwrap();
    assert!((1..=2).contains(&wait), "{wait}");
    assert_eq!(
        server.post("/v1/classify", Some(AGENT_B), &body).status,
        200
    );
}

#[test]
fn a_request_past_the_timeout_is_503_in_the_refusal_shape() {
    use std::io::{Read, Write};
    let server = start_with(|config| config.limits.timeout = Duration::from_millis(200));
    // A client that sends half its body, then stalls.
    let mut stream = std::net::TcpStream::connect(server.address).unwrap();
    let head = format!(
        "POST /v1/classify HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {AGENT_A}\r\n\
         Content-Type: application/json\r\nContent-Length: 40\r\nConnection: close\r\n\r\n\
         {{\"http_status\":"
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("\"code\":\"timeout\""), "{answer}");
}

#[test]
fn metrics_count_requests_decisions_escalations_and_breakers() {
    let server = start_with(|_| {});
    server.post(
        "/v1/jobs/vendor-risk/decisions",
        Some(AGENT_A),
        &vendor("e1", "m.com", "I think so."),
    );
    server.post(
        "/v1/recover",
        Some(AGENT_A),
        &json!({"task": "t", "report": {"http_status": 503}, "context": {"tool": "search"}}),
    );
    let text = server.get("/metrics", None).text;
    for line in [
        "backstop_requests_total{method=\"POST\",route=\"/v1/jobs/{job}/decisions\",status=\"200\"} 1",
        "backstop_decisions_total{status=\"undecided\"} 1",
        "backstop_escalations_total{trigger=\"unresolved\"} 1",
        "backstop_breaker_state{tool=\"search\",state=\"closed\"} 1",
        "backstop_store_seconds_count 1",
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
}

#[test]
fn a_reload_drops_no_request_and_a_bad_one_keeps_the_old_packs() {
    let dir = std::env::temp_dir().join(format!("backstop-http-reload-{}", std::process::id()));
    let packs = dir.join("packs");
    std::fs::create_dir_all(&packs).unwrap();
    let shipped = crate::support::packs_dir();
    std::fs::copy(
        shipped.join("vendor-risk.toml"),
        packs.join("vendor-risk.toml"),
    )
    .unwrap();
    let config_path = dir.join("backstop.toml");
    std::fs::write(&config_path, "packs = [\"packs\"]\n").unwrap();
    let mut config = backstop_server::Config::load(&config_path).unwrap();
    config.db = backstop_store::Location::Sqlite(dir.join("ledger.db"));
    let server = crate::support::start_config(config, Some(config_path), dir.clone());
    std::thread::scope(|scope| {
        let client = scope.spawn(|| {
            let mut failures = Vec::new();
            for i in 0..150 {
                let body = vendor(&format!("r{i}"), &format!("c{i}.com"), "I think so.");
                let answer = server.post("/v1/jobs/vendor-risk/decisions", None, &body);
                if answer.status != 200 {
                    failures.push((i, answer.status, answer.text));
                }
            }
            failures
        });
        for _ in 0..20 {
            assert_eq!(server.state.reload().unwrap(), 1);
            std::thread::sleep(Duration::from_millis(5));
        }
        let failures = client.join().unwrap();
        assert!(failures.is_empty(), "{failures:?}");
    });
    std::fs::copy(
        shipped.join("po-acknowledgement.toml"),
        packs.join("po.toml"),
    )
    .unwrap();
    assert_eq!(server.state.reload().unwrap(), 2);
    std::fs::write(packs.join("broken.toml"), "job = ").unwrap();
    let issues = server.state.reload().unwrap_err();
    assert!(issues[0].path.contains("broken.toml"), "{issues:?}");
    let ready = server.get("/readyz", None).json();
    assert_eq!(ready["jobs"], json!(["po-acknowledgement", "vendor-risk"]));
}

#[test]
fn rule_folders_are_loaded_in_name_order() {
    let dir = std::env::temp_dir().join(format!("backstop-http-rules-{}", std::process::id()));
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(
        rules.join("a.toml"),
        "[[rules]]\nid = \"mine.frob\"\nclass = \"business\"\nwhen = { message = \"frobnicator declined\" }\nreason = \"The frobnicator said no.\"\n",
    )
    .unwrap();
    let server = start_with(|config| config.rules = vec![rules.clone()]);
    let answer = server.post(
        "/v1/classify",
        Some(AGENT_A),
        &json!({"message": "the frobnicator declined"}),
    );
    assert_eq!(answer.json()["rule"], "mine.frob", "{}", answer.text);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_declared_body_over_the_limit_is_refused_at_once_without_waiting_for_it() {
    use std::io::{Read, Write};
    let server = start_with(|config| config.limits.body_bytes = 4096);
    let mut stream = std::net::TcpStream::connect(server.address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    // 5 MiB declared, 64 bytes sent, and the connection left open.
    write!(
        stream,
        "POST /v1/classify HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {AGENT_A}\r\n\
         Content-Type: application/json\r\nContent-Length: 5242880\r\n\r\n{}",
        "{".repeat(64)
    )
    .unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = stream.read(&mut chunk) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..n]);
        if answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.ends_with(b"}") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.starts_with("HTTP/1.1 413"),
        "no 413 within 3 s: {text:?}"
    );
    assert!(text.contains("\"too_large\""), "{text}");
}

#[test]
fn a_query_that_is_not_utf8_once_decoded_is_refused_with_its_path() {
    let server = start_with(|_| {});
    let bad = server.get("/v1/reviews?job=%ff%fe", Some(crate::support::OPERATOR));
    assert_eq!((bad.status, bad.refused()), (400, "malformed".to_owned()));
    assert!(bad.text.contains("\"query\""), "{}", bad.text);
    let good = server.get(
        "/v1/reviews?job=vendor-risk",
        Some(crate::support::OPERATOR),
    );
    assert_eq!(good.status, 200, "{}", good.text);
}
