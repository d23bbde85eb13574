//! `backstop hint`: one failure from flags or stdin, `--jsonl` traces with counters carried
//! from line to line, bad inputs and `--strategies` files.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::support::{NOW, Run, TempDir, arg, issue_paths_and_codes, issues_of, pairs, run};

/// The keys of every step, in the order the docs list them.
const STEP_KEYS: [&str; 11] = [
    "class",
    "action",
    "hint",
    "delay_ms",
    "defer_until",
    "attempts",
    "breaker",
    "budget",
    "escalation",
    "reason",
    "explanation",
];

/// Runs `backstop hint --now NOW --seed SEED ARGS` with `stdin` as its standard input.
fn hint_seeded(seed: &str, args: &[&str], stdin: &[u8]) -> Run {
    let mut all = vec!["hint", "--now", NOW, "--seed", seed];
    all.extend_from_slice(args);
    run(&all, stdin)
}

/// Runs `backstop hint --now NOW --seed 1 ARGS` with empty stdin.
fn hint(args: &[&str]) -> Run {
    hint_seeded("1", args, b"")
}

/// Runs `backstop hint --now NOW --seed 1 ARGS` with `stdin` as its standard input.
fn hint_stdin(args: &[&str], stdin: &[u8]) -> Run {
    hint_seeded("1", args, stdin)
}

/// Runs `backstop hint --task t1 --jsonl --now NOW --seed 1` over `lines`, one a line.
fn hint_jsonl(lines: &[&str]) -> Run {
    let mut input = lines.join("\n");
    input.push('\n');
    hint_stdin(&["--task", "t1", "--jsonl"], input.as_bytes())
}

/// The one step a run printed, checked to have every key of a step and nothing else.
#[track_caller]
fn step_of(run: &Run) -> Value {
    run.expect_code(0);
    assert_eq!(run.stderr, "", "{run:#?}");
    let step = run.json();
    assert_step_keys(&step);
    step
}

#[track_caller]
fn assert_step_keys(step: &Value) {
    let mut keys: Vec<_> = step
        .as_object()
        .unwrap_or_else(|| panic!("a step is an object: {step}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    let mut expected = STEP_KEYS.to_vec();
    expected.sort_unstable();
    assert_eq!(keys, expected, "{step}");
}

/// `(class_used, class_max, task_used, task_max)` of a step.
#[track_caller]
fn attempts(step: &Value) -> (u64, u64, u64, u64) {
    let a = &step["attempts"];
    let n = |key: &str| {
        a[key]
            .as_u64()
            .unwrap_or_else(|| panic!("no attempts.{key}: {step}"))
    };
    (
        n("class_used"),
        n("class_max"),
        n("task_used"),
        n("task_max"),
    )
}

/// A step's `delay_ms`.
#[track_caller]
fn delay(step: &Value) -> u64 {
    step["delay_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("no delay_ms: {step}"))
}

/// A step's `hint` or `reason`.
#[track_caller]
fn text<'a>(step: &'a Value, key: &str) -> &'a str {
    step[key]
        .as_str()
        .unwrap_or_else(|| panic!("no `{key}` text: {step}"))
}

#[test]
fn a_503_of_a_named_tool_is_a_first_plain_retry_with_breaker_and_budget() {
    let run = hint(&["--task", "t1", "--status", "503", "--tool", "search"]);
    let step = step_of(&run);
    assert_eq!(step["class"], "transient", "{step}");
    assert_eq!(step["action"], "retry_same", "{step}");
    assert_eq!(attempts(&step), (1, 4, 1, 12));
    // Full jitter on the first retry: somewhere between 0 and the 200ms base.
    assert!(delay(&step) <= 200, "{step}");
    assert_eq!(step["defer_until"], Value::Null);
    assert_eq!(step["escalation"], Value::Null);
    let hint = text(&step, "hint");
    assert!(
        hint.starts_with("search failed for a passing reason (HTTP 503)"),
        "{hint}"
    );
    assert!(
        hint.contains(&format!("after {}ms", delay(&step))),
        "{hint}"
    );
    assert_eq!(
        step["reason"],
        "transient: strategy 1 of 3 (`retry_same`), attempt 1 of 3 of this strategy, 1 of 4 \
         for the class"
    );
    // The counters are the reason's numbers.
    assert_eq!(
        step["attempts"],
        json!({"class_used": 1, "class_max": 4, "strategy_used": 1, "strategy_max": 3,
               "task_used": 1, "task_max": 12})
    );
    // The failure is the breaker's first call; no retry has spent the budget yet.
    assert_eq!(
        step["breaker"],
        json!({"state": "closed", "calls": 1, "failures": 1, "failure_rate": 1.0,
               "open_until": null, "probes_left": 0})
    );
    assert_eq!(
        step["budget"],
        json!({"tokens": 10.0, "capacity": 10.0, "retries_allowed": true})
    );
    assert_eq!(run.stdout.lines().count(), 1, "one JSON line");
}

#[test]
fn a_503_for_a_person() {
    let run = hint(&[
        "--task",
        "t1",
        "--status",
        "503",
        "--tool",
        "search",
        "--output-format",
        "human",
    ]);
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    assert!(
        serde_json::from_str::<Value>(&run.stdout).is_err(),
        "human output is not JSON"
    );
    let json = hint(&["--task", "t1", "--status", "503", "--tool", "search"]);
    let step = step_of(&json);
    let first = run.stdout.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!(
            "retry_same after {}ms  (transient; class 1/4, task 1/12)",
            delay(&step)
        )
    );
    assert!(
        run.stdout
            .contains(&format!("\n  hint: {}\n", text(&step, "hint"))),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\n  breaker: closed, ") && run.stdout.contains("\n  retry budget: "),
        "{}",
        run.stdout
    );
    insta::assert_snapshot!("status_503_search_human", run.stdout);
}

