//! The built-in decider: from the failed attempts so far, how likely the next one is to pass.
//!
//! Deterministic, and it never declares success: only a passing test run ends a loop. It may
//! stop a loop early; where it cannot read the test output it says so and leaves the fixed cap
//! in charge.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::parse::TestRun;
use super::signature::{Signature, signature};

/// What the next attempt should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    /// Go on the same way: it is working, or nothing says it is not.
    SameApproach,
    /// Try another way: this one keeps failing.
    ChangeApproach,
    /// Stop: another attempt is not worth its cost.
    Stop,
}

/// The decider's answer for the next attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// How likely the next attempt is to pass, 1 (hopeless) to 5 (nearly there).
    pub score: u8,
    /// What the next attempt should do.
    pub choice: Choice,
    /// Why, in words.
    pub reason: String,
    /// Whether the test output could be read; when not, the fixed cap decides.
    pub read_output: bool,
}

/// One failed attempt: the test run as parsed (`None` when no runner's output was found).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedAttempt {
    /// The parsed test run.
    pub run: Option<TestRun>,
    /// The digest of the output's normalized lines, for output no runner's summary was found
    /// in: the same unreadable output twice is still the same failure.
    pub output_digest: Option<String>,
}

impl FailedAttempt {
    /// A failed attempt from its (redacted) test output: parsed when a runner's summary is
    /// found, and otherwise known by the digest of its normalized lines.
    pub fn from_output(output: &str) -> FailedAttempt {
        let run = super::parse::parse_output(output);
        let output_digest = run.is_none().then(|| output_digest(output));
        FailedAttempt { run, output_digest }
    }

    fn signature(&self) -> Option<Signature> {
        self.run.as_ref().map(signature)
    }
}

/// 16 hex digits of FNV-1a over the normalized, non-blank lines of `output` (the last 200).
fn output_digest(output: &str) -> String {
    let lines: Vec<String> = output
        .lines()
        .map(super::signature::normalize_line)
        .filter(|l| !l.is_empty())
        .collect();
    let start = lines.len().saturating_sub(200);
    let hash = lines[start..]
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, line| {
            line.bytes().chain(std::iter::once(0xff)).fold(h, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            })
        });
    format!("{hash:016x}")
}

/// The verdict on output no runner's summary was found in: the same output repeating is the
/// same failure; otherwise the fixed cap decides.
fn unreadable(history: &[FailedAttempt]) -> Verdict {
    let latest = history.last().and_then(|a| a.output_digest.clone());
    let repeats = history
        .iter()
        .rev()
        .take_while(|a| a.run.is_none() && a.output_digest.is_some() && a.output_digest == latest)
        .count();
    let digest = latest.unwrap_or_default();
    match repeats {
        n if n >= 3 => verdict(
            1,
            Choice::Stop,
            format!(
                "the same unreadable test output (digest {digest}) {n} times in a row: another attempt would fail the same way"
            ),
            true,
        ),
        2 => verdict(
            2,
            Choice::ChangeApproach,
            format!(
                "the same unreadable test output (digest {digest}) twice in a row: this approach is not working"
            ),
            true,
        ),
        _ => verdict(
            3,
            Choice::SameApproach,
            "the test output could not be read (no known test runner's summary), so the fixed cap of attempts decides"
                .to_owned(),
            false,
        ),
    }
}

/// Scores the next attempt from every failed attempt so far, the latest last.
///
/// The same failure repeating is the strongest stop signal; failures narrowing raise the score;
/// new failures after a change lower it.
pub fn score(history: &[FailedAttempt]) -> Verdict {
    let Some(latest) = history.last() else {
        return verdict(
            3,
            Choice::SameApproach,
            "no attempt has failed yet".to_owned(),
            true,
        );
    };
    let Some(run) = &latest.run else {
        return unreadable(history);
    };
    let latest_signature = latest.signature();
    let repeats = history
        .iter()
        .rev()
        .take_while(|a| a.signature().is_some() && a.signature() == latest_signature)
        .count();
    let digest = latest_signature
        .as_ref()
        .map(Signature::digest)
        .unwrap_or_default();
    if repeats >= 3 {
        return verdict(
            1,
            Choice::Stop,
            format!(
                "the same failure (signature {digest}) {repeats} times in a row: another attempt would fail the same way"
            ),
            true,
        );
    }
    if repeats == 2 {
        return verdict(
            2,
            Choice::ChangeApproach,
            format!(
                "the same failure (signature {digest}) twice in a row: this approach is not working"
            ),
            true,
        );
    }
    if run.broken {
        return verdict(
            2,
            Choice::ChangeApproach,
            "the tests did not run at all (a build or collection error)".to_owned(),
            true,
        );
    }
    let previous = history.iter().rev().skip(1).find_map(|a| a.run.as_ref());
    let Some(previous) = previous.filter(|p| !p.broken) else {
        return verdict(
            3,
            Choice::SameApproach,
            format!(
                "first failure: {} failing, {} passing",
                run.failed, run.passed
            ),
            true,
        );
    };
    compared(run, previous)
}

