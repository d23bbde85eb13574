//! How results and refusals are written: JSON for machines, text for people.
//!
//! - `ledger`: review items and cases for a person (`review list|show`, `cases show`)
//! - `decision`: a case's result for a person (`decide`)

use std::fmt::Write as _;
use std::io::{self, Write};

use backstop_core::case::Refusal;
use backstop_core::recover::Step;
use backstop_core::recover::strategy::human_ms;
use backstop_core::{Classification, Issue};
use jiff::Timestamp;

use crate::commands::EXIT_BAD_INPUT;
use crate::settings::{OutputMode, ReportSource};
use serde_json::json;

mod decision;
mod ledger;

pub use decision::decision_human;
pub use ledger::{case_human, review_human, reviews_human};

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

/// A refused command: the issues as one JSON refusal on stdout, or for a person on stderr.
pub fn refuse_command(
    mode: OutputMode,
    issues: &[Issue],
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    match mode {
        OutputMode::Json => {
            json_line(
                out,
                &refusal("malformed", "the command was refused", issues),
            )?;
        }
        OutputMode::Human => issues_human(err, "the command was refused:", issues)?,
    }
    Ok(EXIT_BAD_INPUT)
}

/// A refusal (`unknown_case`, `malformed`, `decision_not_allowed`, ...): as JSON on stdout, or
/// for a person on stderr (its code, message and every issue). The exit code is the one the
/// refusal's code has in every command: see [`crate::commands::exit_for_status`].
pub fn refuse(
    mode: OutputMode,
    refusal: &Refusal,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    match mode {
        OutputMode::Json => json_line(out, refusal)?,
        OutputMode::Human => {
            let body = &refusal.error;
            let heading = format!("refused ({}): {}", body.code.as_str(), body.message);
            if body.issues.is_empty() {
                writeln!(err, "{heading}")?;
            } else {
                issues_human(err, &heading, &body.issues)?;
            }
        }
    }
    Ok(crate::commands::exit_for_status(
        refusal.error.code.status(),
    ))
}

/// A command's result: one line of JSON, or for a person, each field on a line of its own
/// (nested ones indented). Exit 0.
pub fn result(
    mode: OutputMode,
    out: &mut impl Write,
    value: &impl serde::Serialize,
) -> io::Result<u8> {
    match mode {
        OutputMode::Json => json_line(out, value)?,
        OutputMode::Human => value_human(out, &serde_json::to_value(value)?, "")?,
    }
    Ok(crate::commands::EXIT_OK)
}

/// A JSON value for a person: `key: value` lines, a nested object or list under its key,
/// indented; `null` and empty lists read `none`.
pub fn value_human(
    out: &mut impl Write,
    value: &serde_json::Value,
    indent: &str,
) -> io::Result<()> {
    use serde_json::Value;
    let scalar = |v: &Value| match v {
        Value::Null => Some("none".to_owned()),
        Value::String(s) => Some(s.clone()),
        Value::Array(items) if items.is_empty() => Some("none".to_owned()),
        Value::Object(fields) if fields.is_empty() => Some("none".to_owned()),
        Value::Array(_) | Value::Object(_) => None,
        other => Some(other.to_string()),
    };
    let deeper = format!("{indent}  ");
    match value {
        Value::Object(fields) => {
            for (key, v) in fields {
                if let Some(text) = scalar(v) {
                    writeln!(out, "{indent}{key}: {text}")?;
                } else {
                    writeln!(out, "{indent}{key}:")?;
                    value_human(out, v, &deeper)?;
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                if let Some(text) = scalar(item) {
                    writeln!(out, "{indent}- {text}")?;
                } else {
                    writeln!(out, "{indent}-")?;
                    value_human(out, item, &deeper)?;
                }
            }
        }
        other => writeln!(out, "{indent}{}", scalar(other).unwrap_or_default())?,
    }
    Ok(())
}

/// Writes a refusal the service answered with HTTP `status` for a person: its code and
/// message, then each issue with its path.
pub fn refusal_human(
    err: &mut impl Write,
    status: u16,
    body: &serde_json::Value,
) -> io::Result<()> {
    let error = &body["error"];
    let (Some(code), Some(message)) = (error["code"].as_str(), error["message"].as_str()) else {
        return writeln!(err, "refused (HTTP {status}): {body}");
    };
    writeln!(err, "refused ({code}, HTTP {status}): {message}")?;
    let issues: Vec<Issue> = error
        .get("issues")
        .and_then(|issues| serde_json::from_value(issues.clone()).ok())
        .unwrap_or_default();
    for issue in &issues {
        writeln!(err, "  {issue}")?;
    }
    Ok(())
}

/// Writes rows under a heading, each column as wide as its widest cell and two spaces apart;
/// the last column is not padded. Each line starts with `indent`.
pub fn table(
    out: &mut impl Write,
    indent: &str,
    heading: &[&str],
    rows: &[Vec<String>],
) -> io::Result<()> {
    let heading: Vec<String> = heading.iter().map(|&h| h.to_owned()).collect();
    let mut widths: Vec<usize> = heading.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&heading).chain(rows) {
        let mut text = indent.to_owned();
        for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if i + 1 == row.len() {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<width$}  ");
            }
        }
        writeln!(out, "{}", text.trim_end())?;
    }
    Ok(())
}

