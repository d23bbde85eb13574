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
//!     `secret_name`, `credentials_file`, `auth.rs` (the list is `DESCRIBING` below);
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

use std::cmp::Reverse;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

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
/// use backstop_core::verify::redact::redact;
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

/// A kind of secret a regex finds; the checks that need code live in `private_keys` and
/// `named_values`.
struct Pattern {
    kind: &'static str,
    regex: Regex,
    /// The capture group that holds the secret: 0 for the whole match.
    group: usize,
    /// Whether a match is a secret after all.
    accept: fn(&str) -> bool,
}

impl Pattern {
    fn new(kind: &'static str, pattern: &str, group: usize, accept: fn(&str) -> bool) -> Self {
        Self {
            kind,
            regex: regex(pattern),
            group,
            accept,
        }
    }

    /// Every match the check accepts. After a rejected match the search goes on from where its
    /// secret group starts, since a match may start inside it (`Bearer Bearer abc123`); a
    /// whole-match check is kept by every longer match, so nothing starts inside one.
    fn find(&self, text: &str, priority: usize, found: &mut Vec<Found>) {
        let mut at = 0;
        while let Some(caps) = self.regex.captures_at(text, at) {
            let (Some(whole), Some(secret)) = (caps.get(0), caps.get(self.group)) else {
                break;
            };
            if (self.accept)(secret.as_str()) {
                found.push(Found {
                    start: secret.start(),
                    end: secret.end(),
                    priority,
                    kind: self.kind,
                });
                at = whole.end();
            } else if self.group == 0 {
                at = whole.end();
            } else {
                at = secret.start();
            }
        }
    }
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a built-in pattern compiles")
}

/// The patterns in order of specificity: `sk-ant-` before `sk-`, provider keys before the
/// headers and URLs that may carry them.
static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    vec![
        Pattern::new(
            "anthropic_key",
            r"sk-ant-[A-Za-z0-9_\-]{20,}",
            0,
            openai_like,
        ),
        Pattern::new("openai_key", r"sk-[A-Za-z0-9_\-]{20,}", 0, openai_like),
        Pattern::new("aws_access_key_id", r"(?:AKIA|ASIA)[A-Z0-9]{16}", 0, always),
        Pattern::new("github_token", r"gh[pousr]_[A-Za-z0-9]{36,}", 0, always),
        Pattern::new("github_token", r"github_pat_[A-Za-z0-9_]{22,}", 0, always),
        Pattern::new("gitlab_token", r"glpat-[A-Za-z0-9_\-]{20,}", 0, always),
        Pattern::new("slack_token", r"xox[abposr]-[A-Za-z0-9\-]{10,}", 0, always),
        Pattern::new(
            "stripe_key",
            r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",
            0,
            always,
        ),
        Pattern::new("google_api_key", r"AIza[A-Za-z0-9_\-]{35}", 0, always),
        Pattern::new("npm_token", r"npm_[A-Za-z0-9]{36,}", 0, always),
        Pattern::new("huggingface_token", r"hf_[A-Za-z0-9]{34,}", 0, always),
        Pattern::new(
            "jwt",
            r"eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]{2,}",
            0,
            always,
        ),
        Pattern::new(
            "url_password",
            r#"[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@"'<>]*:([^\s/?#"'<>]+)@"#,
            1,
            |password| !holds_nothing(password),
        ),
        // A token's last character is not a dot, which ends a sentence more often than a token.
        Pattern::new(
            "bearer",
            r"(?i:bearer)[ \t]+([A-Za-z0-9\-._~+/]*[A-Za-z0-9\-_~+/]=*)",
            1,
            looks_random,
        ),
        Pattern::new(
            "basic_auth",
            r"(?i:basic)[ \t]+([A-Za-z0-9+/]+={0,2})",
            1,
            |b64| b64.len() >= 8 && looks_random(b64),
        ),
    ]
});

fn always(_: &str) -> bool {
    true
}

