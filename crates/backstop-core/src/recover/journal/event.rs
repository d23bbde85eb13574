//! The call journal's events: one variant of [`Event`] per kind, each with its body's fields,
//! so a new kind is a compile error until every match on events handles it.
//!
//! The store keeps an event as text it never reads: a kind and a body of JSON ([`CallEvent`]).
//! The two meet only here. The enum is tagged adjacently, so serialized whole its tag is the
//! stored kind and its content the stored body, byte for byte what the service wrote before the
//! enum: ledgers written then replay (the tests hold every kind's stored form).

use std::borrow::Cow;

use super::{CallEvent, TaskEscalation};
use crate::Class;
use crate::classify::Classification;
use crate::recover::Context;
use jiff::Timestamp;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// What a call-journal event says: its kind (the variant) and its body (the fields). When it
/// happened and its subject, the task or tool it concerns, are the [`CallEvent`]'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "body", rename_all = "snake_case")]
pub enum Event {
    /// `failure`: a task's failed call, from `POST /v1/recover` (subject: the task). Applied, it
    /// is counted and gives the task's next step, or it is an idempotent resend.
    Failure(Box<FailureEvent>),
    /// `success`: a tool's call worked, from `POST /v1/outcomes` (subject: the tool): its
    /// breaker and budget.
    Success {
        /// Always `transient`, the route's default class: written since the first version,
        /// never read.
        #[serde(default = "transient", deserialize_with = "class_or_transient")]
        class: Class,
        /// The caller that reported it: a tool it names first counts against its quota
        /// (absent in events journaled before quotas: no caller's).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        caller: String,
    },
    /// `tool_failure`: a tool's call failed, from `POST /v1/outcomes` (subject: the tool): its
    /// breaker and budget.
    ToolFailure {
        /// The failure's class.
        #[serde(default = "transient", deserialize_with = "class_or_transient")]
        class: Class,
        /// The caller that reported it (see `success`).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        caller: String,
    },
    /// `grant`: an operator grants the task one retry of its next unclassified failure, from
    /// `POST /v1/grants` (subject: the task).
    Grant {
        /// The operator.
        by: String,
    },
    /// `task_success`: a task's call worked, from `POST /v1/outcomes` with `task` (subject: the
    /// task): its counters start again; a policy denial's stop stays.
    TaskSuccess {},
    /// `task_reset`: an agent resets its own task, from `POST /v1/tasks/{task}/reset`
    /// (subject: the task): its counters start again; a policy denial's stop stays.
    TaskReset {
        /// The agent.
        by: String,
    },
    /// `task_reset_all`: an operator resets a task, from `POST /v1/tasks/{task}/reset`,
    /// `backstop task reset` or a task's review item resolved `retry` (subject: the task): its
    /// counters start again and a policy denial's stop is lifted.
    TaskResetAll {
        /// The operator (`cli` from `backstop task reset`).
        by: String,
        /// The review item whose `retry` reset the task.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        review: Option<i64>,
    },
    /// `strategies`: the strategy files a server uses, journaled at its start and after a good
    /// reload (no subject): from here on in the journal, every process uses them.
    Strategies {
        /// `(origin, text)` of each file, over the built-in strategies.
        files: Vec<(String, String)>,
    },
}

/// A task's failure, as journaled: its classification and context, with secrets taken out of
/// their free text, and the idempotency key it came with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureEvent {
    /// The failure's classification (evidence values redacted).
    pub classification: Classification,
    /// The call's context (its error text redacted).
    pub context: Context,
    /// The caller's `Idempotency-Key` and the request's hash, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency: Option<IdempotencyMark>,
}

impl FailureEvent {
    /// What a review item for this failure's escalation carries.
    pub fn escalation(&self, task: &str, to: &str, why: &str) -> TaskEscalation {
        TaskEscalation {
            task: task.to_owned(),
            tool: self.context.tool.clone(),
            class: self.classification.class.as_str().to_owned(),
            evidence: serde_json::to_value(&self.classification.evidence).unwrap_or(Value::Null),
            to: to.to_owned(),
            why: why.to_owned(),
        }
    }
}

/// An idempotency key (scoped to its caller) and the hash of the request that first used it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct IdempotencyMark {
    /// `caller` and the key, as [`crate::recover::recovery::task_key`] joins them.
    pub key: String,
    /// The SHA-256 of the request body, in hex.
    pub hash: String,
}

