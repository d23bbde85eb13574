//! Retry limits learned from outcomes: the call journal read back, per tool and class, as how
//! often the k-th retry of a failed call recovered, and the limit and backoff that follow.
//!
//! A task's failures of one tool and one class, each within [`EPISODE_GAP`] of the one before,
//! make an *episode*: its first failure is the call, each later one a retry that failed, and a
//! success of the task (`POST /v1/outcomes` with `task`) before anything else is the retry
//! that recovered. A failure of another tool or class, a reset, or a gap ends an episode
//! without a recovery; an episode whose last retry was never followed by anything is not
//! counted for that retry (nobody knows whether it was tried).

use std::collections::{BTreeMap, HashMap};

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::class::Class;
use crate::recover::journal::{Event, JournalEntry};

/// Failures further apart than this are two episodes, not a retry.
pub const EPISODE_GAP: SignedDuration = SignedDuration::from_hours(1);

/// The fewest failures of a tool and class a recommendation is made from.
pub const MIN_FAILURES: u64 = 30;

/// A retry that recovers less often than this is not worth making.
pub const WORTH_RETRYING: f64 = 0.10;

/// The fewest observed tries of a retry for its rate to count toward a limit.
const MIN_TRIES: u64 = 5;

/// The calibration of every tool and class the journal saw failing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallCalibration {
    /// Failures read in all.
    pub failures: u64,
    /// Task successes read in all.
    pub successes: u64,
    /// Per tool and class, most failures first.
    pub rows: Vec<ToolClassCalibration>,
}

/// One tool and class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolClassCalibration {
    /// The tool (`-` when failures named none).
    pub tool: String,
    /// The class.
    pub class: Class,
    /// Failures of this tool and class.
    pub failures: u64,
    /// Episodes: first failures.
    pub episodes: u64,
    /// Each retry, in order: how often it was tried and how often it recovered.
    pub retries: Vec<RetryOutcome>,
    /// The limit and backoff the outcomes recommend; `None` from too few failures or tries.
    pub recommended: Option<Recommendation>,
    /// Why there is no recommendation, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The k-th retry of an episode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetryOutcome {
    /// Which retry: 1 is the first call after the first failure.
    pub retry: u32,
    /// How often it was tried (followed by a failure or a success).
    pub tried: u64,
    /// How often it recovered (followed by the task's success).
    pub recovered: u64,
    /// `recovered / tried`.
    pub rate: f64,
}

/// What the outcomes recommend for a tool and class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recommendation {
    /// Retries worth making: each of the first this many recovered at least
    /// [`WORTH_RETRYING`] of the times it was tried (0: do not retry this class here).
    pub max_attempts: u32,
    /// The median wait before a retry that recovered, in milliseconds, as a backoff base;
    /// `None` when no retry recovered.
    pub backoff_base_ms: Option<u64>,
    /// The 90th percentile of those waits, as a backoff cap.
    pub backoff_max_ms: Option<u64>,
}

/// An episode in progress.
struct Episode {
    tool: String,
    class: Class,
    failures: u32,
    last: Timestamp,
}

/// What is being counted for one tool and class.
#[derive(Default)]
struct Tally {
    failures: u64,
    episodes: u64,
    /// Per retry (index 0 is the first retry): tried, recovered.
    retries: Vec<(u64, u64)>,
    /// Waits before a retry that recovered, in milliseconds.
    waits: Vec<u64>,
}

impl Tally {
    fn retry(&mut self, number: u32, recovered: bool) {
        let at = usize::try_from(number.saturating_sub(1)).unwrap_or(usize::MAX);
        if self.retries.len() <= at {
            self.retries.resize(at + 1, (0, 0));
        }
        self.retries[at].0 += 1;
        self.retries[at].1 += u64::from(recovered);
    }
}