/// The latest run against the one before it: narrowed, broke tests, or the same failing.
fn compared(run: &TestRun, previous: &TestRun) -> Verdict {
    let before: BTreeSet<&String> = previous.failing.iter().collect();
    let now: BTreeSet<&String> = run.failing.iter().collect();
    let broke: Vec<&&String> = now.difference(&before).collect();
    let fixed = before.difference(&now).count();
    if broke.is_empty() && run.failed < previous.failed {
        verdict(
            4,
            Choice::SameApproach,
            format!(
                "failures narrowed from {} to {}",
                previous.failed, run.failed
            ),
            true,
        )
    } else if !broke.is_empty() && fixed == 0 {
        let names: Vec<&str> = broke.iter().take(3).map(|s| s.as_str()).collect();
        verdict(
            2,
            Choice::ChangeApproach,
            format!(
                "the last change broke {} test(s) that passed before ({}) and fixed none",
                broke.len(),
                names.join(", ")
            ),
            true,
        )
    } else if !broke.is_empty() {
        verdict(
            3,
            Choice::SameApproach,
            format!(
                "the last change fixed {fixed} test(s) and broke {}",
                broke.len()
            ),
            true,
        )
    } else {
        verdict(
            3,
            Choice::SameApproach,
            format!("the same {} test(s) fail, in a different way", run.failed),
            true,
        )
    }
}

fn verdict(score: u8, choice: Choice, reason: String, read_output: bool) -> Verdict {
    Verdict {
        score,
        choice,
        reason,
        read_output,
    }
}

#[cfg(test)]
mod unreadable_tests {
    use super::*;

    #[test]
    fn the_same_unreadable_output_is_the_same_failure() {
        let same = || FailedAttempt::from_output("make: *** [all] Error 2 at 12:01:02\n");
        let history = vec![same()];
        assert!(!score(&history).read_output);
        let history = vec![
            same(),
            FailedAttempt::from_output("make: *** [all] Error 2 at 12:04:55\n"),
        ];
        let twice = score(&history);
        assert_eq!(
            (twice.score, twice.choice, twice.read_output),
            (2, Choice::ChangeApproach, true)
        );
        let thrice = score(&[same(), same(), same()]);
        assert_eq!((thrice.score, thrice.choice), (1, Choice::Stop));
        let other = score(&[same(), FailedAttempt::from_output("ld: symbol not found\n")]);
        assert!(!other.read_output, "{other:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::parse::Runner;

    fn run(failing: &[&str], passed: u32, error: &str) -> FailedAttempt {
        FailedAttempt {
            output_digest: None,
            run: Some(TestRun {
                runner: Runner::Plain,
                passed,
                failed: u32::try_from(failing.len()).unwrap(),
                failing: failing.iter().map(|s| (*s).to_owned()).collect(),
                errors: vec![error.to_owned()],
                broken: false,
            }),
        }
    }

    #[test]
    fn the_same_failure_repeating_stops_the_loop() {
        let a = run(
            &["t::a"],
            9,
            "assertion failed: left == right at src/lib.rs:10:5",
        );
        let b = run(
            &["t::a"],
            9,
            "assertion failed: left == right at src/lib.rs:12:9",
        );
        let v = score(&[a.clone(), b.clone()]);
        assert_eq!((v.score, v.choice), (2, Choice::ChangeApproach));
        let v = score(&[a.clone(), b, a]);
        assert_eq!((v.score, v.choice), (1, Choice::Stop));
        assert!(v.reason.contains("3 times in a row"), "{}", v.reason);
    }

    #[test]
    fn narrowing_raises_and_breaking_lowers() {
        let wide = run(&["t::a", "t::b", "t::c"], 7, "x");
        let narrow = run(&["t::a"], 9, "y");
        assert_eq!(score(&[wide.clone(), narrow.clone()]).score, 4);
        let broke = run(&["t::a", "t::d"], 8, "z");
        let v = score(&[narrow, broke]);
        assert_eq!((v.score, v.choice), (2, Choice::ChangeApproach));
        assert!(v.reason.contains("t::d"), "{}", v.reason);
    }

    #[test]
    fn unreadable_output_leaves_the_cap_in_charge() {
        let v = score(&[FailedAttempt::from_output(
            "Segmentation fault (core dumped)\n",
        )]);
        assert_eq!((v.score, v.read_output), (3, false));
        assert!(v.reason.contains("fixed cap"), "{}", v.reason);
    }

    #[test]
    fn failing_differently_each_time_goes_on() {
        let history: Vec<FailedAttempt> = (0..4)
            .map(|i| {
                run(
                    &["t::a"],
                    9,
                    &format!("panic: case {}", ["a", "b", "c", "d"][i]),
                )
            })
            .collect();
        let v = score(&history);
        assert_eq!((v.score, v.choice), (3, Choice::SameApproach));
    }
}