/// A time to the second, in UTC.
pub fn short_time(at: Timestamp) -> String {
    at.strftime("%Y-%m-%d %H:%M:%SZ").to_string()
}

/// How long before `now` `at` was, in its largest whole unit: `45s`, `12m`, `3h`, `2d`
/// (hours up to two days); a time after `now` is `0s`.
pub fn age(at: Timestamp, now: Timestamp) -> String {
    let seconds = now.duration_since(at).as_secs().max(0);
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3_600 => format!("{}m", s / 60),
        s if s < 48 * 3_600 => format!("{}h", s / 3_600),
        s => format!("{}d", s / 86_400),
    }
}

/// What to say before waiting on stdin for a report: something only when stdin is a terminal
/// and the report comes from there (not from flags).
pub fn stdin_notice(source: &ReportSource, terminal: bool) -> Option<&'static str> {
    match (source, terminal) {
        (ReportSource::Stdin, true) => Some(
            "backstop: reading one JSON report from stdin (end it with Ctrl-D), or give report \
             flags instead: see --help",
        ),
        (ReportSource::Lines, true) => {
            Some("backstop: reading JSON reports from stdin, one per line (end with Ctrl-D)")
        }
        _ => None,
    }
}

/// What to say before waiting on stdin for `what` (`the JSON request`, `the key`): something
/// only when stdin is a terminal.
pub fn stdin_wait_notice(what: &str, terminal: bool) -> Option<String> {
    terminal.then(|| format!("backstop: reading {what} from stdin (end it with Ctrl-D)"))
}

/// Writes a step for a person.
pub fn step_human(out: &mut impl Write, step: &Step) -> io::Result<()> {
    let when = match (step.defer_until, step.delay_ms) {
        (Some(until), _) => format!(" (park the task until {until})"),
        (None, 0) => String::new(),
        (None, ms) => format!(" after {}", human_ms(ms)),
    };
    let a = step.attempts;
    // A class with only stop or escalate has no attempts to count.
    let class_count = if a.class_max == 0 {
        String::new()
    } else {
        format!("class {}/{}, ", a.class_used, a.class_max)
    };
    writeln!(
        out,
        "{}{when}  ({}; {class_count}task {}/{})",
        step.action.as_str(),
        step.class,
        a.task_used,
        a.task_max
    )?;
    writeln!(out, "  hint: {}", step.hint)?;
    if !step.explanation.is_empty() {
        writeln!(out, "  why: {}", step.explanation)?;
    }
    writeln!(out, "  reason: {}", step.reason)?;
    if let Some(breaker) = &step.breaker {
        let state = breaker.state.as_str();
        if breaker.calls == 0 {
            writeln!(out, "  breaker: {state}, no calls counted yet")?;
        } else {
            writeln!(
                out,
                "  breaker: {state}, {} of the last {} calls failed",
                breaker.failures, breaker.calls
            )?;
        }
    }
    if let Some(budget) = &step.budget {
        writeln!(
            out,
            "  retry budget: {:.1} of {:.0} retries banked",
            budget.tokens, budget.capacity
        )?;
    }
    if let Some(escalation) = &step.escalation {
        writeln!(out, "  escalate to: {}", escalation.to)?;
    }
    Ok(())
}

