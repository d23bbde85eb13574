//! The call journal: the call-level events every server on a ledger shares, and how they
//! turn into a hinter's state. A server's ledger thread follows it (see `queue`); the CLI
//! replays it to show or reset a task.

use std::num::NonZeroUsize;

use backstop_core::Class;
use backstop_core::classify::Classification;
use backstop_core::recover::strategy::StrategyTable;
use backstop_core::recover::{Context, Hinter, HinterOptions, Step};
use backstop_store::{CallEvent, Store, StoreError};
use jiff::{SignedDuration, Timestamp};
use lru::LruCache;
use serde::Deserialize;
use serde_json::Value;

/// The hinter's jitter seed: fixed, so every process replaying the journal gets the same delays.
pub const HINTER_SEED: u64 = 0x6261_636b_7374_6f70;

/// How far back the call journal is replayed into a hinter at start.
pub const REPLAY_WINDOW: SignedDuration = SignedDuration::from_hours(24);

#[derive(Debug, Deserialize, serde::Serialize)]
pub(crate) struct FailureEvent {
    classification: Classification,
    context: Context,
    /// The caller's `Idempotency-Key` and the request's hash, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idempotency: Option<IdempotencyMark>,
}

impl FailureEvent {
    /// What a review item for this failure's escalation carries.
    pub(crate) fn escalation(&self, task: &str, to: &str) -> backstop_store::TaskEscalation {
        backstop_store::TaskEscalation {
            task: task.to_owned(),
            tool: self.context.tool.clone(),
            class: self.classification.class.as_str().to_owned(),
            evidence: serde_json::to_value(&self.classification.evidence).unwrap_or(Value::Null),
            to: to.to_owned(),
        }
    }
}

/// An idempotency key (scoped to its caller) and the hash of the request that first used it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct IdempotencyMark {
    /// `caller` and the key, as [`task_key`] joins them.
    pub key: String,
    /// The SHA-256 of the request body, in hex.
    pub hash: String,
}

/// How long an idempotency key is remembered.
pub const IDEMPOTENCY_WINDOW: SignedDuration = SignedDuration::from_hours(24);

/// Idempotency keys remembered at most (the least recently used are forgotten first).
const IDEMPOTENCY_KEYS: usize = 16_384;

/// What an idempotency key answered first.
#[derive(Debug, Clone)]
struct Remembered {
    hash: String,
    step: Step,
    at: Timestamp,
}

/// The call-level state the journal builds: the hinter, and the steps idempotency keys got.
#[derive(Debug)]
pub struct CallState {
    /// Task counters, tool breakers and budgets.
    pub hinter: Hinter,
    idempotent: LruCache<String, Remembered>,
    /// Tasks that escalated since their last reset: their review item is open (or was resolved
    /// without a reset), so a further escalation opens none.
    escalated: LruCache<String, ()>,
}

/// What applying one event gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// Not a task's failure: nothing to answer.
    Nothing,
    /// A task's failure, counted: its step, and whether it is the task's first escalation
    /// since its last reset (then a review item is opened for it).
    Step {
        /// The step.
        step: Step,
        /// The first escalation since the task's last reset.
        first_escalation: bool,
    },
    /// A failure resent with the same idempotency key and request: the first step, nothing
    /// counted.
    Replayed(Step),
    /// A failure whose idempotency key came with another request: nothing counted.
    Conflict,
}

impl CallState {
    /// A state with nothing applied.
    pub fn new(hinter: Hinter) -> CallState {
        CallState {
            hinter,
            idempotent: LruCache::new(
                NonZeroUsize::new(IDEMPOTENCY_KEYS).unwrap_or(NonZeroUsize::MIN),
            ),
            escalated: LruCache::new(
                NonZeroUsize::new(IDEMPOTENCY_KEYS).unwrap_or(NonZeroUsize::MIN),
            ),
        }
    }

    /// Applies one journaled event, as every process on the ledger does, in journal order.
    pub fn apply(&mut self, event: &CallEvent) -> Applied {
        if event.kind == "failure" {
            let Ok(failure) = serde_json::from_str::<FailureEvent>(&event.body) else {
                tracing::warn!("an unreadable failure event was skipped");
                return Applied::Nothing;
            };
            if let Some(mark) = &failure.idempotency
                && let Some(first) = self.idempotent.get(&mark.key)
                && event.at.duration_since(first.at) < IDEMPOTENCY_WINDOW
            {
                return if first.hash == mark.hash {
                    Applied::Replayed(first.step.clone())
                } else {
                    Applied::Conflict
                };
            }
            let step = self.hinter.next(
                &event.subject,
                &failure.classification,
                &failure.context,
                event.at,
            );
            if let Some(mark) = failure.idempotency {
                self.idempotent.put(
                    mark.key,
                    Remembered {
                        hash: mark.hash,
                        step: step.clone(),
                        at: event.at,
                    },
                );
            }
            // Decided here, in journal order, so every process agrees which escalation of a
            // task is its first (and no request handler waits on this state's lock).
            let first_escalation = step.escalation.is_some()
                && self.escalated.put(event.subject.clone(), ()).is_none();
            return Applied::Step {
                step,
                first_escalation,
            };
        }
        if event.kind == "strategies" {
            self.use_strategies(event);
            return Applied::Nothing;
        }
        if matches!(
            event.kind.as_str(),
            "task_success" | "task_reset" | "task_reset_all"
        ) {
            self.escalated.pop(&event.subject);
        }
        apply_other(&mut self.hinter, event);
        Applied::Nothing
    }

