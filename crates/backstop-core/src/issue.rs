//! One problem found in an input, with the path to where it is.
//!
//! Validators collect every issue they find and return them all; nothing is decided on input
//! that has any.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A problem at one place in an input (a report, a rule file, a pack).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Issue {
    /// Where: a dotted path into the input (`rules[3].when.message`), or `""` for the whole.
    pub path: String,
    /// What kind of problem, stable for machines (`unknown_field`, `bad_regex`).
    pub code: String,
    /// What was wrong and what would be accepted, for people.
    pub message: String,
}

impl Issue {
    /// An issue at `path` with a machine `code` and a human `message`.
    pub fn new(path: impl Into<String>, code: &str, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

impl Issue {
    /// The same issue found in the file (or flag) `origin`: its path becomes
    /// `origin: path`, or `origin` for an issue about the whole file.
    #[must_use]
    pub fn within(self, origin: &str) -> Issue {
        let path = if self.path.is_empty() {
            origin.to_owned()
        } else {
            format!("{origin}: {}", self.path)
        };
        Issue { path, ..self }
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{} ({})", self.message, self.code)
        } else {
            write!(f, "{}: {} ({})", self.path, self.message, self.code)
        }
    }
}

/// A list of issues, shown one per line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Issues(pub Vec<Issue>);

impl fmt::Display for Issues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{issue}")?;
        }
        Ok(())
    }
}

/// The longest name (a task, a tool, a caller) any surface accepts.
pub const MAX_NAME_CHARS: usize = 200;

/// Checks a name is 1 to [`MAX_NAME_CHARS`] characters and not blank; otherwise records an
/// issue at `path` with `code`, naming the kind of name (`a task id`). Returns whether it was.
pub fn check_name(name: &str, path: &str, code: &str, noun: &str, issues: &mut Vec<Issue>) -> bool {
    let fits = !name.trim().is_empty() && name.chars().count() <= MAX_NAME_CHARS;
    if !fits {
        issues.push(Issue::new(
            path,
            code,
            format!("{noun} is 1 to {MAX_NAME_CHARS} characters, not blank"),
        ));
    }
    fits
}

/// The longest id or short label a request may send: an execution id, a related record's id,
/// a source status, a review decision.
pub const MAX_ID_CHARS: usize = 200;
/// The longest excerpt `source` or `locator` (a URL, a file path with a line range).
pub const MAX_LOCATOR_CHARS: usize = 2_000;
/// The longest string answering a value question.
pub const MAX_VALUE_CHARS: usize = 1_000;
/// The longest free text a person or an agent adds: a review note, a recover context's error.
pub const MAX_NOTE_CHARS: usize = 4_000;
/// The longest header value a report may carry.
pub const MAX_HEADER_VALUE_CHARS: usize = 8_192;

/// Checks an id: not blank, at most [`MAX_ID_CHARS`] characters, no control characters (an id
/// ends up in logs, metric labels and other ledgers). Records an issue at `path` naming it
/// with `noun` (`` `execution_id` ``); returns whether it was good.
pub fn check_id(id: &str, path: &str, noun: &str, issues: &mut Vec<Issue>) -> bool {
    let problem = if id.trim().is_empty() {
        Some(("empty", format!("{noun} must not be blank")))
    } else if id.len() > MAX_ID_CHARS && id.chars().count() > MAX_ID_CHARS {
        Some((
            "too_long",
            format!("{noun} may have at most {MAX_ID_CHARS} characters"),
        ))
    } else if id.chars().any(char::is_control) {
        Some((
            "bad_characters",
            format!("{noun} may not hold control characters"),
        ))
    } else {
        None
    };
    let good = problem.is_none();
    if let Some((code, message)) = problem {
        issues.push(Issue::new(path, code, message));
    }
    good
}

/// Checks `text` has at most `max` characters; otherwise records a `too_long` issue at
/// `path`. Returns whether it fit.
pub fn check_length(text: &str, path: &str, max: usize, issues: &mut Vec<Issue>) -> bool {
    // A byte count within the cap is a character count within it: the common case is cheap.
    if text.len() <= max {
        return true;
    }
    let chars = text.chars().count();
    if chars > max {
        issues.push(Issue::new(
            path,
            "too_long",
            format!("at most {max} characters here; {chars} were sent"),
        ));
    }
    chars <= max
}

/// Appends a path segment: a field name after a dot, or an index in brackets.
pub fn join_path(base: &str, segment: &str) -> String {
    if segment.is_empty() {
        base.to_owned()
    } else if base.is_empty() {
        segment.to_owned()
    } else if segment.starts_with('[') {
        format!("{base}{segment}")
    } else {
        format!("{base}.{segment}")
    }
}

/// Turns a `serde_path_to_error` path into this crate's path style (`rules[2].when`).
pub fn serde_path(path: &serde_path_to_error::Path) -> String {
    let text = path.to_string();
    // `.` is the root and `?` an unknown place (a syntax error before any field).
    if text == "." || text == "?" {
        String::new()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_fields_and_indexes() {
        assert_eq!(join_path("", "rules"), "rules");
        assert_eq!(join_path("rules", "[2]"), "rules[2]");
        assert_eq!(join_path("rules[2]", "when"), "rules[2].when");
        assert_eq!(join_path("report", ""), "report");
    }

    #[test]
    fn display_puts_the_path_first() {
        let issue = Issue::new("when.http_status", "out_of_range", "must be 100 to 599");
        assert_eq!(
            issue.to_string(),
            "when.http_status: must be 100 to 599 (out_of_range)"
        );
    }
}
