//! What one part of a pack says about another: every name a pack uses must exist, and be of
//! the right kind. Names left empty were already reported where they were read.

use std::collections::HashMap;

use super::{
    Condition, Judge, LOW_CONFIDENCE_LANE, MISSING_FIELDS_LANE, OnUnknown, OutcomeKind,
    POLICY_GAP_LANE, Pack, UNKNOWN_ANSWER, UNRECONCILED_LANE, ValueType,
};
use crate::issue::Issue;

/// Where each parsed entry was in its array, so issues name the entry the file has there.
#[derive(Debug, Default)]
pub(super) struct Spots {
    pub identity_known: bool,
    pub questions: Vec<usize>,
    pub rules: Vec<usize>,
    /// The index, and whether the outcome's kind was read.
    pub outcomes: Vec<(usize, bool)>,
    pub escalations: Vec<usize>,
}

/// Adds every issue of names that do not resolve.
#[allow(
    clippy::too_many_lines,
    reason = "one check per cross-reference of the pack format, in the order the format lists them"
)]
pub(super) fn validate(pack: &Pack, spots: &Spots, issues: &mut Vec<Issue>) {
    let keys: Vec<&str> = pack.questions.iter().map(|q| q.key.as_str()).collect();
    duplicates("questions", "key", &keys, &spots.questions, issues);
    let ids: Vec<&str> = pack.outcomes.iter().map(|o| o.id.as_str()).collect();
    let id_spots: Vec<usize> = spots.outcomes.iter().map(|(i, _)| *i).collect();
    duplicates("outcomes", "id", &ids, &id_spots, issues);
    for (outcome, i) in pack.outcomes.iter().zip(&id_spots) {
        if outcome.id == POLICY_GAP_LANE {
            issues.push(Issue::new(
                format!("outcomes[{i}].id"),
                "reserved_id",
                format!("`{POLICY_GAP_LANE}` is the built-in lane when no rule fires"),
            ));
        }
        // A review item opened by an escalation is told by these names: a lane of the same
        // name would be taken for one (and not hold its case).
        if crate::case::is_escalation_lane(&outcome.id) {
            issues.push(Issue::new(
                format!("outcomes[{i}].id"),
                "reserved_id",
                format!(
                    "`{}` names the review item of a case escalated by its attempts; choose \
                     another id",
                    outcome.id
                ),
            ));
        }
    }
    let escalations: Vec<&str> = pack.escalations.iter().map(|e| e.id.as_str()).collect();
    duplicates(
        "escalations",
        "id",
        &escalations,
        &spots.escalations,
        issues,
    );

    let escalation = |path: String, id: &str, issues: &mut Vec<Issue>| {
        if !id.is_empty() && pack.escalation(id).is_none() {
            issues.push(unknown(
                "unknown_escalation",
                path,
                "escalation",
                id,
                &escalations,
            ));
        }
    };
    escalation("attempts.escalate".into(), &pack.attempts.escalate, issues);
    escalation(
        "unresolved.escalate".into(),
        &pack.unresolved.escalate,
        issues,
    );
    for (outcome, i) in pack.outcomes.iter().zip(&id_spots) {
        if let Some(id) = &outcome.escalate {
            escalation(format!("outcomes[{i}].escalate"), id, issues);
        }
    }

    if let Some(confidence) = &pack.confidence
        && !confidence.lane.is_empty()
    {
        let found = pack
            .outcomes
            .iter()
            .zip(&spots.outcomes)
            .find(|(o, _)| o.id == confidence.lane);
        match found {
            None if confidence.lane == LOW_CONFIDENCE_LANE => {}
            None => issues.push(unknown(
                "unknown_outcome",
                "confidence.lane".into(),
                "outcome",
                &confidence.lane,
                &ids,
            )),
            Some((outcome, (_, true))) if outcome.kind != OutcomeKind::Lane => {
                issues.push(Issue::new(
                    "confidence.lane",
                    "not_a_lane",
                    format!(
                        "`{}` is a decision; the dampener holds a result back in a lane",
                        confidence.lane
                    ),
                ));
            }
            Some(_) => {}
        }
    }

    let question_lanes = pack
        .questions
        .iter()
        .zip(&spots.questions)
        .map(|(q, i)| (format!("questions[{i}].on_unknown"), &q.on_unknown));
    for (q, i) in pack.questions.iter().zip(&spots.questions) {
        let listed = q.answers.iter().any(|a| a.value == UNKNOWN_ANSWER);
        if q.on_unknown == OnUnknown::Answer && q.value_type == ValueType::Answer && !listed {
            issues.push(Issue::new(
                format!("questions[{i}].on_unknown"),
                "needs_answer",
                format!(
                    "`unknown` closes `{}` as an answer: list it in `answers` with what it means",
                    q.key
                ),
            ));
        }
    }
    for (path, lane) in super::envelope::named_lanes(&pack.envelope, question_lanes) {
        let builtin = [
            MISSING_FIELDS_LANE,
            UNRECONCILED_LANE,
            POLICY_GAP_LANE,
            LOW_CONFIDENCE_LANE,
        ];
        match pack.outcome(lane) {
            None if builtin.contains(&lane) => {}
            None => issues.push(unknown("unknown_outcome", path, "lane", lane, &ids)),
            Some(outcome) if outcome.kind != OutcomeKind::Lane => issues.push(Issue::new(
                path,
                "not_a_lane",
                format!("`{lane}` is a decision; a case is held in a lane here (or write `retry`)"),
            )),
            Some(_) => {}
        }
    }

    if spots.identity_known
        && let Some(key) = &pack.identity.question
    {
        match pack.question(key) {
            None => issues.push(unknown(
                "unknown_question",
                "identity.question".into(),
                "question",
                key,
                &keys,
            )),
            Some(q) if q.judge != Judge::Quotes => issues.push(Issue::new(
                "identity.question",
                "not_quotes",
                format!("`{key}` is judged by value; the case is named by excerpt text"),
            )),
            Some(_) => {}
        }
    }

    for (rule, i) in pack.rules.iter().zip(&spots.rules) {
        let path = format!("rules[{i}]");
        for (key, condition) in &rule.when {
            let cpath = format!("{path}.when.{key}");
            let Some(question) = pack.question(key) else {
                issues.push(unknown("unknown_question", cpath, "question", key, &keys));
                continue;
            };
            let typed = question.value_type != ValueType::Answer;
            match condition {
                Condition::Bounds(bounds) if typed => {
                    for bound in bounds {
                        let anchor_kind = |key: &str| {
                            // A related record's field is read as the bounded question's type.
                            let related = key.strip_prefix("related.").and_then(|rest| {
                                let (kind, field) = rest.split_once('.')?;
                                let known = pack.related.iter().any(|r| r.kind == kind);
                                (known && !field.is_empty()).then_some(question.value_type)
                            });
                            related.or_else(|| pack.question(key).map(|q| q.value_type))
                        };
                        if let Some(why) =
                            super::typed::bound_mismatch(question.value_type, bound, anchor_kind)
                        {
                            issues.push(Issue::new(cpath.clone(), "bad_bound", why));
                        }
                    }
                    continue;
                }
                Condition::Bounds(_) => {
                    issues.push(Issue::new(
                        cpath,
                        "not_for_type",
                        format!("`{key}` takes one of its answers; at_least / at_most bound a date or number question"),
                    ));
                    continue;
                }
                _ if typed => {
                    issues.push(Issue::new(
                        cpath,
                        "not_for_type",
                        format!("`{key}` is a typed question: bound it with at_least / at_most"),
                    ));
                    continue;
                }
                _ => {}
            }
            let answers: Vec<&str> = question.answers.iter().map(|a| a.value.as_str()).collect();
            for (j, value) in condition.named().iter().enumerate() {
                let at = match condition {
                    Condition::Value(_) | Condition::Bounds(_) => cpath.clone(),
                    Condition::Values(_) => format!("{cpath}[{j}]"),
                    Condition::Not(_) => format!("{cpath}.not[{j}]"),
                };
                let wanted = !matches!(condition, Condition::Not(_));
                let unknown_closes = question.on_unknown == OnUnknown::Answer;
                if wanted
                    && question.judge == Judge::Value
                    && value == UNKNOWN_ANSWER
                    && !unknown_closes
                {
                    issues.push(Issue::new(
                        at,
                        "never_matches",
                        format!(
                            "`{key} = \"{UNKNOWN_ANSWER}\"` never fires: `{UNKNOWN_ANSWER}` keeps a \
                             value question open, and a rule fires only on closed questions; \
                             an open required question leaves the case undecided, so the agent \
                             asks again and the attempt limit hands it to a person; \
                             `on_unknown = \"answer\"` on the question lets rules name it"
                        ),
                    ));
                    continue;
                }
                if answers.contains(&value.as_str()) || (unknown_closes && value == UNKNOWN_ANSWER)
                {
                    continue;
                }
                let what = format!("answer of `{key}`");
                issues.push(unknown("unknown_answer", at, &what, value, &answers));
            }
        }
        if !rule.outcome.is_empty() && pack.outcome(&rule.outcome).is_none() {
            issues.push(unknown(
                "unknown_outcome",
                format!("{path}.outcome"),
                "outcome",
                &rule.outcome,
                &ids,
            ));
        }
    }
}