    /// Takes up the strategy files a server journaled at its start or reload: from here on in
    /// the journal, every process uses them.
    fn use_strategies(&mut self, event: &CallEvent) {
        let files = serde_json::from_str::<StrategiesEvent>(&event.body).map(|e| e.files);
        match files.map(|files| crate::catalog::strategy_table(&files)) {
            Ok(Ok(table)) => self.hinter.set_table(table),
            Ok(Err(issues)) => {
                let listed: Vec<String> = issues.iter().map(ToString::to_string).collect();
                tracing::error!(issues = %listed.join("; "), "journaled strategies refused; the ones in use stay");
            }
            Err(e) => tracing::error!(error = %e, "an unreadable strategies event was skipped"),
        }
    }
}

/// The strategy files a server uses, as journaled.
#[derive(Debug, Deserialize, serde::Serialize)]
struct StrategiesEvent {
    /// `(origin, text)` of each file, over the built-in strategies.
    files: Vec<(String, String)>,
}

/// The event that puts `files` in use for every process on the ledger.
pub fn strategies_event(files: &[(String, String)], at: Timestamp) -> CallEvent {
    CallEvent {
        at,
        kind: "strategies".to_owned(),
        subject: String::new(),
        body: serde_json::to_string(&StrategiesEvent {
            files: files.to_vec(),
        })
        .unwrap_or_default(),
    }
}

/// The call state over `table` with the journal of the last [`REPLAY_WINDOW`] applied, and
/// the journal position it reached.
pub fn replay(
    store: &dyn Store,
    table: StrategyTable,
    now: Timestamp,
) -> Result<(CallState, i64), StoreError> {
    let mut state = CallState::new(Hinter::new(table, HinterOptions { seed: HINTER_SEED }));
    let (entries, position) = store.events_since(now - REPLAY_WINDOW)?;
    for entry in &entries {
        state.apply(&entry.event);
    }
    tracing::info!(
        events = entries.len(),
        "call journal replayed into the hinter"
    );
    Ok((state, position))
}

/// Applies an event other than a task's failure to a hinter.
fn apply_other(hinter: &mut Hinter, event: &CallEvent) {
    match event.kind.as_str() {
        "success" => hinter.record_success(&event.subject, event.at),
        "tool_failure" => {
            let class = serde_json::from_str::<Value>(&event.body)
                .ok()
                .and_then(|v| serde_json::from_value::<Class>(v["class"].clone()).ok())
                .unwrap_or(Class::Transient);
            hinter.record_failure(&event.subject, class, event.at);
        }
        "grant" => hinter.grant(&event.subject),
        "task_success" | "task_reset" => hinter.record_task_success(&event.subject),
        "task_reset_all" => hinter.reset(&event.subject),
        other => tracing::warn!(kind = other, "an unknown call event was skipped"),
    }
}

/// The hinter's key for a caller's task.
pub fn task_key(caller: &str, task: &str) -> String {
    format!("{caller}\u{1f}{task}")
}

/// What is journaled of a failure, with secrets taken out of its free text.
pub(crate) fn redacted(
    mut classification: Classification,
    mut context: Context,
    idempotency: Option<IdempotencyMark>,
) -> FailureEvent {
    use backstop_core::verify::redact::redact;
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

/// The decision on a task's review item that lets its agent try again.
pub const RETRY_DECISION: &str = "retry";

/// For a task's review item resolved with [`RETRY_DECISION`], the event that resets the task
/// (lifting a policy stop), so its agent may try again.
pub fn task_review_reset(item: &backstop_store::ReviewItem, by: &str) -> Option<CallEvent> {
    let decided = item.resolution.as_ref()?;
    (item.kind == "task" && decided.decision == RETRY_DECISION).then(|| CallEvent {
        at: decided.at,
        kind: "task_reset_all".to_owned(),
        subject: task_key(&item.caller, &item.case_id),
        body: serde_json::json!({"by": by, "review": item.id}).to_string(),
    })
}
