//! Parsing a pack, table by table; what one part says about another is checked in `validate`.

use std::collections::{BTreeMap, HashMap};

use jiff::SignedDuration;
use toml::{Table, Value};

use super::read::{Reader, missing, strings_at};
use super::validate::{Spots, validate};
use super::{
    Answer, AttemptLimits, Condition, Confidence, DEFAULT_HEDGES, Escalation, EvidenceLimits,
    Identity, IdentityMode, Judge, MatchRule, Outcome, OutcomeKind, Pack, PackRule, Question,
    Related, Unresolved,
};
use crate::classify::matcher::{compile_regex, wrong_form};
use crate::issue::{Issue, join_path};

/// The longest attempt window a pack may set: a year.
const MAX_WINDOW: SignedDuration = SignedDuration::from_hours(8784);

const TOP_KEYS: [&str; 15] = [
    "dispatch",
    "job",
    "title",
    "identity",
    "attempts",
    "unresolved",
    "evidence",
    "confidence",
    "envelope",
    "questions",
    "related",
    "rules",
    "outcomes",
    "escalations",
    // Room for a pack's own version note; never read.
    "version",
];

/// Parses a pack.
///
/// # Errors
/// Every issue found, each with its path (`questions[0].answers[1].indicators[0]`): TOML
/// syntax (one issue), unknown keys, wrong types, missing keys, duplicates, names of
/// questions, answers, outcomes or escalations that do not exist, bad regexes and durations.
///
/// ```
/// let pack = backstop_core::pack::parse_pack(r#"
/// job = "demo"
/// title = "Demo"
/// identity = { mode = "issued" }
/// attempts = { escalate = "desk" }
/// unresolved = { next_step = "Look again.", escalate = "desk" }
/// [[escalations]]
/// id = "desk"
/// why = "Unsettled."
/// to = "The desk"
/// next_step = "Open a ticket."
/// "#).unwrap();
/// assert_eq!(pack.attempts.max, 3);
/// ```
#[allow(
    clippy::too_many_lines,
    reason = "one read per table of the pack format, in the order the format lists them"
)]
pub fn parse_pack(text: &str) -> Result<Pack, Vec<Issue>> {
    let table = crate::input::toml_table(text).map_err(|issue| vec![issue])?;
    let mut issues = Vec::new();
    let top = Reader::new(&table, "", &TOP_KEYS, &mut issues);
    let job = top.required_string("job", &mut issues);
    let url_safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if !job.is_empty() && (job.len() > 100 || !job.chars().all(url_safe) || job.starts_with('.')) {
        issues.push(Issue::new(
            "job",
            "bad_name",
            format!(
                "`{job}` cannot name a job: it is part of URLs (/v1/jobs/{{job}}/decisions), so use \
                 1 to 100 letters, digits, `-`, `_` or `.`, not starting with `.`"
            ),
        ));
    }
    let title = top.required_string("title", &mut issues);
    let mut spots = Spots::default();
    let identity = parse_identity(&top, &mut spots, &mut issues);
    let attempts = parse_attempts(&top, &mut issues);
    let unresolved = parse_unresolved(&top, &mut issues);
    let evidence = parse_evidence(&top, &mut issues);
    let confidence = parse_confidence(&top, &mut issues);
    let envelope = super::envelope::parse_envelope(&top, &mut issues);
    let dispatch = super::dispatch::parse_dispatch(&top, &mut issues);
    let mut questions = Vec::new();
    for (i, entry) in top.tables("questions", &mut issues) {
        questions.push(parse_question(
            entry,
            &format!("questions[{i}]"),
            &mut issues,
        ));
        spots.questions.push(i);
    }
    let mut related = Vec::new();
    let mut kinds: HashMap<String, usize> = HashMap::new();
    for (i, entry) in top.tables("related", &mut issues) {
        let path = format!("related[{i}]");
        let r = Reader::new(entry, &path, &["kind", "required"], &mut issues);
        let kind = r.required_string("kind", &mut issues);
        if !kind.is_empty()
            && let Some(first) = kinds.insert(kind.clone(), i)
        {
            issues.push(Issue::new(
                r.at("kind"),
                "duplicate",
                format!("`{kind}` is already the kind of related[{first}]"),
            ));
        }
        let required = r.bool("required", &mut issues).unwrap_or(false);
        related.push(Related { kind, required });
    }
    let mut rules = Vec::new();
    for (i, entry) in top.tables("rules", &mut issues) {
        rules.push(parse_rule(entry, &format!("rules[{i}]"), &mut issues));
        spots.rules.push(i);
    }
    let mut outcomes = Vec::new();
    for (i, entry) in top.tables("outcomes", &mut issues) {
        let (outcome, kind_known) = parse_outcome(entry, &format!("outcomes[{i}]"), &mut issues);
        outcomes.push(outcome);
        spots.outcomes.push((i, kind_known));
    }
    let mut escalations = Vec::new();
    for (i, entry) in top.tables("escalations", &mut issues) {
        let path = format!("escalations[{i}]");
        let known = ["id", "why", "to", "next_step"];
        let r = Reader::new(entry, &path, &known, &mut issues);
        escalations.push(Escalation {
            id: r.required_string("id", &mut issues),
            why: r.required_string("why", &mut issues),
            to: r.required_string("to", &mut issues),
            next_step: r.required_string("next_step", &mut issues),
        });
        spots.escalations.push(i);
    }
    let pack = Pack {
        job,
        title,
        identity,
        attempts,
        unresolved,
        evidence,
        confidence,
        envelope,
        questions,
        related,
        rules,
        outcomes,
        escalations,
        dispatch,
    };
    validate(&pack, &spots, &mut issues);
    issues.extend(crate::effects::lint_questions(&pack));
    if pack.dispatch.is_some() {
        issues.extend(super::dispatch::validate_dispatch(&pack));
    }
    if issues.is_empty() {
        Ok(pack)
    } else {
        Err(issues)
    }
}

