//! Readers for one TOML table of a pack: each records what is wrong with its path and returns
//! what it could read, so the parse goes on and every issue is found.

use toml::{Table, Value};

use crate::classify::matcher::wrong_form;
use crate::input::{self, Format};
use crate::issue::{Issue, join_path};

/// One table of a pack, at its path.
pub(super) struct Reader<'a> {
    pub table: &'a Table,
    pub path: &'a str,
}

impl<'a> Reader<'a> {
    /// A reader that first reports every key not in `known`.
    pub fn new(table: &'a Table, path: &'a str, known: &[&str], issues: &mut Vec<Issue>) -> Self {
        input::unknown_keys(table.keys(), path, known, Format::Toml, issues);
        Reader { table, path }
    }

    /// The path of one of its keys.
    pub fn at(&self, key: &str) -> String {
        join_path(self.path, key)
    }

    /// Whether it has this key.
    pub fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// An optional non-empty string.
    pub fn string(&self, key: &str, issues: &mut Vec<Issue>) -> Option<String> {
        match self.table.get(key) {
            None => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(_) => {
                issues.push(wrong_form(&self.at(key), "a non-empty string"));
                None
            }
        }
    }

    /// A required non-empty string; empty when missing or wrong (already reported).
    pub fn required_string(&self, key: &str, issues: &mut Vec<Issue>) -> String {
        if !self.has(key) {
            issues.push(missing(&self.at(key)));
        }
        self.string(key, issues).unwrap_or_default()
    }

    /// An optional boolean.
    pub fn bool(&self, key: &str, issues: &mut Vec<Issue>) -> Option<bool> {
        match self.table.get(key) {
            None => None,
            Some(Value::Boolean(b)) => Some(*b),
            Some(_) => {
                issues.push(wrong_form(&self.at(key), "true or false"));
                None
            }
        }
    }

    /// An optional whole number of at least `min`, that fits a `u32`.
    pub fn count(&self, key: &str, min: u32, issues: &mut Vec<Issue>) -> Option<u32> {
        match self.table.get(key) {
            None => None,
            Some(Value::Integer(n)) => match u32::try_from(*n) {
                Ok(n) if n >= min => Some(n),
                _ => {
                    issues.push(Issue::new(
                        self.at(key),
                        "out_of_range",
                        format!("{n} is out of range; expected a whole number from {min}"),
                    ));
                    None
                }
            },
            Some(_) => {
                issues.push(wrong_form(&self.at(key), "a whole number"));
                None
            }
        }
    }

    /// An optional list of non-empty strings.
    pub fn strings(&self, key: &str, issues: &mut Vec<Issue>) -> Option<Vec<String>> {
        let value = self.table.get(key)?;
        strings_at(value, &self.at(key), issues)
    }

    /// An optional table.
    pub fn table(&self, key: &str, issues: &mut Vec<Issue>) -> Option<&'a Table> {
        match self.table.get(key) {
            None => None,
            Some(Value::Table(t)) => Some(t),
            Some(_) => {
                issues.push(wrong_form(&self.at(key), "a table"));
                None
            }
        }
    }

    /// A required table.
    pub fn required_table(&self, key: &str, issues: &mut Vec<Issue>) -> Option<&'a Table> {
        if !self.has(key) {
            issues.push(missing(&self.at(key)));
        }
        self.table(key, issues)
    }

    /// An optional array of tables (`[[key]]`): each table with its index.
    pub fn tables(&self, key: &str, issues: &mut Vec<Issue>) -> Vec<(usize, &'a Table)> {
        match self.table.get(key) {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    if let Value::Table(t) = item {
                        Some((i, t))
                    } else {
                        issues.push(wrong_form(&self.at(&format!("{key}[{i}]")), "a table"));
                        None
                    }
                })
                .collect(),
            Some(_) => {
                issues.push(wrong_form(
                    &self.at(key),
                    &format!("an array of tables ([[{key}]])"),
                ));
                Vec::new()
            }
        }
    }
}

/// A list of non-empty strings at `path`; `None` when it is not a list.
pub(super) fn strings_at(
    value: &Value,
    path: &str,
    issues: &mut Vec<Issue>,
) -> Option<Vec<String>> {
    let Value::Array(items) = value else {
        issues.push(wrong_form(path, "a list of strings"));
        return None;
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
            _ => issues.push(wrong_form(&format!("{path}[{i}]"), "a non-empty string")),
        }
    }
    Some(out)
}

/// An issue for a required key that is absent.
pub(super) fn missing(path: &str) -> Issue {
    Issue::new(path, "missing", "this key is required")
}
