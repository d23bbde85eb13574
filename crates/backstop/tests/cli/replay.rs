//! `backstop replay TRACE.jsonl`: backstop's step for each recorded failure, the calls it would
//! have saved, the totals, and bad traces refused whole with every bad line.

use serde_json::{Value, json};

use crate::support::{Run, TempDir, arg, issue_paths_and_codes, pairs, run};

/// Three tasks, seven outcomes:
/// - t1/search: a 503, an eager retry 50 ms later (before backstop's delay), then a success;
/// - t2/shell: a policy denial, and the same call again (which backstop had said to stop);
/// - t3/llm: a 429 asking for 20 s, then a success 25 s later.
const TRACE: &str = r#"{"at": "2026-01-01T00:00:00Z", "task": "t1", "tool": "search", "outcome": "failure", "report": {"http_status": 503}}
{"at": "2026-01-01T00:00:00.050Z", "task": "t1", "tool": "search", "outcome": "failure", "report": {"http_status": 503}}
{"at": "2026-01-01T00:00:01Z", "task": "t1", "tool": "search", "outcome": "success"}
{"at": "2026-01-01T00:00:02Z", "task": "t2", "tool": "shell", "outcome": "failure", "report": {"message": "blocked by sandbox policy"}}
{"at": "2026-01-01T00:00:03Z", "task": "t2", "tool": "shell", "outcome": "failure", "report": {"message": "blocked by sandbox policy"}}
{"at": "2026-01-01T00:00:04Z", "task": "t3", "tool": "llm", "outcome": "failure", "report": {"http_status": 429, "headers": {"retry-after": "20"}}}
{"at": "2026-01-01T00:00:29Z", "task": "t3", "tool": "llm", "outcome": "success"}
"#;

/// Runs `backstop replay FILE --seed 1 ARGS` over `trace` written to a temp file.
fn replay(dir: &TempDir, trace: &str, args: &[&str]) -> Run {
    let file = dir.write("trace.jsonl", trace);
    let mut all = vec!["replay", arg(&file), "--seed", "1"];
    all.extend_from_slice(args);
    run(&all, b"")
}

/// A step's `delay_ms`.
#[track_caller]
fn delay(line: &Value) -> u64 {
    line["step"]["delay_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("no step.delay_ms: {line}"))
}

#[test]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn a_mixed_trace_as_json_gives_each_step_and_exact_totals() {
    let dir = TempDir::new("replay-json");
    let run = replay(&dir, TRACE, &["--json"]);
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    let out = run.json();
    let mut keys: Vec<_> = out.as_object().expect("an object").keys().collect();
    keys.sort();
    assert_eq!(keys, ["steps", "totals"]);
    let steps = out["steps"].as_array().expect("steps is an array");
    assert_eq!(steps.len(), 7, "{out}");

    let summary: Vec<_> = steps
        .iter()
        .map(|s| {
            (
                s["line"].as_u64(),
                s["task"].as_str(),
                s["tool"].as_str(),
                s["outcome"].as_str(),
                s["classification"]["class"].as_str(),
                s["step"]["action"].as_str(),
                s["unneeded"].as_bool(),
            )
        })
        .collect();
    let f = Some("failure");
    let ok = Some("success");
    assert_eq!(
        summary,
        [
            (
                Some(1),
                Some("t1"),
                Some("search"),
                f,
                Some("transient"),
                Some("retry_same"),
                Some(false)
            ),
            (
                Some(2),
                Some("t1"),
                Some("search"),
                f,
                Some("transient"),
                Some("retry_same"),
                Some(true)
            ),
            (
                Some(3),
                Some("t1"),
                Some("search"),
                ok,
                None,
                None,
                Some(false)
            ),
            (
                Some(4),
                Some("t2"),
                Some("shell"),
                f,
                Some("policy_denied"),
                Some("stop"),
                Some(false)
            ),
            (
                Some(5),
                Some("t2"),
                Some("shell"),
                f,
                Some("policy_denied"),
                Some("stop"),
                Some(true)
            ),
            (
                Some(6),
                Some("t3"),
                Some("llm"),
                f,
                Some("rate_limited"),
                Some("wait"),
                Some(false)
            ),
            (
                Some(7),
                Some("t3"),
                Some("llm"),
                ok,
                None,
                None,
                Some(false)
            ),
        ]
    );
    // Line 2 came 50 ms after line 1: early only if backstop asked for more (82ms with seed 1).
    assert!(delay(&steps[0]) > 50, "{}", steps[0]);
    // The retries back off under their ceilings; the wait honours the 20 s hint.
    assert!(delay(&steps[1]) <= 400, "{}", steps[1]);
    assert!(
        (20_000..=20_250).contains(&delay(&steps[5])),
        "{}",
        steps[5]
    );
    // Successes carry no classification and no step.
    for i in [2, 6] {
        assert_eq!(steps[i]["classification"], Value::Null, "{}", steps[i]);
        assert_eq!(steps[i]["step"], Value::Null, "{}", steps[i]);
    }
    // The attempts of each task are its own.
    assert_eq!(steps[1]["step"]["attempts"]["task_used"], 2);
    assert_eq!(steps[5]["step"]["attempts"]["task_used"], 1);

    let waited = delay(&steps[0]) + delay(&steps[1]) + delay(&steps[5]);
    assert_eq!(
        out["totals"],
        json!({
            "events": 7,
            "failures": 5,
            "retries": 2,
            "waits": 1,
            "waited_ms": waited,
            "fallbacks": 0,
            "escalations": 0,
            "stops": 2,
            "calls_saved": 2,
        })
    );
}

