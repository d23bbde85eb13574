//! Every occurrence of a set of literals in a text, overlapping ones included, in one pass.
//!
//! The message gate and the extractors' phrase check both need all the literals a text holds,
//! not the leftmost ones. `aho-corasick`'s overlapping iterator does that through a trait
//! object and a resumable state, which costs more than the automaton's own step; this loop
//! walks a concrete automaton byte by byte and reports each match where it ends.

use aho_corasick::Anchored;
use aho_corasick::automaton::Automaton;

/// Calls `hit(literal index, start)` for each occurrence of a literal of `automaton` in
/// `text`, in order of where it ends. The automaton must be built with
/// [`aho_corasick::MatchKind::Standard`] (the only kind that reports overlapping matches).
pub(super) fn overlapping<A: Automaton>(
    automaton: &A,
    text: &[u8],
    mut hit: impl FnMut(usize, usize),
) {
    let mut state = automaton
        .start_state(Anchored::No)
        .expect("a standard automaton has an unanchored start state");
    for (at, &byte) in text.iter().enumerate() {
        state = automaton.next_state(Anchored::No, state, byte);
        if automaton.is_special(state) && automaton.is_match(state) {
            for index in 0..automaton.match_len(state) {
                let literal = automaton.match_pattern(state, index);
                hit(literal.as_usize(), at + 1 - automaton.pattern_len(literal));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use aho_corasick::MatchKind;
    use aho_corasick::dfa::DFA;

    #[test]
    fn overlapping_and_nested_literals_are_all_reported() {
        let dfa = DFA::builder()
            .match_kind(MatchKind::Standard)
            .build(["connect", ": connection refused", "refused", "no"])
            .unwrap();
        let mut hits = Vec::new();
        super::overlapping(&dfa, b"x: connection refused", |i, at| hits.push((i, at)));
        hits.sort_unstable();
        assert_eq!(hits, [(0, 3), (1, 1), (2, 14)]);
        let mut none = Vec::new();
        super::overlapping(&dfa, b"", |i, at| none.push((i, at)));
        assert!(none.is_empty());
    }
}
