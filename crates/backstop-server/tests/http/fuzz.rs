//! Arbitrary input on every route over a real socket: path ids and query strings of any bytes
//! (escaped, and broken escapes), bodies of any bytes or JSON with any strings (NULs and
//! control characters too). No answer is a 5xx, on `SQLite` and, in the second CI run, on
//! `PostgreSQL` (where a NUL reaching the database was a 500).

use proptest::prelude::*;
use serde_json::json;

use crate::support::{OPERATOR, Server, start_with};

/// Every route, with `{}` where an id goes.
const ROUTES: [(&str, &str); 33] = [
    ("POST", "/v1/classify"),
    ("POST", "/v1/recover"),
    ("POST", "/v1/outcomes"),
    ("POST", "/v1/grants"),
    ("GET", "/v1/tools"),
    ("GET", "/v1/tasks/{}"),
    ("POST", "/v1/tasks/{}/reset"),
    ("GET", "/v1/jobs"),
    ("GET", "/v1/jobs/{}"),
    ("POST", "/v1/jobs/{}/decisions"),
    ("POST", "/v1/jobs/vendor-risk/decisions"),
    ("GET", "/v1/jobs/vendor-risk/cases/{}"),
    ("POST", "/v1/jobs/po-acknowledgement/dispatches"),
    ("GET", "/v1/dispatches/{}"),
    ("POST", "/v1/dispatches/{}/outcome"),
    ("GET", "/v1/reviews"),
    ("POST", "/v1/reviews/{}/resolve"),
    ("GET", "/v1/suppressions"),
    ("POST", "/v1/suppressions/lift"),
    ("POST", "/v1/webhooks/{}"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
    ("GET", "/"),
    ("GET", "/ui"),
    ("GET", "/ui/items/{}"),
    ("POST", "/ui/items/{}/resolve"),
    ("GET", "/ui/fleet"),
    ("GET", "/ui/suppressions"),
    ("POST", "/ui/suppressions/lift"),
    ("POST", "/ui/login"),
    ("POST", "/mcp"),
];

/// Bytes as a path segment or query value: each escaped, or, now and then, as they are with
/// a broken escape.
fn escaped(bytes: &[u8], broken: bool) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(bytes.len() * 3 + 2);
    for b in bytes {
        let _ = write!(text, "%{b:02X}");
    }
    if broken {
        text.push_str("%Z");
    }
    text
}

/// A body: arbitrary bytes, or JSON whose strings are `text` (with its NULs and controls).
fn body(bytes: &[u8], text: &str, shape: u8) -> Vec<u8> {
    let value = match shape % 4 {
        0 => return bytes.to_vec(),
        1 => {
            json!({"task": text, "report": {"http_status": 503, "message": text}, "context": {"tool": text}})
        }
        2 => json!({"decision": text, "note": text, "execution_id": text, "case": {"id": text},
                    "questions": {text: {"excerpts": [{"source": text, "locator": text, "text": text}]}}}),
        _ => json!({"tool": text, "outcome": "failure", "class": text, "event_id": text,
                    "status": text, "result": {text: text}, "recipients": [{"id": text, "contact": text}]}),
    };
    value.to_string().into_bytes()
}

fn send(server: &Server, method: &str, path: &str, body: &[u8]) -> u16 {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let url = server.url(path);
    let auth = format!("Bearer {OPERATOR}");
    let answer = if method == "GET" {
        agent.get(&url).header("Authorization", &auth).call()
    } else {
        agent
            .post(&url)
            .header("Authorization", &auth)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .send(body)
    };
    answer.map_or(0, |response| response.status().as_u16())
}

fn server() -> Server {
    start_with(|c| {
        c.limits.rate_per_second = 1_000_000.0;
        c.limits.burst = 1_000_000.0;
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x0f_0f),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn no_route_answers_arbitrary_input_with_a_5xx(
        id in prop_oneof![
            "[a-z0-9-]{1,12}",
            "[a-z]{0,6}[\\x00-\\x1f\\x7f][a-z]{0,6}",
            "[a-z]{0,6}\\x00[a-z]{0,6}",
            "(?s).{0,16}",
            prop::collection::vec(any::<u8>(), 0..24)
                .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        ],
        query in prop::collection::vec(any::<u8>(), 0..24),
        raw in prop::collection::vec(any::<u8>(), 0..256),
        text in "(?s).{0,40}",
        broken in any::<bool>(),
        shape in any::<u8>(),
    ) {
        thread_local! {
            static SERVER: Server = server();
        }
        SERVER.with(|server| {
            for (method, route) in ROUTES {
                let path = route.replace("{}", &escaped(id.as_bytes(), broken && shape % 2 == 0));
                let path = format!("{path}?q={}", escaped(&query, !broken && shape % 3 == 0));
                let status = send(server, method, &path, &body(&raw, &text, shape));
                prop_assert!(status != 0, "{method} {path}: no answer");
                prop_assert!(status < 500, "{method} {path}: {status}");
            }
            Ok(())
        })?;
    }
}