#[test]
fn a_mixed_trace_for_a_person() {
    let dir = TempDir::new("replay-human");
    let run = replay(&dir, TRACE, &["--output-format", "human"]);
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    let lines: Vec<_> = run.stdout.lines().collect();
    // Every event line names its trace line; a failure's reason follows it, indented.
    let events: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("2026-"))
        .copied()
        .collect();
    assert_eq!(events.len(), 7, "{}", run.stdout);
    // The times line up: each is as wide as the first, milliseconds always shown.
    let width = events[0].find(" line ").unwrap();
    assert!(
        events[0].starts_with("2026-01-01T00:00:00.000Z line"),
        "{}",
        events[0]
    );
    for event in &events {
        assert_eq!(event.find(" line "), Some(width), "{}", run.stdout);
    }
    for (i, event) in events.iter().enumerate() {
        let named = format!(" line {:>3}  ", i + 1);
        assert!(event.contains(&named), "`{named}` in `{event}`");
    }
    let saved: Vec<_> = events
        .iter()
        .map(|l| l.ends_with("  [backstop would not have made this call]"))
        .collect();
    assert_eq!(saved, [false, true, false, false, true, false, false]);
    assert!(
        events[5].contains("t3 / llm: rate_limited -> wait after 20."),
        "{}",
        events[5]
    );
    assert!(events[2].ends_with("t1 / search: success"), "{}", events[2]);
    let totals = lines.last().copied().unwrap_or_default();
    assert!(
        totals.starts_with("events 7, failures 5: retries 2, waits 1 (")
            && totals.ends_with("waited), fallbacks 0, escalations 0, stops 2; calls saved 2"),
        "{totals}"
    );
    assert_eq!(lines[lines.len() - 2], "", "a blank line before the totals");
    insta::assert_snapshot!("mixed_trace_human", run.stdout);
}

#[test]
fn the_same_seed_gives_the_same_replay() {
    let dir = TempDir::new("replay-seed");
    let first = replay(&dir, TRACE, &["--json"]);
    let second = replay(&dir, TRACE, &["--json"]);
    first.expect_code(0);
    assert_eq!(first.stdout, second.stdout);
}

#[test]
fn a_strategies_file_changes_the_replay() {
    let dir = TempDir::new("replay-strategies");
    let strategies = dir.write(
        "escalate.toml",
        "[[classes.transient]]\naction = \"escalate\"\nhint = \"page {tool}'s owner\"\n",
    );
    let run = replay(&dir, TRACE, &["--strategies", arg(&strategies), "--json"]);
    run.expect_code(0);
    let out = run.json();
    let steps = &out["steps"];
    assert_eq!(steps[0]["step"]["action"], "escalate", "{out}");
    // An escalation rules the tool out for the task: the second call is saved too.
    assert_eq!(steps[1]["unneeded"], true, "{out}");
    let totals = &out["totals"];
    assert_eq!(totals["retries"], 0, "{out}");
    assert_eq!(totals["escalations"], 2, "{out}");
    // The success after the escalation is not one: a call that worked saved nothing.
    assert_eq!(steps[2]["unneeded"], false, "{out}");
    assert_eq!(totals["calls_saved"], 2, "{out}");
}

