//! Operator sessions on the page: a signed cookie, no server-side state, so any server of a
//! fleet on the same ledger accepts it.
//!
//! The cookie is `KEYID.EXPIRES.MAC`: the first 16 hex digits of the operator's key hash, the
//! expiry in Unix seconds, and an HMAC-SHA256 of the key's full hash and both, keyed by the
//! ledger's session secret: a random value made by the first server on the ledger, shared by
//! the fleet, never in the config, replaced by `backstop config rotate-session-secret` (which
//! ends every session). Knowing the config (which holds only key hashes) is not enough to sign
//! one. An expiry further out than a session lasts is refused, whatever its MAC. A key taken
//! out of the config ends its sessions. A form's CSRF token is another HMAC of the same
//! session, so it needs no storage either. An open service (no keys) signs the local operator
//! in the same way.

use hmac::{Hmac, KeyInit, Mac};
use jiff::Timestamp;
use sha2::Sha256;

use backstop_core::case::identity::hex;

use crate::auth::Caller;
use crate::config::{Role, hash_key};
use crate::state::{AppState, local_operator};

/// The session cookie's name.
pub const COOKIE: &str = "backstop_session";
/// The sign-in form's double-submit cookie.
pub const LOGIN_COOKIE: &str = "backstop_login";
/// How long a session lasts.
pub const LIFETIME_SECONDS: i64 = 8 * 60 * 60;
/// The key id of the local operator of an open service.
const LOCAL: &str = "local";
/// How far a server's clock may run behind the one that signed a session.
const CLOCK_SKEW_SECONDS: i64 = 5 * 60;
/// The ledger's name for the page's session secret.
pub const SECRET_NAME: &str = "ui_session";

/// A signed-in operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Who.
    pub caller: Caller,
    /// The cookie's value.
    pub token: String,
    /// The token every form of this session carries.
    pub csrf: String,
}

/// Why a sign-in failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInError {
    /// No key, or not one the config names.
    UnknownKey,
    /// An agent's key: the page is for operators.
    NotAnOperator,
}

/// Signs in with `key` (ignored on an open service) at `now`.
pub fn sign_in(state: &AppState, key: &str, now: Timestamp) -> Result<Session, SignInError> {
    let (key_id, key_hash, caller) = if state.is_open() {
        (LOCAL.to_owned(), LOCAL.to_owned(), local_operator())
    } else {
        let hash = hash_key(key.trim());
        let caller = state
            .keys
            .get(&hash)
            .filter(|_| !key.trim().is_empty())
            .ok_or(SignInError::UnknownKey)?;
        if caller.role != Role::Operator {
            return Err(SignInError::NotAnOperator);
        }
        (hash[..16].to_owned(), hash.clone(), caller.clone())
    };
    let secret = state.session_secret();
    let expires = now.as_second() + LIFETIME_SECONDS;
    let payload = format!("{key_id}.{expires}");
    let token = format!(
        "{payload}.{}",
        sign(&secret, "session", &key_hash, &payload)
    );
    let csrf = sign(&secret, "csrf", &key_hash, &payload);
    Ok(Session {
        caller,
        token,
        csrf,
    })
}

/// The session a cookie value names, if it is signed, unexpired, and its key still an
/// operator's.
pub fn verify(state: &AppState, token: &str, now: Timestamp) -> Option<Session> {
    let mut parts = token.splitn(3, '.');
    let (key_id, expires, mac) = (parts.next()?, parts.next()?, parts.next()?);
    let expires_at = expires.parse::<i64>().ok()?;
    // Expired, or further out than any session this fleet signs.
    if expires_at <= now.as_second()
        || expires_at > now.as_second() + LIFETIME_SECONDS + CLOCK_SKEW_SECONDS
    {
        return None;
    }
    let (key_hash, caller) = if key_id == LOCAL {
        state
            .is_open()
            .then(|| (LOCAL.to_owned(), local_operator()))?
    } else {
        let (hash, caller) = state
            .keys
            .iter()
            .find(|(hash, caller)| hash.starts_with(key_id) && caller.role == Role::Operator)?;
        (hash.clone(), caller.clone())
    };
    let secret = state.session_secret();
    let payload = format!("{key_id}.{expires}");
    if !verify_mac(&secret, "session", &key_hash, &payload, mac) {
        return None;
    }
    Some(Session {
        caller,
        token: token.to_owned(),
        csrf: sign(&secret, "csrf", &key_hash, &payload),
    })
}

/// Whether `presented` is this session's CSRF token, compared in constant time.
pub fn csrf_matches(session: &Session, presented: &str) -> bool {
    same(&session.csrf, presented)
}

/// Whether two strings are equal, taking the same time wherever they differ.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A fresh random token, for the sign-in form's double-submit cookie.
pub fn nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The ledger's session secret: the one stored, or a fresh one stored now when there is none.
///
/// # Errors
/// The ledger failed.
pub fn ledger_secret(
    store: &dyn backstop_store::Store,
    now: Timestamp,
) -> Result<String, backstop_store::StoreError> {
    store.secret(SECRET_NAME, &fresh_secret(), now)
}

/// A fresh random session secret (256 bits from the system's random source).
pub fn fresh_secret() -> String {
    format!("{}{}", nonce(), nonce())
}

fn mac_of(secret: &str, purpose: &str, key_hash: &str, payload: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
    for part in [purpose, key_hash, payload] {
        mac.update(part.as_bytes());
        mac.update(b"|");
    }
    mac
}

fn sign(secret: &str, purpose: &str, key_hash: &str, payload: &str) -> String {
    hex(&mac_of(secret, purpose, key_hash, payload)
        .finalize()
        .into_bytes())
}

fn verify_mac(secret: &str, purpose: &str, key_hash: &str, payload: &str, presented: &str) -> bool {
    let Some(bytes) = unhex(presented) else {
        return false;
    };
    mac_of(secret, purpose, key_hash, payload)
        .verify_slice(&bytes)
        .is_ok()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