/// Reads one of a fixed set of names; `None` (reported) when it is another.
fn one_of<T: Copy>(
    r: &Reader<'_>,
    key: &str,
    names: &[(&str, T)],
    issues: &mut Vec<Issue>,
) -> Option<T> {
    let name = r.string(key, issues)?;
    if let Some((_, value)) = names.iter().find(|(n, _)| *n == name) {
        return Some(*value);
    }
    let known: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
    issues.push(Issue::new(
        r.at(key),
        "unknown_value",
        format!(
            "unknown value `{name}`; expected one of: {}",
            known.join(", ")
        ),
    ));
    None
}

fn parse_identity(top: &Reader<'_>, spots: &mut Spots, issues: &mut Vec<Issue>) -> Identity {
    let mut identity = Identity {
        mode: IdentityMode::Id,
        match_rule: MatchRule::Exact,
        fields: Vec::new(),
        question: None,
        reuse_folded: false,
    };
    let Some(table) = top.required_table("identity", issues) else {
        return identity;
    };
    let r = Reader::new(
        table,
        "identity",
        &["mode", "match", "fields", "question", "reuse"],
        issues,
    );
    if !r.has("mode") {
        issues.push(missing(&r.at("mode")));
    }
    let modes = [
        ("id", IdentityMode::Id),
        ("issued", IdentityMode::Issued),
        ("fields", IdentityMode::Fields),
        ("content", IdentityMode::Content),
    ];
    let mode = one_of(&r, "mode", &modes, issues);
    let matches = [
        ("exact", MatchRule::Exact),
        ("case_insensitive", MatchRule::CaseInsensitive),
        ("domain", MatchRule::Domain),
    ];
    identity.match_rule = one_of(&r, "match", &matches, issues).unwrap_or(MatchRule::Exact);
    identity.fields = r.strings("fields", issues).unwrap_or_default();
    identity.question = r.string("question", issues);
    let reuses = [("exact", false), ("folded", true)];
    identity.reuse_folded = one_of(&r, "reuse", &reuses, issues).unwrap_or(false);
    let Some(mode) = mode else {
        return identity;
    };
    identity.mode = mode;
    spots.identity_known = true;
    let name = modes
        .iter()
        .find(|(_, m)| *m == mode)
        .map_or("", |(n, _)| n);
    let not_here = |key: &str, issues: &mut Vec<Issue>| {
        issues.push(Issue::new(
            r.at(key),
            "not_for_mode",
            format!("`{key}` has no meaning in `{name}` mode"),
        ));
    };
    if r.has("match") && !matches!(mode, IdentityMode::Id | IdentityMode::Fields) {
        not_here("match", issues);
    }
    if r.has("reuse") && mode != IdentityMode::Issued {
        not_here("reuse", issues);
    }
    if mode == IdentityMode::Fields {
        if identity.fields.is_empty() && !matches!(table.get("fields"), Some(v) if !v.is_array()) {
            issues.push(Issue::new(
                r.at("fields"),
                "needs_fields",
                "fields mode needs `fields`: the field names that make the case",
            ));
        }
    } else if r.has("fields") {
        not_here("fields", issues);
    }
    if mode == IdentityMode::Content {
        if !r.has("question") {
            issues.push(Issue::new(
                r.at("question"),
                "needs_question",
                "content mode needs `question`: the question whose excerpt text is the case",
            ));
        }
    } else if r.has("question") {
        not_here("question", issues);
    }
    identity
}

