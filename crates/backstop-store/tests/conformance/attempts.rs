//! Seed 000, "Attempts", "How a good agent retries", "A gap still counts" and "Fixing a
//! refused request is not an attempt".

use backstop_store::Store;
use serde_json::json;

use super::support::{
    HEDGED, NO_DATA, PII, ask, at, attempts, shipped, vague, vendor, vendor_risk_max,
    vendor_with_subprocessors,
};

/// "Northwind.com and northwind.com are the same case for a subject matched without case."
pub fn case_names_are_normalized_by_the_match_rule(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    let first = ask(
        store,
        &pack,
        "a",
        &vendor("e1", "Northwind.com", &[HEDGED]),
        at(0),
    );
    assert_eq!(first.result()["case"]["id"], "northwind.com");
    let second = vendor("e2", "https://www.northwind.com./", &[vague("q1")]);
    let second = ask(store, &pack, "a", &second, at(1));
    assert_eq!(second.result()["case"]["id"], "northwind.com");
    assert_eq!(attempts(second.result()).0, 2);
    let record = store
        .case("a", "vendor-risk", "northwind.com")
        .unwrap()
        .unwrap();
    assert_eq!(record.attempts.len(), 2);
}

/// "result.attempts says used, remaining, next", and the extra attempt once earned.
pub fn attempts_report_used_remaining_and_next(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    let mut seen = Vec::new();
    for (i, locator) in ["q1", "q2", "q3", "q4"].into_iter().enumerate() {
        let body = vendor(&format!("e{i}"), "northwind.com", &[vague(locator)]);
        let answer = ask(store, &pack, "a", &body, at(i64::try_from(i).unwrap()));
        let result = answer.result();
        assert_eq!(result["status"], "undecided");
        assert_eq!(result["outcome"], serde_json::Value::Null);
        seen.push((attempts(result), result["escalation"]["trigger"].clone()));
    }
    assert_eq!(
        seen,
        [
            ((1, 2, json!("retry")), json!("unresolved")),
            ((2, 1, json!("retry")), json!("unresolved")),
            // Progress on the last attempt within the limit earns the one extra.
            ((3, 1, json!("retry")), json!("unresolved")),
            ((4, 0, json!("escalate")), json!("attempt_limit")),
        ]
    );
}

/// "A request past the limit is refused before anything runs, with `attempt_limit_reached`",
/// carrying the escalation the pack names for the limit.
pub fn a_request_past_the_limit_is_refused_with_the_escalation(store: &dyn Store) {
    let pack = vendor_risk_max(1);
    let body = vendor("e1", "northwind.com", &[]);
    let first = ask(store, &pack, "a", &body, at(0));
    // Nothing closed, nothing cited: no progress, so no extra attempt.
    assert_eq!(attempts(first.result()), (1, 0, json!("escalate")));
    assert_eq!(first.result()["escalation"]["trigger"], "attempt_limit");
    assert_eq!(first.result()["escalation"]["id"], "vendor-desk");
    let past = ask(
        store,
        &pack,
        "a",
        &vendor("e2", "northwind.com", &[NO_DATA]),
        at(1),
    );
    assert_eq!(past.refused(), "attempt_limit_reached");
    let escalation = &past.refusal()["error"]["escalation"];
    assert_eq!(escalation["id"], "vendor-desk");
    assert_eq!(escalation["trigger"], "attempt_limit");
    assert_eq!(escalation["to"], "Vendor management");
    let queued = store
        .reviews(&backstop_store::ReviewFilter::default())
        .unwrap();
    assert_eq!(
        queued.len(),
        1,
        "the attempt that reached the limit queued the case once"
    );
    assert_eq!(queued[0].lane, "attempt_limit");
    let record = store
        .case("a", "vendor-risk", "northwind.com")
        .unwrap()
        .unwrap();
    assert_eq!(record.attempts.len(), 1, "a refused request is not stored");
}

