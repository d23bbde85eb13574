//! SDK exception strings: the shapes client libraries print when a call fails.
//!
//! Each pattern is compiled the first time a text could hold it (the phrases it needs are
//! looked for first, see `needles`), so a report without such text costs nothing here.

use std::sync::LazyLock;

use regex::Regex;

use super::needles::{Needle, Needles};
use super::{Extracted, ExtractorInfo, Source};
use crate::report::GrpcCode;

pub(super) const INFO_BOTOCORE: ExtractorInfo = ExtractorInfo {
    name: "botocore",
    reads: "botocore's ClientError text (boto3, the AWS CLI): the code in parentheses; the AWS SDK for Go v2's `api error CODE:`",
    example: "An error occurred (ThrottlingException) when calling the Query operation: Rate exceeded",
    finds: "error_code \"ThrottlingException\"",
};

pub(super) const INFO_GOOGLE: ExtractorInfo = ExtractorInfo {
    name: "google_api_core",
    reads: "google-api-core exceptions: the exception name (google.api_core.exceptions.*) and the status a message starts with; also the status first in the OpenAI and Anthropic Node SDKs' messages",
    example: "google.api_core.exceptions.ServiceUnavailable: 503 The service is currently unavailable.",
    finds: "exception \"google.api_core.exceptions.ServiceUnavailable\", http_status 503",
};

pub(super) const INFO_PYTHON_HTTP: ExtractorInfo = ExtractorInfo {
    name: "python_http",
    reads: "the status in Python HTTP clients' errors: requests (`404 Client Error`), httpx (`Client error '404 Not Found'`), aiohttp (`409, message='Conflict'`), urllib (`HTTP Error 429`), the OpenAI and Anthropic SDKs (`Error code: 429 - {...}`)",
    example: "404 Client Error: Not Found for url: https://api.example.com/v1/items/7",
    finds: "http_status 404",
};

pub(super) const INFO_GRPC: ExtractorInfo = ExtractorInfo {
    name: "grpc_text",
    reads: "a gRPC status in text: grpc-go (`rpc error: code = Unavailable`), Python (`StatusCode.UNAVAILABLE`), Java (`StatusRuntimeException: UNAVAILABLE`)",
    example: "rpc error: code = Unavailable desc = connection error",
    finds: "grpc_code UNAVAILABLE",
};

pub(super) const INFO_SQLSTATE: ExtractorInfo = ExtractorInfo {
    name: "sqlstate_text",
    reads: "a SQLSTATE in text: PDO (`SQLSTATE[40001]`), JDBC (`SQLState: 40001`), pgx (`(SQLSTATE 40001)`), the MySQL client (`ERROR 1213 (40001)`)",
    example: "ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction",
    finds: "sqlstate 40001",
};

pub(super) const INFO_ERRNO: ExtractorInfo = ExtractorInfo {
    name: "errno_text",
    reads: "an errno in text: a name (`connect ECONNREFUSED`, Ruby's `Errno::EPIPE`), Python's `[Errno 111]`, Rust's `(os error 104)`; Node's DNS codes (ENOTFOUND, EAI_AGAIN) as the error code",
    example: "connect ECONNREFUSED 127.0.0.1:5432",
    finds: "errno \"ECONNREFUSED\"",
};

pub(super) const INFO_GO: ExtractorInfo = ExtractorInfo {
    name: "go_net",
    reads: "Go's network and context errors: `connect: connection refused` and the other socket errors as errno, `i/o timeout` as ETIMEDOUT, `lookup HOST: no such host` as ENOTFOUND, `context deadline exceeded` and `context canceled` as the exception",
    example: "dial tcp 10.0.0.5:5432: connect: connection refused",
    finds: "errno \"ECONNREFUSED\"",
};

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("extractor patterns are tested")
}

