//! A report: what an agent observed about one failed call.
//!
//! [`Report::from_json`] parses and validates in one step and returns every issue it finds;
//! a report that comes back `Ok` is normalized (header names lower-cased, gRPC codes and
//! signals in canonical form) and ready for [`crate::classify`].

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::classify::schema::CompiledSchema;
use crate::codes;
use crate::input::{self, Format};
use crate::issue::Issue;

/// What an agent observed about one failed call. Every field is optional; at least one is needed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Report {
    /// The dependency that was called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The call made on the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// The HTTP status code, 100 to 599.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole"
    )]
    pub http_status: Option<u16>,
    /// Response headers; names are case-insensitive and kept lower-cased.
    #[serde(default, skip_serializing_if = "Headers::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = std::collections::BTreeMap<String, String>))]
    pub headers: Headers,
    /// A gRPC status code, kept as its canonical name (`UNAVAILABLE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub grpc_code: Option<GrpcCode>,
    /// A process exit status.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole"
    )]
    pub exit_code: Option<i64>,
    /// The signal that ended a process, kept as its canonical name (`SIGKILL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub signal: Option<Signal>,
    /// A POSIX errno name (`ECONNRESET`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<String>,
    /// A five-character SQLSTATE (`40001`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqlstate: Option<String>,
    /// An exception type name, qualified or not (`requests.exceptions.ConnectTimeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    /// A provider's error code (`ThrottlingException`, `insufficient_quota`); a number (a
    /// JSON-RPC `-32601`) is taken as its text.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "scalar_text"
    )]
    pub error_code: Option<String>,
    /// The error message; only the first [`crate::classify::TEXT_CAP`] bytes are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The tool's output, checked against `schema` when both are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<serde_json::Value>,
    /// The JSON Schema the output should meet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<serde_json::Value>,
    /// `schema`, compiled once by [`Report::compile_schema`] for the classifier to reuse; not
    /// part of the wire shape.
    #[serde(skip)]
    pub compiled_schema: Option<CompiledSchema>,
    /// How many of the call's side effects happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_effects: Option<SideEffects>,
    /// How long the call ran before it failed, in milliseconds.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole"
    )]
    pub elapsed_ms: Option<u64>,
    /// Whether sending the call again cannot do its effect twice. Unsaid, backstop infers it
    /// from the idempotency key, the tool's setting and the operation's HTTP method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The idempotency key the call was sent with, when the server deduplicates on one: a
    /// resend under the same key cannot do the effect twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// How many of a call's side effects happened out of how many it meant to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SideEffects {
    /// Side effects that happened.
    #[serde(deserialize_with = "whole_required")]
    pub done: u64,
    /// Side effects the call meant to do.
    #[serde(deserialize_with = "whole_required")]
    pub total: u64,
}

/// What the side effects add up to, as rules see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SideEffectState {
    /// None happened.
    None,
    /// Some happened, some did not.
    Partial,
    /// All happened.
    Complete,
}

impl SideEffects {
    /// `none`, `partial` or `complete`.
    pub fn state(self) -> SideEffectState {
        if self.done == 0 {
            SideEffectState::None
        } else if self.done < self.total {
            SideEffectState::Partial
        } else {
            SideEffectState::Complete
        }
    }
}

impl Report {
    /// Parses a report from JSON and validates it.
    ///
    /// # Errors
    /// Every issue found, each with its path: a JSON syntax error, an unknown field, a wrong
    /// type, an out-of-range value, an empty report, a schema without output.
    pub fn from_json(text: &str) -> Result<Report, Vec<Issue>> {
        if text.trim_start().chars().next().is_some_and(|c| c != '{') {
            return Err(vec![Issue::new(
                "",
                "wrong_type",
                "a report must be a JSON object, like {\"http_status\": 503}",
            )]);
        }
        // The plain parse is the fast path; only a report that fails it is read again, as a
        // value, to find the path and the kind of what failed.
        let report: Report = match serde_json::from_str(text) {
            Ok(report) => report,
            Err(plain) => {
                let value = input::json_value(text).map_err(|issue| vec![issue])?;
                return Err(vec![match input::typed::<Report>(&value, Format::Json) {
                    Err(issue) => issue,
                    // Text a value reads but a report does not (a field named twice).
                    Ok(_) => Issue::new("", "bad_json", plain.to_string()),
                }]);
            }
        };
        report.checked()
    }

