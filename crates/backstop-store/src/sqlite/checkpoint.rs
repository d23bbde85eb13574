//! WAL checkpoints on their own thread, so no attempt waits for one.
//!
//! With `SQLite`'s automatic checkpoint, the commit that crosses 1,000 WAL pages copies them into
//! the database and syncs it: a few milliseconds at the 99th percentile. Here the writing
//! connection never checkpoints; this thread runs a passive checkpoint (which never blocks a
//! writer) every [`INTERVAL`], and a last one when the store is dropped.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rusqlite::Connection;

use super::schema;
use crate::StoreError;

/// How often the WAL is copied into the database.
const INTERVAL: Duration = Duration::from_millis(200);

/// The checkpoint thread; dropping it runs a last checkpoint and waits for it.
#[derive(Debug)]
pub struct Checkpointer {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread on its own connection to `path`.
    pub fn start(path: &Path) -> Result<Self, StoreError> {
        let connection = schema::connect(path)?;
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = thread::Builder::new()
            .name("backstop-checkpoint".to_owned())
            .spawn(move || {
                loop {
                    let last = !matches!(
                        stopped.recv_timeout(INTERVAL),
                        Err(RecvTimeoutError::Timeout)
                    );
                    if let Err(e) =
                        checkpoint(&connection, if last { "TRUNCATE" } else { "PASSIVE" })
                    {
                        tracing::warn!(error = %e, "WAL checkpoint failed; the next one retries");
                    }
                    if last {
                        break;
                    }
                }
            })
            .map_err(|e| {
                StoreError::Database(format!("cannot start the checkpoint thread: {e}"))
            })?;
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn checkpoint(connection: &Connection, mode: &str) -> rusqlite::Result<()> {
    connection.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |_| Ok(()))
}
