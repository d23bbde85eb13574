//! Review items and cases for a person: what an operator working the queue reads. Ids, names,
//! times, sources and locators only: excerpt text is never kept, so never shown.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use backstop_core::Issue;
use backstop_core::case::{Citation, Next};
use backstop_core::pack::IdentityMode;
use backstop_store::{CaseRecord, ResolvedBy, ReviewItem};
use jiff::Timestamp;

use super::{age, short_time, table};

/// A missing value in a table cell.
const NONE: &str = "-";

/// One row per review item, then a count per lane; a sentence when there are none. `status`
/// is the word the listing was filtered by (`open `, `resolved `, or empty), `limit` its cap.
pub fn reviews_human(
    out: &mut impl Write,
    items: &[ReviewItem],
    status: &str,
    limit: u32,
    now: Timestamp,
) -> io::Result<()> {
    if items.is_empty() {
        return writeln!(out, "no {status}review items");
    }
    let resolved = items.iter().any(|item| item.resolution.is_some());
    let mut heading = vec![
        "ID",
        "KIND",
        "JOB",
        "CASE/TASK",
        "LANE",
        "ESCALATION",
        "CALLER",
        "AGE",
    ];
    if resolved {
        heading.push("RESOLVED");
    }
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|item| {
            let mut row = vec![
                item.id.to_string(),
                item.kind.clone(),
                or_none(&item.job),
                item.case_id.clone(),
                item.lane.clone(),
                escalation(item),
                item.caller.clone(),
                age(item.opened_at, now),
            ];
            if resolved {
                row.push(item.resolution.as_ref().map_or("open".to_owned(), decided));
            }
            row
        })
        .collect();
    table(out, "", &heading, &rows)?;
    let mut lanes: BTreeMap<&str, usize> = BTreeMap::new();
    for item in items {
        *lanes.entry(item.lane.as_str()).or_default() += 1;
    }
    let counts: Vec<String> = lanes
        .iter()
        .map(|(lane, n)| format!("{lane} {n}"))
        .collect();
    let noun = if items.len() == 1 { "item" } else { "items" };
    writeln!(
        out,
        "\n{} {status}{noun}: {}",
        items.len(),
        counts.join(", ")
    )?;
    if u32::try_from(items.len()).is_ok_and(|n| n >= limit) {
        writeln!(out, "(the newest {limit}; --limit shows more)")?;
    }
    Ok(())
}

/// Every field of one review item, and for an open one the decisions it may be resolved with
/// (`allowed`: the list, or why it cannot be had).
pub fn review_human(
    out: &mut impl Write,
    item: &ReviewItem,
    allowed: Option<&Result<Vec<String>, Vec<Issue>>>,
    now: Timestamp,
) -> io::Result<()> {
    let state = if item.resolution.is_some() {
        "resolved"
    } else {
        "open"
    };
    writeln!(out, "review item {} ({}), {state}", item.id, item.kind)?;
    let mut fields: Vec<(&str, Vec<String>)> = Vec::new();
    if let Some(task) = &item.task {
        fields.push(("task", vec![task.task.clone()]));
        fields.push(("caller", vec![item.caller.clone()]));
        fields.push((
            "tool",
            vec![task.tool.clone().unwrap_or_else(|| NONE.into())],
        ));
        fields.push(("class", vec![task.class.clone()]));
    } else {
        fields.push(("job", vec![or_none(&item.job)]));
        fields.push(("case", vec![item.case_id.clone()]));
        fields.push(("caller", vec![item.caller.clone()]));
        fields.push(("lane", vec![item.lane.clone()]));
        fields.push(("lane retry", vec![lane_retry(item).to_owned()]));
    }
    fields.push(("escalation", vec![escalation(item)]));
    fields.push(("reason", vec![item.reason.clone()]));
    fields.push((
        "opened",
        vec![format!(
            "{} ({} ago)",
            short_time(item.opened_at),
            age(item.opened_at, now)
        )],
    ));
    if let Some(task) = &item.task {
        fields.push(("evidence", evidence(&task.evidence)));
    }
    match (&item.resolution, allowed) {
        (Some(done), _) => {
            fields.push((
                "resolved",
                vec![format!("{} at {}", decided(done), short_time(done.at))],
            ));
            if let Some(note) = &done.note {
                fields.push(("note", vec![note.clone()]));
            }
        }
        (None, Some(Ok(allowed))) => fields.push(("resolve with", vec![allowed.join(", ")])),
        (None, Some(Err(issues))) => {
            let mut lines = vec!["cannot be listed without the job's pack:".to_owned()];
            lines.extend(issues.iter().map(ToString::to_string));
            fields.push(("resolve with", lines));
        }
        (None, None) => {}
    }
    let width = fields.iter().map(|(key, _)| key.len()).max().unwrap_or(0);
    for (key, lines) in &fields {
        let mut lines = lines.iter();
        writeln!(
            out,
            "  {key:<width$}  {}",
            lines.next().map_or(NONE, String::as_str)
        )?;
        for line in lines {
            writeln!(out, "  {:<width$}  {line}", "")?;
        }
    }
    Ok(())
}

