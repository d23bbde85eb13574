//! SDK exception strings: the shapes client libraries print when a call fails.
//!
//! Each pattern is compiled the first time a text could hold it (a cheap substring check
//! comes first), so a report without such text costs nothing here.

use std::sync::LazyLock;

use regex::Regex;

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

pub(super) const INFO_STATUS_TEXT: ExtractorInfo = ExtractorInfo {
    name: "http_status_text",
    reads: "an HTTP status written in text by any client: a status with its reason phrase (`503 Service Unavailable`), `status code 502`, `HTTP/1.1 504`, `HTTP 429`, `returned error: 404` (400-599 only)",
    example: "Response status code does not indicate success: 429 (Too Many Requests).",
    finds: "http_status 429",
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

pub(super) const INFO_EXCEPTION: ExtractorInfo = ExtractorInfo {
    name: "exception_name",
    reads: "an exception type at the start of a line (the last one, so a traceback's final line or a Java chain's root cause): Java, Python, .NET, Ruby, JavaScript",
    example: "java.net.SocketTimeoutException: Read timed out",
    finds: "exception \"java.net.SocketTimeoutException\"",
};

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("extractor patterns are tested")
}

static BOTOCORE: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"An error occurred \(([A-Za-z0-9_.:#-]+)\)(?: \(reached max retries: \d+\))? when calling the \w+ operation",
    )
});
static AWS_GO: LazyLock<Regex> = LazyLock::new(|| regex(r"\bapi error ([A-Za-z][A-Za-z0-9_.]*): "));
static GOOGLE_EXCEPTION: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(google\.api_core\.exceptions\.[A-Za-z]+)"));
static STATUS_FIRST: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"^\s*(?:(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)?: )?([45]\d\d) [A-Za-z]")
});
static PYTHON_HTTP: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?:\b([1-5]\d\d) (?:Client|Server) Error: |(?:Client|Server) error '([1-5]\d\d) |(?:^|ClientResponseError: |\()([1-5]\d\d), message=|HTTP Error ([1-5]\d\d):|Error code: ([1-5]\d\d) - )",
    )
});
static STATUS_PHRASE: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)\b([1-5]\d\d)\)?[ :-]{0,3}\(?(bad request|unauthorized|payment required|forbidden|not found|method not allowed|not acceptable|proxy authentication required|request time-?out|conflict|gone|length required|precondition failed|payload too large|request entity too large|uri too long|unsupported media type|range not satisfiable|expectation failed|misdirected request|unprocessable (?:entity|content)|locked|failed dependency|too early|upgrade required|precondition required|too many requests|request header fields too large|unavailable for legal reasons|internal server error|not implemented|bad gateway|service unavailable|gateway time-?out|http version not supported|insufficient storage|loop detected|network authentication required|site is overloaded|too many connections)\b",
    )
});
static STATUS_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)(?:status(?: code)?[ :=]+|HTTP/\d(?:\.\d)? |\bHTTP (?:status |error |code )?|returned (?:HTTP |status |error:? |a )?|status code of |failed with status code |\bcode[ :=]+|response(?: status)?(?: code)?[ :=]+)([45]\d\d)\b",
    )
});
static GRPC: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?:rpc error: code = ([A-Za-z]+)|StatusCode\.([A-Z_]+)|StatusRuntimeException: ([A-Z_]+)|StatusException: ([A-Z_]+)|grpc[_-]status[:= ]+(\d{1,2})\b|Status\(StatusCode=.?([A-Za-z]+))",
    )
});
static SQLSTATE: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i:sqlstate)\s*(?:\[|:|=|is)?\s*([0-9A-Z]{5})\b|\bERROR \d{4} \(([0-9A-Z]{5})\)")
});
static ERRNO_NAME: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"\b(E(?:CONNREFUSED|CONNRESET|CONNABORTED|TIMEDOUT|PIPE|HOSTUNREACH|HOSTDOWN|NETUNREACH|NETDOWN|NETRESET|ADDRINUSE|ADDRNOTAVAIL|ACCES|PERM|NOENT|NOSPC|EXIST|NOTEMPTY|NOTDIR|ISDIR|ROFS|DQUOT|MFILE|NFILE|NOMEM|AGAIN|WOULDBLOCK|BUSY|INTR|IO|INVAL|NAMETOOLONG|PROTO|SHUTDOWN|NOBUFS|NOTCONN|ALREADY|INPROGRESS|XDEV|FBIG|TXTBSY|LOOP|NOEXEC|CANCELED|NOTSUP|OPNOTSUPP|NOSYS|MSGSIZE|DEADLK|STALE|REMOTEIO|NOTFOUND|AI_AGAIN|AI_NONAME|AI_NODATA|AI_FAIL|SOCKETTIMEDOUT))\b",
    )
});
static ERRNO_NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"\[Errno (-?\d{1,3})\]|\(os error (\d{1,3})\)|\berrno[ :=]+(\d{1,3})\b")
});
static GO_SOCKET: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?:dial|read|write|connect|accept|lookup|listen)(?: (?:tcp|udp|unix)[46]?)?[^\n]{0,120}?: (connection refused|connection reset by peer|broken pipe|no route to host|network is unreachable|i/o timeout|no such host|connection timed out|too many open files|address already in use|permission denied|cannot assign requested address)",
    )
});
static EXCEPTION_LINE: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?m)^[ \t]*(?:Caused by: |Exception in thread .{1,80}? |Uncaught |Unhandled (?:exception|rejection)[.:]? |raised |E[ \t]+|\[[^\]\n]{1,40}\] )?((?:[A-Za-z_][\w$]*(?:\.|::))*[A-Z][\w$]*(?:Exception|Error|Exceeded|Timeout|TimedOut|Failure|Fault|Refused|Interrupt|Interrupted|Failed|Unavailable|Cancelled|Canceled|Conflict|Denied|NotFound|Throttled|Throttling|Busy|Closed|Reset|Overloaded))(?::[ \t]|:?[ \t]*$|\(|,)",
    )
});

