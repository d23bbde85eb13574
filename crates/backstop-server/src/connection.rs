//! The accept loop: a cap on open connections, and per connection a header-read timeout and an
//! idle keep-alive timeout, then a graceful stop.
//!
//! A connection is in one of three phases. **Idle** (just opened, or its last answer sent): the
//! first byte of the next request must come within the idle timeout. **Head** (a request's
//! first byte came): its whole head must come within the header-read timeout, so a client that
//! sends one header line every few seconds is cut off. **Busy** (the head is in, the request
//! is being answered): the request timeout applies (see `limits::timeout`), not these. A
//! connection past its deadline is closed; the HTTP stack writes no answer on a half-read head.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// What the accept loop enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From a request's first byte to the end of its head.
    pub header_read: Duration,
    /// From a connection's opening, or its last answer, to the next request's first byte.
    pub idle: Duration,
    /// Connections open at once; past it, new ones wait in the listen backlog.
    pub max_open: usize,
    /// Connections open at once from one client address; past it, a new one is closed at once.
    pub max_per_address: usize,
}

/// Open connections per client address.
#[derive(Debug, Default)]
struct PerAddress(Mutex<std::collections::HashMap<std::net::IpAddr, usize>>);

impl PerAddress {
    /// Counts a connection from `address` if it is under `max`; `false` when it is not.
    fn enter(&self, address: std::net::IpAddr, max: usize) -> bool {
        let mut open = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = open.entry(address).or_default();
        if *count >= max {
            return false;
        }
        *count += 1;
        true
    }

    /// A connection from `address` closed.
    fn leave(&self, address: std::net::IpAddr) {
        let mut open = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = open.get_mut(&address) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&address);
            }
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes; answers in flight finish first and
/// idle connections are closed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let open = Arc::new(tokio::sync::Semaphore::new(limits.max_open.max(1)));
    let per_address = Arc::new(PerAddress::default());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = pin!(shutdown);
    loop {
        // A slot first: past the cap, connections wait in the kernel's backlog, unread.
        let slot = tokio::select! {
            slot = Arc::clone(&open).acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    pause_after(&error).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if !per_address.enter(remote.ip(), limits.max_per_address) {
            tracing::warn!(%remote, "too many connections from one address; closed");
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let clock = Arc::new(Clock::new(limits));
        let io = TokioIo::new(Watched::new(stream, Arc::clone(&clock)));
        let service = answer(router.clone(), remote, clock);
        // No timer is given to the HTTP stack: its own header timeout would start when a
        // connection goes idle, so `Watched` keeps both deadlines instead.
        let connection = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
        let connection = graceful.watch(connection);
        let per_address = Arc::clone(&per_address);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%remote, "connection closed: {error}");
            }
            per_address.leave(remote.ip());
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Waits after a failed accept: not at all when only that one connection failed, a moment when
/// the process is out of file descriptors or memory (retrying at once would spin).
async fn pause_after(error: &io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!("accepting a connection failed: {error}; pausing 100 ms");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// The router for one connection: the client's address on each request, and the clock told
/// when a request starts and when its answer is ready.
fn answer(
    router: Router,
    remote: SocketAddr,
    clock: Arc<Clock>,
) -> impl hyper::service::Service<
    hyper::Request<Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = impl Future<Output = Result<axum::response::Response, std::convert::Infallible>> + Send,
> + Clone {
    hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        clock.set(Phase::Busy);
        request.extensions_mut().insert(ConnectInfo(remote));
        let answered = tower_service::Service::call(&mut router.clone(), request);
        let clock = Arc::clone(&clock);
        async move {
            let response = answered.await;
            clock.set(Phase::Idle(Instant::now()));
            response
        }
    })
}

/// Where a connection is between requests.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request's first byte, since then.
    Idle(Instant),
    /// Reading a request's head, whose first byte came then.
    Head(Instant),
    /// Answering a request.
    Busy,
}

/// A connection's phase, shared by its reader and its service.
#[derive(Debug)]
struct Clock {
    limits: ConnectionLimits,
    phase: Mutex<Phase>,
}

impl Clock {
    fn new(limits: ConnectionLimits) -> Self {
        Self {
            limits,
            phase: Mutex::new(Phase::Idle(Instant::now())),
        }
    }

    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set(&self, phase: Phase) {
        *self.phase() = phase;
    }

    /// Bytes came: a waiting connection starts reading a head.
    fn bytes_came(&self) {
        let mut phase = self.phase();
        if let Phase::Idle(_) = *phase {
            *phase = Phase::Head(Instant::now());
        }
    }

    /// When the connection is closed unless its phase moves on, and why.
    fn deadline(&self) -> Option<(Instant, &'static str)> {
        match *self.phase() {
            Phase::Idle(since) => Some((since + self.limits.idle, "idle")),
            Phase::Head(since) => Some((since + self.limits.header_read, "header-read")),
            Phase::Busy => None,
        }
    }
}

/// A TCP stream whose reads fail once the connection's deadline has passed.
#[derive(Debug)]
struct Watched {
    stream: TcpStream,
    clock: Arc<Clock>,
    alarm: Pin<Box<Sleep>>,
}

impl Watched {
    fn new(stream: TcpStream, clock: Arc<Clock>) -> Self {
        let alarm = Box::pin(tokio::time::sleep(
            clock.limits.header_read.min(clock.limits.idle),
        ));
        Self {
            stream,
            clock,
            alarm,
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some((deadline, which)) = this.clock.deadline() {
            let now = Instant::now();
            if deadline <= now {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the {which} timeout passed"),
                )));
            }
            // The alarm only wakes the read to look again: it is re-armed when it has fired,
            // never per request (a timer reset per request cost about a tenth of the
            // throughput), and never further out than the shorter timeout, so no deadline a
            // later phase sets can fall before it.
            let horizon = this.clock.limits.header_read.min(this.clock.limits.idle);
            while this.alarm.as_mut().poll(cx).is_ready() {
                this.alarm.as_mut().reset(deadline.min(now + horizon));
            }
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.clock.bytes_came();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
