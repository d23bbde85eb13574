//! Connections: the header-read timeout, the idle keep-alive timeout and the cap on open
//! connections, seen from raw sockets.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::{Server, start_with};

/// Reads until the server closes the connection (`true`) or `within` passes (`false`).
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let until = Instant::now() + within;
    let mut chunk = [0u8; 1024];
    while Instant::now() < until {
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        match stream.read(&mut chunk) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

/// One keep-alive GET of `/healthz` on `stream`; the status line.
fn health(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 1024];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).expect("an answer within 5 s");
        assert!(n > 0, "closed before answering");
        answer.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap()
        .to_owned()
}

fn server(header_ms: u64, idle_ms: u64, max: usize) -> Server {
    start_with(|config| {
        config.limits.header_timeout = Duration::from_millis(header_ms);
        config.limits.idle_timeout = Duration::from_millis(idle_ms);
        config.limits.max_connections = max;
    })
}

#[test]
fn a_head_sent_one_line_at_a_time_is_cut_off_at_the_header_timeout() {
    let server = server(600, 60_000, 64);
    let mut stream = TcpStream::connect(server.address).unwrap();
    stream.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
    // A header line every 200 ms, for up to 10 s: the head never ends.
    let started = Instant::now();
    let mut cut_off = false;
    for n in 0..50 {
        if write!(stream, "X-Slow-{n}: y\r\n").is_err()
            || closed_within(&mut stream, Duration::from_millis(200))
        {
            cut_off = true;
            break;
        }
    }
    assert!(cut_off, "a never-ending head was kept open for 10 s");
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "cut off before the header timeout: {:?}",
        started.elapsed()
    );
}

#[test]
fn a_quiet_keep_alive_connection_is_closed_at_the_idle_timeout_and_not_before() {
    let server = server(10_000, 800, 64);
    let mut stream = TcpStream::connect(server.address).unwrap();
    assert_eq!(health(&mut stream), "HTTP/1.1 200 OK");
    // Within the idle timeout the connection serves the next request...
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(health(&mut stream), "HTTP/1.1 200 OK");
    // ...and left quiet, it is closed.
    assert!(
        closed_within(&mut stream, Duration::from_secs(10)),
        "an idle connection stayed open for 10 s"
    );
}

#[test]
fn a_connection_that_never_sends_is_closed_at_the_idle_timeout() {
    let server = server(10_000, 500, 64);
    let mut stream = TcpStream::connect(server.address).unwrap();
    assert!(closed_within(&mut stream, Duration::from_secs(10)));
}

#[test]
fn past_the_connection_cap_a_new_connection_waits_until_one_closes() {
    let server = server(10_000, 60_000, 2);
    let mut first = TcpStream::connect(server.address).unwrap();
    let mut second = TcpStream::connect(server.address).unwrap();
    assert_eq!(health(&mut first), "HTTP/1.1 200 OK");
    assert_eq!(health(&mut second), "HTTP/1.1 200 OK");
    // The third is queued by the kernel, not served.
    let mut third = TcpStream::connect(server.address).unwrap();
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    third
        .set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    let mut chunk = [0u8; 256];
    let early = third.read(&mut chunk);
    assert!(
        matches!(&early, Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
        "the third connection was served past a cap of 2: {early:?}"
    );
    drop(first);
    third
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let n = third.read(&mut chunk).unwrap();
    assert!(
        String::from_utf8_lossy(&chunk[..n]).starts_with("HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&chunk[..n])
    );
    drop(second);
}