#[test]
fn a_report_on_stdin_gives_the_same_step_as_the_flags() {
    let cases: &[(&[&str], Value)] = &[
        (
            &["--status", "503", "--tool", "search"],
            json!({"http_status": 503, "tool": "search"}),
        ),
        (
            &["--status", "429", "--header", "Retry-After: 7"],
            json!({"http_status": 429, "headers": {"Retry-After": "7"}}),
        ),
        (
            &["--error-code", "insufficient_quota", "--status", "429"],
            json!({"error_code": "insufficient_quota", "http_status": 429}),
        ),
        (&["--status", "451"], json!({"http_status": 451})),
    ];
    for (flags, report) in cases {
        let mut args = vec!["--task", "t1"];
        args.extend_from_slice(flags);
        let from_flags = step_of(&hint(&args));
        let stdin = report.to_string();
        let from_stdin = step_of(&hint_stdin(&["--task", "t1"], stdin.as_bytes()));
        assert_eq!(from_stdin, from_flags, "{stdin}");
    }
    // For a person too.
    let from_flags = hint(&[
        "--task",
        "t1",
        "--status",
        "503",
        "--tool",
        "search",
        "--output-format",
        "human",
    ]);
    let from_stdin = hint_stdin(
        &["--task", "t1", "--output-format", "human"],
        br#"{"http_status": 503, "tool": "search"}"#,
    );
    from_stdin.expect_code(0);
    assert_eq!(from_stdin.stdout, from_flags.stdout);
}

#[test]
fn a_policy_denial_is_a_stop_with_no_retry_and_no_fallback() {
    let step = step_of(&hint(&[
        "--task", "t1", "--status", "451", "--tool", "search",
    ]));
    assert_eq!(step["class"], "policy_denied", "{step}");
    assert_eq!(step["action"], "stop", "{step}");
    assert_eq!(delay(&step), 0);
    assert_eq!(step["defer_until"], Value::Null);
    assert_eq!(step["escalation"], Value::Null);
    // Nothing is counted: a stop is never spent and uses no attempt.
    assert_eq!(attempts(&step), (0, 0, 0, 12));
    let hint = text(&step, "hint");
    for words in ["do not retry", "do not try another tool"] {
        assert!(hint.contains(words), "{words}: {hint}");
    }
    // A denial says nothing about the tool's health.
    assert_eq!(step["breaker"]["calls"], 0, "{step}");
}

#[test]
fn a_spent_quota_escalates_to_the_configured_person() {
    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--error-code",
        "insufficient_quota",
        "--status",
        "429",
    ]));
    assert_eq!(step["class"], "quota_exhausted", "{step}");
    assert_eq!(step["action"], "escalate", "{step}");
    assert_eq!(step["escalation"]["to"], "the operator on call", "{step}");
    assert_eq!(step["escalation"]["why"], step["reason"], "{step}");
    assert_eq!(delay(&step), 0);
    assert!(text(&step, "hint").contains("Do not retry"), "{step}");
    // No tool was named: no breaker, no budget.
    assert_eq!(step["breaker"], Value::Null);
    assert_eq!(step["budget"], Value::Null);
}

#[test]
fn a_429_with_retry_after_waits_at_least_the_hint() {
    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--status",
        "429",
        "--header",
        "Retry-After: 7",
    ]));
    assert_eq!(step["class"], "rate_limited", "{step}");
    assert_eq!(step["action"], "wait", "{step}");
    // Never shortened; at most 250ms of jitter on top.
    let ms = delay(&step);
    assert!((7000..=7250).contains(&ms), "{step}");
    assert_eq!(step["defer_until"], Value::Null);
    assert_eq!(attempts(&step), (1, 3, 1, 12));
    assert!(
        text(&step, "hint").contains("(the server's hint: 7s)"),
        "{step}"
    );
}

#[test]
fn an_hour_long_retry_after_parks_the_task_instead_of_sleeping() {
    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--status",
        "429",
        "--header",
        "Retry-After: 3600",
        "--tool",
        "api",
    ]));
    assert_eq!(step["class"], "rate_limited", "{step}");
    assert_eq!(step["action"], "wait", "{step}");
    let ms = delay(&step);
    assert!((3_600_000..=3_600_250).contains(&ms), "{step}");
    // defer_until is --now plus the delay: 2026-01-01T01:00:00 and the jitter.
    let until = step["defer_until"]
        .as_str()
        .unwrap_or_else(|| panic!("defer_until is set: {step}"));
    let fraction = format!("{:03}", ms - 3_600_000);
    let fraction = fraction.trim_end_matches('0');
    let expected = if fraction.is_empty() {
        "2026-01-01T01:00:00Z".to_owned()
    } else {
        format!("2026-01-01T01:00:00.{fraction}Z")
    };
    assert_eq!(until, expected, "{step}");
    assert!(
        text(&step, "hint").starts_with("Do not sleep: park this task"),
        "{step}"
    );
    assert!(text(&step, "reason").contains("park the task"), "{step}");
    assert_eq!(attempts(&step), (1, 3, 1, 12));
    assert_eq!(step["escalation"], Value::Null);
}

#[test]
fn a_hint_of_exactly_max_wait_is_slept_and_a_longer_one_parked() {
    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--status",
        "429",
        "--header",
        "Retry-After: 60",
    ]));
    assert_eq!(step["action"], "wait", "{step}");
    // A hint of exactly max_wait (60s) fits: the jitter on top never takes it over.
    assert_eq!(delay(&step), 60_000, "{step}");
    assert_eq!(step["defer_until"], Value::Null, "{step}");

    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--status",
        "429",
        "--header",
        "Retry-After: 61",
    ]));
    assert_eq!(step["action"], "wait", "{step}");
    assert!(
        step["defer_until"].is_string(),
        "a longer wait is parked: {step}"
    );

    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--status",
        "429",
        "--header",
        "Retry-After: 59",
    ]));
    assert_eq!(step["action"], "wait", "{step}");
    assert!((59_000..=59_250).contains(&delay(&step)), "{step}");
    assert_eq!(step["defer_until"], Value::Null, "{step}");
}

