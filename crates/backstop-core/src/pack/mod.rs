//! Packs: the policy for one job, parsed from TOML into typed data (see `PACKS.md`).
//!
//! A pack names the questions an agent must answer with evidence, the answers each question
//! may have, the rules that turn closed questions into an outcome, and the escalations that
//! take over when the evidence does not settle the case. [`parse_pack`] lists every issue in
//! a pack with its path; nothing here judges evidence or counts attempts yet.
//!
//! - `read`: small readers for TOML tables that record wrong types and unknown keys
//! - `parse`: the pack's structure, table by table
//! - `brief`: what an agent needs from a pack, without what would let it steer the judgement
//! - `validate`: what one part of a pack says about another (rules, outcomes, escalations)

use std::collections::BTreeMap;

use jiff::SignedDuration;
use regex::Regex;

use crate::issue::Issue;

pub mod brief;
mod dispatch;
mod envelope;
mod parse;
mod read;
mod typed;
mod validate;

pub use brief::{JobBrief, JobSummary, brief};
pub use dispatch::{DEFAULT_MAX_PER_CASE, DispatchPolicy, QuietHours, SuppressScope};
pub use envelope::{
    AfterDecision, Envelope, EnvelopeField, MISSING_FIELDS_LANE, OnUnknown, SourceAction,
    UNRECONCILED_LANE,
};
pub use parse::parse_pack;
pub use typed::{Anchor, Bound, BoundOp, Offset, ValueType, bounds_hold, parse_time, typed_answer};

/// The built-in lane a case is held in when no rule fires and no required question is open.
pub const POLICY_GAP_LANE: &str = "review_policy_gap";

/// The built-in lane a decision is held in when confidence is below the pack's minimum.
///
/// `PACKS.md`'s complete pack names it in `confidence.lane` without defining it, so it needs no
/// outcome; a pack may still define an outcome of kind `lane` with this id to give it its own
/// next step and escalation.
pub const LOW_CONFIDENCE_LANE: &str = "review_low_confidence";

/// The answer that means "not known": it keeps a value question open, unless the question's
/// `on_unknown` is `answer`.
pub const UNKNOWN_ANSWER: &str = "unknown";

/// The hedges an excerpt is refused for when a pack names none.
pub const DEFAULT_HEDGES: [&str; 6] = [
    "i think",
    "probably",
    "maybe",
    "not sure",
    "as far as i know",
    "someone in",
];

/// Checks one pack file: every issue, each with its path into the file.
///
/// The `origin` (the file's name) is not part of the paths: the caller shows it above them.
pub fn check_pack(text: &str, _origin: &str) -> Vec<Issue> {
    parse_pack(text).err().unwrap_or_default()
}

/// The policy for one job.
#[derive(Debug, Clone)]
pub struct Pack {
    /// The job's name, as requests name it (`vendor-risk`).
    pub job: String,
    /// A title for people.
    pub title: String,
    /// How a request names its case.
    pub identity: Identity,
    /// How many attempts a case gets, and who takes over after the last.
    pub attempts: AttemptLimits,
    /// What to do while the case is unresolved.
    pub unresolved: Unresolved,
    /// Limits on excerpts, and the hedges that make one unusable.
    pub evidence: EvidenceLimits,
    /// The optional dampener: below `min`, a decision is held in a lane instead.
    pub confidence: Option<Confidence>,
    /// Fields a request must carry, and what a source that did not complete means.
    pub envelope: Envelope,
    /// The questions, in the order they are asked.
    pub questions: Vec<Question>,
    /// The related records a request brings along.
    pub related: Vec<Related>,
    /// The rules, in order: the first that fires sets the outcome.
    pub rules: Vec<PackRule>,
    /// The outcomes rules may name.
    pub outcomes: Vec<Outcome>,
    /// The escalations outcomes and limits may name.
    pub escalations: Vec<Escalation>,
    /// Side effects its cases may take (`[dispatch]`); `None`: none.
    pub dispatch: Option<DispatchPolicy>,
}