static BOTOCORE: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"An error occurred \(([A-Za-z0-9_.:#-]+)\)(?: \(reached max retries: [0-9]+\))? when calling the [A-Za-z0-9_]+ operation",
    )
});
static AWS_GO: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?-u:\b)api error ([A-Za-z][A-Za-z0-9_.]*): "));
static GOOGLE_EXCEPTION: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(google\.api_core\.exceptions\.[A-Za-z]+)"));
static STATUS_FIRST: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^[ \t\r\n]*(?:(?:[A-Za-z_][[A-Za-z0-9_].]*\.)?[A-Z][A-Za-z0-9_]*(?:Error|Exception)?: )?([45][0-9][0-9]) [A-Za-z]",
    )
});
static PYTHON_HTTP: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?:(?-u:\b)([1-5][0-9][0-9]) (?:Client|Server) Error: |(?:Client|Server) error '([1-5][0-9][0-9]) |(?:^|ClientResponseError: |\()([1-5][0-9][0-9]), message=|HTTP Error ([1-5][0-9][0-9]):|Error code: ([1-5][0-9][0-9]) - )",
    )
});
static GRPC: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?:rpc error: code = ([A-Za-z]+)|StatusCode\.([A-Z_]+)|StatusRuntimeException: ([A-Z_]+)|StatusException: ([A-Z_]+)|grpc[_-]status[:= ]+([0-9]{1,2})(?-u:\b)|Status\(StatusCode=.?([A-Za-z]+))",
    )
});
static SQLSTATE: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i:sqlstate)[ \t\r\n]*(?:\[|:|=|is)?[ \t\r\n]*([0-9A-Z]{5})(?-u:\b)|(?-u:\b)ERROR [0-9]{4} \(([0-9A-Z]{5})\)",
    )
});
static ERRNO_NAME: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?-u:\b)(E(?:CONNREFUSED|CONNRESET|CONNABORTED|TIMEDOUT|PIPE|HOSTUNREACH|HOSTDOWN|NETUNREACH|NETDOWN|NETRESET|ADDRINUSE|ADDRNOTAVAIL|ACCES|PERM|NOENT|NOSPC|EXIST|NOTEMPTY|NOTDIR|ISDIR|ROFS|DQUOT|MFILE|NFILE|NOMEM|AGAIN|WOULDBLOCK|BUSY|INTR|IO|INVAL|NAMETOOLONG|PROTO|SHUTDOWN|NOBUFS|NOTCONN|ALREADY|INPROGRESS|XDEV|FBIG|TXTBSY|LOOP|NOEXEC|CANCELED|NOTSUP|OPNOTSUPP|NOSYS|MSGSIZE|DEADLK|STALE|REMOTEIO|NOTFOUND|AI_AGAIN|AI_NONAME|AI_NODATA|AI_FAIL|SOCKETTIMEDOUT))(?-u:\b)",
    )
});
static ERRNO_NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"\[Errno (-?[0-9]{1,3})\]|\(os error ([0-9]{1,3})\)|(?-u:\b)errno[ :=]+([0-9]{1,3})(?-u:\b)",
    )
});

/// Reads every SDK shape in one text.
pub(super) fn read(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    botocore(text, needles, from, found);
    google(text, needles, from, found);
    python_http(text, needles, from, found);
    super::status_text::read(text, from, found);
    grpc(text, needles, from, found);
    sqlstate(text, needles, from, found);
    errno(text, needles, from, found);
    go_net(needles, from, found);
    super::exception_name::read(text, needles, from, found);
}

fn first_group<'t>(captures: &regex::Captures<'t>) -> Option<&'t str> {
    captures.iter().skip(1).flatten().next().map(|m| m.as_str())
}

fn botocore(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    if needles.has(Needle::AwsGoApiError)
        && let Some(c) = AWS_GO.captures(text)
    {
        Extracted::put(
            &mut found.error_code,
            c[1].to_owned(),
            from,
            INFO_BOTOCORE.name,
        );
    }
    if !needles.has(Needle::BotocoreLead) {
        return;
    }
    if let Some(c) = BOTOCORE.captures(text) {
        Extracted::put(
            &mut found.error_code,
            c[1].to_owned(),
            from,
            INFO_BOTOCORE.name,
        );
    }
}

fn google(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    let by = INFO_GOOGLE.name;
    if needles.has(Needle::GoogleApiCore)
        && let Some(c) = GOOGLE_EXCEPTION.captures(text)
    {
        Extracted::put(&mut found.exception, c[1].to_owned(), from, by);
    }
    let maybe = text.trim_start().starts_with(['4', '5'])
        || needles.any(&[Needle::ColonFour, Needle::ColonFive]);
    if maybe
        && let Some(c) = STATUS_FIRST.captures(text)
        && let Ok(status) = c[1].parse()
    {
        Extracted::put_weak(&mut found.http_status, status, from, by);
    }
}

