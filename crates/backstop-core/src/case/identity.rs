//! Case names: a subject normalized by the pack's match rule, and the hashes that stand in for
//! text that is never kept.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::pack::MatchRule;

/// The longest case id a request may send, in characters.
pub const MAX_CASE_ID_CHARS: usize = 256;

/// `subject` normalized by `rule`, or why it cannot name a case.
///
/// `exact` keeps it byte for byte; `case_insensitive` lower-cases it (Unicode); `domain` also
/// drops a scheme, `www.`, a port, a path and a trailing dot, and folds an internationalized
/// name to its ASCII (punycode) form, so `https://www.Bücher.de./shop` and
/// `xn--bcher-kva.de` are one case.
pub fn normalize_subject(subject: &str, rule: MatchRule) -> Result<String, String> {
    if subject.trim().is_empty() {
        return Err("a case id must not be empty".to_owned());
    }
    if subject.chars().count() > MAX_CASE_ID_CHARS {
        return Err(format!(
            "a case id may have at most {MAX_CASE_ID_CHARS} characters"
        ));
    }
    if subject.chars().any(char::is_control) {
        return Err("a case id may not hold control characters".to_owned());
    }
    match rule {
        MatchRule::Exact => Ok(subject.to_owned()),
        MatchRule::CaseInsensitive => Ok(subject.to_lowercase()),
        MatchRule::Domain => normalize_domain(subject),
    }
}

/// A domain name in its one ASCII, lower-case form.
fn normalize_domain(subject: &str) -> Result<String, String> {
    let mut host = subject.trim();
    if let Some((_, rest)) = host.split_once("://") {
        host = rest;
    }
    host = host.split(['/', '?', '#']).next().unwrap_or_default();
    // A port: the last `:` followed by digits only.
    if let Some((name, port)) = host.rsplit_once(':')
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
    {
        host = name;
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    let ascii =
        idna::domain_to_ascii(host).map_err(|_| format!("`{subject}` is not a domain name"))?;
    let ascii = ascii.strip_prefix("www.").unwrap_or(&ascii).to_owned();
    let letters_digits_hyphens = ascii
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    if !letters_digits_hyphens || !ascii.contains('.') || ascii.split('.').any(str::is_empty) {
        return Err(format!(
            "`{subject}` is not a domain name (expected a name such as `northwind.com`)"
        ));
    }
    Ok(ascii)
}

/// The case id of a fields-mode case: the same values make the same id in any order.
///
/// Values are normalized by the match rule first; the id is a hash (`f-…`) so it is safe in a
/// URL path, and the result shows the normalized fields beside it.
pub fn fields_case_id(fields: &BTreeMap<String, String>) -> String {
    let canonical = serde_json::to_string(fields).unwrap_or_default();
    format!("f-{}", short_hash(canonical.as_bytes()))
}

/// The case id of a content-mode case: a hash of the identity question's excerpt texts,
/// whitespace and case folded and order ignored.
pub fn content_case_id<'a>(texts: impl Iterator<Item = &'a str>) -> String {
    format!("c-{}", short_hash(folded_set(texts).as_bytes()))
}

/// The id issued to a new case: derived from who asked and the execution id, so replaying a
/// ledger issues the same ids.
pub fn issued_case_id(caller: &str, job: &str, execution_id: &str) -> String {
    let seed = format!("{caller}\u{1f}{job}\u{1f}{execution_id}");
    format!("i-{}", short_hash(seed.as_bytes()))
}

/// The hash that recognizes a first request sent again: every excerpt's question key and text,
/// exactly as sent or (`folded`) with whitespace and case folded, order ignored.
pub fn opening_hash<'a>(
    excerpts: impl Iterator<Item = (&'a str, &'a str)>,
    folded: bool,
) -> String {
    let lines = excerpts.map(|(key, text)| {
        let text = if folded { fold(text) } else { text.to_owned() };
        format!("{key}\u{1f}{text}")
    });
    let mut lines: Vec<String> = lines.collect();
    lines.sort();
    lines.dedup();
    full_hash(lines.join("\u{1e}").as_bytes())
}

/// A short hash of one excerpt's text, kept in place of the text.
pub fn text_hash(text: &str) -> String {
    short_hash(text.as_bytes())
}

/// The hex SHA-256 of `bytes`.
pub fn full_hash(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The first 128 bits of the SHA-256 of `bytes`, in hex.
fn short_hash(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes)[..16])
}

/// Bytes as lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// The texts folded, sorted and joined: one string for a set of texts.
fn folded_set<'a>(texts: impl Iterator<Item = &'a str>) -> String {
    let mut folded: Vec<String> = texts.map(fold).collect();
    folded.sort();
    folded.dedup();
    folded.join("\u{1e}")
}

/// Whitespace runs collapsed and the text lower-cased.
fn fold(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_insensitive_and_domain_fold_case() {
        for rule in [MatchRule::CaseInsensitive, MatchRule::Domain] {
            assert_eq!(
                normalize_subject("Northwind.com", rule),
                normalize_subject("northwind.com", rule)
            );
        }
        assert_ne!(
            normalize_subject("Northwind.com", MatchRule::Exact),
            normalize_subject("northwind.com", MatchRule::Exact)
        );
    }

    #[test]
    fn domain_folds_idna_trailing_dot_scheme_www_port_and_path() {
        let one = normalize_subject("xn--bcher-kva.de", MatchRule::Domain).unwrap();
        for form in [
            "Bücher.de",
            "bücher.de.",
            "https://www.BÜCHER.de:443/shop?x=1",
            "XN--BCHER-KVA.DE",
        ] {
            assert_eq!(
                normalize_subject(form, MatchRule::Domain).unwrap(),
                one,
                "{form}"
            );
        }
        assert_eq!(one, "xn--bcher-kva.de");
    }

    #[test]
    fn bad_subjects_are_refused_with_a_reason() {
        assert!(normalize_subject("  ", MatchRule::Exact).is_err());
        assert!(normalize_subject(&"x".repeat(300), MatchRule::Exact).is_err());
        for bad in ["localhost", "a..b", "exa mple.com", "https://"] {
            assert!(normalize_subject(bad, MatchRule::Domain).is_err(), "{bad}");
        }
    }

    #[test]
    fn fields_ids_ignore_order_and_content_ids_follow_the_text() {
        let a: BTreeMap<String, String> = [
            ("po".into(), "7".into()),
            ("supplier".into(), "acme".into()),
        ]
        .into();
        let b: BTreeMap<String, String> = [
            ("supplier".into(), "acme".into()),
            ("po".into(), "7".into()),
        ]
        .into();
        assert_eq!(fields_case_id(&a), fields_case_id(&b));
        assert_eq!(
            content_case_id(["Acme  makes bolts", "b"].into_iter()),
            content_case_id(["b", "acme makes BOLTS"].into_iter())
        );
        assert_ne!(
            content_case_id(["Acme makes bolts"].into_iter()),
            content_case_id(["Acme makes nuts"].into_iter())
        );
        assert!(issued_case_id("a", "j", "e").starts_with("i-"));
        assert_ne!(issued_case_id("a", "j", "e"), issued_case_id("b", "j", "e"));
    }
}
