//! `parse_output` at its edges: the input cap, colors, old panic messages, files that failed to
//! load, packages that failed without a failing test, and output no runner printed.

use backstop_core::verify::parse::{MAX_INPUT, Runner, TestRun, parse_output};

fn parse(text: &str) -> TestRun {
    crate::parsed("inline", text)
}

#[test]
fn only_the_tail_is_read() {
    let head = "test result: ok. 5 passed; 0 failed; 0 ignored;\n";
    let filler = "x".repeat(99) + "\n";
    let big = head.to_owned() + &filler.repeat(2 * MAX_INPUT / 100);
    assert_eq!(parse_output(&big), None, "the summary is past the cap");
    let run = parse(&(big + "3 passed, 1 failed in 0.20s\n"));
    assert_eq!((run.runner, run.passed, run.failed), (Runner::Pytest, 3, 1));
}

#[test]
fn the_cut_lands_on_a_char_boundary_and_a_line_start() {
    let text = "é".repeat(MAX_INPUT) + "\n1 passed, 2 failed\n";
    let run = parse(&text);
    assert_eq!((run.runner, run.passed, run.failed), (Runner::Plain, 1, 2));
}

#[test]
fn colors_and_overwritten_lines_are_read_as_a_terminal_shows_them() {
    let text = "\x1b[1m\x1b[32mrunning\x1b[0m\r\x1b[0;31m1 failed\x1b[0m, 4 passed in 0.1s\r\n";
    let run = parse(text);
    assert_eq!((run.runner, run.passed, run.failed), (Runner::Pytest, 4, 1));
}

#[test]
fn cargo_sums_every_binary_and_reads_old_panics() {
    let text = "\
test a::b ... FAILED
test c - should panic ... FAILED

failures:

---- a::b stdout ----
thread 'a::b' panicked at 'boom', src/lib.rs:3:5

failures:
    a::b
    c

test result: FAILED. 2 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
";
    let run = parse(text);
    assert_eq!(
        (run.runner, run.passed, run.failed),
        (Runner::CargoTest, 5, 2)
    );
    assert_eq!(run.failing, ["a::b", "c"]);
    assert_eq!(run.errors, ["panicked at 'boom', src/lib.rs:3:5"]);
}

#[test]
fn js_files_that_failed_to_load() {
    let vitest = "\
 FAIL  src/broken.test.ts [ src/broken.test.ts ]
Error: Failed to load url ./missing (resolved id: ./missing) in /w/src/broken.test.ts. Does the file exist?

 Test Files  1 failed (1)
      Tests  no tests
";
    let run = parse(vitest);
    assert_eq!(
        (run.runner, run.broken, run.failed),
        (Runner::Vitest, true, 0)
    );
    assert!(run.errors[0].starts_with("Error: Failed to load url ./missing"));

    let jest = "\
 FAIL  src/a.test.ts
  ● Test suite failed to run

    Cannot find module './b' from 'src/a.test.ts'

 PASS  src/c.test.ts

Test Suites: 1 failed, 1 passed, 2 total
Tests:       4 passed, 4 total
";
    let run = parse(jest);
    assert_eq!(
        (run.runner, run.broken, run.passed, run.failed),
        (Runner::Jest, false, 4, 1)
    );
    assert_eq!(run.failing, ["src/a.test.ts"]);
    assert_eq!(
        run.errors,
        ["Cannot find module './b' from 'src/a.test.ts'"]
    );
}

#[test]
fn a_go_package_that_fails_without_a_failing_test_is_named() {
    let text = "\
ok  \texample.com/a\t0.010s
TestMain: database not reachable
FAIL\texample.com/b\t0.003s
FAIL
";
    let run = parse(text);
    assert_eq!((run.runner, run.passed, run.failed), (Runner::GoTest, 1, 1));
    assert_eq!(run.failing, ["example.com/b"]);
}

#[test]
fn nothing_known_is_none() {
    for text in [
        "",
        "hello\n",
        "Segmentation fault (core dumped)\n",
        "all good: 3 of 3\n",
    ] {
        assert_eq!(parse_output(text), None, "{text:?}");
    }
}

#[test]
fn runners_serialize_in_snake_case() {
    let json = serde_json::to_string(&[Runner::CargoTest, Runner::GoTest]).unwrap();
    assert_eq!(json, r#"["cargo_test","go_test"]"#);
}

#[test]
fn counts_past_u32_saturate_instead_of_panicking() {
    let text =
        "Test Suites: 1 failed, 1 total\nTests:       4294967295 failed, 99999999999 passed\n";
    let run = parse(text);
    assert_eq!(
        (run.runner, run.passed, run.failed),
        (Runner::Jest, u32::MAX, u32::MAX)
    );
    let text = " Test Files  1 failed (1)\n      Tests  4294967295 failed | 4294967295 passed\n";
    assert_eq!(parse(text).failed, u32::MAX);
}
