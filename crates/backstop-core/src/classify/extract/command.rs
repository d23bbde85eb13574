//! Command output: what a few programs print that carries a code the rules know.
//!
//! Most command output is plain words (git, pip, cargo, docker), which the message rules
//! read as they are. These programs print a code worth lifting into a field.

use std::sync::LazyLock;

use regex::Regex;

use super::needles::{Needle, Needles};
use super::{Extracted, ExtractorInfo, Source};

pub(super) const INFO_CURL: ExtractorInfo = ExtractorInfo {
    name: "curl",
    reads: "curl's error line: `curl: (N)` is its exit status (and the tool is curl); `The requested URL returned error: NNN` is the HTTP status",
    example: "curl: (28) Operation timed out after 5001 milliseconds with 0 bytes received",
    finds: "tool \"curl\", exit_code 28",
};

pub(super) const INFO_KUBECTL: ExtractorInfo = ExtractorInfo {
    name: "kubectl",
    reads: "the Kubernetes API's reason in kubectl's output: `Error from server (Reason)`, `You must be logged in to the server (Unauthorized)`",
    example: "Error from server (NotFound): pods \"web-0\" not found",
    finds: "error_code \"NotFound\"",
};

pub(super) const INFO_NPM: ExtractorInfo = ExtractorInfo {
    name: "npm",
    reads: "npm's error code: `npm ERR! code E404` (an HTTP status from the registry, E4xx/E5xx) or a named code (ETARGET, ERESOLVE, EINTEGRITY, an errno)",
    example: "npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/nope - Not found",
    finds: "http_status 404",
};

static CURL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^curl: \(([0-9]{1,2})\)").expect("extractor patterns are tested")
});
static CURL_STATUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"The requested URL returned error: ([1-5][0-9][0-9])")
        .expect("extractor patterns are tested")
});
static KUBECTL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:Error from server|logged in to the server) \(([A-Za-z]+)\)")
        .expect("extractor patterns are tested")
});
static NPM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^npm (?:ERR!|error) code (E[A-Z0-9_]+)")
        .expect("extractor patterns are tested")
});

/// Reads every command shape in one text.
pub(super) fn read(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    curl(text, needles, from, found);
    kubectl(text, needles, from, found);
    npm(text, needles, from, found);
}

fn curl(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    let by = INFO_CURL.name;
    if needles.has(Needle::CurlLead)
        && let Some(c) = CURL.captures(text)
        && let Ok(code) = c[1].parse()
    {
        Extracted::put(&mut found.exit_code, code, from, by);
        Extracted::put(&mut found.tool, "curl".to_owned(), from, by);
    }
    if needles.has(Needle::ReturnedError)
        && let Some(c) = CURL_STATUS.captures(text)
        && let Ok(status) = c[1].parse()
    {
        Extracted::put_weak(&mut found.http_status, status, from, by);
    }
}

fn kubectl(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    if needles.has(Needle::ServerParen)
        && let Some(c) = KUBECTL.captures(text)
    {
        Extracted::put(
            &mut found.error_code,
            c[1].to_owned(),
            from,
            INFO_KUBECTL.name,
        );
    }
}

fn npm(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    let by = INFO_NPM.name;
    if !needles.has(Needle::Npm) {
        return;
    }
    let Some(c) = NPM.captures(text) else {
        return;
    };
    let code = &c[1];
    let status = code[1..]
        .parse::<u16>()
        .ok()
        .filter(|s| (400..=599).contains(s));
    match status {
        // npm's E404 is a code, not wording: it keeps the strength of a status.
        Some(status) => Extracted::put(&mut found.http_status, status, from, by),
        None if is_errno(code) => Extracted::put_weak(&mut found.errno, code.to_owned(), from, by),
        None => Extracted::put(&mut found.error_code, code.to_owned(), from, by),
    }
}

/// The errno names npm passes through from the system.
fn is_errno(code: &str) -> bool {
    [
        "EACCES",
        "EPERM",
        "ENOENT",
        "ENOSPC",
        "EEXIST",
        "ENOTEMPTY",
        "ETIMEDOUT",
        "ECONNRESET",
        "ECONNREFUSED",
        "EPIPE",
        "EBUSY",
        "EMFILE",
        "EHOSTUNREACH",
        "ENETUNREACH",
        "EROFS",
    ]
    .contains(&code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_message(text: &str) -> Extracted {
        let mut found = Extracted::default();
        read(text, Needles::of(text), Source::Message, &mut found);
        found
    }

    #[test]
    fn curl_exit_status_and_http_status() {
        let found = read_message("curl: (28) Operation timed out after 5001 milliseconds");
        assert_eq!(found.exit_code.map(|f| f.value), Some(28));
        assert_eq!(found.tool.map(|f| f.value).as_deref(), Some("curl"));
        let found = read_message("curl: (22) The requested URL returned error: 503");
        assert_eq!(found.http_status.map(|f| f.value), Some(503));
    }

    #[test]
    fn kubectl_reasons() {
        let found = read_message(
            "Error from server (Forbidden): pods is forbidden: User \"x\" cannot list",
        );
        assert_eq!(found.error_code.unwrap().value, "Forbidden");
        let found = read_message("error: You must be logged in to the server (Unauthorized)");
        assert_eq!(found.error_code.unwrap().value, "Unauthorized");
    }

    #[test]
    fn npm_codes() {
        let found = read_message("npm ERR! code E404\nnpm ERR! 404 Not Found");
        assert_eq!(found.http_status.map(|f| f.value), Some(404));
        let found = read_message("npm error code ETARGET\nnpm error notarget No matching version");
        assert_eq!(found.error_code.unwrap().value, "ETARGET");
        let found = read_message("npm ERR! code EACCES");
        assert_eq!(found.errno.unwrap().value, "EACCES");
    }
}
