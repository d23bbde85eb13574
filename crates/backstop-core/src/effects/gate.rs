//! The gate every side effect passes: one answer per recipient from what the store knows of
//! its key, its case and its contact, the pack's policy, the service's live key and the time.
//! Pure: the store loads the facts and applies what the answer says, in one transaction.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use crate::case::{EscalationView, RefusalCode, Trigger, escalation};
use crate::pack::{DispatchPolicy, Pack};

/// Where a dispatch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum DispatchState {
    /// Permitted and persisted; the agent has not said whether it went out.
    Permitted,
    /// The agent (or the simulator) sent it; its result has not come.
    Sent,
    /// The agent says it did not go out: the same content may be dispatched again, within the
    /// budget.
    Failed,
    /// The agent does not know whether it went out (a timeout after sending).
    Unknown,
    /// Its result could not be judged: the sweep fetches it again.
    Reconciling,
    /// Its result was applied to the case.
    Answered,
    /// It stayed unknown after reconciling: a person takes over.
    Escalated,
}

impl DispatchState {
    /// Every state, in lifecycle order.
    pub const ALL: [DispatchState; 7] = [
        DispatchState::Permitted,
        DispatchState::Sent,
        DispatchState::Failed,
        DispatchState::Unknown,
        DispatchState::Reconciling,
        DispatchState::Answered,
        DispatchState::Escalated,
    ];

    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchState::Permitted => "permitted",
            DispatchState::Sent => "sent",
            DispatchState::Failed => "failed",
            DispatchState::Unknown => "unknown",
            DispatchState::Reconciling => "reconciling",
            DispatchState::Answered => "answered",
            DispatchState::Escalated => "escalated",
        }
    }

    /// The state with this wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether its outcome is unknown: the same content must be reconciled, not sent again.
    pub fn outcome_unknown(self) -> bool {
        matches!(
            self,
            DispatchState::Permitted | DispatchState::Unknown | DispatchState::Reconciling
        )
    }

    /// Whether the sweep looks after it once `reconcile_at` passes.
    pub fn awaits_result(self) -> bool {
        matches!(
            self,
            DispatchState::Permitted
                | DispatchState::Sent
                | DispatchState::Unknown
                | DispatchState::Reconciling
        )
    }
}

/// What an agent may report about a permitted dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum AnswerOutcome {
    /// It went out.
    Sent,
    /// It certainly did not go out.
    Failed,
    /// It may have gone out (a timeout after sending).
    Unknown,
}

impl From<AnswerOutcome> for DispatchState {
    fn from(outcome: AnswerOutcome) -> Self {
        match outcome {
            AnswerOutcome::Sent => DispatchState::Sent,
            AnswerOutcome::Failed => DispatchState::Failed,
            AnswerOutcome::Unknown => DispatchState::Unknown,
        }
    }
}

/// How a permitted dispatch goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum DispatchMode {
    /// To the real recipient.
    Live,
    /// To the simulator.
    Simulated,
}

impl DispatchMode {
    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchMode::Live => "live",
            DispatchMode::Simulated => "simulated",
        }
    }
}

/// What the store knows when a recipient reaches the gate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateFacts {
    /// The dispatch already stored under this recipient's key: its state and sends.
    pub prior: Option<(DispatchState, u32)>,
    /// Whether the case is decided for good (a decision, or a person's resolution).
    pub terminal: bool,
    /// The lane of the case's open review item.
    pub review_lane: Option<String>,
    /// How many dispatches the case has had (each send of each key).
    pub case_sends: u32,
    /// When the case's latest dispatch was permitted.
    pub last_send_at: Option<Timestamp>,
    /// Whether the contact is on the suppression list for this case (or, by the pack's
    /// scope, for every case).
    pub suppressed: bool,
}

/// The answer for one recipient.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go: the key is persisted with the intent.
    Permitted(DispatchMode),
    /// Not now: with when, and why.
    Deferred {
        /// Not before this.
        not_before: Timestamp,
        /// `quiet_hours`, `not_due` or `backoff`.
        reason: &'static str,
        /// For people.
        message: String,
    },
    /// The contact asked not to be contacted.
    Suppressed,
    /// This content was dispatched already: the original stands.
    Duplicate,
    /// An earlier dispatch of this content has an unknown outcome: reconcile it first.
    Reconcile,
    /// Refused: escalate.
    Refused {
        /// `case_terminal`, `case_in_review` or `dispatch_budget_spent`.
        code: RefusalCode,
        /// For people.
        message: String,
        /// The hand-off to make.
        escalation: Option<EscalationView>,
    },
}

