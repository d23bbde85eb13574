//! Which rules match a report, and which of them decides.
//!
//! The strongest level of evidence wins; within it a rule on more fields beats one on fewer,
//! the first rule on the same fields beats later ones, and disagreement between what is left
//! is `unclassified`, naming every rule involved. See `docs/rules.md`.

use std::fmt::Write as _;

use super::extract::{self, Extracted, Found};
use super::field::{Field, FieldSet};
use super::index::IndexedValues;
use super::matcher::TextMatch;
use super::rules::{CompiledRule, RuleSet};
use super::{Classification, Evidence};
use crate::class::Class;
use crate::report::{GrpcCode, Report, SideEffectState};

/// The report's values as rules compare them: lower-cased, capped, derived, with what the
/// extractors found filling the fields the report lacks.
struct Prepared<'a> {
    present: FieldSet,
    http_status: Option<i64>,
    exit_code: Option<i64>,
    errno: Option<String>,
    sqlstate: Option<String>,
    error_code: Option<String>,
    tool: Option<String>,
    operation: Option<String>,
    exception: Option<String>,
    grpc_code: Option<&'static str>,
    grpc_lower: Option<String>,
    signal: Option<String>,
    /// The rules whose message pattern matched the message and the extracted text.
    message_rules: Vec<usize>,
    side_effects: Option<SideEffectState>,
    schema_valid: Option<bool>,
    /// Fields the report lacks and an extractor read weakly (an HTTP status out of text).
    weak: FieldSet,
    report: &'a Report,
    extracted: &'a Extracted,
}

impl<'a> Prepared<'a> {
    fn new(
        rules: &RuleSet,
        report: &'a Report,
        extracted: &'a Extracted,
        schema_valid: Option<bool>,
    ) -> Self {
        let lower = |v: &Option<String>, found: &Option<Found<String>>| {
            v.as_deref()
                .or(found.as_ref().map(|f| f.value.as_str()))
                .map(|s| s.trim().to_ascii_lowercase())
        };
        let text = extract::rule_text(report, extracted);
        let mut message_rules = Vec::new();
        if let Some(text) = &text {
            rules.messages.matching_rules(text, &mut message_rules);
        }
        let grpc_code = report
            .grpc_code
            .or(extracted.grpc_code.as_ref().map(|f| f.value))
            .map(GrpcCode::name);
        let prepared = Prepared {
            present: FieldSet::EMPTY,
            http_status: report
                .http_status
                .or(extracted.http_status.as_ref().map(|f| f.value))
                .map(i64::from),
            exit_code: report
                .exit_code
                .or(extracted.exit_code.as_ref().map(|f| f.value)),
            errno: lower(&report.errno, &extracted.errno),
            sqlstate: lower(&report.sqlstate, &extracted.sqlstate),
            error_code: lower(&report.error_code, &extracted.error_code),
            tool: lower(&report.tool, &extracted.tool),
            operation: lower(&report.operation, &None),
            exception: lower(&report.exception, &extracted.exception),
            grpc_code,
            grpc_lower: grpc_code.map(str::to_ascii_lowercase),
            signal: report
                .signal
                .as_ref()
                .map(|s| s.name().to_ascii_lowercase()),
            message_rules,
            side_effects: report
                .side_effects
                .map(super::super::report::SideEffects::state)
                .or(extracted.side_effects.as_ref().map(|f| f.value)),
            schema_valid,
            weak: FieldSet::EMPTY,
            report,
            extracted,
        };
        let mut weak = FieldSet::EMPTY;
        if report.http_status.is_none() && extracted.http_status.as_ref().is_some_and(|f| f.weak) {
            weak.insert(Field::HttpStatus);
        }
        if report.exception.is_none() && extracted.exception.as_ref().is_some_and(|f| f.weak) {
            weak.insert(Field::Exception);
        }
        if report.errno.is_none() && extracted.errno.as_ref().is_some_and(|f| f.weak) {
            weak.insert(Field::Errno);
        }
        let flags = [
            (Field::HttpStatus, prepared.http_status.is_some()),
            (Field::ExitCode, prepared.exit_code.is_some()),
            (Field::ElapsedMs, report.elapsed_ms.is_some()),
            (Field::GrpcCode, prepared.grpc_code.is_some()),
            (Field::Signal, prepared.signal.is_some()),
            (Field::Errno, prepared.errno.is_some()),
            (Field::Sqlstate, prepared.sqlstate.is_some()),
            (Field::ErrorCode, prepared.error_code.is_some()),
            (Field::Tool, prepared.tool.is_some()),
            (Field::Operation, prepared.operation.is_some()),
            (Field::Exception, prepared.exception.is_some()),
            (Field::Message, text.is_some()),
            (Field::SideEffects, prepared.side_effects.is_some()),
            (Field::SchemaValid, schema_valid.is_some()),
        ];
        let mut present = FieldSet::EMPTY;
        for (field, on) in flags {
            if on {
                present.insert(field);
            }
        }
        Prepared {
            present,
            weak,
            ..prepared
        }
    }

