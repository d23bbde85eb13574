//! One reader for every TOML or JSON input a user writes — a request body, a report, a
//! config, a pack, a rules or strategies file: parse the text, check the keys, read the
//! value into a type. Every problem is an [`Issue`] with its path and a stable code, the
//! same code for the same problem in every input. (Reading the file is the caller's: the
//! core does no I/O.)

mod typed;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::issue::{Issue, join_path};

pub use typed::Problem;

/// The two formats users write, which name a map's entries differently: a TOML file has
/// keys, a JSON body has fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A config, pack, rules or strategies file.
    Toml,
    /// A request body, a report, a line of a trace.
    Json,
}

impl Format {
    /// The code of an entry this input does not know: `unknown_key` or `unknown_field`.
    pub fn unknown_code(self) -> &'static str {
        match self {
            Format::Toml => "unknown_key",
            Format::Json => "unknown_field",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Format::Toml => "key",
            Format::Json => "field",
        }
    }
}

/// Parses TOML text into a table; a syntax error is one `bad_toml` issue, with the line.
pub fn toml_table(text: &str) -> Result<toml::Table, Issue> {
    text.parse::<toml::Table>()
        .map_err(|e| Issue::new("", "bad_toml", e.to_string().trim_end().to_owned()))
}

/// Parses JSON text; a syntax error is one `bad_json` issue, with the line and column.
pub fn json_value(text: &str) -> Result<Value, Issue> {
    serde_json::from_str(text).map_err(|e| Issue::new("", "bad_json", e.to_string()))
}

/// The issue for one entry `key` at `path` that is not one of `expected` (a list in words).
pub fn unknown_key(path: &str, key: &str, expected: &str, format: Format) -> Issue {
    Issue::new(
        join_path(path, key),
        format.unknown_code(),
        format!(
            "unknown {} `{key}`; expected one of: {expected}",
            format.noun()
        ),
    )
}

/// One issue for each of `keys` (a map's, at `path`) that is not in `known`.
pub fn unknown_keys<'k>(
    keys: impl IntoIterator<Item = &'k String>,
    path: &str,
    known: &[&str],
    format: Format,
    issues: &mut Vec<Issue>,
) {
    let mut expected = None;
    for key in keys {
        if !known.contains(&key.as_str()) {
            let expected = expected.get_or_insert_with(|| known.join(", "));
            issues.push(unknown_key(path, key, expected, format));
        }
    }
}

/// Reads a JSON value into `T`, strictly. The plain read is the fast path; a value that fails
/// it is read again to find the first problem, told by its kind (an unknown entry, a missing
/// one, a wrong type or value) rather than by the words of its message.
///
/// # Errors
/// The first problem, with its path: `unknown_field` or `unknown_key` (by `format`),
/// `required` at the missing entry's own path, else `wrong_type`.
pub fn typed<T: DeserializeOwned>(value: &Value, format: Format) -> Result<T, Issue> {
    T::deserialize(value).map_err(|plain| typed::first_problem::<T>(value, format, &plain))
}

/// Reads a TOML table into `T`, strictly, as [`typed`] reads JSON.
///
/// # Errors
/// As [`typed`], with `unknown_key` for an entry `T` does not know.
pub fn typed_toml<T: DeserializeOwned>(table: &toml::Table) -> Result<T, Issue> {
    let value = serde_json::to_value(table)
        .map_err(|e| Issue::new("", "bad_toml", format!("cannot be read: {e}")))?;
    typed(&value, Format::Toml)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        name: String,
        #[serde(default)]
        inner: Option<Inner>,
        #[serde(default)]
        list: Vec<Inner>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, rename_all = "snake_case")]
    struct Inner {
        size: u32,
        #[serde(default)]
        kind: Option<Kind>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Small,
        Sized(u32),
    }

    fn problem(value: &Value, format: Format) -> (String, String, String) {
        let issue = typed::<Outer>(value, format).unwrap_err();
        (issue.path, issue.code, issue.message)
    }

    #[test]
    fn a_good_value_reads_as_serde_reads_it() {
        let value = json!({"name": "a", "inner": {"size": 2, "kind": {"sized": 3}},
                           "list": [{"size": 1, "kind": "small"}]});
        let read: Outer = typed(&value, Format::Json).unwrap();
        assert_eq!(read, serde_json::from_value(value).unwrap());
    }

    #[test]
    fn each_problem_has_its_code_and_path() {
        let (path, code, message) = problem(
            &json!({"name": "a", "inner": {"size": 1, "colour": 2}}),
            Format::Json,
        );
        assert_eq!(
            (path.as_str(), code.as_str()),
            ("inner.colour", "unknown_field")
        );
        assert_eq!(
            message,
            "unknown field `colour`; expected one of: size, kind"
        );
        let (path, code, _) = problem(&json!({"name": "a", "colour": 2}), Format::Toml);
        assert_eq!((path.as_str(), code.as_str()), ("colour", "unknown_key"));
        let (path, code, message) = problem(&json!({"name": "a", "list": [{}]}), Format::Json);
        assert_eq!((path.as_str(), code.as_str()), ("list[0].size", "required"));
        assert_eq!(message, "missing field `size`");
        let (path, code, message) = problem(
            &json!({"name": "a", "list": [{"size": "big"}]}),
            Format::Json,
        );
        assert_eq!(
            (path.as_str(), code.as_str()),
            ("list[0].size", "wrong_type")
        );
        assert!(message.contains("expected u32"), "{message}");
        let (path, code, _) = problem(
            &json!({"name": "a", "inner": {"size": 1, "kind": "huge"}}),
            Format::Json,
        );
        assert_eq!((path.as_str(), code.as_str()), ("inner.kind", "wrong_type"));
        let (path, code, _) = problem(&json!({"name": "a", "inner": {"size": -1}}), Format::Json);
        assert_eq!((path.as_str(), code.as_str()), ("inner.size", "wrong_type"));
    }

    #[test]
    fn a_toml_table_reads_with_key_words() {
        let table = toml_table("name = \"a\"\n[inner]\nsize = 1\nshape = 2\n").unwrap();
        let issue = typed_toml::<Outer>(&table).unwrap_err();
        assert_eq!(
            (issue.path.as_str(), issue.code.as_str()),
            ("inner.shape", "unknown_key")
        );
        assert_eq!(toml_table("name = ").unwrap_err().code, "bad_toml");
        assert_eq!(json_value("{").unwrap_err().code, "bad_json");
    }

    #[test]
    fn unknown_keys_lists_every_one_in_the_formats_words() {
        let map = json!({"a": 1, "b": 2, "c": 3});
        let mut issues = Vec::new();
        unknown_keys(
            map.as_object().unwrap().keys(),
            "top",
            &["a"],
            Format::Json,
            &mut issues,
        );
        let found: Vec<_> = issues
            .iter()
            .map(|i| (i.path.as_str(), i.code.as_str()))
            .collect();
        assert_eq!(
            found,
            [("top.b", "unknown_field"), ("top.c", "unknown_field")]
        );
        assert_eq!(issues[0].message, "unknown field `b`; expected one of: a");
        assert_eq!(
            unknown_key("", "x", "a, b", Format::Toml).message,
            "unknown key `x`; expected one of: a, b"
        );
    }
}