/// "An attempt that makes no progress escalates the case at once."
pub fn an_attempt_without_progress_escalates_at_once(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "n.com", &[HEDGED]), at(0));
    let again = ask(store, &pack, "a", &vendor("e2", "n.com", &[HEDGED]), at(1));
    let result = again.result();
    assert_eq!(attempts(result), (2, 0, json!("escalate")));
    assert_eq!(result["escalation"]["trigger"], "no_progress");
    assert_eq!(result["escalation"]["id"], "vendor-desk");
    // The escalation puts the case in a person's queue, once.
    let open = store
        .reviews(&backstop_store::ReviewFilter::default())
        .unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(
        (open[0].lane.as_str(), open[0].escalation.as_str()),
        ("no_progress", "vendor-desk")
    );
    assert_eq!(
        (open[0].kind.as_str(), open[0].case_id.as_str()),
        ("case", "n.com")
    );
    let third = ask(store, &pack, "a", &vendor("e3", "n.com", &[NO_DATA]), at(2));
    assert_eq!(third.refused(), "attempt_limit_reached");
}

/// "One extra attempt beyond the limit is allowed, but only after progress."
pub fn the_extra_attempt_needs_progress(store: &dyn Store) {
    let pack = vendor_risk_max(1);
    let first = ask(
        store,
        &pack,
        "a",
        &vendor("e1", "x.com", &[vague("q1")]),
        at(0),
    );
    assert_eq!(attempts(first.result()), (1, 1, json!("retry")));
    let extra = ask(
        store,
        &pack,
        "a",
        &vendor("e2", "x.com", &[vague("q2")]),
        at(1),
    );
    assert_eq!(attempts(extra.result()), (2, 0, json!("escalate")));
    assert_eq!(extra.result()["escalation"]["trigger"], "attempt_limit");
    let past = ask(
        store,
        &pack,
        "a",
        &vendor("e3", "x.com", &[vague("q3")]),
        at(2),
    );
    assert_eq!(past.refused(), "attempt_limit_reached");
}

/// Progress is "close a question, or quote a source (a source ID and locator) no earlier
/// attempt used"; the same source at a new locator counts, a new text at an old one does not.
pub fn progress_by_a_new_source_or_a_new_closed_question(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    ask(
        store,
        &pack,
        "a",
        &vendor("e1", "p.com", &[vague("q1")]),
        at(0),
    );
    // The same source and locator with other words: no progress.
    let reworded = vendor(
        "e2",
        "p.com",
        &[("questionnaire.pdf", "q1", "Other words.")],
    );
    let reworded = ask(store, &pack, "a", &reworded, at(1));
    assert_eq!(reworded.result()["escalation"]["trigger"], "no_progress");

    ask(
        store,
        &pack,
        "a",
        &vendor("e3", "q.com", &[vague("q1")]),
        at(0),
    );
    // A question closed at a locator already cited is still progress.
    let closed = vendor("e4", "q.com", &[vague("q1"), ("dpa.pdf", "§4.2", PII.2)]);
    let closed = ask(store, &pack, "a", &closed, at(1));
    assert_eq!(closed.result()["status"], "held", "{}", closed.result());
}

/// "Attempts on a case count from its last decision, within 24 hours."
pub fn attempts_count_within_the_window_only(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "w.com", &[HEDGED]), at(0));
    let later = ask(
        store,
        &pack,
        "a",
        &vendor("e2", "w.com", &[HEDGED]),
        at(25 * 60),
    );
    assert_eq!(attempts(later.result()), (1, 2, json!("retry")));
    // Even an escalated case counts afresh once its attempts leave the window.
    ask(
        store,
        &pack,
        "a",
        &vendor("e3", "w.com", &[HEDGED]),
        at(25 * 60 + 1),
    );
    let after = ask(
        store,
        &pack,
        "a",
        &vendor("e4", "w.com", &[HEDGED]),
        at(50 * 60),
    );
    assert_eq!(attempts(after.result()).0, 1);
}

