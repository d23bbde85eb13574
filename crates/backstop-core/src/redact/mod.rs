//! Secrets taken out of text before it is shown, logged, written or sent to a decider.
//!
//! Test output carries whatever the code under test printed: keys from the environment, a
//! connection string, a token in a request dump. [`redact`] replaces each secret with
//! `[REDACTED:<kind>]` and reports how many of each kind it replaced, never the secret.
//!
//! What counts as a secret:
//!
//! - **Provider keys**, by their published prefixes and lengths, each kind named as in its
//!   placeholder: `openai_key` `sk-…` (with an uppercase letter, and a digit unless 40
//!   characters or more: lower-case kebab-case names such as `task-runner-…` are not keys),
//!   `anthropic_key` `sk-ant-…`, `aws_access_key_id` `AKIA`/`ASIA` + 16, `github_token`
//!   `ghp_` `gho_` `ghu_` `ghs_` `ghr_` `github_pat_`, `gitlab_token` `glpat-`, `slack_token`
//!   `xox[abposr]-`, `stripe_key` `sk_live_` `rk_live_` `sk_test_` `rk_test_` (not the
//!   publishable `pk_`), `google_api_key` `AIza` + 35, `npm_token` `npm_`,
//!   `huggingface_token` `hf_`, and `jwt` (`eyJ…` and two more base64url segments). They are
//!   found wherever they stand, even glued to a word, as in an escaped `\nsk-…`.
//! - **Auth headers**: the token after `Bearer`, the credentials after `Basic`; the scheme
//!   word stays. After a secret name (`Authorization: Bearer x`) any token goes; standing
//!   alone it must look random (a digit, a symbol or mixed case; 6 characters or more, 8 for
//!   Basic), so `bearer token` and `basic usage` stay.
//! - **URL passwords**: `scheme://user:password@host` keeps everything but the password.
//! - **Private key blocks**, `-----BEGIN … PRIVATE KEY-----` to the matching END line, whole.
//!   A block cut off before its END line loses the lines that follow it as long as they are
//!   base64, PEM headers or blank.
//! - **Named values**: `NAME=value`, `NAME: value`, `"name": "value"`, `NAME := value`,
//!   `'name' => 'value'`, where a word of the name says secret: `password`, `passwd`,
//!   `passphrase`, `pwd`, `secret`, `token`, `api key`, `access key`, `private key`,
//!   `secret key`, `credential(s)`, `auth`, `authorization` (words are split at `_ - .` and
//!   camel case, and a word may end with one: `dbpassword`, `accessToken`, `OAUTH`). The name
//!   stays, the value goes. Not a secret:
//!   - a name where a describing word follows the secret one: `token_count`, `max_tokens`
//!     (`tokens` is not `token`), `password_min_length`, `TOKEN_TTL`, `InvalidTokenError`,
//!     `secret_name`, `credentials_file`, `auth.rs` (the list is `DESCRIBING` in `pairs`);
//!   - a number where the secret word is not last (`token_budget=4096`); a name that ends
//!     with it keeps nothing, numbers included (`PIN`-like `password=1234`);
//!   - values that hold nothing: empty, `null` `none` `nil` `true` `false` `<nil>`, masks
//!     (`****`, `xxxx`), bare punctuation under 4 characters, a scheme word alone
//!     (`token_type: Bearer`), and references to where the secret lives (`$TOKEN`,
//!     `${DB_PASSWORD}`, `${{ secrets.X }}`, `{{ .Values.password }}`, `%TOKEN%`, `$(cat f)`);
//!   - the shell's `PWD` and `OLDPWD` (the working directory), and paths (`auth::token`) and
//!     comparisons (`token == other`).
//!
//!   A prose line can look like a pair (`invalid token: abc`); its value is redacted all the
//!   same, because a message that names a token often prints it. Words without a separator
//!   (`password must be 8 chars`) are never touched.
//!
//! How: every pattern runs over the whole text (linear-time regexes, compiled once), the spans
//! found skip the placeholders already in the text, overlapping spans become one (named by
//! the leftmost, longest, then most specific find), and the text is rebuilt in one pass. So a
//! placeholder is never redacted again and no two replacements overlap: redacting twice
//! changes nothing.
//!
//! There is no size cap. A text of any length, 4 MiB or 400, is redacted whole, in time
//! linear in its length: a redactor that stopped at a cap would leak everything past it.
//! Callers cap what they keep.
//!
//! This file holds [`redact`] and the merging and rebuilding of what was found; `patterns`
//! holds the regex-found kinds (provider keys, auth headers, URL passwords) and private key
//! blocks, `pairs` the named values and the rules that say whether a name holds a secret.

