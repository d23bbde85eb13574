//! Webhook signatures: `Backstop-Signature: t=<unix seconds>,v1=<hex>`, the hex being the
//! HMAC-SHA256 of `<t>.<body>` under the source's secret. A timestamp more than five minutes
//! from now is refused, so a captured delivery cannot be replayed later.

use backstop_core::case::RefusalCode;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The header a signed delivery carries.
pub const SIGNATURE_HEADER: &str = "backstop-signature";
/// How far a signature's timestamp may be from now, in seconds.
pub const TOLERANCE_SECS: i64 = 300;

/// Why a signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureError {
    /// No header, or not `t=...,v1=...`.
    Malformed,
    /// The timestamp is more than five minutes from now.
    Stale,
    /// The HMAC does not match.
    Mismatch,
}

impl SignatureError {
    /// Its refusal code.
    pub fn code(self) -> RefusalCode {
        match self {
            SignatureError::Malformed | SignatureError::Mismatch => RefusalCode::BadSignature,
            SignatureError::Stale => RefusalCode::StaleSignature,
        }
    }

    /// What was wrong, for the sender.
    pub fn message(self) -> &'static str {
        match self {
            SignatureError::Malformed => {
                "the delivery needs a `Backstop-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 \
                 of \"<t>.<body>\">` header"
            }
            SignatureError::Stale => {
                "the signature's timestamp is more than 5 minutes from now: replays are refused"
            }
            SignatureError::Mismatch => {
                "the signature does not match the body under this source's secret"
            }
        }
    }
}

fn mac(secret: &str, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The header value that signs `body` at `timestamp` (unix seconds).
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let digest = mac(secret, timestamp, body).finalize().into_bytes();
    let hex = backstop_core::case::identity::hex(&digest);
    format!("t={timestamp},v1={hex}")
}

/// Checks `header` signs `body` under `secret`, at most five minutes from `now` (unix seconds).
///
/// # Errors
/// [`SignatureError`]: malformed, stale, or not matching.
pub fn verify(
    secret: &str,
    header: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Malformed)?;
    let mut timestamp = None;
    let mut given = None;
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", v)) => given = decode_hex(v),
            _ => {}
        }
    }
    let (timestamp, given) = timestamp.zip(given).ok_or(SignatureError::Malformed)?;
    if (now - timestamp).abs() > TOLERANCE_SECS {
        return Err(SignatureError::Stale);
    }
    mac(secret, timestamp, body)
        .verify_slice(&given)
        .map_err(|_| SignatureError::Mismatch)
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_once_fresh_and_only_for_its_body() {
        let header = sign("s3cret-s3cret-s3cret", 1_000_000, b"{\"a\":1}");
        assert_eq!(
            verify(
                "s3cret-s3cret-s3cret",
                Some(&header),
                b"{\"a\":1}",
                1_000_100
            ),
            Ok(())
        );
        assert_eq!(
            verify(
                "s3cret-s3cret-s3cret",
                Some(&header),
                b"{\"a\":2}",
                1_000_100
            ),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify("another-secret-xx", Some(&header), b"{\"a\":1}", 1_000_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(
                "s3cret-s3cret-s3cret",
                Some(&header),
                b"{\"a\":1}",
                1_000_301
            ),
            Err(SignatureError::Stale)
        );
        assert_eq!(verify("s", None, b"", 0), Err(SignatureError::Malformed));
        assert_eq!(
            verify("s", Some("t=1,v1=zz"), b"", 1),
            Err(SignatureError::Malformed)
        );
    }
}