#[test]
fn an_unclassified_message_stops_with_the_message_in_its_hint() {
    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--message",
        "the frobnicator declined",
    ]));
    assert_eq!(step["class"], "unclassified", "{step}");
    assert_eq!(step["action"], "stop", "{step}");
    assert_eq!(delay(&step), 0);
    assert_eq!(attempts(&step), (0, 0, 0, 12));
    let hint = text(&step, "hint");
    assert!(hint.contains("(the frobnicator declined)"), "{hint}");
    assert!(hint.contains("cannot tell what this failure is"), "{hint}");
    assert!(hint.contains("grant one retry"), "{hint}");
    assert!(
        text(&step, "reason").starts_with("unclassified: "),
        "{step}"
    );
}

#[test]
fn the_same_seed_gives_the_same_step_and_other_seeds_spread_the_delay() {
    let args = ["--task", "t1", "--status", "503", "--tool", "search"];
    let first = hint(&args);
    let second = hint(&args);
    first.expect_code(0);
    assert_eq!(first.stdout, second.stdout);

    let mut delays = Vec::new();
    for seed in ["1", "2", "3", "4", "5"] {
        let step = step_of(&hint_seeded(seed, &args, b""));
        assert_eq!(step["action"], "retry_same", "seed {seed}: {step}");
        assert!(delay(&step) <= 200, "seed {seed}: {step}");
        // Only the delay (and the hint that names it) depends on the seed.
        let mut without = step.clone();
        let mut base = first.json();
        for key in ["delay_ms", "hint"] {
            without[key] = Value::Null;
            base[key] = Value::Null;
        }
        assert_eq!(without, base, "seed {seed}");
        delays.push(delay(&step));
    }
    delays.sort_unstable();
    delays.dedup();
    assert!(delays.len() > 1, "five seeds, one delay: {delays:?}");
}

// --- --jsonl ---------------------------------------------------------------------------------

const SEARCH_503: &str = r#"{"http_status": 503, "tool": "search"}"#;

#[test]
fn a_trace_of_six_503s_retries_three_times_falls_back_then_escalates() {
    let run = hint_jsonl(&[SEARCH_503; 6]);
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    let steps = run.json_lines();
    assert_eq!(steps.len(), 6, "{run:#?}");
    for step in &steps {
        assert_step_keys(step);
        assert_eq!(step["class"], "transient", "{step}");
        assert!(step["breaker"].is_object(), "{step}");
        assert!(step["budget"].is_object(), "{step}");
    }
    let actions: Vec<_> = steps.iter().map(|s| s["action"].clone()).collect();
    assert_eq!(
        actions,
        [
            "retry_same",
            "retry_same",
            "retry_same",
            "fallback_tool",
            "escalate",
            "escalate"
        ]
    );
    let used: Vec<_> = steps.iter().map(attempts).collect();
    assert_eq!(
        used,
        [
            (1, 4, 1, 12),
            (2, 4, 2, 12),
            (3, 4, 3, 12),
            (4, 4, 4, 12),
            (4, 4, 4, 12),
            (4, 4, 4, 12),
        ]
    );
    // The retries back off under a doubling ceiling; the rest do not wait.
    for (step, ceiling) in steps.iter().zip([200, 400, 800, 0, 0, 0]) {
        assert!(delay(step) <= ceiling, "{step}");
    }
    // The breaker counts every failure; each retry spends one token of the budget.
    let calls: Vec<_> = steps
        .iter()
        .map(|s| s["breaker"]["calls"].clone())
        .collect();
    assert_eq!(calls, [1, 2, 3, 4, 5, 6]);
    let tokens: Vec<_> = steps
        .iter()
        .map(|s| s["budget"]["tokens"].as_f64())
        .collect();
    assert_eq!(
        tokens,
        [
            Some(10.0),
            Some(9.0),
            Some(8.0),
            Some(7.0),
            Some(7.0),
            Some(7.0)
        ]
    );
    for step in &steps[4..] {
        assert_eq!(step["escalation"]["to"], "the operator on call", "{step}");
        assert!(
            text(step, "reason").starts_with("every strategy for transient is spent"),
            "{step}"
        );
    }
    assert!(
        text(&steps[3], "hint").starts_with("search keeps failing"),
        "{}",
        steps[3]
    );
}

#[test]
fn envelope_tasks_keep_their_own_counters() {
    let t2 = r#"{"report": {"http_status": 503}, "task": "t2"}"#;
    let t1 = r#"{"report": {"http_status": 503}}"#;
    let run = hint_jsonl(&[SEARCH_503, t2, t1, t2, SEARCH_503, t2]);
    run.expect_code(0);
    let steps = run.json_lines();
    let used: Vec<_> = steps.iter().map(|s| attempts(s).2).collect();
    // t1 (plain reports and envelopes without a task): 1, 2, 3; t2: 1, 2, 3.
    assert_eq!(used, [1, 1, 2, 2, 3, 3]);
    let actions: Vec<_> = steps.iter().map(|s| s["action"].clone()).collect();
    assert_eq!(actions, ["retry_same"; 6]);
    // A fourth failure of t2 falls back; t1 is not affected by it.
    let run = hint_jsonl(&[t2, t2, t2, t2, t1]);
    let steps = run.json_lines();
    assert_eq!(steps[3]["action"], "fallback_tool", "{}", steps[3]);
    assert_eq!(attempts(&steps[4]), (1, 4, 1, 12), "{}", steps[4]);
}

