//! `backstop loop`: run an attempt, then the tests, until the tests pass or the loop stops.
//!
//! Only a passing test run ends the loop as done. The built-in decider may stop it early when
//! another attempt is not worth its cost; it never declares success.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use backstop_core::redact::redact;
use backstop_core::verify::decider::{Choice, FailedAttempt, Verdict, score};
use backstop_core::verify::parse::parse_output;
use backstop_core::verify::signature::signature;
use backstop_core::verify::stop::{AfterFailure, Approach, Counsel, Stop, after_failure};
use jiff::Timestamp;
use serde::Serialize;
use serde_json::json;

use super::external_decider::{Answer, ExternalDecider};
use crate::cli::LoopArgs;
use crate::output;
use crate::settings::ENV_DECIDER_KEY;
use crate::settings::OutputMode;

/// The tests passed.
pub const EXIT_PASSED: u8 = 0;
/// The attempts were spent; the last failure was handed to a person.
pub const EXIT_BUDGET_SPENT: u8 = 3;
/// The decider chose to stop.
pub const EXIT_DECIDER_STOP: u8 = 4;
/// The decider's score fell below the threshold.
pub const EXIT_BELOW_THRESHOLD: u8 = 5;
/// The external decider abstained.
pub const EXIT_ABSTAINED: u8 = 6;
/// The test command could not run at all (not found, not executable).
pub const EXIT_TEST_COMMAND: u8 = 7;
/// The attempt command could not run at all (not found, not executable).
pub const EXIT_ATTEMPT_COMMAND: u8 = 8;

/// How much of a failing attempt command's output the log keeps (its tail, redacted).
const ATTEMPT_TAIL_CHARS: usize = 2000;

/// The most test output kept per attempt (the tail, where runners print their summary).
const OUTPUT_CAP: usize = 1 << 20;

/// One finished round.
#[derive(Debug, Clone, Serialize)]
struct Round {
    run: String,
    attempt: u32,
    at: Timestamp,
    passed: bool,
    exit_code: Option<i32>,
    strategy: &'static str,
    runner: Option<String>,
    failed: Option<u32>,
    signature: Option<String>,
    score: Option<f64>,
    choice: Option<Choice>,
    reason: String,
    /// The attempt command's exit status, when it ran and did not exit 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt_exit_code: Option<i32>,
    /// The end of that attempt's output (redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt_tail: Option<String>,
    #[serde(skip)]
    output: String,
}

/// The decider's assessment of a failure, built-in or external: its counsel and its reason.
#[derive(Debug, Clone)]
struct Assessment {
    counsel: Counsel,
    reason: String,
}

impl Assessment {
    fn builtin(v: Verdict) -> Assessment {
        Assessment {
            counsel: Counsel {
                score: Some(f64::from(v.score)),
                choice: Some(v.choice),
                binding: v.read_output,
                abstained: false,
            },
            reason: v.reason,
        }
    }

    fn external(answer: Answer) -> Assessment {
        let (counsel, reason) = match answer {
            Answer::Verdict { score, choice } => (
                Counsel {
                    score: Some(score),
                    choice: Some(choice),
                    binding: true,
                    abstained: false,
                },
                format!(
                    "the decider expects {score:.1} of 5 and chose {}",
                    choice_name(choice)
                ),
            ),
            Answer::Abstained => (
                Counsel {
                    score: None,
                    choice: None,
                    binding: false,
                    abstained: true,
                },
                "the decider abstained".to_owned(),
            ),
            Answer::Unavailable(why) => (
                Counsel {
                    score: None,
                    choice: None,
                    binding: false,
                    abstained: false,
                },
                format!("{why}; the fixed cap of attempts decides"),
            ),
        };
        Assessment { counsel, reason }
    }
}

fn choice_name(choice: Choice) -> &'static str {
    match choice {
        Choice::SameApproach => "same_approach",
        Choice::ChangeApproach => "change_approach",
        Choice::Stop => "stop",
    }
}

