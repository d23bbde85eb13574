//! Judging: evidence for each question checked against the pack, then the pack's rules applied.
//!
//! [`judge_question`] closes or leaves open one question: excerpts are refused when they repeat
//! an earlier one, hedge, support no answer or support several; a value must name one of the
//! question's answers. [`decide`] turns the closed questions into an outcome by the pack's
//! rules (first that fires wins), and lets confidence hold a decision back, never rescue one.
//!
//! - `rules`: outcome selection from the verdicts (rules, policy gap, confidence, source status)

use serde::{Deserialize, Serialize};

use crate::pack::{Judge, Question};

mod rules;

pub use rules::{Judgement, Status, judge_case, judge_case_with_facts};

/// One quoted passage sent as evidence for a question.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Excerpt {
    /// The document it comes from (`dpa-2024.pdf`).
    pub source: String,
    /// Where in the document (`§4.2`).
    pub locator: String,
    /// The quoted text.
    pub text: String,
}

/// The evidence a request sends for one question: excerpts (quotes questions) or a value
/// (value questions).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionEvidence {
    /// Quoted passages, in the order they were sent.
    #[serde(default)]
    pub excerpts: Option<Vec<Excerpt>>,
    /// A structured value; only a string naming one of the answers closes the question.
    #[serde(default)]
    pub value: Option<serde_json::Value>,
}

/// Why an excerpt was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Why {
    /// It contains one of the pack's hedge phrases.
    Hedged,
    /// It matches no answer's indicators.
    NoAnswer,
    /// It supports several answers, or disagrees with another usable excerpt.
    Conflict,
    /// Its text repeats an earlier excerpt (whitespace and ASCII case folded).
    Duplicate,
    /// A value question's value names none of its answers, or is not a string.
    InvalidValue,
}

/// One excerpt that was not used, by its position in the question's excerpt list (a value
/// question's value is position 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NotUsed {
    /// Its index in the question's excerpt list.
    pub position: usize,
    /// Why it was not used.
    pub why: Why,
}

/// What the evidence says about one question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuestionVerdict {
    /// The question's key.
    pub key: String,
    /// The answer, when the question is closed; `None` while it is open.
    pub answer: Option<String>,
    /// Positions of the excerpts that support the answer.
    pub used: Vec<usize>,
    /// The excerpts that were not used, in position order.
    #[serde(rename = "notUsed")]
    pub not_used: Vec<NotUsed>,
    /// Whether a value question was sent `unknown` explicitly.
    #[serde(skip)]
    pub unknown: bool,
}

impl QuestionVerdict {
    /// Whether the question is closed.
    pub fn is_closed(&self) -> bool {
        self.answer.is_some()
    }
}

/// Judges one question's evidence; `hedges` are lower-cased phrases that make an excerpt
/// unusable.
///
/// Missing evidence, a `null` value or evidence of the wrong kind leaves the question open;
/// checking that a request is well formed happens before this.
pub fn judge_question(
    question: &Question,
    evidence: Option<&QuestionEvidence>,
    hedges: &[String],
) -> QuestionVerdict {
    let mut verdict = QuestionVerdict {
        key: question.key.clone(),
        answer: None,
        used: Vec::new(),
        not_used: Vec::new(),
        unknown: false,
    };
    let Some(evidence) = evidence else {
        return verdict;
    };
    match question.judge {
        Judge::Value => judge_value(question, evidence.value.as_ref(), &mut verdict),
        Judge::Quotes => {
            let excerpts = evidence.excerpts.as_deref().unwrap_or_default();
            judge_quotes(question, excerpts, hedges, &mut verdict);
        }
    }
    verdict
}