/// What is journaled of a failure, with secrets taken out of its free text.
pub fn redacted(
    mut classification: Classification,
    mut context: Context,
    idempotency: Option<IdempotencyMark>,
) -> FailureEvent {
    use crate::redact::redact;
    for evidence in &mut classification.evidence {
        evidence.value = redact(&evidence.value).0;
    }
    context.error = context.error.map(|e| redact(&e).0);
    FailureEvent {
        classification,
        context,
        idempotency,
    }
}

/// An event as the store keeps it: its kind, and its body's JSON verbatim.
#[derive(Serialize, Deserialize)]
struct Stored<'a> {
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    body: &'a RawValue,
}

impl Event {
    /// The event as the store journals it: at `at`, about `subject`.
    pub fn to_stored(&self, at: Timestamp, subject: String) -> CallEvent {
        // Never fails: every key is a string. Were it to, the event is journaled with no kind
        // and every process skips it.
        let (kind, body) = self.kind_and_body().unwrap_or_default();
        CallEvent {
            at,
            kind,
            subject,
            body,
        }
    }

    /// The event a stored one says.
    ///
    /// # Errors
    /// Its kind is none this build knows, or its body is not that kind's.
    pub fn from_stored(stored: &CallEvent) -> serde_json::Result<Event> {
        let body = serde_json::from_str(&stored.body)?;
        let kind = Cow::Borrowed(stored.kind.as_str());
        let tagged = serde_json::to_string(&Stored { kind, body })?;
        serde_json::from_str(&tagged)
    }

    fn kind_and_body(&self) -> serde_json::Result<(String, String)> {
        let tagged = serde_json::to_string(self)?;
        let stored: Stored<'_> = serde_json::from_str(&tagged)?;
        Ok((stored.kind.into_owned(), stored.body.get().to_owned()))
    }
}

fn transient() -> Class {
    Class::Transient
}