#[test]
fn an_empty_trace_replays_to_zero_totals() {
    let dir = TempDir::new("replay-empty");
    let run = replay(&dir, "\n\n", &["--json"]);
    run.expect_code(0);
    assert_eq!(
        run.json(),
        json!({"steps": [], "totals": {"events": 0, "failures": 0, "retries": 0, "waits": 0,
            "waited_ms": 0, "fallbacks": 0, "escalations": 0, "stops": 0, "calls_saved": 0}})
    );
}

/// One bad line of each kind, a blank line (skipped) and one good line.
const BAD_TRACE: &str = r#"not json
{"at": "2026-01-01T00:00:05Z", "task": "t1", "tool": "search", "outcome": "failure"}
{"at": "2026-01-01T00:00:06Z", "task": "t1", "tool": "search", "outcome": "success", "report": {"http_status": 503}}
{"at": "2026-01-01T00:00:01Z", "task": "t1", "tool": "search", "outcome": "success"}
{"at": "2026-01-01T00:00:07Z", "task": "t1", "tool": "search", "outcome": "maybe"}

{"at": "2026-01-01T00:00:08Z", "task": "t1", "tool": "search", "outcome": "failure", "report": {"http_status": 700}}
{"at": "2026-01-01T00:00:09Z", "task": "t1", "tool": "search", "outcome": "failure", "report": {"http_status": 503}}
{"at": "2026-01-01T00:00:10Z", "task": "t1", "tool": "search", "outcome": "success", "extra": 1}
"#;

/// The issues of [`BAD_TRACE`]: every bad line, by number, and no other.
const BAD_TRACE_ISSUES: [(&str, &str); 7] = [
    ("line 1", "bad_event"),
    ("line 2: report", "missing"),
    ("line 3: report", "unexpected"),
    ("line 4: at", "out_of_order"),
    ("line 5: outcome", "bad_event"),
    ("line 7: report.http_status", "out_of_range"),
    ("line 9: extra", "bad_event"),
];

#[test]
fn a_bad_trace_is_refused_whole_with_every_bad_line_as_json() {
    let dir = TempDir::new("replay-bad-json");
    let run = replay(&dir, BAD_TRACE, &["--json"]);
    run.expect_code(2);
    assert_eq!(run.stderr, "");
    assert_eq!(run.stdout.lines().count(), 1, "only the refusal: {run:#?}");
    let refusal = run.json();
    assert_eq!(refusal["error"]["code"], "malformed", "{refusal}");
    assert_eq!(refusal["error"]["message"], "the trace was refused");
    assert_eq!(
        issue_paths_and_codes(&refusal),
        pairs(&BAD_TRACE_ISSUES),
        "{refusal}"
    );
    assert!(refusal.get("steps").is_none(), "no replay of a bad trace");
}

#[test]
fn a_bad_trace_is_explained_on_stderr_for_a_person() {
    let dir = TempDir::new("replay-bad-human");
    let run = replay(&dir, BAD_TRACE, &["--output-format", "human"]);
    run.expect_code(2);
    assert_eq!(run.stdout, "", "nothing on stdout when refused");
    assert!(
        run.stderr.starts_with("the trace was refused:\n"),
        "{}",
        run.stderr
    );
    for (path, code) in BAD_TRACE_ISSUES {
        let line = format!("\n  {path}: ");
        assert!(run.stderr.contains(&line), "{line} in {}", run.stderr);
        assert!(run.stderr.contains(&format!("({code})\n")), "{code}");
    }
    assert_eq!(
        run.stderr.lines().count(),
        1 + BAD_TRACE_ISSUES.len(),
        "{}",
        run.stderr
    );
    insta::assert_snapshot!("bad_trace_human", run.stderr);
}

