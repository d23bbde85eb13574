//! The phrases the text extractors look for before they run a pattern, found in one pass.
//!
//! Each extractor tries its regex only where a phrase it needs occurs (`An error occurred (`
//! for botocore, `curl: (` for curl). Searching for forty phrases one by one reads the text
//! forty times; one Aho-Corasick pass finds them all, and each extractor asks the result.

use std::sync::LazyLock;

use aho_corasick::{MatchKind, dfa::DFA};

use crate::classify::literal_scan::overlapping;

/// Declares the needles: each variant and the exact (case-sensitive) phrase it stands for.
macro_rules! needles {
    ($($(#[$doc:meta])* $name:ident = $phrase:literal,)*) => {
        /// A phrase an extractor needs before it runs its pattern.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(super) enum Needle {
            $($(#[$doc])* $name,)*
        }

        /// The phrases, in the order of [`Needle`]'s variants.
        const PHRASES: &[&str] = &[$($phrase,)*];
    };
}

needles! {
    /// The AWS SDK for Go v2.
    AwsGoApiError = "api error ",
    /// botocore.
    BotocoreLead = "An error occurred (",
    GoogleApiCore = "google.api_core",
    ColonFour = ": 4",
    ColonFive = ": 5",
    /// requests.
    ClientErrorColon = "Client Error: ",
    ServerErrorColon = "Server Error: ",
    /// httpx.
    ErrorQuote = "error '",
    /// aiohttp.
    MessageEquals = "message=",
    /// urllib.
    HttpError = "HTTP Error",
    /// The `OpenAI` and `Anthropic` SDKs.
    ErrorCodeColon = "Error code: ",
    RpcError = "rpc error",
    StatusCode = "StatusCode",
    StatusRuntimeException = "StatusRuntimeException",
    StatusException = "StatusException",
    StatusParen = "Status(",
    Grpc = "grpc",
    SqlstateUpper = "SQLSTATE",
    SqlstateCamel = "SQLState",
    SqlstateLower = "sqlstate",
    /// The `MySQL` client.
    ErrorSpace = "ERROR ",
    Rrno = "rrno",
    OsError = "os error",
    ContextDeadline = "context deadline exceeded",
    ClientTimeout = "Client.Timeout exceeded",
    ContextCanceled = "context canceled",
    Dial = "dial ",
    Read = "read ",
    Write = "write ",
    Connect = "connect",
    Lookup = "lookup ",
    Accept = "accept ",
    Listen = "listen ",
    ConnectionRefused = ": connection refused",
    ConnectionReset = ": connection reset by peer",
    BrokenPipe = ": broken pipe",
    NoRouteToHost = ": no route to host",
    NetworkUnreachable = ": network is unreachable",
    IoTimeout = ": i/o timeout",
    ConnectionTimedOut = ": connection timed out",
    TooManyOpenFiles = ": too many open files",
    AddressInUse = ": address already in use",
    PermissionDenied = ": permission denied",
    CannotAssignAddress = ": cannot assign requested address",
    NoSuchHost = ": no such host",
    CurlLead = "curl: (",
    ReturnedError = "returned error: ",
    ServerParen = "server (",
    Npm = "npm ",
    // How an exception type's name ends (see `exception_name`).
    ExceptionWord = "Exception",
    ErrorWord = "Error",
    Exceeded = "Exceeded",
    Timeout = "Timeout",
    TimedOut = "TimedOut",
    Failure = "Failure",
    Fault = "Fault",
    Refused = "Refused",
    Interrupt = "Interrupt",
    Failed = "Failed",
    Unavailable = "Unavailable",
    Cancel = "Cancel",
    Conflict = "Conflict",
    Denied = "Denied",
    NotFound = "NotFound",
    Throttl = "Throttl",
    Busy = "Busy",
    Closed = "Closed",
    Overloaded = "Overloaded",
    // A code written as a field in text (see `fields`).
    CodeLower = "code",
    CodeTitle = "Code",
    CodeUpper = "CODE",
    // Counts of sub-operations that failed (see `fields`).
    FailedLower = "failed",
    FailedUpper = "FAILED",
    Ejected = "ejected",
    Rrors = "rrors",
    Rror = "rror",
    Nprocessed = "nprocessed",
    Ailure = "ailure",
}

impl Needle {
    /// The phrase the needle stands for.
    #[cfg(test)]
    pub(super) fn phrase(self) -> &'static str {
        PHRASES[self as usize]
    }
}

/// Which needles occur in one text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Needles(u128);

static AUTOMATON: LazyLock<DFA> = LazyLock::new(|| {
    DFA::builder()
        .match_kind(MatchKind::Standard)
        .prefilter(false)
        .build(PHRASES)
        .expect("the needles always build")
});

impl Needles {
    /// Finds every needle in `text`.
    pub(super) fn of(text: &str) -> Needles {
        let mut bits = 0u128;
        overlapping(&*AUTOMATON, text.as_bytes(), |needle, _| {
            bits |= 1 << needle;
        });
        Needles(bits)
    }

    /// Whether the needle occurs.
    pub(super) fn has(self, needle: Needle) -> bool {
        self.0 & (1 << needle as u32) != 0
    }

    /// Whether any of the needles occurs.
    pub(super) fn any(self, needles: &[Needle]) -> bool {
        needles.iter().any(|&n| self.has(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_needle_fits_the_set_and_is_found_where_it_occurs() {
        assert!(
            PHRASES.len() <= u128::BITS as usize,
            "{} needles: Needles holds {}",
            PHRASES.len(),
            u128::BITS
        );
        let text = "x: connect: connection refused, rpc error here";
        let found = Needles::of(text);
        assert!(found.has(Needle::Connect));
        assert!(found.has(Needle::ConnectionRefused));
        assert!(found.has(Needle::RpcError));
        assert!(!found.has(Needle::Npm));
        assert!(found.any(&[Needle::Npm, Needle::RpcError]));
        assert!(!found.any(&[Needle::Npm, Needle::Grpc]));
    }

    /// A needle inside another (`: connection reset by peer` holds `connect`) is found too.
    #[test]
    fn overlapping_needles_are_all_found() {
        let found = Needles::of("read tcp: connection reset by peer");
        assert!(found.has(Needle::Read));
        assert!(found.has(Needle::Connect));
        assert!(found.has(Needle::ConnectionReset));
    }
}