/// Reads the journal's entries (in journal order) into the calibration.
pub fn calibrate(entries: &[JournalEntry]) -> CallCalibration {
    let mut open: HashMap<&str, Episode> = HashMap::new();
    let mut tallies: BTreeMap<(String, Class), Tally> = BTreeMap::new();
    let (mut failures, mut successes) = (0u64, 0u64);
    for entry in entries {
        let Ok(event) = Event::from_stored(&entry.event) else {
            continue;
        };
        let task = entry.event.subject.as_str();
        let at = entry.event.at;
        match event {
            Event::Failure(failure) => {
                failures += 1;
                let tool = failure
                    .context
                    .tool
                    .clone()
                    .unwrap_or_else(|| "-".to_owned());
                let class = failure.classification.class;
                let tally = tallies.entry((tool.clone(), class)).or_default();
                tally.failures += 1;
                let goes_on = open.get(task).is_some_and(|e| {
                    e.tool == tool && e.class == class && at.duration_since(e.last) <= EPISODE_GAP
                });
                if goes_on && let Some(episode) = open.get_mut(task) {
                    tally.retry(episode.failures, false);
                    episode.failures += 1;
                    episode.last = at;
                } else {
                    tally.episodes += 1;
                    open.insert(
                        task,
                        Episode {
                            tool,
                            class,
                            failures: 1,
                            last: at,
                        },
                    );
                }
            }
            Event::TaskSuccess {} => {
                successes += 1;
                if let Some(episode) = open.remove(task)
                    && at.duration_since(episode.last) <= EPISODE_GAP
                    && let Some(tally) = tallies.get_mut(&(episode.tool, episode.class))
                {
                    tally.retry(episode.failures, true);
                    let wait = at.duration_since(episode.last).as_millis();
                    tally.waits.push(u64::try_from(wait).unwrap_or(0));
                }
            }
            Event::TaskReset { .. } | Event::TaskResetAll { .. } => {
                open.remove(task);
            }
            _ => {}
        }
    }
    let mut rows: Vec<ToolClassCalibration> = tallies
        .into_iter()
        .map(|((tool, class), tally)| row(tool, class, tally))
        .collect();
    rows.sort_by_key(|row| std::cmp::Reverse(row.failures));
    CallCalibration {
        failures,
        successes,
        rows,
    }
}

