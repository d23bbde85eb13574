//! `simulate backoff`: full jitter against plain exponential backoff, the human table, bad
//! flags and the help text.

use serde_json::Value;

use crate::support::{issue_paths_and_codes, pairs, run};

/// Runs `backstop simulate backoff ARGS`.
fn simulate(args: &[&str]) -> crate::support::Run {
    let mut all = vec!["simulate", "backoff"];
    all.extend_from_slice(args);
    run(&all, b"")
}

#[test]
fn full_jitter_makes_fewer_calls_and_ends_sooner_than_plain_exponential() {
    let run = simulate(&["--clients", "100", "--seed", "1", "--json"]);
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    let out = run.json();
    assert_eq!(out["clients"], 100);
    assert_eq!(out["call_ms"], 10);
    let results = out["results"].as_array().expect("results is an array");
    let kinds: Vec<_> = results.iter().map(|r| r["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            Some("none"),
            Some("full_jitter"),
            Some("equal_jitter"),
            Some("decorrelated")
        ]
    );
    for r in results {
        assert_eq!(r["finished"], true, "{r}");
    }
    let number =
        |r: &Value, key: &str| r[key].as_u64().unwrap_or_else(|| panic!("no `{key}`: {r}"));
    let (none, full) = (&results[0], &results[1]);
    // Plain exponential keeps the herd in step: one winner a round, 100 + 99 + ... + 1 calls.
    assert_eq!(number(none, "calls"), 5050);
    assert_eq!(number(none, "completion_ms"), 901_230);
    assert_eq!(number(none, "max_calls_by_one_client"), 100);
    // Full jitter spreads it (734 calls and 6.9s with this seed).
    assert!(
        number(full, "calls") * 5 < number(none, "calls"),
        "{full} {none}"
    );
    assert!(
        number(full, "completion_ms") * 20 < number(none, "completion_ms"),
        "{full} {none}"
    );
}

#[test]
fn the_same_seed_gives_the_same_answer() {
    let args = ["--clients", "30", "--seed", "9", "--json"];
    assert_eq!(simulate(&args).stdout, simulate(&args).stdout);
}

#[test]
fn the_human_table_for_20_clients() {
    let run = simulate(&["--clients", "20", "--seed", "7", "--output-format", "human"]);
    run.expect_code(0);
    assert_eq!(run.stderr, "");
    assert!(
        run.stdout.contains("full jitter: ") && run.stdout.contains("fewer calls"),
        "{}",
        run.stdout
    );
    insta::assert_snapshot!("human_20_clients_seed_7", run.stdout);
}

#[test]
fn bad_flags_are_refused_with_every_issue_at_once() {
    let run = simulate(&["--clients", "0", "--base", "nope", "--json"]);
    run.expect_code(2);
    assert_eq!(run.stderr, "");
    let refusal = run.json();
    assert_eq!(refusal["error"]["code"], "malformed");
    let mut issues = issue_paths_and_codes(&refusal);
    issues.sort();
    assert_eq!(
        issues,
        pairs(&[("--base", "bad_duration"), ("--clients", "out_of_range")])
    );

    let run = simulate(&[
        "--clients",
        "0",
        "--base",
        "nope",
        "--output-format",
        "human",
    ]);
    run.expect_code(2);
    assert_eq!(run.stdout, "", "nothing on stdout when refused");
    insta::assert_snapshot!("bad_flags_human", run.stderr);
}

#[test]
fn each_bad_flag_is_refused_with_the_flag_as_its_path() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&["--clients", "many"], "--clients", "wrong_type"),
        (&["--clients", "-3"], "--clients", "out_of_range"),
        (&["--clients", "100001"], "--clients", "out_of_range"),
        (&["--clients", "99999999999"], "--clients", "out_of_range"),
        (&["--call-ms", "0"], "--call-ms", "out_of_range"),
        (&["--call-ms", "10ms"], "--call-ms", "wrong_type"),
        (&["--base", "-5ms"], "--base", "out_of_range"),
        (&["--base", "500us"], "--base", "out_of_range"),
        (&["--cap", "soon"], "--cap", "bad_duration"),
        (&["--cap", "5ms"], "--cap", "out_of_range"),
        (&["--cap", "25h"], "--cap", "out_of_range"),
        (&["--seed", "x"], "--seed", "wrong_type"),
    ];
    for &(flags, flag, code) in cases {
        let mut args = flags.to_vec();
        if flag != "--clients" {
            args.extend_from_slice(&["--clients", "10"]);
        }
        args.push("--json");
        let run = simulate(&args);
        run.expect_code(2);
        assert_eq!(
            issue_paths_and_codes(&run.json()),
            pairs(&[(flag, code)]),
            "{flags:?}"
        );
    }
}

#[test]
fn help_explains_the_model_and_the_exit_codes() {
    let run = simulate(&["--help"]);
    run.expect_code(0);
    for text in ["version check", "--clients", "--seed", "Exit codes:"] {
        assert!(run.stdout.contains(text), "{text}: {}", run.stdout);
    }
    assert!(
        run.stdout.lines().all(|line| line.chars().count() <= 100),
        "wrapped at 100 columns"
    );
    insta::assert_snapshot!("simulate_backoff_help", run.stdout);
}
