//! Every `message` pattern of a rule set in one pass over the message.
//!
//! Patterns written in ASCII run in an ASCII-only set (ASCII case folding, ASCII `\b` and
//! `\w`), whose automaton stays small however many rules there are; patterns with other
//! characters run in a Unicode set, so `Превышен` still matches `превышен`.

use regex::bytes::RegexSetBuilder as AsciiSetBuilder;
use regex::{RegexSet, RegexSetBuilder};

/// Caps on the compiled sets and their lazy DFA caches.
const SET_SIZE_LIMIT: usize = 64 << 20;
const DFA_CACHE_LIMIT: usize = 64 << 20;

/// The message patterns of a rule set, and the rule each belongs to.
#[derive(Debug, Clone)]
pub(super) struct MessageSet {
    ascii: regex::bytes::RegexSet,
    ascii_rules: Vec<usize>,
    unicode: RegexSet,
    unicode_rules: Vec<usize>,
}

impl MessageSet {
    /// Builds the sets from `(rule index, pattern)` pairs.
    pub(super) fn build(patterns: &[(usize, String)]) -> Result<MessageSet, regex::Error> {
        type Patterns<'a> = Vec<&'a (usize, String)>;
        let (ascii, unicode): (Patterns<'_>, Patterns<'_>) =
            patterns.iter().partition(|(_, p)| p.is_ascii());
        Ok(MessageSet {
            ascii: AsciiSetBuilder::new(ascii.iter().map(|(_, p)| p))
                .unicode(false)
                .case_insensitive(true)
                .size_limit(SET_SIZE_LIMIT)
                .dfa_size_limit(DFA_CACHE_LIMIT)
                .build()?,
            ascii_rules: ascii.iter().map(|(r, _)| *r).collect(),
            unicode: RegexSetBuilder::new(unicode.iter().map(|(_, p)| p))
                .case_insensitive(true)
                .size_limit(SET_SIZE_LIMIT)
                .dfa_size_limit(DFA_CACHE_LIMIT)
                .build()?,
            unicode_rules: unicode.iter().map(|(r, _)| *r).collect(),
        })
    }

    /// Appends the index of every rule whose pattern matches `text`.
    pub(super) fn matching_rules(&self, text: &str, out: &mut Vec<usize>) {
        if !self.ascii_rules.is_empty() {
            out.extend(
                self.ascii
                    .matches(text.as_bytes())
                    .iter()
                    .map(|i| self.ascii_rules[i]),
            );
        }
        if !self.unicode_rules.is_empty() {
            out.extend(
                self.unicode
                    .matches(text)
                    .iter()
                    .map(|i| self.unicode_rules[i]),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(set: &MessageSet, text: &str) -> Vec<usize> {
        let mut out = Vec::new();
        set.matching_rules(text, &mut out);
        out.sort_unstable();
        out
    }

    #[test]
    fn ascii_and_unicode_patterns_both_fold_case() {
        let set = MessageSet::build(&[
            (3, r"\btimed out\b".to_owned()),
            (7, "превышен лимит".to_owned()),
            (9, "quota".to_owned()),
        ])
        .unwrap();
        assert_eq!(hits(&set, "Request TIMED OUT after 30s"), [3]);
        assert_eq!(hits(&set, "Превышен лимит запросов"), [7]);
        assert_eq!(hits(&set, "Quota: превышен ЛИМИТ"), [7, 9]);
        assert!(hits(&set, "fine").is_empty());
    }
}
