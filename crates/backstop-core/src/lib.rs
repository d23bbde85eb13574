//! backstop's core: the pure logic that decides what an agent does after a failure.
//!
//! Nothing here does I/O, reads a clock or the environment, or draws random numbers: time and
//! seeds are parameters, and every function returns data for the shell to act on.
//!
//! | module | what it holds |
//! |---|---|
//! | [`class`] | the failure taxonomy and what each class allows |
//! | [`report`] | what an agent observed about one failed call, parsed and validated |
//! | [`classify`] | rules, retry hints and the classification of a report |
//! | [`pack`] | packs: the policy for one job (questions, answers, rules, outcomes), parsed |
//! | [`case`] | attempts on a case: requests read, limits, progress, escalations, results |
//! | [`judge`] | evidence judged per question, then the pack's rules: decided, held or undecided |
//! | [`effects`] | side effects: dispatches gated and keyed by content, delivered results, the simulator |
//! | [`recover`] | strategies, backoff, breakers, budgets: the next step after a failure |
//! | [`notify`] | notifications for people: payloads, stable ids, the delivery schedule |
//! | [`verify`] | verified retry: test output read, normalized, failure signatures |
//! | [`redact`] | secrets taken out of text before it is shown, logged, stored or sent |
//! | [`issue`] | one problem in an input, with its path; validators return all of them |
//! | [`codes`] | gRPC status code and signal name tables |
//! | [`wire_schema`] | exact JSON Schemas of a pack's request and of a report, for the API document |
#![deny(missing_docs)]

pub mod case;
pub mod class;
pub mod classify;
pub mod codes;
pub mod effects;
pub mod input;
pub mod issue;
pub mod judge;
pub mod notify;
pub mod pack;
pub mod recover;
pub mod redact;
pub mod report;
pub mod verify;
pub mod wire_schema;

pub use class::Class;
pub use classify::{Classification, Evidence, RuleSet, classify};
pub use issue::Issue;
pub use report::Report;
