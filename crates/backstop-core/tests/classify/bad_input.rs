//! Every bad input gets a clear error with its path.

use backstop_core::Report;
use backstop_core::classify::RuleSet;
use backstop_core::classify::lint::check_rules;

fn report_issue(json: &str) -> (String, String) {
    let issues = Report::from_json(json).unwrap_err();
    (issues[0].path.clone(), issues[0].code.clone())
}

#[test]
fn bad_reports_name_the_path() {
    let cases = [
        (
            r#"{"http_status": 503, "retry": true}"#,
            ("retry", "unknown_field"),
        ),
        (r#"{"http_status": "503"}"#, ("http_status", "wrong_type")),
        (
            r#"{"headers": {"retry-after": true}}"#,
            ("headers.retry-after", "wrong_type"),
        ),
        (
            r#"{"headers": ["retry-after: 2"]}"#,
            ("headers", "wrong_type"),
        ),
        (
            r#"{"side_effects": {"done": 1}}"#,
            // The missing field is named, not the object that lacks it.
            ("side_effects.total", "required"),
        ),
        (r#"{"signal": "SIGNOPE"}"#, ("signal", "wrong_type")),
        (r#"{"http_status": 700}"#, ("http_status", "out_of_range")),
        (r#"{"exit_code": 1.5}"#, ("exit_code", "wrong_type")),
        (r#"{"message": "x""#, ("", "bad_json")),
        ("[1, 2]", ("", "wrong_type")),
        ("{}", ("", "empty_report")),
    ];
    for (json, (path, code)) in cases {
        assert_eq!(
            report_issue(json),
            (path.to_owned(), code.to_owned()),
            "{json}"
        );
    }
}

#[test]
fn bad_rule_files_list_every_issue() {
    let text = r#"
        [[rules]]
        id = "bad-regex"
        class = "transient"
        when = { message = "(unclosed" }

        [[rules]]
        id = "bad-class"
        class = "flaky"
        when = { http_status = 503 }

        [[rules]]
        id = "bad-field"
        class = "transient"
        when = { status = 503 }

        [[rules]]
        id = "bad-regex"
        class = "transient"
        when = { http_status = 502 }
    "#;
    let found: Vec<(String, String)> = check_rules(text, "mine.toml")
        .into_iter()
        .map(|i| (i.path, i.code))
        .collect();
    let want = [
        ("rules[0].when.message", "bad_regex"),
        ("rules[1].class", "unknown_class"),
        ("rules[2].when.status", "unknown_field"),
        ("rules[3].id", "duplicate_id"),
    ];
    assert_eq!(found, want.map(|(p, c)| (p.to_owned(), c.to_owned())));
}

#[test]
fn a_bad_user_file_keeps_nothing_and_names_the_file() {
    let issues = RuleSet::load(&[(
        "mine.toml",
        "[[rules]]\nid = \"a\"\nclass = \"flaky\"\nwhen = { http_status = 1 }",
    )])
    .unwrap_err();
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].path, "mine.toml:rules[0].class");
}

/// `rules check` refuses exactly what loading refuses: each file loading refuses (parse issues,
/// bad patterns, ids repeated within the file or taken from a built-in rule), fed to the
/// checker, gives the same paths and codes (less the file name loading puts in front).
#[test]
fn the_checker_refuses_what_loading_refuses() {
    let rule = |id: &str, when: &str| {
        format!("[[rules]]\nid = \"{id}\"\nclass = \"transient\"\nwhen = {{ {when} }}\n")
    };
    let files = [
        rule("http.403", "http_status = 599"),
        rule("mine", "http_status = 598") + &rule("mine", "http_status = 597"),
        rule("bad-pattern", "message = \"(unclosed\""),
        rule("bad-field", "status = 503"),
        "[[rules]]\nid = \"x\"\nclass = \"flaky\"\nwhen = { http_status = 1 }\n".to_owned(),
        "rules = 3".to_owned(),
    ];
    for text in &files {
        let loaded: Vec<(String, String)> = RuleSet::load(&[("mine.toml", text)])
            .expect_err("loading refuses it")
            .into_iter()
            .map(|i| {
                let path = i.path.strip_prefix("mine.toml").unwrap_or(&i.path);
                (path.trim_start_matches(':').to_owned(), i.code)
            })
            .collect();
        let checked: Vec<(String, String)> = check_rules(text, "mine.toml")
            .into_iter()
            .map(|i| (i.path, i.code))
            .collect();
        assert_eq!(checked, loaded, "{text}");
    }
    // The built-in file is checked as itself, not as a user file repeating every id.
    assert_eq!(
        check_rules(backstop_core::classify::DEFAULT_RULES, "default"),
        vec![]
    );
}
