//! The `PostgreSQL` store: the conformance suite, plus what only a shared database shows.
//!
//! Runs when `BACKSTOP_TEST_POSTGRES` names a database (libpq form, such as
//! `host=127.0.0.1 user=postgres dbname=test`) when the tests are built; `.ci/run` sets it.
//! Without it every test here is reported as ignored (never as passed), so `cargo test` passes
//! on a machine with no `PostgreSQL`; under `CI=true` a missing database fails the test
//! instead. Each test works in a schema of its own, dropped afterwards.
#![cfg(feature = "postgres")]

#[macro_use]
#[path = "../conformance/mod.rs"]
mod conformance;
mod shared;

mod temp_schema;

pub use temp_schema::{ENV, TempSchema, fresh};

mod suite {
    use super::conformance;
    fn fresh() -> Option<super::TempSchema> {
        super::fresh()
    }
    conformance_suite!(
        fresh,
        [cfg_attr(
            not(backstop_postgres),
            ignore = "needs BACKSTOP_TEST_POSTGRES (a PostgreSQL database)"
        )]
    );
}
