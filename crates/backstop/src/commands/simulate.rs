//! `backstop simulate backoff`: what each backoff kind costs when many clients contend.
//!
//! The flags are resolved here rather than in `settings.rs`: they are all this command's own,
//! and none comes from a file or the environment.

use std::io::{self, Write};
use std::num::{IntErrorKind, ParseIntError};
use std::str::FromStr;

use backstop_core::Issue;
use backstop_core::recover::simulate::{
    DEFAULT_BACKOFF, KINDS, SimulationConfig, SimulationResult, simulate,
};
use backstop_core::recover::strategy::{BackoffKind, human_ms};
use jiff::SignedDuration;
use serde_json::json;

use super::EXIT_OK;
use crate::cli::SimulateBackoffArgs;
use crate::output;
use crate::settings::OutputMode;

/// From this many clients a run can take seconds (plain exponential backoff makes about
/// clients x 1000 calls), so each kind's start is shown on stderr.
const PROGRESS_FROM_CLIENTS: u32 = 10_000;

/// Runs the simulation for every backoff kind and prints the comparison; refused flags are
/// reported on `out` (JSON) or `err` (human).
pub fn backoff(
    args: &SimulateBackoffArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let mode = args.output.mode();
    let config = match resolve(args) {
        Ok(config) => config,
        Err(issues) => return output::refuse_command(mode, &issues, out, err),
    };
    let mut results = Vec::with_capacity(KINDS.len());
    for kind in KINDS {
        if config.clients >= PROGRESS_FROM_CLIENTS {
            writeln!(
                err,
                "simulating {} with {} clients...",
                kind_name(kind),
                config.clients
            )?;
        }
        results.push(simulate(&config, kind));
    }
    match mode {
        OutputMode::Json => output::json_line(
            out,
            &json!({
                "clients": config.clients,
                "call_ms": config.call_ms,
                "base_ms": config.backoff.base_ms,
                "multiplier": config.backoff.multiplier,
                "cap_ms": config.backoff.cap_ms,
                "seed": config.seed,
                "max_attempts_per_client": config.max_attempts_per_client,
                "results": results,
            }),
        )?,
        OutputMode::Human => human(out, &config, &results)?,
    }
    Ok(EXIT_OK)
}

/// The configuration the flags describe, or every issue with its flag as path.
fn resolve(args: &SimulateBackoffArgs) -> Result<SimulationConfig, Vec<Issue>> {
    let mut issues = Vec::new();
    let mut config = SimulationConfig::new(1, 0);
    // A flag that does not parse keeps a valid stand-in, so the checks below blame only the
    // flags that were wrong.
    let mut unparsed = Vec::new();
    let clients = number::<u32>("--clients", &args.clients, "1 to 100000", &mut issues);
    config.clients = clients.unwrap_or_else(|| {
        unparsed.push("--clients");
        1
    });
    let mut or_stand_in = |parsed: Option<u64>, flag: &'static str, stand_in: u64| {
        parsed.unwrap_or_else(|| {
            unparsed.push(flag);
            stand_in
        })
    };
    let call_ms = number(
        "--call-ms",
        &args.call_ms,
        "a number of milliseconds, 1 to 3600000",
        &mut issues,
    );
    config.call_ms = or_stand_in(call_ms, "--call-ms", 1);
    let base_ms = duration_ms("--base", &args.base, &mut issues);
    config.backoff.base_ms = or_stand_in(base_ms, "--base", 1);
    let cap_ms = duration_ms("--cap", &args.cap, &mut issues);
    config.backoff.cap_ms = or_stand_in(cap_ms, "--cap", DEFAULT_BACKOFF.cap_ms);
    let seed = number(
        "--seed",
        &args.seed,
        "a whole number from 0 to 18446744073709551615",
        &mut issues,
    );
    config.seed = or_stand_in(seed, "--seed", 0);
    for mut issue in config.validate() {
        issue.path = flag_for(&issue.path);
        if !unparsed.contains(&issue.path.as_str()) {
            issues.push(issue);
        }
    }
    if issues.is_empty() {
        Ok(config)
    } else {
        // In the order of `--help`, whichever check found them.
        issues.sort_by_key(|issue| FLAGS.iter().position(|f| *f == issue.path));
        Err(issues)
    }
}

/// The flags, in the order of `--help`.
const FLAGS: [&str; 5] = ["--clients", "--call-ms", "--base", "--cap", "--seed"];

/// The flag a configuration field comes from (`backoff.base_ms` -> `--base`).
fn flag_for(path: &str) -> String {
    match path {
        "clients" => "--clients",
        "call_ms" => "--call-ms",
        "backoff.base_ms" => "--base",
        "backoff.cap_ms" => "--cap",
        "seed" => "--seed",
        other => other,
    }
    .to_owned()
}