/// What the gate weighs beside the facts.
#[derive(Debug, Clone)]
pub struct GateInput<'a> {
    /// The pack.
    pub pack: &'a Pack,
    /// Whether the service holds a live key.
    pub live_key: bool,
    /// The recipient's contact.
    pub contact: &'a str,
    /// Every contact of the recipient's batch, its own included: one not on the allowlist
    /// sends the whole batch to the simulator, so a batch is never dialled in part.
    pub batch: &'a [&'a str],
    /// The recipient's time zone, resolved by the shell.
    pub zone: &'a TimeZone,
    /// The request's "not due before".
    pub not_before: Option<Timestamp>,
    /// Now.
    pub now: Timestamp,
}

/// The answer for one recipient. Checks run in this order: same content already stored
/// (duplicate, reconcile, or a failed send tried again), a decided case, a case in review,
/// a suppressed contact, the budget, not due yet, the backoff, quiet hours, then live or
/// simulated. Deferrals are never escalated: they fix themselves.
pub fn gate(input: &GateInput<'_>, facts: &GateFacts) -> Verdict {
    let pack = input.pack;
    let policy = pack.dispatch.clone().unwrap_or_default();
    if let Some((state, _)) = facts.prior {
        if state.outcome_unknown() {
            return Verdict::Reconcile;
        }
        if state != DispatchState::Failed {
            return Verdict::Duplicate;
        }
    }
    if facts.terminal {
        return Verdict::Refused {
            code: RefusalCode::CaseTerminal,
            message: "the case is decided: nothing more is dispatched for it".to_owned(),
            escalation: None,
        };
    }
    if let Some(lane) = &facts.review_lane {
        return Verdict::Refused {
            code: RefusalCode::CaseInReview,
            message: format!(
                "the case is held in `{lane}` for a person: nothing is dispatched until they resolve it"
            ),
            escalation: escalation(
                pack,
                pack.outcome(lane)
                    .and_then(|o| o.escalate.as_deref())
                    .unwrap_or(&pack.attempts.escalate),
                Trigger::Held,
            ),
        };
    }
    if facts.suppressed {
        return Verdict::Suppressed;
    }
    if facts.case_sends >= policy.max_per_case {
        return Verdict::Refused {
            code: RefusalCode::DispatchBudgetSpent,
            message: format!(
                "the case has had {} dispatches, its budget: a person takes over, nothing more is sent",
                facts.case_sends
            ),
            escalation: escalation(pack, &pack.attempts.escalate, Trigger::AttemptLimit),
        };
    }
    if let Some(due) = input.not_before.filter(|t| *t > input.now) {
        return Verdict::Deferred {
            not_before: due,
            reason: "not_due",
            message: format!("not due before {due}"),
        };
    }
    if let (Some(last), true) = (facts.last_send_at, facts.case_sends > 0) {
        let due = backoff_due(&policy, last, facts.case_sends);
        if due > input.now {
            return Verdict::Deferred {
                not_before: due,
                reason: "backoff",
                message: format!(
                    "the case's dispatch {} waits out its backoff, until {due}",
                    facts.case_sends + 1
                ),
            };
        }
    }
    if let Some(quiet) = policy.quiet_hours {
        let local = input.now.to_zoned_datetime(input.zone.clone());
        if quiet.contains(local.time()) {
            let end = quiet_end(&local, quiet.end);
            return Verdict::Deferred {
                not_before: end,
                reason: "quiet_hours",
                message: format!(
                    "{} is within quiet hours in {}; try again at {end}",
                    local.time(),
                    input
                        .zone
                        .iana_name()
                        .unwrap_or("the recipient's time zone")
                ),
            };
        }
    }
    Verdict::Permitted(mode(&policy, input))
}

fn mode(policy: &DispatchPolicy, input: &GateInput<'_>) -> DispatchMode {
    let listed = listed(policy, input.contact) && input.batch.iter().all(|c| listed(policy, c));
    if policy.live && input.live_key && listed {
        DispatchMode::Live
    } else {
        DispatchMode::Simulated
    }
}

/// Whether `contact` is on the pack's allowlist (every contact is, without one).
fn listed(policy: &DispatchPolicy, contact: &str) -> bool {
    policy
        .allowlist
        .as_ref()
        .is_none_or(|list| list.iter().any(|c| c == contact))
}

