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

use std::collections::BTreeMap;

use backstop_core::judge::{Judgement, QuestionEvidence};
use backstop_core::pack::Pack;

/// `judge::judge_case` at [`NOW`], for the tests here.
fn judged(
    pack: &Pack,
    questions: &BTreeMap<String, QuestionEvidence>,
    confidence: Option<f64>,
    source_status: Option<&str>,
) -> Judgement {
    backstop_core::judge::judge_case(pack, questions, confidence, source_status, NOW)
}

/// The time every judgement here is made at: 2026-12-01T00:00:00Z.
const NOW: jiff::Timestamp = jiff::Timestamp::constant(1_796_083_200, 0);
