//! An exception type written at the start of a line: a traceback's last line, a Java
//! chain's root cause (`Caused by: java.net.ConnectException: ...`), a Ruby or .NET type.
//! Found by a scan of each line rather than a regex, so a one-shot classification does not
//! compile one.

use super::needles::{Needle, Needles};
use super::{Extracted, ExtractorInfo, Source};

pub(super) const INFO: ExtractorInfo = ExtractorInfo {
    name: "exception_name",
    reads: "an exception type at the start of a line (the last one, so a traceback's final line or a Java chain's root cause): Java, Python, .NET, Ruby, JavaScript",
    example: "java.net.SocketTimeoutException: Read timed out",
    finds: "exception \"java.net.SocketTimeoutException\"",
};

/// How a type's last name ends when it names a failure.
const ENDINGS: [&str; 22] = [
    "Exception",
    "Error",
    "Exceeded",
    "Timeout",
    "TimedOut",
    "Failure",
    "Fault",
    "Refused",
    "Interrupt",
    "Interrupted",
    "Failed",
    "Unavailable",
    "Cancelled",
    "Canceled",
    "Conflict",
    "Denied",
    "NotFound",
    "Throttled",
    "Throttling",
    "Busy",
    "Closed",
    "Overloaded",
];

/// The needles that find the endings (one of which a name must hold).
const ENDING_NEEDLES: [Needle; 19] = [
    Needle::ExceptionWord,
    Needle::ErrorWord,
    Needle::Exceeded,
    Needle::Timeout,
    Needle::TimedOut,
    Needle::Failure,
    Needle::Fault,
    Needle::Refused,
    Needle::Interrupt,
    Needle::Failed,
    Needle::Unavailable,
    Needle::Cancel,
    Needle::Conflict,
    Needle::Denied,
    Needle::NotFound,
    Needle::Throttl,
    Needle::Busy,
    Needle::Closed,
    Needle::Overloaded,
];

/// What may stand before a type at the start of a line.
const LEADS: [&str; 7] = [
    "Caused by: ",
    "Uncaught ",
    "Unhandled exception. ",
    "Unhandled exception: ",
    "Unhandled rejection ",
    "raised ",
    "E ",
];

/// Puts the type named at the start of the last line that names one.
pub(super) fn read(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    if found.exception.is_some() || !needles.any(&ENDING_NEEDLES) {
        return;
    }
    if let Some(name) = text.lines().rev().find_map(type_at_start) {
        Extracted::put(&mut found.exception, name.to_owned(), from, INFO.name);
    }
}

/// The exception type a line starts with, if it names one.
fn type_at_start(line: &str) -> Option<&str> {
    let mut line = line.trim_start();
    for lead in LEADS {
        if let Some(rest) = line.strip_prefix(lead) {
            line = rest.trim_start();
            break;
        }
    }
    if let Some(rest) = line.strip_prefix("Exception in thread ") {
        // `Exception in thread "main" java.lang.IllegalStateException: ...`
        line = rest.split_once(' ').map_or("", |(_, type_name)| type_name);
    }
    let end = line
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.' | ':')))
        .map_or(line.len(), |(i, _)| i);
    // A name stops before the `:` that ends it (`Error: ...`), not at `::` (Ruby).
    let whole = &line[..end];
    let (name, rest) = match whole.strip_suffix(':') {
        Some(shorter) if !shorter.ends_with(':') => (shorter, &line[shorter.len()..]),
        _ => (whole, &line[end..]),
    };
    let name = name.trim_end_matches('.');
    let last = name.rsplit(['.', ':']).next().unwrap_or(name);
    let good_follow = rest.is_empty()
        || rest.starts_with(": ")
        || rest.starts_with(":\t")
        || rest.trim() == ":"
        || rest.starts_with('(')
        || rest.starts_with(',');
    let named = last.starts_with(|c: char| c.is_ascii_uppercase())
        && ENDINGS.iter().any(|e| last.ends_with(e))
        && last != "Error";
    (good_follow && named && !name.contains(":::")).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_at_line_starts() {
        assert_eq!(
            type_at_start("java.net.SocketTimeoutException: Read timed out"),
            Some("java.net.SocketTimeoutException")
        );
        assert_eq!(type_at_start("Net::ReadTimeout"), Some("Net::ReadTimeout"));
        assert_eq!(
            type_at_start("Caused by: java.net.ConnectException: Connection refused"),
            Some("java.net.ConnectException")
        );
        assert_eq!(
            type_at_start("Exception in thread \"main\" java.lang.IllegalStateException: x"),
            Some("java.lang.IllegalStateException")
        );
        assert_eq!(
            type_at_start("System.Net.Http.HttpRequestException (0x80004005): No such host"),
            None
        );
        assert_eq!(type_at_start("TypeError: fetch failed"), Some("TypeError"));
        assert_eq!(type_at_start("Error: something broke"), None);
        assert_eq!(type_at_start("the Error of our ways"), None);
        assert_eq!(type_at_start("ValueError"), Some("ValueError"));
    }

    #[test]
    fn every_ending_holds_a_needle() {
        for ending in ENDINGS {
            assert!(
                ENDING_NEEDLES.iter().any(|n| ending.contains(n.phrase())),
                "{ending} holds no needle: a name ending so would be skipped"
            );
        }
    }

    #[test]
    fn the_last_line_that_names_a_type_wins() {
        let mut found = Extracted::default();
        let text = "Traceback (most recent call last):\n  File \"x.py\", line 1\nrequests.exceptions.ReadTimeout: Read timed out.";
        read(text, Needles::of(text), Source::Message, &mut found);
        assert_eq!(
            found.exception.unwrap().value,
            "requests.exceptions.ReadTimeout"
        );
    }
}
