//! One `PostgreSQL` connection that comes back: when the server closed it (a restart, a
//! failover, `pg_terminate_backend`, a network cut), the next use connects again, no sooner
//! than a backoff after the last failed try (100 ms doubling to 1 s), so an outage is answered
//! `Busy` at once (503 with `Retry-After`) and the service answers again within about a second
//! of the database coming back.

use std::time::{Duration, Instant};

use postgres::{Client, NoTls};

use super::queries::JournalStatements;
use crate::StoreError;

/// The shortest wait between two tries to connect.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// The longest wait between two tries to connect.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// A live session: the client, and the journal's statements prepared on it.
pub struct Session {
    pub client: Client,
    pub journal: JournalStatements,
}

/// A connection that reconnects: the session, or when it was lost and when to try again.
pub struct Reconnecting {
    config: String,
    session: Option<Session>,
    next_try: Instant,
    backoff: Duration,
}

impl Reconnecting {
    /// A connection to `config`, made now.
    ///
    /// # Errors
    /// The server cannot be reached or refuses the session.
    pub fn connect(config: &str) -> Result<Reconnecting, StoreError> {
        Ok(Reconnecting {
            config: config.to_owned(),
            session: Some(session(config)?),
            next_try: Instant::now(),
            backoff: FIRST_BACKOFF,
        })
    }

    /// The live session, connecting again first if it was lost.
    ///
    /// # Errors
    /// `Busy` while the server cannot be reached (within the backoff, without trying).
    pub fn session(&mut self) -> Result<&mut Session, StoreError> {
        if self.session.as_ref().is_some_and(|s| s.client.is_closed()) {
            tracing::warn!("the PostgreSQL connection was closed; connecting again");
            self.session = None;
        }
        if self.session.is_none() {
            if Instant::now() < self.next_try {
                return Err(StoreError::Busy(
                    "PostgreSQL is unreachable; the next try to connect is shortly".to_owned(),
                ));
            }
            match session(&self.config) {
                Ok(fresh) => {
                    tracing::info!("connected to PostgreSQL again");
                    self.session = Some(fresh);
                    self.backoff = FIRST_BACKOFF;
                }
                Err(e) => {
                    self.next_try = Instant::now() + self.backoff;
                    self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                    return Err(StoreError::Busy(e.to_string()));
                }
            }
        }
        self.session
            .as_mut()
            .ok_or_else(|| StoreError::Busy("PostgreSQL is unreachable".to_owned()))
    }
}

/// One connection, set up for the ledger's queries, with the journal's statements prepared.
fn session(config: &str) -> Result<Session, StoreError> {
    let mut client = Client::connect(config, NoTls)
        .map_err(|e| StoreError::Database(format!("cannot connect to PostgreSQL: {e}")))?;
    // The ledger's queries touch a few rows each: a parallel plan only adds a worker's start
    // (about 5 ms) where the planner's estimate is stale, as it is for the newest journal
    // events.
    client
        .batch_execute("SET max_parallel_workers_per_gather = 0")
        .map_err(|e| StoreError::Database(format!("cannot configure the session: {e}")))?;
    let journal = JournalStatements::prepare(&mut client)?;
    Ok(Session { client, journal })
}
