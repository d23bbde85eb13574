//! Held results: review items, `case_in_review`, operator resolutions and the gather lane.

use backstop_store::{Resolution, ReviewFilter, Store, StoreError};
use serde_json::json;

use super::support::{HEDGED, PII, ask, at, attempts, company, shipped, vendor};

const MIXED: [&str; 2] = [
    "We build both hardware and software for farms.",
    "Acme is a diversified industrial group.",
];

fn open_reviews(store: &dyn Store) -> Vec<backstop_store::ReviewItem> {
    store
        .reviews(&ReviewFilter {
            open: Some(true),
            ..ReviewFilter::default()
        })
        .unwrap()
}

fn operator() -> Resolution {
    Resolution {
        by: "dana".to_owned(),
        decision: "approve".to_owned(),
        note: Some("DPA signed".to_owned()),
    }
}

/// "Held: escalate with that next step. Don't retry." The lane opens a review item, and
/// further attempts are refused `case_in_review`.
pub fn a_held_result_opens_a_review_and_blocks_attempts(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    let held = ask(store, &pack, "a", &vendor("e1", "h.com", &[PII]), at(0));
    let result = held.result();
    assert_eq!(result["status"], "held");
    assert_eq!(result["outcome"], "review_privacy");
    assert_eq!(attempts(result), (1, 0, json!("escalate")));
    assert_eq!(result["escalation"]["id"], "privacy-team");
    assert_eq!(result["escalation"]["trigger"], "held");
    assert_eq!(
        result["nextStep"],
        "Hold the vendor; the privacy team reviews the agreement."
    );
    let items = open_reviews(store);
    assert_eq!(items.len(), 1);
    assert_eq!(
        (items[0].case_id.as_str(), items[0].lane.as_str()),
        ("h.com", "review_privacy")
    );
    assert_eq!(items[0].escalation, "privacy-team");
    let blocked = ask(store, &pack, "a", &vendor("e2", "h.com", &[HEDGED]), at(1));
    assert_eq!(blocked.refused(), "case_in_review");
    assert_eq!(blocked.refusal()["error"]["escalation"]["trigger"], "held");
    assert_eq!(
        store
            .case("a", "vendor-risk", "h.com")
            .unwrap()
            .unwrap()
            .attempts
            .len(),
        1
    );
}

/// An operator's resolution ends the cycle: the next attempt is the first of a new count.
pub fn resolving_a_review_ends_the_cycle(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "r.com", &[PII]), at(0));
    let id = open_reviews(store)[0].id;
    let resolved = store.resolve_review(id, &operator(), at(10)).unwrap();
    let by = resolved.resolution.unwrap();
    assert_eq!((by.by.as_str(), by.decision.as_str()), ("dana", "approve"));
    assert!(open_reviews(store).is_empty());
    let next = ask(store, &pack, "a", &vendor("e2", "r.com", &[HEDGED]), at(11));
    assert_eq!(attempts(next.result()), (1, 2, json!("retry")));
    let all = store.reviews(&ReviewFilter::default()).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        all[0].resolution.as_ref().unwrap().note.as_deref(),
        Some("DPA signed")
    );
}

/// A review item is resolved once; an unknown one is not found.
pub fn a_review_is_resolved_once(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "o.com", &[PII]), at(0));
    let id = open_reviews(store)[0].id;
    store.resolve_review(id, &operator(), at(1)).unwrap();
    assert!(matches!(
        store.resolve_review(id, &operator(), at(2)),
        Err(StoreError::Conflict(_))
    ));
    assert!(matches!(
        store.resolve_review(id + 1000, &operator(), at(2)),
        Err(StoreError::NotFound(_))
    ));
}

/// "Some held outcomes tell the agent to gather more itself ... then classify again once."
pub fn a_gather_lane_allows_one_retry(store: &dyn Store) {
    let pack = shipped("company-classification");
    let held = ask(store, &pack, "a", &company("e1", None, &MIXED), at(0));
    let result = held.result();
    assert_eq!(
        (result["status"].clone(), result["outcome"].clone()),
        (json!("held"), json!("gather_more"))
    );
    assert_eq!(attempts(result), (1, 1, json!("retry")));
    assert_eq!(result["escalation"]["id"], "research-desk");
    let id = result["case"]["id"].as_str().unwrap().to_owned();
    assert_eq!(open_reviews(store).len(), 1);
    let mut texts = MIXED.to_vec();
    texts.push("Segment revenue: both hardware and services.");
    let again = ask(store, &pack, "a", &company("e2", Some(&id), &texts), at(1));
    assert_eq!(again.result()["status"], "held");
    assert_eq!(attempts(again.result()), (2, 0, json!("escalate")));
    let third = ask(store, &pack, "a", &company("e3", Some(&id), &MIXED), at(2));
    assert_eq!(third.refused(), "case_in_review");
    assert_eq!(
        open_reviews(store).len(),
        1,
        "the retry keeps the one review item"
    );
}

