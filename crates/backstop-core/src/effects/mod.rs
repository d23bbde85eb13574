//! Side effects that cannot be taken back (a phone rings, an email leaves, a refund is paid):
//! gated, keyed by their content, answered by a result that is recorded before it is judged.
//!
//! The shell runs a dispatch in one transaction:
//! 1. [`parse_dispatch`] reads the request: every issue with its path, nothing stored;
//! 2. the store loads each recipient's [`GateFacts`] (its key's dispatch, its case, its
//!    contact's suppression);
//! 3. [`gate`] answers each recipient;
//! 4. the store persists every permitted dispatch with its key before the answer leaves.
//!
//! - `key`: content-derived idempotency keys, stable under reordering
//! - `scan`: untrusted values checked for placeholders and injected instructions
//! - `request`: the dispatch request read from JSON
//! - `gate`: the answer for one recipient, and the dispatch states
//! - `delivery`: a delivered result read, and turned into the case's decision request
//! - `result_schema`: the strict result schema a pack implies, and its lint
//! - `simulator`: the stand-in target, with its duplicates, delays and losses

mod delivery;
pub mod disclosure;
mod gate;
pub mod key;
mod request;
mod result_schema;
pub mod scan;
pub mod simulator;

pub use delivery::{DELIVERY_FIELDS, Delivery, Target, decision_body, kept_fields, parse_delivery};
pub use gate::{
    AnswerOutcome, DispatchMode, DispatchState, GateFacts, GateInput, Verdict, backoff_due, gate,
    simulated_because,
};
pub use request::{
    DISPATCH_FIELDS, DispatchRequest, MAX_CONTENT_BYTES, MAX_RECIPIENTS, RECIPIENT_FIELDS,
    Recipient, parse_dispatch,
};
pub use result_schema::{RESERVED_FIELDS, implied_schema, lint_questions, lint_result_schema};