    /// Whether a candidate rule matches; its message condition was checked by the message set.
    fn matches(&self, rule: &CompiledRule) -> bool {
        let when = &rule.rule.when;
        let report = self.report;
        let number = |m: &Option<super::matcher::NumberMatch>, v: Option<i64>| match (m, v) {
            (Some(m), Some(v)) => m.matches(v),
            (Some(_), None) => false,
            (None, _) => true,
        };
        let text = |m: &Option<TextMatch>, v: &Option<String>| match (m, v) {
            (Some(m), Some(v)) => m.matches(v),
            (Some(_), None) => false,
            (None, _) => true,
        };
        number(&when.http_status, self.http_status)
            && number(&when.exit_code, self.exit_code)
            && number(
                &when.elapsed_ms,
                report.elapsed_ms.and_then(|v| i64::try_from(v).ok()),
            )
            && when
                .grpc_code
                .as_ref()
                .is_none_or(|codes| self.grpc_code.is_some_and(|c| codes.contains(&c)))
            && when.signal.as_ref().is_none_or(|names| {
                report
                    .signal
                    .as_ref()
                    .is_some_and(|s| names.iter().any(|n| n == s.name()))
            })
            && text(&when.errno, &self.errno)
            && text(&when.sqlstate, &self.sqlstate)
            && text(&when.error_code, &self.error_code)
            && text(&when.tool, &self.tool)
            && text(&when.operation, &self.operation)
            && when.exception.as_ref().is_none_or(|m| {
                self.exception
                    .as_deref()
                    .is_some_and(|e| exception_matches(m, e))
            })
            && when
                .side_effects
                .is_none_or(|want| self.side_effects == Some(want))
            && when
                .schema_valid
                .is_none_or(|want| self.schema_valid == Some(want))
            && when
                .headers
                .iter()
                .all(|(name, m)| m.matches(report.headers.get(name)))
    }
}

/// How strong a matching rule is for this report: its rank (lower is stronger) and the
/// fields of that rank.
#[derive(Debug, Clone, Copy)]
struct Strength {
    rank: u8,
    fields: FieldSet,
}

/// The rank of a weakly extracted field: just below `message` (a status read out of a text
/// is coarser than the text's own words), above context.
const WEAK_RANK: u8 = 2 * 6 + 1;

impl Prepared<'_> {
    /// A rule's strength: its strongest field's level, where a field the report has only as
    /// a weak extraction ranks just below the message.
    fn strength(&self, rule: &CompiledRule) -> Strength {
        let rank = |f: Field| {
            if self.weak.contains(f) {
                WEAK_RANK
            } else {
                2 * f.level()
            }
        };
        let best = rule
            .fields
            .iter()
            .map(rank)
            .min()
            .unwrap_or(2 * Field::WEAKEST_LEVEL);
        let fields = rule
            .fields
            .iter()
            .filter(|f| rank(*f) == best)
            .collect::<Vec<_>>();
        Strength {
            rank: best,
            fields: FieldSet::of(&fields),
        }
    }
}

/// A bare name matches the same name at the end of a qualified one (`.`, `::` or `$` before it).
pub(super) fn exception_matches(matcher: &TextMatch, lower: &str) -> bool {
    match matcher {
        TextMatch::OneOf(names) => names.iter().any(|name| {
            lower == name
                || lower.strip_suffix(name.as_str()).is_some_and(|head| {
                    head.ends_with('.') || head.ends_with("::") || head.ends_with('$')
                })
        }),
        other => other.matches(lower),
    }
}

