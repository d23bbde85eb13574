//! `backstop classify`: one report from flags or stdin, or a JSON Lines stream.

use std::io::{self, BufRead, Write};
use std::sync::mpsc;

use backstop_core::classify::{RuleSet, classify};
use backstop_core::{Issue, Report};
use jiff::Timestamp;
use serde_json::json;

use super::{EXIT_BAD_INPUT, EXIT_OK};
use crate::output;
use crate::settings::{ClassifySettings, OutputMode, ReportSource};

/// Runs `classify`; bad input is reported on `out` (JSON) or `err` (human).
pub fn run(
    settings: ClassifySettings,
    input: &mut impl BufRead,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let report = match settings.source {
        ReportSource::Lines => return stream(&settings, input, out),
        ReportSource::Flags(report) => *report,
        ReportSource::Stdin => {
            let mut text = String::new();
            if let Err(e) = input.read_to_string(&mut text) {
                let issue = Issue::new("stdin", "unreadable", format!("cannot read stdin: {e}"));
                return refuse(settings.output, &[issue], out, err);
            }
            if text.trim().is_empty() {
                let issue = Issue::new(
                    "stdin",
                    "empty_input",
                    "no report: give report flags (see --help) or one JSON report on stdin",
                );
                return refuse(settings.output, &[issue], out, err);
            }
            match Report::from_json(&text) {
                Ok(report) => report,
                Err(issues) => return refuse(settings.output, &issues, out, err),
            }
        }
    };
    let result = classify(&settings.rules, &report, settings.now);
    match settings.output {
        OutputMode::Json => output::json_line(out, &result)?,
        OutputMode::Human => output::classification_human(out, &result)?,
    }
    Ok(EXIT_OK)
}

/// The issues of a refused report, on stdout as JSON or on stderr for a person.
fn refuse(
    mode: OutputMode,
    issues: &[Issue],
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    match mode {
        OutputMode::Json => output::json_line(
            out,
            &output::refusal("malformed", "the report was refused", issues),
        )?,
        OutputMode::Human => output::issues_human(err, "the report was refused:", issues)?,
    }
    Ok(EXIT_BAD_INPUT)
}

/// Lines read and answered together; each worker takes a share of a batch.
const BATCH_LINES: usize = 4096;

/// Lines with their line numbers.
type Lines = Vec<(usize, Vec<u8>)>;

/// One classification per line; a bad line gets an error object on its line and the stream
/// goes on. Blank lines are skipped but counted, so `line` is the input's line number.
///
/// Lines are read in batches and each batch is shared among one worker per core, each with
/// its own copy of the rules (so no regex cache is shared between threads); the answers are
/// written in input order, so the output is the same as answering one line after another.
fn stream(
    settings: &ClassifySettings,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> io::Result<u8> {
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(8);
    std::thread::scope(|scope| {
        let mut lanes = Vec::new();
        for _ in 0..workers {
            let (to_worker, lines_in) = mpsc::channel::<Lines>();
            let (answers_out, from_worker) = mpsc::channel::<io::Result<Vec<u8>>>();
            let rules = settings.rules.clone();
            let now = settings.now;
            scope.spawn(move || {
                for lines in lines_in {
                    if answers_out.send(answer_lines(&rules, now, &lines)).is_err() {
                        break;
                    }
                }
            });
            lanes.push((to_worker, from_worker));
        }
        let mut number = 0usize;
        loop {
            let batch = read_batch(input, &mut number)?;
            if batch.is_empty() {
                break;
            }
            let share = batch.len().div_ceil(workers);
            let mut pending = batch.into_iter();
            let mut parts = 0;
            for (to_worker, _) in &lanes {
                let part: Lines = pending.by_ref().take(share).collect();
                if part.is_empty() {
                    break;
                }
                to_worker.send(part).expect("a classify worker stopped");
                parts += 1;
            }
            for (_, from_worker) in lanes.iter().take(parts) {
                out.write_all(&from_worker.recv().expect("a classify worker stopped")?)?;
            }
        }
        out.flush()?;
        Ok(EXIT_OK)
    })
}

/// Reads up to [`BATCH_LINES`] non-blank lines, counting every line read.
fn read_batch(input: &mut impl BufRead, number: &mut usize) -> io::Result<Lines> {
    let mut batch = Vec::with_capacity(BATCH_LINES);
    while batch.len() < BATCH_LINES {
        let mut line = Vec::new();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        *number += 1;
        if !line.trim_ascii().is_empty() {
            batch.push((*number, line));
        }
    }
    Ok(batch)
}

/// The answer to each line, one JSON line each, in order.
fn answer_lines(
    rules: &RuleSet,
    now: Timestamp,
    lines: &[(usize, Vec<u8>)],
) -> io::Result<Vec<u8>> {
    let mut buffer = Vec::with_capacity(lines.len() * 256);
    for (number, line) in lines {
        let Ok(text) = std::str::from_utf8(line) else {
            let issue = Issue::new("", "bad_utf8", "the line is not UTF-8");
            output::json_line(&mut buffer, &line_error(*number, &[issue]))?;
            continue;
        };
        match Report::from_json(text) {
            Ok(report) => classify(rules, &report, now).write_json_line(&mut buffer),
            Err(issues) => output::json_line(&mut buffer, &line_error(*number, &issues))?,
        }
    }
    Ok(buffer)
}

fn line_error(number: usize, issues: &[Issue]) -> serde_json::Value {
    let mut value = output::refusal("malformed", "the report on this line was refused", issues);
    value["line"] = json!(number);
    value
}
