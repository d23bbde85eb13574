//! What the recovery says, step by step.

use backstop_core::Class;
use backstop_core::recover::{Action, Context, Recovery, RecoveryOptions, StrategyTable};

use crate::{failure, on, recovery, t};

fn actions(h: &mut Recovery, task: &str, json: &str, n: usize) -> Vec<Action> {
    let f = failure(json);
    (0..n)
        .map(|_| h.next(task, &f, &Context::default(), t(0)).action)
        .collect()
}

#[test]
fn transient_retries_then_falls_back_then_escalates() {
    use Action::*;
    let mut h = recovery();
    let got = actions(&mut h, "t1", r#"{"http_status": 503}"#, 6);
    assert_eq!(
        got,
        [
            RetrySame,
            RetrySame,
            RetrySame,
            FallbackTool,
            Escalate,
            Escalate
        ]
    );
    let last = h.next(
        "t1",
        &failure(r#"{"http_status": 503}"#),
        &Context::default(),
        t(0),
    );
    assert!(
        last.reason
            .contains("every strategy for transient is spent"),
        "{}",
        last.reason
    );
    assert!(last.escalation.is_some());
    assert_eq!(last.attempts.class_used, last.attempts.class_max);
}

#[test]
fn every_default_sequence() {
    use Action::*;
    let cases: [(&str, &[Action]); 11] = [
        (r#"{"http_status": 429}"#, &[Wait, Wait, Wait, Escalate]),
        (
            r#"{"error_code": "insufficient_quota"}"#,
            &[Escalate, Escalate],
        ),
        (r#"{"http_status": 401}"#, &[Escalate]),
        (r#"{"http_status": 451}"#, &[Stop, Stop, Stop]),
        (
            r#"{"http_status": 501}"#,
            &[FallbackTool, FallbackTool, Escalate],
        ),
        (
            r#"{"output": {}, "schema": {"required": ["id"]}}"#,
            &[ChangeApproach, FallbackTool, Stop, Stop],
        ),
        (r#"{"http_status": 400}"#, &[FixInput, ChangeApproach, Stop]),
        (
            r#"{"message": "no results found"}"#,
            &[BroadenQuery, BroadenQuery, FallbackTool, Escalate],
        ),
        (r#"{"http_status": 409}"#, &[ChangeApproach, Escalate]),
        (
            r#"{"side_effects": {"done": 1, "total": 3}}"#,
            &[Compensate, Compensate, Escalate],
        ),
        (
            r#"{"error_code": "context_length_exceeded"}"#,
            &[RetryPromoted, ReduceScope, ReduceScope, Escalate],
        ),
    ];
    for (json, want) in cases {
        let mut h = recovery();
        assert_eq!(actions(&mut h, "t", json, want.len()), want, "{json}");
    }
}

#[test]
fn unclassified_stops_with_its_reason_unless_granted_once() {
    let mut h = recovery();
    let f = failure(r#"{"message": "the frobnicator declined"}"#);
    assert_eq!(f.class, Class::Unclassified);
    let step = h.next("t", &f, &Context::default(), t(0));
    assert_eq!(step.action, Action::Stop);
    assert!(step.hint.contains("no rule matched"), "{}", step.hint);
    h.grant("t", t(0));
    let step = h.next("t", &f, &Context::default(), t(0));
    assert_eq!(step.action, Action::RetrySame);
    assert!(step.reason.contains("operator granted"), "{}", step.reason);
    assert_eq!(
        h.next("t", &f, &Context::default(), t(0)).action,
        Action::Stop,
        "exactly one retry"
    );
}

#[test]
fn a_configured_grant_rule_gives_one_retry_for_the_evidence_it_names() {
    let table = StrategyTable::load(Some((
        "mine.toml",
        "[[grants]]\nid = \"frob\"\ntool = \"frobnicator\"\nerror = \"declined\"\nreason = \"it declines while warming up\"\n",
    )))
    .unwrap();
    let mut h = Recovery::new(table, RecoveryOptions { seed: 1 });
    let f = failure(r#"{"message": "the frobnicator declined"}"#);
    let ctx = Context {
        tool: Some("frobnicator".into()),
        error: Some("the frobnicator declined".into()),
        ..Context::default()
    };
    let step = h.next("t", &f, &ctx, t(0));
    assert_eq!(step.action, Action::RetrySame);
    assert!(step.reason.contains("grant rule `frob`"), "{}", step.reason);
    assert_eq!(h.next("t", &f, &ctx, t(0)).action, Action::Stop);
    assert_eq!(
        h.next("other", &f, &on("elsewhere"), t(0)).action,
        Action::Stop,
        "the rule names its tool"
    );
}

#[test]
fn not_retryable_skips_the_retry_strategies() {
    let mut h = recovery();
    let got = actions(
        &mut h,
        "t",
        r#"{"http_status": 500, "headers": {"x-should-retry": "false"}}"#,
        2,
    );
    assert_eq!(got, [Action::FallbackTool, Action::Escalate]);
}

#[test]
fn a_rate_limit_waits_at_least_the_servers_hint() {
    let mut h = recovery();
    let f = failure(r#"{"http_status": 429, "headers": {"retry-after": "7"}}"#);
    let step = h.next("t", &f, &Context::default(), t(0));
    assert_eq!(step.action, Action::Wait);
    assert!(
        step.delay_ms >= 7000 && step.delay_ms <= 7250,
        "{}",
        step.delay_ms
    );
    assert!(step.hint.contains("7s"), "{}", step.hint);
}

#[test]
fn a_hint_longer_than_the_longest_wait_defers_or_escalates() {
    let mut h = recovery();
    let f = failure(r#"{"http_status": 429, "headers": {"retry-after": "3600"}}"#);
    let step = h.next("t", &f, &Context::default(), t(0));
    assert_eq!(step.action, Action::Wait);
    let until = step
        .defer_until
        .expect("a long wait is deferred, never slept");
    assert!(until >= t(3600), "{until}");
    assert!(
        step.reason.contains("longer than the longest wait"),
        "{}",
        step.reason
    );

    let table = StrategyTable::load(Some(("m", "[limits]\nlong_wait = \"escalate\"\n"))).unwrap();
    let mut h = Recovery::new(table, RecoveryOptions { seed: 1 });
    let step = h.next("t", &f, &Context::default(), t(0));
    assert_eq!(step.action, Action::Escalate);
    assert!(step.defer_until.is_none());
}

#[test]
fn peek_does_not_consume_and_reset_forgets() {
    let mut h = recovery();
    let f = failure(r#"{"http_status": 503}"#);
    let ctx = Context::default();
    let peeked = h.peek("t", &f, &ctx, t(0));
    assert_eq!(h.peek("t", &f, &ctx, t(0)), peeked);
    let taken = h.next("t", &f, &ctx, t(0));
    assert_eq!(
        (taken.action, taken.attempts.class_used),
        (peeked.action, 1)
    );
    assert_eq!(h.peek("t", &f, &ctx, t(0)).attempts.class_used, 2);
    h.reset("t");
    assert_eq!(h.next("t", &f, &ctx, t(0)).attempts.class_used, 1);
}

#[test]
fn classes_have_their_own_limits_and_the_task_has_one_across_them() {
    let mut h = recovery();
    let transient = failure(r#"{"http_status": 503}"#);
    let invalid = failure(r#"{"http_status": 400}"#);
    for _ in 0..5 {
        h.next("t", &transient, &Context::default(), t(0));
    }
    // A storm of transient failures has not spent what invalid input needs.
    assert_eq!(
        h.next("t", &invalid, &Context::default(), t(0)).action,
        Action::FixInput
    );

    let table = StrategyTable::load(Some(("m", "[limits]\ntask_max_attempts = 3\n"))).unwrap();
    let mut h = Recovery::new(table, RecoveryOptions { seed: 1 });
    let steps: Vec<_> = (0..4)
        .map(|i| {
            let f = if i % 2 == 0 { &transient } else { &invalid };
            h.next("t", f, &Context::default(), t(0))
        })
        .collect();
    assert_eq!(steps[2].attempts.task_used, 3);
    assert_eq!(steps[3].action, Action::Escalate);
    assert!(
        steps[3].reason.contains("all 3 of its attempts"),
        "{}",
        steps[3].reason
    );
}

#[test]
fn an_open_breaker_turns_a_retry_into_a_fallback_or_a_wait() {
    let mut h = recovery();
    let f = failure(r#"{"http_status": 503}"#);
    // Ten failures of one tool across tasks open its breaker (rate 1.0 over 10 calls).
    for i in 0..10 {
        h.record_failure("search", f.class, t(i));
    }
    let step = h.next("fresh", &f, &on("search"), t(11));
    assert_eq!(step.action, Action::FallbackTool);
    assert!(step.reason.contains("circuit breaker"), "{}", step.reason);
    assert_eq!(
        step.breaker.unwrap().state,
        backstop_core::recover::breaker::BreakerState::Open
    );

    // With no fallback allowed, the agent waits until the breaker lets a probe through.
    let no_fallback = failure(r#"{"http_status": 503, "headers": {"x-should-retry": "true"}}"#);
    let mut table = StrategyTable::builtin();
    table.classes.insert(
        Class::Transient,
        table.strategies(Class::Transient)[..1].to_vec(),
    );
    let mut h = Recovery::new(table, RecoveryOptions { seed: 1 });
    for i in 0..10 {
        h.record_failure("db", Class::Transient, t(i));
    }
    let mut f2 = no_fallback;
    f2.fallback_allowed = false;
    let step = h.next("x", &f2, &on("db"), t(11));
    assert_eq!(step.action, Action::Wait);
    assert!(step.defer_until.is_some());
}

#[test]
fn invalid_input_and_policy_denials_do_not_trip_the_breaker() {
    let mut h = recovery();
    for (i, json) in [r#"{"http_status": 400}"#, r#"{"http_status": 451}"#]
        .iter()
        .cycle()
        .take(30)
        .enumerate()
    {
        h.next(&format!("t{i}"), &failure(json), &on("api"), t(0));
    }
    let (breaker, _) = h.tool_views("api", t(1)).unwrap();
    assert_eq!(
        breaker.state,
        backstop_core::recover::breaker::BreakerState::Closed
    );
    assert_eq!(breaker.failures, 0);
}

#[test]
fn an_empty_retry_budget_means_no_retry() {
    let table = StrategyTable::load(Some((
        "m",
        "[budget]\nratio = 0.0\nmin_per_sec = 0.0\ncapacity = 2.0\n[breaker]\nmin_calls = 1000\nwindow = 1000\n",
    )))
    .unwrap();
    let mut h = Recovery::new(table, RecoveryOptions { seed: 1 });
    let f = failure(r#"{"http_status": 503}"#);
    let got: Vec<Action> = (0..4)
        .map(|i| h.next(&format!("t{i}"), &f, &on("api"), t(0)).action)
        .collect();
    assert_eq!(got[..2], [Action::RetrySame, Action::RetrySame]);
    let step = h.next("t9", &f, &on("api"), t(0));
    assert_eq!(step.action, Action::FallbackTool);
    assert!(step.reason.contains("retry budget"), "{}", step.reason);
}

#[test]
fn hints_are_filled_from_the_context() {
    let mut h = recovery();
    let ctx = Context {
        tool: Some("web_search".into()),
        operation: Some("search news".into()),
        error: Some("HTTP 503".into()),
        ..Context::default()
    };
    let step = h.next("t", &failure(r#"{"http_status": 503}"#), &ctx, t(0));
    assert!(
        step.hint
            .starts_with("web_search failed for a passing reason (HTTP 503)"),
        "{}",
        step.hint
    );
    assert!(!step.hint.contains('{'), "{}", step.hint);
}

#[test]
fn after_a_policy_denial_the_task_stops_whatever_it_tries_next() {
    let mut h = recovery();
    let denial = failure(r#"{"message": "blocked by sandbox policy"}"#);
    assert_eq!(
        h.next("t", &denial, &on("shell"), t(0)).action,
        Action::Stop
    );
    // The agent reaches for another tool: a workaround, refused.
    let other = failure(r#"{"http_status": 503}"#);
    let step = h.next("t", &other, &on("python"), t(1));
    assert_eq!(step.action, Action::Stop);
    assert!(
        step.reason.contains("policy denial of shell"),
        "{}",
        step.reason
    );
    // Other tasks are not affected, and an operator's reset ends the stop.
    assert_eq!(
        h.next("u", &other, &on("python"), t(1)).action,
        Action::RetrySame
    );
    let stopped = h.stopped_tasks();
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0].0, "t");
    assert!(stopped[0].1.contains("shell"), "{stopped:?}");
    h.reset("t");
    assert!(h.stopped_tasks().is_empty());
    assert_eq!(
        h.next("t", &other, &on("python"), t(2)).action,
        Action::RetrySame
    );
}

#[test]
fn a_request_for_a_fallback_after_a_policy_denial_is_refused() {
    let mut h = recovery();
    let denial = failure(r#"{"http_status": 451}"#);
    let ctx = Context {
        request: Some(Action::FallbackTool),
        ..on("web")
    };
    let step = h.next("t", &denial, &ctx, t(0));
    assert_eq!(step.action, Action::Stop);
    assert!(
        step.reason
            .contains("a request for `fallback_tool` is refused"),
        "{}",
        step.reason
    );
    // Asking to escalate instead is not a workaround.
    let ctx = Context {
        request: Some(Action::Escalate),
        ..on("web")
    };
    assert!(!h.peek("u", &denial, &ctx, t(0)).reason.contains("refused"));
}

#[test]
fn the_attempts_a_step_shows_are_the_attempts_it_used() {
    let mut h = recovery();
    let f = failure(r#"{"http_status": 503}"#);
    for i in 0..10 {
        h.record_failure("search", f.class, t(i));
    }
    // Around an open breaker: a task attempt is used, no strategy attempt.
    let first = h.next("t", &f, &on("search"), t(11));
    assert_eq!(first.action, Action::FallbackTool);
    assert_eq!(
        (first.attempts.class_used, first.attempts.task_used),
        (0, 1)
    );
    let second = h.next("t", &f, &on("search"), t(12));
    assert_eq!(
        (second.attempts.class_used, second.attempts.task_used),
        (0, 2)
    );
}

#[test]
fn a_task_success_resets_its_counters_but_never_lifts_a_policy_stop() {
    let mut h = recovery();
    let transient = failure(r#"{"http_status": 503}"#);
    let ctx = Context::default();
    h.next("t", &transient, &ctx, t(0));
    assert_eq!(h.next("t", &transient, &ctx, t(1)).attempts.class_used, 2);
    h.record_task_success("t");
    let after = h.next("t", &transient, &ctx, t(2));
    assert_eq!(
        (after.attempts.class_used, after.attempts.task_used),
        (1, 1)
    );

    let denial = failure(r#"{"message": "blocked by sandbox policy"}"#);
    assert_eq!(
        h.next("d", &denial, &on("shell"), t(0)).action,
        Action::Stop
    );
    h.record_task_success("d");
    let step = h.next("d", &transient, &on("python"), t(1));
    assert_eq!(step.action, Action::Stop, "{}", step.reason);

    // A success of a task never seen is nothing to reset.
    h.record_task_success("never");
    assert_eq!(
        h.next("never", &transient, &ctx, t(3)).attempts.class_used,
        1
    );
}

#[test]
fn a_fallback_step_names_the_next_tool_of_the_chain_and_a_spent_chain_escalates() {
    let table = StrategyTable::load(Some((
        "chain.toml",
        "[tools.search]\nfallbacks = [\"search-b\", \"search-c\"]\n",
    )))
    .unwrap();
    let mut h = Recovery::new(table, RecoveryOptions { seed: 1 });
    let missing = failure(r#"{"http_status": 501}"#);
    let first = h.next("t1", &missing, &on("search"), t(0));
    assert_eq!(
        (first.action, first.fallback_tool.as_deref()),
        (Action::FallbackTool, Some("search-b"))
    );
    let second = h.next("t2", &missing, &on("search-b"), t(1));
    assert_eq!(second.fallback_tool.as_deref(), Some("search-c"));
    let spent = h.next("t3", &missing, &on("search-c"), t(2));
    assert_eq!(spent.action, Action::Escalate, "{}", spent.reason);
    assert!(spent.escalation.is_some());
    assert!(spent.reason.contains("every fallback"), "{}", spent.reason);

    // A fallback whose breaker is open is passed over.
    for i in 0..50 {
        h.record_failure("search-b", Class::Transient, t(3 + i));
    }
    let skip = h.next("t4", &missing, &on("search"), t(60));
    assert_eq!(
        skip.fallback_tool.as_deref(),
        Some("search-c"),
        "{}",
        skip.reason
    );
    // A peek names it too, and a tool with no chain names none.
    assert_eq!(
        h.peek("t5", &missing, &on("search"), t(60))
            .fallback_tool
            .as_deref(),
        Some("search-c")
    );
    let unchained = h.next("t6", &missing, &on("other"), t(60));
    assert_eq!(
        (unchained.action, unchained.fallback_tool),
        (Action::FallbackTool, None)
    );
}

#[test]
fn a_bad_fallback_chain_is_refused_with_its_path() {
    let issues = StrategyTable::load(Some((
        "chain.toml",
        "[tools.search]\nfallbacks = [\"search\", \"b\", \"b\", \"\"]\n[tools.x]\nfallback = [\"y\"]\n",
    )))
    .unwrap_err();
    let listed: Vec<String> = issues.iter().map(ToString::to_string).collect();
    assert!(
        listed
            .iter()
            .any(|i| i.contains("unknown_key") || i.contains("fallback")),
        "{listed:#?}"
    );
    let issues = StrategyTable::load(Some((
        "chain.toml",
        "[tools.search]\nfallbacks = [\"search\", \"b\", \"b\", \"\"]\n",
    )))
    .unwrap_err();
    let codes: Vec<(&str, &str)> = issues
        .iter()
        .map(|i| (i.path.as_str(), i.code.as_str()))
        .collect();
    assert_eq!(
        codes,
        [
            ("chain.toml:tools.search.fallbacks[0]", "self_fallback"),
            ("chain.toml:tools.search.fallbacks[2]", "duplicate"),
            ("chain.toml:tools.search.fallbacks[3]", "bad_name"),
        ]
    );
}

#[test]
fn counts_expire_with_their_window_and_a_stop_never_does() {
    use backstop_core::recover::recovery::TASK_WINDOW;
    let mut h = recovery();
    let transient = failure(r#"{"http_status": 503}"#);
    let denial = failure(r#"{"message": "blocked by sandbox policy"}"#);
    for _ in 0..3 {
        h.next("counted", &transient, &on("api"), t(0));
    }
    h.next("stopped", &denial, &on("shell"), t(0));
    let window = TASK_WINDOW.as_secs();
    assert_eq!(
        h.task_view("counted", t(window - 1)).task_used,
        3,
        "inside the window"
    );
    assert_eq!(h.task_view("counted", t(window)).task_used, 0, "past it");
    let step = h.next("counted", &transient, &on("api"), t(window));
    assert_eq!(step.attempts.task_used, 1, "the task starts again");
    let later = t(window * 10);
    assert_eq!(
        h.next("stopped", &transient, &on("api"), later).action,
        Action::Stop,
        "a stop is kept until reset"
    );
    h.reset("stopped");
    assert_ne!(
        h.next("stopped", &transient, &on("api"), later).action,
        Action::Stop
    );
}

#[test]
fn every_step_explains_itself_in_a_sentence_beside_its_machine_reason() {
    let mut h = recovery();
    let quota = failure(r#"{"error_code": "insufficient_quota", "http_status": 429}"#);
    let step = h.next("q1", &quota, &on("search"), t(0));
    assert_eq!(step.explanation, quota.reason, "the rule's own sentence");
    assert!(
        step.explanation.contains("quota or credit"),
        "{}",
        step.explanation
    );
    assert!(
        step.reason.starts_with("quota_exhausted: strategy 1 of"),
        "{}",
        step.reason
    );

    // A task stopped by an earlier denial: the sentence says so, whatever the new failure is.
    let denial = failure(r#"{"http_status": 451}"#);
    h.next("d1", &denial, &on("search"), t(0));
    let later = h.next(
        "d1",
        &failure(r#"{"http_status": 503}"#),
        &on("fetch"),
        t(1),
    );
    assert_eq!(later.action, Action::Stop);
    assert!(
        later
            .explanation
            .starts_with("This task was stopped by an earlier policy denial of search"),
        "{}",
        later.explanation
    );

    // A task out of attempts: the sentence says that, then what the failure was.
    let table = StrategyTable::load(Some(("two.toml", "[limits]\ntask_max_attempts = 2\n")))
        .expect("a small table");
    let mut h = Recovery::new(table, RecoveryOptions { seed: 0 });
    let transient = failure(r#"{"http_status": 503}"#);
    for i in 0..2 {
        h.next("c1", &transient, &Context::default(), t(i));
    }
    let capped = h.next("c1", &transient, &Context::default(), t(2));
    assert!(
        capped
            .explanation
            .starts_with("This task has used all 2 attempts"),
        "{}",
        capped.explanation
    );
    assert!(
        capped.explanation.ends_with(&transient.reason),
        "{}",
        capped.explanation
    );
}
