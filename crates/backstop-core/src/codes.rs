//! Name tables for the numeric codes a report may carry: gRPC status codes and POSIX signals.
//!
//! Both are accepted as a name or a number and kept as one canonical form, so `UNAVAILABLE`,
//! `Unavailable`, `StatusCode.UNAVAILABLE` and `14` are the same code to every rule.

/// gRPC status codes by number (grpc `doc/statuscodes.md`).
const GRPC_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// Linux signal names by number, 1 to 31; higher numbers are real-time signals.
const SIGNAL_NAMES: [&str; 31] = [
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

/// Every canonical gRPC code name, by number.
pub fn grpc_names() -> &'static [&'static str] {
    &GRPC_NAMES
}

/// The highest signal number accepted.
pub const MAX_SIGNAL: u8 = 64;

/// The canonical gRPC code name for a number, if it is one.
pub fn grpc_name(number: u64) -> Option<&'static str> {
    usize::try_from(number)
        .ok()
        .and_then(|n| GRPC_NAMES.get(n))
        .copied()
}

/// The gRPC code a name spells, in any of the usual forms: `UNAVAILABLE`, `Unavailable`,
/// `DeadlineExceeded`, `StatusCode.DEADLINE_EXCEEDED`, `codes.Unavailable`.
pub fn grpc_from_name(text: &str) -> Option<&'static str> {
    let last = text.rsplit('.').next().unwrap_or(text);
    let squashed: String = last
        .chars()
        .filter(|c| *c != '_')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    GRPC_NAMES
        .iter()
        .copied()
        .find(|name| name.replace('_', "") == squashed)
}

/// The canonical name of a signal number (`SIGKILL`, or `SIG40` for a real-time one).
pub fn signal_name(number: u8) -> Option<String> {
    match number {
        0 => None,
        n if usize::from(n) <= SIGNAL_NAMES.len() => {
            Some(SIGNAL_NAMES[usize::from(n) - 1].to_owned())
        }
        n if n <= MAX_SIGNAL => Some(format!("SIG{n}")),
        _ => None,
    }
}

/// The canonical name of a signal given by name, with or without `SIG` (`KILL`, `sigkill`).
pub fn signal_from_name(text: &str) -> Option<String> {
    let upper = text.trim().to_ascii_uppercase();
    let name = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    if SIGNAL_NAMES.contains(&name.as_str()) {
        return Some(name);
    }
    let number: u8 = name.strip_prefix("SIG")?.parse().ok()?;
    signal_name(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_codes_accept_every_spelling() {
        assert_eq!(grpc_name(14), Some("UNAVAILABLE"));
        assert_eq!(grpc_name(17), None);
        for spelling in [
            "UNAVAILABLE",
            "unavailable",
            "Unavailable",
            "StatusCode.UNAVAILABLE",
        ] {
            assert_eq!(grpc_from_name(spelling), Some("UNAVAILABLE"), "{spelling}");
        }
        assert_eq!(
            grpc_from_name("DeadlineExceeded"),
            Some("DEADLINE_EXCEEDED")
        );
        assert_eq!(
            grpc_from_name("codes.ResourceExhausted"),
            Some("RESOURCE_EXHAUSTED")
        );
        assert_eq!(grpc_from_name("BUSY"), None);
    }

    #[test]
    fn signals_accept_names_and_numbers() {
        assert_eq!(signal_name(9).as_deref(), Some("SIGKILL"));
        assert_eq!(signal_name(31).as_deref(), Some("SIGSYS"));
        assert_eq!(signal_name(40).as_deref(), Some("SIG40"));
        assert_eq!(signal_name(0), None);
        assert_eq!(signal_name(65), None);
        assert_eq!(signal_from_name("kill").as_deref(), Some("SIGKILL"));
        assert_eq!(signal_from_name("SIGSEGV").as_deref(), Some("SIGSEGV"));
        assert_eq!(signal_from_name("SIGNOPE"), None);
    }
}