/// A decision ends the count: the case's next attempt is its first again.
pub fn a_decision_starts_a_new_count(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "d.com", &[HEDGED]), at(0));
    let decided = vendor_with_subprocessors("e2", "d.com", &[NO_DATA]);
    let decided = ask(store, &pack, "a", &decided, at(1));
    let result = decided.result();
    assert_eq!(result["status"], "decided");
    assert_eq!(result["outcome"], "approve");
    assert_eq!(result["attempts"]["next"], serde_json::Value::Null);
    assert_eq!(result["escalation"], serde_json::Value::Null);
    assert_eq!(
        result["nextStep"],
        "Mark the vendor approved in procurement."
    );
    let again = ask(store, &pack, "a", &vendor("e3", "d.com", &[HEDGED]), at(2));
    assert_eq!(attempts(again.result()), (1, 2, json!("retry")));
    let record = store.case("a", "vendor-risk", "d.com").unwrap().unwrap();
    assert_eq!(record.cycle, 1);
    // Each attempt shows the answers its result gave, for a person reading the case.
    let decided_attempt = &record.attempts[1];
    assert_eq!(decided_attempt.record.execution_id, "e2");
    let answers = serde_json::to_value(&decided_attempt.answers).unwrap();
    assert_eq!(answers, result["answers"], "{record:?}");
    assert!(!decided_attempt.answers.is_empty());
    // The fleet page's decisions per job.
    let counts: Vec<(String, String, u64)> = store
        .attempt_counts(at(0))
        .unwrap()
        .into_iter()
        .map(|c| (c.job, c.status, c.count))
        .collect();
    let vendor = |status: &str, n| ("vendor-risk".to_owned(), status.to_owned(), n);
    assert_eq!(counts, [vendor("decided", 1), vendor("undecided", 2)]);
    assert_eq!(
        store.attempt_counts(at(2)).unwrap().len(),
        1,
        "only attempts since the time given"
    );
}

/// "Resending the same request with the same execution ID is never counted twice."
pub fn a_resend_is_never_counted_twice(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    let body = vendor("e1", "r.com", &[HEDGED]);
    let first = ask(store, &pack, "a", &body, at(0));
    for minute in 1..4 {
        let resend = ask(store, &pack, "a", &body, at(minute));
        assert!(matches!(resend, super::support::Answer::Replayed(_)));
        assert_eq!(resend.result(), first.result());
    }
    let record = store.case("a", "vendor-risk", "r.com").unwrap().unwrap();
    assert_eq!(record.attempts.len(), 1);
    // Even after the case escalated, the resend returns what it returned.
    ask(store, &pack, "a", &vendor("e2", "r.com", &[HEDGED]), at(5));
    assert_eq!(
        ask(store, &pack, "a", &body, at(6)).result(),
        first.result()
    );
}

/// "A different body under the same `execution_id` is refused `execution_id_conflict`."
pub fn a_different_body_under_one_execution_id_is_a_conflict(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    ask(store, &pack, "a", &vendor("e1", "c.com", &[HEDGED]), at(0));
    let other = ask(store, &pack, "a", &vendor("e1", "c.com", &[NO_DATA]), at(1));
    assert_eq!(other.refused(), "execution_id_conflict");
    let record = store.case("a", "vendor-risk", "c.com").unwrap().unwrap();
    assert_eq!(record.attempts.len(), 1);
}

/// "result.retry: only the questions still open", with fix, notUsed by position, the
/// answers and where to look; nextStep is the pack's "when unresolved" instruction.
pub fn the_retry_guidance_names_what_to_fix(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    let body = vendor_with_subprocessors("e1", "g.com", &[HEDGED]);
    let result = ask(store, &pack, "a", &body, at(0)).result().clone();
    assert_eq!(result["status"], "undecided");
    assert_eq!(result["answers"], json!({"subprocessors": "none"}));
    let retry = result["retry"].as_object().unwrap();
    assert_eq!(
        retry.keys().collect::<Vec<_>>(),
        ["data_access"],
        "closed ones are left out"
    );
    let body = vendor("e2", "h.com", &[NO_DATA, HEDGED, vague("q1"), PII]);
    let result = ask(store, &pack, "a", &body, at(0)).result().clone();
    let guidance = &result["retry"]["data_access"];
    assert_eq!(
        guidance["notUsed"],
        json!([
            {"position": 0, "why": "conflict"},
            {"position": 1, "why": "hedged"},
            {"position": 2, "why": "no_answer"},
            {"position": 3, "why": "conflict"},
        ])
    );
    assert_eq!(guidance["answers"][1]["value"], "pii");
    assert!(
        guidance["fix"]
            .as_str()
            .unwrap()
            .starts_with("Quote the passage")
    );
    assert!(
        guidance["whereToLook"]
            .as_str()
            .unwrap()
            .contains("data processing agreement")
    );
    assert_eq!(result["nextStep"], pack.unresolved.next_step.as_str());
}

