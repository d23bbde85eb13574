//! A `PostgreSQL` store in a schema of its own, dropped afterwards; shared by the suites that
//! run on `PostgreSQL` (`postgres/`, `faults/`).

use std::sync::atomic::{AtomicU32, Ordering};

use backstop_store::PostgresStore;

/// The environment variable naming the test database.
pub const ENV: &str = "BACKSTOP_TEST_POSTGRES";

/// A store in a fresh schema, dropped with it.
#[derive(Debug)]
pub struct TempSchema {
    store: PostgresStore,
    base: String,
    schema: String,
}

impl std::ops::Deref for TempSchema {
    type Target = PostgresStore;
    fn deref(&self) -> &PostgresStore {
        &self.store
    }
}

impl Drop for TempSchema {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.base, postgres::NoTls) {
            let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

impl TempSchema {
    /// The schema's name.
    pub fn schema_name(&self) -> String {
        self.schema.clone()
    }

    /// A plain client on the schema, to read its tables directly (the fault suite's dumps).
    #[allow(dead_code, reason = "the fault suite's, not this one's")]
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&with_schema(&self.base, &self.schema), postgres::NoTls).unwrap()
    }

    /// Another connection to the same schema, as a second process would have.
    pub fn second(&self) -> PostgresStore {
        PostgresStore::connect(&with_schema(&self.base, &self.schema)).unwrap()
    }
}

fn with_schema(base: &str, schema: &str) -> String {
    format!("{base} options='-c search_path={schema}'")
}

/// A fresh store, or `None` when no test database is configured: the test says it skipped,
/// and under `CI=true` a missing database fails it instead (CI must run this suite).
pub fn fresh() -> Option<TempSchema> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let Some(base) = std::env::var(ENV).ok().filter(|v| !v.trim().is_empty()) else {
        assert!(
            std::env::var("CI").ok().as_deref() != Some("true"),
            "CI=true but {ENV} is not set: the PostgreSQL suite must run in CI"
        );
        #[allow(clippy::print_stderr)]
        {
            eprintln!("skipped: {ENV} is not set, so no PostgreSQL test runs");
        }
        return None;
    };
    let schema = format!(
        "backstop_test_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = postgres::Client::connect(&base, postgres::NoTls)
        .unwrap_or_else(|e| panic!("{ENV}={base}: {e}"));
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .unwrap();
    let store = PostgresStore::connect(&with_schema(&base, &schema)).unwrap();
    Some(TempSchema {
        store,
        base,
        schema,
    })
}