fn python_http(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    let maybe = [
        Needle::ClientErrorColon,
        Needle::ServerErrorColon,
        Needle::ErrorQuote,
        Needle::MessageEquals,
        Needle::HttpError,
        Needle::ErrorCodeColon,
    ];
    if !needles.any(&maybe) {
        return;
    }
    if let Some(c) = PYTHON_HTTP.captures(text)
        && let Some(status) = first_group(&c).and_then(|s| s.parse().ok())
    {
        Extracted::put_weak(&mut found.http_status, status, from, INFO_PYTHON_HTTP.name);
    }
}

fn grpc(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    let maybe = [
        Needle::RpcError,
        Needle::StatusCode,
        Needle::StatusRuntimeException,
        Needle::StatusException,
        Needle::StatusParen,
        Needle::Grpc,
    ];
    if !needles.any(&maybe) {
        return;
    }
    if let Some(c) = GRPC.captures(text)
        && let Some(code) = first_group(&c).and_then(GrpcCode::parse)
        && code.name() != "OK"
    {
        Extracted::put(&mut found.grpc_code, code, from, INFO_GRPC.name);
    }
}

fn sqlstate(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    let maybe = [
        Needle::SqlstateUpper,
        Needle::SqlstateCamel,
        Needle::SqlstateLower,
        Needle::ErrorSpace,
    ];
    if !needles.any(&maybe) {
        return;
    }
    if let Some(c) = SQLSTATE.captures(text)
        && let Some(state) = first_group(&c)
        && state.bytes().any(|b| b.is_ascii_digit())
    {
        Extracted::put(
            &mut found.sqlstate,
            state.to_owned(),
            from,
            INFO_SQLSTATE.name,
        );
    }
}

fn errno(text: &str, needles: Needles, from: Source, found: &mut Extracted) {
    let by = INFO_ERRNO.name;
    if has_errno_shape(text)
        && let Some(c) = ERRNO_NAME.captures(text)
    {
        let name = &c[1];
        match name {
            "ENOTFOUND" | "EAI_AGAIN" | "EAI_NONAME" | "EAI_NODATA" | "EAI_FAIL" => {
                Extracted::put(&mut found.error_code, name.to_owned(), from, by);
            }
            "ESOCKETTIMEDOUT" => {
                Extracted::put_weak(&mut found.errno, "ETIMEDOUT".to_owned(), from, by);
            }
            _ => Extracted::put_weak(&mut found.errno, name.to_owned(), from, by),
        }
        return;
    }
    if needles.any(&[Needle::Rrno, Needle::OsError])
        && let Some(c) = ERRNO_NUMBER.captures(text)
        && let Some(number) = first_group(&c).and_then(|n| n.parse::<i32>().ok())
    {
        match errno_name(number) {
            Some(name) if name.starts_with("EAI_") => {
                Extracted::put(&mut found.error_code, name.to_owned(), from, by);
            }
            Some(name) => Extracted::put_weak(&mut found.errno, name.to_owned(), from, by),
            None => {}
        }
    }
}

/// Whether the text has an `E` followed by three capitals (`ECONNRESET`, `EAI_AGAIN`):
/// without one, it names no errno.
fn has_errno_shape(text: &str) -> bool {
    text.as_bytes()
        .windows(4)
        .any(|w| w[0] == b'E' && w[1..].iter().all(|b| b.is_ascii_uppercase() || *b == b'_'))
}

/// Linux errno numbers (and glibc's negative `getaddrinfo` codes, as Python prints them).
fn errno_name(number: i32) -> Option<&'static str> {
    Some(match number {
        1 => "EPERM",
        2 => "ENOENT",
        4 => "EINTR",
        5 => "EIO",
        9 => "EBADF",
        11 => "EAGAIN",
        12 => "ENOMEM",
        13 => "EACCES",
        16 => "EBUSY",
        17 => "EEXIST",
        20 => "ENOTDIR",
        21 => "EISDIR",
        22 => "EINVAL",
        23 => "ENFILE",
        24 => "EMFILE",
        27 => "EFBIG",
        28 => "ENOSPC",
        30 => "EROFS",
        32 => "EPIPE",
        36 => "ENAMETOOLONG",
        39 => "ENOTEMPTY",
        71 => "EPROTO",
        90 => "EMSGSIZE",
        95 => "EOPNOTSUPP",
        98 => "EADDRINUSE",
        99 => "EADDRNOTAVAIL",
        100 => "ENETDOWN",
        101 => "ENETUNREACH",
        103 => "ECONNABORTED",
        104 => "ECONNRESET",
        105 => "ENOBUFS",
        107 => "ENOTCONN",
        110 => "ETIMEDOUT",
        111 => "ECONNREFUSED",
        112 => "EHOSTDOWN",
        113 => "EHOSTUNREACH",
        122 => "EDQUOT",
        125 => "ECANCELED",
        -2 => "EAI_NONAME",
        -3 => "EAI_AGAIN",
        -4 => "EAI_FAIL",
        -5 => "EAI_NODATA",
        _ => return None,
    })
}