/// The case, its attempts as a timeline (with the answers and the sources and locators each
/// cited), and its review items. `mode` is how its job's pack names cases, when the pack was
/// found.
pub fn case_human(
    out: &mut impl Write,
    case: &CaseRecord,
    mode: Option<IdentityMode>,
) -> io::Result<()> {
    let named = match (case.issued, mode) {
        (true, _) => "id issued by backstop",
        (false, Some(IdentityMode::Fields)) => "id made from its fields",
        (false, Some(IdentityMode::Content)) => "id made from its excerpts' text",
        (false, Some(IdentityMode::Id | IdentityMode::Issued)) => "id given by the caller",
        (false, None) => "id given by the caller, or made by its job's pack (not found here)",
    };
    writeln!(
        out,
        "case {} (job {}, caller {})",
        case.id, case.job, case.caller
    )?;
    // Cycles count from 0: rows of an earlier cycle are shown as ended, not as current.
    let cycles = match case.cycle {
        0 => "current cycle 0".to_owned(),
        1 => "cycle 0 ended; current cycle 1".to_owned(),
        n => format!("cycles 0 to {} ended; current cycle {n}", n - 1),
    };
    writeln!(
        out,
        "  opened {}; {named}; {cycles} (a decision or a resolved review ends one)",
        short_time(case.opened_at),
    )?;
    writeln!(out)?;
    if case.attempts.is_empty() {
        writeln!(
            out,
            "attempts: none kept (none made yet, or purged past retention)"
        )?;
    } else {
        writeln!(out, "attempts, oldest first:")?;
        let rows: Vec<Vec<String>> = case
            .attempts
            .iter()
            .map(|attempt| {
                let record = &attempt.record;
                vec![
                    attempt.cycle.to_string(),
                    record.number.to_string(),
                    short_time(record.at),
                    record.status.as_str().to_owned(),
                    record.outcome.clone().unwrap_or_else(|| NONE.into()),
                    next(record.next),
                    if record.progress { "yes" } else { "no" }.to_owned(),
                    record.execution_id.clone(),
                    answers(&attempt.answers),
                    cited(&record.cited),
                ]
            })
            .collect();
        let heading = [
            "CYCLE",
            "#",
            "TIME",
            "STATUS",
            "OUTCOME",
            "NEXT",
            "PROGRESS",
            "EXECUTION",
            "ANSWERS",
            "CITED",
        ];
        table(out, "  ", &heading, &rows)?;
    }
    writeln!(out)?;
    if case.reviews.is_empty() {
        return writeln!(out, "review items: none");
    }
    writeln!(out, "review items, newest first:")?;
    let rows: Vec<Vec<String>> = case
        .reviews
        .iter()
        .map(|item| {
            vec![
                item.id.to_string(),
                item.lane.clone(),
                escalation(item),
                short_time(item.opened_at),
                item.resolution.as_ref().map_or("open".to_owned(), decided),
            ]
        })
        .collect();
    let heading = ["ID", "LANE", "ESCALATION", "OPENED", "RESOLUTION"];
    table(out, "  ", &heading, &rows)
}

/// The escalation an item carries, and who a task's goes to: `privacy-team`, `→ oncall`.
fn escalation(item: &ReviewItem) -> String {
    match &item.task {
        Some(task) if task.to == item.escalation => format!("→ {}", task.to),
        Some(task) => format!("{} → {}", item.escalation, task.to),
        None => item.escalation.clone(),
    }
}

/// How an item was resolved: `approve by dana`.
fn decided(done: &ResolvedBy) -> String {
    format!("{} by {}", done.decision, done.by)
}

/// Whether a lane lets the agent gather more and ask once more, and whether it did.
fn lane_retry(item: &ReviewItem) -> &'static str {
    match (item.retry_allowed, item.retry_used) {
        (false, _) => "none (the lane does not allow one)",
        (true, false) => "allowed once, not used",
        (true, true) => "used",
    }
}

/// What the agent was told next.
fn next(next: Option<Next>) -> String {
    match next {
        Some(Next::Retry) => "retry",
        Some(Next::Escalate) => "escalate",
        None => NONE,
    }
    .to_owned()
}

/// The answer each question got: `data_access=pii, subprocessors=none`.
fn answers(answers: &BTreeMap<String, String>) -> String {
    if answers.is_empty() {
        return NONE.to_owned();
    }
    answers
        .iter()
        .map(|(question, answer)| format!("{question}={answer}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The sources an attempt cited, each with its locators: `dpa.pdf §4.2, annex 3; crm acct-991`.
fn cited(cited: &[Citation]) -> String {
    if cited.is_empty() {
        return NONE.to_owned();
    }
    let mut sources: Vec<(&str, Vec<&str>)> = Vec::new();
    for citation in cited {
        let locator = citation.locator.as_str();
        match sources.iter_mut().find(|(s, _)| *s == citation.source) {
            Some((_, locators)) if locators.contains(&locator) => {}
            Some((_, locators)) => locators.push(locator),
            None => sources.push((&citation.source, vec![locator])),
        }
    }
    sources
        .iter()
        .map(|(source, locators)| format!("{source} {}", locators.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A classification's evidence, one line each: `http_status = 503  [rule]  (note)`; anything
/// else as compact JSON.
fn evidence(evidence: &serde_json::Value) -> Vec<String> {
    let entries = match evidence {
        serde_json::Value::Array(entries) if !entries.is_empty() => entries,
        serde_json::Value::Array(_) | serde_json::Value::Null => return vec![NONE.to_owned()],
        other => return vec![other.to_string()],
    };
    entries
        .iter()
        .map(|entry| match (entry.get("field"), entry.get("value")) {
            (Some(serde_json::Value::String(field)), Some(value)) => {
                let value = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                let mut line = format!("{field} = {value}");
                if let Some(rule) = entry.get("rule").and_then(serde_json::Value::as_str) {
                    let _ = write!(line, "  [{rule}]");
                }
                if let Some(note) = entry.get("note").and_then(serde_json::Value::as_str) {
                    let _ = write!(line, "  ({note})");
                }
                line
            }
            _ => entry.to_string(),
        })
        .collect()
}

/// A text, or `-` when it is empty.
fn or_none(text: &str) -> String {
    if text.is_empty() {
        NONE.to_owned()
    } else {
        text.to_owned()
    }
}