/// Writes a job's brief for a person.
pub fn brief_human(out: &mut impl Write, brief: &backstop_core::pack::JobBrief) -> io::Result<()> {
    writeln!(out, "{} — {}", brief.job, brief.title)?;
    writeln!(
        out,
        "\nThe case ({} identity, compared {}): {}",
        brief.identity.mode, brief.identity.match_rule, brief.identity.how
    )?;
    writeln!(out, "\nQuestions:")?;
    for q in &brief.questions {
        let need = if q.required { "required" } else { "optional" };
        writeln!(out, "  {} ({need}, {}): {}", q.key, q.judge, q.text)?;
        for a in &q.answers {
            writeln!(out, "    - {}: {}", a.value, a.means)?;
        }
        writeln!(out, "    send: {}", q.fix)?;
        writeln!(out, "    look in: {}", q.where_to_look)?;
        if let Some(unknown) = &q.on_unknown {
            writeln!(out, "    `unknown`: {unknown}")?;
        }
    }
    if !brief.related.is_empty() {
        writeln!(out, "\nRelated records:")?;
        for r in &brief.related {
            let need = if r.required { "required" } else { "optional" };
            writeln!(out, "  {} ({need}): send related.{}.id", r.kind, r.kind)?;
        }
    }
    if !brief.required_fields.is_empty() {
        writeln!(
            out,
            "\nEvery request also sends: {}",
            brief.required_fields.join(", ")
        )?;
    }
    writeln!(
        out,
        "\nAttempts: {} per {} (one more when an attempt shows progress); then {}",
        brief.attempts.max, brief.attempts.window, brief.attempts.escalate
    )?;
    writeln!(
        out,
        "While unresolved: {} (escalation {})",
        brief.unresolved.next_step, brief.unresolved.escalate
    )?;
    writeln!(out, "\nOutcomes:")?;
    for o in &brief.outcomes {
        writeln!(out, "  {} ({}): {}", o.id, o.kind, o.next_step)?;
    }
    writeln!(out, "\nEscalations:")?;
    for e in &brief.escalations {
        writeln!(
            out,
            "  {} → {}: {} Next: {}",
            e.id, e.to, e.why, e.next_step
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_is_announced_only_on_a_terminal_and_only_when_it_is_read() {
        let notice = stdin_notice(&ReportSource::Stdin, true).unwrap();
        assert!(
            notice.contains("reading one JSON report from stdin"),
            "{notice}"
        );
        assert!(
            stdin_notice(&ReportSource::Lines, true)
                .unwrap()
                .contains("one per line")
        );
        assert_eq!(stdin_notice(&ReportSource::Stdin, false), None);
        assert_eq!(stdin_notice(&ReportSource::Lines, false), None);
        let flags = ReportSource::Flags(Box::default());
        assert_eq!(stdin_notice(&flags, true), None);
        // decide, dispatch, key and hash-key say what they wait for, on a terminal only.
        let waiting = stdin_wait_notice("the JSON request", true).unwrap();
        assert!(
            waiting.contains("reading the JSON request from stdin"),
            "{waiting}"
        );
        assert_eq!(stdin_wait_notice("the JSON request", false), None);
    }

    #[test]
    fn a_result_for_a_person_is_a_field_a_line_nested_under_its_key() {
        let value = serde_json::json!({
            "batch_key": "bk_1",
            "recipients": [{"recipient": "r1", "key": "dk_1"}],
            "none": null,
            "empty": [],
        });
        let mut out = Vec::new();
        value_human(&mut out, &value, "").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "batch_key: bk_1\nempty: none\nnone: none\nrecipients:\n  -\n    key: dk_1\n    recipient: r1\n"
        );
    }
}