/// A whole number from a flag.
fn number<T: FromStr<Err = ParseIntError>>(
    flag: &str,
    text: &str,
    expected: &str,
    issues: &mut Vec<Issue>,
) -> Option<T> {
    let trimmed = text.trim();
    match trimmed.parse::<T>() {
        Ok(n) => Some(n),
        Err(e) => {
            let negative = trimmed
                .strip_prefix('-')
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
            let too_large = matches!(
                e.kind(),
                IntErrorKind::PosOverflow | IntErrorKind::NegOverflow
            );
            issues.push(if negative || too_large {
                Issue::new(
                    flag,
                    "out_of_range",
                    format!("{trimmed} is out of range; expected {expected}"),
                )
            } else {
                Issue::new(
                    flag,
                    "wrong_type",
                    format!("`{text}` is not a whole number; expected {expected}"),
                )
            });
            None
        }
    }
}

/// A duration flag (`"10ms"`, `"2s"`, `"1m30s"`) in whole milliseconds.
fn duration_ms(flag: &str, text: &str, issues: &mut Vec<Issue>) -> Option<u64> {
    match text.trim().parse::<SignedDuration>() {
        Ok(d) if d.is_negative() => {
            issues.push(Issue::new(
                flag,
                "out_of_range",
                format!("`{text}` is negative; a delay is 1ms or more"),
            ));
            None
        }
        Ok(d) => Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        Err(_) => {
            issues.push(Issue::new(
                flag,
                "bad_duration",
                format!(
                    "`{text}` is not a duration; expected one like \"500ms\", \"2s\" or \"1m30s\""
                ),
            ));
            None
        }
    }
}

/// The wire name of a backoff kind.
fn kind_name(kind: BackoffKind) -> &'static str {
    match kind {
        BackoffKind::None => "none",
        BackoffKind::FullJitter => "full_jitter",
        BackoffKind::EqualJitter => "equal_jitter",
        BackoffKind::Decorrelated => "decorrelated",
    }
}

/// The setup, a table of one row per kind, and how full jitter compares with plain
/// exponential backoff.
fn human(
    out: &mut impl Write,
    config: &SimulationConfig,
    results: &[SimulationResult],
) -> io::Result<()> {
    let noun = if config.clients == 1 {
        "client"
    } else {
        "clients"
    };
    writeln!(
        out,
        "{} {noun} writing one row, each once; a call takes {}; backoff {} ×{}, capped at {}; \
         seed {}",
        config.clients,
        human_ms(config.call_ms),
        human_ms(config.backoff.base_ms),
        config.backoff.multiplier,
        human_ms(config.backoff.cap_ms),
        config.seed,
    )?;
    writeln!(out)?;
    let header = ["kind", "calls", "calls/client", "completion", "finished"].map(String::from);
    let rows: Vec<[String; 5]> = results
        .iter()
        .map(|r| {
            #[allow(clippy::cast_precision_loss)]
            let per_client = r.calls as f64 / f64::from(config.clients.max(1));
            [
                kind_name(r.kind).to_owned(),
                r.calls.to_string(),
                format!("{per_client:.1}"),
                human_ms(r.completion_ms),
                if r.finished { "yes" } else { "no" }.to_owned(),
            ]
        })
        .collect();
    let mut widths = [0; 5];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        write!(out, "{:<w$}", row[0], w = widths[0])?;
        for (cell, width) in row.iter().zip(widths).skip(1) {
            write!(out, "  {cell:>width$}")?;
        }
        writeln!(out)?;
    }
    let find = |kind| results.iter().find(|r| r.kind == kind);
    if let (Some(none), Some(full)) = (find(BackoffKind::None), find(BackoffKind::FullJitter)) {
        writeln!(out)?;
        #[allow(clippy::cast_precision_loss)]
        let (calls, time) = (
            none.calls as f64 / full.calls.max(1) as f64,
            none.completion_ms as f64 / full.completion_ms.max(1) as f64,
        );
        writeln!(
            out,
            "full jitter: {}, {} plain exponential backoff",
            compare(calls, "fewer calls", "more calls", "about as many calls"),
            compare(time, "sooner than", "later than", "about as soon as"),
        )?;
    }
    if results.iter().any(|r| !r.finished) {
        writeln!(
            out,
            "not finished: a client gives up after {} calls, so some writes never happened",
            config.max_attempts_per_client
        )?;
    }
    Ok(())
}

/// `ratio` (plain over full jitter) as "3.2× fewer calls", "1.5× more calls" or "about as
/// many calls".
fn compare(ratio: f64, better: &str, worse: &str, same: &str) -> String {
    let times = |r: f64| {
        if r >= 10.0 {
            format!("{r:.0}×")
        } else {
            format!("{r:.1}×")
        }
    };
    if ratio >= 1.05 {
        format!("{} {better}", times(ratio))
    } else if ratio <= 1.0 / 1.05 {
        format!("{} {worse}", times(1.0 / ratio))
    } else {
        same.to_owned()
    }
}
