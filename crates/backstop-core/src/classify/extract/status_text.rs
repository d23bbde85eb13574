//! An HTTP status written in text by any client, found by a scan rather than a regex (a
//! one-shot classification should not compile a large case-insensitive alternation).
//!
//! Two forms count: a status followed by its own reason phrase (`503 Service Unavailable`,
//! `(429) Too Many Requests`), which wins wherever it is, and a status after a word that
//! introduces one (`status code 502`, `HTTP/1.1 504`, `returned error: 404`). Only 400-599:
//! a failure's status.

use super::{Extracted, ExtractorInfo, Source};

pub(super) const INFO: ExtractorInfo = ExtractorInfo {
    name: "http_status_text",
    reads: "an HTTP status written in text by any client: a status with its reason phrase (`503 Service Unavailable`), `status code 502`, `HTTP/1.1 504`, `HTTP 429`, `returned error: 404`, `response code: 403` (400-599 only)",
    example: "Response status code does not indicate success: 429 (Too Many Requests).",
    finds: "http_status 429",
};

/// Reason phrases (RFC 9110 and common extensions), lower-case, with their status.
const PHRASES: [(&str, u16); 41] = [
    ("bad request", 400),
    ("unauthorized", 401),
    ("payment required", 402),
    ("forbidden", 403),
    ("not found", 404),
    ("method not allowed", 405),
    ("not acceptable", 406),
    ("proxy authentication required", 407),
    ("request timeout", 408),
    ("request time-out", 408),
    ("conflict", 409),
    ("gone", 410),
    ("length required", 411),
    ("precondition failed", 412),
    ("payload too large", 413),
    ("request entity too large", 413),
    ("uri too long", 414),
    ("unsupported media type", 415),
    ("range not satisfiable", 416),
    ("expectation failed", 417),
    ("misdirected request", 421),
    ("unprocessable entity", 422),
    ("unprocessable content", 422),
    ("locked", 423),
    ("failed dependency", 424),
    ("too early", 425),
    ("upgrade required", 426),
    ("precondition required", 428),
    ("too many requests", 429),
    ("request header fields too large", 431),
    ("unavailable for legal reasons", 451),
    ("internal server error", 500),
    ("not implemented", 501),
    ("bad gateway", 502),
    ("service unavailable", 503),
    ("gateway timeout", 504),
    ("gateway time-out", 504),
    ("http version not supported", 505),
    ("insufficient storage", 507),
    ("loop detected", 508),
    ("network authentication required", 511),
];

/// Words that introduce a status, as the text before it ends (lower-case, trailing
/// separators trimmed).
const LEAD_INS: [&str; 14] = [
    "status",
    "status code",
    "status code of",
    "statuscode",
    "http",
    "http status",
    "http error",
    "http code",
    "returned",
    "returned error",
    "returned a",
    "code",
    "response",
    "response code",
];

/// Puts the first status the text writes, if any.
pub(super) fn read(text: &str, from: Source, found: &mut Extracted) {
    if found.http_status.is_none()
        && let Some(status) = find(text)
    {
        Extracted::put_weak(&mut found.http_status, status, from, INFO.name);
    }
}

/// The status of the first `NNN Reason Phrase`, else of the first status after a lead-in.
fn find(text: &str) -> Option<u16> {
    let bytes = text.as_bytes();
    let mut after_lead_in = None;
    for i in 0..bytes.len().saturating_sub(2) {
        if !matches!(bytes[i], b'4' | b'5')
            || !bytes[i + 1].is_ascii_digit()
            || !bytes[i + 2].is_ascii_digit()
            || (i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'.'))
            || bytes.get(i + 3).is_some_and(u8::is_ascii_alphanumeric)
            || (matches!(bytes.get(i + 3), Some(b'.' | b','))
                && bytes.get(i + 4).is_some_and(u8::is_ascii_digit))
        {
            continue;
        }
        let status = u16::from(bytes[i] - b'0') * 100
            + u16::from(bytes[i + 1] - b'0') * 10
            + u16::from(bytes[i + 2] - b'0');
        if phrase_after(&text[i + 3..]) == Some(status) {
            return Some(status);
        }
        if after_lead_in.is_none() && lead_in_before(&text[..i]) {
            after_lead_in = Some(status);
        }
    }
    after_lead_in
}

/// The status of the reason phrase right after a number (`) `, `: `, ` - ` may come between).
fn phrase_after(rest: &str) -> Option<u16> {
    let start = rest
        .bytes()
        .take(4)
        .take_while(|b| matches!(b, b' ' | b')' | b'(' | b':' | b'-' | b'\'' | b'`'))
        .count();
    let rest = &rest[start..];
    PHRASES.iter().find_map(|(phrase, status)| {
        let head = rest.get(..phrase.len())?;
        let ends = rest
            .as_bytes()
            .get(phrase.len())
            .is_none_or(|b| !b.is_ascii_alphanumeric());
        (ends && head.eq_ignore_ascii_case(phrase)).then_some(*status)
    })
}

/// Whether the text before a number ends with a word that introduces a status.
fn lead_in_before(before: &str) -> bool {
    let tail = &before[before.floor_char_boundary(before.len().saturating_sub(32))..];
    let tail = tail
        .trim_end_matches([' ', ':', '=', '(', '['])
        .to_ascii_lowercase();
    let tail = tail.trim_end_matches("/1.1").trim_end_matches("/1.0");
    let tail = tail.trim_end_matches("/2.0").trim_end_matches("/2");
    LEAD_INS.iter().any(|lead| {
        tail.ends_with(lead)
            && tail[..tail.len() - lead.len()]
                .bytes()
                .last()
                .is_none_or(|b| !b.is_ascii_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_with_their_phrases_or_lead_ins() {
        assert_eq!(
            find("Response status code does not indicate success: 503 (Service Unavailable)."),
            Some(503)
        );
        assert_eq!(
            find("AxiosError: Request failed with status code 502"),
            Some(502)
        );
        assert_eq!(find("HTTP/1.1 504 Gateway Time-out"), Some(504));
        assert_eq!(find("the server returned HTTP 429"), Some(429));
        assert_eq!(
            find("Unexpected response code: 403 (ACL not found)"),
            Some(403)
        );
        assert_eq!(find("StatusCode: 500, RequestID: x"), Some(500));
        assert_eq!(
            find("resulted in a `422 Unprocessable Entity` response"),
            Some(422)
        );
    }

    #[test]
    fn other_numbers_are_not_statuses() {
        assert_eq!(find("found 404 Service Unavailable pages"), None);
        assert_eq!(find("processed 429 records"), None);
        assert_eq!(
            find("dial tcp 10.0.0.5:5432: connect: connection refused"),
            None
        );
        assert_eq!(find("took 503.2 ms"), None);
        assert_eq!(find("exit code 4040"), None);
        assert_eq!(find("HTTP 200 OK"), None);
    }
}
