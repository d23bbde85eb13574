//! The conformance suite every `Store` backend passes: seed 000's rules, sentence by sentence.
//!
//! A backend's test file declares `#[macro_use] mod conformance;`, names a function that
//! makes a fresh, empty store (`Some` of anything that derefs to a `Store`, or `None` to skip
//! where the backend is not reachable), and invokes
//! `conformance_suite!` with it; each scenario becomes one `#[test]`.

pub mod support;

pub mod attempts;
pub mod dispatch;
pub mod identity;
pub mod keeping;
pub mod lifecycle;
pub mod notify;
pub mod reviews;
pub mod speculation;

/// Expands to one `#[test]` per scenario, each on a fresh store from `$fresh()`.
macro_rules! conformance_suite {
    ($fresh:path) => {
        conformance_suite!($fresh, [doc = "One scenario of the conformance suite."]);
    };
    // `$attr` goes on every test: `[cfg_attr(not(..), ignore = "..")]` for a backend that is
    // not reachable everywhere, so a run without it reports the suite as ignored.
    ($fresh:path, $attr:tt) => {
        conformance_suite!(@each $fresh, $attr,
            attempts::case_names_are_normalized_by_the_match_rule,
            attempts::attempts_report_used_remaining_and_next,
            attempts::a_request_past_the_limit_is_refused_with_the_escalation,
            attempts::an_attempt_without_progress_escalates_at_once,
            attempts::the_extra_attempt_needs_progress,
            attempts::progress_by_a_new_source_or_a_new_closed_question,
            attempts::attempts_count_within_the_window_only,
            attempts::a_decision_starts_a_new_count,
            attempts::a_resend_is_never_counted_twice,
            attempts::a_different_body_under_one_execution_id_is_a_conflict,
            attempts::the_retry_guidance_names_what_to_fix,
            attempts::a_good_agent_retries_to_a_decision,
            attempts::a_gap_counts_keeps_nothing_and_lists_missing,
            attempts::a_malformed_request_uses_no_attempt,
            attempts::callers_do_not_share_cases,
            identity::issued_cases_get_an_id_and_retries_send_it_back,
            identity::starting_over_reuses_the_issued_case,
            identity::issued_reuse_is_exact_unless_the_pack_folds,
            identity::an_unknown_issued_id_is_refused,
            identity::a_first_request_without_text_opens_a_new_case,
            identity::issued_cases_are_limited_per_caller_per_day,
            identity::fields_identity_ignores_order,
            identity::content_identity_follows_the_text,
            reviews::a_held_result_opens_a_review_and_blocks_attempts,
            reviews::resolving_a_review_ends_the_cycle,
            reviews::a_review_is_resolved_once,
            reviews::a_gather_lane_allows_one_retry,
            reviews::a_gather_retry_that_decides_closes_the_review,
            reviews::a_gather_retry_left_undecided_goes_back_to_review,
            reviews::a_task_escalation_opens_one_review_item_at_a_time,
            keeping::records_keep_keys_sources_locators_and_hashes_only,
            keeping::purge_deletes_attempts_past_retention,
            keeping::call_events_are_journaled_and_purged,
            keeping::call_state_is_kept_with_the_journal,
            keeping::a_journal_transaction_commits_whole_or_not_at_all,
            keeping::a_resolution_and_the_reset_it_asks_commit_together,
            keeping::review_ids_never_repeat_after_a_purge,
            keeping::journaled_text_comes_back_byte_for_byte,
            keeping::the_position_moves_only_with_a_checkpoint,
            speculation::a_speculation_broken_by_another_writer_is_applied_under_the_lock,
            lifecycle::a_final_decision_is_never_overwritten,
            lifecycle::a_resolved_case_takes_no_late_result,
            lifecycle::a_reconcile_uses_no_attempt_and_happens_once,
            lifecycle::the_purchase_order_precedence_holds_on_the_ledger,
            dispatch::the_same_content_is_permitted_once,
            dispatch::sixteen_concurrent_requests_get_one_permit,
            dispatch::an_unknown_outcome_is_reconciled_and_a_failed_one_retried_within_the_budget,
            dispatch::a_suppressed_contact_and_a_decided_case_are_not_dispatched,
            dispatch::a_delivery_is_recorded_once_per_event_id,
            dispatch::dispatches_past_retention_are_purged_and_suppressions_kept,
            dispatch::a_settled_dispatch_never_moves_back,
            dispatch::a_do_not_call_decision_suppresses_the_cases_contact,
            dispatch::a_batch_with_one_unlisted_contact_is_simulated_whole,
            dispatch::a_lifted_suppression_is_kept_with_who_when_and_why,
            notify::a_held_case_is_notified_once_per_subscribed_target,
            notify::nothing_is_enqueued_without_a_subscriber,
            notify::an_attempt_limit_refusal_is_notified_once_per_cycle,
            notify::a_refused_dispatch_is_notified,
            notify::a_task_escalation_is_notified,
            notify::claims_are_leased_and_a_lost_claim_changes_nothing,
            notify::a_removed_target_is_given_up,
            notify::notifications_past_retention_are_purged,
            notify::eight_workers_claim_each_notification_once,
        );
    };
    (@each $fresh:path, $attr:tt, $($module:ident :: $name:ident),+ $(,)?) => {
        $(
            #[test]
            #$attr
            fn $name() {
                // A backend that is not reachable here (no database configured) skips.
                let Some(store) = $fresh() else { return };
                conformance::$module::$name(&*store);
            }
        )+
    };
}