/// The gather lane's retry may decide the case; that closes the review item.
pub fn a_gather_retry_that_decides_closes_the_review(store: &dyn Store) {
    let pack = shipped("company-classification");
    let held = ask(store, &pack, "a", &company("e1", None, &MIXED), at(0));
    let id = held.result()["case"]["id"].as_str().unwrap().to_owned();
    let software = [
        "We sell SaaS subscriptions to retailers.",
        "Acme is a software platform company.",
    ];
    let decided = ask(
        store,
        &pack,
        "a",
        &company("e2", Some(&id), &software),
        at(1),
    );
    assert_eq!(decided.result()["status"], "decided");
    assert!(open_reviews(store).is_empty());
    let all = store.reviews(&ReviewFilter::default()).unwrap();
    assert_eq!(all[0].resolution.as_ref().unwrap().by, "backstop");
    let next = ask(
        store,
        &pack,
        "a",
        &company("e3", Some(&id), &software[..1]),
        at(2),
    );
    assert_eq!(
        attempts(next.result()).0,
        1,
        "the decision started a new count"
    );
}

/// The gather lane's retry that decides nothing leaves the case in review: the result says
/// escalate with the lane's escalation, and the next attempt is refused.
pub fn a_gather_retry_left_undecided_goes_back_to_review(store: &dyn Store) {
    let pack = shipped("company-classification");
    let held = ask(store, &pack, "a", &company("e1", None, &MIXED), at(0));
    let id = held.result()["case"]["id"].as_str().unwrap().to_owned();
    let one = ["We sell SaaS subscriptions to retailers."];
    let retry = ask(store, &pack, "a", &company("e2", Some(&id), &one), at(1));
    let result = retry.result();
    assert_eq!(result["status"], "undecided");
    assert_eq!(attempts(result), (2, 0, json!("escalate")));
    assert_eq!(result["escalation"]["id"], "research-desk");
    assert_eq!(result["escalation"]["trigger"], "held");
    let next = ask(store, &pack, "a", &company("e3", Some(&id), &one), at(2));
    assert_eq!(next.refused(), "case_in_review");
}

/// A task's escalation opens one review item for the caller's task (not one per further
/// failure); once resolved, the next escalation opens another.
pub fn a_task_escalation_opens_one_review_item_at_a_time(store: &dyn Store) {
    let escalation = backstop_store::TaskEscalation {
        task: "build-7".to_owned(),
        tool: Some("ci".to_owned()),
        class: "transient".to_owned(),
        evidence: json!([{"field": "http_status", "value": "503", "rule": "http.503"}]),
        to: "the on-call engineer".to_owned(),
        why: String::new(),
    };
    let item = store
        .open_task_review(
            "agent-a",
            &escalation,
            "the task's attempts are spent",
            at(0),
        )
        .unwrap()
        .expect("the first escalation opens an item");
    assert_eq!(
        (item.kind.as_str(), item.case_id.as_str(), item.job.as_str()),
        ("task", "build-7", "")
    );
    assert_eq!(item.task.as_ref(), Some(&escalation));
    assert_eq!(item.escalation, "the on-call engineer");
    assert!(
        store
            .open_task_review("agent-a", &escalation, "again", at(1))
            .unwrap()
            .is_none(),
        "one open item per task"
    );
    let other = store
        .open_task_review("agent-b", &escalation, "theirs", at(1))
        .unwrap();
    assert!(other.is_some(), "another caller's task is another task");
    let listed = store
        .reviews(&ReviewFilter {
            open: Some(true),
            job: None,
            caller: Some("agent-a".to_owned()),
            limit: None,
        })
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].task.as_ref(), Some(&escalation));
    store.resolve_review(item.id, &operator(), at(2)).unwrap();
    assert!(
        store
            .open_task_review("agent-a", &escalation, "once more", at(3))
            .unwrap()
            .is_some(),
        "a resolved item lets the next escalation open one"
    );
}
