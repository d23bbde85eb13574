//! `backstop loop calibrate`: the decider's scores against what happened next.

use std::io::{self, Write};

use backstop_core::Issue;
use backstop_core::verify::calibrate::{LoggedAttempt, calibrate};
use backstop_server::files::read_text;

use super::EXIT_OK;
use crate::cli::CalibrateArgs;
use crate::output;

/// Reads every log, refuses them all if a line is bad (every bad line listed), prints the table.
pub fn run(args: &CalibrateArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mut attempts = Vec::new();
    let mut issues = Vec::new();
    for path in &args.logs {
        let origin = path.display().to_string();
        let text = match read_text(path, &origin, "the log") {
            Ok(text) => text,
            Err(issue) => {
                issues.push(issue);
                continue;
            }
        };
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            match serde_json::from_str::<LoggedAttempt>(line) {
                Ok(attempt) => attempts.push(attempt),
                Err(e) => issues.push(Issue::new(
                    format!("{origin}: line {}", i + 1),
                    "bad_line",
                    format!("not a loop log line: {e}"),
                )),
            }
        }
    }
    if !issues.is_empty() {
        return output::refuse_command(args.output.mode(), &issues, out, err);
    }
    let c = calibrate(&attempts);
    if args.output.mode() == crate::settings::OutputMode::Json {
        output::json_line(out, &c)?;
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "{}, {}",
        counted(c.runs, "run", "runs"),
        counted(attempts.len(), "attempt", "attempts")
    )?;
    writeln!(out, "score  followed  next passed  pass rate")?;
    for row in &c.scores {
        let rate = row
            .pass_rate
            .map_or_else(|| "-".to_owned(), |r| format!("{:.0}%", r * 100.0));
        writeln!(
            out,
            "{:>5}  {:>8}  {:>11}  {:>9}",
            row.score, row.followed, row.next_passed, rate
        )?;
    }
    writeln!(out, "threshold  attempts saved  passing runs stopped")?;
    for row in &c.thresholds {
        writeln!(
            out,
            "{:>9.1}  {:>14}  {:>20}",
            row.threshold, row.attempts_saved, row.passing_runs_stopped
        )?;
    }
    match (c.recommended, c.best) {
        (Some(best), _) => writeln!(
            out,
            "recommended threshold: {best:.1} (the most attempts saved, no passing run stopped, over {} runs)",
            c.runs
        )?,
        (None, Some(best)) => {
            let saved = c
                .thresholds
                .iter()
                .find(|row| row.threshold.total_cmp(&best).is_eq())
                .map_or(0, |row| row.attempts_saved);
            let alone = if saved == 0 {
                "no threshold would have saved an attempt without stopping a passing run".to_owned()
            } else {
                format!(
                    "{best:.1} would have saved the most ({}) without stopping a passing run",
                    counted(saved, "attempt", "attempts")
                )
            };
            writeln!(
                out,
                "no threshold recommended: {} too few (at least {}); over these runs alone, {alone}",
                if c.runs == 1 {
                    "1 run is".to_owned()
                } else {
                    format!("{} runs are", c.runs)
                },
                c.min_runs
            )?;
        }
        (None, None) => writeln!(out, "no threshold stops nothing that later passed")?,
    }
    Ok(EXIT_OK)
}

/// "1 run", "3 runs".
fn counted(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}