fn go_net(needles: Needles, from: Source, found: &mut Extracted) {
    let by = INFO_GO.name;
    if needles.any(&[Needle::ContextDeadline, Needle::ClientTimeout]) {
        Extracted::put_weak(
            &mut found.exception,
            "context.DeadlineExceeded".to_owned(),
            from,
            by,
        );
    } else if needles.has(Needle::ContextCanceled) {
        Extracted::put_weak(
            &mut found.exception,
            "context.Canceled".to_owned(),
            from,
            by,
        );
    }
    // Go writes `op net addr: <strerror>`: the phrase after ": ", with an operation before.
    let ops = [
        Needle::Dial,
        Needle::Read,
        Needle::Write,
        Needle::Connect,
        Needle::Lookup,
        Needle::Accept,
        Needle::Listen,
    ];
    if !needles.any(&ops) {
        return;
    }
    for (phrase, errno) in GO_SOCKET_ERRORS {
        if needles.has(phrase) {
            match errno {
                Some(errno) => Extracted::put_weak(&mut found.errno, errno.to_owned(), from, by),
                None => Extracted::put(&mut found.error_code, "ENOTFOUND".to_owned(), from, by),
            }
            return;
        }
    }
}

/// Go's socket error phrases and the errno each is (`None`: a name that does not resolve).
const GO_SOCKET_ERRORS: [(Needle, Option<&str>); 12] = [
    (Needle::ConnectionRefused, Some("ECONNREFUSED")),
    (Needle::ConnectionReset, Some("ECONNRESET")),
    (Needle::BrokenPipe, Some("EPIPE")),
    (Needle::NoRouteToHost, Some("EHOSTUNREACH")),
    (Needle::NetworkUnreachable, Some("ENETUNREACH")),
    (Needle::IoTimeout, Some("ETIMEDOUT")),
    (Needle::ConnectionTimedOut, Some("ETIMEDOUT")),
    (Needle::TooManyOpenFiles, Some("EMFILE")),
    (Needle::AddressInUse, Some("EADDRINUSE")),
    (Needle::PermissionDenied, Some("EACCES")),
    (Needle::CannotAssignAddress, Some("EADDRNOTAVAIL")),
    (Needle::NoSuchHost, None),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn read_message(text: &str) -> Extracted {
        let mut found = Extracted::default();
        read(text, Needles::of(text), Source::Message, &mut found);
        found
    }

    #[test]
    fn botocore_codes() {
        let found = read_message(
            "An error occurred (ThrottlingException) when calling the Query operation: Rate exceeded",
        );
        let code = found.error_code.unwrap();
        assert_eq!(
            (code.value.as_str(), code.by),
            ("ThrottlingException", "botocore")
        );
        let go = read_message(
            "operation error EC2: RunInstances, https response error StatusCode: 400, RequestID: x, api error VcpuLimitExceeded: You have requested more vCPU capacity",
        );
        assert_eq!(go.error_code.unwrap().value, "VcpuLimitExceeded");
        let retried = read_message(
            "An error occurred (SlowDown) (reached max retries: 4) when calling the PutObject operation: Please reduce your request rate.",
        );
        assert_eq!(retried.error_code.unwrap().value, "SlowDown");
    }

    #[test]
    fn statuses_in_client_messages() {
        let status = |text: &str| read_message(text).http_status.map(|f| f.value);
        assert_eq!(
            status("503 The service is currently unavailable."),
            Some(503)
        );
        assert_eq!(
            status("google.api_core.exceptions.TooManyRequests: 429 Quota exceeded"),
            Some(429)
        );
        assert_eq!(
            status("404 Client Error: Not Found for url: https://x.test/a"),
            Some(404)
        );
        assert_eq!(
            status("Client error '404 Not Found' for url 'https://x.test/a'"),
            Some(404)
        );
        assert_eq!(
            status("ClientResponseError: 409, message='Conflict', url='https://x.test'"),
            Some(409)
        );
        assert_eq!(
            status("Error code: 429 - {'error': {'message': 'slow down'}}"),
            Some(429)
        );
        assert_eq!(status("HTTP Error 429: Too Many Requests"), Some(429));
        assert_eq!(
            status("Response status code does not indicate success: 503 (Service Unavailable)."),
            Some(503)
        );
        assert_eq!(
            status("AxiosError: Request failed with status code 502"),
            Some(502)
        );
        assert_eq!(status("HTTP/1.1 504 Gateway Time-out"), Some(504));
        // A number beside the wrong phrase, or a small number, is not a status.
        assert_eq!(status("found 404 Service Unavailable pages"), None);
        assert_eq!(status("processed 429 records"), None);
    }

    #[test]
    fn grpc_sqlstate_and_errno_in_text() {
        let found = read_message("rpc error: code = Unavailable desc = transport is closing");
        assert_eq!(found.grpc_code.unwrap().value.name(), "UNAVAILABLE");
        let found =
            read_message("grpc._channel._InactiveRpcError: status = StatusCode.DEADLINE_EXCEEDED");
        assert_eq!(found.grpc_code.unwrap().value.name(), "DEADLINE_EXCEEDED");
        let found =
            read_message("SQLSTATE[23000]: Integrity constraint violation: 1062 Duplicate entry");
        assert_eq!(found.sqlstate.unwrap().value, "23000");
        let found = read_message("ERROR 1213 (40001): Deadlock found when trying to get lock");
        assert_eq!(found.sqlstate.unwrap().value, "40001");
        let found = read_message("connect ECONNREFUSED 127.0.0.1:5432");
        assert_eq!(found.errno.unwrap().value, "ECONNREFUSED");
        let found = read_message("getaddrinfo EAI_AGAIN api.example.com");
        assert_eq!(found.error_code.unwrap().value, "EAI_AGAIN");
        let found = read_message("[Errno 111] Connection refused");
        assert_eq!(found.errno.unwrap().value, "ECONNREFUSED");
        let found = read_message("Connection reset by peer (os error 104)");
        assert_eq!(found.errno.unwrap().value, "ECONNRESET");
    }

    #[test]
    fn go_errors() {
        let found = read_message("dial tcp 10.0.0.5:5432: connect: connection refused");
        assert_eq!(found.errno.unwrap().value, "ECONNREFUSED");
        let found = read_message("read tcp 10.0.0.2:5000->10.0.0.5:443: i/o timeout");
        assert_eq!(found.errno.unwrap().value, "ETIMEDOUT");
        let found = read_message("Get \"https://x.test\": context deadline exceeded");
        assert_eq!(found.exception.unwrap().value, "context.DeadlineExceeded");
        let found = read_message("dial tcp: lookup nope.invalid: no such host");
        assert_eq!(found.error_code.unwrap().value, "ENOTFOUND");
    }

    #[test]
    fn exception_names_at_line_starts() {
        let name = |text: &str| read_message(text).exception.map(|f| f.value);
        assert_eq!(
            name("java.net.SocketTimeoutException: Read timed out").as_deref(),
            Some("java.net.SocketTimeoutException")
        );
        assert_eq!(
            name("Traceback (most recent call last):\n  File \"x.py\", line 1\nrequests.exceptions.ReadTimeout: HTTPSConnectionPool(host='x', port=443): Read timed out.").as_deref(),
            Some("requests.exceptions.ReadTimeout")
        );
        assert_eq!(
            name("org.x.ApiException: failed\n\tat org.x.Y.z(Y.java:1)\nCaused by: java.net.ConnectException: Connection refused").as_deref(),
            Some("java.net.ConnectException")
        );
        assert_eq!(
            name("Net::ReadTimeout").as_deref(),
            Some("Net::ReadTimeout")
        );
        assert_eq!(name("Error: something broke"), None);
        assert_eq!(name("the Error of our ways"), None);
    }
}