/// "How a good agent retries": replace what notUsed lists, keep what was used, send all.
pub fn a_good_agent_retries_to_a_decision(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    let first = ask(
        store,
        &pack,
        "a",
        &vendor("e1", "good.com", &[HEDGED]),
        at(0),
    );
    assert_eq!(
        first.result()["retry"]["data_access"]["notUsed"][0]["why"],
        "hedged"
    );
    let second = vendor_with_subprocessors("e2", "good.com", &[NO_DATA]);
    let second = ask(store, &pack, "a", &second, at(1));
    assert_eq!(second.result()["status"], "decided");
    assert_eq!(attempts(second.result()).0, 2);
}

/// "A request that leaves out a required related record decides nothing and keeps nothing,
/// but it counts as an attempt."
pub fn a_gap_counts_keeps_nothing_and_lists_missing(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    let mut body = vendor_with_subprocessors("e1", "gap.com", &[NO_DATA]);
    body.as_object_mut().unwrap().remove("related");
    let gap = ask(store, &pack, "a", &body, at(0));
    let result = gap.result();
    assert_eq!(result["status"], "gap");
    assert_eq!(result["outcome"], serde_json::Value::Null);
    assert_eq!(result["missing"], json!(["counterparty"]));
    assert_eq!(result["answers"], json!({}));
    assert_eq!(attempts(result), (1, 2, json!("retry")));
    // Kept nothing: the same evidence with the record closes questions for the first time.
    let full = vendor_with_subprocessors("e2", "gap.com", &[NO_DATA]);
    let full = ask(store, &pack, "a", &full, at(1));
    assert_eq!(full.result()["status"], "decided");
    assert_eq!(attempts(full.result()).0, 2);
    let record = store.case("a", "vendor-risk", "gap.com").unwrap().unwrap();
    assert!(record.attempts[0].record.closed.is_empty());
    assert!(record.attempts[0].record.cited.is_empty());
}

/// "Fixing a refused request is not an attempt."
pub fn a_malformed_request_uses_no_attempt(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    let mut bad = vendor("e1", "m.com", &[("dpa.pdf", "§1", &"x".repeat(1001))]);
    bad["colour"] = json!("red");
    bad["questions"]["nope"] = json!({"value": "x"});
    let refused = ask(store, &pack, "a", &bad, at(0));
    assert_eq!(refused.refused(), "malformed");
    let paths: Vec<&str> = refused.refusal()["error"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "colour",
            "questions.data_access.excerpts[0].text",
            "questions.nope"
        ]
    );
    assert!(store.case("a", "vendor-risk", "m.com").unwrap().is_none());
    let fixed = ask(store, &pack, "a", &vendor("e1", "m.com", &[HEDGED]), at(1));
    assert_eq!(attempts(fixed.result()).0, 1);
}

/// A case is one caller, one job, one subject: another caller's attempts are their own.
pub fn callers_do_not_share_cases(store: &dyn Store) {
    let pack = shipped("vendor-risk");
    ask(
        store,
        &pack,
        "alice",
        &vendor("e1", "s.com", &[HEDGED]),
        at(0),
    );
    ask(
        store,
        &pack,
        "alice",
        &vendor("e2", "s.com", &[HEDGED]),
        at(1),
    );
    let bob = ask(
        store,
        &pack,
        "bob",
        &vendor("e1", "s.com", &[NO_DATA]),
        at(2),
    );
    assert_eq!(attempts(bob.result()).0, 1, "bob's e1 is not alice's e1");
    assert!(
        store
            .case("bob", "vendor-risk", "s.com")
            .unwrap()
            .unwrap()
            .attempts
            .len()
            == 1
    );
}
