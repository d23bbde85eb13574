//! One module per command; each writes to the writers it is given and returns an exit code.

pub mod approaches;
pub mod calibrate;
pub mod calibrate_calls;
pub mod cases;
pub mod check;
pub mod classify;
pub mod config;
pub mod demo;
pub mod dispatch;
pub mod docs;
pub mod external_decider;
pub mod hint;
pub mod hint_counted;
pub mod hook;
pub mod mcp;
pub mod notify;
pub mod pack;
pub mod proxy;
pub mod purge;
pub mod reconcile;
pub mod replay;
pub mod review;
pub mod rules;
pub mod run_loop;
pub mod serve;
pub mod simulate;
pub mod strategies;
pub mod suppress;
pub mod task;

/// Exit code: done.
pub const EXIT_OK: u8 = 0;
/// Exit code: the checked input has issues, or an I/O failure.
pub const EXIT_ISSUES: u8 = 1;
/// Exit code: bad input (flags, report, rules file).
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code: a well-formed request was refused (`unknown_case`, `decision_not_allowed`, ...).
pub const EXIT_REFUSED: u8 = 3;

/// The exit code of a refusal whose HTTP status is `status`, the same in every command and
/// for a refusal a service answered (`hint --server`): a request that is malformed, too
/// large or unprocessable is bad input (2); the service failing or not ready is 1, as a local
/// ledger failure is; any other refusal (unknown, conflicting, unauthorized, too many) is 3.
pub fn exit_for_status(status: u16) -> u8 {
    match status {
        400 | 413 | 415 | 422 => EXIT_BAD_INPUT,
        500.. => EXIT_ISSUES,
        _ => EXIT_REFUSED,
    }
}
