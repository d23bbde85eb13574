//! A resend of a call that may have taken effect is held back when the call is not
//! idempotent: the step is `reconcile`, never `retry_same`.

use backstop_core::Report;
use backstop_core::recover::{Action, Context, Recovery, RecoveryOptions, StrategyTable};

use super::{failure, recovery, t};

/// The step for a report given as JSON, its context taken from the report as the service takes it.
fn step_for(recovery: &mut Recovery, task: &str, json: &str) -> backstop_core::recover::Step {
    let report = Report::from_json(json).unwrap();
    let context = Context::for_report(Context::default(), &report);
    recovery.next(task, &failure(json), &context, t(0))
}

#[test]
fn a_timed_out_post_is_reconciled_and_never_resent() {
    let mut r = recovery();
    let json = r#"{"tool": "payments", "operation": "POST /v1/charges", "exception": "httpx.ReadTimeout"}"#;
    for _ in 0..3 {
        let step = step_for(&mut r, "charge-1", json);
        assert_ne!(step.action, Action::RetrySame, "{step:?}");
        if step.action == Action::Escalate {
            return;
        }
        assert_eq!(step.action, Action::Reconcile, "{step:?}");
        assert_eq!(step.delay_ms, 0);
        assert!(
            step.hint.contains("check whether it took effect"),
            "{}",
            step.hint
        );
        assert!(
            step.reason.contains("POST is not idempotent"),
            "{}",
            step.reason
        );
        assert!(
            step.explanation.contains("could do it twice"),
            "{}",
            step.explanation
        );
    }
}

#[test]
fn the_same_timeout_on_an_idempotent_call_is_retried() {
    for json in [
        r#"{"tool": "payments", "operation": "GET /v1/charges/ch_1", "exception": "httpx.ReadTimeout"}"#,
        r#"{"tool": "payments", "operation": "PUT /v1/items/7", "http_status": 504}"#,
        r#"{"tool": "payments", "operation": "POST /v1/charges", "idempotent": true, "exception": "httpx.ReadTimeout"}"#,
        // Nothing says what the call does: as before, a transient failure is retried.
        r#"{"tool": "search", "exception": "httpx.ReadTimeout"}"#,
    ] {
        let step = step_for(&mut recovery(), "t", json);
        assert_eq!(step.action, Action::RetrySame, "{json}: {step:?}");
    }
}

#[test]
fn a_post_refused_before_it_was_acted_on_is_retried() {
    for json in [
        // The connection was never made.
        r#"{"tool": "payments", "operation": "POST /v1/charges", "exception": "httpx.ConnectTimeout"}"#,
        r#"{"tool": "payments", "operation": "POST /v1/charges", "errno": "ECONNREFUSED"}"#,
        // The server answered that it did nothing.
        r#"{"tool": "payments", "operation": "POST /v1/charges", "http_status": 503}"#,
    ] {
        let step = step_for(&mut recovery(), "t", json);
        assert!(step.action.is_retry(), "{json}: {step:?}");
    }
    // A rate limit is a refusal too: wait, then send it again.
    let limited = r#"{"tool": "payments", "operation": "POST /v1/charges", "http_status": 429, "headers": {"retry-after": "2"}}"#;
    let step = step_for(&mut recovery(), "t", limited);
    assert!(step.action.is_retry(), "{step:?}");
}

#[test]
fn a_post_under_an_idempotency_key_is_resent_under_the_same_key() {
    let json = r#"{"tool": "payments", "operation": "POST /v1/charges", "http_status": 502, "idempotency_key": "order-7-charge"}"#;
    let step = step_for(&mut recovery(), "t", json);
    assert_eq!(step.action, Action::RetrySame, "{step:?}");
    assert!(
        step.hint
            .contains("same idempotency key (`order-7-charge`)"),
        "{}",
        step.hint
    );
}

#[test]
fn a_tool_set_not_idempotent_is_reconciled_with_its_own_check() {
    let table = StrategyTable::load(Some((
        "strategies.toml",
        "[tools.phone]\nidempotent = false\nreconcile = \"list today's calls to the number and look for this one\"\n",
    )))
    .unwrap();
    let mut r = Recovery::new(table, RecoveryOptions { seed: 7 });
    let json = r#"{"tool": "phone", "operation": "place_call", "message": "socket hang up"}"#;
    let step = step_for(&mut r, "t", json);
    assert_eq!(step.action, Action::Reconcile, "{step:?}");
    assert!(
        step.hint
            .ends_with("To check: list today's calls to the number and look for this one"),
        "{}",
        step.hint
    );
    assert!(
        step.reason
            .contains("the strategies set phone as not idempotent"),
        "{}",
        step.reason
    );
    // The operator's setting stands over what the call says of itself.
    let said = r#"{"tool": "phone", "operation": "place_call", "message": "socket hang up", "idempotent": true}"#;
    assert_eq!(step_for(&mut r, "u", said).action, Action::Reconcile);
    // A tool set idempotent is resent even on POST.
    let table = StrategyTable::load(Some((
        "strategies.toml",
        "[tools.llm]\nidempotent = true\n",
    )))
    .unwrap();
    let mut r = Recovery::new(table, RecoveryOptions { seed: 7 });
    let json = r#"{"tool": "llm", "operation": "POST /v1/messages", "idempotent": false, "exception": "APITimeoutError"}"#;
    assert_eq!(step_for(&mut r, "v", json).action, Action::RetrySame);
}

#[test]
fn a_bad_reconcile_hint_is_refused_with_its_path() {
    let issues = StrategyTable::load(Some((
        "strategies.toml",
        "[tools.phone]\nidempotent = false\nreconcile = \"\"\n",
    )))
    .unwrap_err();
    assert!(
        issues
            .iter()
            .any(|i| i.path.ends_with("tools.phone.reconcile") && i.code == "bad_hint"),
        "{issues:?}"
    );
}
