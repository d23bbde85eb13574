//! A tiny HTTP receiver for notifications: it records every request (headers and body) and
//! answers each with the status its script gives; it can go down (the port refuses
//! connections) and come back on the same port.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One request as received, and what it was answered.
#[derive(Debug, Clone)]
pub struct Received {
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    pub body: String,
    pub status: u16,
}

#[derive(Debug, Default)]
struct Shared {
    received: Vec<Received>,
    /// Statuses for the next requests, in order; 200 once it is empty.
    script: VecDeque<u16>,
}

/// A receiver on one port; it stops (and the port refuses connections) when dropped.
#[derive(Debug)]
pub struct Receiver {
    pub address: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Receiver {
    /// A receiver on a port of its own, answering 200.
    pub fn start() -> Receiver {
        Receiver::on("127.0.0.1:0".parse().unwrap(), Arc::default())
    }

    fn on(address: SocketAddr, shared: Arc<Mutex<Shared>>) -> Receiver {
        let listener = TcpListener::bind(address).unwrap();
        let address = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (shared, stop) = (Arc::clone(&shared), Arc::clone(&stop));
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    if let Ok(stream) = stream {
                        answer(stream, &shared);
                    }
                }
            })
        };
        Receiver {
            address,
            shared,
            stop,
            thread: Some(thread),
        }
    }

    /// The URL to post to.
    pub fn url(&self) -> String {
        format!("http://{}/hook", self.address)
    }

    /// Goes down: the port refuses connections until [`Receiver::up`]. What was received is
    /// kept.
    pub fn down(mut self) -> Down {
        self.halt();
        Down {
            address: self.address,
            shared: Arc::clone(&self.shared),
        }
    }

    /// The next requests are answered with these statuses, in order (then 200).
    pub fn script(&self, statuses: &[u16]) {
        self.lock().script.extend(statuses);
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    /// Waits until `done` holds for the requests received, or panics after `limit`.
    pub fn wait_for(&self, limit: Duration, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + limit;
        loop {
            let received = self.received();
            if done(&received) {
                return received;
            }
            assert!(
                Instant::now() < deadline,
                "timed out; received: {received:#?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop, which then sees the stop.
        let _ = TcpStream::connect(self.address);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.halt();
    }
}

/// A receiver that is down: its port refuses connections.
#[derive(Debug)]
pub struct Down {
    pub address: SocketAddr,
    shared: Arc<Mutex<Shared>>,
}

impl Down {
    /// The URL the receiver had.
    pub fn url(&self) -> String {
        format!("http://{}/hook", self.address)
    }

    /// Comes back on the same port, with what it had received.
    pub fn up(self) -> Receiver {
        Receiver::on(self.address, self.shared)
    }
}

/// Reads one request and answers it with the script's next status.
fn answer(stream: TcpStream, shared: &Mutex<Shared>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(&stream);
    let mut headers = BTreeMap::new();
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return; // the wake-up connection, or a client that gave up
    }
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.trim_end().split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let status = {
        let mut shared = shared.lock().unwrap_or_else(PoisonError::into_inner);
        let status = shared.script.pop_front().unwrap_or(200);
        shared.received.push(Received {
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
            status,
        });
        status
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} Status\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    let _ = stream.flush();
}