impl Pack {
    /// The question with this key.
    pub fn question(&self, key: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.key == key)
    }

    /// The outcome with this id.
    pub fn outcome(&self, id: &str) -> Option<&Outcome> {
        self.outcomes.iter().find(|o| o.id == id)
    }

    /// The escalation with this id.
    pub fn escalation(&self, id: &str) -> Option<&Escalation> {
        self.escalations.iter().find(|e| e.id == id)
    }
}

/// How a request names its case.
#[derive(Debug, Clone)]
pub struct Identity {
    /// Where the case's name comes from.
    pub mode: IdentityMode,
    /// How two names are compared (id and fields modes; `exact` otherwise).
    pub match_rule: MatchRule,
    /// Fields mode: the field names that make the case.
    pub fields: Vec<String>,
    /// Content mode: the question whose excerpt text is the case.
    pub question: Option<String>,
    /// Issued mode: whether a first request sent again is recognized by its excerpts' text
    /// with whitespace and case folded (`reuse = "folded"`), rather than exactly as sent (the
    /// default, `reuse = "exact"`).
    pub reuse_folded: bool,
}

/// Where a case's name comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityMode {
    /// The request names it: `{"id": ...}`.
    Id,
    /// backstop issues it on the first result; later requests send it back.
    Issued,
    /// Several named fields together: `{"fields": {...}}`.
    Fields,
    /// The text of one question's excerpts.
    Content,
}

/// How two case names are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchRule {
    /// Byte for byte.
    Exact,
    /// Ignoring case.
    CaseInsensitive,
    /// As a domain: case, a scheme, `www.` and a trailing dot or path ignored.
    Domain,
}

/// How many attempts a case gets.
#[derive(Debug, Clone)]
pub struct AttemptLimits {
    /// The most attempts (default 3, at least 1).
    pub max: u32,
    /// The window attempts are counted in, from the case's last decision (default 24h).
    pub window: SignedDuration,
    /// The escalation when the limit is reached.
    pub escalate: String,
    /// Whether a decided case takes more attempts.
    pub after_decision: AfterDecision,
}

/// The pack's "when unresolved" instruction.
#[derive(Debug, Clone)]
pub struct Unresolved {
    /// What the agent does next.
    pub next_step: String,
    /// The escalation shown with it.
    pub escalate: String,
}

/// Limits on excerpts.
#[derive(Debug, Clone)]
pub struct EvidenceLimits {
    /// The longest excerpt; a longer one makes the request malformed (default 1000).
    pub max_excerpt_chars: u32,
    /// The most excerpts per question (default 20).
    pub max_excerpts: u32,
    /// Phrases that make an excerpt unusable, lower-cased (default [`DEFAULT_HEDGES`]).
    pub hedges: Vec<String>,
}

/// The confidence dampener: it holds a decision back, never rescues one.
#[derive(Debug, Clone)]
pub struct Confidence {
    /// The lowest confidence a decision stands at, 0 to 1.
    pub min: f64,
    /// The lane a decision below `min` is held in: an outcome of kind `lane`, or the built-in
    /// [`LOW_CONFIDENCE_LANE`].
    pub lane: String,
    /// Whether a decision needs a confidence at all: without one it is held in `lane`.
    pub close_needs_confidence: bool,
}

/// One question the agent answers with evidence.
#[derive(Debug, Clone)]
pub struct Question {
    /// Unique within the pack; requests and rules name the question by it.
    pub key: String,
    /// The question, for people and agents.
    pub text: String,
    /// Whether the case stays undecided while it is open (default true).
    pub required: bool,
    /// How it is judged (default `quotes`).
    pub judge: Judge,
    /// The fewest usable excerpts that close it (default 1; quotes only).
    pub min_excerpts: u32,
    /// What to send next time, shown when it stays open.
    pub fix: String,
    /// Where the evidence usually is.
    pub where_to_look: String,
    /// The answers it may have.
    pub answers: Vec<Answer>,
    /// What an explicit `unknown` value does (value questions).
    pub on_unknown: OnUnknown,
    /// What a value question's value is: one of `answers`, or a typed date or number.
    pub value_type: ValueType,
}

