//! The embedded `SQLite` store: one writer thread owns the connection that writes, in WAL mode,
//! so attempts are serialized without lock waits; reads use their own connection.
//!
//! - `schema`: connection settings and migrations
//! - `ledger`: one attempt in one transaction (state loaded, the core's change applied)
//! - `queries`: cases, review items and the purge

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;

use backstop_core::case::Request;
use backstop_core::pack::Pack;
use jiff::Timestamp;
use rusqlite::Connection;

use crate::{CaseRecord, Purged, Reply, Resolution, ReviewFilter, ReviewItem, Store, StoreError};

mod ledger;
mod queries;
mod schema;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The embedded store: a `SQLite` file in WAL mode.
///
/// Writes go through one thread that owns the writing connection; each attempt is one
/// `BEGIN IMMEDIATE` transaction there, so two processes on one file also stay correct (the
/// second waits up to the busy timeout).
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    writer: Mutex<Sender<Job>>,
    reader: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let mut writing = schema::connect(&path)?;
        schema::migrate(&mut writing)?;
        let reader = schema::connect(&path)?;
        let (sender, receiver) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("backstop-store-writer".to_owned())
            .spawn(move || {
                while let Ok(job) = receiver.recv() {
                    job(&mut writing);
                }
            })
            .map_err(|e| StoreError::Database(format!("cannot start the writer thread: {e}")))?;
        Ok(Self {
            path,
            writer: Mutex::new(sender),
            reader: Mutex::new(reader),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` on the writer thread and waits for its answer.
    fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, answered): (SyncSender<Result<T, StoreError>>, _) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |connection| {
            let _ = answer.send(work(connection));
        });
        self.writer
            .lock()
            .map_err(|_| StoreError::Closed)?
            .send(job)
            .map_err(|_| StoreError::Closed)?;
        answered.recv().map_err(|_| StoreError::Closed)?
    }

    fn read<T>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let connection = self.reader.lock().map_err(|_| StoreError::Closed)?;
        work(&connection)
    }
}

impl Store for SqliteStore {
    fn decide(
        &self,
        pack: Arc<Pack>,
        caller: &str,
        request: Request,
        now: Timestamp,
    ) -> Result<Reply, StoreError> {
        let caller = caller.to_owned();
        self.write(move |connection| ledger::decide(connection, &pack, &caller, &request, now))
    }

    fn case(
        &self,
        caller: &str,
        job: &str,
        case_id: &str,
    ) -> Result<Option<CaseRecord>, StoreError> {
        self.read(|connection| queries::case(connection, caller, job, case_id))
    }

    fn reviews(&self, filter: &ReviewFilter) -> Result<Vec<ReviewItem>, StoreError> {
        self.read(|connection| queries::reviews(connection, filter))
    }

    fn resolve_review(
        &self,
        id: i64,
        resolution: &Resolution,
        now: Timestamp,
    ) -> Result<ReviewItem, StoreError> {
        let resolution = resolution.clone();
        self.write(move |connection| queries::resolve(connection, id, &resolution, now))
    }

    fn purge(&self, before: Timestamp) -> Result<Purged, StoreError> {
        self.write(move |connection| queries::purge(connection, before))
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError::Database(error.to_string())
    }
}

/// Milliseconds since the epoch, as stored.
fn millis(at: Timestamp) -> i64 {
    at.as_millisecond()
}

/// A stored time read back.
fn timestamp(ms: i64) -> Result<Timestamp, StoreError> {
    Timestamp::from_millisecond(ms).map_err(|e| StoreError::Corrupt(e.to_string()))
}
