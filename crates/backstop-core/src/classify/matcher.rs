//! The matchers a rule's `when` is made of, and how each tests a report field.
//!
//! Parsing a matcher from TOML collects every issue with its path; see `docs/rules.md` for the
//! forms each field accepts.

use std::sync::OnceLock;

use regex::{Regex, RegexBuilder};
use toml::Value;

use crate::input::{self, Format};
use crate::issue::{Issue, join_path};
use crate::report::{GrpcCode, Signal};

/// The longest a compiled regex may grow, so a hostile rule file cannot eat the memory.
pub(super) const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Compiles a case-insensitive regex with a size bound.
pub fn compile_regex(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
}

/// A regex kept as its source and compiled the first time it is used, so a rule set whose
/// rules a report never reaches costs nothing to load.
#[derive(Debug, Clone)]
pub struct LazyRegex {
    source: String,
    compiled: OnceLock<Regex>,
}

impl LazyRegex {
    /// A regex compiled now.
    ///
    /// # Errors
    /// The pattern does not compile (syntax, or past the size limit).
    pub fn checked(pattern: &str) -> Result<LazyRegex, regex::Error> {
        let regex = compile_regex(pattern)?;
        Ok(LazyRegex {
            source: pattern.to_owned(),
            compiled: OnceLock::from(regex),
        })
    }

    /// A regex from a trusted source (the built-in rules, which tests compile), compiled on
    /// first use.
    pub fn trusted(pattern: &str) -> LazyRegex {
        LazyRegex {
            source: pattern.to_owned(),
            compiled: OnceLock::new(),
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the regex matches anywhere in `text`.
    pub fn is_match(&self, text: &str) -> bool {
        self.compiled
            .get_or_init(|| compile_regex(&self.source).expect("built-in regexes are tested"))
            .is_match(text)
    }
}

/// Whether regexes are compiled while parsing (user files, so every bad one is listed) or
/// on first use (the built-in rules, which tests check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    /// Compile and check every regex now.
    Full,
    /// Trust the source; compile each regex the first time it is used.
    Trusted,
}

/// Matches an integer field: a set of values or an inclusive range.
#[derive(Debug, Clone, PartialEq)]
pub enum NumberMatch {
    /// Any of these values.
    OneOf(Vec<i64>),
    /// Within these bounds, each inclusive and optional.
    Range {
        /// The lowest value that matches.
        min: Option<i64>,
        /// The highest value that matches.
        max: Option<i64>,
    },
}

impl NumberMatch {
    /// Whether `value` matches.
    pub fn matches(&self, value: i64) -> bool {
        match self {
            NumberMatch::OneOf(values) => values.contains(&value),
            NumberMatch::Range { min, max } => {
                min.is_none_or(|m| value >= m) && max.is_none_or(|m| value <= m)
            }
        }
    }

    /// Whether every value this matcher accepts, `other` accepts too.
    pub fn within(&self, other: &NumberMatch) -> bool {
        match (self, other) {
            (NumberMatch::OneOf(values), _) => values.iter().all(|v| other.matches(*v)),
            (NumberMatch::Range { .. }, NumberMatch::OneOf(_)) => false,
            (
                NumberMatch::Range { min, max },
                NumberMatch::Range {
                    min: omin,
                    max: omax,
                },
            ) => {
                let low_ok = match (min, omin) {
                    (_, None) => true,
                    (None, Some(_)) => false,
                    (Some(a), Some(b)) => a >= b,
                };
                let high_ok = match (max, omax) {
                    (_, None) => true,
                    (None, Some(_)) => false,
                    (Some(a), Some(b)) => a <= b,
                };
                low_ok && high_ok
            }
        }
    }

