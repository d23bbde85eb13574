//! `backstop hint`: classify a failure, count the attempt, print the next step.

use std::io::{self, BufRead, Write};

use backstop_core::classify::classify;
use backstop_core::recover::{Context, Recovery, RecoveryOptions};
use backstop_core::{Issue, Report, input};
use jiff::Timestamp;
use serde::Deserialize;
use serde_json::json;

use super::hint_counted::{self, Answer, Counted};
use super::{EXIT_BAD_INPUT, EXIT_ISSUES, EXIT_OK};
use crate::output;
use crate::settings::{HintSettings, OutputMode, ReportSource, check_task};

/// One line of a `--jsonl` trace, in its envelope form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    report: serde_json::Value,
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    at: Option<Timestamp>,
    #[serde(default)]
    context: Option<Context>,
}

/// Runs `hint`.
pub fn run(
    settings: &HintSettings,
    input: &mut impl BufRead,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let counted = match &settings.counter {
        Some(counter) => match Counted::open(counter, err)? {
            Some(open) => Some(open),
            None => return Ok(EXIT_ISSUES),
        },
        None => None,
    };
    let mut recovery = Recovery::new(
        settings.table.clone(),
        RecoveryOptions {
            seed: settings.seed,
        },
    );
    let report = match &settings.source {
        ReportSource::Lines => {
            return stream(settings, &mut recovery, counted.as_ref(), input, out, err);
        }
        ReportSource::Flags(report) => (**report).clone(),
        ReportSource::Stdin => {
            let mut text = String::new();
            input.read_to_string(&mut text)?;
            let parsed = if text.trim().is_empty() {
                Err(vec![Issue::new(
                    "stdin",
                    "empty_input",
                    "no report: give report flags (see --help) or one JSON report on stdin",
                )])
            } else {
                Report::from_json(&text)
            };
            match parsed {
                Ok(report) => report,
                Err(issues) => {
                    match settings.output {
                        OutputMode::Json => output::json_line(
                            out,
                            &output::refusal("malformed", "the report was refused", &issues),
                        )?,
                        OutputMode::Human => {
                            output::issues_human(err, "the report was refused:", &issues)?;
                        }
                    }
                    return Ok(EXIT_BAD_INPUT);
                }
            }
        }
    };
    let ctx = context_of(&report, None);
    // clap requires --task unless --jsonl.
    let task = settings.task.as_deref().unwrap_or_default();
    if let Some(counted) = &counted {
        let answer = counted.step(task, &report, &ctx);
        return hint_counted::print(&answer, settings.output, out, err);
    }
    let failure = classify(&settings.rules, &report, settings.now);
    let step = recovery.next(task, &failure, &ctx, settings.now);
    match settings.output {
        OutputMode::Json => output::json_line(out, &step)?,
        OutputMode::Human => output::step_human(out, &step)?,
    }
    Ok(EXIT_OK)
}

/// The context a report gives (its tool, operation, message, idempotency), unless the line
/// says more.
fn context_of(report: &Report, given: Option<Context>) -> Context {
    Context::for_report(given.unwrap_or_default(), report)
}

/// One step per line, counters carried from line to line.
fn stream(
    settings: &HintSettings,
    recovery: &mut Recovery,
    counted: Option<&Counted>,
    input: &mut impl BufRead,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        number += 1;
        if line.trim_ascii().is_empty() {
            continue;
        }
        let parsed = parse_line(settings, &line).and_then(|line| match (counted, line.2) {
            (Some(_), Some(_)) => Err(vec![counted_at()]),
            _ => Ok(line),
        });
        match parsed {
            Ok((task, report, at, context)) => {
                let context = context_of(&report, context);
                if let Some(counted) = counted {
                    match counted.step(&task, &report, &context) {
                        Answer::Step(step) => output::json_line(out, &step)?,
                        Answer::Refused(_, mut refusal) => {
                            refusal["line"] = json!(number);
                            output::json_line(out, &refusal)?;
                        }
                        Answer::Unreachable(why) => {
                            out.flush()?;
                            writeln!(err, "backstop: line {number}: {why}")?;
                            return Ok(EXIT_ISSUES);
                        }
                    }
                    continue;
                }
                let at = at.unwrap_or(settings.now);
                let failure = classify(&settings.rules, &report, at);
                let step = recovery.next(&task, &failure, &context, at);
                output::json_line(out, &step)?;
            }
            Err(issues) => {
                let mut value =
                    output::refusal("malformed", "the failure on this line was refused", &issues);
                value["line"] = json!(number);
                output::json_line(out, &value)?;
            }
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}

type Line = (String, Report, Option<Timestamp>, Option<Context>);

/// A line with its own time when the ledger counts at the time it answers.
fn counted_at() -> Issue {
    Issue::new(
        "at",
        "not_with_ledger",
        "a failure counted on a ledger (--db, --server) is counted when it is answered: leave \
         out `at`, or run without --db and --server to replay times",
    )
}

/// A line naming no task when `--task` gave none.
fn no_task() -> Issue {
    Issue::new(
        "task",
        "missing_task",
        "the line names no task and --task was not given: send {\"report\": ..., \"task\": ...} \
         or give --task",
    )
}

/// A line is a report, or an envelope `{report, task?, at?, context?}`.
fn parse_line(settings: &HintSettings, line: &[u8]) -> Result<Line, Vec<Issue>> {
    let text = std::str::from_utf8(line)
        .map_err(|_| vec![Issue::new("", "bad_utf8", "the line is not UTF-8")])?;
    let value = input::json_value(text).map_err(|issue| vec![issue])?;
    if value.get("report").is_none() {
        let report = Report::from_json(text)?;
        let task = settings.task.clone().ok_or_else(|| vec![no_task()])?;
        return Ok((task, report, None, None));
    }
    let envelope: Envelope = input::typed(&value, input::Format::Json)
        .map_err(|issue| vec![Issue::new(issue.path, "bad_envelope", issue.message)])?;
    let report = Report::from_value(&envelope.report).map_err(|issues| {
        issues
            .into_iter()
            .map(|mut issue| {
                issue.path = backstop_core::issue::join_path("report", &issue.path);
                issue
            })
            .collect::<Vec<_>>()
    })?;
    let task = envelope
        .task
        .or_else(|| settings.task.clone())
        .ok_or_else(|| vec![no_task()])?;
    let mut issues = Vec::new();
    check_task(&task, "task", &mut issues);
    if !issues.is_empty() {
        return Err(issues);
    }
    Ok((task, report, envelope.at, envelope.context))
}
