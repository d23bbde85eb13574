//! The pack keys that let a pack send ambiguity to a person, require envelope fields,
//! reconcile a source that did not finish, and make a decision final: each judged, and each
//! mistake refused by `pack check` with its path.

use std::collections::BTreeMap;

use backstop_core::judge::{QuestionEvidence, Status, decide};
use backstop_core::pack::{AfterDecision, OnUnknown, Pack, parse_pack};
use serde_json::json;

/// A pack with one value question (`ok`: yes, no, unknown), a decision `done` on yes, a lane
/// `person`; `extra` is TOML appended, `question` TOML added to the question.
fn pack_text(question: &str, extra: &str) -> String {
    format!(
        r#"
job = "demo"
title = "Demo"
identity = {{ mode = "issued" }}
attempts = {{ escalate = "desk" }}
unresolved = {{ next_step = "Look again.", escalate = "desk" }}

[[questions]]
key = "ok"
text = "Is it ok?"
judge = "value"
fix = "Send ok."
where_to_look = "The result."
answers = [
  {{ value = "yes", means = "It is." }},
  {{ value = "no", means = "It is not." }},
  {{ value = "unknown", means = "Nobody knows." }},
]
{question}

[[rules]]
when = {{ ok = "yes" }}
outcome = "done"

[[outcomes]]
id = "done"
kind = "decision"
next_step = "Close it."

[[outcomes]]
id = "person"
kind = "lane"
next_step = "A person looks."

[[escalations]]
id = "desk"
why = "Unsettled."
to = "The desk"
next_step = "Open a ticket."
{extra}
"#
    )
}

fn pack(question: &str, extra: &str) -> Pack {
    parse_pack(&pack_text(question, extra)).unwrap_or_else(|issues| panic!("{issues:?}"))
}

fn issues(question: &str, extra: &str) -> Vec<(String, String)> {
    let found = parse_pack(&pack_text(question, extra)).expect_err("refused");
    found.into_iter().map(|i| (i.path, i.code)).collect()
}

fn ok(value: serde_json::Value) -> BTreeMap<String, QuestionEvidence> {
    BTreeMap::from([(
        "ok".to_owned(),
        QuestionEvidence {
            excerpts: None,
            value: Some(value),
        },
    )])
}

fn standing(
    pack: &Pack,
    value: serde_json::Value,
    source: Option<&str>,
) -> (Status, Option<String>) {
    let judgement = decide(pack, &ok(value), Some(1.0), source);
    (judgement.status, judgement.outcome)
}

