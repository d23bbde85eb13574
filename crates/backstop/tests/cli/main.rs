//! Integration tests of the `backstop` binary: each test runs it as a user would, with
//! arguments and stdin, and checks its exit code, stdout and stderr.
//!
//! - `support`: running the binary, parsing its JSON output, temp dirs with an insta filter
//! - `classify`: one report from flags or from stdin, JSON and human output, retry hints
//! - `jsonl`: the `--jsonl` stream: one output line per input line, bad lines included
//! - `user_rules`: `classify --rules FILE` in front of the built-in rules, and bad rule files
//! - `errors`: bad flags and bad stdin are refused with every issue and its flag at once
//! - `rules_cmd`: `rules check` (ok, shadowed, unreadable, JSON shape) and `rules show`
//! - `cases_cmd`: `decide`, `cases show`, `review list|resolve` and `purge` on a ledger of each
//!   test's own: retries, resends, malformed requests, reviews, retention, issued and fields cases
//! - `review_cmd`: the operator's queue: `review list|show` and `cases show` as tables for a
//!   person and JSON when piped, `review resolve` checked against the item's pack, and every
//!   command that reads a ledger refusing a `--db` path with none there, creating none
//! - `pack_cmd`: `pack check`: the shipped packs are ok, a bad pack lists its issues, a missing file
//! - `simulate`: `simulate backoff`: full jitter against plain exponential, the table, bad flags
//! - `help`: the `--help` texts, wrapped at 100 columns
//! - `hint`: `hint` steps from flags or stdin, `--jsonl` traces with counters carried, bad
//!   inputs and `--strategies` files
//! - `replay`: `replay TRACE.jsonl`: steps, calls saved and totals; bad traces, every bad line
//! - `strategies`: `strategies check` (ok, issues, unreadable, JSON shape) and `strategies show`
//! - `loop_cmd`: `loop` on real processes: passing on the third attempt, the same failure
//!   stopped early, different failures to the cap, missing and crashing test commands, secrets
//! - `serve_cmd`: `serve` as a process: health and readiness, SIGTERM with a request in flight,
//!   SIGHUP reloads, API keys and roles, refused configs, `config check|hash-key`, JSON logs,
//!   and no acknowledged attempt lost to a SIGKILL
//! - `serve_postgres`: `serve --db postgres://...` as a process: calls, decisions, a restart
//! - `fleet_cmd`: two `serve` processes on one ledger, one killed mid-load, on both backends
//! - `task_cmd`: `task show|reset` on the journal a running `serve` writes
//! - `notify_cmd`: `notify list` (pending, delivered, failed; JSON and a table; a missing
//!   ledger refused), and `[[notify]]` config issues with their paths
//! - `effects_cmd`: `dispatch`, `key`, `reconcile`, `demo`, `pack schema`, and a `serve` killed
//!   between a permit and its outcome, on both backends
//! - `mcp_cmd`: `mcp` over stdio as a client speaks it (initialize, tools/list, a call), and
//!   bad flags refused before anything is served
//! - `quickstart`: README.md's Quickstart run as written; every `examples/...` path the
//!   documents name exists; no document links outside the repository
//!
//! Snapshots are in `snapshots/`; accept new ones with `INSTA_UPDATE=always` and read them.

mod calibrate_cmd;
mod cases_cmd;
mod classify;
mod docs_cmd;
mod effects_cmd;
mod errors;
mod fleet_cmd;
mod grammar;
mod help;
mod hint;
mod hook_cmd;
mod jsonl;
mod loop_cmd;
mod mcp_cmd;
mod notify_cmd;
mod pack_cmd;
mod po_cmd;
mod proxy_cmd;
mod quickstart;
mod replay;
mod review_cmd;
mod rules_cmd;
mod serve_cmd;
mod serve_postgres;
mod simulate;
mod strategies;
mod support;
mod task_cmd;
mod user_rules;
