//! The edge every route passes, tested on each route family (`/v1`, `/ui`, `/mcp`): writes
//! from another site refused, JSON routes given only JSON, broken escapes and control
//! characters in paths and queries refused, a declared body over the limit refused at once, a
//! slow body cut at the request timeout, one address held to its share of connections.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{Server, start_with, vendor};

/// A service with no keys: every request is the local operator (the case a web page could
/// drive).
fn open() -> Server {
    start_with(|c| c.keys.clear())
}

/// Sends `head` (and `body`) on a fresh connection; the status line's code, read within 5 s.
fn raw(server: &Server, head: &str, body: &[u8]) -> Option<u16> {
    let mut stream = TcpStream::connect(server.address).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&answer)
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
}

/// One write per route family, with `headers` added.
fn writes(server: &Server, headers: &[(&str, &str)], content_type: &str) -> Vec<(String, u16)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let mcp = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let resolve = json!({"decision": "approve"}).to_string();
    let login = "key=x&csrf=y".to_owned();
    [
        ("/v1/reviews/1/resolve", resolve),
        ("/ui/login", login),
        ("/mcp", mcp),
    ]
    .into_iter()
    .map(|(path, body)| {
        let mut request = agent
            .post(&server.url(path))
            .header("Content-Type", content_type)
            .header("Accept", "application/json, text/event-stream");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let status = request.send(body).unwrap().status().as_u16();
        (path.to_owned(), status)
    })
    .collect()
}

/// A held vendor-risk case: review item 1, open.
fn open_item(server: &Server) {
    let held = server.post(
        "/v1/jobs/vendor-risk/decisions",
        None,
        &vendor(
            "e1",
            "acme.example",
            "The processor handles personal data of customers.",
        ),
    );
    assert_eq!(held.json()["status"], "held", "{}", held.text);
    assert!(still_open(server));
}

/// Whether review item 1 is still open.
fn still_open(server: &Server) -> bool {
    let item = server.state.store.review(1).unwrap().expect("item 1");
    item.resolution.is_none()
}

#[test]
fn a_write_from_another_site_is_refused_on_every_route_family() {
    let server = open();
    open_item(&server);
    for headers in [
        vec![("Origin", "https://evil.example")],
        vec![("Origin", "null")],
        vec![
            ("Origin", "https://evil.example"),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        vec![("Sec-Fetch-Site", "cross-site")],
        vec![("Sec-Fetch-Site", "same-site")],
    ] {
        for (path, status) in writes(&server, &headers, "application/json") {
            assert_eq!(status, 403, "{path} {headers:?}");
        }
    }
    assert!(still_open(&server), "nothing was resolved");
    // The service's own page (same origin) and clients that are not browsers pass.
    let own = format!("http://{}", server.address);
    let same = writes(
        &server,
        &[("Origin", &own), ("Sec-Fetch-Site", "same-origin")],
        "application/json",
    );
    assert!(same.iter().all(|(_, status)| *status != 403), "{same:?}");
}

#[test]
fn a_json_route_takes_only_json() {
    let server = open();
    open_item(&server);
    // The page's routes take forms (and refuse anything else themselves).
    let answers = writes(&server, &[], "text/plain");
    for (path, status) in answers.iter().filter(|(path, _)| !path.starts_with("/ui")) {
        assert_eq!(*status, 400, "{path}");
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let refused = agent
        .post(&server.url("/v1/reviews/1/resolve"))
        .header("Content-Type", "text/plain")
        .send(r#"{"decision": "approve"}"#)
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert!(refused.contains("bad_content_type"), "{refused}");
    assert!(still_open(&server));
}

#[test]
fn a_broken_escape_or_a_control_character_in_a_path_or_query_is_refused_everywhere() {
    let server = open();
    for (method, path, code) in [
        ("GET", "/v1/tools?x=%ZZ", "bad_encoding"),
        ("GET", "/v1/reviews?status=a%", "bad_encoding"),
        ("GET", "/ui?x=%ZZ", "bad_encoding"),
        ("POST", "/mcp?x=a%", "bad_encoding"),
        (
            "GET",
            "/v1/jobs/vendor-risk/cases/a%00b",
            "control_character",
        ),
        ("GET", "/v1/dispatches/a%00b", "control_character"),
        ("POST", "/v1/dispatches/a%00b/outcome", "control_character"),
        ("GET", "/ui/items/1%0A", "control_character"),
        ("GET", "/v1/tools?x=a%1Bb", "control_character"),
    ] {
        let answer = server.call(method, path, None, (method == "POST").then_some("{}"));
        assert_eq!(answer.status, 400, "{method} {path}: {}", answer.text);
        assert!(answer.text.contains(code), "{path}: {}", answer.text);
    }
}

#[test]
fn a_declared_body_over_the_limit_is_refused_at_once_on_every_route_family() {
    let server = open();
    for path in ["/v1/recover", "/ui/login", "/mcp"] {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: 5000000\r\n\r\n"
        );
        let started = Instant::now();
        assert_eq!(raw(&server, &head, b"{"), Some(413), "{path}");
        assert!(started.elapsed() < Duration::from_secs(5), "{path}");
    }
}

#[test]
fn a_slow_body_is_cut_at_the_request_timeout_on_every_route_family() {
    let server = start_with(|c| {
        c.keys.clear();
        c.limits.timeout = Duration::from_millis(300);
    });
    for (path, content_type) in [
        ("/v1/recover", "application/json"),
        ("/ui/login", "application/x-www-form-urlencoded"),
        ("/mcp", "application/json"),
    ] {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {content_type}\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n"
        );
        // Ten bytes of a hundred, then nothing: answered 503 at the timeout, not held.
        assert_eq!(raw(&server, &head, b"{\"task\": \""), Some(503), "{path}");
    }
    assert_eq!(server.get("/healthz", None).status, 200);
}

#[test]
fn one_address_cannot_hold_every_connection() {
    let server = start_with(|c| c.limits.max_connections_per_address = 2);
    let held: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(server.address).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut third = TcpStream::connect(server.address).unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut byte = [0u8; 1];
    let closed = match third.read(&mut byte) {
        Ok(0) => true,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        Ok(_) => false,
    };
    assert!(
        closed,
        "a third connection from one address is closed at once"
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(server.get("/healthz", None).status, 200, "slots come back");
}

#[test]
fn a_nul_in_a_stored_string_is_refused_at_its_path_and_stores_nothing() {
    let server = open();
    open_item(&server);
    let answer = server.post(
        "/v1/reviews/1/resolve",
        None,
        &json!({"decision": "approve", "note": "looks\u{0}fine"}),
    );
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert!(answer.text.contains(r#""path":"note""#), "{}", answer.text);
    assert!(still_open(&server));
    // Text that is only read (a report's message) may hold one: it is kept, if at all, as
    // escaped JSON.
    let answer = server.post(
        "/v1/recover",
        None,
        &json!({"task": "t", "report": {"http_status": 503, "message": "a\u{0}b"}}),
    );
    assert_eq!(answer.status, 200, "{}", answer.text);
}
