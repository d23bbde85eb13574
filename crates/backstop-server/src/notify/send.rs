//! One try: the notice's body posted to its target, signed as webhooks are signed
//! (`Backstop-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`), with the stable
//! `Backstop-Event-Id`. Only a 2xx is a delivery. What went wrong is kept short and never
//! holds the URL (a Slack webhook's path is its token) or the receiver's answer.

use std::time::Duration;

use backstop_core::notify::Notice;

use crate::config::NotifyTarget;
use crate::effects::signature::{SIGNATURE_HEADER, sign};

/// The header that names the notification: the same on every retry.
pub const EVENT_ID_HEADER: &str = "backstop-event-id";
/// The header that names the kind of event (`review_opened`, ...).
pub const EVENT_HEADER: &str = "backstop-event";
/// The longest error kept with a notification.
const MAX_ERROR_CHARS: usize = 200;

/// An HTTP client for tries that take at most `timeout` and follow no redirect.
pub(crate) fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .new_agent()
}

/// Posts `notice` to `target`, signed at `now` (unix seconds): delivered, or why not.
pub(crate) fn post(
    agent: &ureq::Agent,
    target: &NotifyTarget,
    notice: &Notice,
    now: i64,
) -> Result<(), String> {
    let body = target.format.body(notice);
    let answer = agent
        .post(&target.url)
        .header("content-type", "application/json")
        .header(
            "user-agent",
            concat!("backstop/", env!("CARGO_PKG_VERSION")),
        )
        .header(EVENT_ID_HEADER, &notice.id)
        .header(EVENT_HEADER, notice.kind.as_str())
        .header(
            SIGNATURE_HEADER,
            &sign(&target.secret, now, body.as_bytes()),
        )
        .send(&body);
    match answer {
        Ok(response) if response.status().is_success() => Ok(()),
        Ok(response) => Err(short(&format!("HTTP {}", response.status().as_u16()))),
        Err(error) => Err(short(&describe(&error))),
    }
}

/// What failed, in words of our own: the library's text may name the URL.
fn describe(error: &ureq::Error) -> String {
    match error {
        ureq::Error::Timeout(_) => "timed out".to_owned(),
        ureq::Error::Io(io) => format!("connection failed: {}", io.kind()),
        ureq::Error::HostNotFound => "host not found".to_owned(),
        ureq::Error::ConnectionFailed => "connection failed".to_owned(),
        ureq::Error::TooManyRedirects | ureq::Error::RedirectFailed => {
            "redirected (redirects are not followed)".to_owned()
        }
        ureq::Error::Tls(_) | ureq::Error::Rustls(_) | ureq::Error::TlsRequired => {
            "TLS failed".to_owned()
        }
        ureq::Error::Protocol(_) => "the receiver broke the HTTP protocol".to_owned(),
        _ => "the request failed".to_owned(),
    }
}

/// `text` with secrets redacted, at most [`MAX_ERROR_CHARS`] characters.
fn short(text: &str) -> String {
    let (redacted, _) = backstop_core::redact::redact(text);
    redacted.chars().take(MAX_ERROR_CHARS).collect()
}