/// A tool outcome's class; one this build does not know (a newer server on the ledger may know
/// more) counts as `transient`, as it always has.
fn class_or_transient<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Class, D::Error> {
    let value = Value::deserialize(deserializer)?;
    Ok(Class::deserialize(value).unwrap_or(Class::Transient))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Every kind as the service stored it before the enum, `(kind, subject, body)` in journal
    /// order: read from the ledger of a server (and `backstop task reset`, `backstop review
    /// resolve`) that took each route that journals. The strategies file is cut short.
    pub(in crate::recover::journal) const STORED: [(&str, &str, &str); 17] = [
        (
            "strategies",
            "",
            r#"{"files":[["/work/main/examples/strategies.toml","[limits]\ntask_max_attempts = 8       # fewer attempts per task across all classes (built in: 12)\nescalate_to = \"the #agents-oncall channel\"\n"]]}"#,
        ),
        (
            "failure",
            "research-agent\u{1f}t1",
            r#"{"classification":{"class":"transient","retryable":true,"fallback_allowed":true,"rule":"http.503","evidence":[{"field":"http_status","value":"503","rule":"http.503"}],"retry_after_ms":null,"reason":"The server cannot handle the request right now (overload or maintenance); retry after the hint or with backoff."},"context":{"tool":"search","operation":"query","error":"Bearer [REDACTED:bearer]","request":null},"idempotency":{"key":"research-agent\u001fk-1","hash":"8df8553299d5244399ff542fba167530a63d3cfc7de09e8ca2527d075020dd22"}}"#,
        ),
        (
            "failure",
            "research-agent\u{1f}t2",
            r#"{"classification":{"class":"policy_denied","retryable":false,"fallback_allowed":false,"rule":"policy.sandbox","evidence":[{"field":"message","value":"blocked by sandbox policy","rule":"policy.sandbox"}],"retry_after_ms":null,"reason":"The sandbox the agent runs in forbids this operation; stop and report it, do not look for a way around the sandbox."},"context":{"tool":"shell","operation":null,"error":"blocked by sandbox policy","request":"fallback_tool"}}"#,
        ),
        (
            "failure",
            "research-agent\u{1f}t2",
            r#"{"classification":{"class":"policy_denied","retryable":false,"fallback_allowed":false,"rule":"policy.sandbox","evidence":[{"field":"message","value":"blocked by sandbox policy","rule":"policy.sandbox"}],"retry_after_ms":null,"reason":"The sandbox the agent runs in forbids this operation; stop and report it, do not look for a way around the sandbox."},"context":{"tool":null,"operation":null,"error":"blocked by sandbox policy","request":null}}"#,
        ),
        ("success", "search", r#"{"class":"transient"}"#),
        ("task_success", "research-agent\u{1f}t1", "{}"),
        ("tool_failure", "search", r#"{"class":"rate_limited"}"#),
        ("tool_failure", "search", r#"{"class":"transient"}"#),
        ("grant", "research-agent\u{1f}t1", r#"{"by":"dana"}"#),
        (
            "task_reset",
            "research-agent\u{1f}t1",
            r#"{"by":"research-agent"}"#,
        ),
        (
            "task_reset_all",
            "research-agent\u{1f}t1",
            r#"{"by":"dana"}"#,
        ),
        (
            "failure",
            "research-agent\u{1f}t3",
            r#"{"classification":{"class":"auth","retryable":false,"fallback_allowed":false,"rule":"http.401","evidence":[{"field":"http_status","value":"401","rule":"http.401"}],"retry_after_ms":null,"reason":"The request has no valid credentials (missing, wrong or expired); a person must supply working ones."},"context":{"tool":"crm","operation":null,"error":"HTTP 401","request":null}}"#,
        ),
        (
            "task_reset_all",
            "research-agent\u{1f}t3",
            r#"{"by":"dana","review":1}"#,
        ),
        (
            "failure",
            "research-agent\u{1f}t4",
            r#"{"classification":{"class":"auth","retryable":false,"fallback_allowed":false,"rule":"http.401","evidence":[{"field":"http_status","value":"401","rule":"http.401"}],"retry_after_ms":null,"reason":"The request has no valid credentials (missing, wrong or expired); a person must supply working ones."},"context":{"tool":"crm","operation":null,"error":"HTTP 401","request":null}}"#,
        ),
        (
            "task_reset_all",
            "research-agent\u{1f}t4",
            r#"{"by":"ops-cli","review":2}"#,
        ),
        (
            "task_reset_all",
            "research-agent\u{1f}t2",
            r#"{"by":"cli"}"#,
        ),
        (
            "failure",
            "research-agent\u{1f}t5",
            r#"{"classification":{"class":"rate_limited","retryable":true,"fallback_allowed":true,"rule":"openai.rate_limit_exceeded","evidence":[{"field":"message","extracted":"error_code","value":"rate_limit_exceeded","rule":"openai.rate_limit_exceeded","by":"error_object"},{"field":"headers.retry-after","value":"20","note":"retry hint: 20000 ms"}],"retry_after_ms":20000,"reason":"Requests or tokens per minute went over the account's limit; wait for the window and retry."},"context":{"tool":"llm","operation":null,"error":"{\"error\": {\"code\": \"rate_limit_exceeded\", \"message\": \"slow down\"}}","request":"wait"}}"#,
        ),
    ];

    /// The `n`th stored event, `n` seconds into a day.
    pub(in crate::recover::journal) fn stored(n: usize) -> CallEvent {
        let (kind, subject, body) = STORED[n];
        let start: Timestamp = "2026-12-02T08:00:00Z".parse().unwrap();
        CallEvent {
            at: start + jiff::SignedDuration::from_secs(i64::try_from(n).unwrap()),
            kind: kind.to_owned(),
            subject: subject.to_owned(),
            body: body.to_owned(),
        }
    }

    /// Which kind an event is, as a number: a new kind fails to compile here until it has one,
    /// and fails [`every_kind_is_stored_and_documented`] until it has a stored form.
    fn variant(event: &Event) -> usize {
        match event {
            Event::Failure(_) => 0,
            Event::Success { .. } => 1,
            Event::ToolFailure { .. } => 2,
            Event::Grant { .. } => 3,
            Event::TaskSuccess {} => 4,
            Event::TaskReset { .. } => 5,
            Event::TaskResetAll { .. } => 6,
            Event::Strategies { .. } => 7,
        }
    }

    /// Variants in all: one more than [`variant`]'s largest.
    const VARIANTS: usize = 8;

    #[test]
    fn every_stored_kind_reads_and_is_written_back_byte_for_byte() {
        for n in 0..STORED.len() {
            let stored = stored(n);
            let event = Event::from_stored(&stored)
                .unwrap_or_else(|e| panic!("{} does not read: {e}", stored.kind));
            let written = event.to_stored(stored.at, stored.subject.clone());
            assert_eq!(
                written, stored,
                "{} is not written back as it was",
                stored.kind
            );
            // The kind is the variant's: the same event read again is the same event.
            assert_eq!(Event::from_stored(&written).unwrap(), event);
        }
    }

    #[test]
    fn each_writer_writes_the_stored_form() {
        let at = Timestamp::UNIX_EPOCH;
        let written = |event: Event| {
            let stored = event.to_stored(at, String::new());
            (stored.kind, stored.body)
        };
        let pair = |kind: &str, body: &str| (kind.to_owned(), body.to_owned());
        let (class, caller) = (Class::Transient, String::new());
        assert_eq!(
            written(Event::Success { class, caller }),
            pair("success", r#"{"class":"transient"}"#)
        );
        let (class, caller) = (Class::RateLimited, String::new());
        assert_eq!(
            written(Event::ToolFailure { class, caller }),
            pair("tool_failure", r#"{"class":"rate_limited"}"#)
        );
        let (class, caller) = (Class::RateLimited, "research-agent".to_owned());
        assert_eq!(
            written(Event::ToolFailure { class, caller }),
            pair(
                "tool_failure",
                r#"{"class":"rate_limited","caller":"research-agent"}"#
            )
        );
        assert_eq!(written(Event::TaskSuccess {}), pair("task_success", "{}"));
        let by = "dana".to_owned();
        assert_eq!(
            written(Event::Grant { by: by.clone() }),
            pair("grant", r#"{"by":"dana"}"#)
        );
        assert_eq!(
            written(Event::TaskReset { by: by.clone() }),
            pair("task_reset", r#"{"by":"dana"}"#)
        );
        assert_eq!(
            written(Event::TaskResetAll {
                by: by.clone(),
                review: None
            }),
            pair("task_reset_all", r#"{"by":"dana"}"#)
        );
        assert_eq!(
            written(Event::TaskResetAll {
                by,
                review: Some(7)
            }),
            pair("task_reset_all", r#"{"by":"dana","review":7}"#)
        );
        let files = vec![("a.toml".to_owned(), "[limits]\n".to_owned())];
        assert_eq!(
            written(Event::Strategies { files }),
            pair("strategies", r#"{"files":[["a.toml","[limits]\n"]]}"#)
        );
        assert_eq!(
            written(Event::Strategies { files: Vec::new() }),
            pair("strategies", r#"{"files":[]}"#)
        );
    }

    #[test]
    fn a_tool_outcome_with_a_class_unknown_here_or_none_is_transient() {
        for body in [r#"{"class":"cosmic_ray"}"#, r#"{"class":7}"#, "{}"] {
            for (kind, expected) in [
                (
                    "tool_failure",
                    Event::ToolFailure {
                        class: transient(),
                        caller: String::new(),
                    },
                ),
                (
                    "success",
                    Event::Success {
                        class: transient(),
                        caller: String::new(),
                    },
                ),
            ] {
                let event = CallEvent {
                    kind: kind.to_owned(),
                    body: body.to_owned(),
                    ..stored(4)
                };
                assert_eq!(Event::from_stored(&event).unwrap(), expected, "{body}");
            }
        }
    }

    #[test]
    fn an_unknown_kind_or_a_body_not_its_kinds_does_not_read() {
        for (kind, body) in [
            ("meteor", "{}"),
            ("", "{}"),
            ("failure", "{}"),
            ("grant", "{}"),
            ("grant", ""),
            ("strategies", r#"{"files":"a.toml"}"#),
            ("task_success", "{} {}"),
            ("task_success", r#"{}, "kind": "grant""#),
        ] {
            let event = CallEvent {
                kind: kind.to_owned(),
                body: body.to_owned(),
                ..stored(0)
            };
            assert!(Event::from_stored(&event).is_err(), "{kind} {body}");
        }
    }

    #[test]
    fn every_kind_is_stored_and_documented() {
        let mut kinds = vec![""; VARIANTS];
        for (n, (kind, _, _)) in STORED.iter().enumerate() {
            let event = Event::from_stored(&stored(n)).unwrap();
            kinds[variant(&event)] = kind;
        }
        assert!(
            !kinds.contains(&""),
            "every kind has a stored form: {kinds:?}"
        );
        // docs/decisions.md lists the kinds in a table, one row each, the kind first.
        let decisions = include_str!("../../../../../docs/decisions.md");
        let section = decisions
            .split("\n### ")
            .find(|s| s.starts_with("The call journal's events"))
            .expect("docs/decisions.md has `### The call journal's events`");
        let mut documented: Vec<&str> = section
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|row| row.split('`').next())
            .collect();
        documented.sort_unstable();
        kinds.sort_unstable();
        assert_eq!(documented, kinds, "docs/decisions.md's table of kinds");
    }
}
