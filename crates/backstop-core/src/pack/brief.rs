//! A job's brief: what an agent needs from a pack to write a good first request, and nothing
//! it must not see.
//!
//! A brief shows the questions with their answers and what each means, where to look and what
//! to send, the related records, how a case is named, the attempt limit and its window, what
//! happens while a case is unresolved, the escalations with who they go to, and the exact JSON
//! Schema of a decision request. It leaves out
//! what would let an agent steer the judgement instead of gathering evidence: the answers'
//! indicator patterns, the rules, the hedge phrases and the confidence threshold.

use serde::Serialize;

use super::{
    Escalation, IdentityMode, Judge, MatchRule, OnUnknown, OutcomeKind, Pack, Question, ValueType,
};

/// A job's brief (`GET /v1/jobs/{job}`, `backstop pack brief JOB`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobBrief {
    /// The job's name, as requests name it.
    pub job: String,
    /// Its title, for people.
    pub title: String,
    /// How a request names its case.
    pub identity: IdentityBrief,
    /// The questions, in the order the pack asks them.
    pub questions: Vec<QuestionBrief>,
    /// The related records a request brings along.
    pub related: Vec<RelatedBrief>,
    /// Request fields the pack requires besides the evidence (`confidence`, `source_status`).
    pub required_fields: Vec<String>,
    /// Evidence caps: longer or more excerpts make the request malformed.
    pub evidence: EvidenceBrief,
    /// How many attempts a case gets, and who takes over after the last.
    pub attempts: AttemptsBrief,
    /// What the agent does while the case is unresolved, and the escalation shown with it.
    pub unresolved: UnresolvedBrief,
    /// The outcomes a case may end in: decisions, and lanes that hold it for a person.
    pub outcomes: Vec<OutcomeBrief>,
    /// The escalations, with who each goes to.
    pub escalations: Vec<EscalationBrief>,
    /// Whether the job takes side effects (`POST /v1/jobs/{job}/dispatches`).
    pub dispatch: bool,
    /// The JSON Schema of a decision request, exactly as the service checks it.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub request_schema: serde_json::Value,
}

/// How a request names its case.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IdentityBrief {
    /// `id`, `issued`, `fields` or `content`.
    pub mode: &'static str,
    /// How two names are compared: `exact`, `case_insensitive` or `domain`.
    #[serde(rename = "match")]
    pub match_rule: &'static str,
    /// What to send, in words.
    pub how: String,
}

/// One question, without the patterns that judge it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QuestionBrief {
    /// The key a request answers it under.
    pub key: String,
    /// The question.
    pub text: String,
    /// Whether the case stays undecided while it is open.
    pub required: bool,
    /// `quotes` (answered with excerpts) or `value` (answered with a value).
    pub judge: &'static str,
    /// What a value answer is: `answer` (one of `answers`), `date` or `number`.
    pub value_type: &'static str,
    /// The fewest usable excerpts that close it (quotes only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_excerpts: Option<u32>,
    /// What to send.
    pub fix: String,
    /// Where the evidence usually is.
    pub where_to_look: String,
    /// The answers it may have, and what each means.
    pub answers: Vec<AnswerBrief>,
    /// What the value `unknown` does (value questions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_unknown: Option<String>,
}

/// One answer and what it means.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AnswerBrief {
    /// The answer.
    pub value: String,
    /// What it means.
    pub means: String,
}

/// A related record.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RelatedBrief {
    /// Its kind; a request sends it under `related.<kind>` with an `id`.
    pub kind: String,
    /// Whether a request without it is a gap.
    pub required: bool,
}

/// Evidence caps.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EvidenceBrief {
    /// The longest excerpt, in characters.
    pub max_excerpt_chars: u32,
    /// The most excerpts per question.
    pub max_excerpts: u32,
}

/// The attempt limit.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptsBrief {
    /// The most attempts in a window; an attempt that shows progress earns one more.
    pub max: u32,
    /// The window, from the case's last decision (`24h`).
    pub window: String,
    /// The escalation when the limit is reached.
    pub escalate: String,
}

/// The pack's instruction while a case is unresolved.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UnresolvedBrief {
    /// What the agent does next.
    #[serde(rename = "nextStep")]
    pub next_step: String,
    /// The escalation shown with it.
    pub escalate: String,
}

