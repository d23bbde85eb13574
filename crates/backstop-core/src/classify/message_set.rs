//! Every `message` pattern of a rule set, matched without compiling what cannot match.
//!
//! A rule's `message` is a list of patterns; each pattern is compiled on its own, the first
//! time a message could match it. For the built-in rules, the build step found the literals
//! every match of a pattern must start with (`quota.{0,120}per minute` starts with `quota`);
//! one Aho-Corasick pass over the message (folded to lower case) names the patterns whose
//! literals occur, and only those are compiled and run. A pattern with no known literals,
//! and every pattern of a user's file, is tried on every message.
//!
//! Patterns written in ASCII fold ASCII case and use ASCII `\b` and `\w`; patterns with other
//! characters fold Unicode case, so `Превышен` still matches `превышен`.

use std::collections::HashMap;
use std::sync::OnceLock;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, meta};

use super::matcher::REGEX_SIZE_LIMIT;

/// The gate's automaton holds only this many first bytes of each literal (it stays small and
/// quick to build); a hit is then checked against the whole literal.
const KEY_LEN: usize = 6;

/// A process that has read this many messages will read more: the gate is then rebuilt as a
/// DFA, larger and slower to build but faster to run. A one-shot `classify` never gets there.
const WARM: u32 = 256;

/// One pattern's literals (one of which every match starts with) and whether it matches
/// exactly those.
type PatternLiterals = (&'static [&'static str], bool);

include!(concat!(env!("OUT_DIR"), "/message_literals.rs"));

/// One pattern of one rule.
#[derive(Debug, Clone)]
struct Pattern {
    /// The rule it belongs to.
    rule: usize,
    source: String,
    compiled: OnceLock<Matcher>,
}

/// A compiled pattern: bytes (ASCII rules) or Unicode.
#[derive(Debug, Clone)]
enum Matcher {
    Ascii(meta::Regex),
    Unicode(regex::Regex),
}

impl Pattern {
    fn compile(source: &str) -> Result<Matcher, String> {
        if source.is_ascii() {
            meta::Builder::new()
                .syntax(
                    syntax::Config::new()
                        .case_insensitive(true)
                        .unicode(false)
                        .utf8(false),
                )
                .configure(meta::Config::new().nfa_size_limit(Some(REGEX_SIZE_LIMIT)))
                .build(source)
                .map(Matcher::Ascii)
                .map_err(|e| e.to_string())
        } else {
            regex::RegexBuilder::new(source)
                .case_insensitive(true)
                .size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map(Matcher::Unicode)
                .map_err(|e| e.to_string())
        }
    }

    fn matcher(&self) -> &Matcher {
        self.compiled.get_or_init(|| {
            Pattern::compile(&self.source).expect("message patterns are checked when parsed")
        })
    }

    /// Whether the pattern matches anywhere in `text`.
    fn is_match(&self, text: &str) -> bool {
        match self.matcher() {
            Matcher::Ascii(regex) => regex.is_match(text.as_bytes()),
            Matcher::Unicode(regex) => regex.is_match(text),
        }
    }

    /// Whether a match starts at byte `at` (look-arounds still see the text before it).
    fn is_match_at(&self, text: &str, at: usize) -> bool {
        match self.matcher() {
            Matcher::Ascii(regex) => regex.is_match(
                Input::new(text.as_bytes())
                    .range(at..)
                    .anchored(Anchored::Yes)
                    .earliest(true),
            ),
            Matcher::Unicode(regex) => regex.is_match_at(text, at),
        }
    }
}

