//! How results and refusals are written: JSON for machines, text for people.

use std::io::{self, Write};

use backstop_core::{Classification, Issue};
use serde_json::json;

/// The one refusal shape: `{"error": {"code", "message", "issues": [...]}}`.
pub fn refusal(code: &str, message: &str, issues: &[Issue]) -> serde_json::Value {
    json!({"error": {"code": code, "message": message, "issues": issues}})
}

/// Writes issues for a person, one per line, under a heading.
pub fn issues_human(out: &mut impl Write, heading: &str, issues: &[Issue]) -> io::Result<()> {
    writeln!(out, "{heading}")?;
    for issue in issues {
        // A message of several lines (a regex error points at its column) stays indented
        // under its issue, so it cannot be read as another issue.
        let text = issue.to_string();
        let mut lines = text.lines();
        writeln!(out, "  {}", lines.next().unwrap_or_default())?;
        for line in lines {
            writeln!(out, "      {line}")?;
        }
    }
    Ok(())
}

/// Writes one JSON value and a newline.
pub fn json_line(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}

/// Writes a classification for a person.
pub fn classification_human(out: &mut impl Write, c: &Classification) -> io::Result<()> {
    let retry = if c.retryable {
        "retryable"
    } else {
        "not retryable"
    };
    let fallback = if c.fallback_allowed {
        "fallback allowed"
    } else {
        "no fallback"
    };
    write!(out, "{}  ({retry}, {fallback})", c.class)?;
    match &c.rule {
        Some(rule) => writeln!(out, "  rule {rule}")?,
        None => writeln!(out)?,
    }
    writeln!(out, "  reason: {}", c.reason)?;
    if let Some(ms) = c.retry_after_ms {
        writeln!(out, "  retry after: {ms} ms")?;
    }
    if !c.evidence.is_empty() {
        writeln!(out, "  evidence:")?;
        for e in &c.evidence {
            write!(out, "    {} = {}", e.field, e.value)?;
            if let Some(rule) = &e.rule {
                write!(out, "  [{rule}]")?;
            }
            if let Some(note) = &e.note {
                write!(out, "  ({note})")?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}
