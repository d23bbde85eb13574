//! A failure's signature does not depend on what changes between two runs of it.

use backstop_core::verify::parse::parse_output;
use backstop_core::verify::signature::signature;
use proptest::prelude::*;

/// What changes between two runs of one failure: timings, values, ids, addresses, line numbers.
#[derive(Debug, Clone)]
struct Vars {
    line: u32,
    col: u32,
    thread: u32,
    value: u64,
    count: u32,
    secs: u32,
    millis: u32,
    /// Month, day, hour, minute, second.
    stamp: (u8, u8, u8, u8, u8),
    addr: u64,
}

impl Vars {
    fn stamp(&self) -> String {
        let (mo, d, h, mi, s) = self.stamp;
        format!("2025-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
    }

    fn clock(&self) -> String {
        let (_, _, h, mi, s) = self.stamp;
        format!("{h:02}:{mi:02}:{s:02}")
    }

    fn duration(&self) -> String {
        format!("{}.{:03}s", self.secs, self.millis)
    }

    fn uuid(&self) -> String {
        let a = self.addr;
        format!(
            "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
            a >> 32,
            a & 0xffff,
            (a >> 8) & 0xfff,
            (a >> 20) & 0xfff,
            a & 0xffff_ffff_ffff
        )
    }
}

fn vars() -> impl Strategy<Value = Vars> {
    (
        (1u32..5000, 1u32..120, 1u32..4_000_000),
        (any::<u64>(), 0u32..100_000, 0u32..100_000, 0u32..1000),
        (1u8..13, 1u8..29, 0u8..24, 0u8..60, 0u8..60),
        any::<u64>(),
    )
        .prop_map(
            |((line, col, thread), (value, count, secs, millis), stamp, addr)| Vars {
                line,
                col,
                thread,
                value,
                count,
                secs,
                millis,
                stamp,
                addr,
            },
        )
}

/// One failing run per runner, rendered with the given values.
fn render(runner: usize, v: &Vars) -> String {
    let (line, col, thread, value, count) = (v.line, v.col, v.thread, v.value, v.count);
    let (dur, stamp, clock, addr, ms) = (v.duration(), v.stamp(), v.clock(), v.addr, v.millis);
    let secs = v.secs;
    match runner {
        0 => format!(
            "running 3 tests\ntest a::ok ... ok\ntest parse::rejects_empty ... FAILED\ntest parse::reads_at ... FAILED\n\n\
             failures:\n\n---- parse::rejects_empty stdout ----\n\n\
             thread 'parse::rejects_empty' ({thread}) panicked at src/parse.rs:{line}:{col}:\n\
             assertion `left == right` failed\n  left: {value}\n right: {count}\n\n\
             ---- parse::reads_at stdout ----\n\n\
             thread 'parse::reads_at' ({thread}) panicked at src/parse.rs:{line}:{col}:\n\
             no record at {stamp} after {ms}ms (handle {addr:#x})\n\n\n\
             failures:\n    parse::rejects_empty\n    parse::reads_at\n\n\
             test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in {dur}\n"
        ),
        1 => format!(
            "        FAIL [{dur}] core tests::x\n\
             ──── STDERR:             core tests::x\n\n\
             thread 'tests::x' ({thread}) panicked at src/lib.rs:{line}:{col}:\n\
             request {uuid} took {ms}ms\n\n\
             ────────────\n     Summary [{dur}] 2 tests run: 1 passed, 1 failed\n",
            uuid = v.uuid()
        ),
        2 => format!(
            "..F.F.                                                                   [100%]\n\
             FAILED tests/test_orders.py::test_totals - AssertionError: totals differ: order {value} \
             has {count} lines at {stamp}; invoice {count} lists {value} lines; the warehouse \
             reported {count} units and the ledger shows {value} postings; expected the totals to \
             agree after rounding {count} times\n\
             FAILED tests/test_orders.py::test_sync - TimeoutError: no reply on \
             /tmp/pytest-of-dev/pytest-{count}/sock after {dur} at {clock}\n\
             2 failed, 4 passed in {dur}\n"
        ),
        3 => format!(
            "=== RUN   TestPoll\n    poll_test.go:{line}: polling since {stamp} (attempt {count})\n\
             --- FAIL: TestPoll ({dur})\n\
             panic: assignment to entry in nil map at {addr:#x} [recovered]\n\
             FAIL\texample.com/x\t{dur}\nFAIL\n"
        ),
        4 => format!(
            " FAIL  src/cart.test.ts ({secs}.{ms} s)\n  ● cart › totals\n\n\
             \x20   expect(received).toBe(expected) // Object.is equality\n\n\
             \x20   Expected: {value}\n    Received: {count}\n\n\
             \x20     at Object.toBe (src/cart.test.ts:{line}:{col})\n\n\
             Test Suites: 1 failed, 1 total\nTests:       1 failed, 3 passed, 4 total\n\
             Time:        {secs}.{ms} s\n"
        ),
        _ => format!(
            " FAIL  src/cart.test.ts > cart > totals\n\
             AssertionError: expected {value} to be {count} // Object.is equality\n\
             \x20❯ src/cart.test.ts:{line}:{col}\n\n\
             \x20Test Files  1 failed (1)\n      Tests  1 failed | 3 passed (4)\n\
             \x20  Start at  {clock}\n   Duration  {ms}ms\n"
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: proptest::test_runner::RngSeed::Fixed(5),
        ..ProptestConfig::default()
    })]

    #[test]
    fn one_failure_gives_one_signature_whatever_the_numbers(runner in 0usize..6, a in vars(), b in vars()) {
        let (one, two) = (render(runner, &a), render(runner, &b));
        let first = parse_output(&one).expect("a summary");
        let again = parse_output(&two).expect("a summary");
        prop_assert_eq!((first.runner, first.passed, first.failed), (again.runner, again.passed, again.failed));
        prop_assert!(!first.errors.is_empty());
        prop_assert_eq!(signature(&first), signature(&again), "{}\n---\n{}", one, two);
    }
}