/// The last `n` characters of a text.
fn tail_chars(text: &str, n: usize) -> String {
    let skip = text.chars().count().saturating_sub(n);
    text.chars().skip(skip).collect()
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Ending {
    Passed,
    BudgetSpent,
    DeciderStop,
    BelowThreshold,
    Abstained,
    TestCommandFailed,
    AttemptCommandFailed,
}

impl From<Stop> for Ending {
    fn from(stop: Stop) -> Ending {
        match stop {
            Stop::BudgetSpent => Ending::BudgetSpent,
            Stop::Abstained => Ending::Abstained,
            Stop::DeciderStop => Ending::DeciderStop,
            Stop::BelowThreshold => Ending::BelowThreshold,
        }
    }
}

impl Ending {
    fn exit_code(self) -> u8 {
        match self {
            Ending::Passed => EXIT_PASSED,
            Ending::BudgetSpent => EXIT_BUDGET_SPENT,
            Ending::DeciderStop => EXIT_DECIDER_STOP,
            Ending::BelowThreshold => EXIT_BELOW_THRESHOLD,
            Ending::Abstained => EXIT_ABSTAINED,
            Ending::TestCommandFailed => EXIT_TEST_COMMAND,
            Ending::AttemptCommandFailed => EXIT_ATTEMPT_COMMAND,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Ending::Passed => "the tests passed",
            Ending::BudgetSpent => "every attempt was spent; hand the last failure to a person",
            Ending::DeciderStop => "the decider stopped the loop: another attempt is not worth it",
            Ending::BelowThreshold => "the expected score fell below the threshold",
            Ending::Abstained => "the decider abstained; ask a person",
            Ending::TestCommandFailed => "the test command could not run",
            Ending::AttemptCommandFailed => "the attempt command could not run",
        }
    }
}

/// Runs the loop.
pub fn run(args: &LoopArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let started = Instant::now();
    let work = std::env::temp_dir().join(format!("backstop-loop-{}", std::process::id()));
    fs::create_dir_all(&work)?;
    let log = match &args.log {
        Some(path) => Some(
            fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?,
        ),
        None => None,
    };
    let decider = match args.decider.as_str() {
        "builtin" => None,
        url => Some(ExternalDecider::new(
            url,
            std::env::var(ENV_DECIDER_KEY)
                .ok()
                .filter(|k| !k.is_empty()),
            args.decider_timeout,
        )),
    };
    let mut looping = Loop {
        args,
        run_id: format!("{}-{}", Timestamp::now().as_second(), std::process::id()),
        live: args.output.mode() == OutputMode::Human && io::stderr().is_terminal(),
        started,
        failure_file: work.join("last-failure.md"),
        log,
        decider,
        rounds: Vec::new(),
        history: Vec::new(),
        approach: Approach::Same,
    };
    let ending = looping.rounds(err)?;
    if looping.live {
        writeln!(err)?;
    }
    let rounds = looping.rounds;
    if ending != Ending::Passed
        && let Some(dir) = &args.handoff
    {
        write_handoff(dir, ending, &rounds)?;
    }
    let _ = fs::remove_dir_all(&work);
    report(args, ending, &rounds, started, out)?;
    Ok(ending.exit_code())
}

/// One run of the loop: its settings and what it has seen so far.
struct Loop<'a> {
    args: &'a LoopArgs,
    run_id: String,
    live: bool,
    started: Instant,
    failure_file: PathBuf,
    log: Option<fs::File>,
    decider: Option<ExternalDecider>,
    rounds: Vec<Round>,
    history: Vec<FailedAttempt>,
    approach: Approach,
}

/// How an attempt command ran.
enum AttemptRun {
    /// It exited 0, or no attempt command was given.
    Done,
    /// It failed: its exit status and the tail of its output (redacted), kept beside the round.
    Failed(Option<i32>, String),
    /// It could not run at all (126, 127): the loop ends.
    CouldNotRun,
}