/// Why a permitted recipient of `batch` goes to the simulator, for people.
pub fn simulated_because(
    policy: &DispatchPolicy,
    live_key: bool,
    contact: &str,
    batch: &[&str],
) -> &'static str {
    if !policy.live {
        "the pack's [dispatch] is not live"
    } else if !live_key {
        "the service holds no live key"
    } else if !listed(policy, contact) {
        "the contact is not on the pack's allowlist"
    } else if !batch.iter().all(|c| listed(policy, c)) {
        "another recipient of the batch is not on the pack's allowlist, so the whole batch \
         goes to the simulator (a batch is never dialled in part)"
    } else {
        "live"
    }
}

/// When the case's next dispatch is due: the backoff after the first, doubled after each.
pub fn backoff_due(policy: &DispatchPolicy, last: Timestamp, sends: u32) -> Timestamp {
    let factor = 1_i32 << sends.saturating_sub(1).min(16);
    let wait = policy.backoff.checked_mul(factor).unwrap_or(policy.backoff);
    last.checked_add(wait).unwrap_or(Timestamp::MAX)
}

/// The next time the local clock reads `end`, after `local`.
fn quiet_end(local: &jiff::ZonedDateTime, end: jiff::civil::Time) -> Timestamp {
    let today = local.date().to_datetime(end);
    let zone = local.time_zone().clone();
    let at = |dt: jiff::civil::DateTime| {
        dt.to_zoned_datetime(zone.clone())
            .map(|z| z.timestamp())
            .ok()
    };
    match at(today) {
        Some(t) if t > local.timestamp() => t,
        _ => today
            .checked_add(jiff::Span::new().days(1))
            .ok()
            .and_then(at)
            .unwrap_or_else(|| local.timestamp()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::parse_pack;

    fn pack(dispatch: &str) -> Pack {
        parse_pack(&format!(
            r#"
job = "calls"
title = "Calls"
identity = {{ mode = "id" }}
attempts = {{ escalate = "desk" }}
unresolved = {{ next_step = "Look again.", escalate = "desk" }}
[envelope]
not_completed = "reconcile"
empty = "reconcile"
[dispatch]
{dispatch}
[[escalations]]
id = "desk"
why = "Unsettled."
to = "The desk"
next_step = "Open a ticket."
"#
        ))
        .unwrap()
    }

    fn input<'a>(pack: &'a Pack, zone: &'a TimeZone, now: &str) -> GateInput<'a> {
        GateInput {
            pack,
            live_key: true,
            contact: "+15550100",
            batch: &["+15550100"],
            zone,
            not_before: None,
            now: now.parse().unwrap(),
        }
    }

    #[test]
    fn live_needs_the_pack_the_key_and_the_allowlist() {
        let zone = TimeZone::UTC;
        let live = pack("live = true\nallowlist = [\"+15550100\"]");
        let facts = GateFacts::default();
        let at = "2026-12-02T12:00:00Z";
        assert_eq!(
            gate(&input(&live, &zone, at), &facts),
            Verdict::Permitted(DispatchMode::Live)
        );
        let mut no_key = input(&live, &zone, at);
        no_key.live_key = false;
        assert_eq!(
            gate(&no_key, &facts),
            Verdict::Permitted(DispatchMode::Simulated)
        );
        let mut unlisted = input(&live, &zone, at);
        unlisted.contact = "+15559999";
        assert_eq!(
            gate(&unlisted, &facts),
            Verdict::Permitted(DispatchMode::Simulated)
        );
        let not_live = pack("");
        assert_eq!(
            gate(&input(&not_live, &zone, at), &facts),
            Verdict::Permitted(DispatchMode::Simulated)
        );
    }

    #[test]
    fn one_unlisted_contact_sends_its_whole_batch_to_the_simulator() {
        let zone = TimeZone::UTC;
        let live = pack("live = true\nallowlist = [\"+15550100\", \"+15550101\"]");
        let at = "2026-12-02T12:00:00Z";
        let mut listed_batch = input(&live, &zone, at);
        listed_batch.batch = &["+15550100", "+15550101"];
        assert_eq!(
            gate(&listed_batch, &GateFacts::default()),
            Verdict::Permitted(DispatchMode::Live)
        );
        let mut mixed = input(&live, &zone, at);
        mixed.batch = &["+15550100", "+15559999"];
        assert_eq!(
            gate(&mixed, &GateFacts::default()),
            Verdict::Permitted(DispatchMode::Simulated),
            "a listed contact in a batch with an unlisted one is not dialled"
        );
        let policy = live.dispatch.clone().unwrap();
        let why = simulated_because(&policy, true, "+15550100", mixed.batch);
        assert!(why.contains("another recipient of the batch"), "{why}");
    }

    #[test]
    fn unknown_outcomes_reconcile_and_sent_ones_are_duplicates() {
        let zone = TimeZone::UTC;
        let p = pack("");
        let i = input(&p, &zone, "2026-12-02T12:00:00Z");
        for state in DispatchState::ALL {
            let facts = GateFacts {
                prior: Some((state, 1)),
                ..GateFacts::default()
            };
            let expected = match state {
                DispatchState::Permitted | DispatchState::Unknown | DispatchState::Reconciling => {
                    Verdict::Reconcile
                }
                DispatchState::Failed => Verdict::Permitted(DispatchMode::Simulated),
                _ => Verdict::Duplicate,
            };
            assert_eq!(gate(&i, &facts), expected, "{state:?}");
        }
    }

    #[test]
    fn the_budget_refuses_and_escalates_and_the_backoff_defers() {
        let zone = TimeZone::UTC;
        let p = pack("max_per_case = 2\nbackoff = \"1h\"");
        let now: Timestamp = "2026-12-02T12:00:00Z".parse().unwrap();
        let i = input(&p, &zone, "2026-12-02T12:00:00Z");
        let one = GateFacts {
            case_sends: 1,
            last_send_at: Some(now - jiff::SignedDuration::from_mins(30)),
            ..GateFacts::default()
        };
        match gate(&i, &one) {
            Verdict::Deferred {
                reason, not_before, ..
            } => {
                assert_eq!(reason, "backoff");
                assert_eq!(not_before, now + jiff::SignedDuration::from_mins(30));
            }
            other => panic!("{other:?}"),
        }
        let later = GateFacts {
            last_send_at: Some(now - jiff::SignedDuration::from_hours(2)),
            ..one.clone()
        };
        assert_eq!(
            gate(&i, &later),
            Verdict::Permitted(DispatchMode::Simulated)
        );
        let spent = GateFacts {
            case_sends: 2,
            ..later
        };
        match gate(&i, &spent) {
            Verdict::Refused {
                code, escalation, ..
            } => {
                assert_eq!(code, RefusalCode::DispatchBudgetSpent);
                assert_eq!(escalation.unwrap().trigger, Trigger::AttemptLimit);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn quiet_hours_are_read_in_the_recipients_zone_and_defer() {
        let p = pack("quiet_hours = { start = \"20:00\", end = \"08:00\" }");
        let chicago = TimeZone::get("America/Chicago").unwrap();
        // 03:00 UTC is 21:00 in Chicago (CST, UTC-6): quiet until 08:00 local, 14:00 UTC.
        match gate(
            &input(&p, &chicago, "2026-12-02T03:00:00Z"),
            &GateFacts::default(),
        ) {
            Verdict::Deferred {
                reason, not_before, ..
            } => {
                assert_eq!(reason, "quiet_hours");
                assert_eq!(
                    not_before,
                    "2026-12-02T14:00:00Z".parse::<Timestamp>().unwrap()
                );
            }
            other => panic!("{other:?}"),
        }
        // The same instant is 03:00 in UTC: quiet too, until 08:00 UTC.
        match gate(
            &input(&p, &TimeZone::UTC, "2026-12-02T03:00:00Z"),
            &GateFacts::default(),
        ) {
            Verdict::Deferred { not_before, .. } => {
                assert_eq!(
                    not_before,
                    "2026-12-02T08:00:00Z".parse::<Timestamp>().unwrap()
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            gate(
                &input(&p, &chicago, "2026-12-02T18:00:00Z"),
                &GateFacts::default()
            ),
            Verdict::Permitted(DispatchMode::Simulated)
        );
    }

    #[test]
    fn a_decided_case_a_held_case_and_a_suppressed_contact_are_not_dispatched() {
        let zone = TimeZone::UTC;
        let p = pack("");
        let i = input(&p, &zone, "2026-12-02T12:00:00Z");
        let code = |facts: GateFacts| match gate(&i, &facts) {
            Verdict::Refused { code, .. } => code.as_str(),
            Verdict::Suppressed => "suppressed",
            other => panic!("{other:?}"),
        };
        assert_eq!(
            code(GateFacts {
                terminal: true,
                ..GateFacts::default()
            }),
            "case_terminal"
        );
        assert_eq!(
            code(GateFacts {
                review_lane: Some("x".into()),
                ..GateFacts::default()
            }),
            "case_in_review"
        );
        assert_eq!(
            code(GateFacts {
                suppressed: true,
                ..GateFacts::default()
            }),
            "suppressed"
        );
    }
}
