//! `backstop classify --rules FILE`: the user's rules in front of the built-in ones.

use crate::support::{TempDir, arg, classify, issue_paths_and_codes, pairs};

const FROBNICATOR: &str = r#"
# A message the built-in rules know nothing about.
[[rules]]
id = "acme.frobnicator"
class = "business"
reason = "The frobnicator declined; ask a person."
when = { message = "frobnicator" }
"#;

const OVERRIDE_503: &str = r#"
# The same fields as the built-in `http.503` rule: the user's rule comes first and wins.
[[rules]]
id = "acme.503"
class = "business"
reason = "Our gateway answers 503 when the shop is closed."
when = { http_status = 503 }
"#;

/// Every kind of issue a rule file can have, one rule each.
const BAD_RULES: &str = r#"
[[rules]]
id = "bad-regex"
class = "transient"
when = { message = "(unclosed" }

[[rules]]
id = "bad-class"
class = "flaky"
when = { http_status = 500 }

[[rules]]
id = "bad-field"
class = "transient"
when = { colour = "red" }

[[rules]]
id = "bad-regex"
class = "transient"
when = { http_status = 502 }
"#;

#[test]
fn a_user_rule_classifies_a_message_the_built_in_rules_do_not_know() {
    let dir = TempDir::new("frobnicator");
    let rules = dir.write("frobnicator.toml", FROBNICATOR);
    let message = "the frobnicator declined";

    let without = classify(&["--message", message]);
    without.expect_code(0);
    assert_eq!(without.json()["class"], "unclassified");

    let run = classify(&["--rules", arg(&rules), "--message", message]);
    run.expect_code(0);
    let c = run.json();
    assert_eq!(c["class"], "business", "{c}");
    assert_eq!(c["rule"], "acme.frobnicator");
    assert_eq!(c["retryable"], false);
    assert_eq!(c["reason"], "The frobnicator declined; ask a person.");
    insta::assert_snapshot!("frobnicator_business", run.stdout);
}

#[test]
fn a_user_rule_on_the_same_fields_as_a_default_overrides_it() {
    let dir = TempDir::new("override");
    let rules = dir.write("override.toml", OVERRIDE_503);

    let default = classify(&["--status", "503"]);
    assert_eq!(default.json()["class"], "transient");

    let run = classify(&[
        "--rules",
        arg(&rules),
        "--status",
        "503",
        "--header",
        "Retry-After: 5",
    ]);
    run.expect_code(0);
    let c = run.json();
    assert_eq!(c["class"], "business", "{c}");
    assert_eq!(c["rule"], "acme.503");
    assert_eq!(c["retryable"], false);
    assert_eq!(c["fallback_allowed"], false);
    // Retry hints are read whatever the class.
    assert_eq!(c["retry_after_ms"], 5000);
    insta::assert_snapshot!("override_503_business", run.stdout);

    // Other statuses still get the built-in rules.
    let other = classify(&["--rules", arg(&rules), "--status", "502"]);
    assert_eq!(other.json()["class"], "transient");
}

#[test]
fn the_first_rules_file_comes_first() {
    let dir = TempDir::new("order");
    let first = dir.write("first.toml", OVERRIDE_503);
    let second = dir.write(
        "second.toml",
        "[[rules]]\nid = \"other.503\"\nclass = \"auth\"\nwhen = { http_status = 503 }\n",
    );
    let run = classify(&[
        "--rules",
        arg(&first),
        "--rules",
        arg(&second),
        "--status",
        "503",
    ]);
    assert_eq!(run.expect_code(0).json()["rule"], "acme.503");
    let swapped = classify(&[
        "--rules",
        arg(&second),
        "--rules",
        arg(&first),
        "--status",
        "503",
    ]);
    assert_eq!(swapped.expect_code(0).json()["rule"], "other.503");
}

#[test]
fn a_bad_rules_file_is_refused_with_every_issue_and_its_file_path() {
    let dir = TempDir::new("bad-rules");
    let rules = dir.write("bad.toml", BAD_RULES);
    let file = arg(&rules);

    let run = classify(&["--rules", file, "--status", "500", "--json"]);
    run.expect_code(2);
    assert_eq!(run.stderr, "");
    let refusal = run.json();
    assert_eq!(refusal["error"]["code"], "malformed", "{refusal}");
    let at = |path: &str| format!("{file}:{path}");
    let expected = [
        (at("rules[0].when.message"), "bad_regex"),
        (at("rules[1].class"), "unknown_class"),
        (at("rules[2].when.colour"), "unknown_field"),
        (at("rules[3].id"), "duplicate_id"),
    ];
    let expected: Vec<_> = expected.iter().map(|(p, c)| (p.as_str(), *c)).collect();
    assert_eq!(issue_paths_and_codes(&refusal), pairs(&expected));
    dir.snapshot(|| insta::assert_snapshot!("bad_rules_file_json", run.stdout));
}

#[test]
fn a_bad_rules_file_is_explained_on_stderr_for_a_person() {
    let dir = TempDir::new("bad-rules-human");
    let rules = dir.write("bad.toml", BAD_RULES);
    let run = classify(&[
        "--rules",
        arg(&rules),
        "--status",
        "500",
        "--output-format",
        "human",
    ]);
    run.expect_code(2);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.starts_with("the command was refused:\n"),
        "{}",
        run.stderr
    );
    for path in [
        "rules[0].when.message",
        "rules[1].class",
        "rules[2].when.colour",
        "rules[3].id",
    ] {
        let line = format!("  {}:{path}: ", rules.display());
        assert!(run.stderr.contains(&line), "{line} in {}", run.stderr);
    }
    dir.snapshot(|| insta::assert_snapshot!("bad_rules_file_human", run.stderr));
}

#[test]
fn a_missing_rules_file_is_refused_with_its_flag() {
    let dir = TempDir::new("missing-rules");
    let missing = dir.path().join("missing.toml");
    let run = classify(&["--rules", arg(&missing), "--status", "503", "--json"]);
    run.expect_code(2);
    let refusal = run.json();
    assert_eq!(refusal["error"]["code"], "malformed");
    let path = format!("--rules {}", missing.display());
    assert_eq!(
        issue_paths_and_codes(&refusal),
        pairs(&[(&path, "unreadable")])
    );
}