#[test]
fn envelope_at_is_the_time_of_the_failure() {
    let run = hint_jsonl(&[
        // A Retry-After date is read against the line's time: 30 s later, not 90 s.
        r#"{"report": {"http_status": 429, "headers": {"retry-after": "Thu, 01 Jan 2026 00:01:30 GMT"}}, "task": "a", "at": "2026-01-01T00:01:00Z"}"#,
        // Without `at`, --now: 90 s, parked.
        r#"{"report": {"http_status": 429, "headers": {"retry-after": "Thu, 01 Jan 2026 00:01:30 GMT"}}, "task": "b"}"#,
        // A parked task comes back an hour after its own time.
        r#"{"report": {"http_status": 429, "headers": {"retry-after": "3600"}}, "task": "c", "at": "2026-01-01T00:00:05Z"}"#,
    ]);
    run.expect_code(0);
    let steps = run.json_lines();
    assert_eq!(steps.len(), 3, "{run:#?}");
    assert!(
        (30_000..=30_250).contains(&delay(&steps[0])),
        "{}",
        steps[0]
    );
    assert_eq!(steps[0]["defer_until"], Value::Null);
    assert!(
        (90_000..=90_250).contains(&delay(&steps[1])),
        "{}",
        steps[1]
    );
    assert!(
        steps[1]["defer_until"]
            .as_str()
            .is_some_and(|t| t.starts_with("2026-01-01T00:01:30")),
        "{}",
        steps[1]
    );
    assert!(
        steps[2]["defer_until"]
            .as_str()
            .is_some_and(|t| t.starts_with("2026-01-01T01:00:05")),
        "{}",
        steps[2]
    );
}

#[test]
fn envelope_context_names_the_tool_operation_and_error() {
    let run = hint_jsonl(&[
        r#"{"report": {"http_status": 503}, "task": "a"}"#,
        r#"{"report": {"http_status": 503}, "task": "b", "context": {"tool": "search", "operation": "find the docs", "error": "the index is rebuilding"}}"#,
        // The context's tool wins over the report's.
        r#"{"report": {"http_status": 503, "tool": "grep"}, "task": "c", "context": {"tool": "search"}}"#,
    ]);
    run.expect_code(0);
    let steps = run.json_lines();
    assert_eq!(steps.len(), 3, "{run:#?}");
    // No tool: no breaker, no budget, and the hint opens with "The tool".
    assert_eq!(steps[0]["breaker"], Value::Null, "{}", steps[0]);
    assert_eq!(steps[0]["budget"], Value::Null, "{}", steps[0]);
    assert!(
        text(&steps[0], "hint").starts_with("The tool failed"),
        "{}",
        steps[0]
    );
    assert!(steps[1]["breaker"].is_object(), "{}", steps[1]);
    assert!(steps[1]["budget"].is_object(), "{}", steps[1]);
    assert!(
        text(&steps[1], "hint")
            .starts_with("search failed for a passing reason (the index is rebuilding)"),
        "{}",
        steps[1]
    );
    // One breaker per tool, shared across tasks: search has now failed twice.
    assert_eq!(steps[1]["breaker"]["calls"], 1, "{}", steps[1]);
    assert_eq!(steps[2]["breaker"]["calls"], 2, "{}", steps[2]);
    assert!(
        text(&steps[2], "hint").starts_with("search failed"),
        "{}",
        steps[2]
    );

    // The operation fills the fallback's hint.
    let line = r#"{"report": {"http_status": 503}, "context": {"tool": "search", "operation": "find the docs"}}"#;
    let steps = hint_jsonl(&[line; 4]).json_lines();
    assert_eq!(steps[3]["action"], "fallback_tool", "{}", steps[3]);
    assert!(
        text(&steps[3], "hint").ends_with("use another tool that can do find the docs."),
        "{}",
        steps[3]
    );
}

#[test]
fn a_policy_denial_stops_the_whole_task_and_refuses_a_request_for_a_way_around() {
    let run = hint_jsonl(&[
        r#"{"report": {"http_status": 451}, "context": {"tool": "shell"}}"#,
        // The same task on another tool and another class: still stop.
        r#"{"report": {"http_status": 503}, "context": {"tool": "search"}}"#,
        // Another task is not affected.
        r#"{"report": {"http_status": 503}, "task": "t2", "context": {"tool": "search"}}"#,
        // Asking leave for a fallback after a denial is refused, and the reason says so.
        r#"{"report": {"http_status": 451}, "task": "t3", "context": {"tool": "shell", "request": "fallback_tool"}}"#,
    ]);
    run.expect_code(0);
    let steps = run.json_lines();
    let actions: Vec<_> = steps.iter().map(|s| s["action"].clone()).collect();
    assert_eq!(actions, ["stop", "stop", "retry_same", "stop"]);
    assert_eq!(steps[1]["class"], "transient", "{}", steps[1]);
    assert!(
        text(&steps[1], "reason").contains("stopped by a policy denial of shell"),
        "{}",
        steps[1]
    );
    assert_eq!(attempts(&steps[1]), (0, 4, 0, 12), "nothing counted");
    assert!(
        text(&steps[3], "reason").starts_with("a request for `fallback_tool` is refused"),
        "{}",
        steps[3]
    );
}

/// Asserts that `value` is the error object for input line `line`, with these issues.
#[track_caller]
fn assert_line_error(value: &Value, line: u64, issues: &[(&str, &str)]) {
    assert_eq!(value["line"], line, "{value}");
    assert_eq!(value["error"]["code"], "malformed", "{value}");
    assert_eq!(
        value["error"]["message"], "the failure on this line was refused",
        "{value}"
    );
    assert_eq!(
        issues_of(&value["error"]["issues"]),
        pairs(issues),
        "{value}"
    );
    assert!(value.get("action").is_none(), "an error is not a step");
}

