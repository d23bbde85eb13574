//! Fault injection: every multi-step workflow of the ledger is stopped between each two of its
//! steps (the store's fault points, `fail` crate), by an error as a failing database gives and
//! by a panic as a crash gives; the process's store is then dropped and opened again (a
//! restart), and the ledger must hold exactly what it held before the workflow began. Run
//! again after the restart, the workflow completes, and running it once more (a resend)
//! changes nothing: each step is kept once.
//!
//! The fault points are process-wide, so this suite is its own test binary and its scenarios
//! run one at a time (`fail::FailScenario`). It runs on `SQLite` always and on `PostgreSQL`
//! where `BACKSTOP_TEST_POSTGRES` names a database (ignored otherwise, never passed).

// The conformance suite's helpers this suite uses (packs, requests, dispatches).
#[allow(
    dead_code,
    reason = "the fault suite uses a few of the conformance helpers"
)]
#[path = "../conformance/dispatch.rs"]
mod dispatch;
#[allow(
    dead_code,
    reason = "the fault suite uses a few of the conformance helpers"
)]
#[path = "../conformance/support.rs"]
mod support;
#[cfg(feature = "postgres")]
#[allow(dead_code, reason = "shared with the PostgreSQL suite")]
#[path = "../postgres/temp_schema.rs"]
mod temp_schema;

mod scenarios;

use std::collections::BTreeMap;
use std::path::PathBuf;

use backstop_store::{SqliteStore, Store, StoreError};

/// A ledger that outlives the process's store: opened, dropped, opened again.
trait Ledger {
    /// The store as a process opens it at its start.
    fn open(&self) -> Box<dyn Store>;
    /// Every row of every table, as text, sorted: what the ledger holds.
    fn dump(&self) -> BTreeMap<String, Vec<String>>;
}

/// A `SQLite` file in a folder of its own, removed afterwards.
struct SqliteLedger {
    dir: PathBuf,
}

impl SqliteLedger {
    fn new(name: &str) -> SqliteLedger {
        let dir =
            std::env::temp_dir().join(format!("backstop-faults-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        SqliteLedger { dir }
    }
}

impl Drop for SqliteLedger {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Ledger for SqliteLedger {
    fn open(&self) -> Box<dyn Store> {
        Box::new(SqliteStore::open(self.dir.join("ledger.db")).unwrap())
    }

    fn dump(&self) -> BTreeMap<String, Vec<String>> {
        let db = rusqlite::Connection::open(self.dir.join("ledger.db")).unwrap();
        let tables: Vec<String> = db
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        tables
            .into_iter()
            .map(|table| {
                let mut statement = db.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
                let width = statement.column_count();
                let mut rows: Vec<String> = statement
                    .query_map([], |row| {
                        let cells: Vec<String> = (0..width)
                            .map(|i| format!("{:?}", row.get_ref(i).unwrap()))
                            .collect();
                        Ok(cells.join(" | "))
                    })
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                rows.sort();
                (table, rows)
            })
            .collect()
    }
}

#[cfg(feature = "postgres")]
struct PostgresLedger(temp_schema::TempSchema);

#[cfg(feature = "postgres")]
impl Ledger for PostgresLedger {
    fn open(&self) -> Box<dyn Store> {
        Box::new(self.0.second())
    }

    fn dump(&self) -> BTreeMap<String, Vec<String>> {
        let mut db = self.0.client();
        let schema = self.0.schema_name();
        let tables: Vec<String> = db
            .query(
                "SELECT table_name::TEXT FROM information_schema.tables
                 WHERE table_schema = $1 ORDER BY 1",
                &[&schema],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        tables
            .into_iter()
            .map(|table| {
                let sql = format!("SELECT t::TEXT FROM {schema}.\"{table}\" t ORDER BY 1");
                let rows = db
                    .query(&sql, &[])
                    .unwrap()
                    .iter()
                    .map(|row| row.get(0))
                    .collect();
                (table, rows)
            })
            .collect()
    }
}

/// How a fault stops a workflow.
const ACTIONS: [&str; 2] = ["return", "panic"];

/// One workflow with what it starts from and what must hold once it completed.
struct Workflow {
    /// The fault points between its steps.
    points: &'static [&'static str],
    /// Puts the ledger in the state the workflow starts from.
    setup: fn(&dyn Store),
    /// The workflow, as a process runs it.
    run: fn(&dyn Store) -> Result<(), StoreError>,
    /// What must hold after it completed (and was resent, where it may be).
    check: fn(&dyn Store),
    /// Whether running it again after it completed is a resend that changes nothing (a
    /// resolution is refused instead: its second run is an error).
    resendable: bool,
}

/// Stops `workflow` at each of its points with each action, restarts, and checks that nothing
/// was half-written, then that the workflow completes once the fault is gone.
fn stop_at_every_step(name: &str, ledger: &dyn Fn(&str) -> Box<dyn Ledger>, workflow: &Workflow) {
    for point in workflow.points {
        for action in ACTIONS {
            let scenario = fail::FailScenario::setup();
            let ledger = ledger(&format!("{name}-{point}-{action}"));
            let store = ledger.open();
            (workflow.setup)(store.as_ref());
            let before = ledger.dump();

            fail::cfg(*point, action).unwrap();
            let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                (workflow.run)(store.as_ref())
            }));
            fail::remove(*point);
            assert!(
                !matches!(stopped, Ok(Ok(()))),
                "{name}: the fault at `{point}` ({action}) did not stop the workflow"
            );
            drop(store);
            assert_eq!(
                ledger.dump(),
                before,
                "{name}: stopped at `{point}` ({action}), the ledger holds part of the workflow"
            );

            let restarted = ledger.open();
            (workflow.run)(restarted.as_ref()).unwrap_or_else(|e| {
                panic!("{name}: after a stop at `{point}` ({action}) and a restart: {e}")
            });
            if workflow.resendable {
                let done = ledger.dump();
                (workflow.run)(restarted.as_ref()).unwrap();
                assert_eq!(ledger.dump(), done, "{name}: a resend changed the ledger");
            }
            (workflow.check)(restarted.as_ref());
            scenario.teardown();
        }
    }
}

fn sqlite(name: &str) -> Box<dyn Ledger> {
    Box::new(SqliteLedger::new(name))
}

#[cfg(feature = "postgres")]
fn postgres(_name: &str) -> Box<dyn Ledger> {
    Box::new(PostgresLedger(
        temp_schema::fresh().expect("BACKSTOP_TEST_POSTGRES names the test database"),
    ))
}

/// One `#[test]` per workflow per backend.
macro_rules! faults {
    ($($workflow:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[test]
                fn $workflow() {
                    super::stop_at_every_step(
                        stringify!($workflow),
                        &super::sqlite,
                        &super::scenarios::$workflow(),
                    );
                }
            )*
        }
        #[cfg(feature = "postgres")]
        mod on_postgres {
            $(
                #[test]
                #[cfg_attr(
                    not(backstop_postgres),
                    ignore = "needs BACKSTOP_TEST_POSTGRES (a PostgreSQL database)"
                )]
                fn $workflow() {
                    super::stop_at_every_step(
                        stringify!($workflow),
                        &super::postgres,
                        &super::scenarios::$workflow(),
                    );
                }
            )*
        }
    };
}

faults!(
    an_attempt,
    a_delivery_decided,
    a_journal_write,
    a_journal_write_without_review,
    a_resolution_with_its_reset,
    a_dispatch_of_two_recipients,
    a_purge,
);
