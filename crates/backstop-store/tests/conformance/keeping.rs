//! Seed 000, "What Felspar keeps": question keys and source locators only, deleted after 30
//! days.

use backstop_store::{DEFAULT_RETENTION, Store};

use super::support::{Answer, HEDGED, NO_DATA, ask, at, attempts, shipped, vendor};

/// "For each attempt, Felspar records the question keys and source locators only."
pub fn records_keep_keys_sources_locators_and_hashes_only(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "k.com", &[NO_DATA]), at(0));
    let record = store.case("a", "vendor-risk", "k.com").unwrap().unwrap();
    let kept = &record.attempts[0].record;
    assert_eq!(kept.closed, ["data_access"]);
    assert_eq!(kept.cited.len(), 1);
    let cited = serde_json::to_value(&kept.cited[0]).unwrap();
    let fields: Vec<&String> = cited.as_object().unwrap().keys().collect();
    assert_eq!(fields, ["hash", "locator", "source", "under"]);
    assert_eq!(cited["locator"], "§4.2");
    let shown = serde_json::to_string(&record).unwrap();
    assert!(
        !shown.contains(NO_DATA.2),
        "no excerpt text in what is kept"
    );
}

/// "... and deletes attempt records after 30 days."
pub fn purge_deletes_attempts_past_retention(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    let old = vendor("e1", "p.com", &[HEDGED]);
    ask(store, &pack, "a", &old, at(0));
    let day = 24 * 60;
    ask(
        store,
        &pack,
        "a",
        &vendor("e2", "young.com", &[HEDGED]),
        at(20 * day),
    );
    // A held case waits for its reviewer however old it is.
    ask(
        store,
        &pack,
        "a",
        &vendor("e3", "held.com", &[NO_DATA]),
        at(0),
    );
    let purged = store.purge(at(31 * day) - DEFAULT_RETENTION).unwrap();
    assert_eq!((purged.attempts, purged.cases), (2, 1));
    assert_eq!(
        store
            .case("a", "vendor-risk", "held.com")
            .unwrap()
            .unwrap()
            .reviews
            .len(),
        1
    );
    assert!(store.case("a", "vendor-risk", "p.com").unwrap().is_none());
    assert_eq!(
        store
            .case("a", "vendor-risk", "young.com")
            .unwrap()
            .unwrap()
            .attempts
            .len(),
        1
    );
    // The purged execution is gone: sending it again is a new attempt, not a replay.
    let again = ask(store, &pack, "a", &old, at(31 * day));
    assert!(matches!(again, Answer::Result(_)));
    assert_eq!(attempts(again.result()).0, 1);
    assert_eq!(
        store
            .purge(at(31 * day) - DEFAULT_RETENTION)
            .unwrap()
            .attempts,
        0
    );
}

/// Call-level events are kept in order and purged with the rest.
pub fn call_events_are_journaled_and_purged(store: &dyn Store) {
    let event = |minute: i64, kind: &str| backstop_store::CallEvent {
        at: at(minute),
        kind: kind.to_owned(),
        subject: "task-1".to_owned(),
        body: "{}".to_owned(),
    };
    store.append_event(&event(0, "failure")).unwrap();
    store.append_event(&event(5, "grant")).unwrap();
    store.append_event(&event(10, "success")).unwrap();
    let since: Vec<String> = store
        .events_since(at(5))
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(since, ["grant", "success"]);
    assert_eq!(store.purge(at(6)).unwrap().events, 2);
    assert_eq!(store.events_since(at(0)).unwrap().len(), 1);
    store.ping().unwrap();
}