/// An `sk-` key has an uppercase letter, and a digit unless it is 40 characters or more
/// (a 48-character legacy key without a digit is rare, one without an uppercase letter all
/// but impossible): lower-case kebab-case names are not keys.
fn openai_like(key: &str) -> bool {
    let body = &key["sk-".len()..];
    body.bytes().any(|b| b.is_ascii_uppercase())
        && (body.len() >= 40 || body.bytes().any(|b| b.is_ascii_digit()))
}

/// A token that is not a plain word: 6 characters or more with a digit, a symbol, or an
/// uppercase letter after a lowercase one (trailing `=` padding aside).
fn looks_random(token: &str) -> bool {
    let t = token.trim_end_matches('=');
    let mixed_case = t
        .as_bytes()
        .windows(2)
        .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    t.len() >= 6
        && (mixed_case
            || t.bytes()
                .any(|b| b.is_ascii_digit() || b"-._~+/".contains(&b)))
}

static PEM_BEGIN: LazyLock<Regex> =
    LazyLock::new(|| regex(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"));
static PEM_END: LazyLock<Regex> =
    LazyLock::new(|| regex(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"));

/// Private key blocks, BEGIN line to END line. A BEGIN pairs with the first END after it
/// unless another BEGIN comes first; without one the block runs over its body lines.
/// Each marker is found once, so the work stays linear however many blocks are cut off.
fn private_keys(text: &str, priority: usize, found: &mut Vec<Found>) {
    let begins: Vec<(usize, usize)> = PEM_BEGIN
        .find_iter(text)
        .map(|m| (m.start(), m.end()))
        .collect();
    let ends: Vec<usize> = PEM_END.find_iter(text).map(|m| m.end()).collect();
    let mut covered = 0;
    for (i, &(start, after)) in begins.iter().enumerate() {
        if start < covered {
            continue;
        }
        let next_begin = begins.get(i + 1).map_or(usize::MAX, |b| b.0);
        let end = ends
            .get(ends.partition_point(|&e| e <= after))
            .copied()
            .filter(|&e| e <= next_begin)
            .unwrap_or_else(|| body_end(text, after));
        found.push(Found {
            start,
            end,
            priority,
            kind: "private_key",
        });
        covered = end;
    }
}

/// Where a private key's body ends when its END line is missing: after the last of the lines
/// that follow that are base64 (after any indentation), a PEM header (`Proc-Type:`,
/// `DEK-Info:`) or blank. A line break may be escaped (`\n`, `\r\n`), as in JSON.
fn body_end(text: &str, from: usize) -> usize {
    let bytes = text.as_bytes();
    let mut end = from;
    let mut i = from;
    loop {
        let header = ["Proc-Type:", "DEK-Info:"]
            .iter()
            .any(|h| text[i..].starts_with(h));
        let line_start = i;
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
            i += 1;
        }
        loop {
            match (bytes.get(i), bytes.get(i + 1)) {
                (None | Some(b'\n'), _) | (Some(b'\\'), Some(b'n')) => break,
                (Some(b'\\'), Some(b'r')) => i += 2,
                (Some(b'\r'), _) => i += 1,
                (Some(&b), _) if header || b.is_ascii_alphanumeric() || b"+/=".contains(&b) => {
                    i += 1;
                }
                _ => return end,
            }
        }
        if text[line_start..i]
            .bytes()
            .any(|b| !b.is_ascii_whitespace())
        {
            end = i;
        }
        match bytes.get(i) {
            None => return end,
            Some(b'\n') => i += 1,
            Some(_) => i += 2,
        }
    }
}

/// The head of a named value: a name holding a secret word, an optional closing quote, and a
/// separator. The value is read by code, so a head is never scanned twice.
static PAIR_HEAD: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r#"(?x)
        (?P<name>[A-Za-z0-9_.\-]*
            (?i:passw(?:or)?d|passphrase|pwd|secret|token|credential|auth
                |api[_.\-]?key|access[_.\-]?key|private[_.\-]?key)
            [A-Za-z0-9_.\-]*)
        (?:\\?["'])?
        [[:blank:]]*
        (?P<sep>:=|=>|=|:)
        [[:blank:]]*
        "#,
    )
});

/// Values whose names say secret. A head starting inside a value already read is skipped:
/// that value was redacted whole, holds nothing, or is a number, and none of those holds a
/// pair. A name that describes a secret (`token_type`) has its value read only past a scheme
/// word (`auth_header: Bearer x`), so a head is never read twice.
fn named_values(text: &str, priority: usize, found: &mut Vec<Found>) {
    let mut read = 0;
    for head in PAIR_HEAD.captures_iter(text) {
        let (Some(whole), Some(name), Some(sep)) =
            (head.get(0), head.name("name"), head.name("sep"))
        else {
            continue;
        };
        if whole.start() < read {
            continue;
        }
        let after = &text[sep.end()..];
        if (sep.as_str() == ":" && after.starts_with(':'))
            || (sep.as_str() == "=" && after.starts_with('='))
        {
            continue; // `auth::token` is a path, `token == x` a comparison
        }
        let Some(said) = secret_name(name.as_str()) else {
            continue;
        };
        let Some(value) = value_at(text, whole.end(), said.described) else {
            continue;
        };
        read = value.end;
        let v = &text[value.start..value.end];
        let number = value.scheme.is_none() && !said.last && number_like(v);
        if !number && !holds_nothing(v) {
            found.push(Found {
                start: value.start,
                end: value.end,
                priority,
                kind: value.scheme.unwrap_or(said.kind),
            });
        }
    }
}

/// What a name says about its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Said {
    /// The kind of secret its last secret word names.
    kind: &'static str,
    /// Whether that word ends the name.
    last: bool,
    /// Whether a describing word follows it (`token_count`): the value is about a secret.
    described: bool,
}

/// Secret words a word of a name may end with, and the kind each names; longest first where
/// one ends another.
const SECRET_WORDS: &[(&str, &str)] = &[
    ("secretaccesskey", "aws_secret_access_key"),
    ("accesskey", "access_key"),
    ("apikey", "api_key"),
    ("privatekey", "private_key"),
    ("secretkey", "secret"),
    ("password", "password"),
    ("passwd", "password"),
    ("passphrase", "password"),
    ("pwd", "password"),
    ("secrets", "secret"),
    ("secret", "secret"),
    ("token", "token"),
    ("credentials", "credential"),
    ("credential", "credential"),
    ("authorization", "auth"),
    ("auth", "auth"),
];

/// Words that, after a secret word, make a name describe the secret rather than hold it:
/// how many or how long, which or where, when, state and outcome, and source file extensions
/// (`auth.rs:12:5`).
const DESCRIBING: &str = "\
    count counts len length size limit max min num number \
    type kind format id ids name names file path dir url uri endpoint host env var field param \
    ref location helper provider source store manager service handler method mode policy rule \
    rules strategy version \
    ttl expiry expires expired expiration timeout interval lifetime age at \
    required enabled disabled valid invalid error errors exception failed usage used reset \
    test tests \
    rs py js ts go rb java kt c h cpp json yaml yml toml txt md html xml sh log";

/// What a name says, if a word of it is secret.
fn secret_name(name: &str) -> Option<Said> {
    if name.eq_ignore_ascii_case("pwd") || name.eq_ignore_ascii_case("oldpwd") {
        return None; // the shell's working directory
    }
    let words = words(name);
    let (i, kind) = (0..words.len())
        .rev()
        .find_map(|i| word_kind(&words, i).map(|kind| (i, kind)))?;
    let after = &words[i + 1..];
    Some(Said {
        kind,
        last: after.is_empty(),
        described: after
            .iter()
            .any(|w| DESCRIBING.split_ascii_whitespace().any(|d| d == w)),
    })
}

/// The kind of secret the word at `i` names, reading `api key` and its like as one word.
fn word_kind(words: &[String], i: usize) -> Option<&'static str> {
    let word = words[i].as_str();
    if word == "key" && i > 0 {
        match words[i - 1].as_str() {
            "api" => return Some("api_key"),
            "access" if i > 1 && words[i - 2] == "secret" => return Some("aws_secret_access_key"),
            "access" => return Some("access_key"),
            "private" => return Some("private_key"),
            "secret" => return Some("secret"),
            _ => {}
        }
    }
    SECRET_WORDS
        .iter()
        .find(|(stem, _)| word.ends_with(stem))
        .map(|&(_, kind)| kind)
}

