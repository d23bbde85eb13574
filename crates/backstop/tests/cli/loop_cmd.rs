//! `backstop loop` on real processes: a shell attempt and a shell test command per round.

use std::fs;

use crate::support::{TempDir, arg, run_in};

/// A test command that fails the way a pytest run does, naming `$WORD` in its error.
const PYTEST_FAIL: &str = r#"printf 'FAILED tests/test_app.py::test_total - AssertionError: expected %s\n==== 1 failed, 3 passed in 0.12s ====\n' "$WORD"; exit 1"#;

fn rounds(json: &serde_json::Value) -> usize {
    json["rounds"].as_array().map_or(0, Vec::len)
}

#[test]
fn a_task_that_passes_on_its_third_attempt_ends_with_0() {
    let dir = TempDir::new("loop-third");
    let run = run_in(
        Some(dir.path()),
        &[
            "loop",
            "--attempt",
            "echo x >> attempts",
            "--test",
            "test $(wc -l < attempts) -ge 3",
            "--max-attempts",
            "5",
            "--json",
        ],
        b"",
    );
    run.expect_code(0);
    let json = run.json();
    assert_eq!(json["ending"], "passed", "{json}");
    assert_eq!(rounds(&json), 3);
    // The output had no runner's summary: the fixed cap stayed in charge, and said so.
    assert!(
        json["rounds"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("fixed cap"),
        "{json}"
    );
}

#[test]
fn the_same_failure_forever_changes_approach_then_stops_before_the_cap() {
    let dir = TempDir::new("loop-same");
    let test = format!("WORD=apple; {PYTEST_FAIL}");
    let handoff = dir.path().join("handoff");
    let run = run_in(
        Some(dir.path()),
        &[
            "loop",
            "--attempt",
            "echo $BACKSTOP_STRATEGY >> strategies",
            "--test",
            &test,
            "--max-attempts",
            "6",
            "--handoff",
            arg(&handoff),
            "--json",
        ],
        b"",
    );
    let json = run.json();
    // The documented path with the default threshold: a first failure goes on the same way,
    // the same failure twice changes the approach, three times stops (the decider's stop).
    assert_eq!(run.code, 4, "{json}");
    assert_eq!(json["ending"], "decider_stop");
    assert_eq!(rounds(&json), 3, "stopped before the cap: {json}");
    assert_eq!(json["rounds"][0]["choice"], "same_approach");
    assert_eq!(json["rounds"][1]["choice"], "change_approach");
    assert_eq!(json["rounds"][2]["choice"], "stop");
    assert!(
        json["rounds"][1]["reason"]
            .as_str()
            .unwrap()
            .contains("same failure"),
        "{json}"
    );
    let strategies = fs::read_to_string(dir.path().join("strategies")).unwrap();
    assert_eq!(
        strategies,
        "same_approach\nsame_approach\nchange_approach\n"
    );
    let md = fs::read_to_string(handoff.join("handoff.md")).unwrap();
    assert!(md.contains("expected apple"), "{md}");
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(handoff.join("handoff.json")).unwrap()).unwrap();
    assert_eq!(report["ending"], "decider_stop");
    // A threshold set above the change-approach score stops at the second failure instead.
    let strict = run_in(
        Some(dir.path()),
        &["loop", "--test", &test, "--threshold", "2.5", "--json"],
        b"",
    );
    assert_eq!(strict.code, 5, "{}", strict.stdout);
    assert_eq!(rounds(&strict.json()), 2);
}

#[test]
fn a_collection_error_changes_the_approach_instead_of_stopping() {
    let dir = TempDir::new("loop-collect");
    // Broken on the first run (pytest's collection error), then passing.
    let test = r"if [ -f fixed ]; then exit 0; fi; printf 'ERROR collecting tests/test_app.py
E   ImportError: cannot import name total
!!!!!!!! Interrupted: 1 error during collection !!!!!!!!
==== 1 error in 0.05s ====
'; exit 2";
    let run = run_in(
        Some(dir.path()),
        &[
            "loop",
            "--attempt",
            "test \"$BACKSTOP_STRATEGY\" = change_approach && touch fixed; true",
            "--test",
            test,
            "--max-attempts",
            "5",
            "--json",
        ],
        b"",
    );
    let json = run.json();
    assert_eq!(run.code, 0, "{json}");
    assert_eq!(json["rounds"][0]["choice"], "change_approach", "{json}");
    assert_eq!(rounds(&json), 2);
}

