//! The call journal: the call-level events every server on a ledger shares, and how they
//! turn into a hinter's state. A server's ledger thread follows it (see `queue`); the CLI
//! replays it to show or reset a task.

use backstop_core::Class;
use backstop_core::classify::Classification;
use backstop_core::recover::strategy::StrategyTable;
use backstop_core::recover::{Context, Hinter, HinterOptions, Step};
use backstop_store::{CallEvent, Store, StoreError};
use jiff::{SignedDuration, Timestamp};
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
}

/// A hinter over `table` with the journal of the last [`REPLAY_WINDOW`] applied, and the
/// journal position it reached.
pub fn replay(
    store: &dyn Store,
    table: StrategyTable,
    now: Timestamp,
) -> Result<(Hinter, i64), StoreError> {
    let mut hinter = Hinter::new(table, HinterOptions { seed: HINTER_SEED });
    let (entries, position) = store.events_since(now - REPLAY_WINDOW)?;
    for entry in &entries {
        apply_event(&mut hinter, &entry.event);
    }
    tracing::info!(
        events = entries.len(),
        "call journal replayed into the hinter"
    );
    Ok((hinter, position))
}

/// Applies one journaled event to a hinter: the step a task's failure gives.
pub fn apply_event(hinter: &mut Hinter, event: &CallEvent) -> Option<Step> {
    match event.kind.as_str() {
        "failure" => {
            let failure = serde_json::from_str::<FailureEvent>(&event.body).ok()?;
            return Some(hinter.next(
                &event.subject,
                &failure.classification,
                &failure.context,
                event.at,
            ));
        }
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
    None
}

/// The hinter's key for a caller's task.
pub fn task_key(caller: &str, task: &str) -> String {
    format!("{caller}\u{1f}{task}")
}

/// What is journaled of a failure, with secrets taken out of its free text.
pub(crate) fn redacted(mut classification: Classification, mut context: Context) -> FailureEvent {
    use backstop_core::verify::redact::redact;
    for evidence in &mut classification.evidence {
        evidence.value = redact(&evidence.value).0;
    }
    context.error = context.error.map(|e| redact(&e).0);
    FailureEvent {
        classification,
        context,
    }
}