    /// Reads a report from a JSON value already parsed (a field of a larger body), without
    /// writing it out as text to parse it again.
    ///
    /// # Errors
    /// Every issue found, each with its path, as [`Report::from_json`] finds them.
    pub fn from_value(value: &serde_json::Value) -> Result<Report, Vec<Issue>> {
        if !value.is_object() {
            return Err(vec![Issue::new(
                "",
                "wrong_type",
                "a report must be a JSON object, like {\"http_status\": 503}",
            )]);
        }
        input::typed::<Report>(value, Format::Json)
            .map_err(|issue| vec![issue])?
            .checked()
    }

    /// A report that parsed, with its caps, normalization and validation applied.
    fn checked(self) -> Result<Report, Vec<Issue>> {
        let report = self;
        // Caps count what was sent, before trimming.
        let mut over = Vec::new();
        report.check_lengths(&mut over);
        if !over.is_empty() {
            return Err(over);
        }
        let mut report = report.normalized();
        let mut issues = report.validate();
        issues.extend(report.compile_schema());
        if issues.is_empty() {
            Ok(report)
        } else {
            Err(issues)
        }
    }

    /// Compiles `schema` (once: the classifier reuses it), or the issue that it cannot be.
    /// A `pattern` is compiled with a linear-time engine, so no schema can make a check take
    /// exponential time; a pattern only a backtracking engine reads (look-around,
    /// back-references) makes the schema unusable.
    pub fn compile_schema(&mut self) -> Option<Issue> {
        let schema = self.schema.as_ref()?;
        match crate::classify::schema::compile(schema) {
            Ok(compiled) => {
                self.compiled_schema = Some(compiled);
                None
            }
            Err(error) => Some(Issue::new(
                "schema",
                "bad_schema",
                format!("not a usable JSON Schema: {error}"),
            )),
        }
    }

    /// Every issue with a report that parsed: ranges, formats and fields that need each other.
    pub fn validate(&self) -> Vec<Issue> {
        let mut issues = Vec::new();
        if !self.has_observation() {
            issues.push(Issue::new(
                "",
                "empty_report",
                "a report needs at least one observation (http_status, message, errno, ...); tool and operation only say where it happened",
            ));
        }
        if let Some(status) = self.http_status
            && !(100..=599).contains(&status)
        {
            issues.push(Issue::new(
                "http_status",
                "out_of_range",
                format!("{status} is not an HTTP status; expected 100 to 599"),
            ));
        }
        if let Some(sqlstate) = &self.sqlstate
            && !(sqlstate.len() == 5 && sqlstate.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            issues.push(Issue::new(
                "sqlstate",
                "bad_format",
                format!("`{sqlstate}` is not a SQLSTATE; expected five letters or digits"),
            ));
        }
        if let Some(errno) = &self.errno
            && !(errno.len() > 1
                && errno.starts_with(['E', 'e'])
                && errno
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        {
            issues.push(Issue::new(
                "errno",
                "bad_format",
                format!("`{errno}` is not an errno name; expected a name like ECONNRESET"),
            ));
        }

        self.check_lengths(&mut issues);
        if self.schema.is_some() && self.output.is_none() {
            issues.push(Issue::new(
                "schema",
                "needs_output",
                "a schema is checked against `output`; give the tool's output too",
            ));
        }
        if let Some(effects) = self.side_effects {
            if effects.total == 0 {
                issues.push(Issue::new(
                    "side_effects.total",
                    "out_of_range",
                    "total must be at least 1",
                ));
            } else if effects.done > effects.total {
                issues.push(Issue::new(
                    "side_effects.done",
                    "out_of_range",
                    format!(
                        "done ({}) is more than total ({})",
                        effects.done, effects.total
                    ),
                ));
            }
        }
        issues
    }

    /// The caps on the report's short text fields; `message` and `output` are bounded by the
    /// request's size alone (only the first [`crate::classify::TEXT_CAP`] bytes of a message
    /// are read).
    fn check_lengths(&self, issues: &mut Vec<Issue>) {
        use crate::issue::{MAX_HEADER_VALUE_CHARS, MAX_ID_CHARS, MAX_LOCATOR_CHARS, check_length};
        let fields = [
            ("tool", &self.tool, MAX_ID_CHARS),
            ("operation", &self.operation, MAX_LOCATOR_CHARS),
            ("exception", &self.exception, MAX_ID_CHARS),
            ("error_code", &self.error_code, MAX_ID_CHARS),
            ("idempotency_key", &self.idempotency_key, MAX_ID_CHARS),
        ];
        for (path, value, max) in fields {
            if let Some(text) = value {
                check_length(text, path, max, issues);
            }
        }
        // A tool's name ends up in metric labels, logs and the call journal.
        if let Some(tool) = &self.tool
            && tool.chars().any(char::is_control)
        {
            issues.push(Issue::new(
                "tool",
                "bad_characters",
                "`tool` may not hold control characters",
            ));
        }
        for (name, value) in self.headers.iter() {
            let path = format!("headers.{name}");
            check_length(name, "headers", MAX_ID_CHARS, issues);
            check_length(value, &path, MAX_HEADER_VALUE_CHARS, issues);
        }
    }

    /// The report with empty and blank text fields taken as absent (an exception whose text
    /// is empty is common, and says nothing), and the other text fields trimmed.
    #[must_use]
    pub fn normalized(mut self) -> Report {
        for field in [
            &mut self.tool,
            &mut self.operation,
            &mut self.errno,
            &mut self.sqlstate,
            &mut self.exception,
            &mut self.error_code,
            &mut self.idempotency_key,
        ] {
            *field = field
                .take()
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty());
        }
        if self.message.as_deref().is_some_and(|m| m.trim().is_empty()) {
            self.message = None;
        }
        self
    }

