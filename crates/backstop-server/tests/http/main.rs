//! The service over a real socket: every route, every refusal, the auth boundaries.
//!
//! Each test starts its own server on `127.0.0.1:0` with a fresh ledger, on a runtime of its
//! own, and talks to it with a blocking HTTP client; `fleet` starts two on one ledger. `notify`
//! posts to a `receiver` of its own (a tiny HTTP server on port 0). `snapshots` keeps one
//! answer of each route family and the whole `/openapi.json` as insta snapshots.

mod approaches;
mod auth;
mod browser;
mod busy;
mod calls;
mod caps;
mod cases;
mod connections;
mod edge;
mod effects;
mod fleet;
mod fuzz;
mod hooks;
mod idempotency;
mod jobs;
mod keeping;
mod limits;
mod mcp;
mod notify;
mod openapi;
mod receiver;
mod retention;
mod snapshots;
mod strategies;
mod support;
mod tasks;
mod ui;