#[test]
fn a_bad_line_gets_an_error_with_its_number_and_the_stream_goes_on() {
    let run = hint_jsonl(&[
        SEARCH_503,                                             // 1
        "not json",                                             // 2
        r#"{"report": {"http_status": 503}, "colour": "red"}"#, // 3: unknown envelope key
        r#"{"report": {"http_status": 700}, "task": "t1"}"#,    // 4: bad report field
        "",                                                     // 5: blank, skipped
        r#"{"http_status": 503, "nope": 1}"#,                   // 6: unknown report field
        r#"{"report": {"http_status": 503}, "task": " "}"#,     // 7: blank task
        r#"{"report": {"http_status": 503}, "at": "soon"}"#,    // 8: bad time
        SEARCH_503,                                             // 9
    ]);
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    let out = run.json_lines();
    assert_eq!(out.len(), 8, "one line out per non-blank line in: {run:#?}");
    assert_eq!(out[0]["action"], "retry_same");
    assert_line_error(&out[1], 2, &[("", "bad_json")]);
    assert_line_error(&out[2], 3, &[("colour", "bad_envelope")]);
    assert!(
        out[2]["error"]["issues"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("`colour`")),
        "{}",
        out[2]
    );
    assert_line_error(&out[3], 4, &[("report.http_status", "out_of_range")]);
    assert_line_error(&out[4], 6, &[("nope", "unknown_field")]);
    assert_line_error(&out[5], 7, &[("task", "bad_task")]);
    assert_line_error(&out[6], 8, &[("at", "bad_envelope")]);
    // The good line after them carries t1's counters on from line 1: refused lines count
    // nothing.
    assert_eq!(out[7]["action"], "retry_same", "{}", out[7]);
    assert_eq!(attempts(&out[7]), (2, 4, 2, 12), "{}", out[7]);
}