/// Reads every SDK shape in one text.
pub(super) fn read(text: &str, from: Source, found: &mut Extracted) {
    botocore(text, from, found);
    google(text, from, found);
    python_http(text, from, found);
    status_text(text, from, found);
    grpc(text, from, found);
    sqlstate(text, from, found);
    errno(text, from, found);
    go_net(text, from, found);
    exception(text, from, found);
}

fn first_group<'t>(captures: &regex::Captures<'t>) -> Option<&'t str> {
    captures.iter().skip(1).flatten().next().map(|m| m.as_str())
}

fn botocore(text: &str, from: Source, found: &mut Extracted) {
    if text.contains("api error ")
        && let Some(c) = AWS_GO.captures(text)
    {
        Extracted::put(
            &mut found.error_code,
            c[1].to_owned(),
            from,
            INFO_BOTOCORE.name,
        );
    }
    if !text.contains("An error occurred (") {
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

fn google(text: &str, from: Source, found: &mut Extracted) {
    let by = INFO_GOOGLE.name;
    if text.contains("google.api_core")
        && let Some(c) = GOOGLE_EXCEPTION.captures(text)
    {
        Extracted::put(&mut found.exception, c[1].to_owned(), from, by);
    }
    let maybe =
        text.trim_start().starts_with(['4', '5']) || text.contains(": 4") || text.contains(": 5");
    if maybe
        && let Some(c) = STATUS_FIRST.captures(text)
        && let Ok(status) = c[1].parse()
    {
        Extracted::put_weak(&mut found.http_status, status, from, by);
    }
}

fn python_http(text: &str, from: Source, found: &mut Extracted) {
    let maybe = [
        "Error: ",
        "error '",
        "message=",
        "HTTP Error",
        "Error code: ",
    ];
    if !maybe.iter().any(|m| text.contains(m)) {
        return;
    }
    if let Some(c) = PYTHON_HTTP.captures(text)
        && let Some(status) = first_group(&c).and_then(|s| s.parse().ok())
    {
        Extracted::put_weak(&mut found.http_status, status, from, INFO_PYTHON_HTTP.name);
    }
}

fn status_text(text: &str, from: Source, found: &mut Extracted) {
    if found.http_status.is_some() || !text.bytes().any(|b| b == b'4' || b == b'5') {
        return;
    }
    let by = INFO_STATUS_TEXT.name;
    if let Some(c) = STATUS_PHRASE.captures(text)
        && let Ok(status) = c[1].parse::<u16>()
        && phrase_status(&c[2]) == Some(status)
    {
        Extracted::put_weak(&mut found.http_status, status, from, by);
        return;
    }
    if let Some(c) = STATUS_WORDS.captures(text)
        && let Ok(status) = c[1].parse()
    {
        Extracted::put_weak(&mut found.http_status, status, from, by);
    }
}

/// The status a reason phrase belongs to (RFC 9110 and common extensions).
fn phrase_status(phrase: &str) -> Option<u16> {
    let phrase = phrase.to_ascii_lowercase().replace("time-out", "timeout");
    let status = match phrase.as_str() {
        "bad request" => 400,
        "unauthorized" => 401,
        "payment required" => 402,
        "forbidden" => 403,
        "not found" => 404,
        "method not allowed" => 405,
        "not acceptable" => 406,
        "proxy authentication required" => 407,
        "request timeout" => 408,
        "conflict" => 409,
        "gone" => 410,
        "length required" => 411,
        "precondition failed" => 412,
        "payload too large" | "request entity too large" => 413,
        "uri too long" => 414,
        "unsupported media type" => 415,
        "range not satisfiable" => 416,
        "expectation failed" => 417,
        "misdirected request" | "too many connections" => 421,
        "unprocessable entity" | "unprocessable content" => 422,
        "locked" => 423,
        "failed dependency" => 424,
        "too early" => 425,
        "upgrade required" => 426,
        "precondition required" => 428,
        "too many requests" => 429,
        "request header fields too large" => 431,
        "unavailable for legal reasons" => 451,
        "internal server error" => 500,
        "not implemented" => 501,
        "bad gateway" => 502,
        "service unavailable" => 503,
        "gateway timeout" => 504,
        "http version not supported" => 505,
        "insufficient storage" => 507,
        "loop detected" => 508,
        "network authentication required" => 511,
        "site is overloaded" => 529,
        _ => return None,
    };
    Some(status)
}

fn grpc(text: &str, from: Source, found: &mut Extracted) {
    let maybe = ["rpc error", "StatusCode", "Status", "grpc"];
    if !maybe.iter().any(|m| text.contains(m)) {
        return;
    }
    if let Some(c) = GRPC.captures(text)
        && let Some(code) = first_group(&c).and_then(GrpcCode::parse)
        && code.name() != "OK"
    {
        Extracted::put(&mut found.grpc_code, code, from, INFO_GRPC.name);
    }
}

fn sqlstate(text: &str, from: Source, found: &mut Extracted) {
    let lower_has = |needle: &str| text.contains(needle);
    if !(lower_has("SQLSTATE")
        || lower_has("SQLState")
        || lower_has("sqlstate")
        || lower_has("ERROR "))
    {
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

fn errno(text: &str, from: Source, found: &mut Extracted) {
    let by = INFO_ERRNO.name;
    if text.contains('E')
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
    if (text.contains("rrno") || text.contains("os error"))
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

fn go_net(text: &str, from: Source, found: &mut Extracted) {
    let by = INFO_GO.name;
    if text.contains("context deadline exceeded") || text.contains("Client.Timeout exceeded") {
        Extracted::put_weak(
            &mut found.exception,
            "context.DeadlineExceeded".to_owned(),
            from,
            by,
        );
    } else if text.contains("context canceled") {
        Extracted::put_weak(
            &mut found.exception,
            "context.Canceled".to_owned(),
            from,
            by,
        );
    }
    if !text.contains(": ") {
        return;
    }
    if let Some(c) = GO_SOCKET.captures(text) {
        let errno = match &c[1] {
            "connection refused" => "ECONNREFUSED",
            "connection reset by peer" => "ECONNRESET",
            "broken pipe" => "EPIPE",
            "no route to host" => "EHOSTUNREACH",
            "network is unreachable" => "ENETUNREACH",
            "i/o timeout" | "connection timed out" => "ETIMEDOUT",
            "too many open files" => "EMFILE",
            "address already in use" => "EADDRINUSE",
            "permission denied" => "EACCES",
            "cannot assign requested address" => "EADDRNOTAVAIL",
            _ => {
                Extracted::put(&mut found.error_code, "ENOTFOUND".to_owned(), from, by);
                return;
            }
        };
        Extracted::put_weak(&mut found.errno, errno.to_owned(), from, by);
    }
}

/// The endings an exception type name has; a text with none of them holds none.
static EXCEPTION_ENDINGS: LazyLock<aho_corasick::AhoCorasick> = LazyLock::new(|| {
    aho_corasick::AhoCorasick::new([
        "Exception",
        "Error",
        "Exceeded",
        "Timeout",
        "TimedOut",
        "Failure",
        "Fault",
        "Refused",
        "Interrupt",
        "Failed",
        "Unavailable",
        "Cancel",
        "Conflict",
        "Denied",
        "NotFound",
        "Throttl",
        "Busy",
        "Closed",
        "Reset",
        "Overloaded",
    ])
    .expect("a few literals always build")
});

fn exception(text: &str, from: Source, found: &mut Extracted) {
    if found.exception.is_some() || !EXCEPTION_ENDINGS.is_match(text) {
        return;
    }
    if let Some(c) = EXCEPTION_LINE.captures_iter(text).last() {
        let name = &c[1];
        // `Error:` alone (a CLI's prefix) names no type.
        if name != "Error" {
            Extracted::put(
                &mut found.exception,
                name.to_owned(),
                from,
                INFO_EXCEPTION.name,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_message(text: &str) -> Extracted {
        let mut found = Extracted::default();
        read(text, Source::Message, &mut found);
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