    /// Parses `503`, `[502, 503]` or `{ min = 500, max = 599 }`.
    pub fn parse(value: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<NumberMatch> {
        match value {
            Value::Integer(n) => Some(NumberMatch::OneOf(vec![*n])),
            Value::Array(items) => {
                let mut values = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::Integer(n) => values.push(*n),
                        _ => issues.push(wrong_form(
                            &join_path(path, &format!("[{i}]")),
                            "an integer",
                        )),
                    }
                }
                empty_list_check(values.is_empty() && items.is_empty(), path, issues);
                Some(NumberMatch::OneOf(values))
            }
            Value::Table(table) => {
                let mut bound = |key: &str| match table.get(key) {
                    None => None,
                    Some(Value::Integer(n)) => Some(*n),
                    Some(_) => {
                        issues.push(wrong_form(&join_path(path, key), "an integer"));
                        None
                    }
                };
                let (min, max) = (bound("min"), bound("max"));
                input::unknown_keys(table.keys(), path, &["min", "max"], Format::Toml, issues);
                if !table.contains_key("min") && !table.contains_key("max") {
                    issues.push(Issue::new(
                        path,
                        "empty_range",
                        "a range needs `min`, `max` or both",
                    ));
                }
                if let (Some(lo), Some(hi)) = (min, max)
                    && lo > hi
                {
                    issues.push(Issue::new(
                        path,
                        "empty_range",
                        format!("min ({lo}) is above max ({hi}); nothing could match"),
                    ));
                }
                Some(NumberMatch::Range { min, max })
            }
            _ => {
                issues.push(wrong_form(
                    path,
                    "an integer, a list of integers or { min, max }",
                ));
                None
            }
        }
    }
}

/// Matches a text field: a set of values (ASCII case ignored), a prefix, or a regex.
#[derive(Debug, Clone)]
pub enum TextMatch {
    /// Equal to one of these, kept lower-cased.
    OneOf(Vec<String>),
    /// Starts with this, kept lower-cased.
    Prefix(String),
    /// Matches this case-insensitive regex.
    Regex(LazyRegex),
}

impl TextMatch {
    /// Whether `lower` (the report's value, already lower-cased) matches.
    pub fn matches(&self, lower: &str) -> bool {
        match self {
            TextMatch::OneOf(values) => values.iter().any(|v| v == lower),
            TextMatch::Prefix(prefix) => lower.starts_with(prefix.as_str()),
            TextMatch::Regex(regex) => regex.is_match(lower),
        }
    }

    /// Whether every value this matcher accepts, `other` accepts too (as far as can be proven).
    pub fn within(&self, other: &TextMatch) -> bool {
        match (self, other) {
            (TextMatch::OneOf(values), _) => values.iter().all(|v| other.matches(v)),
            (TextMatch::Prefix(mine), TextMatch::Prefix(theirs)) => {
                mine.starts_with(theirs.as_str())
            }
            (TextMatch::Regex(mine), TextMatch::Regex(theirs)) => mine.as_str() == theirs.as_str(),
            _ => false,
        }
    }

    /// Parses `"X"`, `["X", "Y"]`, `{ prefix = "08" }` or `{ regex = "..." }`.
    pub fn parse(value: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<TextMatch> {
        TextMatch::parse_with(value, path, issues, Checks::Full)
    }

    /// [`TextMatch::parse`], compiling a regex now or on first use.
    pub fn parse_with(
        value: &Value,
        path: &str,
        issues: &mut Vec<Issue>,
        checks: Checks,
    ) -> Option<TextMatch> {
        match value {
            Value::String(s) => Some(TextMatch::OneOf(vec![s.to_ascii_lowercase()])),
            Value::Array(_) => string_list(value, path, issues).map(|list| {
                TextMatch::OneOf(list.iter().map(|s| s.to_ascii_lowercase()).collect())
            }),
            Value::Table(table) => {
                input::unknown_keys(
                    table.keys(),
                    path,
                    &["prefix", "regex"],
                    Format::Toml,
                    issues,
                );
                match (table.get("prefix"), table.get("regex")) {
                    (Some(Value::String(p)), None) => {
                        Some(TextMatch::Prefix(p.to_ascii_lowercase()))
                    }
                    (None, Some(Value::String(r))) => match checks {
                        Checks::Full => {
                            regex_at(r, &join_path(path, "regex"), issues).map(TextMatch::Regex)
                        }
                        Checks::Trusted => Some(TextMatch::Regex(LazyRegex::trusted(r))),
                    },
                    (Some(_), Some(_)) => {
                        issues.push(Issue::new(
                            path,
                            "ambiguous",
                            "give `prefix` or `regex`, not both",
                        ));
                        None
                    }
                    (Some(_), None) => {
                        issues.push(wrong_form(&join_path(path, "prefix"), "a string"));
                        None
                    }
                    (None, Some(_)) => {
                        issues.push(wrong_form(&join_path(path, "regex"), "a string"));
                        None
                    }
                    (None, None) => {
                        issues.push(Issue::new(
                            path,
                            "empty_matcher",
                            "give `prefix` or `regex`",
                        ));
                        None
                    }
                }
            }
            _ => {
                issues.push(wrong_form(
                    path,
                    "a string, a list of strings, { prefix } or { regex }",
                ));
                None
            }
        }
    }
}

/// Matches a header's value: a set of values, a regex, or whether it is present at all.
#[derive(Debug, Clone)]
pub enum HeaderMatch {
    /// The value (trimmed, ASCII case ignored) is one of these.
    Value(TextMatch),
    /// The header is present (`true`) or absent (`false`).
    Present(bool),
}

impl HeaderMatch {
    /// Whether the header's value (`None` when absent) matches.
    pub fn matches(&self, value: Option<&str>) -> bool {
        match (self, value) {
            (HeaderMatch::Present(want), v) => *want == v.is_some(),
            (HeaderMatch::Value(m), Some(v)) => m.matches(&v.to_ascii_lowercase()),
            (HeaderMatch::Value(_), None) => false,
        }
    }

