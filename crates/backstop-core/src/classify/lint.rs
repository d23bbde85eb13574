//! `backstop rules check`: every parse issue, plus rules that can never decide.
//!
//! A rule is shadowed when an earlier rule tests the same fields of the same strength, tests no
//! field the later one doesn't, and accepts everything the later one accepts: the earlier rule
//! then always wins. The check is conservative: it reports only what it can prove.

use super::matcher::{HeaderMatch, TextMatch};
use super::rules::{CompiledRule, Conditions, RuleSet, builtin_id_clashes, parse_rules};
use crate::issue::Issue;

/// Every issue in a rule file: what [`parse_rules`] finds, then what loading it in front of
/// the built-in rules refuses (an id a built-in rule has; not for the built-in file itself),
/// then shadowed rules.
pub fn check_rules(text: &str, origin: &str) -> Vec<Issue> {
    let rules = match parse_rules(text, origin) {
        Ok(rules) => rules,
        Err(issues) => return issues,
    };
    if text != super::DEFAULT_RULES {
        match builtin_id_clashes(&rules, origin) {
            Ok(clashes) if clashes.is_empty() => {}
            Ok(issues) | Err(issues) => return issues,
        }
    }
    match RuleSet::compile(rules) {
        Ok(set) => shadowed(&set),
        Err(issues) => issues,
    }
}

/// The rules of a set that an earlier rule shadows.
pub fn shadowed(set: &RuleSet) -> Vec<Issue> {
    let mut issues = Vec::new();
    for (i, later) in set.rules.iter().enumerate() {
        if let Some((j, earlier)) = set.rules[..i]
            .iter()
            .enumerate()
            .find(|(_, earlier)| shadows(earlier, later))
        {
            issues.push(Issue::new(
                format!("rules[{i}]"),
                "shadowed",
                format!(
                    "rule `{}` can never decide: rules[{j}] (`{}`) comes first, tests the same \
                     fields and matches everything it matches; move it above, or remove it",
                    later.rule.id, earlier.rule.id
                ),
            ));
        }
    }
    issues
}

/// Whether `earlier` always wins wherever `later` matches.
fn shadows(earlier: &CompiledRule, later: &CompiledRule) -> bool {
    let (a, b) = (&earlier.rule, &later.rule);
    let same_kind = match (a.class, b.class) {
        (Some(_), Some(_)) => true,
        (None, None) => {
            (b.retryable.is_none() || a.retryable.is_some())
                && (b.fallback_allowed.is_none() || a.fallback_allowed.is_some())
        }
        _ => false,
    };
    same_kind
        && earlier.level_fields == later.level_fields
        && later.fields.is_superset(earlier.fields)
        && accepts_all(&a.when, &b.when)
}

