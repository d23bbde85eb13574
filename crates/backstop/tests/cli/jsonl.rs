//! `backstop classify --jsonl`: one report per line in, one result per line out.

use std::fmt::Write as _;

use serde_json::Value;

use crate::support::{classify_stdin, issues_of, pairs, run};

/// Asserts that `value` is the error object for input line `line`, with these issues.
#[track_caller]
fn assert_line_error(value: &Value, line: u64, issues: &[(&str, &str)]) {
    assert_eq!(value["line"], line, "{value}");
    assert_eq!(value["error"]["code"], "malformed", "{value}");
    assert!(value["error"]["message"].is_string(), "{value}");
    assert_eq!(
        issues_of(&value["error"]["issues"]),
        pairs(issues),
        "{value}"
    );
    assert!(
        value.get("class").is_none(),
        "an error is not a classification"
    );
}

#[test]
fn a_mixed_stream_gets_one_line_per_non_blank_line_and_goes_on_after_bad_ones() {
    let mut input = Vec::new();
    input.extend_from_slice(b"{\"http_status\": 503}\n"); // 1: good
    input.extend_from_slice(b"{bad json\n"); // 2: malformed JSON
    input.extend_from_slice(b"{\"http_status\": 429, \"nope\": 1}\n"); // 3: unknown field
    input.extend_from_slice(b"\n"); // 4: blank, skipped
    input.extend_from_slice(b"   \n"); // 5: blank too
    input.extend_from_slice(b"{\"errno\": \"ECONNRESET\"}\n"); // 6: good
    input.extend_from_slice(b"{}\n"); // 7: an empty report
    input.extend_from_slice(b"{\"grpc_code\": \"UNAVAILABLE\"}\n"); // 8: good
    // 9: not UTF-8. It is last because the line after a non-UTF-8 line is lost (see
    // `the_line_after_a_non_utf8_line_is_classified`, ignored as a bug).
    input.extend_from_slice(b"\xff\xfe{\"http_status\": 503}\n");

    let run = classify_stdin(&["--jsonl"], &input);
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    let out = run.json_lines();
    assert_eq!(
        out.len(),
        7,
        "one output line per non-blank input line: {run:#?}"
    );

    assert_eq!(out[0]["class"], "transient");
    assert_eq!(out[0]["rule"], "http.503");
    assert_line_error(&out[1], 2, &[("", "bad_json")]);
    assert_line_error(&out[2], 3, &[("nope", "unknown_field")]);
    assert_eq!(out[3]["class"], "transient");
    assert_eq!(out[3]["rule"], "errno.econnreset");
    assert_line_error(&out[4], 7, &[("", "empty_report")]);
    assert_eq!(out[5]["class"], "transient");
    assert_eq!(out[5]["rule"], "grpc.unavailable");
    assert_line_error(&out[6], 9, &[("", "bad_utf8")]);

    insta::assert_snapshot!("mixed_stream", run.stdout);
}

#[test]
fn every_report_on_a_line_is_classified_as_a_single_report_would_be() {
    let reports = [
        r#"{"http_status": 503, "headers": {"Retry-After": "2"}}"#,
        r#"{"error_code": "insufficient_quota", "http_status": 429}"#,
        r#"{"side_effects": {"done": 2, "total": 5}, "http_status": 500}"#,
        r#"{"message": "the frobnicator declined"}"#,
    ];
    let input = reports.join("\n");
    let run = classify_stdin(&["--jsonl"], input.as_bytes());
    run.expect_code(0);
    let out = run.json_lines();
    assert_eq!(out.len(), reports.len());
    for (report, line) in reports.iter().zip(&out) {
        let single = classify_stdin(&[], report.as_bytes());
        single.expect_code(0);
        assert_eq!(line, &single.json(), "{report}");
    }
}

#[test]
fn crlf_line_ends_and_a_last_line_without_newline_are_read() {
    let input = b"{\"http_status\": 503}\r\n\r\n{\"errno\": \"ECONNRESET\"}";
    let run = classify_stdin(&["--jsonl"], input);
    run.expect_code(0);
    let classes: Vec<_> = run
        .json_lines()
        .iter()
        .map(|v| v["class"].clone())
        .collect();
    assert_eq!(classes, ["transient", "transient"]);
}

#[test]
fn an_empty_stream_prints_nothing_and_succeeds() {
    let run = classify_stdin(&["--jsonl"], b"");
    run.expect_code(0);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "");
}

#[test]
fn a_long_stream_keeps_one_line_per_report_in_order() {
    // Long enough to span several read batches and be shared among workers: the answers must
    // still come out one per line, in input order, with the input's line numbers.
    const LINES: usize = 20_000;
    let statuses = [503, 404, 429, 401];
    let mut input = String::new();
    for i in 0..LINES {
        if i % 997 == 7 {
            input.push_str("not json\n");
        } else {
            writeln!(input, "{{\"http_status\": {}}}", statuses[i % 4]).unwrap();
        }
    }
    let run = classify_stdin(&["--jsonl"], input.as_bytes());
    run.expect_code(0);
    let out = run.json_lines();
    assert_eq!(out.len(), LINES);
    let classes = ["transient", "business", "rate_limited", "auth"];
    for (i, value) in out.iter().enumerate() {
        if i % 997 == 7 {
            assert_eq!(value["line"], i + 1, "{value}");
        } else {
            assert_eq!(value["class"], classes[i % 4], "line {}: {value}", i + 1);
        }
    }
}

#[test]
fn report_flags_are_refused_with_jsonl() {
    for flags in [
        &["--status", "500"][..],
        &["--message", "x"],
        &["-H", "a: b"],
    ] {
        let mut args = vec!["--jsonl"];
        args.extend_from_slice(flags);
        let run = classify_stdin(&args, b"{\"http_status\": 503}\n");
        run.command_line_refused();
        assert!(
            run.stderr.contains("cannot be used with"),
            "{flags:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn jsonl_with_a_bad_flag_is_refused_before_reading() {
    let run = run(
        &["classify", "--jsonl", "--now", "yesterday"],
        b"{\"http_status\": 503}\n",
    );
    run.expect_code(2);
    let refusal = run.json();
    assert_eq!(refusal["error"]["code"], "malformed");
    assert_eq!(
        issues_of(&refusal["error"]["issues"]),
        pairs(&[("--now", "bad_time")])
    );
}

/// `read_line` consumes a whole line before it finds the line is not UTF-8, and `skip_line`
/// in `commands/classify.rs` then consumes the *next* line too: that report gets no output
/// line, and every later error carries a line number one too small.
#[test]
fn the_line_after_a_non_utf8_line_is_classified() {
    let input = b"\xff\n{\"errno\": \"ECONNRESET\"}\n{bad\n";
    let run = classify_stdin(&["--jsonl"], input);
    run.expect_code(0);
    let out = run.json_lines();
    assert_eq!(out.len(), 3, "one output line per input line: {run:#?}");
    assert_line_error(&out[0], 1, &[("", "bad_utf8")]);
    assert_eq!(out[1]["rule"], "errno.econnreset");
    assert_line_error(&out[2], 3, &[("", "bad_json")]);
}
