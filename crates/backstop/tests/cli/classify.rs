//! `backstop classify` with one report, from flags or from stdin.

use serde_json::{Value, json};

use crate::support::{TempDir, classify, classify_stdin};

/// The evidence entry for `field`; panics when there is none.
fn evidence<'a>(classification: &'a Value, field: &str) -> &'a Value {
    classification["evidence"]
        .as_array()
        .expect("evidence is an array")
        .iter()
        .find(|e| e["field"] == field)
        .unwrap_or_else(|| panic!("no evidence for `{field}`: {classification}"))
}

/// Asserts the verdict of a classification: class, retryable, `fallback_allowed`.
#[track_caller]
fn assert_verdict(classification: &Value, class: &str, retryable: bool, fallback: bool) {
    assert_eq!(classification["class"], class, "{classification}");
    assert_eq!(classification["retryable"], retryable, "{classification}");
    assert_eq!(
        classification["fallback_allowed"], fallback,
        "{classification}"
    );
}

#[test]
fn status_503_with_retry_after_as_json() {
    let run = classify(&["--status", "503", "--header", "Retry-After: 2"]);
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    let c = run.json();
    assert_verdict(&c, "transient", true, true);
    assert_eq!(c["rule"], "http.503");
    assert_eq!(c["retry_after_ms"], 2000);
    assert_eq!(evidence(&c, "http_status")["value"], "503");
    assert_eq!(evidence(&c, "headers.retry-after")["value"], "2");
    insta::assert_snapshot!("status_503_retry_after_json", run.stdout);
}

#[test]
fn status_503_with_retry_after_for_a_person() {
    let run = classify(&[
        "--status",
        "503",
        "--header",
        "Retry-After: 2",
        "--output-format",
        "human",
    ]);
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    assert!(
        run.stdout
            .starts_with("transient  (retryable, fallback allowed)  rule http.503\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\n  retry after: 2000 ms\n"),
        "{}",
        run.stdout
    );
    assert!(
        serde_json::from_str::<Value>(&run.stdout).is_err(),
        "human output is not JSON"
    );
    insta::assert_snapshot!("status_503_retry_after_human", run.stdout);
}

/// One report flag and what the built-in rules make of it.
struct FlagCase {
    /// The snapshot name.
    name: &'static str,
    flags: &'static [&'static str],
    class: &'static str,
    retryable: bool,
    fallback: bool,
    /// The evidence the deciding rule rests on: the report field and its value.
    field: &'static str,
    value: &'static str,
}

const FLAG_CASES: &[FlagCase] = &[
    FlagCase {
        name: "quota_error_code_over_429",
        flags: &["--error-code", "insufficient_quota", "--status", "429"],
        class: "quota_exhausted",
        retryable: false,
        fallback: false,
        field: "error_code",
        value: "insufficient_quota",
    },
    FlagCase {
        name: "grpc_code_14",
        flags: &["--grpc-code", "14"],
        class: "transient",
        retryable: true,
        fallback: true,
        field: "grpc_code",
        value: "UNAVAILABLE",
    },
    FlagCase {
        name: "signal_9",
        flags: &["--signal", "9"],
        class: "unclassified",
        retryable: false,
        fallback: false,
        field: "signal",
        value: "SIGKILL",
    },
    FlagCase {
        name: "exit_code_127",
        flags: &["--exit-code", "127"],
        class: "capability_missing",
        retryable: false,
        fallback: true,
        field: "exit_code",
        value: "127",
    },
    FlagCase {
        name: "errno_econnreset",
        flags: &["--errno", "ECONNRESET"],
        class: "transient",
        retryable: true,
        fallback: true,
        field: "errno",
        value: "ECONNRESET",
    },
    FlagCase {
        name: "sqlstate_40001",
        flags: &["--sqlstate", "40001"],
        class: "transient",
        retryable: true,
        fallback: true,
        field: "sqlstate",
        value: "40001",
    },
    FlagCase {
        name: "exception_connect_timeout",
        flags: &["--exception", "requests.exceptions.ConnectTimeout"],
        class: "transient",
        retryable: true,
        fallback: true,
        field: "exception",
        value: "requests.exceptions.ConnectTimeout",
    },
    FlagCase {
        name: "message_connection_reset",
        flags: &["--message", "connection reset by peer"],
        class: "transient",
        retryable: true,
        fallback: true,
        field: "message",
        value: "connection reset by peer",
    },
];

