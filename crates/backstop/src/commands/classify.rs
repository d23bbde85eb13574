//! `backstop classify`: one report from flags or stdin, or a JSON Lines stream.

use std::io::{self, BufRead, Write};

use backstop_core::classify::classify;
use backstop_core::{Issue, Report};
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

/// One classification per line; a bad line gets an error object on its line and the stream
/// goes on. Blank lines are skipped but counted, so `line` is the input's line number.
fn stream(
    settings: &ClassifySettings,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> io::Result<u8> {
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        number += 1;
        let Ok(text) = std::str::from_utf8(&line) else {
            let issue = Issue::new("", "bad_utf8", "the line is not UTF-8");
            output::json_line(out, &line_error(number, &[issue]))?;
            continue;
        };
        if text.trim().is_empty() {
            continue;
        }
        match Report::from_json(text) {
            Ok(report) => {
                output::json_line(out, &classify(&settings.rules, &report, settings.now))?;
            }
            Err(issues) => output::json_line(out, &line_error(number, &issues))?,
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}

fn line_error(number: usize, issues: &[Issue]) -> serde_json::Value {
    let mut value = output::refusal("malformed", "the report on this line was refused", issues);
    value["line"] = json!(number);
    value
}