/// A name's words, lower-cased: split at anything but letters and digits, and where an
/// uppercase letter follows a lowercase letter or digit.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut after_lower = false;
    for c in name.chars() {
        let boundary = !c.is_ascii_alphanumeric() || (c.is_ascii_uppercase() && after_lower);
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_lowercase());
        }
        after_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// A value's span, and the auth scheme read before it (`Bearer`), if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Value {
    start: usize,
    end: usize,
    scheme: Option<&'static str>,
}

/// The value that starts at `at`: inside quotes (`"…"` with escapes, `'…'`, or `\"…\"` in
/// escaped JSON; an unclosed quote runs to the end of the line) or bare (see `bare_end`), after
/// any scheme word. A Rust `Some(…)` around it is looked through. With `scheme_only`, only a
/// value after a scheme word is read.
fn value_at(text: &str, at: usize, scheme_only: bool) -> Option<Value> {
    let at = at + usize::from(text[at..].starts_with("Some(")) * "Some(".len();
    let rest = &text[at..];
    let (open, close, escapes) = if rest.starts_with("\\\"") {
        (2, Some("\\\""), false)
    } else if rest.starts_with('"') {
        (1, Some("\""), true)
    } else if rest.starts_with('\'') {
        (1, Some("'"), false)
    } else {
        (0, None, false)
    };
    let scheme = scheme(&text[at + open..]);
    if scheme_only && scheme.is_none() {
        return None;
    }
    let start = at + open + scheme.map_or(0, |s| s.0);
    let end = match close {
        Some(close) => quote_end(text, start, close, escapes),
        None => bare_end(text, start)?,
    };
    (end > start).then_some(Value {
        start,
        end,
        scheme: scheme.map(|s| s.1),
    })
}

