//! Every sample in `tests/data/runners` against the run it should give.
//!
//! The samples are output as each tool prints it, written for these tests: a workspace's
//! `cargo test` (one `test result:` line per binary), panics in the Rust 1.91 form with a
//! thread id, nextest's captured libtest output, pytest's three traceback styles, `go test`
//! with and without `-v`, Jest's `●` headers and Vitest's ` FAIL  file > suite > test`.

use backstop_core::verify::parse::{Runner, TestRun, parse_output};

struct Sample {
    name: &'static str,
    text: &'static str,
    want: Option<TestRun>,
}

fn run(runner: Runner, passed: u32, failed: u32, failing: &[&str], errors: &[&str]) -> TestRun {
    TestRun {
        runner,
        passed,
        failed,
        failing: failing.iter().map(ToString::to_string).collect(),
        errors: errors.iter().map(ToString::to_string).collect(),
        broken: false,
    }
}

fn broken(runner: Runner, errors: &[&str]) -> TestRun {
    TestRun {
        runner,
        passed: 0,
        failed: 0,
        failing: Vec::new(),
        errors: errors.iter().map(ToString::to_string).collect(),
        broken: true,
    }
}

const REJECTS_EMPTY: &str = "panicked at crates/ledger-core/src/amount.rs:212:9: assertion `left == right` failed; left: Ok(Amount { units: 0, currency: \"USD\" }); right: Err(Empty)";
const SPLITS_EVENLY: &str = "panicked at crates/ledger-core/src/posting.rs:97:39: called `Result::unwrap()` on an `Err` value: Remainder { cents: 1 }";
const CARGO_FAILING: [&str; 2] = [
    "amount::tests::parse::rejects_empty",
    "posting::tests::splits_evenly",
];
const LOGIN_FAILING: [&str; 2] = [
    "src/api/login.test.ts > login > locks the account after five failures",
    "src/api/login.test.ts > login > rejects a wrong password",
];

