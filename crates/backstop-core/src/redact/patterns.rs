//! The secrets a regex finds: provider keys, `Bearer` and `Basic` credentials, URL passwords;
//! and private key blocks, BEGIN line to END line.

use std::sync::LazyLock;

use regex::Regex;

use super::{Found, holds_nothing, regex};

/// A kind of secret a regex finds; the checks that need code live in `private_keys` and
/// `named_values`.
pub(super) struct Pattern {
    pub(super) kind: &'static str,
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
    pub(super) fn find(&self, text: &str, priority: usize, found: &mut Vec<Found>) {
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
/// The patterns in order of specificity: `sk-ant-` before `sk-`, provider keys before the
/// headers and URLs that may carry them.
pub(super) static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
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
pub(super) fn private_keys(text: &str, priority: usize, found: &mut Vec<Found>) {
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

#[cfg(test)]
mod tests {
    use crate::redact::tests::{
        ANTHROPIC, AWS_ID, AWS_SECRET, JWT, OPENAI, OPENAI_LEGACY, github, r, unchanged,
    };

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
}
