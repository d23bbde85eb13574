//! What a pack says about a request's envelope and lifecycle: the fields a request must carry,
//! what a source that did not complete (or sent nothing) means, what a question's `unknown`
//! does, and whether a decided case takes more attempts.

use super::read::Reader;
use crate::issue::Issue;

/// The built-in lane a case is held in when a field the pack requires is missing.
pub const MISSING_FIELDS_LANE: &str = "review_missing_fields";
/// The built-in lane a case is held in when a result sent after a reconcile still did not
/// complete.
pub const UNRECONCILED_LANE: &str = "review_unreconciled";

/// What an explicit `unknown` value does to a value question.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OnUnknown {
    /// The question stays open: the agent is asked again, and the attempt limit hands the case
    /// to a person (the default).
    #[default]
    Retry,
    /// The case is held in this lane at once (when no rule fires first): ambiguity goes
    /// straight to a person.
    Lane(String),
    /// `unknown` closes the question as the answer `unknown`, which rules may name.
    Answer,
}

/// A field of the request's envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvelopeField {
    /// `confidence`.
    Confidence,
    /// `source_status`.
    SourceStatus,
}

impl EnvelopeField {
    /// Its name in a request.
    pub fn as_str(self) -> &'static str {
        match self {
            EnvelopeField::Confidence => "confidence",
            EnvelopeField::SourceStatus => "source_status",
        }
    }
}

/// What a result that cannot be judged means.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SourceAction {
    /// Judged as sent: the case stays undecided and the attempt counts (the default).
    #[default]
    Retry,
    /// Fetch the source's final result and send it again: no attempt is used and its values
    /// are ignored; a second one in the same cycle holds the case in `unreconciled`.
    Reconcile,
    /// Held in this lane at once.
    Lane(String),
}

/// The `[envelope]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// Fields a request must send; without one the case is held in `missing_lane`.
    pub require: Vec<EnvelopeField>,
    /// The lane for a request missing a required field (default [`MISSING_FIELDS_LANE`]).
    pub missing_lane: String,
    /// The `source_status` values that mean the source finished (default `["completed"]`).
    pub completed: Vec<String>,
    /// What a `source_status` that is not completed means, by status (`failed = "retry"`).
    pub statuses: std::collections::BTreeMap<String, SourceAction>,
    /// Any other `source_status`.
    pub not_completed: SourceAction,
    /// A completed source whose result gave no question any evidence.
    pub empty: SourceAction,
    /// The lane for a result sent after a reconcile that still cannot be judged (default
    /// [`UNRECONCILED_LANE`]).
    pub unreconciled: String,
}

impl Envelope {
    /// Whether `source_status` says the source finished.
    pub fn finished(&self, source_status: &str) -> bool {
        self.completed.iter().any(|c| c == source_status)
    }
}

impl Default for Envelope {
    fn default() -> Self {
        Self {
            require: Vec::new(),
            missing_lane: MISSING_FIELDS_LANE.to_owned(),
            completed: vec!["completed".to_owned()],
            statuses: std::collections::BTreeMap::new(),
            not_completed: SourceAction::Retry,
            empty: SourceAction::Retry,
            unreconciled: UNRECONCILED_LANE.to_owned(),
        }
    }
}

/// Whether a decided case takes more attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AfterDecision {
    /// A decision ends the cycle; the next request starts a new count (the default).
    #[default]
    NewCycle,
    /// A decision (or a resolved review) is final: a later request is answered `noop`, kept
    /// as history, and changes nothing.
    Final,
}