use std::cmp::Reverse;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

mod pairs;
mod patterns;

use self::pairs::named_values;
use self::patterns::{PATTERNS, private_keys};

/// What was redacted, for a report (never the secret itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redaction {
    /// The kind of secret, as its placeholders name it: `openai_key`, `password`, `bearer`…
    pub kind: &'static str,
    /// How many placeholders of this kind the text now holds that it did not before.
    pub count: usize,
}

/// The text with every secret replaced by `[REDACTED:<kind>]`, and what was replaced.
///
/// Kinds are listed in the order they first appear in the text. Placeholders already in the
/// text are left as they are and not counted.
///
/// ```
/// use backstop_core::redact::redact;
///
/// let (text, found) = redact("psql postgres://app:hunter2@db/app, DB_TOKEN=abc");
/// assert_eq!(
///     text,
///     "psql postgres://app:[REDACTED:url_password]@db/app, DB_TOKEN=[REDACTED:token]"
/// );
/// assert_eq!(found.len(), 2);
/// ```
pub fn redact(text: &str) -> (String, Vec<Redaction>) {
    let placeholders: Vec<(usize, usize)> = PLACEHOLDER
        .find_iter(text)
        .map(|m| (m.start(), m.end()))
        .collect();
    let mut found = Vec::new();
    private_keys(text, 0, &mut found);
    for (i, pattern) in PATTERNS.iter().enumerate() {
        pattern.find(text, i + 1, &mut found);
    }
    named_values(text, PATTERNS.len() + 1, &mut found);
    let mut parts = Vec::with_capacity(found.len());
    for f in found {
        around_placeholders(f, &placeholders, &mut parts);
    }
    rebuild(text, &merge(parts))
}

/// A placeholder this module writes; the kinds are lower-case words joined by `_`.
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| regex(r"\[REDACTED:[a-z_]+\]"));

/// One secret found: where it is, which pattern found it (lower is more specific), and its kind.
#[derive(Debug, Clone, Copy)]
struct Found {
    start: usize,
    end: usize,
    priority: usize,
    kind: &'static str,
}
fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a built-in pattern compiles")
}
/// A value that holds no secret: empty, a null or boolean (`<nil>` and `(none)` too), a mask,
/// a scheme word alone, short punctuation, or a reference to where the secret lives.
fn holds_nothing(value: &str) -> bool {
    const WORDS: &str =
        "null none nil undefined true false ~ redacted hidden masked bearer basic token";
    let v = value.trim();
    let unwrapped = ["<>", "()", "[]"]
        .iter()
        .find_map(|pair| v.strip_prefix(&pair[..1])?.strip_suffix(&pair[1..]))
        .unwrap_or(v);
    let upper_name = |s: &str| {
        s.bytes().next().is_some_and(|b| !b.is_ascii_digit())
            && s.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    };
    v.is_empty()
        || WORDS
            .split_ascii_whitespace()
            .any(|w| unwrapped.eq_ignore_ascii_case(w))
        || (v.len() >= 3 && v.chars().all(|c| matches!(c, '*' | '•' | 'x' | 'X' | '.')))
        || (!v.chars().any(char::is_alphanumeric) && v.chars().count() < 4)
        || v.strip_prefix('$').is_some_and(upper_name)
        || v.strip_prefix('%')
            .and_then(|s| s.strip_suffix('%'))
            .is_some_and(upper_name)
        || (v.starts_with("${") && v.ends_with('}'))
        || (v.starts_with("{{") && v.ends_with("}}"))
        || (v.starts_with("$(") && v.ends_with(')'))
}