impl Loop<'_> {
    /// Every round until one ends the loop.
    fn rounds(&mut self, err: &mut impl Write) -> io::Result<Ending> {
        for attempt in 1..=self.args.max_attempts {
            if let Some(ending) = self.round(attempt, err)? {
                return Ok(ending);
            }
        }
        Ok(Ending::BudgetSpent)
    }

    fn status(&self, err: &mut impl Write, message: &str) -> io::Result<()> {
        status(err, self.live, message, self.started)
    }

    /// Keeps a round, in memory and in the log.
    fn keep(&mut self, round: Round) -> io::Result<()> {
        self.rounds.push(round);
        write_log(self.log.as_mut(), self.rounds.last())
    }

    /// One attempt, then the tests, then the decision; the ending if this round ends the loop.
    fn round(&mut self, attempt: u32, err: &mut impl Write) -> io::Result<Option<Ending>> {
        let max = self.args.max_attempts;
        let attempt_failure = match self.attempt_command(attempt, err)? {
            AttemptRun::CouldNotRun => return Ok(Some(Ending::AttemptCommandFailed)),
            AttemptRun::Failed(code, tail) => Some((code, tail)),
            AttemptRun::Done => None,
        };
        self.status(err, &format!("attempt {attempt}/{max}: running the tests"))?;
        let test_command = self.args.test.as_deref().unwrap_or("false");
        let (code, raw) = shell(test_command, &[])?;
        let (text, _) = redact(&raw);
        let with_attempt = |mut r: Round| {
            if let Some((code, tail)) = attempt_failure.clone() {
                r.attempt_exit_code = code;
                r.attempt_tail = Some(tail);
            }
            r
        };
        let strategy = self.approach.as_str();
        if matches!(code, Some(126 | 127)) {
            let reason = format!(
                "the test command could not run (exit status {}): {}",
                code.unwrap_or_default(),
                text.lines().last().unwrap_or("no output")
            );
            let r = round(
                &self.run_id,
                attempt,
                false,
                code,
                strategy,
                None,
                (None, None),
                reason,
                text,
            );
            self.rounds.push(with_attempt(r));
            return Ok(Some(Ending::TestCommandFailed));
        }
        if code == Some(0) {
            let reason = "the tests passed".to_owned();
            let r = round(
                &self.run_id,
                attempt,
                true,
                code,
                strategy,
                None,
                (None, None),
                reason,
                text,
            );
            self.keep(with_attempt(r))?;
            return Ok(Some(Ending::Passed));
        }
        let assessment = self.judge(attempt, &text);
        let parsed = parse_output(&text);
        let summary = parsed.as_ref().map(|r| {
            (
                format!("{:?}", r.runner).to_lowercase(),
                r.failed,
                signature(r).digest(),
            )
        });
        let counsel = assessment.counsel;
        let scored = (counsel.score, counsel.choice);
        let mut r = round(
            &self.run_id,
            attempt,
            false,
            code,
            strategy,
            summary,
            scored,
            assessment.reason.clone(),
            text,
        );
        if code.is_none() {
            r.reason = format!("the test command was killed by a signal; {}", r.reason);
        }
        self.keep(with_attempt(r))?;
        write_failure_file(&self.failure_file, &self.rounds)?;
        let score = counsel
            .score
            .map_or_else(|| "-".to_owned(), |s| format!("{s:.1}"));
        let message = format!(
            "attempt {attempt}/{max}: failed, score {score}: {}",
            assessment.reason
        );
        self.status(err, &message)?;
        Ok(
            match after_failure(attempt, max, &counsel, self.args.threshold) {
                AfterFailure::Stop(stop) => Some(Ending::from(stop)),
                AfterFailure::Again(approach) => {
                    self.approach = approach;
                    None
                }
            },
        )
    }

    /// Runs the attempt command, if there is one. Only the tests decide whether the work is
    /// done; an attempt that could not run at all ends the loop, and any other failing attempt
    /// is recorded beside its round.
    fn attempt_command(&mut self, attempt: u32, err: &mut impl Write) -> io::Result<AttemptRun> {
        let Some(command) = &self.args.attempt else {
            return Ok(AttemptRun::Done);
        };
        let max = self.args.max_attempts;
        self.status(
            err,
            &format!("attempt {attempt}/{max}: running the attempt"),
        )?;
        let env = [
            ("BACKSTOP_ATTEMPT", attempt.to_string()),
            ("BACKSTOP_MAX_ATTEMPTS", max.to_string()),
            ("BACKSTOP_STRATEGY", self.approach.as_str().to_owned()),
            (
                "BACKSTOP_FAILURE_FILE",
                self.failure_file.display().to_string(),
            ),
        ];
        let (code, raw) = shell(command, &env)?;
        if code == Some(0) {
            return Ok(AttemptRun::Done);
        }
        let (text, _) = redact(&raw);
        let tail = tail_chars(&text, ATTEMPT_TAIL_CHARS);
        if !matches!(code, Some(126 | 127)) {
            return Ok(AttemptRun::Failed(code, tail));
        }
        let reason = format!(
            "the attempt command could not run (exit status {}): {}",
            code.unwrap_or_default(),
            tail.lines().last().unwrap_or("no output")
        );
        let strategy = self.approach.as_str();
        let mut r = round(
            &self.run_id,
            attempt,
            false,
            None,
            strategy,
            None,
            (None, None),
            reason,
            String::new(),
        );
        r.attempt_exit_code = code;
        r.attempt_tail = Some(tail);
        self.keep(r)?;
        Ok(AttemptRun::CouldNotRun)
    }

    /// The decider's assessment of the failure just recorded in `text`: the built-in one on the
    /// last attempt (nothing is left to choose), else the external decider when one is set.
    fn judge(&mut self, attempt: u32, text: &str) -> Assessment {
        self.history.push(FailedAttempt::from_output(text));
        let external = self
            .decider
            .as_ref()
            .filter(|_| attempt < self.args.max_attempts);
        let Some(external) = external else {
            return Assessment::builtin(score(&self.history));
        };
        let tests = parse_output(text).map(|r| format!("{} passed, {} failed", r.passed, r.failed));
        let state = json!({
            "attempt": attempt,
            "max_attempts": self.args.max_attempts,
            "tests": tests,
            "test_output": tail_chars(text, 4000),
            "previous_failures": self.rounds.iter().rev().take(3).rev()
                .map(|r| tail_chars(&r.output, 800)).collect::<Vec<_>>(),
        });
        Assessment::external(external.ask(&state))
    }
}