impl IndexedValues for Prepared<'_> {
    fn present(&self) -> FieldSet {
        self.present
    }

    fn text(&self, field: Field) -> Option<&str> {
        match field {
            Field::ErrorCode => self.error_code.as_deref(),
            Field::Sqlstate => self.sqlstate.as_deref(),
            Field::Errno => self.errno.as_deref(),
            Field::Exception => self.exception.as_deref(),
            Field::GrpcCode => self.grpc_lower.as_deref(),
            Field::Signal => self.signal.as_deref(),
            Field::Tool => self.tool.as_deref(),
            Field::Operation => self.operation.as_deref(),
            _ => None,
        }
    }

    fn number(&self, field: Field) -> Option<i64> {
        match field {
            Field::HttpStatus => self.http_status,
            Field::ExitCode => self.exit_code,
            Field::ElapsedMs => self.report.elapsed_ms.and_then(|v| i64::try_from(v).ok()),
            _ => None,
        }
    }
}

/// The rules that may match, in rule order: those whose message pattern matched and whose
/// other required fields the report has, and those the index finds for the report's values.
/// A candidate's message condition is already known to hold.
fn candidates(rules: &RuleSet, prepared: &Prepared<'_>) -> Vec<usize> {
    let mut found: Vec<usize> = prepared
        .message_rules
        .iter()
        .copied()
        .filter(|&i| prepared.present.is_superset(rules.rules[i].required))
        .collect();
    rules.index.candidates(prepared, &mut found);
    found.sort_unstable();
    found
}

/// The rules that decide: those at the strongest level of evidence, of them the most
/// specific (a rule on a strict superset of another's fields), and between rules on the same
/// fields the first in order. Empty when no rule matched.
fn winners(ranked: Vec<(&CompiledRule, Strength)>) -> Vec<&CompiledRule> {
    let Some(best) = ranked.iter().map(|(_, s)| s.rank).min() else {
        return Vec::new();
    };
    let strongest: Vec<(&CompiledRule, FieldSet)> = ranked
        .into_iter()
        .filter(|(_, s)| s.rank == best)
        .map(|(r, s)| (r, s.fields))
        .collect();
    // A rule on a strict superset of another's fields (at this level) is more specific.
    let specific = strongest.iter().copied().filter(|(_, fields)| {
        !strongest
            .iter()
            .any(|(_, other)| other != fields && other.is_superset(*fields))
    });
    // Between rules on the same fields, the first in order wins.
    let mut winners: Vec<&CompiledRule> = Vec::new();
    let mut seen: Vec<FieldSet> = Vec::new();
    for (rule, fields) in specific {
        if !seen.contains(&fields) {
            seen.push(fields);
            winners.push(rule);
        }
    }
    winners
}