/// How far the end of a reference is looked for: `${{ secrets.GITHUB_TOKEN }}` is 27 bytes,
/// and a bound keeps a line of unclosed `${` from being read once per `${`.
const REFERENCE_MAX: usize = 256;

/// Where a bare value that starts at `start` ends: after a whole reference (`${…}`, `{{…}}`,
/// `$(…)`) on its line, else at whitespace, a quote or `, ; & ) ] }`. A bare `{` or `[` opens
/// a structure, not a value.
fn bare_end(text: &str, start: usize) -> Option<usize> {
    let rest = &text[start..];
    let reference = [("${{", "}}"), ("{{", "}}"), ("${", "}"), ("$(", ")")]
        .iter()
        .find(|(open, _)| rest.starts_with(open))
        .and_then(|(open, close)| {
            let inner = &rest.as_bytes()[open.len()..];
            (0..inner.len().min(REFERENCE_MAX))
                .take_while(|&i| inner[i] != b'\n')
                .find(|&i| inner[i..].starts_with(close.as_bytes()))
                .map(|i| start + open.len() + i + close.len())
        });
    if reference.is_none() && (rest.starts_with('{') || rest.starts_with('[')) {
        return None;
    }
    Some(reference.unwrap_or_else(|| {
        start
            + rest
                .find(|c: char| c.is_whitespace() || "\"'`,;&)]}".contains(c))
                .unwrap_or(rest.len())
    }))
}

/// Where a quoted value that starts at `from` ends: at `close`, else at the end of the line.
/// With `escapes`, a backslash keeps the next character in the value.
fn quote_end(text: &str, from: usize, close: &str, escapes: bool) -> usize {
    // Bytes, not chars: `close` and the line break are ASCII, so every place this stops at is
    // a char boundary.
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() && bytes[i] != b'\n' {
        if bytes[i..].starts_with(close.as_bytes()) {
            return i;
        }
        i += if escapes && bytes[i] == b'\\' && bytes.get(i + 1).is_some_and(|&b| b != b'\n') {
            2
        } else {
            1
        };
    }
    i
}

