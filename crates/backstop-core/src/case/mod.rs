//! Cases: one caller, one job, one subject; each decision request on it is an attempt.
//!
//! The shell (a store) runs one attempt in one transaction:
//! 1. [`parse_request`] reads the body: a malformed request is refused with every issue and
//!    touches nothing;
//! 2. the store loads the [`CaseState`] the request's [`CaseLookup`] names;
//! 3. [`attempt`] decides, purely: a replay of a stored result, a refusal, or a result with
//!    the [`Change`] to apply;
//! 4. the store applies the change atomically.
//!
//! - `identity`: case ids normalized by the match rule, and the hashes kept in place of text
//! - `request`: the request read from JSON, every issue with its path
//! - `request_schema`: the request's shape for the OpenAPI document
//! - `attempt`: limits, progress, escalations, reviews and the result
//! - `result`: the wire shapes of `PACKS.md`
//! - `refusal_code`: every refusal code with its HTTP status
//! - `resolution`: the decisions a review item may be resolved with

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

mod attempt;
pub mod identity;
mod refusal_code;
mod request;
#[cfg(feature = "openapi")]
mod request_schema;
pub mod resolution;
mod result;

pub(crate) use attempt::escalation;
pub use attempt::{attempt, is_escalation_lane};
pub use refusal_code::RefusalCode;
pub use request::nul_characters;
pub use request::{
    CaseLookup, MAX_EXECUTION_ID_CHARS, REQUEST_FIELDS, RelatedRecord, Request, parse_request,
};
pub(crate) use request::{named_case, unknown_fields, wrong};
#[cfg(feature = "openapi")]
pub use request_schema::{CaseName, EvidenceBody, ExcerptBody, RelatedBody, RequestBody};
pub use result::{
    AnswerView, AttemptsView, CaseView, DecisionResult, EscalationView, Next, Refusal, RefusalBody,
    ResultStatus, RetryGuidance, Trigger,
};

/// At most this many new issued cases per caller per job in any 24 hours.
pub const ISSUED_CASES_PER_DAY: u32 = 200;

/// What the store knows about the request's case, loaded before [`attempt`] runs.
#[derive(Debug, Clone, Default)]
pub struct CaseState {
    /// The stored execution with the request's `execution_id`, if any (same caller and job).
    pub execution: Option<StoredExecution>,
    /// The case's id when it exists: the named case, or the issued case a first request
    /// reuses. `None`: no such case yet.
    pub case_id: Option<String>,
    /// The attempts of the case's current cycle (since its last decision or resolved review),
    /// oldest first; [`attempt`] applies the window.
    pub attempts: Vec<AttemptRecord>,
    /// The case's open review item, if any.
    pub review: Option<OpenReview>,
    /// Issued-mode first requests: how many cases this caller opened on the job in the last
    /// 24 hours.
    pub issued_last_day: u32,
    /// How many cycles of the case have ended (by a decision or a resolved review); 0 for a
    /// new case.
    pub cycle: u32,
}

/// A stored result, returned again for a resend with the same `execution_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredExecution {
    /// The request's fingerprint.
    pub fingerprint: String,
    /// The result as it was sent, JSON.
    pub result: String,
}

/// What is kept of one attempt: question keys, sources, locators and hashes, never text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptRecord {
    /// The attempt's number in its cycle, from 1.
    pub number: u32,
    /// When it was made.
    pub at: Timestamp,
    /// The request's `execution_id`.
    pub execution_id: String,
    /// How the case stood after it.
    pub status: ResultStatus,
    /// The outcome, if any.
    pub outcome: Option<String>,
    /// What the agent was told to do next.
    pub next: Option<Next>,
    /// Whether it made progress over the earlier attempts of its cycle.
    pub progress: bool,
    /// The questions it closed (empty for a gap: a gap keeps nothing).
    pub closed: Vec<String>,
    /// The excerpts it cited (empty for a gap).
    pub cited: Vec<Citation>,
    /// Whether it was the one retry a gather lane allowed.
    pub lane_retry: bool,
}

/// One cited excerpt: where it was and a hash of its text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Citation {
    /// The question key or related kind it was sent under.
    pub under: String,
    /// The source id.
    pub source: String,
    /// Where in the source.
    pub locator: String,
    /// A hash of the text.
    pub hash: String,
}

/// An open review item of a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenReview {
    /// The item's id.
    pub id: i64,
    /// The lane the case is held in.
    pub lane: String,
    /// The escalation it carries.
    pub escalation: String,
    /// Whether the lane lets the agent gather more and ask once more.
    pub retry_allowed: bool,
    /// Whether that retry was used.
    pub retry_used: bool,
}

/// What [`attempt`] decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempted {
    /// A resend: return the stored result unchanged; nothing is counted.
    Replay(String),
    /// Refused before anything ran; nothing changes.
    Refused(Refusal),
    /// Counted: send `result` and apply `change` in one transaction.
    Counted {
        /// The result to send.
        result: Box<DecisionResult>,
        /// What to store.
        change: Box<Change>,
    },
}

/// What the store applies for a counted attempt, all in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The case the attempt counted against.
    pub case_id: String,
    /// A case to create first.
    pub open_case: Option<NewCase>,
    /// The attempt's record.
    pub attempt: AttemptRecord,
    /// The result kept for a resend with the same `execution_id`.
    pub execution: StoredExecution,
    /// Whether the case's cycle ends (a decision): the next attempt starts a new count.
    pub end_cycle: bool,
    /// A review item to open (a held result on a case not already in review).
    pub open_review: Option<NewReview>,
    /// The open review item whose one retry this attempt used.
    pub use_review_retry: Option<i64>,
    /// The open review item this attempt's decision closes.
    pub close_review: Option<i64>,
    /// The contacts to put on the suppression list: the result's effects name
    /// `suppress_contact` (a do-not-call answer), so every contact this case was dispatched to
    /// is suppressed, in the attempt's transaction, whichever route the result came by.
    pub suppress: Option<SuppressContacts>,
}

/// The effect that puts a case's contacts on the suppression list.
pub const SUPPRESS_CONTACT: &str = "suppress_contact";

/// Every contact a case was dispatched to, suppressed for that case or (the pack's
/// `suppress_scope = "contact"`) for every case of the caller's on the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuppressContacts {
    /// For this case only, or for the caller's every case on the job.
    pub scope: crate::pack::SuppressScope,
    /// Why: the result's outcome (`do_not_call`).
    pub reason: String,
}

/// A case to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCase {
    /// Whether backstop issued its id.
    pub issued: bool,
    /// Issued cases: the hash of the first request's excerpts, to recognize a fresh start.
    pub opening_hash: Option<String>,
}

/// A review item to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReview {
    /// The lane the case is held in.
    pub lane: String,
    /// The escalation it carries.
    pub escalation: String,
    /// Why it was held, for the reviewer.
    pub reason: String,
    /// Whether the lane lets the agent gather more and ask once more.
    pub retry_allowed: bool,
}