/// The class the matching rules give. Retry hints are added by the caller.
pub(super) fn class_of(
    rules: &RuleSet,
    report: &Report,
    extracted: &Extracted,
    schema_valid: Option<bool>,
) -> Classification {
    let prepared = Prepared::new(rules, report, extracted, schema_valid);
    let mut deciding: Vec<&CompiledRule> = Vec::new();
    let mut hint_rules: Vec<&CompiledRule> = Vec::new();
    for rule in candidates(rules, &prepared)
        .into_iter()
        .map(|i| &rules.rules[i])
    {
        if prepared.matches(rule) {
            if rule.rule.class.is_some() {
                deciding.push(rule);
            } else {
                hint_rules.push(rule);
            }
        }
    }
    // Each rule's strength, with fields read weakly out of text ranked below the message.
    let ranked: Vec<(&CompiledRule, Strength)> = deciding
        .into_iter()
        .map(|r| (r, prepared.strength(r)))
        .collect();
    let winners = winners(ranked);
    let Some(first) = winners.first() else {
        return unclassified("no rule matched".to_owned(), Vec::new());
    };
    let class = first.rule.class.expect("deciding rules have a class");
    if winners.iter().any(|w| w.rule.class != Some(class)) {
        let mut reason = String::from("the strongest evidence disagrees:");
        let mut evidence = Vec::new();
        for (i, w) in winners.iter().enumerate() {
            let sep = if i == 0 { " " } else { "; " };
            let class = w.rule.class.expect("deciding rules have a class");
            let _ = write!(reason, "{sep}rule `{}` says {class}", w.rule.id);
            evidence.extend(rule_evidence(w, &prepared));
        }
        return unclassified(reason, evidence);
    }
    let winner = winners[0];
    let mut retryable = winner.rule.retryable.unwrap_or(class.default_retryable());
    let mut fallback_allowed = winner
        .rule
        .fallback_allowed
        .unwrap_or(class.default_fallback_allowed());
    let mut evidence = rule_evidence(winner, &prepared);
    if let Some(hint) = hint_rules.iter().find(|h| h.rule.retryable.is_some()) {
        retryable = hint.rule.retryable.unwrap_or(retryable);
        evidence.extend(hint_evidence(hint, &prepared, "retryable", retryable));
    } else if let Some(flag) = &extracted.retryable {
        // A flag the body carries is the server's own word, like a hint rule's header.
        retryable = flag.value;
        let mut found = Evidence::extracted(
            flag.from,
            "retryable",
            flag.value.to_string(),
            flag.by,
            None,
        );
        found.note = Some(format!("the body sets retryable = {}", flag.value));
        evidence.push(found);
    }
    if let Some(hint) = hint_rules
        .iter()
        .find(|h| h.rule.fallback_allowed.is_some())
    {
        fallback_allowed = hint.rule.fallback_allowed.unwrap_or(fallback_allowed);
        evidence.extend(hint_evidence(
            hint,
            &prepared,
            "fallback_allowed",
            fallback_allowed,
        ));
    }
    let reason = winner
        .rule
        .reason
        .clone()
        .unwrap_or_else(|| format!("matched rule `{}`", winner.rule.id));
    Classification {
        class,
        retryable: retryable && !class.never_retryable(),
        fallback_allowed: fallback_allowed && !class.never_fallback(),
        rule: Some(winner.rule.id.clone()),
        evidence,
        retry_after_ms: None,
        reason,
    }
}

fn unclassified(reason: String, evidence: Vec<Evidence>) -> Classification {
    Classification {
        class: Class::Unclassified,
        retryable: false,
        fallback_allowed: false,
        rule: None,
        evidence,
        retry_after_ms: None,
        reason,
    }
}

fn hint_evidence(
    hint: &CompiledRule,
    prepared: &Prepared<'_>,
    what: &str,
    value: bool,
) -> Vec<Evidence> {
    rule_evidence(hint, prepared)
        .into_iter()
        .map(|mut e| {
            e.note = Some(format!("hint rule sets {what} = {value}"));
            e
        })
        .collect()
}