    /// A short account of the failure for hints: which items of a batch went through and
    /// which failed (the ones not to send again), else the message's first line, else the most
    /// specific code the report has (`HTTP 503`, `ECONNRESET`, ...).
    pub fn summary(&self) -> String {
        if let Some(outline) = self
            .output
            .as_ref()
            .and_then(crate::classify::extract::batch_outline)
        {
            return outline;
        }
        if let Some(message) = &self.message {
            let line = message
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or(message)
                .trim();
            return if line.len() > 160 {
                format!("{}…", &line[..line.floor_char_boundary(160)])
            } else {
                line.to_owned()
            };
        }
        let codes = [
            self.error_code.clone(),
            self.sqlstate.as_ref().map(|s| format!("SQLSTATE {s}")),
            self.errno.clone(),
            self.grpc_code.map(|c| format!("gRPC {}", c.name())),
            self.exception.clone(),
            self.http_status.map(|s| format!("HTTP {s}")),
            self.signal.as_ref().map(|s| s.name().to_owned()),
            self.exit_code.map(|c| format!("exit status {c}")),
            self.side_effects
                .map(|e| format!("{} of {} side effects done", e.done, e.total)),
            self.output.as_ref().map(|_| {
                if self.schema.is_some() {
                    "output that fails its schema".to_owned()
                } else {
                    "the tool's output".to_owned()
                }
            }),
        ];
        codes
            .into_iter()
            .flatten()
            .next()
            .unwrap_or_else(|| "the failure".to_owned())
    }

    /// Whether the report says anything about the failure beyond where it happened.
    pub fn has_observation(&self) -> bool {
        self.http_status.is_some()
            || !self.headers.is_empty()
            || self.grpc_code.is_some()
            || self.exit_code.is_some()
            || self.signal.is_some()
            || self.errno.is_some()
            || self.sqlstate.is_some()
            || self.exception.is_some()
            || self.error_code.is_some()
            || self.message.is_some()
            || self.output.is_some()
            || self.schema.is_some()
            || self.side_effects.is_some()
            || self.elapsed_ms.is_some()
    }

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == Report::default()
    }

    /// The errno name in upper case, as rules compare it.
    pub fn errno_upper(&self) -> Option<String> {
        self.errno.as_ref().map(|e| e.to_ascii_uppercase())
    }
}

/// A whole number, also one written with a zero fraction (`1932.0`): JSON Schema counts it as
/// an integer, so a generated client may send it so.
fn whole<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64> + TryFrom<u64>,
{
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let converted = if let Some(n) = number.as_u64() {
        T::try_from(n).ok()
    } else if let Some(n) = number.as_i64() {
        T::try_from(n).ok()
    } else {
        #[allow(clippy::cast_possible_truncation)]
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
            .and_then(|f| T::try_from(f as i64).ok())
    };
    converted.map(Some).ok_or_else(|| {
        de::Error::custom(format!(
            "invalid type: `{number}` is not a whole number in range"
        ))
    })
}