fn parse_attempts(top: &Reader<'_>, issues: &mut Vec<Issue>) -> AttemptLimits {
    let mut attempts = AttemptLimits {
        max: 3,
        window: SignedDuration::from_hours(24),
        escalate: String::new(),
        after_decision: super::AfterDecision::NewCycle,
    };
    let Some(table) = top.required_table("attempts", issues) else {
        return attempts;
    };
    let known = ["max", "window", "escalate", "after_decision"];
    let r = Reader::new(table, "attempts", &known, issues);
    attempts.after_decision = super::envelope::parse_after_decision(&r, issues);
    attempts.max = r.count("max", 1, issues).unwrap_or(3);
    if let Some(text) = r.string("window", issues) {
        match text.parse::<SignedDuration>() {
            Ok(window) if window.is_positive() && window <= MAX_WINDOW => {
                attempts.window = window;
            }
            Ok(_) => issues.push(Issue::new(
                r.at("window"),
                "out_of_range",
                "the window must be longer than zero and at most 8784h (a year)",
            )),
            Err(_) => issues.push(Issue::new(
                r.at("window"),
                "bad_duration",
                format!("`{text}` is not a duration like \"24h\" or \"90m\""),
            )),
        }
    }
    attempts.escalate = r.required_string("escalate", issues);
    attempts
}

fn parse_unresolved(top: &Reader<'_>, issues: &mut Vec<Issue>) -> Unresolved {
    let Some(table) = top.required_table("unresolved", issues) else {
        return Unresolved {
            next_step: String::new(),
            escalate: String::new(),
        };
    };
    let r = Reader::new(table, "unresolved", &["next_step", "escalate"], issues);
    Unresolved {
        next_step: r.required_string("next_step", issues),
        escalate: r.required_string("escalate", issues),
    }
}

fn parse_evidence(top: &Reader<'_>, issues: &mut Vec<Issue>) -> EvidenceLimits {
    let mut evidence = EvidenceLimits {
        max_excerpt_chars: 1000,
        max_excerpts: 20,
        hedges: DEFAULT_HEDGES.iter().map(|h| (*h).to_owned()).collect(),
    };
    let Some(table) = top.table("evidence", issues) else {
        return evidence;
    };
    let known = ["max_excerpt_chars", "max_excerpts", "hedges"];
    let r = Reader::new(table, "evidence", &known, issues);
    if let Some(n) = r.count("max_excerpt_chars", 1, issues) {
        evidence.max_excerpt_chars = n;
    }
    if let Some(n) = r.count("max_excerpts", 1, issues) {
        evidence.max_excerpts = n;
    }
    if let Some(hedges) = r.strings("hedges", issues) {
        evidence.hedges = hedges.iter().map(|h| h.to_lowercase()).collect();
    }
    evidence
}

