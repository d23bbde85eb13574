//! Signatures of the samples: a rerun of one failure matches, other failures do not.

use backstop_core::verify::signature::{Signature, signature};

use crate::parsed;

fn of(name: &str, text: &str) -> Signature {
    signature(&parsed(name, text))
}

#[test]
fn a_rerun_of_the_same_failure_gives_the_same_signature() {
    // Other thread ids, durations, binary hashes, colors, test order, a line number moved by
    // an edit above the assertion, and more binaries run: the same two failures.
    let first = of("cargo_fail", sample!("cargo_fail"));
    let again = of("cargo_fail_color", sample!("cargo_fail_color"));
    assert_eq!(first, again);
    assert_eq!(first.digest(), again.digest());
    assert_eq!(
        first.errors,
        [
            "panicked at crates/ledger-core/src/amount.rs:L: assertion `left == right` failed; left: Ok(Amount { units: N, currency: \"USD\" }); right: Err(Empty)",
            "panicked at crates/ledger-core/src/posting.rs:L: called `Result::unwrap()` on an `Err` value: Remainder { cents: N }",
        ]
    );
}

#[test]
fn one_failure_under_two_runners_shares_its_error_lines() {
    let cargo = of("cargo_fail", sample!("cargo_fail"));
    let nextest = of("nextest_fail", sample!("nextest_fail"));
    assert_eq!(cargo.errors, nextest.errors);
    assert_ne!(
        cargo.failing, nextest.failing,
        "nextest names the binary too"
    );
}

#[test]
fn other_failures_give_other_signatures() {
    let pairs = [
        (
            ("go_fail", sample!("go_fail")),
            ("go_verbose_fail", sample!("go_verbose_fail")),
        ),
        (
            ("pytest_fail", sample!("pytest_fail")),
            ("pytest_quiet_fail", sample!("pytest_quiet_fail")),
        ),
        (
            ("nextest_fail", sample!("nextest_fail")),
            ("nextest_retries", sample!("nextest_retries")),
        ),
        (
            ("jest_fail", sample!("jest_fail")),
            ("vitest_fail", sample!("vitest_fail")),
        ),
    ];
    for ((a, a_text), (b, b_text)) in pairs {
        let (x, y) = (of(a, a_text), of(b, b_text));
        assert_ne!(x, y, "{a} vs {b}");
        assert_ne!(x.digest(), y.digest(), "{a} vs {b}");
    }
}

#[test]
fn a_passing_run_has_the_empty_signature() {
    for (name, text) in [
        ("cargo_pass", sample!("cargo_pass")),
        ("nextest_pass", sample!("nextest_pass")),
        ("pytest_pass", sample!("pytest_pass")),
        ("go_pass", sample!("go_pass")),
        ("jest_pass", sample!("jest_pass")),
        ("vitest_pass", sample!("vitest_pass")),
    ] {
        let s = of(name, text);
        assert!(s.failing.is_empty() && s.errors.is_empty(), "{name}: {s:?}");
    }
}