/// A structured value: a string naming one of the answers closes the question; `unknown`
/// keeps it open (or closes it as `unknown` when the question says so); anything else is an
/// invalid value, flagged at position 0, and keeps it open.
fn judge_value(
    question: &Question,
    value: Option<&serde_json::Value>,
    verdict: &mut QuestionVerdict,
) {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return;
    };
    if value.as_str() == Some(crate::pack::UNKNOWN_ANSWER) {
        verdict.unknown = true;
        if question.on_unknown == crate::pack::OnUnknown::Answer {
            verdict.answer = Some(crate::pack::UNKNOWN_ANSWER.to_owned());
        }
        return;
    }
    let named = match question.value_type {
        crate::pack::ValueType::Answer => value
            .as_str()
            .and_then(|text| question.answers.iter().find(|a| a.value == text))
            .map(|a| a.value.clone()),
        typed => crate::pack::typed_answer(typed, value),
    };
    match named {
        Some(answer) => verdict.answer = Some(answer),
        None => verdict.not_used.push(NotUsed {
            position: 0,
            why: Why::InvalidValue,
        }),
    }
}

/// Checks each excerpt in order, then closes the question if the used ones agree and are
/// enough.
fn judge_quotes(
    question: &Question,
    excerpts: &[Excerpt],
    hedges: &[String],
    verdict: &mut QuestionVerdict,
) {
    let mut seen: Vec<String> = Vec::new();
    // (position, index of the answer it supports)
    let mut supported: Vec<(usize, usize)> = Vec::new();
    for (position, excerpt) in excerpts.iter().enumerate() {
        let folded = fold(&excerpt.text);
        let why = if seen.contains(&folded) {
            Some(Why::Duplicate)
        } else if is_hedged(&excerpt.text, hedges) {
            Some(Why::Hedged)
        } else {
            let mut matching = question
                .answers
                .iter()
                .enumerate()
                .filter(|(_, a)| a.indicators.iter().any(|r| r.is_match(&excerpt.text)))
                .map(|(i, _)| i);
            match (matching.next(), matching.next()) {
                (None, _) => Some(Why::NoAnswer),
                (Some(answer), None) => {
                    supported.push((position, answer));
                    None
                }
                (Some(_), Some(_)) => Some(Why::Conflict),
            }
        };
        seen.push(folded);
        if let Some(why) = why {
            verdict.not_used.push(NotUsed { position, why });
        }
    }
    let agreed = supported.first().map(|&(_, answer)| answer);
    if supported.iter().any(|&(_, answer)| Some(answer) != agreed) {
        // Usable excerpts disagree: none of them settles the question.
        verdict
            .not_used
            .extend(supported.iter().map(|&(position, _)| NotUsed {
                position,
                why: Why::Conflict,
            }));
        verdict.not_used.sort_by_key(|n| n.position);
        return;
    }
    verdict.used = supported.iter().map(|&(position, _)| position).collect();
    let enough = u32::try_from(verdict.used.len()).unwrap_or(u32::MAX) >= question.min_excerpts;
    if let (Some(answer), true) = (agreed, enough && !verdict.used.is_empty()) {
        verdict.answer = Some(question.answers[answer].value.clone());
    }
}

/// The text with whitespace runs collapsed to one space and ASCII letters lower-cased.
fn fold(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase()
}

