//! Calibration: were the decider's scores right? From loop logs, the pass rate of the attempt
//! after each score, and the threshold that would have saved the most attempts without stopping
//! a run that later passed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One attempt as a loop log records it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LoggedAttempt {
    /// The loop run it belongs to.
    pub run: String,
    /// Its number in the run, from 1.
    pub attempt: u32,
    /// Whether the tests passed.
    pub passed: bool,
    /// The decider's score after it failed, 1 to 5 (absent when it passed, or when no decider
    /// answered). An external decider's fractional score counts in its nearest whole score.
    #[serde(default)]
    pub score: Option<f64>,
}

/// How often the attempt after a score passed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreRow {
    /// The score.
    pub score: u8,
    /// Failed attempts with this score that were followed by another attempt.
    pub followed: usize,
    /// How many of those next attempts passed.
    pub next_passed: usize,
    /// `next_passed / followed`, when `followed > 0`.
    pub pass_rate: Option<f64>,
}

/// What a threshold would have done over the logged runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThresholdRow {
    /// Stop when the score is below this.
    pub threshold: f64,
    /// Attempts that would not have been made.
    pub attempts_saved: usize,
    /// Runs that later passed but would have been stopped.
    pub passing_runs_stopped: usize,
}

/// The fewest loop runs a threshold is recommended from: below it, a few runs that happened
/// to pass or fail would set the threshold for every later one.
pub const MIN_RUNS: usize = 10;

/// The whole calibration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// Runs read.
    pub runs: usize,
    /// Attempts read.
    pub attempts: usize,
    /// The fewest runs a threshold is recommended from ([`MIN_RUNS`]).
    pub min_runs: usize,
    /// `best`, once `runs` reaches `min_runs`; `None` before (too few runs to recommend).
    pub recommended: Option<f64>,
    /// Per score, 1 to 5.
    pub scores: Vec<ScoreRow>,
    /// Per candidate threshold.
    pub thresholds: Vec<ThresholdRow>,
    /// The threshold that saves the most attempts without stopping a run that later passed
    /// (the lowest such one on a tie); `None` when every candidate would stop a passing run.
    pub best: Option<f64>,
}

/// The thresholds tried.
const CANDIDATES: [f64; 9] = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0];

/// The whole score (1 to 5) a score counts in, if it is one.
fn bucket(score: f64) -> Option<usize> {
    let rounded = score.round();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    (1.0..=5.0).contains(&rounded).then_some(rounded as usize)
}

/// Calibrates from logged attempts (any order; grouped by run, ordered by attempt).
pub fn calibrate(attempts: &[LoggedAttempt]) -> Calibration {
    let mut runs: BTreeMap<&str, Vec<&LoggedAttempt>> = BTreeMap::new();
    for a in attempts {
        runs.entry(a.run.as_str()).or_default().push(a);
    }
    for list in runs.values_mut() {
        list.sort_by_key(|a| a.attempt);
    }
    let mut followed = [0usize; 6];
    let mut next_passed = [0usize; 6];
    for list in runs.values() {
        for pair in list.windows(2) {
            if let Some(bucket) = pair[0].score.and_then(bucket) {
                followed[bucket] += 1;
                next_passed[bucket] += usize::from(pair[1].passed);
            }
        }
    }
    let scores = (1..=5u8)
        .map(|score| {
            let (f, p) = (
                followed[usize::from(score)],
                next_passed[usize::from(score)],
            );
            #[allow(clippy::cast_precision_loss)]
            let pass_rate = (f > 0).then(|| p as f64 / f as f64);
            ScoreRow {
                score,
                followed: f,
                next_passed: p,
                pass_rate,
            }
        })
        .collect();
    let thresholds: Vec<ThresholdRow> = CANDIDATES
        .iter()
        .map(|&threshold| {
            let mut row = ThresholdRow {
                threshold,
                attempts_saved: 0,
                passing_runs_stopped: 0,
            };
            for list in runs.values() {
                let stop_at = list
                    .iter()
                    .position(|a| !a.passed && a.score.is_some_and(|s| s < threshold));
                if let Some(i) = stop_at {
                    let after = &list[i + 1..];
                    row.attempts_saved += after.len();
                    row.passing_runs_stopped += usize::from(after.iter().any(|a| a.passed));
                }
            }
            row
        })
        .collect();
    let best = thresholds
        .iter()
        .filter(|t| t.passing_runs_stopped == 0)
        .max_by(|a, b| {
            a.attempts_saved
                .cmp(&b.attempts_saved)
                .then(b.threshold.total_cmp(&a.threshold))
        })
        .map(|t| t.threshold);
    Calibration {
        runs: runs.len(),
        attempts: attempts.len(),
        min_runs: MIN_RUNS,
        recommended: best.filter(|_| runs.len() >= MIN_RUNS),
        scores,
        thresholds,
        best,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(run: &str, attempt: u32, passed: bool, score: Option<u8>) -> LoggedAttempt {
        LoggedAttempt {
            run: run.to_owned(),
            attempt,
            passed,
            score: score.map(f64::from),
        }
    }

    #[test]
    fn the_best_threshold_saves_attempts_without_stopping_a_passing_run() {
        let log = [
            // A run stuck on the same failure: scores 2, 1, 1, 1 and never passes.
            a("stuck", 1, false, Some(3)),
            a("stuck", 2, false, Some(2)),
            a("stuck", 3, false, Some(1)),
            a("stuck", 4, false, Some(1)),
            // A run that narrows and passes after a 3.
            a("good", 1, false, Some(3)),
            a("good", 2, false, Some(4)),
            a("good", 3, true, None),
        ];
        let c = calibrate(&log);
        assert_eq!(c.runs, 2);
        let four = &c.scores[3];
        assert_eq!(
            (four.followed, four.next_passed, four.pass_rate),
            (1, 1, Some(1.0))
        );
        // Below 3 stops "stuck" after attempt 2 (saving 2) and never stops "good".
        assert_eq!(c.best, Some(2.5));
        let at_3_5 = c
            .thresholds
            .iter()
            .find(|t| (t.threshold - 3.5).abs() < 1e-9)
            .unwrap();
        assert_eq!(at_3_5.passing_runs_stopped, 1);
    }

    #[test]
    fn a_threshold_is_recommended_only_from_enough_runs() {
        let one = [a("only", 1, false, Some(2)), a("only", 2, false, Some(1))];
        let c = calibrate(&one);
        assert_eq!((c.runs, c.attempts, c.recommended), (1, 2, None));
        assert!(c.best.is_some());
        let many: Vec<LoggedAttempt> = (0..MIN_RUNS)
            .flat_map(|r| {
                let run = format!("r{r}");
                [a(&run, 1, false, Some(3)), a(&run, 2, true, None)]
            })
            .collect();
        let c = calibrate(&many);
        assert_eq!(c.runs, MIN_RUNS);
        assert_eq!(c.recommended, c.best);
        assert!(c.recommended.is_some());
    }

    #[test]
    fn no_log_no_advice() {
        let c = calibrate(&[]);
        assert_eq!(c.runs, 0);
        assert_eq!(c.best, Some(1.0));
    }
}
