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

use aho_corasick::{MatchKind, dfa, nfa::contiguous};
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, meta};
use regex_syntax::hir::{Capture, Dot, Hir, HirKind, Repetition};

use super::literal_scan::overlapping;
use super::matcher::REGEX_SIZE_LIMIT;

/// The gate's automaton holds only this many first bytes of each literal (it stays small and
/// quick to build); a hit is then checked against the whole literal.
const KEY_LEN: usize = 6;

/// A process that has read this many messages will read more: the gate is then rebuilt as a
/// gate over whole literals, slower to build but quicker to run. A one-shot `classify` never
/// gets there.
const WARM: u32 = 256;

/// What the build step found of one built-in pattern: literals one of which every match
/// starts with (lower-case; empty when not known), whether the pattern matches exactly those
/// and nothing else, and the word boundaries (`\b`) such an exact pattern needs around them.
#[derive(Debug, Clone, Copy)]
pub(super) struct PatternLiterals {
    starts: &'static [&'static str],
    exact: bool,
    word_before: bool,
    word_after: bool,
}

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
            let config = syntax::Config::new()
                .case_insensitive(true)
                .unicode(false)
                .utf8(false);
            let hir = syntax::parse_with(source, &config).map_err(|e| e.to_string())?;
            meta::Builder::new()
                .configure(meta::Config::new().nfa_size_limit(Some(REGEX_SIZE_LIMIT)))
                .build_from_hir(&dot_reads_characters(&hir))
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

/// Where a literal lets a pattern through: the whole literal (a gate keyed on a prefix checks
/// it at the hit), the pattern, and whether the pattern is exactly its literals.
#[derive(Debug, Clone, Copy)]
struct Opening {
    literal: &'static str,
    pattern: usize,
    exact: bool,
    /// An exact pattern's word boundaries before and after the literal.
    word_before: bool,
    word_after: bool,
}

impl Opening {
    /// Whether the word boundaries the pattern needs hold around the literal found at `at`
    /// (ASCII word characters, as the ASCII patterns' `\b` reads them).
    fn bounds_hold(&self, text: &[u8], at: usize) -> bool {
        let is_word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
        let end = at + self.literal.len();
        let boundary = |left: Option<&u8>, right: Option<&u8>| {
            left.is_some_and(is_word) != right.is_some_and(is_word)
        };
        (!self.word_before || boundary(at.checked_sub(1).and_then(|i| text.get(i)), text.get(at)))
            && (!self.word_after
                || boundary(end.checked_sub(1).and_then(|i| text.get(i)), text.get(end)))
    }
}

/// An automaton over keys and, per key, the patterns a hit may let through.
#[derive(Debug, Clone)]
struct Gate {
    automaton: GateAutomaton,
    /// `opens[key]`: what a hit on that key lets through.
    opens: Vec<Vec<Opening>>,
    /// The keys are whole literals: a hit needs no further check.
    whole: bool,
}

/// The gate's automaton: quick to build for a short-lived process, or quick to run.
#[derive(Debug, Clone)]
enum GateAutomaton {
    Nfa(contiguous::NFA),
    Dfa(dfa::DFA),
}

impl Gate {
    /// A gate keyed on the first `KEY_LEN` bytes of each literal: an NFA, quick to build
    /// (the built-in rules': about 1 ms).
    fn prefixes(openings: &[Opening]) -> Gate {
        let (keys, opens) = Gate::keys(openings, Some(KEY_LEN));
        let nfa = contiguous::NFA::builder()
            .match_kind(MatchKind::Standard)
            .prefilter(false)
            .build(&keys)
            .expect("the built-in literals always build");
        Gate {
            automaton: GateAutomaton::Nfa(nfa),
            opens,
            whole: false,
        }
    }

    /// A gate keyed on whole literals, as a DFA: a hit needs no check, and each byte costs
    /// one table look-up. For the built-in rules it takes about 12 ms to build and 5.7 MB
    /// (an NFA of the same literals: 2 ms and 0.3 MB, but 8% fewer messages a second).
    fn whole_literals(openings: &[Opening]) -> Gate {
        let (keys, opens) = Gate::keys(openings, None);
        let dfa = dfa::DFA::builder()
            .match_kind(MatchKind::Standard)
            .prefilter(false)
            .build(&keys)
            .expect("the built-in literals always build");
        Gate {
            automaton: GateAutomaton::Dfa(dfa),
            opens,
            whole: true,
        }
    }

    /// The distinct keys (the first `key_len` bytes of each literal, or all of it) and what
    /// each lets through.
    fn keys(
        openings: &[Opening],
        key_len: Option<usize>,
    ) -> (Vec<&'static str>, Vec<Vec<Opening>>) {
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut keys: Vec<&'static str> = Vec::new();
        let mut opens: Vec<Vec<Opening>> = Vec::new();
        for opening in openings {
            let literal = opening.literal;
            let key = &literal[..key_len.map_or(literal.len(), |n| literal.len().min(n))];
            let slot = *index.entry(key).or_insert_with(|| {
                keys.push(key);
                opens.push(Vec::new());
                keys.len() - 1
            });
            opens[slot].push(*opening);
        }
        (keys, opens)
    }