/// The message patterns of a rule set, and what picks the ones worth trying.
#[derive(Debug, Clone)]
pub(super) struct MessageSet {
    patterns: Vec<Pattern>,
    /// The gate's keys: the first [`KEY_LEN`] bytes of the literals. `opens[i]` lists, for
    /// key `i`, each whole literal and the pattern it lets through.
    literals: Vec<&'static str>,
    opens: Vec<Vec<(&'static str, usize, bool)>>,
    /// The gate, built the first time a report has a message (`--status 503` never pays).
    gate: OnceLock<AhoCorasick>,
    /// How many messages this set has read.
    uses: Arc<AtomicU32>,
    /// The gate as a DFA, for processes past [`WARM`] messages (the service, `--jsonl`).
    fast_gate: OnceLock<AhoCorasick>,
    /// Patterns with no known literals: tried on every message.
    always: Vec<usize>,
}

impl MessageSet {
    /// Builds the set from `(rule index, rule id, patterns)`: the built-in rules' patterns
    /// are gated by their literals, the others always tried.
    pub(super) fn build<'a>(
        rules: impl IntoIterator<Item = (usize, &'a str, &'a [String])>,
    ) -> Self {
        let known: HashMap<&str, &[PatternLiterals]> = MESSAGE_LITERALS.iter().copied().collect();
        let mut patterns = Vec::new();
        let mut literal_index: HashMap<&str, usize> = HashMap::new();
        let mut literals: Vec<&'static str> = Vec::new();
        let mut opens: Vec<Vec<(&'static str, usize, bool)>> = Vec::new();
        let mut always = Vec::new();
        for (rule, id, sources) in rules {
            // A user's rule may reuse no built-in id, but its patterns are its own: the
            // literals apply only when the patterns are the built-in ones.
            let gates = known.get(id).filter(|g| g.len() == sources.len());
            for (i, source) in sources.iter().enumerate() {
                let index = patterns.len();
                patterns.push(Pattern {
                    rule,
                    source: source.clone(),
                    compiled: OnceLock::new(),
                });
                match gates.map(|g| g[i]).filter(|(g, _)| !g.is_empty()) {
                    Some((gate, exact)) => {
                        for &literal in gate {
                            let key = &literal[..literal.len().min(KEY_LEN)];
                            let slot = *literal_index.entry(key).or_insert_with(|| {
                                literals.push(key);
                                opens.push(Vec::new());
                                literals.len() - 1
                            });
                            opens[slot].push((literal, index, exact));
                        }
                    }
                    None => always.push(index),
                }
            }
        }
        MessageSet {
            patterns,
            literals,
            opens,
            gate: OnceLock::new(),
            uses: Arc::new(AtomicU32::new(0)),
            fast_gate: OnceLock::new(),
            always,
        }
    }

    /// Compiles every pattern now.
    ///
    /// # Errors
    /// The first pattern that does not compile.
    pub(super) fn compile_all(&self) -> Result<(), String> {
        for pattern in &self.patterns {
            if pattern.compiled.get().is_none() {
                let _ = pattern.compiled.set(Pattern::compile(&pattern.source)?);
            }
        }
        Ok(())
    }

    /// Appends the index of every rule with a pattern that matches `text` (each rule once).
    ///
    /// A gated pattern's every match starts with one of its literals, so it is tried only
    /// where the gate found one, anchored there; the others are searched in the whole text.
    pub(super) fn matching_rules(&self, text: &str, out: &mut Vec<usize>) {
        // (pattern, where a match may start: `None` for anywhere)
        let mut candidates: Vec<(usize, Option<usize>)> =
            self.always.iter().map(|&p| (p, None)).collect();
        let mut matched_exact: Vec<usize> = Vec::new();
        let build = |kind| {
            AhoCorasickBuilder::new()
                .kind(Some(kind))
                .match_kind(MatchKind::Standard)
                .build(&self.literals)
                .expect("literals this few always build")
        };
        let gate = match self.fast_gate.get() {
            Some(fast) => Some(fast),
            None if self.literals.is_empty() => None,
            None if self.uses.fetch_add(1, Ordering::Relaxed) >= WARM => {
                Some(self.fast_gate.get_or_init(|| build(AhoCorasickKind::DFA)))
            }
            None => Some(
                self.gate
                    .get_or_init(|| build(AhoCorasickKind::ContiguousNFA)),
            ),
        };
        if let Some(gate) = gate {
            // The literals are lower-case ASCII; the text is folded the same way (byte for
            // byte, so positions carry over).
            let folded = text.to_ascii_lowercase();
            for found in gate.find_overlapping_iter(&folded) {
                let at = found.start();
                let rest = &folded.as_bytes()[at..];
                for &(literal, pattern, exact) in &self.opens[found.pattern().as_usize()] {
                    if rest.starts_with(literal.as_bytes()) {
                        // A pattern that is exactly its literals has matched already.
                        candidates.push((pattern, if exact { None } else { Some(at) }));
                        if exact {
                            matched_exact.push(pattern);
                        }
                    }
                }
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        let start = out.len();
        for (index, at) in candidates {
            let pattern = &self.patterns[index];
            if out[start..].last() == Some(&pattern.rule) {
                continue;
            }
            let matched = match at {
                Some(at) => pattern.is_match_at(text, at),
                None if matched_exact.contains(&index) => true,
                None => pattern.is_match(text),
            };
            if matched {
                out.push(pattern.rule);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(rules: &[(usize, &str, &[&str])]) -> MessageSet {
        let owned: Vec<(usize, &str, Vec<String>)> = rules
            .iter()
            .map(|(i, id, p)| (*i, *id, p.iter().map(|s| (*s).to_owned()).collect()))
            .collect();
        MessageSet::build(owned.iter().map(|(i, id, p)| (*i, *id, p.as_slice())))
    }

    fn hits(set: &MessageSet, text: &str) -> Vec<usize> {
        let mut out = Vec::new();
        set.matching_rules(text, &mut out);
        out.sort_unstable();
        out
    }

    #[test]
    fn ascii_and_unicode_patterns_both_fold_case() {
        let set = set(&[
            (3, "x.a", &[r"\btimed out\b"]),
            (7, "x.b", &["превышен лимит"]),
            (9, "x.c", &["quota", "budget"]),
        ]);
        assert_eq!(hits(&set, "Request TIMED OUT after 30s"), [3]);
        assert_eq!(hits(&set, "Превышен лимит запросов"), [7]);
        assert_eq!(hits(&set, "Quota: превышен ЛИМИТ, budget"), [7, 9]);
        assert!(hits(&set, "fine").is_empty());
    }

    #[test]
    fn built_in_patterns_are_gated_and_compiled_only_when_their_literals_occur() {
        let rules = super::super::rules::RuleSet::builtin();
        let messages = &rules.messages;
        assert!(
            !messages.literals.is_empty() && messages.always.len() < messages.patterns.len() / 4,
            "most built-in patterns have literals: {} always tried of {}",
            messages.always.len(),
            messages.patterns.len()
        );
        let mut out = Vec::new();
        messages.matching_rules("connection refused", &mut out);
        let compiled = messages
            .patterns
            .iter()
            .filter(|p| p.compiled.get().is_some())
            .count();
        assert!(!out.is_empty());
        assert!(
            compiled < messages.patterns.len() / 4,
            "{compiled} of {} patterns compiled for one message",
            messages.patterns.len()
        );
    }

    /// The gate is only a shortcut: over every message of the corpus, the rules it finds are
    /// exactly those a search of every pattern in the whole text finds (past [`WARM`]
    /// messages, through the DFA gate too).
    #[test]
    fn the_gate_finds_what_a_full_search_finds() {
        let rules = super::super::rules::RuleSet::builtin();
        let messages = &rules.messages;
        let corpus = [
            include_str!("../../tests/data/labeled_reports.jsonl"),
            include_str!("../../tests/data/corpus/sdk_clients.jsonl"),
            include_str!("../../tests/data/corpus/envelopes_stores.jsonl"),
            include_str!("../../tests/data/corpus/commands.jsonl"),
            include_str!("../../tests/data/corpus/more_families.jsonl"),
            include_str!("../../tests/data/corpus/agent_surfaces.jsonl"),
        ];
        let mut checked = 0;
        for line in corpus
            .iter()
            .flat_map(|c| c.lines())
            .filter(|l| !l.is_empty())
        {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            let Some(text) = entry["report"]["message"].as_str() else {
                continue;
            };
            let mut gated = Vec::new();
            messages.matching_rules(text, &mut gated);

            let mut full: Vec<usize> = messages
                .patterns
                .iter()
                .filter(|p| p.is_match(text))
                .map(|p| p.rule)
                .collect();
            full.dedup();
            assert_eq!(gated, full, "{text}");
            checked += 1;
        }
        assert!(checked > 800, "{checked} messages checked");
    }

    #[test]
    fn every_built_in_pattern_compiles() {
        super::super::rules::RuleSet::builtin()
            .messages
            .compile_all()
            .unwrap();
    }
}
