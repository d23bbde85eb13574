//! One module per command; each writes to the writers it is given and returns an exit code.

pub mod calibrate;
pub mod cases;
pub mod check;
pub mod classify;
pub mod config;
pub mod demo;
pub mod dispatch;
pub mod docs;
pub mod external_decider;
pub mod hint;
pub mod mcp;
pub mod notify;
pub mod pack;
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
/// Exit code: a case request was refused (`decide`, `cases show`, `review show|resolve`).
pub const EXIT_REFUSED: u8 = 3;
