//! Which rules match a report, and which of them decides.
//!
//! The strongest level of evidence wins; within it a rule on more fields beats one on fewer,
//! the first rule on the same fields beats later ones, and disagreement between what is left
//! is `unclassified`, naming every rule involved. See `docs/rules.md`.

use std::fmt::Write as _;

use super::field::{Field, FieldSet};
use super::index::IndexedValues;
use super::matcher::TextMatch;
use super::rules::{CompiledRule, RuleSet};
use super::{Classification, Evidence, capped};
use crate::class::Class;
use crate::report::{Report, SideEffectState};

/// The report's values as rules compare them: lower-cased, capped, derived.
struct Prepared<'a> {
    present: FieldSet,
    errno: Option<String>,
    sqlstate: Option<String>,
    error_code: Option<String>,
    tool: Option<String>,
    operation: Option<String>,
    exception: Option<String>,
    grpc_code: Option<String>,
    signal: Option<String>,
    /// The rules whose message pattern matched.
    message_rules: Vec<usize>,
    side_effects: Option<SideEffectState>,
    schema_valid: Option<bool>,
    report: &'a Report,
}

impl<'a> Prepared<'a> {
    fn new(rules: &RuleSet, report: &'a Report, schema_valid: Option<bool>) -> Self {
        let lower = |v: &Option<String>| v.as_ref().map(|s| s.trim().to_ascii_lowercase());
        let mut present = FieldSet::EMPTY;
        let flags = [
            (Field::HttpStatus, report.http_status.is_some()),
            (Field::ExitCode, report.exit_code.is_some()),
            (Field::ElapsedMs, report.elapsed_ms.is_some()),
            (Field::GrpcCode, report.grpc_code.is_some()),
            (Field::Signal, report.signal.is_some()),
            (Field::Errno, report.errno.is_some()),
            (Field::Sqlstate, report.sqlstate.is_some()),
            (Field::ErrorCode, report.error_code.is_some()),
            (Field::Tool, report.tool.is_some()),
            (Field::Operation, report.operation.is_some()),
            (Field::Exception, report.exception.is_some()),
            (Field::Message, report.message.is_some()),
            (Field::SideEffects, report.side_effects.is_some()),
            (Field::SchemaValid, schema_valid.is_some()),
        ];
        for (field, on) in flags {
            if on {
                present.insert(field);
            }
        }
        Prepared {
            present,
            errno: lower(&report.errno),
            sqlstate: lower(&report.sqlstate),
            error_code: lower(&report.error_code),
            tool: lower(&report.tool),
            operation: lower(&report.operation),
            exception: lower(&report.exception),
            grpc_code: report.grpc_code.map(|c| c.name().to_ascii_lowercase()),
            signal: report
                .signal
                .as_ref()
                .map(|s| s.name().to_ascii_lowercase()),
            message_rules: {
                let mut hits = Vec::new();
                if let Some(message) = &report.message {
                    rules.messages.matching_rules(capped(message), &mut hits);
                }
                hits
            },
            side_effects: report
                .side_effects
                .map(super::super::report::SideEffects::state),
            schema_valid,
            report,
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
        number(&when.http_status, report.http_status.map(i64::from))
            && number(&when.exit_code, report.exit_code)
            && number(
                &when.elapsed_ms,
                report.elapsed_ms.and_then(|v| i64::try_from(v).ok()),
            )
            && when
                .grpc_code
                .as_ref()
                .is_none_or(|codes| report.grpc_code.is_some_and(|c| codes.contains(&c.name())))
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
            Field::GrpcCode => self.grpc_code.as_deref(),
            Field::Signal => self.signal.as_deref(),
            Field::Tool => self.tool.as_deref(),
            Field::Operation => self.operation.as_deref(),
            _ => None,
        }
    }

