//! Verified retry: test output read and normalized (secrets are taken out first, by
//! [`crate::redact`]).
//!
//! | module | what it holds |
//! |---|---|
//! | `parse` | a test command's output read: runner, counts, failing ids, first error lines |
//! | `signature` | a failure's signature, normalized so the same failure matches across runs |
//! | `stop` | after a failed attempt: stop (and why) or go again (and how), in a fixed order |
//! | `decider` | the built-in decider: a score and a choice from the failed attempts so far |
//! | `calibrate` | the decider's scores checked against what happened next, from loop logs |

pub mod calibrate;
pub mod decider;
pub mod parse;
pub mod signature;
pub mod stop;
