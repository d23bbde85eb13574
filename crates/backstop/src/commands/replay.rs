//! `backstop replay`: a recorded trace through the policy, step by step, with totals.

use std::io::{self, Write};

use backstop_core::recover::replay::{ReplayLine, ReplayTotals, parse_trace, replay};
use backstop_core::recover::strategy::human_ms;
use backstop_core::recover::{Recovery, RecoveryOptions};
use serde_json::json;

use super::{EXIT_BAD_INPUT, EXIT_OK};
use crate::output;
use crate::settings::{OutputMode, ReplaySettings};

/// Runs `replay`.
pub fn run(settings: ReplaySettings, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let events = match parse_trace(&settings.trace) {
        Ok(events) => events,
        Err(issues) => {
            match settings.output {
                OutputMode::Json => output::json_line(
                    out,
                    &output::refusal("malformed", "the trace was refused", &issues),
                )?,
                OutputMode::Human => output::issues_human(err, "the trace was refused:", &issues)?,
            }
            return Ok(EXIT_BAD_INPUT);
        }
    };
    let mut recovery = Recovery::new(
        settings.table,
        RecoveryOptions {
            seed: settings.seed,
        },
    );
    let (lines, totals) = replay(&settings.rules, &mut recovery, &events);
    match settings.output {
        OutputMode::Json => output::json_line(out, &json!({"steps": lines, "totals": totals}))?,
        OutputMode::Human => human(out, &lines, &totals)?,
    }
    Ok(EXIT_OK)
}

/// An event's time with milliseconds always shown, so the lines' times line up.
fn aligned(at: jiff::Timestamp) -> String {
    format!("{at:.3}")
}

fn human(out: &mut impl Write, lines: &[ReplayLine], totals: &ReplayTotals) -> io::Result<()> {
    for line in lines {
        let saved = if line.unneeded {
            "  [backstop would not have made this call]"
        } else {
            ""
        };
        match (&line.classification, &line.step) {
            (Some(c), Some(step)) => {
                let when = match (step.defer_until, step.delay_ms) {
                    (Some(until), _) => format!(" until {until}"),
                    (None, 0) => String::new(),
                    (None, ms) => format!(" after {}", human_ms(ms)),
                };
                writeln!(
                    out,
                    "{} line {:>3}  {} / {}: {} -> {}{when}{saved}",
                    aligned(line.at),
                    line.line,
                    line.task,
                    line.tool,
                    c.class,
                    step.action.as_str()
                )?;
                writeln!(out, "    {}", step.reason)?;
            }
            _ => writeln!(
                out,
                "{} line {:>3}  {} / {}: success{saved}",
                aligned(line.at),
                line.line,
                line.task,
                line.tool
            )?,
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "events {}, failures {}: retries {}, waits {} ({} waited), fallbacks {}, escalations {}, stops {}; calls saved {}",
        totals.events,
        totals.failures,
        totals.retries,
        totals.waits,
        human_ms(totals.waited_ms),
        totals.fallbacks,
        totals.escalations,
        totals.stops,
        totals.calls_saved
    )
}
