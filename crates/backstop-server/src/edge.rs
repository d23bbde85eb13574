//! What every route checks before anything else, on `/v1`, `/ui` and `/mcp` alike: a write
//! from another site is refused, a JSON route takes only JSON, and a path or query whose
//! percent-escapes are broken, not UTF-8, or decode to a control character is refused.
//!
//! Cross-site: a browser names the page a request comes from (`Origin`, `Sec-Fetch-Site`); a
//! write (any method but GET, HEAD, OPTIONS) whose origin is not this service is refused 403,
//! so no web page can drive an open service (no keys) or a signed-in operator's browser. A
//! client that is not a browser sends neither header and is not affected.

use axum::extract::Request;
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use backstop_core::Issue;
use backstop_core::case::RefusalCode;

use crate::error::ApiError;

/// The edge's checks, in one layer (each layer costs every request a little): a write from
/// another site, then the path and query, then a JSON route's body type.
pub async fn guard(request: Request, next: Next) -> Response {
    if let Err(refused) = same_site_writes(&request)
        .and_then(|()| clean_uri(&request))
        .and_then(|()| json_only(&request))
    {
        return refused.into_response();
    }
    next.run(request).await
}

/// Refuses a write that a browser says comes from another site.
fn same_site_writes(request: &Request) -> Result<(), ApiError> {
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    match cross_site(request.headers()) {
        Some(why) if !safe => Err(ApiError::new(
            RefusalCode::Forbidden,
            format!("a write from another site is refused ({why}); nothing was changed"),
        )),
        _ => Ok(()),
    }
}

/// Why the request comes from another site, if a browser says it does. `Sec-Fetch-Site` is
/// the browser's own verdict and wins when sent (a page served with `Referrer-Policy:
/// no-referrer`, as `/ui` is, posts its forms with `Origin: null`); without it, the `Origin`
/// must name this service.
fn cross_site(headers: &HeaderMap) -> Option<String> {
    let text = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("?"));
    if let Some(site) = text("sec-fetch-site") {
        return (!matches!(site, "same-origin" | "none"))
            .then(|| format!("Sec-Fetch-Site: {site}"));
    }
    let origin = text("origin")?;
    let host = text("host").unwrap_or_default();
    let origin_host = origin
        .split_once("://")
        .map(|(_, rest)| rest.trim_end_matches('/'));
    (origin_host != Some(host)).then(|| format!("Origin {origin} is not this service ({host})"))
}

/// Refuses a body that is not JSON on a JSON route (`/v1/...`, `/mcp`): a page can post
/// `text/plain` across sites without asking first, `application/json` it cannot.
fn json_only(request: &Request) -> Result<(), ApiError> {
    let path = request.uri().path();
    let json_route = path.starts_with("/v1/") || path == "/mcp";
    let has_body = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .is_none_or(|n| n.as_bytes() != b"0")
        && !matches!(
            *request.method(),
            Method::GET | Method::HEAD | Method::OPTIONS
        );
    if json_route && has_body && !is_json(request.headers()) {
        let given = request
            .headers()
            .get(header::CONTENT_TYPE)
            .map_or("none", |v| v.to_str().unwrap_or("?"))
            .to_owned();
        return Err(ApiError::malformed(vec![Issue::new(
            "headers.content-type",
            "bad_content_type",
            format!("this route takes `application/json` bodies; the request's is {given}"),
        )]));
    }
    Ok(())
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .is_some_and(|v| v == "application/json" || v.ends_with("+json"))
}

/// Refuses a path or query string whose percent-escapes are broken (`%ZZ`, a lone `%`), do not
/// decode to UTF-8, or decode to a control character (a NUL, a newline): 400 at `path` or
/// `query`. Read leniently, such text would reach handlers, logs and the ledger as something
/// else (`PostgreSQL` refuses a NUL outright).
fn clean_uri(request: &Request) -> Result<(), ApiError> {
    let uri = request.uri();
    let mut issues = Vec::new();
    if let Err(why) = check_escaped(uri.path(), false) {
        issues.push(Issue::new("path", why.code(), why.message("path")));
    }
    if let Some(query) = uri.query()
        && let Err(why) = check_escaped(query, true)
    {
        issues.push(Issue::new("query", why.code(), why.message("query string")));
    }
    if issues.is_empty() {
        Ok(())
    } else {
        Err(ApiError::malformed(issues))
    }
}

/// What is wrong with escaped text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unclean {
    /// A `%` not followed by two hex digits.
    BrokenEscape,
    /// Escapes that do not decode to UTF-8.
    NotUtf8,
    /// A control character, escaped or not.
    Control,
}

impl Unclean {
    fn code(self) -> &'static str {
        match self {
            Unclean::BrokenEscape | Unclean::NotUtf8 => "bad_encoding",
            Unclean::Control => "control_character",
        }
    }

    fn message(self, what: &str) -> String {
        match self {
            Unclean::BrokenEscape => {
                format!("the {what} has a `%` not followed by two hex digits")
            }
            Unclean::NotUtf8 => format!("the {what}'s percent-escapes are not UTF-8"),
            Unclean::Control => {
                format!("the {what} holds a control character (a NUL, a newline, ...)")
            }
        }
    }
}

/// Checks percent-escaped text part by part (`&`-separated in a query, `/` in a path).
fn check_escaped(text: &str, query: bool) -> Result<(), Unclean> {
    let separator = if query { '&' } else { '/' };
    for part in text.split(separator) {
        let bytes = part.as_bytes();
        let mut decoded = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                let byte = part
                    .get(i + 1..i + 3)
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                    .ok_or(Unclean::BrokenEscape)?;
                decoded.push(byte);
                i += 3;
            } else {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
        let decoded = std::str::from_utf8(&decoded).map_err(|_| Unclean::NotUtf8)?;
        if decoded.chars().any(char::is_control) {
            return Err(Unclean::Control);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Unclean, check_escaped};

    #[test]
    fn escapes_must_be_whole_utf8_and_free_of_control_characters() {
        for ok in [
            "job=vendor-risk&limit=5",
            "job=%C3%A9t%C3%A9",
            "caller=50%25",
            "",
        ] {
            assert_eq!(check_escaped(ok, true), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("x=%zz", Unclean::BrokenEscape),
            ("x=a%", Unclean::BrokenEscape),
            ("x=%4", Unclean::BrokenEscape),
            ("job=%ff%fe", Unclean::NotUtf8),
            ("a=1&job=%C3", Unclean::NotUtf8),
            ("x=a%00b", Unclean::Control),
            ("x=a%0Ab", Unclean::Control),
        ] {
            assert_eq!(check_escaped(bad, true), Err(why), "{bad}");
        }
        assert_eq!(
            check_escaped("/v1/jobs/po/cases/a%00b", false),
            Err(Unclean::Control)
        );
        assert_eq!(
            check_escaped("/v1/dispatches/a%ZZ", false),
            Err(Unclean::BrokenEscape)
        );
        assert_eq!(check_escaped("/v1/dispatches/k%2F1", false), Ok(()));
    }
}