/// The report fields a rule tested, with their values; an extracted value says where it was
/// read and by which extractor.
fn rule_evidence(rule: &CompiledRule, prepared: &Prepared<'_>) -> Vec<Evidence> {
    let id = rule.rule.id.as_str();
    let report = prepared.report;
    let found = prepared.extracted;
    let mut out = Vec::new();
    for field in rule.fields.iter() {
        let name = field.name();
        let mut given = |value: Option<String>| {
            value
                .map(|v| out.push(Evidence::matched(name, v, id)))
                .is_some()
        };
        let explicit = match field {
            Field::HttpStatus => given(report.http_status.map(|v| v.to_string())),
            Field::ExitCode => given(report.exit_code.map(|v| v.to_string())),
            Field::ElapsedMs => given(report.elapsed_ms.map(|v| v.to_string())),
            Field::GrpcCode => given(report.grpc_code.map(|c| c.name().to_owned())),
            Field::Signal => given(report.signal.as_ref().map(|s| s.name().to_owned())),
            Field::Errno => given(report.errno.clone()),
            Field::Sqlstate => given(report.sqlstate.clone()),
            Field::ErrorCode => given(report.error_code.clone()),
            Field::Tool => given(report.tool.clone()),
            Field::Operation => given(report.operation.clone()),
            Field::Exception => given(report.exception.clone()),
            Field::Message => given(report.message.as_deref().map(short)),
            Field::SideEffects => given(
                report
                    .side_effects
                    .map(|s| format!("{} of {} done", s.done, s.total)),
            ),
            Field::SchemaValid => given(rule.rule.when.schema_valid.map(|v| v.to_string())),
            Field::Headers => {
                for (header, _) in &rule.rule.when.headers {
                    let value = report.headers.get(header).unwrap_or("(absent)").to_owned();
                    out.push(Evidence::matched(format!("headers.{header}"), value, id));
                }
                true
            }
        };
        if explicit && field != Field::Message {
            continue;
        }
        let mut from_extractor = |value: String, from, by| {
            out.push(Evidence::extracted(from, name, value, by, Some(id)));
        };
        match field {
            Field::HttpStatus => found
                .http_status
                .iter()
                .for_each(|f| from_extractor(f.value.to_string(), f.from, f.by)),
            Field::ExitCode => found
                .exit_code
                .iter()
                .for_each(|f| from_extractor(f.value.to_string(), f.from, f.by)),
            Field::GrpcCode => found
                .grpc_code
                .iter()
                .for_each(|f| from_extractor(f.value.name().to_owned(), f.from, f.by)),
            Field::SideEffects => found
                .side_effects
                .iter()
                .for_each(|f| from_extractor("partial".to_owned(), f.from, f.by)),
            Field::Message => {
                for f in &found.texts {
                    from_extractor(short(&f.value), f.from, f.by);
                }
            }
            _ => {
                let slot = match field {
                    Field::Errno => &found.errno,
                    Field::Sqlstate => &found.sqlstate,
                    Field::ErrorCode => &found.error_code,
                    Field::Tool => &found.tool,
                    Field::Exception => &found.exception,
                    _ => &None,
                };
                if let Some(f) = slot {
                    from_extractor(f.value.clone(), f.from, f.by);
                }
            }
        }
    }
    out
}

