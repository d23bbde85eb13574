//! The words of a code or a type name, for the message rules to read.
//!
//! Providers name their errors in the same vocabulary their messages use:
//! `ProvisionedThroughputExceededException`, `rate_limit_exceeded`, `channel_not_found`.
//! Split into words, a code no rule names is still judged by what it says.

use super::{Extracted, ExtractorInfo, Source};
use crate::report::Report;

pub(super) const INFO: ExtractorInfo = ExtractorInfo {
    name: "code_words",
    reads: "error_code and exception (given or extracted), and codes written in the text (CONSTANT_CASE, CamelCase, snake_case): their words, added to the text the message rules read",
    example: "ChannelClosedByBroker: (406) PRECONDITION_FAILED - inequivalent arg 'durable'",
    finds: "text \"channel closed by broker\", \"precondition failed\"",
};

/// The most code tokens read out of one text.
const MAX_TOKENS: usize = 12;

/// Adds the words of the codes written in a text (`PRECONDITION_FAILED`,
/// `NotLeaderOrFollowerException`, `card_declined`), so the message rules read them.
pub(super) fn add_text_tokens(text: &str, from: Source, found: &mut Extracted) {
    if !may_hold_codes(text.as_bytes()) {
        return;
    }
    let mut words = String::new();
    for token in code_tokens(text).take(MAX_TOKENS) {
        if !words.is_empty() {
            words.push_str(" | ");
        }
        words.push_str(&code_words(token));
    }
    if !words.is_empty() {
        found.add_text(words, from, INFO.name);
    }
}

/// The words of a text that are written as codes: `CONSTANT_CASE` or `snake_case` with an
/// underscore between letters, or `CamelCase` with a hump or more.
fn code_tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map(|word| word.trim_matches('_'))
        .filter(|word| {
            // An id (`req_00af`) is not a code: two parts at least must be words.
            let snake = word.contains('_')
                && word
                    .split('_')
                    .filter(|part| part.len() > 1 && part.bytes().all(|b| b.is_ascii_alphabetic()))
                    .count()
                    >= 2;
            let humps = word
                .as_bytes()
                .windows(2)
                .filter(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
                .count();
            word.bytes().any(|b| b.is_ascii_alphabetic()) && (snake || humps >= 1)
        })
}

/// Whether the text may hold a code, in one pass: a lower-case letter followed by an
/// upper-case one (`tooMany`), or an underscore between two letters (`rate_limit`; an id
/// such as `req_00af` has none).
fn may_hold_codes(text: &[u8]) -> bool {
    text.windows(2).enumerate().any(|(i, w)| {
        (w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
            || (w[1] == b'_'
                && w[0].is_ascii_alphabetic()
                && text.get(i + 2).is_some_and(u8::is_ascii_alphabetic))
    })
}

/// Adds the words of the report's error code and exception name (given or extracted).
pub(super) fn add_code_words(report: &Report, found: &mut Extracted) {
    let code = report
        .error_code
        .as_deref()
        .map(|c| (c, Source::Message))
        .or_else(|| {
            found
                .error_code
                .as_ref()
                .map(|f| (f.value.as_str(), f.from))
        });
    let exception = report
        .exception
        .as_deref()
        .map(|c| (c, Source::Message))
        .or_else(|| found.exception.as_ref().map(|f| (f.value.as_str(), f.from)));
    let mut texts = Vec::new();
    for (name, from) in [code, exception].into_iter().flatten() {
        let last = name.rsplit(['.', '#', '$', '/']).next().unwrap_or(name);
        let last = last.rsplit("::").next().unwrap_or(last);
        let words = code_words(last);
        if words.chars().any(|c| c.is_ascii_alphabetic()) {
            texts.push((words, from));
        }
    }
    for (words, from) in texts {
        found.add_text(words, from, INFO.name);
    }
}

/// A code's words, lower-case, separated by single spaces: `TooManyRequests` →
/// `too many requests`, `rate_limit_exceeded` → `rate limit exceeded`, `HTTPError` →
/// `http error`.
pub fn code_words(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
            continue;
        }
        if i > 0 && c.is_ascii_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            // A new word starts at an upper-case letter after a lower-case one or a digit
            // (`tooMany`), or at the last capital of an acronym (`HTTPError`).
            let starts_word = prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower);
            if starts_word && !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_as_words() {
        assert_eq!(code_words("TooManyRequests"), "too many requests");
        assert_eq!(
            code_words("ProvisionedThroughputExceededException"),
            "provisioned throughput exceeded exception"
        );
        assert_eq!(code_words("rate_limit_exceeded"), "rate limit exceeded");
        assert_eq!(code_words("HTTPError"), "http error");
        assert_eq!(code_words("RESOURCE_EXHAUSTED"), "resource exhausted");
        assert_eq!(code_words("out-of-credit"), "out of credit");
        assert_eq!(code_words("S3SlowDown"), "s3 slow down");
    }

    #[test]
    fn codes_in_text_are_read_as_words() {
        let mut found = Extracted::default();
        add_text_tokens(
            "ChannelClosedByBroker: (406) PRECONDITION_FAILED - inequivalent arg; code card_declined",
            Source::Message,
            &mut found,
        );
        assert_eq!(
            found.texts[0].value,
            "channel closed by broker | precondition failed | card declined"
        );
        let mut none = Extracted::default();
        add_text_tokens("plain words only", Source::Message, &mut none);
        assert!(none.texts.is_empty());
    }

    #[test]
    fn the_last_segment_of_a_qualified_name_is_read() {
        let report = Report::from_json(
            r#"{"exception": "com.amazonaws.dynamodb#ConditionalCheckFailedException"}"#,
        )
        .unwrap();
        let mut found = Extracted::default();
        add_code_words(&report, &mut found);
        assert_eq!(found.texts[0].value, "conditional check failed exception");
    }
}
