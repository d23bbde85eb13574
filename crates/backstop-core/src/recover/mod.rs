//! Recovery: what an agent does next after a classified failure.
//!
//! | module | what it holds |
//! |---|---|
//! | `strategy` | the strategy table: per class, an ordered list of actions with limits |
//! | `backoff` | delays: exponential, jittered, capped, never below a server's hint |
//! | `breaker` | a circuit breaker per tool |
//! | `budget` | a retry budget per tool |
//! | `calibrate` | the journal read back: how often the k-th retry recovered, per tool and class |
//! | `idempotency` | whether a resend could do a call's effect twice |
//! | `recovery` | per-task counters, turned into the next step; the rows a ledger keeps |
//! | `journal` | the call journal's events and the call state they build, in journal order |
//! | `replay` | a recorded trace of call outcomes replayed through the policy, with totals |
//! | `simulate` | clients contending for one resource: what each backoff kind costs |
pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod calibrate;
pub mod idempotency;
pub mod journal;
pub mod recovery;
pub mod replay;
pub mod simulate;
pub mod strategy;

pub use self::recovery::{Context, Recovery, RecoveryOptions, Step};
pub use self::strategy::{Action, StrategyTable};
