//! Whether sending a failed call again could do its effect twice.
//!
//! Two questions, answered separately. Is the call idempotent: does the call say so
//! (`idempotent`, or an idempotency key the server deduplicates on), does the tool's setting
//! in the strategies file, or does its HTTP method (RFC 9110 §9.2.2: GET, HEAD, OPTIONS, TRACE,
//! PUT and DELETE are; POST and PATCH are not)? And may this failure have taken effect: was
//! the request sent and its answer lost (a read timeout, a reset, a 502 or 504), or was it
//! refused before anything was done (a 4xx, a 503, a refused connection, a name that did not
//! resolve)? A resend is held back only when both answers are bad.

use crate::class::Class;
use crate::report::Report;

/// How a failed call may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resend<'a> {
    /// Sending it again cannot do its effect twice, or nothing says it could.
    Safe,
    /// Only under the idempotency key it was first sent with: the server answers a resend
    /// under that key with the first outcome.
    UnderKey(&'a str),
    /// Sending it again could do its effect twice.
    Unsafe,
}

/// Whether the operation's leading HTTP method is idempotent (`POST /v1/charges` → `false`);
/// `None` when the operation does not start with a method.
pub fn method_idempotent(operation: &str) -> Option<bool> {
    const IDEMPOTENT: [&str; 6] = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"];
    const NOT: [&str; 2] = ["POST", "PATCH"];
    let method = operation.split_ascii_whitespace().next()?;
    if IDEMPOTENT.iter().any(|m| method.eq_ignore_ascii_case(m)) {
        Some(true)
    } else if NOT.iter().any(|m| method.eq_ignore_ascii_case(m)) {
        Some(false)
    } else {
        None
    }
}

/// Whether a failure of this class is a refusal: the other side (or something before it)
/// turned the call away before acting on it, so a resend cannot repeat an effect.
pub fn refused_before_acting(class: Class) -> bool {
    matches!(
        class,
        Class::RateLimited
            | Class::QuotaExhausted
            | Class::Auth
            | Class::PolicyDenied
            | Class::InvalidInput
            | Class::Business
            | Class::CapabilityMissing
    )
}

/// errno names of a connection that was never made: nothing was sent.
const NOT_SENT_ERRNO: [&str; 8] = [
    "ECONNREFUSED",
    "EHOSTUNREACH",
    "ENETUNREACH",
    "ENETDOWN",
    "ENOTFOUND",
    "EAI_AGAIN",
    "EADDRNOTAVAIL",
    "EAI_NONAME",
];

/// Words (lower case) of a failure to connect or to resolve a name, in an exception's name or
/// a message: nothing was sent.
const NOT_SENT_WORDS: [&str; 16] = [
    "connecttimeout",
    "connect timeout",
    "connect timed out",
    "connection refused",
    "connectionrefused",
    "connecterror",
    "newconnectionerror",
    "failed to establish a new connection",
    "failed to connect",
    "could not connect",
    "name or service not known",
    "could not resolve host",
    "temporary failure in name resolution",
    "nodename nor servname",
    "no route to host",
    "network is unreachable",
];

/// Whether the call may have done its work before it failed, judged by how it failed: `false`
/// when the answer or the transport shows nothing was done (no side effect happened, a 4xx or
/// 503 answer, a gRPC code that refuses, a connection never made), `true` otherwise (an answer
/// that came back, a 5xx but 503, a timeout or reset after sending, or nothing to tell by).
pub fn may_have_taken_effect(report: &Report) -> bool {
    if let Some(effects) = report.side_effects {
        return effects.done > 0;
    }
    if let Some(status) = report.http_status {
        return !((400..500).contains(&status) || status == 503);
    }
    if let Some(code) = report.grpc_code {
        return matches!(
            code.name(),
            "DEADLINE_EXCEEDED" | "UNKNOWN" | "INTERNAL" | "DATA_LOSS" | "CANCELLED"
        );
    }
    if let Some(errno) = &report.errno
        && NOT_SENT_ERRNO
            .iter()
            .any(|name| errno.eq_ignore_ascii_case(name))
    {
        return false;
    }
    let never_connected = |text: &str| {
        let head = &text[..text.floor_char_boundary(4096)];
        let lower = head.to_ascii_lowercase();
        NOT_SENT_WORDS.iter().any(|w| lower.contains(w))
            || NOT_SENT_ERRNO.iter().any(|name| head.contains(name))
    };
    let said = [&report.exception, &report.error_code, &report.message];
    !said.into_iter().flatten().any(|text| never_connected(text))
}

/// The idempotency key a report names: its own `idempotency_key`, else an `Idempotency-Key`
/// header the server echoed.
pub fn key_of(report: &Report) -> Option<&str> {
    report
        .idempotency_key
        .as_deref()
        .or_else(|| report.headers.get("idempotency-key"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(json: &str) -> Report {
        Report::from_json(json).unwrap()
    }

    #[test]
    fn methods_follow_rfc_9110() {
        for (operation, want) in [
            ("GET /v1/charges/ch_1", Some(true)),
            ("put /v1/items/7", Some(true)),
            ("DELETE /v1/items/7", Some(true)),
            ("HEAD /", Some(true)),
            ("POST /v1/charges", Some(false)),
            ("PATCH /v1/items/7", Some(false)),
            ("charges.create", None),
            ("", None),
        ] {
            assert_eq!(method_idempotent(operation), want, "{operation}");
        }
    }

    #[test]
    fn a_lost_answer_may_have_taken_effect_and_a_refusal_did_not() {
        for (json, want) in [
            (r#"{"exception": "httpx.ReadTimeout"}"#, true),
            (r#"{"errno": "ECONNRESET"}"#, true),
            (r#"{"http_status": 504}"#, true),
            (r#"{"http_status": 500}"#, true),
            (r#"{"grpc_code": "DEADLINE_EXCEEDED"}"#, true),
            (r#"{"message": "socket hang up"}"#, true),
            (r#"{"side_effects": {"done": 1, "total": 3}}"#, true),
            (r#"{"side_effects": {"done": 0, "total": 3}}"#, false),
            (r#"{"http_status": 503}"#, false),
            (r#"{"http_status": 429}"#, false),
            (r#"{"http_status": 409}"#, false),
            (r#"{"grpc_code": "UNAVAILABLE"}"#, false),
            (r#"{"errno": "ECONNREFUSED"}"#, false),
            (r#"{"exception": "httpx.ConnectTimeout"}"#, false),
            (
                r#"{"message": "curl: (6) Could not resolve host: api.example.com"}"#,
                false,
            ),
            (
                r#"{"message": "connect ECONNREFUSED 127.0.0.1:5432"}"#,
                false,
            ),
        ] {
            assert_eq!(may_have_taken_effect(&report(json)), want, "{json}");
        }
    }

    #[test]
    fn a_key_is_the_reports_own_or_the_echoed_header() {
        let own = report(r#"{"http_status": 502, "idempotency_key": "order-7"}"#);
        assert_eq!(key_of(&own), Some("order-7"));
        let echoed = report(r#"{"http_status": 502, "headers": {"Idempotency-Key": "k-1"}}"#);
        assert_eq!(key_of(&echoed), Some("k-1"));
        assert_eq!(key_of(&report(r#"{"http_status": 502}"#)), None);
    }
}