#[test]
fn an_attempt_command_that_cannot_run_stops_with_its_own_exit_code() {
    let dir = TempDir::new("loop-attempt-missing");
    let log = dir.path().join("loop.jsonl");
    let run = run_in(
        Some(dir.path()),
        &[
            "loop",
            "--attempt",
            "no-such-agent-backstop",
            "--test",
            "false",
            "--log",
            arg(&log),
            "--json",
        ],
        b"",
    );
    let json = run.json();
    assert_eq!(run.code, 8, "{json}");
    assert_eq!(json["ending"], "attempt_command_failed");
    assert_eq!(rounds(&json), 1, "not five silent rounds: {json}");
    let line: serde_json::Value =
        serde_json::from_str(fs::read_to_string(&log).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(line["attempt_exit_code"], 127, "{line}");
    assert!(
        line["attempt_tail"].as_str().unwrap().contains("not found"),
        "{line}"
    );
    // An attempt that runs but fails is recorded beside its round, redacted, and the loop goes on.
    let failing = run_in(
        Some(dir.path()),
        &[
            "loop",
            "--attempt",
            "echo token=sk-live-abcdefghijklmnopqrstuvwx; exit 3",
            "--test",
            "false",
            "--max-attempts",
            "2",
            "--json",
        ],
        b"",
    );
    let json = failing.json();
    assert_eq!(rounds(&json), 2, "{json}");
    assert_eq!(json["rounds"][0]["attempt_exit_code"], 3, "{json}");
    let tail = json["rounds"][0]["attempt_tail"].as_str().unwrap();
    assert!(!tail.contains("sk-live-abcdefghijklmnopqrstuvwx"), "{tail}");
}

#[test]
fn the_same_unreadable_output_counts_as_the_same_failure() {
    let dir = TempDir::new("loop-unreadable");
    let run = run_in(
        Some(dir.path()),
        &[
            "loop",
            "--test",
            "echo 'Segmentation fault at 0x7ffd1234'; exit 139",
            "--max-attempts",
            "5",
            "--json",
        ],
        b"",
    );
    let json = run.json();
    assert_eq!(run.code, 4, "{json}");
    assert_eq!(rounds(&json), 3, "{json}");
    assert!(
        json["rounds"][2]["reason"]
            .as_str()
            .unwrap()
            .contains("unreadable"),
        "{json}"
    );
}

#[test]
fn a_task_failing_differently_each_time_runs_to_the_cap() {
    let dir = TempDir::new("loop-different");
    // Each round names another fruit: a different failure every time.
    let test =
        format!("echo x >> rounds; WORD=$(sed -n \"$(wc -l < rounds)p\" fruits); {PYTEST_FAIL}");
    dir.write("fruits", "apple\nbanana\ncherry\ndamson\nelder\n");
    let run = run_in(
        Some(dir.path()),
        &["loop", "--test", &test, "--max-attempts", "4", "--json"],
        b"",
    );
    let json = run.json();
    assert_eq!(run.code, 3, "{json}");
    assert_eq!(json["ending"], "budget_spent");
    assert_eq!(rounds(&json), 4);
}

#[test]
fn a_missing_test_command_is_a_clear_error_not_a_pass() {
    let run = run_in(
        None,
        &["loop", "--test", "no-such-test-command-backstop", "--json"],
        b"",
    );
    let json = run.json();
    assert_eq!(run.code, 7, "{json}");
    assert_eq!(json["ending"], "test_command_failed");
    assert!(
        json["rounds"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("could not run"),
        "{json}"
    );
}

#[test]
fn a_crashing_test_command_is_a_failure_not_a_pass() {
    let run = run_in(
        None,
        &[
            "loop",
            "--test",
            "kill -9 $$",
            "--max-attempts",
            "2",
            "--json",
        ],
        b"",
    );
    let json = run.json();
    assert_eq!(run.code, 3, "{json}");
    assert!(
        json["rounds"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("killed by a signal"),
        "{json}"
    );
    assert_eq!(json["rounds"][0]["passed"], false);
}

#[test]
fn secrets_in_test_output_never_reach_the_handoff_or_the_log() {
    let dir = TempDir::new("loop-secret");
    let key = "sk-proj-TESTTESTTESTTESTTESTTESTTESTTEST1234";
    let test = format!(
        "echo 'OPENAI_API_KEY={key}'; echo 'connecting to postgres://app:hunter2@db/app'; exit 1"
    );
    let handoff = dir.path().join("h");
    let log = dir.path().join("loop.jsonl");
    let run = run_in(
        Some(dir.path()),
        &[
            "loop",
            "--test",
            &test,
            "--max-attempts",
            "2",
            "--handoff",
            arg(&handoff),
            "--log",
            arg(&log),
            "--json",
        ],
        b"",
    );
    assert_eq!(run.code, 3, "{}", run.stdout);
    for file in [
        handoff.join("handoff.md"),
        handoff.join("handoff.json"),
        log,
    ] {
        let written = fs::read_to_string(&file).unwrap();
        assert!(!written.contains(key), "{}: {written}", file.display());
        assert!(
            !written.contains("hunter2"),
            "{}: {written}",
            file.display()
        );
    }
    assert!(!run.stdout.contains(key) && !run.stderr.contains(key));
}

#[test]
fn the_attempt_sees_its_number_strategy_and_the_last_failure() {
    let dir = TempDir::new("loop-env");
    let attempt = r#"echo "$BACKSTOP_ATTEMPT/$BACKSTOP_MAX_ATTEMPTS $BACKSTOP_STRATEGY" >> seen; test -f "$BACKSTOP_FAILURE_FILE" && cp "$BACKSTOP_FAILURE_FILE" last-failure.md; true"#;
    let run = run_in(
        Some(dir.path()),
        &[
            "loop",
            "--attempt",
            attempt,
            "--test",
            "echo boom; exit 1",
            "--max-attempts",
            "3",
            "--json",
        ],
        b"",
    );
    assert_eq!(run.code, 3, "{}", run.stdout);
    let seen = fs::read_to_string(dir.path().join("seen")).unwrap();
    assert_eq!(
        seen, "1/3 same_approach\n2/3 same_approach\n3/3 change_approach\n",
        "the same unreadable output twice is the same failure: the third changes approach"
    );
    let failure = fs::read_to_string(dir.path().join("last-failure.md")).unwrap();
    assert!(failure.contains("boom"), "{failure}");
}

#[test]
fn bad_flags_are_refused() {
    for flags in [
        &["loop", "--test", "true", "--max-attempts", "0"][..],
        &["loop", "--test", "true", "--threshold", "9"],
        &["loop"],
    ] {
        let run = run_in(None, flags, b"");
        assert_eq!(run.code, 2, "{flags:?}: {}", run.stderr);
    }
}

#[test]
fn calibrate_reads_the_logs_loops_write() {
    let dir = TempDir::new("loop-calibrate");
    let log = dir.path().join("loop.jsonl");
    // One run stuck on the same failure until stopped, one that passes on its third attempt.
    let stuck = format!("WORD=apple; {PYTEST_FAIL}");
    let run = run_in(
        Some(dir.path()),
        &[
            "loop",
            "--test",
            &stuck,
            "--max-attempts",
            "4",
            "--threshold",
            "1",
            "--log",
            arg(&log),
            "--json",
        ],
        b"",
    );
    assert_ne!(run.code, 0, "{}", run.stdout);
    let run = run_in(
        Some(dir.path()),
        &[
            "loop",
            "--attempt",
            "echo x >> n",
            "--test",
            "test $(wc -l < n) -ge 3",
            "--log",
            arg(&log),
            "--json",
        ],
        b"",
    );
    run.expect_code(0);
    let calibration = run_in(None, &["loop", "calibrate", arg(&log), "--json"], b"");
    calibration.expect_code(0);
    let c = calibration.json();
    assert_eq!(c["runs"], 2, "{c}");
    assert!(c["best"].is_number(), "{c}");
    // Two runs are too few to recommend a threshold: it says so, with the sample size.
    assert_eq!(c["recommended"], serde_json::Value::Null, "{c}");
    assert_eq!(c["min_runs"], 10);
    let human = run_in(
        None,
        &["loop", "calibrate", "--output-format", "human", arg(&log)],
        b"",
    );
    human.expect_code(0);
    assert!(human.stdout.contains("2 runs"), "{}", human.stdout);
    assert!(
        human
            .stdout
            .contains("no threshold recommended: 2 runs are too few (at least 10)"),
        "{}",
        human.stdout
    );

    let bad = dir.write("bad.jsonl", "{\"run\": \"r\"}\nnot json\n");
    let refused = run_in(None, &["loop", "calibrate", arg(&bad), "--json"], b"");
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert_eq!(
        refused.json()["error"]["issues"].as_array().unwrap().len(),
        2
    );
}

/// A decider on 127.0.0.1 that answers every request with `reply`, or never answers when it
/// is `None`; the requests it got (head and body) are kept.
struct FakeDecider {
    url: String,
    requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

fn fake_decider(reply: Option<&'static str>) -> FakeDecider {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/decisions", listener.local_addr().unwrap());
    let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            seen.lock()
                .unwrap()
                .push(format!("{head}\r\n{}", String::from_utf8_lossy(&body)));
            match reply {
                Some(json) => {
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
                        json.len()
                    );
                }
                None => std::thread::sleep(std::time::Duration::from_secs(10)),
            }
        }
    });
    FakeDecider { url, requests }
}

