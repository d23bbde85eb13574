//! The `SQLite` store: the conformance suite, plus what only a file can show (no excerpt text
//! on disk, reopening, two stores on one file) and the concurrency and property tests.

#[macro_use]
#[path = "../conformance/mod.rs"]
mod conformance;
mod concurrency;
mod on_disk;
mod properties;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use backstop_store::SqliteStore;

/// A fresh database in its own temporary folder, removed when dropped.
#[derive(Debug)]
pub struct TempStore {
    store: SqliteStore,
    dir: PathBuf,
}

impl std::ops::Deref for TempStore {
    type Target = SqliteStore;
    fn deref(&self) -> &SqliteStore {
        &self.store
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A folder no other test uses.
pub fn temp_dir() -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "backstop-store-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh, empty store.
pub fn fresh() -> TempStore {
    let dir = temp_dir();
    let store = SqliteStore::open(dir.join("ledger.db")).unwrap();
    TempStore { store, dir }
}

mod suite {
    use super::conformance;
    #[allow(clippy::unnecessary_wraps)]
    fn fresh() -> Option<super::TempStore> {
        Some(super::fresh())
    }
    conformance_suite!(fresh);
}