#[test]
fn each_report_flag_decides_its_class() {
    for case in FLAG_CASES {
        let name = case.name;
        let run = classify(case.flags);
        run.expect_code(0);
        let c = run.json();
        assert_verdict(&c, case.class, case.retryable, case.fallback);
        assert!(c["rule"].is_string(), "{name}: a rule decided: {c}");
        let found = evidence(&c, case.field);
        assert_eq!(found["value"], case.value, "{name}: {c}");
        assert_eq!(
            found["rule"], c["rule"],
            "{name}: the deciding rule used it"
        );
        assert_eq!(
            c["retry_after_ms"],
            Value::Null,
            "{name}: no hint was given"
        );
        insta::assert_snapshot!(name, run.stdout);
    }
}

#[test]
fn partial_side_effects_outrank_the_status_and_are_never_retryable() {
    let run = classify(&["--side-effects", "2/5", "--status", "500"]);
    run.expect_code(0);
    let c = run.json();
    assert_verdict(&c, "partial_success", false, false);
    let side_effects = evidence(&c, "side_effects");
    assert_eq!(side_effects["value"], "2 of 5 done");
    assert_eq!(side_effects["rule"], c["rule"]);
    insta::assert_snapshot!("side_effects_partial_over_500", run.stdout);
}

#[test]
fn output_failing_its_schema_is_a_schema_violation_with_the_failing_path() {
    let run = classify(&[
        "--output",
        r#"{"id": 1}"#,
        "--schema",
        r#"{"type":"object","required":["id","name"]}"#,
    ]);
    run.expect_code(0);
    let c = run.json();
    assert_verdict(&c, "schema_violation", false, true);
    assert_eq!(evidence(&c, "schema_valid")["value"], "false");
    // The missing property is reported at the object that lacks it: the output's root.
    let failure = evidence(&c, "output");
    assert_eq!(failure["value"], r#"{"id":1}"#);
    assert!(
        failure["note"]
            .as_str()
            .is_some_and(|n| n.contains("'name'") && n.contains("missing")),
        "{c}"
    );
    insta::assert_snapshot!("schema_violation_required", run.stdout);
}

#[test]
fn a_schema_that_refers_to_a_file_is_refused_and_the_file_is_not_read() {
    let dir = TempDir::new("schema-ref");
    // Were it read, this schema would accept the output and the report would be classified.
    let other = dir.write("other.json", r#"{"type": "integer"}"#);
    let schema = json!({"$ref": format!("file://{}", other.display())}).to_string();
    let run = classify(&["--output", "1", "--schema", &schema]);
    run.expect_code(2);
    let refusal = run.json();
    let issue = &refusal["error"]["issues"][0];
    assert_eq!(
        (&issue["path"], &issue["code"]),
        (&json!("--schema"), &json!("bad_schema")),
        "{refusal}"
    );
    assert!(
        issue["message"]
            .as_str()
            .unwrap()
            .contains("must stand alone"),
        "{refusal}"
    );
}

#[test]
fn nested_schema_failures_are_listed_with_their_json_pointer() {
    let run = classify(&[
        "--output",
        r#"{"id": "x", "items": [1, "two"]}"#,
        "--schema",
        r#"{"type": "object", "properties": {"id": {"type": "integer"},
            "items": {"type": "array", "items": {"type": "integer"}}}}"#,
    ]);
    run.expect_code(0);
    let c = run.json();
    assert_eq!(c["class"], "schema_violation", "{c}");
    assert_eq!(evidence(&c, "output/id")["value"], r#""x""#);
    assert_eq!(evidence(&c, "output/items/1")["value"], r#""two""#);
}

#[test]
fn retry_after_http_dates_are_read_against_now() {
    // --now is 2026-01-01T00:00:00Z; each form of the same date is 90 s later.
    for date in [
        "Thu, 01 Jan 2026 00:01:30 GMT",
        "Thursday, 01-Jan-26 00:01:30 GMT",
        "Thu Jan  1 00:01:30 2026",
    ] {
        let run = classify(&[
            "--status",
            "503",
            "--header",
            &format!("Retry-After: {date}"),
        ]);
        run.expect_code(0);
        let c = run.json();
        assert_eq!(c["retry_after_ms"], 90_000, "{date}: {c}");
        assert_eq!(evidence(&c, "headers.retry-after")["value"], date);
    }
    let run = classify(&[
        "--status",
        "429",
        "--header",
        "Retry-After: Thu, 01 Jan 2026 00:01:30 GMT",
    ]);
    insta::assert_snapshot!("retry_after_http_date", run.stdout);
}

#[test]
fn a_past_retry_after_date_gives_no_hint_and_says_why() {
    let run = classify(&[
        "--status",
        "503",
        "--header",
        "Retry-After: Wed, 31 Dec 2025 23:59:00 GMT",
    ]);
    run.expect_code(0);
    let c = run.json();
    assert_eq!(c["class"], "transient");
    assert_eq!(c["retry_after_ms"], Value::Null);
    let note = evidence(&c, "headers.retry-after")["note"]
        .as_str()
        .expect("a note")
        .to_owned();
    assert!(note.contains("past"), "{note}");
}

#[test]
fn a_report_nothing_matches_is_unclassified_and_still_exit_0() {
    let run = classify(&["--message", "the frobnicator declined"]);
    run.expect_code(0);
    let c = run.json();
    assert_verdict(&c, "unclassified", false, false);
    assert_eq!(c["rule"], Value::Null);
    assert_eq!(c["reason"], "no rule matched");
    insta::assert_snapshot!("unclassified", run.stdout);
}

#[test]
fn one_json_report_on_stdin_classifies_like_the_same_flags() {
    let cases: &[(&[&str], Value)] = &[
        (
            &["--status", "503", "--header", "Retry-After: 2"],
            json!({"http_status": 503, "headers": {"Retry-After": "2"}}),
        ),
        (
            &["--error-code", "insufficient_quota", "--status", "429"],
            json!({"error_code": "insufficient_quota", "http_status": 429}),
        ),
        (&["--grpc-code", "14"], json!({"grpc_code": 14})),
        (&["--signal", "9"], json!({"signal": "SIGKILL"})),
        (
            &["--side-effects", "2/5", "--status", "500"],
            json!({"side_effects": {"done": 2, "total": 5}, "http_status": 500}),
        ),
        (
            &[
                "--output",
                r#"{"id": 1}"#,
                "--schema",
                r#"{"type":"object","required":["id","name"]}"#,
            ],
            json!({"output": {"id": 1}, "schema": {"type": "object", "required": ["id", "name"]}}),
        ),
    ];
    for (flags, report) in cases {
        let from_flags = classify(flags);
        from_flags.expect_code(0);
        let stdin = report.to_string();
        let from_stdin = classify_stdin(&[], stdin.as_bytes());
        from_stdin.expect_code(0);
        assert_eq!(from_stdin.json(), from_flags.json(), "{stdin}");
    }
}

#[test]
fn piped_output_is_json_and_json_flags_print_the_same() {
    let stdin = br#"{"error_code": "insufficient_quota", "http_status": 429}"#;
    let auto = classify_stdin(&[], stdin);
    auto.expect_code(0);
    assert_eq!(auto.json()["class"], "quota_exhausted");
    assert!(
        auto.stdout.ends_with("}\n"),
        "one JSON line: {}",
        auto.stdout
    );
    assert_eq!(auto.stdout.lines().count(), 1);
    for format in [&["--json"][..], &["--output-format", "json"]] {
        let explicit = classify_stdin(format, stdin);
        explicit.expect_code(0);
        assert_eq!(explicit.stdout, auto.stdout, "{format:?}");
    }
}

#[test]
fn a_stdin_report_can_be_printed_for_a_person() {
    let stdin = br#"{"http_status": 503, "headers": {"Retry-After": "2"}}"#;
    let run = classify_stdin(&["--output-format", "human"], stdin);
    run.expect_code(0);
    let from_flags = classify(&[
        "--status",
        "503",
        "--header",
        "Retry-After: 2",
        "--output-format",
        "human",
    ]);
    assert_eq!(run.stdout, from_flags.stdout);
}