/// An outcome a case may end in.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OutcomeBrief {
    /// Its id, as a result names it.
    pub id: String,
    /// `decision`, or `lane` (held for a person).
    pub kind: &'static str,
    /// What the agent does next.
    #[serde(rename = "nextStep")]
    pub next_step: String,
    /// The escalation shown with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalate: Option<String>,
}

/// An escalation: who takes over and why.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EscalationBrief {
    /// Its id.
    pub id: String,
    /// Why a case goes to them.
    pub why: String,
    /// Who they are.
    pub to: String,
    /// What they do.
    #[serde(rename = "nextStep")]
    pub next_step: String,
}

/// One line per job for a listing (`GET /v1/jobs`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobSummary {
    /// The job's name.
    pub job: String,
    /// Its title.
    pub title: String,
    /// How many questions it asks.
    pub questions: usize,
    /// Whether it takes side effects.
    pub dispatch: bool,
}

impl JobSummary {
    /// The summary of `pack`.
    pub fn of(pack: &Pack) -> JobSummary {
        JobSummary {
            job: pack.job.clone(),
            title: pack.title.clone(),
            questions: pack.questions.len(),
            dispatch: pack.dispatch.is_some(),
        }
    }
}

/// The brief of `pack`.
///
/// ```
/// let pack = backstop_core::pack::parse_pack(r#"
/// job = "greeting"
/// title = "Greeting check"
/// [identity]
/// mode = "id"
/// [attempts]
/// escalate = "desk"
/// [unresolved]
/// next_step = "Ask again."
/// escalate = "desk"
/// [[questions]]
/// key = "greets"
/// text = "Does the page greet the reader?"
/// fix = "Quote the greeting."
/// where_to_look = "The page's first line."
/// answers = [{ value = "yes", means = "It greets.", indicators = ["hello"] }]
/// [[rules]]
/// when = { greets = "yes" }
/// outcome = "ok"
/// [[outcomes]]
/// id = "ok"
/// kind = "decision"
/// next_step = "Publish."
/// [[escalations]]
/// id = "desk"
/// why = "Nobody could tell."
/// to = "The editors"
/// next_step = "Read the page."
/// "#).unwrap();
/// let brief = backstop_core::pack::brief(&pack);
/// assert_eq!(brief.questions[0].answers[0].means, "It greets.");
/// assert_eq!(brief.escalations[0].to, "The editors");
/// ```
pub fn brief(pack: &Pack) -> JobBrief {
    JobBrief {
        job: pack.job.clone(),
        title: pack.title.clone(),
        identity: identity(pack),
        questions: pack.questions.iter().map(question).collect(),
        related: pack
            .related
            .iter()
            .map(|r| RelatedBrief {
                kind: r.kind.clone(),
                required: r.required,
            })
            .collect(),
        required_fields: pack
            .envelope
            .require
            .iter()
            .map(|f| f.as_str().to_owned())
            .collect(),
        evidence: EvidenceBrief {
            max_excerpt_chars: pack.evidence.max_excerpt_chars,
            max_excerpts: pack.evidence.max_excerpts,
        },
        attempts: AttemptsBrief {
            max: pack.attempts.max,
            window: format!("{:#}", pack.attempts.window),
            escalate: pack.attempts.escalate.clone(),
        },
        unresolved: UnresolvedBrief {
            next_step: pack.unresolved.next_step.clone(),
            escalate: pack.unresolved.escalate.clone(),
        },
        outcomes: pack
            .outcomes
            .iter()
            .map(|o| OutcomeBrief {
                id: o.id.clone(),
                kind: match o.kind {
                    OutcomeKind::Decision => "decision",
                    OutcomeKind::Lane => "lane",
                },
                next_step: o.next_step.clone(),
                escalate: o.escalate.clone(),
            })
            .collect(),
        escalations: pack.escalations.iter().map(escalation).collect(),
        dispatch: pack.dispatch.is_some(),
        request_schema: crate::wire_schema::request_schema(pack),
    }
}

