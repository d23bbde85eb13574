//! Whether the loop goes on after a failed attempt, and how: the attempt count and the
//! decider's counsel decide, in a fixed order.

use serde::Serialize;

use super::decider::Choice;

/// What the decider said about the failed attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counsel {
    /// The expected score of another attempt, 1 to 5 (none when the decider gave none).
    pub score: Option<f64>,
    /// What the next attempt should do (none when the decider gave nothing).
    pub choice: Option<Choice>,
    /// Whether the counsel may stop the loop: the test output was read, the decider answered.
    pub binding: bool,
    /// Whether an external decider declined to judge.
    pub abstained: bool,
}

/// Why the loop stops after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// That was the last attempt allowed.
    BudgetSpent,
    /// The external decider abstained: a person decides.
    Abstained,
    /// The decider chose to stop.
    DeciderStop,
    /// The expected score fell below the threshold.
    BelowThreshold,
}

/// How the next attempt goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approach {
    /// As before.
    Same,
    /// Another way.
    Change,
}

impl Approach {
    /// The name the attempt command reads (`BACKSTOP_STRATEGY`).
    pub fn as_str(self) -> &'static str {
        match self {
            Approach::Same => "same_approach",
            Approach::Change => "change_approach",
        }
    }
}

/// After a failed attempt: stop, or go again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// The loop ends.
    Stop(Stop),
    /// Another attempt, this way.
    Again(Approach),
}

/// Decides after failed attempt `attempt` of `max_attempts`: the last attempt ends the loop;
/// then an abstention; then, only when the counsel is binding, a choice to stop or a score
/// below `threshold`; else another attempt, changing approach when the counsel says so.
pub fn after_failure(
    attempt: u32,
    max_attempts: u32,
    counsel: &Counsel,
    threshold: f64,
) -> AfterFailure {
    if attempt >= max_attempts {
        return AfterFailure::Stop(Stop::BudgetSpent);
    }
    if counsel.abstained {
        return AfterFailure::Stop(Stop::Abstained);
    }
    if counsel.binding && counsel.choice == Some(Choice::Stop) {
        return AfterFailure::Stop(Stop::DeciderStop);
    }
    if counsel.binding && counsel.score.is_some_and(|s| s < threshold) {
        return AfterFailure::Stop(Stop::BelowThreshold);
    }
    AfterFailure::Again(match counsel.choice {
        Some(Choice::ChangeApproach) => Approach::Change,
        _ => Approach::Same,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counsel(score: f64, choice: Choice, binding: bool) -> Counsel {
        Counsel {
            score: Some(score),
            choice: Some(choice),
            binding,
            abstained: false,
        }
    }

    #[test]
    fn the_last_attempt_ends_the_loop_whatever_the_counsel() {
        let hopeful = counsel(5.0, Choice::SameApproach, true);
        assert_eq!(
            after_failure(5, 5, &hopeful, 2.0),
            AfterFailure::Stop(Stop::BudgetSpent)
        );
    }

    #[test]
    fn binding_counsel_stops_on_a_stop_or_a_low_score() {
        let stop = counsel(1.0, Choice::Stop, true);
        assert_eq!(
            after_failure(2, 5, &stop, 0.5),
            AfterFailure::Stop(Stop::DeciderStop)
        );
        let low = counsel(1.5, Choice::SameApproach, true);
        assert_eq!(
            after_failure(2, 5, &low, 2.0),
            AfterFailure::Stop(Stop::BelowThreshold)
        );
    }

    #[test]
    fn counsel_that_is_not_binding_never_stops_the_loop() {
        let unread = counsel(1.0, Choice::Stop, false);
        assert_eq!(
            after_failure(2, 5, &unread, 2.0),
            AfterFailure::Again(Approach::Same)
        );
    }

    #[test]
    fn an_abstention_stops_and_a_change_is_passed_on() {
        let abstained = Counsel {
            score: None,
            choice: None,
            binding: false,
            abstained: true,
        };
        assert_eq!(
            after_failure(1, 5, &abstained, 2.0),
            AfterFailure::Stop(Stop::Abstained)
        );
        let change = counsel(2.0, Choice::ChangeApproach, true);
        assert_eq!(
            after_failure(2, 5, &change, 2.0),
            AfterFailure::Again(Approach::Change)
        );
    }
}
