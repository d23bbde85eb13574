//! What an operator may resolve a review item with: a held case takes one of its pack's
//! decisions, a task's escalation `retry` or `stop`, and either may be handed off.

use crate::issue::Issue;
use crate::pack::{OutcomeKind, Pack};

/// The resolution that passes an item to another person, with a note, deciding nothing.
pub const HANDOFF: &str = "handoff";
/// A task item: reset the task (lifting a policy stop) so its agent may try again.
pub const RETRY: &str = "retry";
/// A task item: the task stays stopped.
pub const STOP: &str = "stop";

/// The decisions an item may be resolved with, in the order a person reads them: for a case,
/// its pack's `decision` outcomes; for a task (`pack` is `None`), `retry` and `stop`; for
/// both, `handoff` last.
pub fn allowed(pack: Option<&Pack>) -> Vec<String> {
    let mut allowed: Vec<String> = match pack {
        Some(pack) => pack
            .outcomes
            .iter()
            .filter(|o| o.kind == OutcomeKind::Decision)
            .map(|o| o.id.clone())
            .collect(),
        None => vec![RETRY.to_owned(), STOP.to_owned()],
    };
    allowed.push(HANDOFF.to_owned());
    allowed
}

/// Refuses a decision outside `allowed`, naming every allowed one; `path` is the field or
/// flag it came from.
pub fn check(decision: &str, allowed: &[String], path: &str) -> Result<(), Issue> {
    if allowed.iter().any(|a| a == decision) {
        Ok(())
    } else {
        Err(Issue::new(
            path,
            "unknown_decision",
            format!(
                "`{decision}` is not a resolution of this item; it may be resolved with: {}",
                allowed.join(", ")
            ),
        ))
    }
}

/// Refuses a hand-off without a note (blank counts as none): the person it goes to must read
/// who takes it over and why. `path` is the note's field or flag.
pub fn check_note(decision: &str, note: Option<&str>, path: &str) -> Result<(), Issue> {
    if decision == HANDOFF && note.is_none_or(|n| n.trim().is_empty()) {
        Err(Issue::new(
            path,
            "missing_note",
            "a hand-off needs a note: who takes it over, and why",
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handoff_needs_a_note_and_nothing_else_does() {
        assert!(check_note(HANDOFF, Some("privacy team: needs the DPA"), "note").is_ok());
        for blank in [None, Some(""), Some("  \n")] {
            assert_eq!(
                check_note(HANDOFF, blank, "note").unwrap_err().code,
                "missing_note"
            );
        }
        assert!(check_note(RETRY, None, "note").is_ok());
    }

    const PACK: &str = include_str!("../../../../packs/vendor-risk.toml");

    #[test]
    fn a_case_takes_its_packs_decisions_and_a_handoff() {
        let pack = crate::pack::parse_pack(PACK).unwrap();
        // Its lanes (`review_privacy`, ...) are where items come from, not how they end.
        assert_eq!(allowed(Some(&pack)), ["approve", "reject", "handoff"]);
    }

    #[test]
    fn a_task_takes_retry_stop_or_a_handoff() {
        assert_eq!(allowed(None), ["retry", "stop", "handoff"]);
    }

    #[test]
    fn anything_else_is_refused_with_the_allowed_list() {
        let allowed = allowed(None);
        assert!(check("retry", &allowed, "decision").is_ok());
        let issue = check("totally_made_up", &allowed, "--decision").unwrap_err();
        assert_eq!(issue.path, "--decision");
        assert_eq!(issue.code, "unknown_decision");
        assert!(
            issue.message.ends_with("retry, stop, handoff"),
            "{}",
            issue.message
        );
    }
}