/// Reports each name used before, at the later entry.
fn duplicates(array: &str, key: &str, names: &[&str], spots: &[usize], issues: &mut Vec<Issue>) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (name, i) in names.iter().zip(spots) {
        if name.is_empty() {
            continue;
        }
        if let Some(first) = seen.insert(name, *i) {
            issues.push(Issue::new(
                format!("{array}[{i}].{key}"),
                "duplicate",
                format!("`{name}` is already the {key} of {array}[{first}]"),
            ));
        }
    }
}

fn unknown(code: &str, path: String, what: &str, name: &str, known: &[&str]) -> Issue {
    let known: Vec<&str> = known.iter().copied().filter(|k| !k.is_empty()).collect();
    let expected = if known.is_empty() {
        "none is defined".to_owned()
    } else {
        format!("expected one of: {}", known.join(", "))
    };
    Issue::new(
        path,
        code,
        format!("no {what} is named `{name}`; {expected}"),
    )
}

#[cfg(test)]
mod tests {
    use crate::pack::parse_pack;

    #[test]
    fn the_names_of_escalated_cases_review_items_are_reserved() {
        let shipped = include_str!("../../../../packs/vendor-risk.toml");
        for reserved in ["attempt_limit", "no_progress"] {
            let text = shipped.replace("\"review_privacy\"", &format!("\"{reserved}\""));
            let issues = parse_pack(&text).unwrap_err();
            assert!(
                issues
                    .iter()
                    .any(|i| i.code == "reserved_id" && i.path.starts_with("outcomes[")),
                "{reserved}: {issues:?}"
            );
        }
        assert!(parse_pack(shipped).is_ok());
    }

