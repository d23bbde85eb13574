//! Extractors: structured signals read out of the text a failure arrives as.
//!
//! An agent rarely holds a neat report. It holds an exception string
//! (`An error occurred (ThrottlingException) when calling ...`), a response body
//! (`{"ok": false, "error": "ratelimited"}`) or a command's output (`curl: (28) ...`).
//! Extractors run before the rules: each reads `message`, and `output` where it is text or
//! JSON, and adds what it finds as an *extracted* field. The rules then see the field as if
//! it had been given, with two differences:
//!
//! - an explicit field always wins: an extracted value fills only a field the report lacks;
//! - the evidence says where the value came from (`"extracted": "error_code", "by": "botocore"`).
//!
//! Besides fields, extractors gather *text*: the message inside an envelope, and the words
//! of an error code or exception name (`ProvisionedThroughputExceededException` reads as
//! "provisioned throughput exceeded exception"). Message rules read that text too, so a code
//! no rule names is still judged by its words.
//!
//! | module | reads |
//! |---|---|
//! | `envelope` | JSON bodies: `{"ok": false}`, problem details, `{"error": {...}}`, GraphQL, JSON-RPC, batch results, retryable flags |
//! | `sdk` | SDK exception strings: botocore, google-api-core, requests, httpx, aiohttp, Node, Go, Java and others |
//! | `command` | command output: curl, kubectl, npm, git |
//! | `words` | the words of a code or a type name |

mod command;
mod envelope;
mod exception_name;
mod fields;
mod needles;
mod pyrepr;
mod sdk;
mod status_text;
mod words;

use std::borrow::Cow;

use super::capped;
use crate::report::{GrpcCode, Report, SideEffectState};

pub use self::envelope::batch_outline;
pub use self::words::code_words;

/// The report field an extractor read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `message`.
    Message,
    /// `output`.
    Output,
}

impl Source {
    /// The field's name.
    pub fn name(self) -> &'static str {
        match self {
            Source::Message => "message",
            Source::Output => "output",
        }
    }
}

/// A value an extractor found, where it found it, and which extractor it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found<T> {
    /// The value.
    pub value: T,
    /// The field it was read from.
    pub from: Source,
    /// The extractor's name (see [`EXTRACTORS`]).
    pub by: &'static str,
    /// Read from wording rather than a code: it ranks below the text's own words.
    pub weak: bool,
}

/// Everything the extractors found in one report. Each field keeps the first value found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    /// An HTTP status (`404 Client Error`, `"status": 503`).
    pub http_status: Option<Found<u16>>,
    /// A gRPC status (`rpc error: code = Unavailable`, `"status": "RESOURCE_EXHAUSTED"`).
    pub grpc_code: Option<Found<GrpcCode>>,
    /// An exit status (`curl: (28)`).
    pub exit_code: Option<Found<i64>>,
    /// An errno name (`connect ECONNREFUSED`, `[Errno 111]`).
    pub errno: Option<Found<String>>,
    /// A SQLSTATE (`SQLSTATE[40001]`, `ERROR 1213 (40001)`).
    pub sqlstate: Option<Found<String>>,
    /// An exception type (`java.net.SocketTimeoutException:`).
    pub exception: Option<Found<String>>,
    /// A provider's code (`(ThrottlingException)`, `"error": "ratelimited"`).
    pub error_code: Option<Found<String>>,
    /// The program that printed the output (`curl: (6) ...` is curl's).
    pub tool: Option<Found<String>>,
    /// What a batch result says of its items: some failed (`partial`).
    pub side_effects: Option<Found<SideEffectState>>,
    /// A retryable flag the body itself carries (`"retryable": false`).
    pub retryable: Option<Found<bool>>,
    /// Text the message rules read besides the message: envelope messages and code words.
    pub texts: Vec<Found<String>>,
}

/// An extractor, as `backstop rules show` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractorInfo {
    /// The name shown as `by` in evidence.
    pub name: &'static str,
    /// What it reads and what it adds.
    pub reads: &'static str,
    /// An example input.
    pub example: &'static str,
    /// What it extracts from the example.
    pub finds: &'static str,
}

/// A tool's output given as text, in a report with no message: the text the failure is told
/// in (a command's output), which the message rules read as they read a message.
const INFO_OUTPUT_TEXT: ExtractorInfo = ExtractorInfo {
    name: "output_text",
    reads: "output given as text, when the report has no message: the message rules read it as a message (a command's or a tool's own account of the failure)",
    example: "Msg 2627, Level 14, State 1\nViolation of PRIMARY KEY constraint 'PK_Customers'. Cannot insert duplicate key in object 'dbo.Customers'.",
    finds: "the text, for the message rules",
};

/// Every extractor, in the order they run (the first to find a field keeps it).
pub const EXTRACTORS: &[ExtractorInfo] = &[
    INFO_OUTPUT_TEXT,
    envelope::INFO_OK_FALSE,
    envelope::INFO_PROBLEM,
    envelope::INFO_ERROR_OBJECT,
    envelope::INFO_GRAPHQL,
    envelope::INFO_JSONRPC,
    envelope::INFO_BATCH,
    envelope::INFO_FLAGS,
    envelope::INFO_LLM,
    envelope::INFO_EMPTY,
    pyrepr::INFO,
    sdk::INFO_BOTOCORE,
    sdk::INFO_GOOGLE,
    sdk::INFO_PYTHON_HTTP,
    status_text::INFO,
    sdk::INFO_GRPC,
    sdk::INFO_SQLSTATE,
    sdk::INFO_ERRNO,
    sdk::INFO_GO,
    exception_name::INFO,
    command::INFO_CURL,
    command::INFO_KUBECTL,
    command::INFO_NPM,
    fields::INFO_CODE,
    fields::INFO_COUNTS,
    words::INFO,
];