/// An issue about the whole envelope report (empty, or not an object) is blamed on `report`,
/// not on `report.` (regression: the path once had a trailing dot).
#[test]
fn an_empty_envelope_report_is_blamed_on_report() {
    let run = hint_jsonl(&[r#"{"report": {}}"#, r#"{"report": 5}"#]);
    run.expect_code(0);
    let out = run.json_lines();
    assert_line_error(&out[0], 1, &[("report", "empty_report")]);
    assert_line_error(&out[1], 2, &[("report", "wrong_type")]);
}

#[test]
fn an_empty_stream_prints_nothing() {
    let run = hint_stdin(&["--task", "t1", "--jsonl"], b"");
    run.expect_code(0);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "");
}

#[test]
fn report_flags_and_human_output_are_refused_with_jsonl() {
    for flags in [
        &["--status", "503"][..],
        &["--tool", "search"],
        &["-H", "Retry-After: 2"],
        &["--output-format", "human"],
    ] {
        let mut args = vec!["--task", "t1", "--jsonl"];
        args.extend_from_slice(flags);
        let run = hint_stdin(&args, SEARCH_503.as_bytes());
        let issue = run.command_line_refused();
        assert_eq!(issue["code"], "conflicting_flags", "{flags:?}: {issue}");
        assert!(
            run.stderr.contains("cannot be used with"),
            "{flags:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_long_trace_keeps_one_line_per_failure_in_order() {
    let mut input = String::new();
    for i in 0..500 {
        writeln!(
            input,
            r#"{{"report": {{"http_status": 503}}, "task": "t{i}"}}"#
        )
        .unwrap();
    }
    let run = hint_stdin(&["--task", "t1", "--jsonl"], input.as_bytes());
    run.expect_code(0);
    let steps = run.json_lines();
    assert_eq!(steps.len(), 500);
    for step in &steps {
        assert_eq!(step["action"], "retry_same", "{step}");
        assert_eq!(attempts(step), (1, 4, 1, 12), "{step}");
    }
}

// --- bad inputs ------------------------------------------------------------------------------

#[test]
fn task_is_required_by_the_parser() {
    let run = hint(&["--status", "503"]);
    let issue = run.command_line_refused();
    assert_eq!(
        (&issue["path"], &issue["code"]),
        (&json!("--task"), &json!("missing"))
    );
    assert!(run.stderr.contains("--task <ID>"), "{}", run.stderr);
}

#[test]
fn bad_flags_are_refused_each_with_its_flag() {
    let dir = TempDir::new("hint-missing-strategies");
    let missing = dir.path().join("missing.toml");
    let strategies_path = format!("--strategies {}", missing.display());
    let cases: &[(&[&str], &str, &str)] = &[
        (&["--task", " ", "--status", "503"], "--task", "bad_task"),
        (&["--task", "", "--status", "503"], "--task", "bad_task"),
        (
            &["--task", "t1", "--status", "503", "--now", "yesterday"],
            "--now",
            "bad_time",
        ),
        (
            &[
                "--task",
                "t1",
                "--status",
                "503",
                "--strategies",
                arg(&missing),
            ],
            &strategies_path,
            "unreadable",
        ),
        (
            &["--task", "t1", "--status", "700"],
            "--status",
            "out_of_range",
        ),
    ];
    for &(flags, path, code) in cases {
        // `hint --seed 1 FLAGS --json`, with `--now NOW` unless the flags give their own.
        let mut args = vec!["hint", "--seed", "1"];
        if !flags.contains(&"--now") {
            args.extend_from_slice(&["--now", NOW]);
        }
        args.extend_from_slice(flags);
        args.push("--json");
        let run = run(&args, b"");
        run.expect_code(2);
        assert_eq!(run.stderr, "", "{flags:?}");
        assert_eq!(run.stdout.lines().count(), 1, "only the refusal: {run:#?}");
        let refusal = run.json();
        assert_eq!(refusal["error"]["code"], "malformed", "{flags:?}");
        assert_eq!(
            refusal["error"]["message"], "the command was refused",
            "{flags:?}"
        );
        assert_eq!(
            issue_paths_and_codes(&refusal),
            pairs(&[(path, code)]),
            "{flags:?}"
        );
    }
}

#[test]
fn every_bad_flag_is_listed_at_once() {
    let run = run(
        &[
            "hint",
            "--task",
            " ",
            "--now",
            "yesterday",
            "--status",
            "abc",
            "--strategies",
            "/nonexistent/backstop/strategies.toml",
            "--json",
        ],
        b"",
    );
    run.expect_code(2);
    let mut issues = issue_paths_and_codes(&run.json());
    issues.sort();
    assert_eq!(
        issues,
        pairs(&[
            ("--now", "bad_time"),
            ("--status", "wrong_type"),
            (
                "--strategies /nonexistent/backstop/strategies.toml",
                "unreadable"
            ),
            ("--task", "bad_task"),
        ])
    );
}

/// A task id is "1 to 200 characters", counted as characters, not bytes: 150 `é` (300 bytes)
/// are accepted (regression: the check once counted bytes).
#[test]
fn a_task_id_of_150_accented_characters_is_accepted() {
    let task = "é".repeat(150);
    let step = step_of(&hint(&["--task", &task, "--status", "503"]));
    assert_eq!(step["action"], "retry_same");
}

#[test]
fn a_task_id_of_200_characters_is_accepted_and_201_refused() {
    let ok = "t".repeat(200);
    let step = step_of(&hint(&["--task", &ok, "--status", "503"]));
    assert_eq!(step["action"], "retry_same");
    let long = "t".repeat(201);
    let run = hint(&["--task", &long, "--status", "503", "--json"]);
    run.expect_code(2);
    assert_eq!(
        issue_paths_and_codes(&run.json()),
        pairs(&[("--task", "bad_task")])
    );
}

#[test]
fn empty_stdin_without_report_flags_is_refused() {
    let run = hint_stdin(&["--task", "t1", "--json"], b"");
    run.expect_code(2);
    let refusal = run.json();
    assert_eq!(refusal["error"]["message"], "the report was refused");
    assert_eq!(
        issue_paths_and_codes(&refusal),
        pairs(&[("stdin", "empty_input")])
    );

    let human = hint_stdin(&["--task", "t1", "--output-format", "human"], b"  \n");
    human.expect_code(2);
    assert_eq!(human.stdout, "");
    assert!(
        human.stderr.starts_with("the report was refused:\n"),
        "{}",
        human.stderr
    );
}

#[test]
fn a_bad_stdin_report_is_refused_with_its_field() {
    let run = hint_stdin(
        &["--task", "t1", "--json"],
        br#"{"http_status": 700, "retry": true}"#,
    );
    run.expect_code(2);
    let codes: Vec<_> = issue_paths_and_codes(&run.json())
        .into_iter()
        .map(|(_, code)| code)
        .collect();
    assert!(
        codes.contains(&"unknown_field".to_owned()),
        "{codes:?}: {}",
        run.stdout
    );
}

/// Every kind of issue a strategies file can have that is found after parsing.
const BAD_STRATEGIES: &str = r#"
[limits]
tasks = 0
max_wait = "soon"

[[classes.sometimes]]
action = "stop"
hint = "x"

[[classes.policy_denied]]
action = "fallback_tool"
hint = "try {tool} elsewhere, {nope}"

[[classes.transient]]
action = "retry_same"
cooldown = "a while"
hint = "again"
"#;

/// The issues of [`BAD_STRATEGIES`], without their file prefix.
const BAD_STRATEGIES_ISSUES: [(&str, &str); 6] = [
    ("limits.tasks", "out_of_range"),
    ("limits.max_wait", "bad_duration"),
    ("classes.policy_denied[0].action", "forbidden_action"),
    ("classes.policy_denied[0].hint", "unknown_placeholder"),
    ("classes.sometimes", "unknown_class"),
    ("classes.transient[0].cooldown", "bad_duration"),
];

#[test]
fn a_bad_strategies_file_is_refused_with_every_issue_and_its_file_path() {
    let dir = TempDir::new("hint-bad-strategies");
    let file = dir.write("bad.toml", BAD_STRATEGIES);
    let file = arg(&file);
    let run = hint(&[
        "--task",
        "t1",
        "--status",
        "503",
        "--strategies",
        file,
        "--json",
    ]);
    run.expect_code(2);
    assert_eq!(run.stderr, "");
    assert_eq!(run.stdout.lines().count(), 1, "only the refusal: {run:#?}");
    let refusal = run.json();
    assert_eq!(refusal["error"]["code"], "malformed", "{refusal}");
    let expected: Vec<_> = BAD_STRATEGIES_ISSUES
        .iter()
        .map(|(path, code)| (format!("{file}:{path}"), (*code).to_owned()))
        .collect();
    assert_eq!(issue_paths_and_codes(&refusal), expected);
    dir.snapshot(|| insta::assert_snapshot!("bad_strategies_json", run.stdout));

    // With --jsonl the file is refused before any line is read.
    let run = hint_stdin(
        &["--task", "t1", "--jsonl", "--strategies", file],
        SEARCH_503.as_bytes(),
    );
    run.expect_code(2);
    assert_eq!(run.stdout.lines().count(), 1, "only the refusal: {run:#?}");
    assert_eq!(issue_paths_and_codes(&run.json()), expected);
}

#[test]
fn a_bad_strategies_file_is_explained_on_stderr_for_a_person() {
    let dir = TempDir::new("hint-bad-strategies-human");
    let file = dir.write("bad.toml", BAD_STRATEGIES);
    let run = hint(&[
        "--task",
        "t1",
        "--status",
        "503",
        "--strategies",
        arg(&file),
        "--output-format",
        "human",
    ]);
    run.expect_code(2);
    assert_eq!(run.stdout, "", "nothing on stdout when refused");
    assert!(
        run.stderr.starts_with("the command was refused:\n"),
        "{}",
        run.stderr
    );
    for (path, code) in BAD_STRATEGIES_ISSUES {
        let line = format!("  {}:{path}: ", file.display());
        assert!(run.stderr.contains(&line), "{line} in {}", run.stderr);
        assert!(run.stderr.contains(&format!("({code})\n")), "{code}");
    }
    assert_eq!(
        run.stderr.lines().count(),
        1 + BAD_STRATEGIES_ISSUES.len(),
        "{}",
        run.stderr
    );
    dir.snapshot(|| insta::assert_snapshot!("bad_strategies_human", run.stderr));
}

// --- --strategies overrides ------------------------------------------------------------------

#[test]
fn a_strategies_file_replaces_a_class_list() {
    let dir = TempDir::new("hint-escalate-transient");
    let file = dir.write(
        "escalate.toml",
        "[[classes.transient]]\naction = \"escalate\"\nhint = \"page {tool}'s owner: {error}\"\n",
    );
    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--status",
        "503",
        "--tool",
        "search",
        "--strategies",
        arg(&file),
    ]));
    assert_eq!(step["class"], "transient", "{step}");
    assert_eq!(step["action"], "escalate", "{step}");
    assert_eq!(step["hint"], "page search's owner: HTTP 503");
    assert_eq!(step["escalation"]["to"], "the operator on call", "{step}");
    assert_eq!(step["reason"], "transient: strategy 1 of 1 (`escalate`)");
    // An escalation spends no attempt and names none.
    assert_eq!(step["attempts"]["strategy_max"], 0, "{step}");
    // Other classes keep the built-in lists.
    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--status",
        "429",
        "--strategies",
        arg(&file),
    ]));
    assert_eq!(step["action"], "wait", "{step}");
}