/// How a question is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judge {
    /// From excerpts, by the answers' indicators.
    Quotes,
    /// From a structured value, checked against the answers.
    Value,
}

/// One answer a question may have.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Unique within its question.
    pub value: String,
    /// What it means, for people.
    pub means: String,
    /// Case-insensitive patterns; an excerpt matching one supports this answer (quotes only).
    pub indicators: Vec<Regex>,
}

/// A related record a request brings along.
#[derive(Debug, Clone)]
pub struct Related {
    /// Its kind (`counterparty`).
    pub kind: String,
    /// Whether a request must bring it (default false).
    pub required: bool,
}

/// One rule: when every condition holds, it names an outcome.
#[derive(Debug, Clone)]
pub struct PackRule {
    /// Question key to condition; all must hold. Empty: it always fires.
    pub when: BTreeMap<String, Condition>,
    /// The outcome it sets.
    pub outcome: String,
}

/// What a closed question's answer must be for a rule to fire.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// This answer.
    Value(String),
    /// One of these answers.
    Values(Vec<String>),
    /// Any answer but these.
    Not(Vec<String>),
    /// A typed question's answer within these bounds (see [`bounds_hold`]).
    Bounds(Vec<Bound>),
}

impl Condition {
    /// Whether `answer` satisfies it.
    pub fn holds(&self, answer: &str) -> bool {
        match self {
            Condition::Value(value) => value == answer,
            Condition::Values(values) => values.iter().any(|v| v == answer),
            Condition::Not(values) => values.iter().all(|v| v != answer),
            // Bounds need the question's type, the other answers and the time.
            Condition::Bounds(_) => false,
        }
    }

    /// The answers it names.
    pub fn named(&self) -> &[String] {
        match self {
            Condition::Value(value) => std::slice::from_ref(value),
            Condition::Values(values) | Condition::Not(values) => values,
            Condition::Bounds(_) => &[],
        }
    }
}

/// What a rule may conclude.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Unique within the pack.
    pub id: String,
    /// A decision, or a lane that holds the result for review.
    pub kind: OutcomeKind,
    /// What the agent does next.
    pub next_step: String,
    /// The escalation shown with it.
    pub escalate: Option<String>,
    /// Lanes only: how many more times the agent may gather and classify again (0 or 1).
    pub allow_retry: u8,
    /// Effects for the shell to carry out (`suppress_contact`).
    pub effects: Vec<String>,
}

/// The kind of an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutcomeKind {
    /// The case is decided.
    Decision,
    /// The result is held and a review item opens.
    Lane,
}