/// The parts of a found span around the placeholders already in the text: a placeholder is
/// kept as it is, and what is around it inside the span still goes. A span that starts inside
/// a placeholder is none: the placeholder's own text made it (`a://[REDACTED:x]y@`).
fn around_placeholders(found: Found, placeholders: &[(usize, usize)], parts: &mut Vec<Found>) {
    let mut start = found.start;
    let first = placeholders.partition_point(|&(_, end)| end <= found.start);
    if placeholders.get(first).is_some_and(|p| p.0 < found.start) {
        return;
    }
    for &(p_start, p_end) in placeholders[first..].iter().take_while(|p| p.0 < found.end) {
        if p_start > start {
            parts.push(Found {
                start,
                end: p_start,
                ..found
            });
        }
        start = start.max(p_end);
    }
    if found.end > start {
        parts.push(Found { start, ..found });
    }
}

/// The spans in text order, overlapping ones joined: the leftmost, then longest, then most
/// specific names the whole.
fn merge(mut spans: Vec<Found>) -> Vec<Found> {
    spans.sort_by_key(|f| (f.start, Reverse(f.end), f.priority));
    let mut merged: Vec<Found> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start < last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// The text with each span replaced by its placeholder, and the count of each kind.
fn rebuild(text: &str, spans: &[Found]) -> (String, Vec<Redaction>) {
    let mut out = String::with_capacity(text.len());
    let mut report: Vec<Redaction> = Vec::new();
    let mut at = 0;
    for span in spans {
        out.push_str(&text[at..span.start]);
        out.push_str("[REDACTED:");
        out.push_str(span.kind);
        out.push(']');
        at = span.end;
        match report.iter_mut().find(|r| r.kind == span.kind) {
            Some(r) => r.count += 1,
            None => report.push(Redaction {
                kind: span.kind,
                count: 1,
            }),
        }
    }
    out.push_str(&text[at..]);
    (out, report)
}
#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::pairs::SECRET_WORDS;
    use super::*;

    // Obviously fake keys, built to each provider's shape.
    pub(super) const OPENAI: &str = "sk-proj-TESTTESTTESTTESTTEST0123456789test";
    pub(super) const OPENAI_LEGACY: &str = "sk-TESTtestTESTtestTESTtestTESTtestTESTtestTESTtest";
    pub(super) const ANTHROPIC: &str = "sk-ant-api03-TESTTESTTESTTESTTEST-test_test";
    pub(super) const AWS_ID: &str = "AKIATESTTESTTESTTEST";
    pub(super) const AWS_SECRET: &str = "TESTtestTESTtestTESTtest/TESTtestTEST+tes";
    pub(super) const JWT: &str = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0ZXN0In0.TESTSIGNATURE";

    pub(super) fn github() -> String {
        format!("ghp_{}", "TEST".repeat(9))
    }

    pub(super) fn r(text: &str) -> String {
        redact(text).0
    }

    pub(super) fn unchanged(text: &str) {
        assert_eq!(r(text), text, "{text}");
    }

    #[test]
    fn the_rest_of_the_line_is_kept() {
        let line = format!("  at step 3 the key {OPENAI} was sent (and retried), see log");
        assert_eq!(
            r(&line),
            "  at step 3 the key [REDACTED:openai_key] was sent (and retried), see log"
        );
    }

    #[test]
    fn overlapping_finds_make_one_placeholder() {
        assert_eq!(
            r(&format!("Authorization: Bearer {OPENAI}")),
            "Authorization: Bearer [REDACTED:openai_key]"
        );
        assert_eq!(r(&format!("token={JWT}")), "token=[REDACTED:jwt]");
        assert_eq!(
            r(&format!("url=https://u:{}@h", github())),
            "url=https://u:[REDACTED:github_token]@h"
        );
    }

    #[test]
    fn the_report_counts_each_kind_in_order_of_first_appearance() {
        let text = format!("{} a=1 DB_PASSWORD=x {} {OPENAI}", github(), github());
        let (_, found) = redact(&text);
        assert_eq!(
            found,
            [
                Redaction {
                    kind: "github_token",
                    count: 2
                },
                Redaction {
                    kind: "password",
                    count: 1
                },
                Redaction {
                    kind: "openai_key",
                    count: 1
                },
            ]
        );
        assert!(redact("nothing here").1.is_empty());
    }

    #[test]
    fn every_kind_fits_the_placeholder_pattern() {
        let kinds = PATTERNS
            .iter()
            .map(|p| p.kind)
            .chain(SECRET_WORDS.iter().map(|w| w.1))
            .chain(["private_key", "bearer", "basic_auth", "token"]);
        for kind in kinds {
            assert!(
                PLACEHOLDER.is_match(&format!("[REDACTED:{kind}]")),
                "{kind}"
            );
        }
    }

    #[test]
    fn placeholders_already_there_stay_and_what_is_around_them_goes() {
        assert_eq!(r("token=[REDACTED:token]"), "token=[REDACTED:token]");
        assert_eq!(redact("token=[REDACTED:token]").1, []);
        assert_eq!(
            r(r#""password": "ab [REDACTED:token] cd""#),
            r#""password": "[REDACTED:password][REDACTED:token][REDACTED:password]""#
        );
    }

    #[test]
    fn redacting_twice_changes_nothing() {
        let text = format!(
            "DB_PASSWORD=hunter2 {OPENAI}\nAuthorization: Bearer abc\n\
             postgres://u:pw@h/db \"client_secret\": \"x\" password=ab[REDACTED:token]cd\n\
             -----BEGIN PRIVATE KEY-----\nTEST\n-----END PRIVATE KEY-----\n{JWT}"
        );
        let once = r(&text);
        assert_eq!(r(&once), once);
        assert_eq!(redact(&once).1, []);
    }

    #[test]
    fn a_text_past_4_mib_is_redacted_to_its_end() {
        let mut text =
            "test foo::bar ... ok, token_count=3 at https://example.com:80/x\n".repeat(70_000);
        assert!(text.len() > 4 << 20);
        text.push_str(OPENAI);
        let (out, found) = redact(&text);
        assert!(out.ends_with("[REDACTED:openai_key]"));
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn pathological_lines_take_linear_time() {
        // Each would be read once per repeat by a search that rescans: minutes, not moments.
        for unit in [
            "password=\"${ ",
            "sk-aaaa-",
            "-----BEGIN PRIVATE KEY-----",
            "bearer ",
            "a://b:***@",
            "token_count=\"",
            "auth::",
        ] {
            let text = unit.repeat((1 << 18) / unit.len());
            let (once, _) = redact(&text);
            assert_eq!(r(&once), once, "{unit}");
        }
    }

    /// Pieces that secrets, names, separators and placeholders are made of.
    fn pieces() -> Vec<&'static str> {
        const SHORT: &[&str] = &[
            " ", "\n", "\\n", "=", ": ", "\"", "'", "\\\"", ",", "@", ":", "::", "//", "://", "x",
            "12", "abc", "_", "-", "Some(", "${", "}", "[", "]", "PWD", "sk-", "ghp_", "eyJ",
            "AKIA", "TEST+/=", "Bearer ", "basic ", "password", "é", "✓",
        ];
        let long = [
            "token_count",
            "Authorization",
            "https://u",
            "[REDACTED:token]",
            OPENAI,
            ANTHROPIC,
            AWS_ID,
            JWT,
            "-----BEGIN PRIVATE KEY-----",
            "-----END PRIVATE KEY-----",
        ];
        SHORT.iter().copied().chain(long).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            rng_seed: proptest::test_runner::RngSeed::Fixed(9),
            cases: 256,
            ..ProptestConfig::default()
        })]

        #[test]
        fn a_planted_key_never_survives(
            before in "[ -~\n]{0,80}",
            after in "[ -~\n]{0,80}",
            github_style in any::<bool>(),
            mixed in "[A-Z][a-z][0-9]",
            body in "[A-Za-z0-9_-]{20,80}",
            alnum in "[A-Za-z0-9]{36,40}",
        ) {
            let key = if github_style {
                format!("ghp_{alnum}")
            } else {
                format!("sk-proj-{mixed}{body}")
            };
            let (out, found) = redact(&format!("{before}{key}{after}"));
            prop_assert!(!out.contains(&key), "{out}");
            prop_assert!(!found.is_empty());
        }

        #[test]
        fn redaction_is_idempotent(
            pieces in prop::collection::vec(
                prop_oneof![prop::sample::select(pieces()).prop_map(String::from), "[ -~\n]{0,8}"],
                0..24,
            ),
        ) {
            let once = r(&pieces.concat());
            prop_assert_eq!(r(&once), once);
        }
    }
}
