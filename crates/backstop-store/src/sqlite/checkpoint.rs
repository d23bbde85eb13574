//! WAL checkpoints on their own thread, so no attempt waits for one.
//!
//! With `SQLite`'s automatic checkpoint, the commit that crosses 1,000 WAL pages copies them into
//! the database and syncs it: a few milliseconds at the 99th percentile. Here the writing
//! connection never checkpoints; this thread runs a passive checkpoint (which never blocks a
//! writer) every [`INTERVAL`], and a truncating one when the store is dropped.
//!
//! A passive checkpoint copies frames but cannot start the WAL over while readers and writers
//! keep coming: under steady load the WAL grew without bound (4 GB in 30 s of decisions). So the
//! writing connection itself, between two writes, runs a RESTART checkpoint once the WAL file
//! passes [`RESTART_BYTES`] ([`restart_if_large`]): no writer is in its way (it is the
//! writer), it waits for the readers of old frames, and the next write starts the WAL from its
//! beginning; with `journal_size_limit` the file is cut back as well. (Run from this thread, a
//! RESTART rarely found a moment between two writes, and the WAL reached 600 MB.) A long
//! passive checkpoint under load let the WAL grow while it ran, so this thread runs passive ones
//! only while the WAL is small.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rusqlite::Connection;

use super::schema;
use crate::StoreError;

/// How often the WAL is copied into the database.
const INTERVAL: Duration = Duration::from_millis(200);

/// Past this much WAL, a checkpoint restarts the WAL rather than only copying it; after a
/// restart the file is cut back to it (`journal_size_limit`).
pub const RESTART_BYTES: u64 = 8 * 1024 * 1024;

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
        let wal = PathBuf::from(format!("{}-wal", path.display()));
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = thread::Builder::new()
            .name("backstop-checkpoint".to_owned())
            .spawn(move || {
                loop {
                    let last = !matches!(
                        stopped.recv_timeout(INTERVAL),
                        Err(RecvTimeoutError::Timeout)
                    );
                    // The WAL file's size is a cheap look that disturbs no one.
                    let large = std::fs::metadata(&wal).is_ok_and(|m| m.len() > RESTART_BYTES);
                    let mode = match (last, large) {
                        (true, _) => "TRUNCATE",
                        (false, false) => "PASSIVE",
                        // The writing connection restarts it between two writes.
                        (false, true) => continue,
                    };
                    if let Err(e) = checkpoint(&connection, mode) {
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

/// On the writing connection, between writes: a RESTART checkpoint when the WAL file at `wal`
/// is past [`RESTART_BYTES`].
pub fn restart_if_large(connection: &Connection, wal: &Path) {
    if std::fs::metadata(wal).is_ok_and(|m| m.len() > RESTART_BYTES)
        && let Err(e) = checkpoint(connection, "RESTART")
    {
        tracing::warn!(error = %e, "WAL restart failed; the next write retries");
    }
}

fn checkpoint(connection: &Connection, mode: &str) -> rusqlite::Result<()> {
    connection.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |_| Ok(()))
}