/// Who takes over, and why.
#[derive(Debug, Clone)]
pub struct Escalation {
    /// Unique within the pack.
    pub id: String,
    /// Why the case goes to them.
    pub why: String,
    /// Who they are.
    pub to: String,
    /// What they do.
    pub next_step: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The complete pack of `PACKS.md`, as written there.
    const COMPLETE: &str = r#"
job = "vendor-risk"
title = "Vendor data-access review"

[identity]
mode = "id"                  # id | issued | fields | content
match = "case_insensitive"   # exact | case_insensitive | domain        (id and fields modes)
# fields = ["vendor", "contract"]   fields mode: the field names that make the case
# question = "summary"              content mode: the question whose excerpt text is the case

[attempts]
max = 3                      # default 3
window = "24h"               # default 24h, counted from the case's last decision
escalate = "vendor-desk"     # the escalation when the limit is reached

[unresolved]                 # the pack's "when unresolved" instruction
next_step = "Ask the vendor's security contact for the signed DPA, then ask again."
escalate = "vendor-desk"

[evidence]
max_excerpt_chars = 1000     # longer excerpt: the request is malformed
max_excerpts = 20            # per question
hedges = ["i think", "probably", "maybe", "not sure", "as far as i know", "someone in"]

[confidence]                 # optional dampener: holds a decision back, never rescues one
min = 0.7
lane = "review_low_confidence"

[[questions]]
key = "data_access"
text = "What customer data can the vendor access?"
required = true
judge = "quotes"             # quotes: judged from excerpts; value: a structured value, re-validated
min_excerpts = 1
fix = "Quote the clause that states which customer data the vendor processes."
where_to_look = "The DPA's processing-scope section; the security questionnaire."
answers = [
  { value = "none", means = "The vendor processes no customer data.",
    indicators = ["no customer data", "does not (access|process) (any )?customer data"] },
  { value = "pii",  means = "The vendor processes personal data.",
    indicators = ["personal data", "\\bPII\\b", "names? and e-?mail"] },
]

[[related]]
kind = "counterparty"
required = true

[[rules]]                    # first rule that fires sets the outcome
when = { data_access = "pii" }
outcome = "review_privacy"
[[rules]]
when = { data_access = "none" }
outcome = "approve"

[[outcomes]]
id = "approve"
kind = "decision"
next_step = "Approve the vendor in the procurement system."
[[outcomes]]
id = "review_privacy"
kind = "lane"                # a review lane: the result is held and a review item opens
next_step = "Hand the case to the privacy team."
escalate = "privacy-team"
# allow_retry = 1            # a lane that asks the agent to gather more and classify again once
# effects = ["suppress_contact"]

[[escalations]]
id = "vendor-desk"
why = "The vendor's data access could not be settled from the evidence."
to = "Vendor management desk"
next_step = "Open a vendor-desk ticket with the case id."
[[escalations]]
id = "privacy-team"
why = "The vendor processes personal data."
to = "Privacy team"
next_step = "Review the DPA before approval."
"#;

    fn found(text: &str) -> Vec<(String, String)> {
        parse_pack(text)
            .unwrap_err()
            .into_iter()
            .map(|i| (i.path, i.code))
            .collect()
    }

    #[test]
    fn the_complete_pack_parses() {
        let pack = parse_pack(COMPLETE).unwrap();
        assert_eq!(pack.job, "vendor-risk");
        assert_eq!(pack.identity.mode, IdentityMode::Id);
        assert_eq!(pack.identity.match_rule, MatchRule::CaseInsensitive);
        assert_eq!(pack.attempts.max, 3);
        assert_eq!(pack.attempts.window, SignedDuration::from_hours(24));
        assert_eq!(pack.evidence.hedges, DEFAULT_HEDGES);
        assert_eq!(
            pack.confidence.as_ref().unwrap().lane,
            "review_low_confidence"
        );
        let question = &pack.questions[0];
        assert_eq!((question.judge, question.min_excerpts), (Judge::Quotes, 1));
        assert!(question.answers[1].indicators[1].is_match("pii here"));
        assert!(question.answers[1].indicators[2].is_match("Names and E-mail"));
        assert_eq!(
            pack.rules[0].when["data_access"],
            Condition::Value("pii".into())
        );
        assert_eq!(
            pack.outcome("review_privacy").unwrap().kind,
            OutcomeKind::Lane
        );
        assert_eq!(pack.escalations.len(), 2);
    }

    #[test]
    fn the_complete_pack_check_is_clean() {
        assert_eq!(check_pack(COMPLETE, "vendor-risk.toml"), []);
    }

    #[test]
    fn a_toml_syntax_error_is_one_issue() {
        assert_eq!(found("job = "), [(String::new(), "bad_toml".to_owned())]);
    }

