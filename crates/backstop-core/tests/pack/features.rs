//! The pack keys that let a pack send ambiguity to a person, require envelope fields,
//! reconcile a source that did not finish, and make a decision final: each judged, and each
//! mistake refused by `pack check` with its path.

use std::collections::BTreeMap;

use crate::{NOW, judged};

use backstop_core::judge::{QuestionEvidence, Status};
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
    refusal(&pack_text(question, extra))
}

/// `(path, code)` of every issue `pack check` finds in `text`, which it must refuse.
fn refusal(text: &str) -> Vec<(String, String)> {
    let found = parse_pack(text).expect_err("refused");
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
    let judgement = judged(pack, &ok(value), Some(1.0), source);
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
fn unknown_as_an_answer_must_be_listed_with_its_meaning() {
    let text = pack_text(r#"on_unknown = "answer""#, "")
        .replace(
            "  {{ value = \"unknown\", means = \"Nobody knows.\" }},\n",
            "",
        )
        .replace(
            "  { value = \"unknown\", means = \"Nobody knows.\" },\n",
            "",
        );
    let found: Vec<(String, String)> = refusal(&text);
    assert_eq!(
        found,
        [(
            "questions[0].on_unknown".to_owned(),
            "needs_answer".to_owned()
        )]
    );
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
    let judgement = judged(&required, &ok(json!("yes")), None, Some("completed"));
    assert_eq!(judgement.status, Status::Held);
    assert_eq!(judgement.outcome.as_deref(), Some("review_missing_fields"));
    let judgement = judged(&required, &ok(json!("yes")), Some(1.0), None);
    assert_eq!(judgement.outcome.as_deref(), Some("review_missing_fields"));
    let judgement = judged(&required, &ok(json!("yes")), Some(1.0), Some("completed"));
    assert_eq!(judgement.status, Status::Decided);

    let own_lane = pack(
        "",
        "[envelope]\nrequire = [\"confidence\"]\nmissing_lane = \"person\"\n",
    );
    let judgement = judged(&own_lane, &ok(json!("yes")), None, None);
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
    let empty = judged(&pack, &BTreeMap::new(), Some(1.0), Some("completed"));
    assert_eq!(
        (empty.status, empty.outcome.as_deref()),
        (Status::Held, Some("person"))
    );
    // The values of an unfinished source are no evidence.
    let failed = judged(&pack, &ok(json!("yes")), Some(1.0), Some("failed"));
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
    let found: Vec<(String, String)> = refusal(&bad);
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
        let judgement = judged(&pack, &ok(value.clone()), Some(1.0), None);
        assert_eq!(judgement.status, Status::Undecided, "{value}");
        assert_eq!(
            serde_json::to_value(&judgement.verdicts[0].not_used).unwrap(),
            json!([{"position": 0, "why": "invalid_value"}]),
            "{value}"
        );
    }
}

/// A pack with a date question `ship` and a number question `qty` besides `ok`, and `rule`.
fn typed_pack(rule: &str) -> Result<Pack, Vec<(String, String)>> {
    let questions = r#"
[[questions]]
key = "ship"
text = "When does it ship?"
judge = "value"
type = "date"
required = false
fix = "Send the ship date."
where_to_look = "The result."

[[questions]]
key = "promised"
text = "When was it promised?"
judge = "value"
type = "date"
required = false
fix = "Send the promised date."
where_to_look = "The order."

[[questions]]
key = "qty"
text = "How many?"
judge = "value"
type = "number"
required = false
fix = "Send the quantity."
where_to_look = "The result."
"#;
    parse_pack(&pack_text("", &format!("{questions}\n{rule}")))
        .map_err(|issues| issues.into_iter().map(|i| (i.path, i.code)).collect())
}

fn typed(values: &[(&str, serde_json::Value)]) -> BTreeMap<String, QuestionEvidence> {
    values
        .iter()
        .map(|(key, value)| {
            (
                (*key).to_owned(),
                QuestionEvidence {
                    excerpts: None,
                    value: Some(value.clone()),
                },
            )
        })
        .collect()
}

#[test]
fn a_date_or_number_question_closes_on_a_usable_value_and_flags_the_rest() {
    let pack = typed_pack("").unwrap();
    let judgement = judged(
        &pack,
        &typed(&[
            ("ship", json!("2026-12-02")),
            ("qty", json!(12)),
            ("promised", json!("soon")),
        ]),
        Some(1.0),
        None,
    );
    assert_eq!(judgement.answers["ship"], "2026-12-02T00:00:00Z");
    assert_eq!(judgement.answers["qty"], "12");
    assert!(!judgement.answers.contains_key("promised"));
    let promised = judgement
        .verdicts
        .iter()
        .find(|v| v.key == "promised")
        .unwrap();
    assert_eq!(
        serde_json::to_value(&promised.not_used).unwrap(),
        json!([{"position": 0, "why": "invalid_value"}])
    );
}

#[test]
fn bounds_compare_a_date_with_now_or_another_date_and_a_number_with_a_number() {
    let within_48h = "[[rules]]\nwhen = { ok = \"no\", ship = { at_least = \"now-24h\", at_most = \"now+48h\" } }\noutcome = \"person\"\n";
    let pack = typed_pack(within_48h).unwrap();
    let held = |ship: &str| {
        let evidence = typed(&[("ok", json!("no")), ("ship", json!(ship))]);
        judged(&pack, &evidence, Some(1.0), None).outcome.as_deref() == Some("person")
    };
    // NOW is 2026-12-01T00:00:00Z.
    assert!(held("2026-12-01"));
    assert!(held("2026-12-02T23:00:00Z"));
    assert!(!held("2026-12-03T00:00:01Z"), "past 48 hours");
    assert!(!held("2026-11-29"), "in the past");

    let late_by_at_most_2_days = "[[rules]]\nwhen = { ok = \"no\", ship = { at_most = \"promised+48h\" } }\noutcome = \"person\"\n";
    let pack = typed_pack(late_by_at_most_2_days).unwrap();
    let judge = |ship: &str, promised: Option<&str>| {
        let mut values = vec![("ok", json!("no")), ("ship", json!(ship))];
        if let Some(p) = promised {
            values.push(("promised", json!(p)));
        }
        judged(&pack, &typed(&values), Some(1.0), None)
            .outcome
            .as_deref()
            == Some("person")
    };
    assert!(judge("2026-12-05", Some("2026-12-04")));
    assert!(!judge("2026-12-07", Some("2026-12-04")));
    assert!(!judge("2026-12-05", None), "an open anchor holds no bound");

    let enough = "[[rules]]\nwhen = { ok = \"no\", qty = { at_least = 10, at_most = 20 } }\noutcome = \"person\"\n";
    let pack = typed_pack(enough).unwrap();
    let qty = |n: serde_json::Value| {
        judged(
            &pack,
            &typed(&[("ok", json!("no")), ("qty", n)]),
            Some(1.0),
            None,
        )
        .outcome
        .as_deref()
            == Some("person")
    };
    assert!(qty(json!(10)));
    assert!(qty(json!(20.0)));
    assert!(!qty(json!(21)));
}

#[test]
fn typed_question_mistakes_are_refused_with_their_path() {
    let refused = |rule: &str| {
        let mut found = typed_pack(rule).expect_err("refused");
        found.sort();
        found
    };
    let pair = |p: &str, c: &str| (p.to_owned(), c.to_owned());
    assert_eq!(
        refused("[[rules]]\nwhen = { ship = \"2026-12-01\" }\noutcome = \"person\"\n"),
        [pair("rules[1].when.ship", "not_for_type")]
    );
    assert_eq!(
        refused("[[rules]]\nwhen = { ok = { at_most = 3 } }\noutcome = \"person\"\n"),
        [pair("rules[1].when.ok", "not_for_type")]
    );
    assert_eq!(
        refused("[[rules]]\nwhen = { ship = { at_most = \"soon!\" } }\noutcome = \"person\"\n"),
        [pair("rules[1].when.ship.at_most", "bad_bound")]
    );
    assert_eq!(
        refused(
            "[[rules]]\nwhen = { ship = { at_most = \"eta+1h\" }, qty = { at_least = \"now\" } }\noutcome = \"person\"\n"
        ),
        [
            pair("rules[1].when.qty", "bad_bound"),
            pair("rules[1].when.ship", "bad_bound")
        ]
    );
    let text = pack_text("type = \"date\"", "");
    let mut found: Vec<(String, String)> = refusal(&text);
    found.sort();
    // `ok` is a date now, so the pack's rule `ok = "yes"` is refused too.
    assert_eq!(
        found,
        [
            pair("questions[0].answers", "not_for_type"),
            pair("rules[0].when.ok", "not_for_type")
        ]
    );
}

#[test]
fn a_bound_may_name_a_related_records_field() {
    let related = "[[related]]\nkind = \"order\"\n";
    let rule = "[[rules]]\nwhen = { ok = \"no\", ship = { at_most = \"related.order.due+48h\" } }\noutcome = \"person\"\n";
    let pack = typed_pack(&format!("{related}{rule}")).unwrap();
    let judge = |due: Option<&str>| {
        let facts: BTreeMap<String, String> = due
            .map(|d| BTreeMap::from([("related.order.due".to_owned(), d.to_owned())]))
            .unwrap_or_default();
        let evidence = typed(&[("ok", json!("no")), ("ship", json!("2026-12-05"))]);
        let judgement = backstop_core::judge::judge_case_with_facts(
            &pack,
            &evidence,
            &facts,
            Some(1.0),
            None,
            NOW,
        );
        judgement.outcome.as_deref() == Some("person")
    };
    assert!(judge(Some("2026-12-04")));
    assert!(!judge(Some("2026-12-01")));
    assert!(!judge(None), "a missing field holds no bound");
    let unknown_kind = "[[rules]]\nwhen = { ship = { at_most = \"related.invoice.due\" } }\noutcome = \"person\"\n";
    assert_eq!(
        typed_pack(&format!("{related}{unknown_kind}")).unwrap_err(),
        [("rules[1].when.ship".to_owned(), "bad_bound".to_owned())]
    );
}

#[test]
fn a_related_records_fields_are_read_as_text_and_a_wrong_type_is_refused_with_its_path() {
    let pack = typed_pack("[[related]]\nkind = \"order\"\n").unwrap();
    let body = json!({"execution_id": "e1", "questions": {"ok": {"value": "no"}},
        "related": {"order": {"id": "o-1", "fields": {"due": "2026-12-04", "qty": 3}}}});
    let request = backstop_core::case::parse_request(&pack, "a", &body).unwrap();
    assert_eq!(
        request.related["order"].fields,
        BTreeMap::from([
            ("due".to_owned(), "2026-12-04".to_owned()),
            ("qty".to_owned(), "3".to_owned())
        ])
    );
    let bad = json!({"execution_id": "e1",
        "related": {"order": {"id": "o-1", "fields": {"due": true, "note": "x".repeat(1001)}}}});
    let issues: Vec<(String, String)> = backstop_core::case::parse_request(&pack, "a", &bad)
        .unwrap_err()
        .into_iter()
        .map(|i| (i.path, i.code))
        .collect();
    assert_eq!(
        issues,
        [
            (
                "related.order.fields.due".to_owned(),
                "wrong_type".to_owned()
            ),
            (
                "related.order.fields.note".to_owned(),
                "too_long".to_owned()
            )
        ]
    );
}

#[test]
fn a_job_name_must_be_url_safe_and_errors_name_no_library_type() {
    for bad in ["demo job", "demo/1", ".hidden", "é"] {
        let text = pack_text("", "").replace("job = \"demo\"", &format!("job = \"{bad}\""));
        let found: Vec<(String, String)> = refusal(&text);
        assert_eq!(found, [("job".to_owned(), "bad_name".to_owned())], "{bad}");
    }
    let text = pack_text("", "").replace(
        "attempts = { escalate = \"desk\" }",
        "attempts = { escalate = \"desk\", window = \"forever\" }",
    );
    let issues = parse_pack(&text).unwrap_err();
    assert_eq!(issues[0].code, "bad_duration");
    assert!(
        !issues[0].message.contains("Span") && !issues[0].message.contains("friendly"),
        "{}",
        issues[0].message
    );
}

#[test]
fn a_dispatch_table_reads_its_policy_and_refuses_each_mistake_with_its_path() {
    let good = pack(
        "",
        r#"
[envelope]
not_completed = "reconcile"
empty = "reconcile"
[dispatch]
live = true
max_per_case = 2
backoff = "30m"
reconcile_after = "5m"
allowlist = ["+15550100"]
quiet_hours = { start = "21:00", end = "07:30" }
time_zone = "Europe/Berlin"
untrusted = ["supplier"]
sender = "agent_name"
status_url = "https://calls.example/v1/calls/{key}"
suppress_scope = "contact"
[confidence]
min = 0.8
lane = "person"
close_needs_confidence = true
"#,
    );
    let policy = good.dispatch.as_ref().unwrap();
    assert!(policy.live);
    assert_eq!(policy.max_per_case, 2);
    assert_eq!(policy.backoff, jiff::SignedDuration::from_mins(30));
    assert_eq!(policy.company, "company");
    assert_eq!(policy.sender.as_deref(), Some("agent_name"));
    assert_eq!(
        policy.suppress_scope,
        backstop_core::pack::SuppressScope::Contact
    );
    assert!(good.confidence.as_ref().unwrap().close_needs_confidence);
    let found = issues(
        "",
        r#"
[dispatch]
live = "yes"
max_per_case = 0
backoff = "soon"
reconcile_after = "900h"
quiet_hours = { start = "25:00" }
status_url = "ftp://x"
suppress_scope = "everyone"
colour = 1
[confidence]
min = 0.5
lane = "person"
close_needs_confidence = "always"
"#,
    );
    for (path, code) in [
        ("dispatch.live", "wrong_type"),
        ("dispatch.max_per_case", "out_of_range"),
        ("dispatch.backoff", "bad_duration"),
        ("dispatch.reconcile_after", "out_of_range"),
        ("dispatch.quiet_hours.start", "bad_time"),
        ("dispatch.quiet_hours.end", "missing"),
        ("dispatch.status_url", "bad_url"),
        ("dispatch.suppress_scope", "unknown_value"),
        ("dispatch.colour", "unknown_key"),
        ("confidence.close_needs_confidence", "wrong_type"),
        ("envelope.not_completed", "dispatch_needs_reconcile"),
        ("envelope.empty", "dispatch_needs_reconcile"),
    ] {
        assert!(
            found.contains(&(path.to_owned(), code.to_owned())),
            "{path} {code} in {found:?}"
        );
    }
}

#[test]
fn a_value_question_may_not_take_a_reserved_name_and_a_dispatch_judgment_needs_unknown() {
    let text = pack_text("", "")
        .replacen("key = \"ok\"", "key = \"status\"", 1)
        .replace("ok = \"yes\"", "status = \"yes\"");
    let found = refusal(&text);
    assert!(
        found.contains(&("questions[0].key".to_owned(), "reserved_name".to_owned())),
        "{found:?}"
    );
    let no_unknown = pack_text(
        "",
        "[envelope]\nnot_completed = \"reconcile\"\nempty = \"reconcile\"\n[dispatch]\n",
    )
    .replace(
        "  { value = \"unknown\", means = \"Nobody knows.\" },\n",
        "",
    );
    let found = refusal(&no_unknown);
    assert_eq!(
        found,
        [("questions[0].answers".to_owned(), "no_unknown".to_owned())]
    );
}

#[test]
fn a_result_shows_a_number_answer_as_a_json_number_and_a_date_as_its_time() {
    use backstop_core::case::{Attempted, CaseState, attempt, parse_request};
    let pack = typed_pack("").unwrap();
    let body = json!({
        "execution_id": "run-1",
        "questions": {
            "ok": {"value": "yes"},
            "qty": {"value": 4},
            "ship": {"value": "2026-12-02"},
        },
        "confidence": 1.0,
    });
    let request = parse_request(&pack, "agent", &body).unwrap();
    let now: jiff::Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
    let Attempted::Counted { result, .. } = attempt(&pack, &CaseState::default(), &request, now)
    else {
        panic!("not counted");
    };
    let shown = serde_json::to_value(&result).unwrap();
    assert_eq!(
        shown["answers"],
        json!({"ok": "yes", "qty": 4, "ship": "2026-12-02T00:00:00Z"}),
        "{shown}"
    );
}
