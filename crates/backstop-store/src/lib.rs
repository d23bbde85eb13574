//! Where backstop keeps what the core decided.
//!
//! This crate will hold the `Store` trait, its embedded `SQLite` backend (the default) and its
//! `PostgreSQL` backend, their migrations and the retention purge. Classification, the only
//! capability so far, keeps no state, so nothing is stored yet; the crate exists so the
//! dependency direction `backstop -> backstop-server -> backstop-store -> backstop-core` is
//! fixed from the start.
#![deny(missing_docs)]

pub use backstop_core as core;
