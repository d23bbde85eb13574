//! Operator sessions on the page: a signed cookie, no server-side state, so any server of a
//! fleet with the same keys accepts it.
//!
//! The cookie is `KEYID.EXPIRES.MAC`: the first 16 hex digits of the operator's key hash, the
//! expiry in Unix seconds, and an HMAC-SHA256 of both keyed by that key's full hash. A key
//! taken out of the config ends its sessions. A form's CSRF token is another HMAC of the same
//! session, so it needs no storage either. An open service (no keys) signs the local operator
//! in with a secret of the process.

use std::sync::OnceLock;

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
    let (key_id, secret, caller) = if state.is_open() {
        (
            LOCAL.to_owned(),
            process_secret().to_owned(),
            local_operator(),
        )
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
    let expires = now.as_second() + LIFETIME_SECONDS;
    let payload = format!("{key_id}.{expires}");
    let token = format!("{payload}.{}", sign(&secret, "session", &payload));
    let csrf = sign(&secret, "csrf", &payload);
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
    if expires.parse::<i64>().ok()? <= now.as_second() {
        return None;
    }
    let (secret, caller) = if key_id == LOCAL {
        state
            .is_open()
            .then(|| (process_secret().to_owned(), local_operator()))?
    } else {
        let (hash, caller) = state
            .keys
            .iter()
            .find(|(hash, caller)| hash.starts_with(key_id) && caller.role == Role::Operator)?;
        (hash.clone(), caller.clone())
    };
    let payload = format!("{key_id}.{expires}");
    if !verify_mac(&secret, "session", &payload, mac) {
        return None;
    }
    Some(Session {
        caller,
        token: token.to_owned(),
        csrf: sign(&secret, "csrf", &payload),
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

fn sign(secret: &str, purpose: &str, payload: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
    mac.update(purpose.as_bytes());
    mac.update(b"|");
    mac.update(payload.as_bytes());
    hex(&mac.finalize().into_bytes())
}

fn verify_mac(secret: &str, purpose: &str, payload: &str, presented: &str) -> bool {
    let Some(bytes) = unhex(presented) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
    mac.update(purpose.as_bytes());
    mac.update(b"|");
    mac.update(payload.as_bytes());
    mac.verify_slice(&bytes).is_ok()
}

/// The secret of an open service's sessions: new each start.
fn process_secret() -> &'static str {
    static SECRET: OnceLock<String> = OnceLock::new();
    SECRET.get_or_init(|| format!("{}{}", nonce(), nonce()))
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