/// The loop's summary: one JSON line with every round, or a line for a person.
fn report(
    args: &LoopArgs,
    ending: Ending,
    rounds: &[Round],
    started: Instant,
    out: &mut impl Write,
) -> io::Result<()> {
    if args.output.mode() == OutputMode::Json {
        let summary = json!({
            "ending": ending,
            "why": ending.words(),
            "exit_code": ending.exit_code(),
            "attempts": rounds.len(),
            "elapsed_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "rounds": rounds,
        });
        return output::json_line(out, &summary);
    }
    writeln!(
        out,
        "{} after {} attempt(s): {}",
        ending_word(ending),
        rounds.len(),
        ending.words()
    )?;
    if let Some(last) = rounds.last().filter(|r| !r.passed) {
        writeln!(out, "  last failure: {}", last.reason)?;
    }
    Ok(())
}

fn ending_word(ending: Ending) -> &'static str {
    if ending == Ending::Passed {
        "passed"
    } else {
        "stopped"
    }
}

#[allow(clippy::too_many_arguments)]
fn round(
    run: &str,
    attempt: u32,
    passed: bool,
    exit_code: Option<i32>,
    strategy: &'static str,
    summary: Option<(String, u32, String)>,
    (score, choice): (Option<f64>, Option<Choice>),
    reason: String,
    output: String,
) -> Round {
    let (runner, failed, signature) = match summary {
        Some((runner, failed, digest)) => (Some(runner), Some(failed), Some(digest)),
        None => (None, None, None),
    };
    Round {
        run: run.to_owned(),
        attempt,
        at: Timestamp::now(),
        passed,
        exit_code,
        strategy,
        runner,
        failed,
        signature,
        score,
        choice,
        reason,
        attempt_exit_code: None,
        attempt_tail: None,
        output,
    }
}

