//! Notifications: the events that should reach a person (a case held, an escalation, a request
//! refused at the attempt limit, a dispatch refused), as the payload a receiver is sent, and
//! the schedule their delivery follows.
//!
//! The core only builds data: a store enqueues each [`Notice`] in the transaction that records
//! its event, and the service's worker delivers it, asking [`after_failure`] when to try again.
//!
//! - `notice`: the payload, its stable id and the builders, one per event source
//! - `slack`: the payload as a Slack incoming webhook takes it
//! - `schedule`: the delivery policy (backoff, breaker, limits) and the retry decision

use serde::{Deserialize, Serialize};

mod notice;
mod schedule;
mod slack;

pub use notice::{CaseRef, Notice, TaskFailure};
pub use schedule::{DeliveryPolicy, Retry, after_failure};
pub use slack::slack_body;

/// The kinds of events a `[[notify]]` entry may subscribe to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum NotifyKind {
    /// An agent was told to stop and hand a case (or a task) to a person.
    Escalation,
    /// A review item was opened: a held case, or a task's escalation, waits for a person.
    ReviewOpened,
    /// A request on a case was refused `attempt_limit_reached`.
    AttemptLimit,
    /// A dispatch recipient was refused `case_terminal`, `case_in_review` or
    /// `dispatch_budget_spent`.
    DispatchRefused,
}

impl NotifyKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [NotifyKind; 4] = [
        NotifyKind::Escalation,
        NotifyKind::ReviewOpened,
        NotifyKind::AttemptLimit,
        NotifyKind::DispatchRefused,
    ];

    /// Its wire name (`escalation`, `review_opened`, `attempt_limit`, `dispatch_refused`).
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyKind::Escalation => "escalation",
            NotifyKind::ReviewOpened => "review_opened",
            NotifyKind::AttemptLimit => "attempt_limit",
            NotifyKind::DispatchRefused => "dispatch_refused",
        }
    }

    /// The kind a wire name names, if any.
    pub fn parse(name: &str) -> Option<NotifyKind> {
        NotifyKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// Where one notification to one target stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum NotifyStatus {
    /// Not delivered yet: due at its next attempt time.
    Pending,
    /// A receiver answered 2xx.
    Delivered,
    /// Given up: too many attempts, too old, or its target was removed.
    Failed,
}

impl NotifyStatus {
    /// Its wire name (`pending`, `delivered`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyStatus::Pending => "pending",
            NotifyStatus::Delivered => "delivered",
            NotifyStatus::Failed => "failed",
        }
    }

    /// The status a wire name names, if any.
    pub fn parse(name: &str) -> Option<NotifyStatus> {
        [
            NotifyStatus::Pending,
            NotifyStatus::Delivered,
            NotifyStatus::Failed,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// The shape a target is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyFormat {
    /// The [`Notice`] itself, as JSON (the default).
    #[default]
    Backstop,
    /// `{"text", "blocks"}`, as a Slack incoming webhook takes it.
    Slack,
}

impl NotifyFormat {
    /// Its config name (`backstop`, `slack`).
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyFormat::Backstop => "backstop",
            NotifyFormat::Slack => "slack",
        }
    }

    /// The format a config name names, if any.
    pub fn parse(name: &str) -> Option<NotifyFormat> {
        [NotifyFormat::Backstop, NotifyFormat::Slack]
            .into_iter()
            .find(|f| f.as_str() == name)
    }

    /// The body a target of this format is sent for `notice`: the same bytes on every retry.
    pub fn body(self, notice: &Notice) -> String {
        match self {
            NotifyFormat::Backstop => serde_json::to_string(notice).unwrap_or_default(),
            NotifyFormat::Slack => slack_body(notice).to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_and_match_serde() {
        for kind in NotifyKind::ALL {
            assert_eq!(NotifyKind::parse(kind.as_str()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.as_str())
            );
        }
        for status in [
            NotifyStatus::Pending,
            NotifyStatus::Delivered,
            NotifyStatus::Failed,
        ] {
            assert_eq!(NotifyStatus::parse(status.as_str()), Some(status));
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::json!(status.as_str())
            );
        }
        assert_eq!(NotifyKind::parse("escalations"), None);
        assert_eq!(NotifyFormat::parse("slack"), Some(NotifyFormat::Slack));
        assert_eq!(NotifyFormat::parse("teams"), None);
    }
}