#[allow(clippy::cast_precision_loss)] // counts of journal events, far below 2^52
fn row(tool: String, class: Class, mut tally: Tally) -> ToolClassCalibration {
    let retries: Vec<RetryOutcome> = tally
        .retries
        .iter()
        .enumerate()
        .map(|(i, (tried, recovered))| RetryOutcome {
            retry: u32::try_from(i + 1).unwrap_or(u32::MAX),
            tried: *tried,
            recovered: *recovered,
            rate: if *tried == 0 {
                0.0
            } else {
                *recovered as f64 / *tried as f64
            },
        })
        .collect();
    let (recommended, note) = if tally.failures < MIN_FAILURES {
        (
            None,
            Some(format!(
                "{} failures: fewer than {MIN_FAILURES}, too few to recommend a limit",
                tally.failures
            )),
        )
    } else if retries.first().is_none_or(|r| r.tried < MIN_TRIES) {
        (
            None,
            Some(format!(
                "fewer than {MIN_TRIES} first retries were seen (agents stopped or moved on after the first failure)"
            )),
        )
    } else {
        let worth = retries
            .iter()
            .take_while(|r| r.tried >= MIN_TRIES && r.rate >= WORTH_RETRYING)
            .count();
        tally.waits.sort_unstable();
        let percentile = |p: usize| {
            (!tally.waits.is_empty()).then(|| tally.waits[(tally.waits.len() - 1) * p / 100])
        };
        (
            Some(Recommendation {
                max_attempts: u32::try_from(worth).unwrap_or(u32::MAX),
                backoff_base_ms: percentile(50),
                backoff_max_ms: percentile(90),
            }),
            None,
        )
    };
    ToolClassCalibration {
        tool,
        class,
        failures: tally.failures,
        episodes: tally.episodes,
        retries,
        recommended,
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Classification;
    use crate::recover::Context;
    use crate::recover::journal::redacted;

    struct Journal {
        entries: Vec<JournalEntry>,
        at: Timestamp,
    }

    impl Journal {
        fn new() -> Journal {
            Journal {
                entries: Vec::new(),
                at: Timestamp::from_second(1_767_225_600).unwrap(),
            }
        }

        fn push(&mut self, event: &Event, subject: &str, after_seconds: i64) {
            self.at = self
                .at
                .checked_add(SignedDuration::from_secs(after_seconds))
                .unwrap();
            let id = i64::try_from(self.entries.len()).unwrap() + 1;
            self.entries.push(JournalEntry {
                id,
                event: event.to_stored(self.at, subject.to_owned()),
            });
        }

        fn fail(&mut self, task: &str, tool: &str, class: Class, after_seconds: i64) {
            let classification = Classification {
                class,
                retryable: class.default_retryable(),
                fallback_allowed: false,
                rule: None,
                evidence: Vec::new(),
                retry_after_ms: None,
                reason: "test".to_owned(),
            };
            let context = Context {
                tool: Some(tool.to_owned()),
                ..Context::default()
            };
            let event = Event::Failure(Box::new(redacted(classification, context, None)));
            self.push(&event, task, after_seconds);
        }

        fn succeed(&mut self, task: &str, after_seconds: i64) {
            self.push(&Event::TaskSuccess {}, task, after_seconds);
        }
    }

    #[test]
    fn the_kth_retry_that_recovered_is_counted_for_its_tool_and_class() {
        let mut j = Journal::new();
        // 20 tasks recover on the first retry after 2 s, 10 on the second after 4 s more.
        for t in 0..20 {
            let task = format!("a{t}");
            j.fail(&task, "search", Class::Transient, 1);
            j.succeed(&task, 2);
        }
        for t in 0..10 {
            let task = format!("b{t}");
            j.fail(&task, "search", Class::Transient, 1);
            j.fail(&task, "search", Class::Transient, 2);
            j.succeed(&task, 4);
        }
        let c = calibrate(&j.entries);
        assert_eq!((c.failures, c.successes), (40, 30));
        let row = &c.rows[0];
        assert_eq!((row.tool.as_str(), row.class), ("search", Class::Transient));
        assert_eq!((row.failures, row.episodes), (40, 30));
        assert_eq!(
            row.retries
                .iter()
                .map(|r| (r.tried, r.recovered))
                .collect::<Vec<_>>(),
            [(30, 20), (10, 10)]
        );
        let recommended = row.recommended.as_ref().unwrap();
        assert_eq!(recommended.max_attempts, 2);
        assert_eq!(recommended.backoff_base_ms, Some(2000));
        assert_eq!(recommended.backoff_max_ms, Some(4000));
    }

    #[test]
    fn a_retry_that_never_recovers_is_not_recommended_and_few_failures_recommend_nothing() {
        let mut j = Journal::new();
        for t in 0..15 {
            let task = format!("p{t}");
            j.fail(&task, "payments", Class::Transient, 1);
            j.fail(&task, "payments", Class::Transient, 1);
            j.fail(&task, "payments", Class::Transient, 1);
        }
        for t in 0..4 {
            let task = format!("r{t}");
            j.fail(&task, "rare", Class::RateLimited, 1);
            j.succeed(&task, 1);
        }
        let c = calibrate(&j.entries);
        let payments = c.rows.iter().find(|r| r.tool == "payments").unwrap();
        assert_eq!(payments.failures, 45);
        assert_eq!(payments.recommended.as_ref().unwrap().max_attempts, 0);
        assert_eq!(payments.recommended.as_ref().unwrap().backoff_base_ms, None);
        let rare = c.rows.iter().find(|r| r.tool == "rare").unwrap();
        assert_eq!(rare.recommended, None);
        assert!(
            rare.note.as_deref().unwrap().contains("fewer than 30"),
            "{rare:?}"
        );
    }

    #[test]
    fn another_tool_a_reset_or_a_gap_ends_an_episode_without_a_recovery() {
        let mut j = Journal::new();
        j.fail("t", "search", Class::Transient, 1);
        j.fail("t", "search-b", Class::Transient, 1); // a fallback: search's episode ends
        j.succeed("t", 1); // search-b's first retry recovered
        j.fail("u", "search", Class::Transient, 1);
        j.succeed("u", 7200); // two hours later: not this episode's recovery
        let c = calibrate(&j.entries);
        let search = c.rows.iter().find(|r| r.tool == "search").unwrap();
        assert_eq!(search.episodes, 2);
        assert!(search.retries.is_empty(), "{search:?}");
        let b = c.rows.iter().find(|r| r.tool == "search-b").unwrap();
        assert_eq!((b.retries[0].tried, b.retries[0].recovered), (1, 1));
    }
}