#[allow(
    clippy::too_many_lines,
    reason = "a table of test outputs, one case each"
)]
fn samples() -> Vec<Sample> {
    use Runner::{CargoTest, GoTest, Jest, Nextest, Plain, Pytest, Vitest};
    macro_rules! case {
        ($name:literal, None) => {
            Sample {
                name: $name,
                text: sample!($name),
                want: None,
            }
        };
        ($name:literal, $want:expr) => {
            Sample {
                name: $name,
                text: sample!($name),
                want: Some($want),
            }
        };
    }
    vec![
        // Four binaries (unit, integration, an empty main, doc tests): their counts are summed.
        case!("cargo_pass", run(CargoTest, 21, 0, &[], &[])),
        // Two panics, the `failures:` list, a 1.91 thread id; `left`/`right` join the message.
        case!(
            "cargo_fail",
            run(
                CargoTest,
                11,
                2,
                &CARGO_FAILING,
                &[REJECTS_EMPTY, SPLITS_EVENLY]
            )
        ),
        // `--no-fail-fast --color=always`: ANSI codes stripped, the later binaries summed.
        case!(
            "cargo_fail_color",
            run(
                CargoTest,
                19,
                2,
                &CARGO_FAILING,
                &[SPLITS_EVENLY, &REJECTS_EMPTY.replace("212:9", "214:9")],
            )
        ),
        // No test ran: rustc's errors with their location; cargo's closing lines left out.
        case!(
            "cargo_compile_error",
            broken(
                CargoTest,
                &[
                    "error[E0308]: mismatched types --> crates/ledger-core/src/posting.rs:88:26",
                    "error[E0425]: cannot find value `remainder` in this scope --> crates/ledger-core/src/posting.rs:93:12",
                ],
            )
        ),
        case!("nextest_pass", run(Nextest, 19, 0, &[], &[])),
        // The captured libtest output holds `test result: FAILED. 0 passed; 1 failed`: nextest's
        // own summary wins over it.
        case!(
            "nextest_fail",
            run(
                Nextest,
                17,
                2,
                &[
                    "ledger-core amount::tests::parse::rejects_empty",
                    "ledger-core posting::tests::splits_evenly"
                ],
                &[REJECTS_EMPTY, SPLITS_EVENLY],
            )
        ),
        // Retries: a flaky test (failed, then passed) is neither failing nor an error; three
        // tries of one failure give one error line.
        case!(
            "nextest_retries",
            run(
                Nextest,
                18,
                1,
                &["ledger-core posting::tests::splits_evenly"],
                &[SPLITS_EVENLY]
            )
        ),
        case!("pytest_pass", run(Pytest, 47, 0, &[], &[])),
        // Two failures and an error at setup (counted as failed), the short summary's messages,
        // one of them cut by pytest at 80 columns.
        case!(
            "pytest_fail",
            run(
                Pytest,
                44,
                3,
                &[
                    "tests/test_api.py::test_login",
                    "tests/test_models.py::test_reserve_stock",
                    "tests/test_retry.py::test_backoff",
                ],
                &[
                    "assert 401 == 200",
                    "AssertionError: backoff not applied",
                    "sqlite3.OperationalError: un..."
                ],
            )
        ),
        // `pytest -q --tb=line`, as the recipe runs it: no banners around the final line.
        case!(
            "pytest_quiet_fail",
            run(
                Pytest,
                45,
                2,
                &[
                    "tests/test_api.py::test_login",
                    "tests/test_retry.py::test_backoff"
                ],
                &["assert 401 == 200", "AssertionError: backoff not applied"],
            )
        ),
        // Interrupted during collection: nothing ran; the `E` line says why.
        case!(
            "pytest_collection_error",
            broken(
                Pytest,
                &[
                    "ImportError: cannot import name 'login_required' from 'inventory.auth' (/home/dev/src/inventory/inventory/auth.py)"
                ],
            )
        ),
        // Without -v no passing test is listed: the `ok` packages are counted.
        case!("go_pass", run(GoTest, 3, 0, &[], &[])),
        case!(
            "go_fail",
            run(
                GoTest,
                2,
                3,
                &[
                    "TestQuote",
                    "TestQuote/oversize_parcel",
                    "TestQuote/zero_weight"
                ],
                &[
                    "rates_test.go:58: Quote(parcel{w:31kg}) = 42.10 EUR, want error ErrOversize",
                    "rates_test.go:58: Quote(parcel{w:0kg}) = 0.00 EUR, want error ErrNoWeight",
                ],
            )
        ),
        // -v: logs come before the result; a passing test's log is not an error; a panic is.
        case!(
            "go_verbose_fail",
            run(
                GoTest,
                4,
                4,
                &[
                    "TestQuote",
                    "TestQuote/oversize_parcel",
                    "TestQuote/zero_weight",
                    "TestTrackPoll"
                ],
                &[
                    "rates_test.go:58: Quote(parcel{w:31kg}) = 42.10 EUR, want error ErrOversize",
                    "rates_test.go:58: Quote(parcel{w:0kg}) = 0.00 EUR, want error ErrNoWeight",
                    "track_test.go:40: polling carrier since 2025-03-01T10:15:02Z",
                    "panic: runtime error: invalid memory address or nil pointer dereference",
                ],
            )
        ),
        case!(
            "go_build_error",
            broken(
                GoTest,
                &[
                    "internal/rates/rates.go:44:9: undefined: surchargeTable",
                    "internal/rates/rates_test.go:17:14: cannot use \"31kg\" (untyped string constant) as Weight value in struct literal",
                ],
            )
        ),
        case!("jest_pass", run(Jest, 21, 0, &[], &[])),
        case!(
            "jest_fail",
            run(
                Jest,
                19,
                2,
                &LOGIN_FAILING,
                &[
                    "expect(received).toBe(expected) // Object.is equality; Expected: 401; Received: 200",
                    "expect(received).toEqual(expected) // deep equality",
                ],
            )
        ),
        case!("vitest_pass", run(Vitest, 21, 0, &[], &[])),
        case!(
            "vitest_fail",
            run(
                Vitest,
                19,
                2,
                &LOGIN_FAILING,
                &[
                    "AssertionError: expected 200 to be 401 // Object.is equality",
                    "AssertionError: expected { locked: false, remaining: +0 } to deeply equal { locked: true, remaining: +0 }",
                ],
            )
        ),
        // A script of one's own: the last line holds counts only.
        case!(
            "plain_counts",
            run(
                Plain,
                2,
                2,
                &["contract", "unit"],
                &[
                    "3 assertions failed in retry_spec",
                    "schema mismatch on POST /v1/orders (field \"total\")"
                ],
            )
        ),
        // A C build error, and a test binary killed by a signal before its summary.
        case!("unparseable_make", None),
        case!("unparseable_crash", None),
    ]
}

#[test]
fn every_sample_gives_its_run() {
    let mut wrong = Vec::new();
    for s in samples() {
        let got = parse_output(s.text);
        if got != s.want {
            wrong.push(format!(
                "{}:\n   got {got:#?}\n  want {:#?}",
                s.name, s.want
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_file_in_the_directory_has_an_entry() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/runners");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut named: Vec<String> = samples()
        .iter()
        .map(|s| format!("{}.txt", s.name))
        .collect();
    named.sort();
    assert_eq!(files, named);
}

#[test]
fn every_runner_has_a_passing_and_a_failing_sample() {
    let runs: Vec<TestRun> = samples().into_iter().filter_map(|s| s.want).collect();
    for runner in [
        Runner::CargoTest,
        Runner::Nextest,
        Runner::Pytest,
        Runner::GoTest,
        Runner::Jest,
        Runner::Vitest,
    ] {
        assert!(
            runs.iter()
                .any(|r| r.runner == runner && r.failed == 0 && !r.broken),
            "{runner:?}"
        );
        assert!(
            runs.iter().any(|r| r.runner == runner && r.failed > 0),
            "{runner:?}"
        );
    }
}

#[test]
fn a_sample_buried_under_a_long_log_is_still_read() {
    let noise = "DEBUG pool: connection 17 returned to the pool after 3ms\n".repeat(40_000);
    let text = noise + sample!("pytest_quiet_fail");
    assert!(text.len() > 2 * 1024 * 1024);
    let run = crate::parsed("long log", &text);
    assert_eq!(
        (run.runner, run.passed, run.failed),
        (Runner::Pytest, 45, 2)
    );
}
