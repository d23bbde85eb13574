//! The built-in rules: they lint clean, and each names the source of its fact.

use backstop_core::classify::lint::check_rules;
use backstop_core::classify::{DEFAULT_RULES, RuleSet};

#[test]
fn the_default_rules_have_no_issues_and_no_shadowed_rule() {
    let issues = check_rules(DEFAULT_RULES, "default");
    assert!(issues.is_empty(), "{issues:#?}");
    assert!(
        RuleSet::builtin().len() >= 250,
        "only {} built-in rules",
        RuleSet::builtin().len()
    );
}

#[test]
fn every_default_rule_names_its_source_in_a_comment() {
    let lines: Vec<&str> = DEFAULT_RULES.lines().collect();
    let mut missing = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() != "[[rules]]" {
            continue;
        }
        // The comment block right above the rule.
        let sourced = lines[..i]
            .iter()
            .rev()
            .take_while(|l| l.trim_start().starts_with('#'))
            .any(|l| l.contains("Source:"));
        if !sourced {
            missing.push(format!(
                "line {}: {}",
                i + 2,
                lines.get(i + 1).unwrap_or(&"")
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "rules without a `# Source:` comment:\n{}",
        missing.join("\n")
    );
}

/// docs/rules.md documents every extractor, with an example.
#[test]
fn every_extractor_is_documented() {
    let doc = include_str!("../../../../docs/rules.md");
    for extractor in backstop_core::classify::extract::EXTRACTORS {
        assert!(
            doc.contains(&format!("| `{}` |", extractor.name)),
            "docs/rules.md does not document the extractor `{}`",
            extractor.name
        );
    }
}

/// "Try again" after a fix is a request to change something; after a wait it is a transient.
#[test]
fn try_again_after_a_fix_is_not_a_transient() {
    use backstop_core::Report;
    use backstop_core::classify::classify;
    let rules = RuleSet::builtin();
    let now = "2026-01-01T00:00:00Z".parse().unwrap();
    let judge = |message: &str| {
        let report = Report {
            message: Some(message.to_owned()),
            ..Report::default()
        };
        let c = classify(&rules, &report, now);
        (c.class.to_string(), c.retryable)
    };
    for fix in [
        "Please provide a valid API key and try again.",
        "Please correct the errors below and try again.",
        "Create a configuration file (.tf file) and try again.",
    ] {
        assert_eq!(judge(fix), ("invalid_input".to_owned(), false), "{fix}");
    }
    for wait in [
        "The service is busy. Please try again later.",
        "Something went wrong on our side; please try again.",
    ] {
        assert_eq!(judge(wait), ("transient".to_owned(), true), "{wait}");
    }
}