/// Reads `[envelope]`.
pub(super) fn parse_envelope(top: &Reader<'_>, issues: &mut Vec<Issue>) -> Envelope {
    let mut envelope = Envelope::default();
    let Some(table) = top.table("envelope", issues) else {
        return envelope;
    };
    let known = [
        "require",
        "missing_lane",
        "completed",
        "statuses",
        "not_completed",
        "empty",
        "unreconciled",
    ];
    let r = Reader::new(table, "envelope", &known, issues);
    if let Some(names) = r.strings("require", issues) {
        for (i, name) in names.iter().enumerate() {
            match name.as_str() {
                "confidence" => envelope.require.push(EnvelopeField::Confidence),
                "source_status" => envelope.require.push(EnvelopeField::SourceStatus),
                other => issues.push(Issue::new(
                    format!("envelope.require[{i}]"),
                    "unknown_value",
                    format!(
                        "`{other}` is not an envelope field; expected confidence or source_status"
                    ),
                )),
            }
        }
    }
    if let Some(lane) = r.string("missing_lane", issues) {
        envelope.missing_lane = lane;
    }
    if let Some(lane) = r.string("unreconciled", issues) {
        envelope.unreconciled = lane;
    }
    if let Some(values) = r.strings("completed", issues) {
        if values.is_empty() {
            issues.push(Issue::new(
                "envelope.completed",
                "empty_list",
                "name at least one source status that means the source finished",
            ));
        }
        envelope.completed = values;
    }
    if let Some(statuses) = r.table("statuses", issues) {
        for (status, action) in statuses {
            match action.as_str() {
                Some(text) if !text.trim().is_empty() => {
                    envelope
                        .statuses
                        .insert(status.clone(), source_action(text.to_owned()));
                }
                _ => issues.push(Issue::new(
                    format!("envelope.statuses.{status}"),
                    "wrong_type",
                    "expected \"retry\", \"reconcile\" or a lane's id",
                )),
            }
        }
    }
    if let Some(action) = r.string("not_completed", issues) {
        envelope.not_completed = source_action(action);
    }
    if let Some(action) = r.string("empty", issues) {
        envelope.empty = source_action(action);
    }
    envelope
}

fn source_action(text: String) -> SourceAction {
    match text.as_str() {
        "retry" => SourceAction::Retry,
        "reconcile" => SourceAction::Reconcile,
        _ => SourceAction::Lane(text),
    }
}

/// Reads a question's `on_unknown`.
pub(super) fn parse_on_unknown(r: &Reader<'_>, issues: &mut Vec<Issue>) -> OnUnknown {
    match r.string("on_unknown", issues).as_deref() {
        None | Some("retry") => OnUnknown::Retry,
        Some("answer") => OnUnknown::Answer,
        Some(lane) => OnUnknown::Lane(lane.to_owned()),
    }
}

/// Reads `attempts.after_decision`.
pub(super) fn parse_after_decision(r: &Reader<'_>, issues: &mut Vec<Issue>) -> AfterDecision {
    match r.string("after_decision", issues).as_deref() {
        None | Some("new_cycle") => AfterDecision::NewCycle,
        Some("final") => AfterDecision::Final,
        Some(other) => {
            issues.push(Issue::new(
                r.at("after_decision"),
                "unknown_value",
                format!("`{other}` is not new_cycle or final"),
            ));
            AfterDecision::NewCycle
        }
    }
}

/// The lanes the envelope and the questions name, each with its path, for the lane check.
pub(super) fn named_lanes<'a>(
    envelope: &'a Envelope,
    questions: impl Iterator<Item = (String, &'a OnUnknown)>,
) -> Vec<(String, &'a str)> {
    let mut lanes = vec![
        (
            "envelope.missing_lane".to_owned(),
            envelope.missing_lane.as_str(),
        ),
        (
            "envelope.unreconciled".to_owned(),
            envelope.unreconciled.as_str(),
        ),
    ];
    let by_status = envelope
        .statuses
        .iter()
        .map(|(status, action)| (format!("envelope.statuses.{status}"), action));
    let others = [
        ("envelope.not_completed".to_owned(), &envelope.not_completed),
        ("envelope.empty".to_owned(), &envelope.empty),
    ];
    for (path, action) in by_status.chain(others) {
        if let SourceAction::Lane(lane) = action {
            lanes.push((path, lane.as_str()));
        }
    }
    for (path, on_unknown) in questions {
        if let OnUnknown::Lane(lane) = on_unknown {
            lanes.push((path, lane.as_str()));
        }
    }
    lanes
}