#[test]
fn each_bad_line_alone_is_refused_with_its_line_number() {
    let good =
        r#"{"at": "2026-01-01T00:00:00Z", "task": "t1", "tool": "search", "outcome": "success"}"#;
    let cases: &[(&str, &str, &str)] = &[
        ("{bad", "line 2", "bad_event"),
        (
            r#"{"at": "2026-01-01T00:00:01Z", "task": "t1", "tool": "search", "outcome": "failure"}"#,
            "line 2: report",
            "missing",
        ),
        (
            r#"{"at": "2025-12-31T23:59:59Z", "task": "t1", "tool": "search", "outcome": "success"}"#,
            "line 2: at",
            "out_of_order",
        ),
        (
            r#"{"at": "yesterday", "task": "t1", "tool": "search", "outcome": "success"}"#,
            "line 2: at",
            "bad_event",
        ),
        (
            r#"{"at": "2026-01-01T00:00:01Z", "tool": "search", "outcome": "success"}"#,
            "line 2: task",
            "bad_event",
        ),
        (
            r#"{"at": "2026-01-01T00:00:01Z", "task": " ", "tool": "search", "outcome": "success"}"#,
            "line 2",
            "empty",
        ),
        (
            r#"{"at": "2026-01-01T00:00:01Z", "task": "t1", "tool": "search", "outcome": "failure", "report": {"http_status": 99}}"#,
            "line 2: report.http_status",
            "out_of_range",
        ),
        (
            r#"{"at": "2026-01-01T00:00:01Z", "task": "t1", "tool": "search", "outcome": "failure", "report": {"http_status": 503, "nope": 1}}"#,
            "line 2: report.nope",
            "unknown_field",
        ),
    ];
    let dir = TempDir::new("replay-each-bad");
    for &(bad, path, code) in cases {
        let trace = format!("{good}\n{bad}\n");
        let run = replay(&dir, &trace, &["--json"]);
        run.expect_code(2);
        assert_eq!(
            issue_paths_and_codes(&run.json()),
            pairs(&[(path, code)]),
            "{bad}"
        );
    }
}

/// An issue about a line's whole report (empty, or not an object) is blamed on `report`, not
/// on `report.` (regression: the path once had a trailing dot).
#[test]
fn an_empty_report_is_blamed_on_report() {
    let dir = TempDir::new("replay-empty-report");
    let trace = concat!(
        r#"{"at": "2026-01-01T00:00:00Z", "task": "t1", "tool": "search", "outcome": "failure", "report": {}}"#,
        "\n",
        r#"{"at": "2026-01-01T00:00:01Z", "task": "t1", "tool": "search", "outcome": "failure", "report": 5}"#,
        "\n",
    );
    let run = replay(&dir, trace, &["--json"]);
    run.expect_code(2);
    assert_eq!(
        issue_paths_and_codes(&run.json()),
        pairs(&[
            ("line 1: report", "empty_report"),
            ("line 2: report", "wrong_type")
        ])
    );
}

#[test]
fn a_missing_trace_is_refused() {
    let dir = TempDir::new("replay-missing");
    let missing = dir.path().join("missing.jsonl");
    let run = run(&["replay", arg(&missing), "--seed", "1", "--json"], b"");
    run.expect_code(2);
    assert_eq!(run.stderr, "");
    let refusal = run.json();
    assert_eq!(refusal["error"]["code"], "malformed", "{refusal}");
    assert_eq!(
        issue_paths_and_codes(&refusal),
        pairs(&[(&format!("trace {}", arg(&missing)), "unreadable")])
    );

    let human = crate::support::run(&["replay", arg(&missing), "--output-format", "human"], b"");
    human.expect_code(2);
    assert_eq!(human.stdout, "");
    assert!(
        human.stderr.starts_with("the command was refused:\n")
            && human.stderr.contains("cannot read the trace"),
        "{}",
        human.stderr
    );
}

#[test]
fn a_bad_strategies_file_and_a_missing_trace_are_listed_at_once() {
    let dir = TempDir::new("replay-bad-strategies");
    let strategies = dir.write("bad.toml", "[limits]\ntasks = 0\n");
    let missing = dir.path().join("missing.jsonl");
    let run = run(
        &[
            "replay",
            arg(&missing),
            "--strategies",
            arg(&strategies),
            "--json",
        ],
        b"",
    );
    run.expect_code(2);
    let mut issues = issue_paths_and_codes(&run.json());
    issues.sort();
    let limits = format!("{}:limits.tasks", strategies.display());
    let trace = format!("trace {}", arg(&missing));
    let mut expected = pairs(&[(&trace, "unreadable"), (&limits, "out_of_range")]);
    expected.sort();
    assert_eq!(issues, expected);
}

#[test]
fn the_trace_argument_is_required() {
    let run = run(&["replay"], b"");
    run.command_line_refused();
    assert!(run.stderr.contains("<TRACE.jsonl>"), "{}", run.stderr);
}
