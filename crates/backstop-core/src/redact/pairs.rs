//! Named values (`NAME=value`, `"name": "value"`, ...): which names hold a secret, and where
//! their values start and end.

use std::sync::LazyLock;

use regex::Regex;

use super::{Found, holds_nothing, regex};

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
pub(super) fn named_values(text: &str, priority: usize, found: &mut Vec<Found>) {
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
pub(super) const SECRET_WORDS: &[(&str, &str)] = &[
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

#[cfg(test)]
mod tests {
    use crate::redact::tests::{r, unchanged};

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
}