#[test]
fn on_unknown_retries_by_default_goes_to_a_lane_or_closes_as_an_answer() {
    let retry = pack("", "");
    assert_eq!(retry.questions[0].on_unknown, OnUnknown::Retry);
    assert_eq!(
        standing(&retry, json!("unknown"), None),
        (Status::Undecided, None)
    );

    let lane = pack(r#"on_unknown = "person""#, "");
    assert_eq!(
        standing(&lane, json!("unknown"), None),
        (Status::Held, Some("person".to_owned()))
    );
    // A known answer is judged as before.
    assert_eq!(
        standing(&lane, json!("yes"), None),
        (Status::Decided, Some("done".to_owned()))
    );

    let answer = pack(
        r#"on_unknown = "answer""#,
        "[[rules]]\nwhen = { ok = \"unknown\" }\noutcome = \"person\"\n",
    );
    assert_eq!(
        standing(&answer, json!("unknown"), None),
        (Status::Held, Some("person".to_owned()))
    );
}

#[test]
fn a_rule_may_name_unknown_only_where_unknown_is_an_answer() {
    let rule = "[[rules]]\nwhen = { ok = \"unknown\" }\noutcome = \"person\"\n";
    assert_eq!(
        issues("", rule),
        [("rules[1].when.ok".to_owned(), "never_matches".to_owned())]
    );
    pack(r#"on_unknown = "answer""#, rule);
}

#[test]
fn on_unknown_mistakes_are_refused_with_their_path() {
    assert_eq!(
        issues(r#"on_unknown = "nobody""#, ""),
        [(
            "questions[0].on_unknown".to_owned(),
            "unknown_outcome".to_owned()
        )]
    );
    assert_eq!(
        issues(r#"on_unknown = "done""#, ""),
        [(
            "questions[0].on_unknown".to_owned(),
            "not_a_lane".to_owned()
        )]
    );
}

#[test]
fn required_envelope_fields_hold_a_request_without_them() {
    let required = pack(
        "",
        "[envelope]\nrequire = [\"confidence\", \"source_status\"]\n",
    );
    let judgement = decide(&required, &ok(json!("yes")), None, Some("completed"));
    assert_eq!(judgement.status, Status::Held);
    assert_eq!(judgement.outcome.as_deref(), Some("review_missing_fields"));
    let judgement = decide(&required, &ok(json!("yes")), Some(1.0), None);
    assert_eq!(judgement.outcome.as_deref(), Some("review_missing_fields"));
    let judgement = decide(&required, &ok(json!("yes")), Some(1.0), Some("completed"));
    assert_eq!(judgement.status, Status::Decided);

    let own_lane = pack(
        "",
        "[envelope]\nrequire = [\"confidence\"]\nmissing_lane = \"person\"\n",
    );
    let judgement = decide(&own_lane, &ok(json!("yes")), None, None);
    assert_eq!(judgement.outcome.as_deref(), Some("person"));
}

#[test]
fn an_unfinished_source_is_retried_reconciled_or_held_by_status() {
    let envelope = "[envelope]\nnot_completed = \"reconcile\"\nempty = \"person\"\n\
                    [envelope.statuses]\nfailed = \"retry\"\nrejected = \"person\"\n";
    let pack = pack("", envelope);
    assert_eq!(
        standing(&pack, json!("yes"), Some("running")),
        (Status::Reconcile, None)
    );
    assert_eq!(
        standing(&pack, json!("yes"), Some("failed")),
        (Status::Undecided, None)
    );
    assert_eq!(
        standing(&pack, json!("yes"), Some("rejected")),
        (Status::Held, Some("person".to_owned()))
    );
    let empty = decide(&pack, &BTreeMap::new(), Some(1.0), Some("completed"));
    assert_eq!(
        (empty.status, empty.outcome.as_deref()),
        (Status::Held, Some("person"))
    );
    // The values of an unfinished source are no evidence.
    let failed = decide(&pack, &ok(json!("yes")), Some(1.0), Some("failed"));
    assert!(failed.answers.is_empty() && failed.source_unfinished);
}

#[test]
fn envelope_mistakes_are_refused_with_their_path() {
    let found = issues(
        "",
        "[envelope]\nrequire = [\"mood\"]\nnot_completed = \"done\"\ncompleted = []\n\
         [envelope.statuses]\nfailed = \"nobody\"\nlost = 3\n",
    );
    let expected = [
        ("envelope.completed", "empty_list"),
        ("envelope.not_completed", "not_a_lane"),
        ("envelope.require[0]", "unknown_value"),
        ("envelope.statuses.failed", "unknown_outcome"),
        ("envelope.statuses.lost", "wrong_type"),
    ];
    let mut found = found;
    found.sort();
    assert_eq!(found, expected.map(|(p, c)| (p.to_owned(), c.to_owned())));
}

#[test]
fn after_decision_is_new_cycle_by_default_or_final() {
    assert_eq!(
        pack("", "").attempts.after_decision,
        AfterDecision::NewCycle
    );
    let text = pack_text("", "").replace(
        "attempts = { escalate = \"desk\" }",
        "attempts = { escalate = \"desk\", after_decision = \"final\" }",
    );
    assert_eq!(
        parse_pack(&text).unwrap().attempts.after_decision,
        AfterDecision::Final
    );
    let bad = pack_text("", "").replace(
        "attempts = { escalate = \"desk\" }",
        "attempts = { escalate = \"desk\", after_decision = \"forever\" }",
    );
    let found: Vec<(String, String)> = parse_pack(&bad)
        .unwrap_err()
        .into_iter()
        .map(|i| (i.path, i.code))
        .collect();
    assert_eq!(
        found,
        [(
            "attempts.after_decision".to_owned(),
            "unknown_value".to_owned()
        )]
    );
}

#[test]
fn a_value_outside_the_answers_or_of_another_type_is_flagged_invalid() {
    let pack = pack("", "");
    for value in [json!("maybe"), json!(3), json!(true), json!({"a": 1})] {
        let judgement = decide(&pack, &ok(value.clone()), Some(1.0), None);
        assert_eq!(judgement.status, Status::Undecided, "{value}");
        assert_eq!(
            serde_json::to_value(&judgement.verdicts[0].not_used).unwrap(),
            json!([{"position": 0, "why": "invalid_value"}]),
            "{value}"
        );
    }
}