/// The most JSON text read out of a message or a text output.
const JSON_CAP: usize = 16 * 1024;

impl Extracted {
    /// Runs every extractor over a report's `message` and `output`.
    pub fn from_report(report: &Report) -> Extracted {
        let mut found = Extracted::default();
        if let Some(output) = &report.output {
            match output {
                serde_json::Value::String(text) if text.trim().is_empty() => {
                    found.add_text("no results", Source::Output, envelope::INFO_EMPTY.name);
                }
                serde_json::Value::String(text) => {
                    if report.message.is_none() {
                        found.add_text(capped(text), Source::Output, INFO_OUTPUT_TEXT.name);
                    }
                    found.read_text(text, Source::Output);
                }
                value => envelope::read(value, Source::Output, &mut found),
            }
        }
        if let Some(message) = &report.message {
            found.read_text(message, Source::Message);
        }
        words::add_code_words(report, &mut found);
        found
    }

    /// Reads one text: a JSON body in it first, then the SDK and command shapes.
    fn read_text(&mut self, text: &str, from: Source) {
        if let Some(value) = json_in(text) {
            envelope::read(&value, from, self);
        } else if let Some(value) = pyrepr::dict_in(text) {
            envelope::read(&value, from, self);
        }
        let text = capped(text);
        let needles = needles::Needles::of(text);
        sdk::read(text, needles, from, self);
        command::read(text, needles, from, self);
        fields::read(text, needles, from, self);
        words::add_text_tokens(text, from, self);
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        *self == Extracted::default()
    }

    pub(crate) fn put<T>(slot: &mut Option<Found<T>>, value: T, from: Source, by: &'static str) {
        if slot.is_none() {
            *slot = Some(Found {
                value,
                from,
                by,
                weak: false,
            });
        }
    }

    /// Puts a value read from wording (an HTTP status in a sentence, a Go error's phrase):
    /// it ranks below the message's own words.
    pub(crate) fn put_weak<T>(
        slot: &mut Option<Found<T>>,
        value: T,
        from: Source,
        by: &'static str,
    ) {
        if slot.is_none() {
            *slot = Some(Found {
                value,
                from,
                by,
                weak: true,
            });
        }
    }

    pub(crate) fn add_text(&mut self, text: impl Into<String>, from: Source, by: &'static str) {
        let text = text.into();
        if !text.trim().is_empty() && !self.texts.iter().any(|t| t.value == text) {
            self.texts.push(Found {
                value: text,
                from,
                by,
                weak: false,
            });
        }
    }
}

/// A JSON object or array that makes up the text, or that follows a short prefix
/// (`Response body: {...}`, `Error code: 429 - {...}`).
fn json_in(text: &str) -> Option<serde_json::Value> {
    let text = &text[..text.floor_char_boundary(JSON_CAP)];
    let trimmed = text.trim_start();
    if trimmed.starts_with(['{', '['])
        && let Some(value) = first_json_value(trimmed)
    {
        return Some(value);
    }
    let start = text.find('{')?;
    first_json_value(&text[start..])
}

/// The first JSON value at the start of `text`, if it is an object or an array.
fn first_json_value(text: &str) -> Option<serde_json::Value> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    match values.next()? {
        Ok(value @ (serde_json::Value::Object(_) | serde_json::Value::Array(_))) => Some(value),
        _ => None,
    }
}

/// The text the message rules read: the message (capped) and everything extractors gathered.
pub(super) fn rule_text<'a>(report: &'a Report, extracted: &Extracted) -> Option<Cow<'a, str>> {
    let message = report.message.as_deref().map(capped);
    if extracted.texts.is_empty() {
        return message.map(Cow::Borrowed);
    }
    let mut text = String::from(message.unwrap_or(""));
    for found in &extracted.texts {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(capped(&found.value));
    }
    Some(Cow::Owned(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extract(json: &str) -> Extracted {
        Extracted::from_report(&Report::from_json(json).unwrap())
    }

    #[test]
    fn a_json_body_after_a_prefix_is_read() {
        let found = extract(
            r#"{"message": "Response body: {\"error\": {\"code\": \"TooManyRequests\", \"message\": \"slow\"}}"}"#,
        );
        assert_eq!(
            found.error_code.map(|f| f.value).as_deref(),
            Some("TooManyRequests")
        );
    }

    #[test]
    fn extractors_have_unique_names_and_examples() {
        let mut names: Vec<_> = EXTRACTORS.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EXTRACTORS.len());
        assert!(EXTRACTORS.iter().all(|e| !e.example.is_empty()));
    }

    #[test]
    fn nothing_is_found_in_plain_words() {
        let found = extract(r#"{"message": "the frobnicator declined"}"#);
        assert!(found.is_empty(), "{found:?}");
    }
}