    fn number(&self, field: Field) -> Option<i64> {
        match field {
            Field::HttpStatus => self.report.http_status.map(i64::from),
            Field::ExitCode => self.report.exit_code,
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

/// Decides the class from the rules that match. Retry hints are added by the caller.
pub(super) fn decide(
    rules: &RuleSet,
    report: &Report,
    schema_valid: Option<bool>,
) -> Classification {
    let prepared = Prepared::new(rules, report, schema_valid);
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
    let Some(best) = deciding.iter().map(|r| r.level).min() else {
        return unclassified("no rule matched".to_owned(), Vec::new());
    };
    let strongest: Vec<&CompiledRule> = deciding.into_iter().filter(|r| r.level == best).collect();
    // A rule on a strict superset of another's fields (at this level) is more specific.
    let specific: Vec<&CompiledRule> = strongest
        .iter()
        .copied()
        .filter(|r| {
            !strongest.iter().any(|o| {
                o.level_fields != r.level_fields && o.level_fields.is_superset(r.level_fields)
            })
        })
        .collect();
    // Between rules on the same fields, the first in order wins.
    let mut winners: Vec<&CompiledRule> = Vec::new();
    for rule in specific {
        if !winners.iter().any(|w| w.level_fields == rule.level_fields) {
            winners.push(rule);
        }
    }
    let class = winners[0].rule.class.expect("deciding rules have a class");
    if winners.iter().any(|w| w.rule.class != Some(class)) {
        let mut reason = String::from("the strongest evidence disagrees:");
        let mut evidence = Vec::new();
        for (i, w) in winners.iter().enumerate() {
            let sep = if i == 0 { " " } else { "; " };
            let class = w.rule.class.expect("deciding rules have a class");
            let _ = write!(reason, "{sep}rule `{}` says {class}", w.rule.id);
            evidence.extend(rule_evidence(w, report));
        }
        return unclassified(reason, evidence);
    }
    let winner = winners[0];
    let mut retryable = winner.rule.retryable.unwrap_or(class.default_retryable());
    let mut fallback_allowed = winner
        .rule
        .fallback_allowed
        .unwrap_or(class.default_fallback_allowed());
    let mut evidence = rule_evidence(winner, report);
    if let Some(hint) = hint_rules.iter().find(|h| h.rule.retryable.is_some()) {
        retryable = hint.rule.retryable.unwrap_or(retryable);
        evidence.extend(hint_evidence(hint, report, "retryable", retryable));
    }
    if let Some(hint) = hint_rules
        .iter()
        .find(|h| h.rule.fallback_allowed.is_some())
    {
        fallback_allowed = hint.rule.fallback_allowed.unwrap_or(fallback_allowed);
        evidence.extend(hint_evidence(
            hint,
            report,
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

fn hint_evidence(hint: &CompiledRule, report: &Report, what: &str, value: bool) -> Vec<Evidence> {
    rule_evidence(hint, report)
        .into_iter()
        .map(|mut e| {
            e.note = Some(format!("hint rule sets {what} = {value}"));
            e
        })
        .collect()
}

/// The report fields a rule tested, with their values.
fn rule_evidence(rule: &CompiledRule, report: &Report) -> Vec<Evidence> {
    let id = rule.rule.id.as_str();
    let mut out = Vec::new();
    let mut push = |field: &str, value: Option<String>| {
        if let Some(value) = value {
            out.push(Evidence::matched(field, value, id));
        }
    };
    for field in rule.fields.iter() {
        let name = field.name();
        match field {
            Field::HttpStatus => push(name, report.http_status.map(|v| v.to_string())),
            Field::ExitCode => push(name, report.exit_code.map(|v| v.to_string())),
            Field::ElapsedMs => push(name, report.elapsed_ms.map(|v| v.to_string())),
            Field::GrpcCode => push(name, report.grpc_code.map(|c| c.name().to_owned())),
            Field::Signal => push(name, report.signal.as_ref().map(|s| s.name().to_owned())),
            Field::Errno => push(name, report.errno.clone()),
            Field::Sqlstate => push(name, report.sqlstate.clone()),
            Field::ErrorCode => push(name, report.error_code.clone()),
            Field::Tool => push(name, report.tool.clone()),
            Field::Operation => push(name, report.operation.clone()),
            Field::Exception => push(name, report.exception.clone()),
            Field::Message => push(name, report.message.as_deref().map(short)),
            Field::SideEffects => push(
                name,
                report
                    .side_effects
                    .map(|s| format!("{} of {} done", s.done, s.total)),
            ),
            Field::SchemaValid => push(name, rule.rule.when.schema_valid.map(|v| v.to_string())),
            Field::Headers => {
                for (header, _) in &rule.rule.when.headers {
                    let value = report.headers.get(header).unwrap_or("(absent)").to_owned();
                    push(&format!("headers.{header}"), Some(value));
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
