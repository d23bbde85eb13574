//! Integration tests of classification.
//!
//! - `corpus`: the labeled table of real-world reports in `tests/data/labeled_reports.jsonl`
//! - `default_rules`: the built-in rule file lints clean and names a source for every rule
//! - `properties`: determinism, header-case and field-order independence, retry hints, text cap
//! - `bad_input`: every kind of bad report and rule file gets a clear error with its path

mod bad_input;
mod corpus;
mod default_rules;
mod properties;