#[test]
fn long_wait_escalate_turns_an_hour_long_wait_into_a_hand_off() {
    let dir = TempDir::new("hint-long-wait");
    let file = dir.write(
        "long.toml",
        "[limits]\nlong_wait = \"escalate\"\nescalate_to = \"the API team\"\n",
    );
    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--status",
        "429",
        "--header",
        "Retry-After: 3600",
        "--tool",
        "api",
        "--strategies",
        arg(&file),
    ]));
    assert_eq!(step["class"], "rate_limited", "{step}");
    assert_eq!(step["action"], "escalate", "{step}");
    assert_eq!(step["defer_until"], Value::Null, "{step}");
    assert_eq!(delay(&step), 0, "{step}");
    assert_eq!(step["escalation"]["to"], "the API team", "{step}");
    assert!(
        text(&step, "hint").starts_with("api asks for a wait of "),
        "{step}"
    );
    assert!(
        text(&step, "reason").contains("longer than the longest wait"),
        "{step}"
    );
    // A short wait is still a wait.
    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--status",
        "429",
        "--header",
        "Retry-After: 7",
        "--strategies",
        arg(&file),
    ]));
    assert_eq!(step["action"], "wait", "{step}");
}

/// `hint --jsonl` needs no --task when every line names its own; a line that names none is
/// refused on its line, and the others still get their steps.
#[test]
fn jsonl_lines_that_name_their_tasks_need_no_task_flag() {
    let input = concat!(
        r#"{"report": {"http_status": 503}, "task": "a"}"#,
        "\n",
        r#"{"http_status": 503}"#,
        "\n",
        r#"{"report": {"http_status": 503}, "task": "a"}"#,
        "\n",
    );
    let run = hint_stdin(&["--jsonl"], input.as_bytes());
    run.expect_code(0);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    assert_step_keys(&lines[0]);
    assert_eq!(lines[1]["error"]["code"], "malformed", "{}", lines[1]);
    assert_eq!(lines[1]["line"], 2);
    assert!(
        lines[1].to_string().contains("missing_task"),
        "{}",
        lines[1]
    );
    assert_eq!(
        lines[2]["attempts"]["task_used"], 2,
        "counted for task a: {}",
        lines[2]
    );

    // Without --jsonl, --task is still required.
    let one = hint_stdin(&["--status", "503"], b"");
    one.expect_code(2);
    assert!(one.stderr.contains("--task"), "{}", one.stderr);
}

/// `backstop hint --db DB --task TASK --status 503 --tool search`: a failure counted on `db`.
fn counted_on(db: &str, task: &str) -> Value {
    let step = run(
        &[
            "hint", "--db", db, "--task", task, "--status", "503", "--tool", "search",
        ],
        b"",
    );
    step.expect_code(0);
    step.json()
}

#[test]
fn hint_with_a_ledger_counts_from_run_to_run_as_the_service_does() {
    let dir = TempDir::new("hint-db");
    let db = dir.path().join("ledger.db");
    let used: Vec<Value> = (0..3)
        .map(|_| counted_on(arg(&db), "t1")["attempts"]["class_used"].clone())
        .collect();
    assert_eq!(used, [json!(1), json!(2), json!(3)]);
    // Another task starts from its own count; the first task's count is kept.
    assert_eq!(counted_on(arg(&db), "t2")["attempts"]["class_used"], 1);
    assert_eq!(counted_on(arg(&db), "t1")["attempts"]["task_used"], 4);
    // What hint counted is the task the ledger shows.
    let shown = run(&["task", "show", "t1", "--db", arg(&db)], b"");
    shown.expect_code(0);
    assert!(shown.stdout.contains("t1"), "{}", shown.stdout);
    // Without --db, each run starts from fresh counters.
    for _ in 0..2 {
        let fresh = hint(&["--task", "t1", "--status", "503", "--tool", "search"]);
        assert_eq!(fresh.json()["attempts"]["class_used"], 1);
    }
}