/// An auth scheme word starting `value` and followed by a token on the same line: how many
/// bytes to skip to reach the token, and the kind the token is.
fn scheme(value: &str) -> Option<(usize, &'static str)> {
    [
        ("bearer", "bearer"),
        ("basic", "basic_auth"),
        ("token", "token"),
    ]
    .iter()
    .find_map(|&(word, kind)| {
        let head = value.get(..word.len())?;
        let gap = value[word.len()..]
            .bytes()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        let next = value.as_bytes().get(word.len() + gap)?;
        (head.eq_ignore_ascii_case(word) && gap > 0 && !next.is_ascii_whitespace())
            .then_some((word.len() + gap, kind))
    })
}

/// A number, version, time or file position: digits and `. : - + _` only.
fn number_like(value: &str) -> bool {
    value.bytes().any(|b| b.is_ascii_digit())
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || b".:-+_".contains(&b))
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

    use super::*;

    // Obviously fake keys, built to each provider's shape.
    const OPENAI: &str = "sk-proj-TESTTESTTESTTESTTEST0123456789test";
    const OPENAI_LEGACY: &str = "sk-TESTtestTESTtestTESTtestTESTtestTESTtestTESTtest";
    const ANTHROPIC: &str = "sk-ant-api03-TESTTESTTESTTESTTEST-test_test";
    const AWS_ID: &str = "AKIATESTTESTTESTTEST";
    const AWS_SECRET: &str = "TESTtestTESTtestTESTtest/TESTtestTEST+tes";
    const JWT: &str = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0ZXN0In0.TESTSIGNATURE";

    fn github() -> String {
        format!("ghp_{}", "TEST".repeat(9))
    }

    fn r(text: &str) -> String {
        redact(text).0
    }

    fn unchanged(text: &str) {
        assert_eq!(r(text), text, "{text}");
    }

    #[test]
    fn openai_and_anthropic_keys() {
        assert_eq!(r(OPENAI), "[REDACTED:openai_key]");
        assert_eq!(r(OPENAI_LEGACY), "[REDACTED:openai_key]");
        assert_eq!(r(ANTHROPIC), "[REDACTED:anthropic_key]");
        // glued to a word, as after an escaped line break
        assert_eq!(r(&format!("a\\n{OPENAI}")), "a\\n[REDACTED:openai_key]");
        unchanged("sk-short");
        unchanged("sk-all-lower-case-kebab-case-name-of-a-thing");
        unchanged("deploy task-runner-service-v2-deployment-blue");
        unchanged("sk-ant-short");
    }

    #[test]
    fn aws_keys() {
        assert_eq!(r(AWS_ID), "[REDACTED:aws_access_key_id]");
        assert_eq!(r("ASIATESTTESTTESTTEST"), "[REDACTED:aws_access_key_id]");
        assert_eq!(
            r(&format!("aws_secret_access_key = {AWS_SECRET}")),
            "aws_secret_access_key = [REDACTED:aws_secret_access_key]"
        );
        assert_eq!(
            r(&format!(r#"{{"SecretAccessKey": "{AWS_SECRET}"}}"#)),
            r#"{"SecretAccessKey": "[REDACTED:aws_secret_access_key]"}"#
        );
        unchanged("AKIATEST");
        unchanged("akiatesttesttesttest");
        unchanged(AWS_SECRET); // unlabelled, it is any base64
    }

    #[test]
    fn github_and_gitlab_tokens() {
        let gh = github();
        assert_eq!(r(&gh), "[REDACTED:github_token]");
        for prefix in ["gho_", "ghu_", "ghs_", "ghr_"] {
            assert_eq!(
                r(&format!("{prefix}{}", "TEST".repeat(9))),
                "[REDACTED:github_token]"
            );
        }
        assert_eq!(
            r(&format!(
                "github_pat_{}_{}",
                "TEST".repeat(6),
                "test".repeat(15)
            )),
            "[REDACTED:github_token]"
        );
        assert_eq!(r("glpat-TESTTESTTESTTESTTEST"), "[REDACTED:gitlab_token]");
        unchanged(&gh[..gh.len() - 1]);
        unchanged(&format!("ghx_{}", "TEST".repeat(9)));
        unchanged("glpat-short");
    }

    #[test]
    fn slack_stripe_google_npm_hugging_face_keys() {
        assert_eq!(r("xoxb-0000-1111-TESTTESTTEST"), "[REDACTED:slack_token]");
        for prefix in ["sk_live_", "rk_live_", "sk_test_"] {
            assert_eq!(
                r(&format!("{prefix}{}", "TEST".repeat(6))),
                "[REDACTED:stripe_key]"
            );
        }
        assert_eq!(
            r(&format!("AIza{}TES", "TEST".repeat(8))),
            "[REDACTED:google_api_key]"
        );
        assert_eq!(
            r(&format!("npm_{}", "TEST".repeat(9))),
            "[REDACTED:npm_token]"
        );
        assert_eq!(
            r(&format!("hf_{}TE", "TEST".repeat(8))),
            "[REDACTED:huggingface_token]"
        );
        unchanged("xoxz-0000-1111-TESTTESTTEST");
        unchanged(&format!("pk_live_{}", "TEST".repeat(6))); // publishable
        unchanged(&format!("AIza{}", "TEST".repeat(5)));
        unchanged("npm_config_cache=/tmp/npm");
        unchanged("from huggingface_hub import hf_hub_download");
    }

    #[test]
    fn json_web_tokens() {
        assert_eq!(r(&format!("jwt {JWT} ok")), "jwt [REDACTED:jwt] ok");
        unchanged("eyJhbGciOiJub25lIn0"); // a header alone
        unchanged("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0ZXN0In0");
    }

    #[test]
    fn bearer_and_basic_keep_the_scheme() {
        assert_eq!(
            r("Authorization: Bearer abc"),
            "Authorization: Bearer [REDACTED:bearer]"
        );
        assert_eq!(
            r(r#"curl -H "authorization: bearer abc.def-ghi" https://x"#),
            r#"curl -H "authorization: bearer [REDACTED:bearer]" https://x"#
        );
        assert_eq!(r("sent bearer abc123def"), "sent bearer [REDACTED:bearer]");
        assert_eq!(
            r("Authorization: Basic dGVzdDp0ZXN0"),
            "Authorization: Basic [REDACTED:basic_auth]"
        );
        assert_eq!(r("Basic dGVzdDp0ZXN0"), "Basic [REDACTED:basic_auth]");
        assert_eq!(
            r("Authorization: token TESTTEST"),
            "Authorization: token [REDACTED:token]"
        );
        unchanged("the bearer token expired.");
        unchanged(r#"WWW-Authenticate: Bearer realm="api", error="invalid_token""#);
        unchanged("see basic usage");
        unchanged("Authorization: Bearer $TOKEN");
        unchanged("token_type: Bearer");
    }

    #[test]
    fn url_passwords() {
        assert_eq!(
            r("postgres://admin:hunter2@db:5432/app"),
            "postgres://admin:[REDACTED:url_password]@db:5432/app"
        );
        assert_eq!(
            r("https://:p@ss@host/x"),
            "https://:[REDACTED:url_password]@host/x"
        );
        unchanged("http://example.com:8080/path?q=1");
        unchanged("ssh://git@example.com:22/repo");
        unchanged("postgres://admin:${DB_PASSWORD}@db/app");
    }

    #[test]
    fn private_key_blocks_go_whole() {
        for label in ["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "] {
            let text = format!(
                "before\n-----BEGIN {label}PRIVATE KEY-----\nTESTTESTTEST\nTEST+/==\n\
                 -----END {label}PRIVATE KEY-----\nafter"
            );
            assert_eq!(r(&text), "before\n[REDACTED:private_key]\nafter", "{label}");
        }
        let escaped =
            r#"{"private_key": "-----BEGIN PRIVATE KEY-----\nTEST\n-----END PRIVATE KEY-----\n"}"#;
        assert_eq!(r(escaped), r#"{"private_key": "[REDACTED:private_key]"}"#);
        unchanged("-----BEGIN PUBLIC KEY-----\nTEST\n-----END PUBLIC KEY-----");
        unchanged("-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----");
    }

    #[test]
    fn a_block_cut_off_loses_its_body_lines_only() {
        let text = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\n  TESTTEST\n\
                    TEST==\ntest result: FAILED. 1 passed";
        assert_eq!(
            r(text),
            "[REDACTED:private_key]\ntest result: FAILED. 1 passed"
        );
        // a second BEGIN ends the first block; the END belongs to the second
        let two = "-----BEGIN PRIVATE KEY-----\nTEST\nsome log line.\n-----BEGIN PRIVATE KEY-----\n\
                   TEST\n-----END PRIVATE KEY-----";
        assert_eq!(
            r(two),
            "[REDACTED:private_key]\nsome log line.\n[REDACTED:private_key]"
        );
    }

    #[test]
    fn named_values_keep_the_name() {
        for (text, want) in [
            ("DB_PASSWORD=hunter2", "DB_PASSWORD=[REDACTED:password]"),
            (
                r#"export GITHUB_TOKEN="abc def""#,
                r#"export GITHUB_TOKEN="[REDACTED:token]""#,
            ),
            (
                r#"{"client_secret": "x\"yz", "id": 1}"#,
                r#"{"client_secret": "[REDACTED:secret]", "id": 1}"#,
            ),
            (
                r#"{\"password\": \"pw\"}"#,
                r#"{\"password\": \"[REDACTED:password]\"}"#,
            ),
            ("  x-api-key: abc", "  x-api-key: [REDACTED:api_key]"),
            ("apiKey='abc'", "apiKey='[REDACTED:api_key]'"),
            (
                "Config { token: Some(\"abc\") }",
                "Config { token: Some(\"[REDACTED:token]\") }",
            ),
            (
                "?access_token=abc&page=2",
                "?access_token=[REDACTED:token]&page=2",
            ),
            ("password=1234", "password=[REDACTED:password]"),
            (
                "PASSWORD_PROD := abc",
                "PASSWORD_PROD := [REDACTED:password]",
            ),
            ("'passwd' => 'abc'", "'passwd' => '[REDACTED:password]'"),
            ("credentials: abc", "credentials: [REDACTED:credential]"),
            ("AUTH=abc", "AUTH=[REDACTED:auth]"),
            ("oauthToken: abc", "oauthToken: [REDACTED:token]"),
            ("invalid token: abc", "invalid token: [REDACTED:token]"),
            (
                "auth_header: Bearer abc",
                "auth_header: Bearer [REDACTED:bearer]",
            ),
            (
                "ключ password=\"héllo wörld\" ✓",
                "ключ password=\"[REDACTED:password]\" ✓",
            ),
        ] {
            assert_eq!(r(text), want, "{text}");
        }
    }

    #[test]
    fn harmless_mentions_stay() {
        for text in [
            "password must be 8 chars",
            "token_count=12",
            "max_tokens: 100",
            "usage: {\"prompt_tokens\": 12}",
            "password_min_length: 8",
            "token_budget=4096",
            "TOKEN_TTL=3600s",
            "secret_name: prod-db",
            "InvalidTokenError: Signature verification failed",
            "thread 'main' panicked at src/auth.rs:12:5:",
            "test auth::token::tests::expires ... ok",
            "assert token == expected",
            "author: Jane",
            "tokenizer: bert",
            "authentication: failed",
            "PWD=/home/test",
            "password: null",
            "token: None",
            "err: <nil>",
            "password=********",
            "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
            "password: {{ .Values.password }}",
            "TOKEN=$GITHUB_TOKEN",
            "SyntaxError: unexpected token: '}'",
            "secrets:",
            "\"token\": \"\"",
        ] {
            unchanged(text);
        }
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