/// [`whole`] for a field that must be there.
fn whole_required<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64> + TryFrom<u64>,
{
    whole(deserializer)?.ok_or_else(|| de::Error::custom("invalid type: null, expected a number"))
}

/// Response headers with lower-cased names; a name given twice in different case keeps both
/// values, joined with `, ` as HTTP joins repeated fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(BTreeMap<String, String>);

impl Headers {
    /// Builds headers from name-value pairs.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut headers = Headers::default();
        for (name, value) in pairs {
            headers.insert(name, value);
        }
        headers
    }

    /// Adds a header; the name is lower-cased and the value trimmed.
    pub fn insert(&mut self, name: &str, value: &str) {
        let value = value.trim();
        self.0
            .entry(name.trim().to_ascii_lowercase())
            .and_modify(|existing| {
                existing.push_str(", ");
                existing.push_str(value);
            })
            .or_insert_with(|| value.to_owned());
    }

    /// The value of a header, by lower-case name.
    pub fn get(&self, lower_name: &str) -> Option<&str> {
        self.0.get(lower_name).map(String::as_str)
    }

    /// Every header, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Headers {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Headers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HeadersVisitor;
        impl<'de> Visitor<'de> for HeadersVisitor {
            type Value = Headers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of header names to string or number values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Headers, A::Error> {
                let mut headers = Headers::default();
                while let Some(name) = map.next_key::<String>()? {
                    let value: ScalarText = map.next_value()?;
                    if name.trim().is_empty() {
                        return Err(de::Error::custom("a header name must not be empty"));
                    }
                    headers.insert(&name, &value.0);
                }
                Ok(headers)
            }
        }
        deserializer.deserialize_map(HeadersVisitor)
    }
}

/// A string, or a number taken as its text.
struct ScalarText(String);

fn scalar_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Option::<ScalarText>::deserialize(deserializer).map(|v| v.map(|t| t.0))
}

impl<'de> Deserialize<'de> for ScalarText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Int(i64),
            Float(f64),
        }
        match Raw::deserialize(deserializer)
            .map_err(|_| de::Error::custom("invalid type: expected a string or a number"))?
        {
            Raw::Text(t) => Ok(ScalarText(t)),
            Raw::Int(i) => Ok(ScalarText(i.to_string())),
            // A whole float reads as its integer (`14.0` is `14`); any other in its shortest
            // form, with an exponent when large or small (`1e245`, never 246 digits).
            Raw::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => Ok(ScalarText(f.to_string())),
            Raw::Float(f) => Ok(ScalarText(format!("{f:?}"))),
        }
    }
}

/// A gRPC status code, by canonical name (`UNAVAILABLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GrpcCode(&'static str);

impl GrpcCode {
    /// Parses a name (any usual spelling) or a number.
    pub fn parse(text: &str) -> Option<GrpcCode> {
        match text.trim().parse::<u64>() {
            Ok(n) => codes::grpc_name(n),
            Err(_) => codes::grpc_from_name(text),
        }
        .map(GrpcCode)
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        self.0
    }
}

impl Serialize for GrpcCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for GrpcCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = ScalarText::deserialize(deserializer)?.0;
        GrpcCode::parse(&text).ok_or_else(|| {
            de::Error::custom(format!(
                "`{text}` is not a gRPC status code; expected a name like UNAVAILABLE or a number 0 to 16"
            ))
        })
    }
}

/// A POSIX signal, by canonical name (`SIGKILL`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Signal(String);

impl Signal {
    /// Parses a name (`SIGKILL`, `KILL`) or a number (`9`).
    pub fn parse(text: &str) -> Option<Signal> {
        match text.trim().parse::<u8>() {
            Ok(n) => codes::signal_name(n),
            Err(_) => codes::signal_from_name(text),
        }
        .map(Signal)
    }