    /// Parses a header value matcher.
    pub fn parse(value: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<HeaderMatch> {
        HeaderMatch::parse_with(value, path, issues, Checks::Full)
    }

    /// [`HeaderMatch::parse`], compiling a regex now or on first use.
    pub fn parse_with(
        value: &Value,
        path: &str,
        issues: &mut Vec<Issue>,
        checks: Checks,
    ) -> Option<HeaderMatch> {
        if let Value::Table(table) = value
            && table.contains_key("present")
        {
            for key in table.keys().filter(|k| k.as_str() != "present") {
                issues.push(input::unknown_key(
                    path,
                    key,
                    "present (alone)",
                    Format::Toml,
                ));
            }
            return if let Some(Value::Boolean(b)) = table.get("present") {
                Some(HeaderMatch::Present(*b))
            } else {
                issues.push(wrong_form(&join_path(path, "present"), "true or false"));
                None
            };
        }
        if let Value::Table(table) = value
            && table.contains_key("prefix")
        {
            issues.push(input::unknown_key(
                path,
                "prefix",
                "regex, present",
                Format::Toml,
            ));
            return None;
        }
        TextMatch::parse_with(value, path, issues, checks).map(HeaderMatch::Value)
    }
}

/// Parses a list of gRPC code names or numbers into canonical names.
pub fn parse_grpc(value: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<Vec<&'static str>> {
    Some(parse_coded(
        value,
        path,
        issues,
        "a gRPC code name or number 0 to 16",
        |text| GrpcCode::parse(text).map(GrpcCode::name),
    ))
}

/// Parses a list of signal names or numbers into canonical names.
pub fn parse_signal(value: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<Vec<String>> {
    Some(parse_coded(
        value,
        path,
        issues,
        "a signal name like SIGKILL or a number",
        |text| Signal::parse(text).map(|s| s.name().to_owned()),
    ))
}

fn parse_coded<T>(
    value: &Value,
    path: &str,
    issues: &mut Vec<Issue>,
    expected: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Vec<T> {
    let items: Vec<(String, &Value)> = match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (join_path(path, &format!("[{i}]")), v))
            .collect(),
        other => vec![(path.to_owned(), other)],
    };
    empty_list_check(items.is_empty(), path, issues);
    let mut out = Vec::new();
    for (item_path, item) in items {
        let text = match item {
            Value::String(s) => s.clone(),
            Value::Integer(n) => n.to_string(),
            _ => {
                issues.push(wrong_form(&item_path, expected));
                continue;
            }
        };
        match parse(&text) {
            Some(v) => out.push(v),
            None => issues.push(Issue::new(
                item_path,
                "unknown_value",
                format!("`{text}` is not {expected}"),
            )),
        }
    }
    out
}

/// Parses a string or a list of strings.
pub fn string_list(value: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<Vec<String>> {
    match value {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => out.push(s.clone()),
                    _ => issues.push(wrong_form(&join_path(path, &format!("[{i}]")), "a string")),
                }
            }
            empty_list_check(items.is_empty(), path, issues);
            Some(out)
        }
        _ => {
            issues.push(wrong_form(path, "a string or a list of strings"));
            None
        }
    }
}