fn identity(pack: &Pack) -> IdentityBrief {
    let id = &pack.identity;
    let (mode, how) = match id.mode {
        IdentityMode::Id => ("id", "Send `case.id`: the subject's own name.".to_owned()),
        IdentityMode::Issued => (
            "issued",
            "Send no case on the first request; backstop issues `case.id` in its result. Send it back as `case.id` on every later request.".to_owned(),
        ),
        IdentityMode::Fields => (
            "fields",
            format!(
                "Send `case.fields` with {}: together they name the case.",
                id.fields
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        IdentityMode::Content => (
            "content",
            format!(
                "Send no case: the excerpt text of question `{}` names it.",
                id.question.as_deref().unwrap_or_default()
            ),
        ),
    };
    let match_rule = match id.match_rule {
        MatchRule::Exact => "exact",
        MatchRule::CaseInsensitive => "case_insensitive",
        MatchRule::Domain => "domain",
    };
    IdentityBrief {
        mode,
        match_rule,
        how,
    }
}

fn question(q: &Question) -> QuestionBrief {
    let quotes = q.judge == Judge::Quotes;
    QuestionBrief {
        key: q.key.clone(),
        text: q.text.clone(),
        required: q.required,
        judge: if quotes { "quotes" } else { "value" },
        value_type: match q.value_type {
            ValueType::Answer => "answer",
            ValueType::Date => "date",
            ValueType::Number => "number",
        },
        min_excerpts: quotes.then_some(q.min_excerpts),
        fix: q.fix.clone(),
        where_to_look: q.where_to_look.clone(),
        answers: q
            .answers
            .iter()
            .map(|a| AnswerBrief {
                value: a.value.clone(),
                means: a.means.clone(),
            })
            .collect(),
        on_unknown: (!quotes).then(|| match &q.on_unknown {
            OnUnknown::Retry => "the question stays open; ask again".to_owned(),
            OnUnknown::Lane(lane) => format!("the case is held in `{lane}` for a person"),
            OnUnknown::Answer => "`unknown` is an answer the rules may use".to_owned(),
        }),
    }
}

fn escalation(e: &Escalation) -> EscalationBrief {
    EscalationBrief {
        id: e.id.clone(),
        why: e.why.clone(),
        to: e.to.clone(),
        next_step: e.next_step.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::parse_pack;

    const PACK: &str = include_str!("../../../../packs/vendor-risk.toml");

    #[test]
    fn a_brief_shows_what_an_agent_needs() {
        let brief = brief(&parse_pack(PACK).unwrap());
        assert_eq!(brief.job, "vendor-risk");
        assert_eq!(brief.identity.match_rule, "domain");
        assert_eq!(brief.questions.len(), 2);
        let data = &brief.questions[0];
        assert_eq!((data.key.as_str(), data.required), ("data_access", true));
        assert_eq!(data.min_excerpts, Some(1));
        assert_eq!(data.answers[1].value, "pii");
        assert!(data.where_to_look.contains("data processing agreement"));
        assert_eq!(brief.related[0].kind, "counterparty");
        assert!(brief.related[0].required);
        assert_eq!(brief.attempts.max, 3);
        assert_eq!(brief.attempts.window, "24h");
        assert_eq!(brief.attempts.escalate, "vendor-desk");
        let privacy = brief
            .escalations
            .iter()
            .find(|e| e.id == "privacy-team")
            .unwrap();
        assert_eq!(privacy.to, "Privacy team");
        assert!(!brief.dispatch);
    }

    #[test]
    fn a_brief_hides_what_would_let_an_agent_steer_the_judgement() {
        let mut brief = serde_json::to_value(brief(&parse_pack(PACK).unwrap())).unwrap();
        // The request schema says what a request may carry, in the service's own words.
        assert!(brief["request_schema"]["properties"]["questions"].is_object());
        brief["request_schema"] = serde_json::Value::Null;
        let text = brief.to_string();
        // An indicator pattern, a rule's shape, the hedges and the confidence threshold.
        for hidden in [
            "no sub-?processors",
            "\\\\bPII",
            "when",
            "indicators",
            "rules",
            "hedges",
            "probably",
            "0.7",
        ] {
            assert!(!text.contains(hidden), "the brief shows {hidden}: {text}");
        }
    }

    #[test]
    fn a_fields_identity_names_its_fields_and_the_required_envelope() {
        let pack = parse_pack(include_str!("../../../../packs/po-acknowledgement.toml")).unwrap();
        let brief = brief(&pack);
        assert_eq!(brief.identity.mode, "fields");
        assert!(brief.identity.how.contains("`supplier`, `po_number`"));
        assert_eq!(brief.required_fields, ["confidence", "source_status"]);
        assert!(brief.dispatch);
    }
}