    /// The canonical name.
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl Serialize for Signal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Signal {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = ScalarText::deserialize(deserializer)?.0;
        Signal::parse(&text).ok_or_else(|| {
            de::Error::custom(format!(
                "`{text}` is not a signal; expected a name like SIGKILL or a number 1 to {}",
                codes::MAX_SIGNAL
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numeric_error_code_is_short_text_however_large() {
        let report = Report::from_json(r#"{"error_code": 1.1e245, "grpc_code": 14.0}"#).unwrap();
        assert_eq!(report.error_code.as_deref(), Some("1.1e245"));
        assert_eq!(report.grpc_code.unwrap().name(), "UNAVAILABLE");
    }

    #[test]
    fn a_whole_number_written_with_a_zero_fraction_is_taken() {
        let report = Report::from_json(
            r#"{"http_status": 503.0, "elapsed_ms": 1932.0, "exit_code": -1.0,
                "side_effects": {"done": 1.0, "total": 2}}"#,
        )
        .unwrap();
        assert_eq!(report.http_status, Some(503));
        assert_eq!(report.elapsed_ms, Some(1932));
        assert_eq!(report.exit_code, Some(-1));
        for bad in [
            r#"{"http_status": 503.5}"#,
            r#"{"elapsed_ms": -1}"#,
            r#"{"http_status": 70000}"#,
            r#"{"exit_code": "1"}"#,
        ] {
            let issues = Report::from_json(bad).unwrap_err();
            assert_eq!(issues[0].code, "wrong_type", "{bad}: {issues:?}");
        }
    }

    #[test]
    fn parses_a_full_report_and_normalizes_it() {
        let report = Report::from_json(
            r#"{"http_status": 503, "headers": {"Retry-After": 2}, "grpc_code": 14,
                "signal": "kill", "errno": "ECONNRESET", "message": "reset"}"#,
        )
        .unwrap();
        assert_eq!(report.headers.get("retry-after"), Some("2"));
        assert_eq!(report.grpc_code.unwrap().name(), "UNAVAILABLE");
        assert_eq!(report.signal.unwrap().name(), "SIGKILL");
    }

    #[test]
    fn header_names_differing_in_case_are_one_header() {
        let report = Report::from_json(r#"{"headers": {"X-A": "1", "x-a": "2"}}"#).unwrap();
        assert_eq!(report.headers.get("x-a"), Some("1, 2"));
    }

    #[test]
    fn an_unknown_field_names_its_path() {
        let issues = Report::from_json(r#"{"http_status": 500, "stauts": 1}"#).unwrap_err();
        assert_eq!(issues[0].code, "unknown_field");
        assert!(issues[0].message.contains("stauts"), "{issues:?}");
    }

    #[test]
    fn a_wrong_type_names_its_path() {
        let issues =
            Report::from_json(r#"{"side_effects": {"done": "two", "total": 3}}"#).unwrap_err();
        assert_eq!(issues[0].path, "side_effects.done");
        assert_eq!(issues[0].code, "wrong_type");
    }

    #[test]
    fn a_bad_grpc_code_names_its_path() {
        let issues = Report::from_json(r#"{"grpc_code": "BUSY"}"#).unwrap_err();
        assert_eq!(issues[0].path, "grpc_code");
        assert!(issues[0].message.contains("BUSY"));
    }

    #[test]
    fn syntax_errors_and_trailing_text_are_refused() {
        assert_eq!(Report::from_json("{").unwrap_err()[0].code, "bad_json");
        // A value already parsed is read the same way, issues and paths included.
        let value: serde_json::Value =
            serde_json::from_str(r#"{"http_status": 500, "stauts": 1}"#).unwrap();
        let issues = Report::from_value(&value).unwrap_err();
        assert_eq!(issues[0].path, "stauts");
        assert_eq!(issues[0].code, "unknown_field");
        assert!(
            !issues[0].message.contains("line 1"),
            "{}",
            issues[0].message
        );
        let ok = serde_json::json!({"http_status": 503, "headers": {"Retry-After": "2"}});
        assert_eq!(
            Report::from_value(&ok).unwrap(),
            Report::from_json(&ok.to_string()).unwrap()
        );
        assert_eq!(
            Report::from_value(&serde_json::json!([1])).unwrap_err()[0].code,
            "wrong_type"
        );
        assert_eq!(
            Report::from_json(r#"{"message": "x"} {}"#).unwrap_err()[0].code,
            "bad_json"
        );
    }

    #[test]
    fn validation_lists_every_issue() {
        let issues = Report::from_json(
            r#"{"http_status": 99, "sqlstate": "4000", "errno": "reset",
                "schema": {"type": "object"}, "side_effects": {"done": 3, "total": 2}}"#,
        )
        .unwrap_err();
        let paths: Vec<_> = issues.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "http_status",
                "sqlstate",
                "errno",
                "schema",
                "side_effects.done"
            ]
        );
    }

    #[test]
    fn blank_text_fields_are_absent() {
        let report =
            Report::from_json(r#"{"http_status": 500, "message": " ", "exception": ""}"#).unwrap();
        assert_eq!((report.message, report.exception), (None, None));
        let issues = Report::from_json(r#"{"message": "", "error_code": "  "}"#).unwrap_err();
        assert_eq!(issues[0].code, "empty_report");
    }

    #[test]
    fn a_report_of_only_where_is_refused() {
        let issues = Report::from_json(r#"{"tool": "search", "operation": "q"}"#).unwrap_err();
        assert_eq!(issues[0].code, "empty_report");
        assert!(Report::from_json(r#"{"tool": "search", "elapsed_ms": 30000}"#).is_ok());
    }

    #[test]
    fn an_empty_report_is_refused() {
        assert_eq!(Report::from_json("{}").unwrap_err()[0].code, "empty_report");
    }

    #[test]
    fn a_bad_schema_is_refused() {
        let issues =
            Report::from_json(r#"{"output": 1, "schema": {"type": "no-such-type"}}"#).unwrap_err();
        assert_eq!(issues[0].code, "bad_schema");
        // One line, naming where in the schema it fails, not the compiler's name for it.
        let message = &issues[0].message;
        assert!(message.contains("at '/type'"), "{message}");
        assert!(
            !message.contains('\n') && !message.contains("urn:"),
            "{message}"
        );
    }

    #[test]
    fn a_schema_is_compiled_once_with_a_linear_time_pattern_engine() {
        let report = Report::from_json(
            r#"{"output": {"id": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"},
                "schema": {"properties": {"id": {"type": "string", "pattern": "^(a+)+$"}}}}"#,
        )
        .unwrap();
        // Compiled when the report was checked, for the classifier to reuse.
        assert!(report.compiled_schema.is_some());
        // A backtracking engine would take 2^46 steps on this id; a linear one answers at once.
        let result = crate::classify::classify(
            &crate::classify::RuleSet::builtin(),
            &report,
            jiff::Timestamp::UNIX_EPOCH,
        );
        assert_eq!(result.class, crate::Class::SchemaViolation, "{result:?}");
        // Look-around needs backtracking: such a schema is refused, not run.
        let issues = Report::from_json(
            r#"{"output": "x", "schema": {"type": "string", "pattern": "^(?!x)"}}"#,
        )
        .unwrap_err();
        assert_eq!(
            (issues[0].path.as_str(), issues[0].code.as_str()),
            ("schema", "bad_schema")
        );
    }

    #[test]
    fn a_schema_that_refers_to_another_document_is_refused_unread() {
        // The CLI's tests show a file that exists and holds a schema is not read either.
        for reference in [
            "file:///no/such/dir/schema.json",
            "https://example.com/schema.json",
        ] {
            let json = serde_json::json!({"output": 1, "schema": {"$ref": reference}});
            let issues = Report::from_json(&json.to_string()).unwrap_err();
            assert_eq!(
                (issues[0].path.as_str(), issues[0].code.as_str()),
                ("schema", "bad_schema"),
                "{issues:?}"
            );
            assert!(issues[0].message.contains("must stand alone"), "{issues:?}");
        }
    }

    #[test]
    fn a_numeric_error_code_is_its_text() {
        let report = Report::from_json(r#"{"error_code": -32601}"#).unwrap();
        assert_eq!(report.error_code.as_deref(), Some("-32601"));
    }

    #[test]
    fn a_summary_names_the_most_specific_signal() {
        let summary = |json: &str| Report::from_json(json).unwrap().summary();
        assert_eq!(
            summary(r#"{"http_status": 503, "message": "\n upstream busy \nmore"}"#),
            "upstream busy"
        );
        assert_eq!(
            summary(r#"{"http_status": 503, "errno": "ECONNRESET"}"#),
            "ECONNRESET"
        );
        assert_eq!(summary(r#"{"http_status": 503}"#), "HTTP 503");
    }

    #[test]
    fn side_effect_states() {
        let state = |done, total| SideEffects { done, total }.state();
        assert_eq!(state(0, 3), SideEffectState::None);
        assert_eq!(state(1, 3), SideEffectState::Partial);
        assert_eq!(state(3, 3), SideEffectState::Complete);
    }
}