#[test]
fn hint_with_a_ledger_counts_a_jsonl_trace_and_refuses_a_line_with_its_own_time() {
    let dir = TempDir::new("hint-db-jsonl");
    let db = dir.path().join("ledger.db");
    let trace = concat!(
        "{\"report\": {\"http_status\": 503}, \"task\": \"j1\"}\n",
        "{\"report\": {\"http_status\": 503}, \"task\": \"j1\", \"at\": \"2026-01-01T00:00:00Z\"}\n",
        "{\"report\": {\"http_status\": 503}, \"task\": \"j1\"}\n",
    );
    let lines = run(&["hint", "--db", arg(&db), "--jsonl"], trace.as_bytes());
    lines.expect_code(0);
    let lines = lines.json_lines();
    assert_eq!(lines[0]["attempts"]["class_used"], 1);
    assert_eq!(lines[1]["line"], 2);
    assert_eq!(
        issues_of(&lines[1]["error"]["issues"]),
        pairs(&[("at", "not_with_ledger")])
    );
    assert_eq!(lines[2]["attempts"]["class_used"], 2);
    // The next run goes on from the ledger.
    let again = run(
        &["hint", "--db", arg(&db), "--jsonl"],
        b"{\"report\": {\"http_status\": 503}, \"task\": \"j1\"}\n",
    );
    assert_eq!(again.json_lines()[0]["attempts"]["class_used"], 3);
}

#[test]
fn hint_on_a_ledger_refuses_a_time_a_seed_and_a_bad_server_before_counting() {
    let dir = TempDir::new("hint-db-flags");
    let db = dir.path().join("ledger.db");
    for flags in [
        &["--now", NOW][..],
        &["--seed", "3"],
        &["--server", "http://127.0.0.1:9"],
    ] {
        let mut args = vec!["hint", "--db", arg(&db), "--task", "t1", "--status", "503"];
        args.extend_from_slice(flags);
        let refused = run(&args, b"");
        refused.expect_code(2);
        assert!(
            refused.stderr.contains("cannot be used with"),
            "{}",
            refused.stderr
        );
    }
    assert!(!db.exists(), "a refused command made the ledger");
    let bad = run(
        &[
            "hint", "--server", "ftp://x", "--task", "t1", "--status", "503",
        ],
        b"",
    );
    bad.expect_code(2);
    assert_eq!(
        issue_paths_and_codes(&bad.json()),
        pairs(&[("--server", "bad_url")])
    );
    // A service that is not there: an I/O failure, said on stderr.
    let gone = run(
        &[
            "hint",
            "--server",
            "http://127.0.0.1:9",
            "--task",
            "t1",
            "--status",
            "503",
        ],
        b"",
    );
    gone.expect_code(1);
    assert!(
        gone.stderr.contains("could not be reached"),
        "{}",
        gone.stderr
    );
}

#[test]
fn a_post_whose_answer_was_lost_is_reconciled_and_a_keyed_one_resent_under_its_key() {
    let post = [
        "--task",
        "t1",
        "--exception",
        "ReadTimeout",
        "--operation",
        "POST /v1/charges",
    ];
    let step = step_of(&hint(&post));
    assert_eq!(step["action"], "reconcile", "{step}");
    let mut keyed = post.to_vec();
    keyed.extend(["--idempotency-key", "order-7"]);
    let step = step_of(&hint(&keyed));
    assert_eq!(step["action"], "retry_same", "{step}");
    assert!(
        step["hint"].as_str().unwrap().contains("`order-7`"),
        "{step}"
    );
    let mut said = post.to_vec();
    said.extend(["--idempotent", "true"]);
    assert_eq!(step_of(&hint(&said))["action"], "retry_same");
    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--exception",
        "ReadTimeout",
        "--operation",
        "GET /v1/charges/ch_1",
    ]));
    assert_eq!(step["action"], "retry_same", "{step}");
    // A tool the strategies set not idempotent, with its way to check.
    let dir = TempDir::new("hint-idempotency");
    let file = dir.write(
        "strategies.toml",
        "[tools.phone]\nidempotent = false\nreconcile = \"list today's calls\"\n",
    );
    let step = step_of(&hint(&[
        "--task",
        "t1",
        "--message",
        "socket hang up",
        "--tool",
        "phone",
        "--strategies",
        arg(&file),
    ]));
    assert_eq!(step["action"], "reconcile", "{step}");
    assert!(
        step["hint"]
            .as_str()
            .unwrap()
            .ends_with("To check: list today's calls"),
        "{step}"
    );
}

#[test]
fn a_bad_idempotent_flag_is_refused() {
    let run = hint(&["--task", "t1", "--status", "502", "--idempotent", "maybe"]);
    run.expect_code(2);
    assert!(run.stderr.contains("--idempotent"), "{run:#?}");
}

#[test]
fn a_partial_batch_names_the_items_not_to_send_again() {
    let batch = br#"{"tool": "search-index", "output": {"errors": true, "items": [
        {"index": {"_id": "a", "status": 201}},
        {"index": {"_id": "b", "status": 429, "error": {"type": "es_rejected_execution_exception"}}},
        {"index": {"_id": "c", "status": 201}}]}}"#;
    let step = step_of(&hint_stdin(&["--task", "t1"], batch));
    assert_eq!(step["action"], "compensate", "{step}");
    assert!(
        step["hint"]
            .as_str()
            .unwrap()
            .contains("2 of 3 items went through (a, c); failed: b"),
        "{step}"
    );
}
