//! backstop's HTTP API.
//!
//! This crate will hold `router(state)`, `serve(listener, state, shutdown)` and the one
//! `ApiError` type. No route exists yet: the CLI is the only surface so far.
#![deny(missing_docs)]

pub use backstop_store as store;