fn parse_confidence(top: &Reader<'_>, issues: &mut Vec<Issue>) -> Option<Confidence> {
    let table = top.table("confidence", issues)?;
    let r = Reader::new(
        table,
        "confidence",
        &["min", "lane", "close_needs_confidence"],
        issues,
    );
    let close_needs_confidence = r.bool("close_needs_confidence", issues).unwrap_or(false);
    let min = match table.get("min") {
        None => {
            issues.push(missing(&r.at("min")));
            0.0
        }
        #[allow(clippy::cast_precision_loss)] // 0 or 1 when in range
        Some(Value::Integer(n)) => *n as f64,
        Some(Value::Float(x)) => *x,
        Some(_) => {
            issues.push(wrong_form(&r.at("min"), "a number from 0 to 1"));
            0.0
        }
    };
    if !(0.0..=1.0).contains(&min) {
        issues.push(Issue::new(
            r.at("min"),
            "out_of_range",
            format!("{min} is out of range; expected a number from 0 to 1"),
        ));
    }
    let lane = r.required_string("lane", issues);
    Some(Confidence {
        min,
        lane,
        close_needs_confidence,
    })
}

fn parse_question(entry: &Table, path: &str, issues: &mut Vec<Issue>) -> Question {
    let known = [
        "key",
        "text",
        "required",
        "judge",
        "min_excerpts",
        "fix",
        "where_to_look",
        "answers",
        "on_unknown",
        "type",
    ];
    let r = Reader::new(entry, path, &known, issues);
    let key = r.required_string("key", issues);
    let text = r.required_string("text", issues);
    let required = r.bool("required", issues).unwrap_or(true);
    let judges = [("quotes", Judge::Quotes), ("value", Judge::Value)];
    let judge = one_of(&r, "judge", &judges, issues);
    let min_excerpts = r.count("min_excerpts", 1, issues).unwrap_or(1);
    if judge == Some(Judge::Value) && r.has("min_excerpts") {
        issues.push(Issue::new(
            r.at("min_excerpts"),
            "not_for_judge",
            "a value-judged question reads no excerpts",
        ));
    }
    let on_unknown = super::envelope::parse_on_unknown(&r, issues);
    if judge == Some(Judge::Quotes) && r.has("on_unknown") {
        issues.push(Issue::new(
            r.at("on_unknown"),
            "not_for_judge",
            "only a value-judged question can be sent `unknown`",
        ));
    }
    let value_type =
        super::typed::parse_value_type(r.string("type", issues).as_deref(), &r.at("type"), issues);
    let typed = value_type != super::ValueType::Answer;
    if typed && judge != Some(Judge::Value) {
        issues.push(Issue::new(
            r.at("type"),
            "not_for_judge",
            "only a value-judged question has a type; set `judge = \"value\"`",
        ));
    }
    if typed && r.has("answers") {
        issues.push(Issue::new(
            r.at("answers"),
            "not_for_type",
            "a typed question takes any date or number; rules bound it with at_least / at_most",
        ));
    }
    let fix = r.required_string("fix", issues);
    let where_to_look = r.required_string("where_to_look", issues);
    if !r.has("answers") && !typed {
        issues.push(missing(&r.at("answers")));
    }
    let mut answers = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, answer) in r.tables("answers", issues) {
        let apath = r.at(&format!("answers[{i}]"));
        let answer = parse_answer(answer, &apath, judge, issues);
        if !answer.value.is_empty()
            && let Some(first) = seen.insert(answer.value.clone(), i)
        {
            issues.push(Issue::new(
                join_path(&apath, "value"),
                "duplicate",
                format!(
                    "`{}` is already the value of answers[{first}]",
                    answer.value
                ),
            ));
        }
        answers.push(answer);
    }
    if r.has("answers")
        && answers.is_empty()
        && matches!(entry.get("answers"), Some(Value::Array(a)) if a.is_empty())
    {
        issues.push(Issue::new(
            r.at("answers"),
            "empty_list",
            "a question needs at least one answer",
        ));
    }
    Question {
        key,
        text,
        required,
        judge: judge.unwrap_or(Judge::Quotes),
        min_excerpts,
        fix,
        where_to_look,
        answers,
        on_unknown,
        value_type,
    }
}