    #[test]
    fn a_rule_wanting_unknown_on_a_value_question_never_fires() {
        let text = r#"
job = "j"
title = "t"
identity = { mode = "issued" }
attempts = { escalate = "desk" }
unresolved = { next_step = "n", escalate = "desk" }
[[questions]]
key = "received"
text = "Received?"
judge = "value"
fix = "f"
where_to_look = "w"
answers = [{ value = "yes", means = "Y" }, { value = "unknown", means = "?" }]
[[rules]]
when = { received = ["yes", "unknown"] }
outcome = "done"
[[rules]]
when = { received = { not = ["unknown"] } }
outcome = "done"
[[outcomes]]
id = "done"
kind = "decision"
next_step = "n"
[[escalations]]
id = "desk"
why = "w"
to = "t"
next_step = "n"
"#;
        let issues = parse_pack(text).unwrap_err();
        let found: Vec<(&str, &str)> = issues
            .iter()
            .map(|i| (i.path.as_str(), i.code.as_str()))
            .collect();
        assert_eq!(found, [("rules[0].when.received[1]", "never_matches")]);
    }

    #[test]
    fn a_window_past_a_year_is_refused() {
        let text = r#"
job = "j"
title = "t"
identity = { mode = "issued" }
attempts = { escalate = "desk", window = "90000000h" }
unresolved = { next_step = "n", escalate = "desk" }
[[escalations]]
id = "desk"
why = "w"
to = "t"
next_step = "n"
"#;
        let issues = parse_pack(text).unwrap_err();
        assert_eq!(issues[0].path, "attempts.window");
        assert_eq!(issues[0].code, "out_of_range");
    }
}
