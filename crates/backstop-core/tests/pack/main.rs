//! Integration tests of packs.
//!
//! - `shipped`: every pack in `packs/` parses with no issues, and says what its header claims
//! - `po_precedence`: the purchase-order pack's decision precedence, rule by rule, its failure
//!   modes, and properties of do-not-call and the confidence dampener

mod po_precedence;
mod shipped;
