//! Integration tests of packs.
//!
//! - `shipped`: every pack in `packs/` parses with no issues, and says what its header claims
//! - `features`: `on_unknown`, `[envelope]` and `attempts.after_decision`, judged, and their
//!   mistakes refused with their paths
//! - `po_precedence`: the purchase-order pack against its decision precedence written out as a
//!   plain function, over every combination; properties of do-not-call and the dampener

mod features;
mod po_precedence;
mod shipped;