/// A message shortened for evidence.
fn short(text: &str) -> String {
    const MAX: usize = 200;
    if text.len() <= MAX {
        text.to_owned()
    } else {
        format!("{}…", &text[..text.floor_char_boundary(MAX)])
    }
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use super::super::{RuleSet, classify, parse_rules};
    use super::*;

    fn rules(text: &str) -> RuleSet {
        RuleSet::compile(parse_rules(text, "test").unwrap()).unwrap()
    }

    fn run(set: &RuleSet, json: &str) -> Classification {
        classify(
            set,
            &Report::from_json(json).unwrap(),
            Timestamp::UNIX_EPOCH,
        )
    }

    const TIERS: &str = r#"
        [[rules]]
        id = "exit"
        class = "capability_missing"
        when = { exit_code = 127 }
        [[rules]]
        id = "msg"
        class = "empty_results"
        when = { message = "no results" }
        [[rules]]
        id = "http.specific"
        class = "model_error"
        when = { http_status = 400, message = "too long" }
        [[rules]]
        id = "http"
        class = "invalid_input"
        when = { http_status = 400 }
        [[rules]]
        id = "http5"
        class = "transient"
        when = { http_status = { min = 500, max = 599 } }
        [[rules]]
        id = "grpc"
        class = "transient"
        when = { grpc_code = "UNAVAILABLE" }
        [[rules]]
        id = "errno"
        class = "transient"
        when = { errno = "ECONNRESET" }
        [[rules]]
        id = "sqlstate"
        class = "business"
        when = { sqlstate = "23505" }
        [[rules]]
        id = "errno+sqlstate"
        class = "business"
        when = { errno = "EIO", sqlstate = "23505" }
        [[rules]]
        id = "partial"
        class = "partial_success"
        when = { side_effects = "partial" }
        [[rules]]
        id = "no-retry-hint"
        retryable = false
        when = { headers = { "x-should-retry" = "false" } }
    "#;

    #[test]
    fn no_rule_matched_is_unclassified_with_a_reason() {
        let c = run(&rules(TIERS), r#"{"message": "the frobnicator declined"}"#);
        assert_eq!(c.class, Class::Unclassified);
        assert_eq!(c.reason, "no rule matched");
        assert!(!c.retryable && c.rule.is_none());
    }

    #[test]
    fn a_stronger_signal_beats_a_weaker_one() {
        let set = rules(TIERS);
        let c = run(
            &set,
            r#"{"http_status": 500, "message": "no results found"}"#,
        );
        assert_eq!(
            (c.class, c.rule.as_deref()),
            (Class::Transient, Some("http5"))
        );
        let c = run(&set, r#"{"http_status": 400, "exit_code": 127}"#);
        assert_eq!(c.rule.as_deref(), Some("http"));
        let c = run(&set, r#"{"grpc_code": 14, "http_status": 400}"#);
        assert_eq!(c.rule.as_deref(), Some("grpc"));
        let c = run(&set, r#"{"grpc_code": 14, "sqlstate": "23505"}"#);
        assert_eq!(c.rule.as_deref(), Some("sqlstate"));
        let c = run(
            &set,
            r#"{"sqlstate": "23505", "side_effects": {"done": 1, "total": 2}}"#,
        );
        assert_eq!((c.class, c.retryable), (Class::PartialSuccess, false));
    }

    #[test]
    fn the_first_rule_on_the_same_fields_wins() {
        let c = run(
            &rules(TIERS),
            r#"{"http_status": 400, "message": "prompt too long"}"#,
        );
        assert_eq!(
            (c.class, c.rule.as_deref()),
            (Class::ModelError, Some("http.specific"))
        );
    }

    #[test]
    fn strongest_signals_that_disagree_are_unclassified_naming_both() {
        let c = run(
            &rules(TIERS),
            r#"{"errno": "ECONNRESET", "sqlstate": "23505"}"#,
        );
        assert_eq!(c.class, Class::Unclassified);
        assert!(
            c.reason.contains("`errno`") && c.reason.contains("`sqlstate`"),
            "{}",
            c.reason
        );
        let rules_named: Vec<_> = c
            .evidence
            .iter()
            .filter_map(|e| e.rule.as_deref())
            .collect();
        assert_eq!(rules_named, ["errno", "sqlstate"]);
    }

    #[test]
    fn a_rule_on_more_fields_of_the_level_is_more_specific() {
        let c = run(&rules(TIERS), r#"{"errno": "EIO", "sqlstate": "23505"}"#);
        assert_eq!(c.rule.as_deref(), Some("errno+sqlstate"));
    }

    #[test]
    fn a_hint_sets_retryable_not_the_class() {
        let c = run(
            &rules(TIERS),
            r#"{"http_status": 503, "headers": {"X-Should-Retry": "false"}}"#,
        );
        assert_eq!((c.class, c.retryable), (Class::Transient, false));
        assert!(
            c.evidence
                .iter()
                .any(|e| e.field == "headers.x-should-retry")
        );
    }

    #[test]
    fn a_hint_cannot_lift_a_fixed_limit() {
        let set = rules(
            r#"
            [[rules]]
            id = "deny"
            class = "policy_denied"
            when = { message = "sandbox" }
            [[rules]]
            id = "yes"
            retryable = true
            fallback_allowed = true
            when = { headers = { "x-should-retry" = "true" } }
            "#,
        );
        let c = run(
            &set,
            r#"{"message": "sandbox said no", "headers": {"x-should-retry": "true"}}"#,
        );
        assert_eq!(
            (c.class, c.retryable, c.fallback_allowed),
            (Class::PolicyDenied, false, false)
        );
    }

    #[test]
    fn exceptions_match_bare_or_qualified() {
        let set = rules(
            "[[rules]]\nid = \"e\"\nclass = \"transient\"\nwhen = { exception = \"ConnectTimeout\" }",
        );
        for name in [
            "ConnectTimeout",
            "requests.exceptions.ConnectTimeout",
            "httpx::ConnectTimeout",
        ] {
            let c = run(&set, &format!(r#"{{"exception": "{name}"}}"#));
            assert_eq!(c.class, Class::Transient, "{name}");
        }
        let c = run(&set, r#"{"exception": "NotConnectTimeout"}"#);
        assert_eq!(c.class, Class::Unclassified);
    }
}