/// Whether `text` contains a hedge phrase, ignoring case, at word boundaries.
fn is_hedged(text: &str, hedges: &[String]) -> bool {
    let text = text.to_lowercase();
    hedges.iter().any(|hedge| {
        let hedge = hedge.to_lowercase();
        !hedge.is_empty()
            && text.match_indices(hedge.as_str()).any(|(start, found)| {
                let before = text[..start].chars().next_back();
                let after = text[start + found.len()..].chars().next();
                !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric)
            })
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::{Excerpt, Judgement, QuestionEvidence, Status, Why, is_hedged, judge_question};
    use crate::pack::{LOW_CONFIDENCE_LANE, POLICY_GAP_LANE, Pack, parse_pack};

    /// `judge_case` at a fixed time: these packs have no date bounds.
    fn judged(
        pack: &Pack,
        questions: &BTreeMap<String, QuestionEvidence>,
        confidence: Option<f64>,
        source_status: Option<&str>,
    ) -> Judgement {
        super::judge_case(
            pack,
            questions,
            confidence,
            source_status,
            jiff::Timestamp::UNIX_EPOCH,
        )
    }

    /// A pack shaped like `packs/vendor-risk.toml`, with a `needs_human` rule first and a
    /// value question; `min` is `data_access`'s `min_excerpts`.
    fn pack(min: u32, rules: &str) -> Pack {
        let text = format!(
            r#"
job = "vendor-risk"
title = "Vendor review"
[identity]
mode = "id"
[attempts]
escalate = "desk"
[unresolved]
next_step = "Ask again."
escalate = "desk"
[confidence]
min = 0.7
lane = "{LOW_CONFIDENCE_LANE}"
[[questions]]
key = "needs_human"
text = "Does a person need to look?"
required = false
judge = "value"
fix = "f"
where_to_look = "w"
answers = [{{ value = "yes", means = "Y" }}, {{ value = "no", means = "N" }}]
[[questions]]
key = "data_access"
text = "Which customer data does the vendor handle?"
min_excerpts = {min}
fix = "f"
where_to_look = "w"
answers = [
  {{ value = "none", means = "None.", indicators = ["no customer data"] }},
  {{ value = "pii", means = "PII.", indicators = ["personal data", "\\bPII\\b"] }},
]
[[questions]]
key = "subprocessors"
text = "Subprocessors?"
required = false
fix = "f"
where_to_look = "w"
answers = [
  {{ value = "none", means = "None.", indicators = ["no sub-?processors"] }},
  {{ value = "listed", means = "Listed.", indicators = ["sub-?processors (are|include)"] }},
]
{rules}
[[outcomes]]
id = "approve"
kind = "decision"
next_step = "Approve."
[[outcomes]]
id = "reject"
kind = "decision"
next_step = "Reject."
[[outcomes]]
id = "review_privacy"
kind = "lane"
next_step = "Hold."
[[outcomes]]
id = "human"
kind = "lane"
next_step = "A person looks."
[[escalations]]
id = "desk"
why = "w"
to = "t"
next_step = "n"
"#
        );
        parse_pack(&text).unwrap_or_else(|issues| panic!("{issues:?}"))
    }

    const RULES: &str = r#"
[[rules]]
when = { needs_human = "yes" }
outcome = "human"
[[rules]]
when = { data_access = "pii" }
outcome = "review_privacy"
[[rules]]
when = { data_access = "none", subprocessors = { not = ["listed"] } }
outcome = "approve"
[[rules]]
when = { data_access = "none" }
outcome = "reject"
"#;

    fn quotes(texts: &[&str]) -> QuestionEvidence {
        QuestionEvidence {
            excerpts: Some(
                texts
                    .iter()
                    .map(|t| Excerpt {
                        source: "dpa.pdf".into(),
                        locator: "§1".into(),
                        text: (*t).to_owned(),
                    })
                    .collect(),
            ),
            value: None,
        }
    }

    fn value(v: serde_json::Value) -> QuestionEvidence {
        QuestionEvidence {
            excerpts: None,
            value: Some(v),
        }
    }

    fn request(items: Vec<(&str, QuestionEvidence)>) -> BTreeMap<String, QuestionEvidence> {
        items.into_iter().map(|(k, e)| (k.to_owned(), e)).collect()
    }

    fn hedges(pack: &Pack) -> &[String] {
        &pack.evidence.hedges
    }

    #[test]
    fn every_why_is_reported_by_position() {
        let pack = pack(1, RULES);
        let question = pack.question("data_access").unwrap();
        let evidence = quotes(&[
            "We hold no customer data.",
            "We  hold NO customer data. ",
            "I think there is no customer data.",
            "The weather is fine.",
            "No customer data, only PII.",
        ]);
        let verdict = judge_question(question, Some(&evidence), hedges(&pack));
        assert_eq!(verdict.answer.as_deref(), Some("none"));
        assert_eq!(verdict.used, [0]);
        let whys: Vec<(usize, Why)> = verdict
            .not_used
            .iter()
            .map(|n| (n.position, n.why))
            .collect();
        assert_eq!(
            whys,
            [
                (1, Why::Duplicate),
                (2, Why::Hedged),
                (3, Why::NoAnswer),
                (4, Why::Conflict)
            ]
        );
        let json = serde_json::to_value(&verdict.not_used).unwrap();
        assert_eq!(json[0]["why"], "duplicate");
        assert_eq!(json[2]["why"], "no_answer");
    }

    #[test]
    fn hedges_match_at_word_boundaries_only() {
        let hedges = vec!["maybe".to_owned(), "i think".to_owned()];
        assert!(is_hedged("MAYBE it is.", &hedges));
        assert!(is_hedged("Well, I Think so", &hedges));
        assert!(!is_hedged("maybelline holds no customer data", &hedges));
        assert!(!is_hedged("hi thinking", &hedges));
    }

    #[test]
    fn used_excerpts_that_disagree_are_conflicts_and_keep_it_open() {
        let pack = pack(1, RULES);
        let question = pack.question("data_access").unwrap();
        let evidence = quotes(&["no customer data", "personal data is stored"]);
        let verdict = judge_question(question, Some(&evidence), hedges(&pack));
        assert_eq!(verdict.answer, None);
        assert!(verdict.used.is_empty());
        assert!(verdict.not_used.iter().all(|n| n.why == Why::Conflict));
        assert_eq!(verdict.not_used.len(), 2);
    }

    #[test]
    fn min_excerpts_two_needs_two_agreeing_excerpts() {
        let pack = pack(2, RULES);
        let question = pack.question("data_access").unwrap();
        let one = quotes(&["personal data", "maybe PII"]);
        assert_eq!(
            judge_question(question, Some(&one), hedges(&pack)).answer,
            None
        );
        let two = quotes(&["personal data", "PII is stored"]);
        let verdict = judge_question(question, Some(&two), hedges(&pack));
        assert_eq!(verdict.answer.as_deref(), Some("pii"));
        assert_eq!(verdict.used, [0, 1]);
    }

    #[test]
    fn values_close_only_on_a_named_answer() {
        let pack = pack(1, RULES);
        let question = pack.question("needs_human").unwrap();
        let judge =
            |e: Option<&QuestionEvidence>| judge_question(question, e, hedges(&pack)).answer;
        assert_eq!(
            judge(Some(&value(serde_json::json!("yes")))).as_deref(),
            Some("yes")
        );
        assert_eq!(judge(Some(&value(serde_json::json!("maybe")))), None);
        assert_eq!(judge(Some(&value(serde_json::json!("unknown")))), None);
        assert_eq!(judge(Some(&value(serde_json::json!(true)))), None);
        assert_eq!(judge(Some(&value(serde_json::Value::Null))), None);
        assert_eq!(judge(Some(&QuestionEvidence::default())), None);
        assert_eq!(judge(None), None);
    }

    #[test]
    fn evidence_deserializes_strictly() {
        let ok: QuestionEvidence =
            serde_json::from_str(r#"{"excerpts": [{"source": "a", "locator": "b", "text": "c"}]}"#)
                .unwrap();
        assert_eq!(ok.excerpts.unwrap()[0].text, "c");
        assert!(serde_json::from_str::<QuestionEvidence>(r#"{"value": 1, "extra": 2}"#).is_err());
        assert!(
            serde_json::from_str::<Excerpt>(
                r#"{"source": "a", "locator": "b", "text": "c", "x": 1}"#
            )
            .is_err()
        );
    }

    #[test]
    fn hedged_conflicting_missing_or_null_evidence_never_decides() {
        let pack = pack(1, RULES);
        for evidence in [
            quotes(&["probably no customer data"]),
            quotes(&["no customer data but personal data"]),
            quotes(&["no customer data", "PII"]),
            quotes(&[]),
            QuestionEvidence::default(),
            value(serde_json::Value::Null),
        ] {
            let judgement = judged(&pack, &request(vec![("data_access", evidence)]), None, None);
            assert_eq!(judgement.status, Status::Undecided, "{judgement:?}");
            assert_eq!(judgement.outcome, None);
            assert!(judgement.open.contains(&"data_access".to_owned()));
        }
        let judgement = judged(&pack, &BTreeMap::new(), Some(1.0), None);
        assert_eq!(judgement.status, Status::Undecided);
        assert_eq!(
            judgement.open,
            ["needs_human", "data_access", "subprocessors"]
        );
    }

    #[test]
    fn the_first_rule_that_fires_wins() {
        let pack = pack(1, RULES);
        let approve = judged(
            &pack,
            &request(vec![
                ("data_access", quotes(&["no customer data"])),
                ("subprocessors", quotes(&["no subprocessors"])),
            ]),
            None,
            Some("completed"),
        );
        assert_eq!(approve.status, Status::Decided);
        assert_eq!(approve.outcome.as_deref(), Some("approve"));
        assert_eq!(approve.answers["subprocessors"], "none");
        let reject = judged(
            &pack,
            &request(vec![
                ("data_access", quotes(&["no customer data"])),
                (
                    "subprocessors",
                    quotes(&["subprocessors are listed in annex B"]),
                ),
            ]),
            None,
            None,
        );
        assert_eq!(reject.outcome.as_deref(), Some("reject"));
        let lane = judged(
            &pack,
            &request(vec![("data_access", quotes(&["PII"]))]),
            None,
            None,
        );
        assert_eq!(
            (lane.status, lane.outcome.as_deref()),
            (Status::Held, Some("review_privacy"))
        );
    }

    #[test]
    fn a_rule_naming_one_question_fires_while_others_are_open() {
        let pack = pack(1, RULES);
        let judgement = judged(
            &pack,
            &request(vec![("needs_human", value(serde_json::json!("yes")))]),
            None,
            None,
        );
        assert_eq!(judgement.status, Status::Held);
        assert_eq!(judgement.outcome.as_deref(), Some("human"));
        assert_eq!(judgement.open, ["data_access", "subprocessors"]);
    }

    #[test]
    fn the_policy_gap_lane_holds_when_required_questions_close_and_no_rule_fires() {
        let pack = pack(
            1,
            "[[rules]]\nwhen = { data_access = \"pii\" }\noutcome = \"review_privacy\"",
        );
        let judgement = judged(
            &pack,
            &request(vec![("data_access", quotes(&["no customer data"]))]),
            None,
            None,
        );
        assert_eq!(judgement.status, Status::Held);
        assert_eq!(judgement.outcome.as_deref(), Some(POLICY_GAP_LANE));
        let open = judged(&pack, &BTreeMap::new(), None, None);
        assert_eq!(open.status, Status::Undecided);
    }

    #[test]
    fn an_empty_when_always_fires() {
        let pack = pack(1, "[[rules]]\nwhen = {}\noutcome = \"approve\"");
        let judgement = judged(&pack, &BTreeMap::new(), None, None);
        assert_eq!(judgement.status, Status::Decided);
    }

    #[test]
    fn confidence_only_holds_back() {
        let pack = pack(1, RULES);
        let approve = request(vec![("data_access", quotes(&["no customer data"]))]);
        let low = judged(&pack, &approve, Some(0.5), None);
        assert_eq!(
            (low.status, low.outcome.as_deref()),
            (Status::Held, Some(LOW_CONFIDENCE_LANE))
        );
        // `approve` names `subprocessors`, which is open, so the next rule gives `reject`.
        let high = judged(&pack, &approve, Some(0.9), None);
        assert_eq!(
            (high.status, high.outcome.as_deref()),
            (Status::Decided, Some("reject"))
        );
        let missing = judged(&pack, &approve, None, None);
        assert_eq!(missing.status, Status::Decided);
        let undecided = judged(&pack, &BTreeMap::new(), Some(1.0), None);
        assert_eq!(undecided.status, Status::Undecided);
        let lane = request(vec![("data_access", quotes(&["PII"]))]);
        let held = judged(&pack, &lane, Some(0.1), None);
        assert_eq!(
            (held.status, held.outcome.as_deref()),
            (Status::Held, Some("review_privacy"))
        );
    }

    #[test]
    fn a_pack_may_need_a_confidence_to_close_and_it_still_only_holds_back() {
        let mut pack = pack(1, RULES);
        pack.confidence.as_mut().unwrap().close_needs_confidence = true;
        let approve = request(vec![("data_access", quotes(&["no customer data"]))]);
        let missing = judged(&pack, &approve, None, None);
        assert_eq!(
            (missing.status, missing.outcome.as_deref()),
            (Status::Held, Some(LOW_CONFIDENCE_LANE)),
            "{missing:?}"
        );
        assert!(
            missing.reason.contains("no confidence"),
            "{}",
            missing.reason
        );
        let high = judged(&pack, &approve, Some(0.9), None);
        assert_eq!(high.status, Status::Decided);
        // Without evidence, no confidence rescues anything.
        let undecided = judged(&pack, &BTreeMap::new(), None, None);
        assert_eq!(undecided.status, Status::Undecided);
    }

    #[test]
    fn a_partial_source_decides_nothing() {
        let pack = pack(1, RULES);
        let approve = request(vec![("data_access", quotes(&["no customer data"]))]);
        let judgement = judged(&pack, &approve, Some(1.0), Some("partial"));
        assert_eq!(judgement.status, Status::Undecided);
        assert_eq!(judgement.outcome, None);
        // Its values are no evidence: nothing closes, so a later real answer is progress.
        assert!(judgement.answers.is_empty(), "{judgement:?}");
        assert!(judgement.open.contains(&"data_access".to_owned()));
        assert!(judgement.source_unfinished);
        assert!(judgement.reason.contains("partial"));
    }

    /// One excerpt that can never support exactly one answer on its own.
    fn unusable() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("the weather is fine".to_owned()),
            Just("Maybe there is no customer data".to_owned()),
            Just("I think PII is stored".to_owned()),
            Just("no customer data, just personal data".to_owned()),
            Just("probably personal data".to_owned()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            rng_seed: proptest::test_runner::RngSeed::Fixed(3),
            cases: 256,
            ..ProptestConfig::default()
        })]

        /// Invariant 3: hedged, empty and conflicting excerpts never decide, alone or mixed
        /// with clean excerpts that disagree.
        #[test]
        fn unusable_excerpts_never_decide(
            texts in proptest::collection::vec(unusable(), 0..6),
            clean in proptest::collection::vec(any::<bool>(), 0..3),
            confidence in proptest::option::of(0.0..=1.0f64),
        ) {
            let pack = pack(1, RULES);
            let mut all = texts;
            // Clean excerpts for both answers at once: they disagree, so none is used.
            if clean.len() >= 2 {
                all.push("no customer data".to_owned());
                all.push("PII".to_owned());
            }
            let refs: Vec<&str> = all.iter().map(String::as_str).collect();
            let judgement = judged(
                &pack,
                &request(vec![("data_access", quotes(&refs))]),
                confidence,
                None,
            );
            prop_assert_ne!(judgement.status, Status::Decided);
            prop_assert!(judgement.open.contains(&"data_access".to_owned()));
        }
    }
}
