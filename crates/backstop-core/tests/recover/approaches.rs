//! Failed approaches: a tool and operation on which a task spent every attempt of a class is
//! remembered for its caller, and the caller's next task starts by changing approach.

use backstop_core::recover::recovery::{APPROACHES_PER_CALLER, task_key};
use backstop_core::recover::{Action, Context, Recovery, Step};

use super::{failure, recovery, t};

fn on(tool: &str, operation: &str) -> Context {
    Context {
        tool: Some(tool.to_owned()),
        operation: Some(operation.to_owned()),
        error: Some("HTTP 503".to_owned()),
        ..Context::default()
    }
}

/// Fails `task` with a 503 until its step is a hand-off; the steps given.
fn spend(r: &mut Recovery, task: &str, ctx: &Context, at: i64) -> Vec<Step> {
    let mut steps = Vec::new();
    for _ in 0..10 {
        let step = r.next(task, &failure(r#"{"http_status": 503}"#), ctx, t(at));
        let done = step.action == Action::Escalate;
        steps.push(step);
        if done {
            return steps;
        }
    }
    panic!("no hand-off in 10 failures: {steps:?}");
}

#[test]
fn a_spent_approach_turns_the_next_tasks_retry_into_a_change_of_approach() {
    let mut r = recovery();
    let search = on("search", "GET /v1/search");
    let spent = spend(&mut r, &task_key("a", "t1"), &search, 0);
    assert!(spent.iter().all(|s| s.failed_approach.is_none()));
    // The same task failing on after its hand-off adds one failure, not a whole spend.
    let again = r.next(
        &task_key("a", "t1"),
        &failure(r#"{"http_status": 503}"#),
        &search,
        t(30),
    );
    assert_eq!(again.action, Action::Escalate);

    // The same caller's next task, on the same tool and operation.
    let step = r.next(
        &task_key("a", "t2"),
        &failure(r#"{"http_status": 503}"#),
        &search,
        t(60),
    );
    assert_eq!(step.action, Action::ChangeApproach, "{step:?}");
    let approach = step.failed_approach.as_ref().unwrap();
    assert_eq!(approach.failures, u32::try_from(spent.len()).unwrap() + 1);
    assert_eq!(approach.tool, "search");
    assert!(
        approach
            .summary
            .starts_with("search GET /v1/search failed 6 times"),
        "{}",
        approach.summary
    );
    assert!(
        step.hint
            .starts_with("This approach failed before for this caller"),
        "{}",
        step.hint
    );
    assert!(step.hint.contains("Change approach first"), "{}", step.hint);

    // Another caller, or another operation: nothing remembered for them.
    let other_caller = r.next(
        &task_key("b", "t1"),
        &failure(r#"{"http_status": 503}"#),
        &search,
        t(60),
    );
    assert_eq!(
        (other_caller.action, other_caller.failed_approach),
        (Action::RetrySame, None)
    );
    let other_op = r.next(
        &task_key("a", "t3"),
        &failure(r#"{"http_status": 503}"#),
        &on("search", "GET /v1/suggest"),
        t(60),
    );
    assert_eq!(other_op.action, Action::RetrySame);

    // Listed for the caller, and on the task views of the tasks that used the tool.
    let listed = r.failed_approaches(Some("a"), t(60));
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].caller, "a");
    assert!(r.failed_approaches(Some("b"), t(60)).is_empty());
    assert_eq!(
        r.task_view(&task_key("a", "t1"), t(60))
            .failed_approaches
            .len(),
        1
    );
}

#[test]
fn a_success_of_the_tool_or_a_day_forgets_it() {
    let mut r = recovery();
    let search = on("search", "GET /v1/search");
    spend(&mut r, &task_key("a", "t1"), &search, 0);
    assert_eq!(r.failed_approaches(None, t(1)).len(), 1);
    // A day after its last failure it is gone.
    assert!(r.failed_approaches(None, t(24 * 3600 + 1)).is_empty());
    let later = r.next(
        &task_key("a", "t2"),
        &failure(r#"{"http_status": 503}"#),
        &search,
        t(24 * 3600 + 1),
    );
    assert_eq!(later.action, Action::RetrySame);
    // Spent again, then the tool succeeds: gone at once.
    spend(&mut r, &task_key("a", "t3"), &search, 24 * 3600 + 2);
    assert_eq!(r.failed_approaches(None, t(24 * 3600 + 3)).len(), 1);
    r.record_success("search", t(24 * 3600 + 4));
    assert!(r.failed_approaches(None, t(24 * 3600 + 5)).is_empty());
}

#[test]
fn a_policy_denial_is_no_approach_and_a_restart_keeps_the_approaches() {
    let mut r = recovery();
    let denied = r.next(
        &task_key("a", "p"),
        &failure(r#"{"http_status": 451}"#),
        &on("news", "GET /v1/article"),
        t(0),
    );
    assert_eq!(denied.action, Action::Stop);
    assert!(r.failed_approaches(None, t(1)).is_empty());

    let search = on("search", "GET /v1/search");
    spend(&mut r, &task_key("a", "t1"), &search, 0);
    let rows = r.take_changes();
    let mut restarted = recovery();
    for row in &rows {
        restarted.restore(row).unwrap();
    }
    let step = restarted.next(
        &task_key("a", "t2"),
        &failure(r#"{"http_status": 503}"#),
        &search,
        t(10),
    );
    assert_eq!(step.action, Action::ChangeApproach, "{step:?}");
}

#[test]
fn a_caller_keeps_its_most_recent_approaches_only() {
    let mut r = recovery();
    for i in 0..=APPROACHES_PER_CALLER {
        // A tool each: one tool's breaker would open long before.
        let ctx = on(&format!("search-{i}"), "GET /v1/search");
        spend(
            &mut r,
            &task_key("a", &format!("t{i}")),
            &ctx,
            i64::try_from(i).unwrap(),
        );
    }
    let kept = r.failed_approaches(Some("a"), t(10_000));
    assert_eq!(kept.len(), APPROACHES_PER_CALLER);
    assert!(kept.iter().all(|a| a.approach.tool != "search-0"));
}