/// Compiles a regex, or records why it cannot be.
pub fn regex_at(pattern: &str, path: &str, issues: &mut Vec<Issue>) -> Option<LazyRegex> {
    match LazyRegex::checked(pattern) {
        Ok(regex) => Some(regex),
        Err(error) => {
            issues.push(Issue::new(
                path,
                "bad_regex",
                format!("not a valid regex: {error}"),
            ));
            None
        }
    }
}

fn empty_list_check(empty: bool, path: &str, issues: &mut Vec<Issue>) {
    if empty {
        issues.push(Issue::new(
            path,
            "empty_list",
            "an empty list matches nothing",
        ));
    }
}

/// An issue for a value of the wrong form.
pub fn wrong_form(path: &str, expected: &str) -> Issue {
    Issue::new(path, "wrong_type", format!("expected {expected}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml_value(text: &str) -> Value {
        let table: toml::Table = format!("v = {text}").parse().unwrap();
        table["v"].clone()
    }

    #[test]
    fn number_forms() {
        let mut issues = Vec::new();
        let one = NumberMatch::parse(&toml_value("503"), "p", &mut issues).unwrap();
        let set = NumberMatch::parse(&toml_value("[502, 503]"), "p", &mut issues).unwrap();
        let range =
            NumberMatch::parse(&toml_value("{ min = 500, max = 599 }"), "p", &mut issues).unwrap();
        assert!(issues.is_empty());
        assert!(one.matches(503) && !one.matches(502));
        assert!(set.matches(502) && !set.matches(504));
        assert!(range.matches(500) && range.matches(599) && !range.matches(600));
        assert!(one.within(&set) && set.within(&range) && !range.within(&set));
    }

    #[test]
    fn bad_number_forms_name_their_paths() {
        let mut issues = Vec::new();
        NumberMatch::parse(
            &toml_value("{ min = 600, max = 500, step = 1 }"),
            "w",
            &mut issues,
        );
        NumberMatch::parse(&toml_value("[1, \"2\"]"), "x", &mut issues);
        let paths: Vec<_> = issues
            .iter()
            .map(|i| (i.path.as_str(), i.code.as_str()))
            .collect();
        assert_eq!(
            paths,
            [
                ("w.step", "unknown_key"),
                ("w", "empty_range"),
                ("x[1]", "wrong_type")
            ]
        );
    }

    #[test]
    fn text_forms_ignore_ascii_case() {
        let mut issues = Vec::new();
        let set = TextMatch::parse(&toml_value("[\"ECONNRESET\", \"EPIPE\"]"), "p", &mut issues);
        let prefix = TextMatch::parse(&toml_value("{ prefix = \"08\" }"), "p", &mut issues);
        let regex = TextMatch::parse(&toml_value("{ regex = \"^throttl\" }"), "p", &mut issues);
        assert!(issues.is_empty());
        assert!(set.unwrap().matches("econnreset"));
        assert!(prefix.unwrap().matches("08006"));
        assert!(regex.unwrap().matches("throttlingexception"));
    }

    #[test]
    fn a_bad_regex_is_an_issue_with_its_path() {
        let mut issues = Vec::new();
        TextMatch::parse(
            &toml_value("{ regex = \"(unclosed\" }"),
            "when.errno",
            &mut issues,
        );
        assert_eq!(issues[0].path, "when.errno.regex");
        assert_eq!(issues[0].code, "bad_regex");
    }

    #[test]
    fn grpc_and_signal_lists_are_canonical() {
        let mut issues = Vec::new();
        let codes = parse_grpc(&toml_value("[14, \"deadline_exceeded\"]"), "p", &mut issues);
        assert_eq!(codes.unwrap(), ["UNAVAILABLE", "DEADLINE_EXCEEDED"]);
        let signals = parse_signal(&toml_value("[9, \"TERM\"]"), "p", &mut issues);
        assert_eq!(signals.unwrap(), ["SIGKILL", "SIGTERM"]);
        parse_grpc(&toml_value("\"BUSY\""), "g", &mut issues);
        assert_eq!(issues[0].code, "unknown_value");
    }

    #[test]
    fn header_presence() {
        let mut issues = Vec::new();
        let present = HeaderMatch::parse(&toml_value("{ present = true }"), "p", &mut issues);
        let value = HeaderMatch::parse(&toml_value("\"false\""), "p", &mut issues);
        assert!(issues.is_empty());
        assert!(present.as_ref().unwrap().matches(Some("x")));
        assert!(!present.unwrap().matches(None));
        assert!(value.unwrap().matches(Some("FALSE")));
    }
}