    /// Calls `hit(key, start)` for every key found in `text`, overlapping ones included.
    fn scan(&self, text: &str, hit: impl FnMut(usize, usize)) {
        match &self.automaton {
            GateAutomaton::Nfa(nfa) => overlapping(nfa, text.as_bytes(), hit),
            GateAutomaton::Dfa(dfa) => overlapping(dfa, text.as_bytes(), hit),
        }
    }
}

/// The pattern with each `.` matching one character rather than one byte. ASCII patterns
/// run on bytes (ASCII `\b`, `\w` and case folding are much cheaper), where `.` is any byte
/// but a newline; a message's `’` is three bytes, and `can.t` must still match `can’t`.
fn dot_reads_characters(hir: &Hir) -> Hir {
    match hir.kind() {
        _ if *hir == Hir::dot(Dot::AnyByteExceptLF) => Hir::dot(Dot::AnyCharExceptLF),
        _ if *hir == Hir::dot(Dot::AnyByte) => Hir::dot(Dot::AnyChar),
        HirKind::Concat(items) => Hir::concat(items.iter().map(dot_reads_characters).collect()),
        HirKind::Alternation(items) => {
            Hir::alternation(items.iter().map(dot_reads_characters).collect())
        }
        HirKind::Repetition(repetition) => Hir::repetition(Repetition {
            sub: Box::new(dot_reads_characters(&repetition.sub)),
            ..repetition.clone()
        }),
        HirKind::Capture(capture) => Hir::capture(Capture {
            sub: Box::new(dot_reads_characters(&capture.sub)),
            ..capture.clone()
        }),
        _ => hir.clone(),
    }
}

/// The message patterns of a rule set, and what picks the ones worth trying.
#[derive(Debug, Clone)]
pub(super) struct MessageSet {
    patterns: Vec<Pattern>,
    /// Each literal of each gated pattern.
    openings: Vec<Opening>,
    /// The gate, keyed on [`KEY_LEN`]-byte prefixes: built the first time a report has a
    /// message (`--status 503` never pays).
    gate: OnceLock<Gate>,
    /// How many messages this set has read.
    uses: Arc<AtomicU32>,
    /// The gate over whole literals, for processes past [`WARM`] messages (the
    /// service, `--jsonl`): larger and slower to build, but a hit needs no check.
    fast_gate: OnceLock<Gate>,
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
        let mut openings = Vec::new();
        let mut always = Vec::new();
        for (rule, id, sources) in rules {
            // A user's rule may reuse no built-in id, but its patterns are its own: the
            // literals apply only when the patterns are the built-in ones.
            let gates = known.get(id).filter(|g| g.len() == sources.len());
            for (i, source) in sources.iter().enumerate() {
                let pattern = patterns.len();
                patterns.push(Pattern {
                    rule,
                    source: source.clone(),
                    compiled: OnceLock::new(),
                });
                match gates.map(|g| g[i]).filter(|known| !known.starts.is_empty()) {
                    Some(known) => {
                        openings.extend(known.starts.iter().map(|&literal| Opening {
                            literal,
                            pattern,
                            exact: known.exact,
                            word_before: known.word_before,
                            word_after: known.word_after,
                        }));
                    }
                    None => always.push(pattern),
                }
            }
        }
        MessageSet {
            patterns,
            openings,
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
        // The literals are lower-case ASCII; the text is folded the same way, byte for byte
        // (so positions carry over).
        let folded = (!self.openings.is_empty()).then(|| text.to_ascii_lowercase());
        if let Some(folded) = &folded {
            let gate = self.gate();
            gate.scan(folded, |key, at| {
                let rest = &folded.as_bytes()[at..];
                for opening in &gate.opens[key] {
                    if !(gate.whole || rest.starts_with(opening.literal.as_bytes())) {
                        continue;
                    }
                    // A pattern that is exactly its literals has matched already, if the
                    // word boundaries it needs hold.
                    if opening.exact && !opening.bounds_hold(folded.as_bytes(), at) {
                        continue;
                    }
                    {
                        let pattern = opening.pattern;
                        candidates.push((pattern, (!opening.exact).then_some(at)));
                        if opening.exact {
                            matched_exact.push(pattern);
                        }
                    }
                }
            });
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

    /// The gate for this message: over key prefixes at first, over whole literals once the
    /// process has read [`WARM`] messages.
    fn gate(&self) -> &Gate {
        if let Some(fast) = self.fast_gate.get() {
            return fast;
        }
        if self.uses.fetch_add(1, Ordering::Relaxed) >= WARM {
            return self
                .fast_gate
                .get_or_init(|| Gate::whole_literals(&self.openings));
        }
        self.gate.get_or_init(|| Gate::prefixes(&self.openings))
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
    fn a_dot_in_an_ascii_pattern_matches_one_character() {
        let one_line = set(&[(1, "x.a", &["can.t reach", r"^a.b$"])]);
        assert_eq!(hits(&one_line, "I can’t reach the host"), [1]);
        assert_eq!(hits(&one_line, "I can't reach the host"), [1]);
        assert_eq!(hits(&one_line, "aéb"), [1]);
        assert!(hits(&one_line, "a\nb").is_empty());
        let across_lines = set(&[(2, "x.b", &[r"^a(?s:.)b$"])]);
        assert_eq!(hits(&across_lines, "a’b"), [2]);
        assert_eq!(hits(&across_lines, "a\nb"), [2]);
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
            !messages.openings.is_empty() && messages.always.len() < messages.patterns.len() / 4,
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
    /// messages, through the whole-literal gate too).
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