/// Runs a command with `sh -c`, its output (stdout then stderr, the tail kept) and its exit
/// status (`None` when a signal ended it).
fn shell(command: &str, env: &[(&str, String)]) -> io::Result<(Option<i32>, String)> {
    let mut child = Command::new("sh");
    child.arg("-c").arg(command).stdin(Stdio::null());
    for (name, value) in env {
        child.env(name, value);
    }
    let result = child.output()?;
    let mut text = String::from_utf8_lossy(&result.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&result.stderr));
    if text.len() > OUTPUT_CAP {
        let cut = text.ceil_char_boundary(text.len() - OUTPUT_CAP);
        text = text[cut..].to_owned();
    }
    Ok((result.status.code(), text))
}

fn status(err: &mut impl Write, live: bool, message: &str, started: Instant) -> io::Result<()> {
    let elapsed = started.elapsed().as_secs();
    if live {
        write!(err, "\r\x1b[2K[{elapsed}s] {message}")?;
        err.flush()
    } else {
        writeln!(err, "[{elapsed}s] {message}")
    }
}

fn write_log(log: Option<&mut fs::File>, round: Option<&Round>) -> io::Result<()> {
    if let (Some(file), Some(round)) = (log, round) {
        output::json_line(file, round)?;
    }
    Ok(())
}

/// The file an attempt command reads: the last failure (redacted) and a short history.
fn write_failure_file(path: &Path, rounds: &[Round]) -> io::Result<()> {
    let mut text = String::from("# The last failure\n\n");
    if let Some(last) = rounds.last() {
        let _ = write!(
            text,
            "Attempt {}: {}\n\n```\n{}\n```\n\n",
            last.attempt,
            last.reason,
            tail(&last.output, 60)
        );
    }
    text.push_str("# History\n\n");
    for r in rounds {
        let _ = writeln!(
            text,
            "- attempt {} ({}): {}",
            r.attempt, r.strategy, r.reason
        );
    }
    fs::write(path, text)
}

fn write_handoff(dir: &PathBuf, ending: Ending, rounds: &[Round]) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let last = rounds.iter().rev().find(|r| !r.passed);
    let report = json!({
        "ending": ending,
        "why": ending.words(),
        "last_failure": last.map(|r| json!({"attempt": r.attempt, "reason": r.reason, "output": tail(&r.output, 200)})),
        "history": rounds,
    });
    fs::write(
        dir.join("handoff.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    let mut md = format!(
        "# backstop loop: handed to a person\n\nWhy it stopped: {}.\n\n",
        ending.words()
    );
    md.push_str("| attempt | strategy | result | score | reason |\n|---|---|---|---|---|\n");
    for r in rounds {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            r.attempt,
            r.strategy,
            if r.passed { "passed" } else { "failed" },
            r.score.map_or_else(|| "-".to_owned(), |s| s.to_string()),
            r.reason.replace('|', "\\|")
        );
    }
    if let Some(last) = last {
        let _ = write!(
            md,
            "\n## The last failure (attempt {})\n\n```\n{}\n```\n",
            last.attempt,
            tail(&last.output, 200)
        );
    }
    fs::write(dir.join("handoff.md"), md)
}

/// The last `lines` lines of a text.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