fn parse_answer(
    entry: &Table,
    path: &str,
    judge: Option<Judge>,
    issues: &mut Vec<Issue>,
) -> Answer {
    let r = Reader::new(entry, path, &["value", "means", "indicators"], issues);
    let value = r.required_string("value", issues);
    let means = r.required_string("means", issues);
    let mut indicators = Vec::new();
    if let Some(patterns) = r.strings("indicators", issues) {
        for (i, pattern) in patterns.iter().enumerate() {
            match compile_regex(pattern) {
                Ok(regex) => indicators.push(regex),
                Err(e) => issues.push(Issue::new(
                    r.at(&format!("indicators[{i}]")),
                    "bad_regex",
                    format!("not a valid regex: {e}"),
                )),
            }
        }
    }
    match judge {
        Some(Judge::Quotes) | None if !r.has("indicators") => issues.push(Issue::new(
            r.at("indicators"),
            "needs_indicators",
            "an answer judged from quotes needs `indicators`, or no excerpt could support it",
        )),
        Some(Judge::Value) if r.has("indicators") => issues.push(Issue::new(
            r.at("indicators"),
            "not_for_judge",
            "a value-judged answer is matched by its value; indicators are never read",
        )),
        _ => {}
    }
    Answer {
        value,
        means,
        indicators,
    }
}

fn parse_rule(entry: &Table, path: &str, issues: &mut Vec<Issue>) -> PackRule {
    let r = Reader::new(entry, path, &["when", "outcome"], issues);
    let mut when = BTreeMap::new();
    if !r.has("when") {
        issues.push(missing(&r.at("when")));
    }
    for (key, value) in r.table("when", issues).into_iter().flatten() {
        let cpath = join_path(&r.at("when"), key);
        let condition = match value {
            Value::String(s) => Some(Condition::Value(s.clone())),
            Value::Array(_) => strings_at(value, &cpath, issues).map(Condition::Values),
            Value::Table(t) => {
                let known = ["not", "at_least", "at_most"];
                let table = Reader::new(t, &cpath, &known, issues);
                if table.has("at_least") || table.has("at_most") {
                    Some(Condition::Bounds(super::typed::parse_bounds(
                        t, &cpath, issues,
                    )))
                } else {
                    if !table.has("not") {
                        issues.push(missing(&table.at("not")));
                    }
                    table.strings("not", issues).map(Condition::Not)
                }
            }
            _ => {
                issues.push(wrong_form(
                    &cpath,
                    "an answer, a list of answers, { not = [...] } or { at_least, at_most }",
                ));
                None
            }
        };
        if let Some(condition) = condition {
            if condition.named().is_empty() && !matches!(condition, Condition::Bounds(_)) {
                issues.push(Issue::new(cpath, "empty_list", "name at least one answer"));
            }
            when.insert(key.clone(), condition);
        }
    }
    PackRule {
        when,
        outcome: r.required_string("outcome", issues),
    }
}

fn parse_outcome(entry: &Table, path: &str, issues: &mut Vec<Issue>) -> (Outcome, bool) {
    let known = [
        "id",
        "kind",
        "next_step",
        "escalate",
        "allow_retry",
        "effects",
    ];
    let r = Reader::new(entry, path, &known, issues);
    let id = r.required_string("id", issues);
    if !r.has("kind") {
        issues.push(missing(&r.at("kind")));
    }
    let kinds = [
        ("decision", OutcomeKind::Decision),
        ("lane", OutcomeKind::Lane),
    ];
    let kind = one_of(&r, "kind", &kinds, issues);
    let next_step = r.required_string("next_step", issues);
    let escalate = r.string("escalate", issues);
    let allow_retry = match entry.get("allow_retry") {
        None => 0,
        Some(Value::Integer(n @ (0 | 1))) => u8::from(*n == 1),
        Some(_) => {
            issues.push(Issue::new(
                r.at("allow_retry"),
                "out_of_range",
                "`allow_retry` is 0 or 1: how many more times the agent may classify again",
            ));
            0
        }
    };
    if allow_retry > 0 && kind == Some(OutcomeKind::Decision) {
        issues.push(Issue::new(
            r.at("allow_retry"),
            "not_for_kind",
            "only a lane may ask the agent to gather more; a decision is final",
        ));
    }
    let effects = r.strings("effects", issues).unwrap_or_default();
    let outcome = Outcome {
        id,
        kind: kind.unwrap_or(OutcomeKind::Decision),
        next_step,
        escalate,
        allow_retry,
        effects,
    };
    (outcome, kind.is_some())
}