/// Whether every report `narrow` accepts, `wide` accepts too (for the fields `wide` tests).
fn accepts_all(wide: &Conditions, narrow: &Conditions) -> bool {
    fn opt<T>(wide: Option<&T>, narrow: Option<&T>, within: impl Fn(&T, &T) -> bool) -> bool {
        match (wide, narrow) {
            (None, _) => true,
            (Some(w), Some(n)) => within(n, w),
            (Some(_), None) => false,
        }
    }
    let text = |n: &TextMatch, w: &TextMatch| n.within(w);
    let subset = |n: &Vec<&'static str>, w: &Vec<&'static str>| n.iter().all(|x| w.contains(x));
    opt(
        wide.http_status.as_ref(),
        narrow.http_status.as_ref(),
        super::matcher::NumberMatch::within,
    ) && opt(
        wide.exit_code.as_ref(),
        narrow.exit_code.as_ref(),
        super::matcher::NumberMatch::within,
    ) && opt(
        wide.elapsed_ms.as_ref(),
        narrow.elapsed_ms.as_ref(),
        super::matcher::NumberMatch::within,
    ) && opt(wide.grpc_code.as_ref(), narrow.grpc_code.as_ref(), subset)
        && opt(wide.signal.as_ref(), narrow.signal.as_ref(), |n, w| {
            n.iter().all(|x| w.contains(x))
        })
        && opt(wide.errno.as_ref(), narrow.errno.as_ref(), text)
        && opt(wide.sqlstate.as_ref(), narrow.sqlstate.as_ref(), text)
        && opt(wide.error_code.as_ref(), narrow.error_code.as_ref(), text)
        && opt(wide.tool.as_ref(), narrow.tool.as_ref(), text)
        && opt(wide.operation.as_ref(), narrow.operation.as_ref(), text)
        && opt(
            wide.exception.as_ref(),
            narrow.exception.as_ref(),
            |n, w| match n {
                TextMatch::OneOf(names) => names
                    .iter()
                    .all(|name| super::evaluate::exception_matches(w, name)),
                other => other.within(w),
            },
        )
        && opt(wide.message.as_ref(), narrow.message.as_ref(), |n, w| {
            n.iter().all(|p| w.contains(p))
        })
        && opt(
            wide.side_effects.as_ref(),
            narrow.side_effects.as_ref(),
            |n, w| n == w,
        )
        && opt(
            wide.schema_valid.as_ref(),
            narrow.schema_valid.as_ref(),
            |n, w| n == w,
        )
        && wide.headers.iter().all(|(name, w)| {
            narrow.headers.iter().any(|(other, n)| {
                other == name
                    && match (w, n) {
                        (HeaderMatch::Present(a), HeaderMatch::Present(b)) => a == b,
                        (HeaderMatch::Present(true), HeaderMatch::Value(_)) => true,
                        (HeaderMatch::Value(w), HeaderMatch::Value(n)) => n.within(w),
                        _ => false,
                    }
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(text: &str) -> Vec<(String, String)> {
        check_rules(text, "test")
            .into_iter()
            .map(|i| (i.path, i.code))
            .collect()
    }

    #[test]
    fn a_general_rule_before_a_specific_one_shadows_it() {
        let found = codes(
            r#"
            [[rules]]
            id = "any-5xx"
            class = "transient"
            when = { http_status = { min = 500, max = 599 } }
            [[rules]]
            id = "501"
            class = "capability_missing"
            when = { http_status = 501 }
            "#,
        );
        assert_eq!(found, [("rules[1]".to_owned(), "shadowed".to_owned())]);
    }

    #[test]
    fn a_more_specific_rule_first_is_fine() {
        let found = codes(
            r#"
            [[rules]]
            id = "501"
            class = "capability_missing"
            when = { http_status = 501 }
            [[rules]]
            id = "any-5xx"
            class = "transient"
            when = { http_status = { min = 500, max = 599 } }
            [[rules]]
            id = "400-long"
            class = "model_error"
            when = { http_status = 400, message = "too long" }
            "#,
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_rule_with_an_extra_field_of_the_same_level_is_not_shadowed() {
        // The later rule tests more fields at the deciding level, so it is more specific.
        let found = codes(
            r#"
            [[rules]]
            id = "errno"
            class = "transient"
            when = { errno = "EIO" }
            [[rules]]
            id = "errno+sqlstate"
            class = "business"
            when = { errno = "EIO", sqlstate = "23505" }
            "#,
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_weaker_field_added_still_shadows() {
        let found = codes(
            r#"
            [[rules]]
            id = "400"
            class = "invalid_input"
            when = { http_status = 400 }
            [[rules]]
            id = "400-long"
            class = "model_error"
            when = { http_status = 400, message = "too long" }
            "#,
        );
        assert_eq!(found, [("rules[1]".to_owned(), "shadowed".to_owned())]);
    }

    #[test]
    fn exception_names_and_prefixes() {
        let found = codes(
            r#"
            [[rules]]
            id = "timeout"
            class = "transient"
            when = { exception = "Timeout" }
            [[rules]]
            id = "requests-timeout"
            class = "transient"
            when = { exception = "requests.exceptions.Timeout" }
            [[rules]]
            id = "class-08"
            class = "transient"
            when = { sqlstate = { prefix = "08" } }
            [[rules]]
            id = "08006"
            class = "transient"
            when = { sqlstate = "08006" }
            "#,
        );
        let paths: Vec<_> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["rules[1]", "rules[3]"]);
    }

    #[test]
    fn parse_issues_come_first() {
        let found = codes("[[rules]]\nid = \"a\"\nclass = \"nope\"\nwhen = { http_status = 1 }");
        assert_eq!(
            found,
            [("rules[0].class".to_owned(), "unknown_class".to_owned())]
        );
    }
}
