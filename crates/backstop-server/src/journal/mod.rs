//! The call journal on a ledger: the core's call state ([`CallState`], applied in journal
//! order) kept in step with a [`Store`]. Each function here is one store transaction: events
//! appended with the rows and review items they change, or a review item resolved with the
//! reset it asks for. A server's ledger thread follows the journal (see `queue`); the CLI
//! loads it to show or reset a task.

use backstop_core::recover::journal::{CorruptRow, own_steps};
use backstop_store::{CallEvent, JournalEntry, Store, StoreError};
use jiff::Timestamp;

pub use backstop_core::recover::journal::{
    Applied, CallState, Event, FailureEvent, HINTER_SEED, IdempotencyMark, redacted,
    strategies_event,
};
pub use backstop_core::recover::recovery::{caller_and_task, task_key};

/// A server writes the call-state rows changed since its last checkpoint in a journal
/// transaction at least this often while it journals (and always once this many are pending):
/// the rows are a checkpoint of the journal, which stays the source of truth, so a start
/// replays at most about this much of it (docs/decisions.md, "The call state is kept beside
/// the journal").
pub const CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Pending rows past which the next journal transaction writes them whatever the time.
pub const CHECKPOINT_ROWS: usize = 4096;

fn corrupt(error: CorruptRow) -> StoreError {
    StoreError::Corrupt(error.0)
}

/// Logs what applying events left to say (events skipped, strategies refused).
pub fn log_notes(calls: &mut CallState) {
    for note in calls.take_notes() {
        tracing::warn!(%note, "call journal");
    }
}

/// Journals `events` after `position` and applies every event the journal hands back (other
/// processes' too), writing the changed rows, and a review item for each of the new events
/// that is its task's first escalation, in the same transaction: what each of the new
/// events gave, and the new position.
///
/// # Errors
/// The ledger failed; then this state may be ahead of it and must be loaded again.
pub fn journal(
    calls: &mut CallState,
    store: &dyn Store,
    events: &[CallEvent],
    position: &mut i64,
    checkpoint: bool,
) -> Result<Vec<Applied>, StoreError> {
    let mut applied = Vec::new();
    let mut reached = *position;
    // Read before the journal's lock is taken, not while it is held.
    let mut own: Vec<Option<Event>> = events.iter().map(|e| Event::from_stored(e).ok()).collect();
    let speculation = calls.speculate(&own, events, checkpoint);
    let mut follow = |entries: &[JournalEntry]| {
        calls.follow(entries, &mut own, &mut reached, &mut applied, checkpoint)
    };
    let entries = match &speculation {
        Some(speculation) => store.journal_speculating(events, *position, speculation, &mut follow),
        None => store.journal(events, *position, &mut follow),
    }?;
    *position = reached;
    log_notes(calls);
    own_steps(applied, entries.len(), events.len()).map_err(corrupt)
}

/// Resolves review item `id` and, in the same transaction, journals the reset a task
/// item's `retry` asks for (applied as [`journal`] applies events): the item,
/// and the new position.
///
/// # Errors
/// As [`Store::resolve_review_journaled`]; then this state may be ahead of the ledger and
/// must be loaded again.
pub fn resolve(
    calls: &mut CallState,
    store: &dyn Store,
    id: i64,
    resolution: &backstop_store::Resolution,
    now: Timestamp,
    position: &mut i64,
    checkpoint: bool,
) -> Result<backstop_store::ReviewItem, StoreError> {
    let own = std::cell::Cell::new(0);
    let then = |item: &backstop_store::ReviewItem| {
        let events: Vec<CallEvent> = task_review_reset(item, &resolution.by)
            .into_iter()
            .collect();
        own.set(events.len());
        events
    };
    let mut applied = Vec::new();
    let mut reached = *position;
    let (item, _) = store.resolve_review_journaled(
        id,
        resolution,
        now,
        &then,
        *position,
        &mut |entries: &[JournalEntry]| {
            let mut unread = vec![None; own.get()];
            calls.follow(entries, &mut unread, &mut reached, &mut applied, checkpoint)
        },
    )?;
    *position = reached;
    log_notes(calls);
    Ok(item)
}

/// The call state the ledger keeps (over the built-in strategies until a journaled table
/// says otherwise), with every event after its position applied, and the position reached: a
/// process starts from here, at any age of the state.
///
/// # Errors
/// The ledger failed, or a kept row is not its kind's JSON.
pub fn load(store: &dyn Store) -> Result<(CallState, i64), StoreError> {
    let mut state = CallState::builtin();
    let (rows, mut position) = store.call_state()?;
    state.restore(&rows).map_err(corrupt)?;
    let entries = store.journal_after(position)?;
    for entry in &entries {
        state.apply(&entry.event);
        position = entry.id;
    }
    log_notes(&mut state);
    tracing::info!(
        rows = rows.len(),
        events = entries.len(),
        "call state loaded from the ledger"
    );
    Ok((state, position))
}

/// For a process that journals now and then (the CLI): the call state loaded, `events`
/// journaled and applied with the rows they change in one transaction; the state after them.
///
/// # Errors
/// The ledger failed.
pub fn journal_once(store: &dyn Store, events: &[CallEvent]) -> Result<CallState, StoreError> {
    let (mut state, mut position) = load(store)?;
    journal(&mut state, store, events, &mut position, true)?;
    Ok(state)
}

/// For a process that resolves now and then (the CLI): the call state loaded, then review
/// item `id` resolved with the reset a task item's `retry` asks, in one transaction.
///
/// # Errors
/// As [`Store::resolve_review_journaled`].
pub fn resolve_once(
    store: &dyn Store,
    id: i64,
    resolution: &backstop_store::Resolution,
    now: Timestamp,
) -> Result<backstop_store::ReviewItem, StoreError> {
    let (mut state, mut position) = load(store)?;
    resolve(&mut state, store, id, resolution, now, &mut position, true)
}

/// The decision on a task's review item that lets its agent try again.
pub const RETRY_DECISION: &str = "retry";

/// For a task's review item resolved with [`RETRY_DECISION`], the event that resets the task
/// (lifting a policy stop), so its agent may try again.
pub fn task_review_reset(item: &backstop_store::ReviewItem, by: &str) -> Option<CallEvent> {
    let decided = item.resolution.as_ref()?;
    (item.kind == "task" && decided.decision == RETRY_DECISION).then(|| {
        let event = Event::TaskResetAll {
            by: by.to_owned(),
            review: Some(item.id),
        };
        event.to_stored(decided.at, task_key(&item.caller, &item.case_id))
    })
}