    #[test]
    fn every_issue_is_listed_with_its_path() {
        let text = r#"
job = "x"
colour = "red"
[identity]
mode = "content"
match = "domain"
[attempts]
max = 0
window = "soon"
escalate = "nobody"
[unresolved]
next_step = 3
escalate = "desk"
[confidence]
min = 1.5
lane = "ok"
[[questions]]
key = "q"
text = "Q?"
judge = "value"
fix = "f"
where_to_look = "w"
answers = [
  { value = "a", means = "A", indicators = ["x"] },
  { value = "a", means = "A again" },
]
[[questions]]
key = "q"
text = "Q again?"
judge = "guess"
fix = "f"
where_to_look = "w"
answers = [{ value = "b", means = "B", indicators = ["(open"], extra = 1 }]
[[rules]]
when = { q = ["a", "z"], r = "a", q2 = { not = [] } }
outcome = "missing"
[[rules]]
when = { q = { not = ["y"] } }
outcome = "ok"
[[outcomes]]
id = "ok"
kind = "decision"
next_step = "Go."
allow_retry = 1
escalate = "elsewhere"
[[outcomes]]
id = "ok"
kind = "lane"
next_step = "Hold."
allow_retry = 2
[[escalations]]
id = "desk"
why = "w"
to = "t"
next_step = "n"
[[escalations]]
id = "desk"
why = "w"
to = "t"
"#;
        let want = [
            ("colour", "unknown_key"),
            ("title", "missing"),
            ("identity.match", "not_for_mode"),
            ("identity.question", "needs_question"),
            ("attempts.max", "out_of_range"),
            ("attempts.window", "bad_duration"),
            ("unresolved.next_step", "wrong_type"),
            ("confidence.min", "out_of_range"),
            ("questions[0].answers[0].indicators", "not_for_judge"),
            ("questions[0].answers[1].value", "duplicate"),
            ("questions[1].judge", "unknown_value"),
            ("questions[1].answers[0].extra", "unknown_key"),
            ("questions[1].answers[0].indicators[0]", "bad_regex"),
            ("rules[0].when.q2", "empty_list"),
            ("outcomes[0].allow_retry", "not_for_kind"),
            ("outcomes[1].allow_retry", "out_of_range"),
            ("escalations[1].next_step", "missing"),
            ("questions[1].key", "duplicate"),
            ("outcomes[1].id", "duplicate"),
            ("escalations[1].id", "duplicate"),
            ("attempts.escalate", "unknown_escalation"),
            ("outcomes[0].escalate", "unknown_escalation"),
            ("confidence.lane", "not_a_lane"),
            ("rules[0].when.q[1]", "unknown_answer"),
            ("rules[0].when.q2", "unknown_question"),
            ("rules[0].when.r", "unknown_question"),
            ("rules[0].outcome", "unknown_outcome"),
            ("rules[1].when.q.not[0]", "unknown_answer"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(p, c)| ((*p).to_owned(), (*c).to_owned()))
            .collect();
        assert_eq!(found(text), want);
    }

    #[test]
    fn identity_modes_need_what_they_name() {
        let base = COMPLETE.replace(
            "mode = \"id\"                  # id | issued | fields | content",
            "mode = \"fields\"",
        );
        assert_eq!(
            found(&base),
            [("identity.fields".to_owned(), "needs_fields".to_owned())]
        );
        let content = COMPLETE
            .replace(
                "mode = \"id\"  ",
                "mode = \"content\"\nquestion = \"nope\"\n#",
            )
            .replace("match = \"case_insensitive\"", "");
        assert_eq!(
            found(&content),
            [(
                "identity.question".to_owned(),
                "unknown_question".to_owned()
            )]
        );
    }

    #[test]
    fn conditions_hold_as_written() {
        assert!(Condition::Value("a".into()).holds("a"));
        assert!(Condition::Values(vec!["a".into(), "b".into()]).holds("b"));
        assert!(!Condition::Not(vec!["a".into()]).holds("a"));
        assert!(Condition::Not(vec!["a".into()]).holds("c"));
    }
}