fn loop_with_decider(decider: &FakeDecider, extra: &[&str]) -> crate::support::Run {
    let mut args = vec![
        "loop",
        "--test",
        "echo 'FAILED tests/t.py::test_a - AssertionError'; echo '1 failed, 1 passed'; exit 1",
        "--decider",
        &decider.url,
        "--json",
    ];
    args.extend_from_slice(extra);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_backstop"))
        .args(&args)
        .env("BACKSTOP_DECIDER_KEY", "test-decider-key")
        .output()
        .unwrap();
    crate::support::Run {
        code: output.status.code().unwrap(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

const SAME: &str = r#"{"answers": {"next_attempt": {"expected_score": 4.2, "abstained": false}, "strategy": {"decision": "same_approach", "abstained": false}}}"#;
const STOP: &str = r#"{"answers": {"next_attempt": {"expected_score": 3.0, "abstained": false}, "strategy": {"decision": "stop", "abstained": false}}}"#;
const ABSTAIN: &str =
    r#"{"answers": {"next_attempt": {"abstained": true}, "strategy": {"abstained": true}}}"#;

#[test]
fn an_external_decider_gets_the_recipes_request_with_a_fresh_key_each_time() {
    let decider = fake_decider(Some(SAME));
    let run = loop_with_decider(&decider, &["--max-attempts", "3"]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    let requests = decider.requests.lock().unwrap().clone();
    assert_eq!(
        requests.len(),
        2,
        "asked after attempts 1 and 2, not after the last"
    );
    let keys: Vec<String> = requests
        .iter()
        .map(|r| {
            let line = r
                .lines()
                .find(|l| l.to_ascii_lowercase().starts_with("idempotency-key:"))
                .unwrap();
            line.split_once(':').unwrap().1.trim().to_owned()
        })
        .collect();
    assert_ne!(keys[0], keys[1]);
    assert!(
        requests[0]
            .to_ascii_lowercase()
            .contains("authorization: bearer test-decider-key")
    );
    let body: serde_json::Value =
        serde_json::from_str(requests[0].split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["state"]["attempt"], 1);
    assert_eq!(body["state"]["max_attempts"], 3);
    assert_eq!(body["state"]["tests"], "1 passed, 1 failed");
    assert!(body["questions"]["next_attempt"]["criteria"]["1"].is_string());
    assert_eq!(run.json()["rounds"][0]["score"], 4.2);
}

#[test]
fn a_decider_that_says_stop_stops_the_loop() {
    let decider = fake_decider(Some(STOP));
    let run = loop_with_decider(&decider, &["--max-attempts", "5"]);
    assert_eq!(run.code, 4, "{}", run.stdout);
    assert_eq!(run.json()["ending"], "decider_stop");
}

#[test]
fn a_decider_that_abstains_stops_and_asks_a_person() {
    let decider = fake_decider(Some(ABSTAIN));
    let run = loop_with_decider(&decider, &["--max-attempts", "5"]);
    assert_eq!(run.code, 6, "{}", run.stdout);
    assert_eq!(run.json()["ending"], "abstained");
}

#[test]
fn a_decider_that_times_out_leaves_the_fixed_cap_in_charge() {
    let decider = fake_decider(None);
    let run = loop_with_decider(
        &decider,
        &["--max-attempts", "3", "--decider-timeout", "1s"],
    );
    assert_eq!(run.code, 3, "the loop went on to its cap: {}", run.stdout);
    let json = run.json();
    assert_eq!(json["rounds"].as_array().unwrap().len(), 3);
    assert!(
        json["rounds"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("fixed cap"),
        "{json}"
    );
}
