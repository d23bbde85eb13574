//! The flags of the case commands: `decide`, `cases`, `review`, `purge`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

pub const DECIDE_HELP: &str = "\
Example:
  backstop decide --pack packs/vendor-risk.toml --db ./backstop.db < request.json

The request is the JSON of PACKS.md (execution_id, case, questions, related, confidence,
source_status). The result or the refusal is printed as JSON on stdout. A resend with the same
execution_id returns the stored result and uses no attempt; a malformed request lists every
issue and uses no attempt.

Exit codes:
  0  a result was printed (decided, held, undecided or gap)
  1  the ledger could not be opened or written
  2  bad flags or a bad pack file; every issue is listed
  3  the request was refused (malformed, attempt_limit_reached, issued_case_limit,
     execution_id_conflict, case_in_review, unknown_case); the refusal is printed";

pub const PURGE_HELP: &str = "\
Deletes attempt records (with their stored results) older than --older-than, review items
resolved before then, notifications delivered, given up or enqueued before then, and cases with
nothing left. Open review items and their cases are kept.

Exit codes:
  0  done; the counts are printed as JSON
  1  the ledger could not be opened or written
  2  bad flags";

/// Where the ledger is: `--db`.
#[derive(Debug, Args)]
pub struct DbArgs {
    /// The ledger: a `SQLite` file (created if missing), or a `postgres://` URL.
    #[arg(long, value_name = "PATH", default_value = "./backstop.db", env = crate::settings::ENV_DB, hide_env_values = true)]
    pub db: PathBuf,
}

/// `backstop decide`.
#[derive(Debug, Args)]
pub struct DecideArgs {
    /// The job's pack file.
    #[arg(long, value_name = "FILE")]
    pub pack: PathBuf,
    #[command(flatten)]
    pub db: DbArgs,
    /// Who is asking: cases belong to one caller, and one caller cannot spend another's.
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub caller: String,
    /// The time of the attempt (RFC 3339), instead of the clock: for tests and replays.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
}

/// `backstop cases ...`.
#[derive(Debug, Subcommand)]
pub enum CasesCommand {
    /// Print a case with every kept attempt record and its review items, as JSON.
    #[command(
        after_help = "Exit codes:\n  0  the case was printed\n  1  the ledger could not be read\n  2  bad flags\n  3  no such case (a refusal is printed)"
    )]
    Show(CasesShowArgs),
}

/// `backstop cases show`.
#[derive(Debug, Args)]
pub struct CasesShowArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The job.
    #[arg(long)]
    pub job: String,
    /// The case id, as results return it in `case.id`; with `--pack`, an id-mode subject is
    /// normalized first (`Northwind.com` finds `northwind.com`).
    #[arg(long = "case", value_name = "ID")]
    pub case_id: String,
    /// The job's pack, to normalize `--case` by its match rule.
    #[arg(long, value_name = "FILE")]
    pub pack: Option<PathBuf>,
    /// Whose case it is.
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub caller: String,
}

/// `backstop review ...`.
#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// List review items as JSON, newest first.
    List(ReviewListArgs),
    /// Resolve an open review item with an operator's decision; this ends the case's cycle, so
    /// its next attempt starts a new count.
    #[command(
        after_help = "Exit codes:\n  0  resolved; the item is printed\n  1  the ledger could not be written\n  2  bad flags\n  3  no such item, or already resolved (a refusal is printed)"
    )]
    Resolve(ReviewResolveArgs),
}

/// `backstop review list`.
#[derive(Debug, Args)]
pub struct ReviewListArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Which items: open, resolved or all.
    #[arg(long, value_enum, default_value_t = ReviewStatus::Open)]
    pub status: ReviewStatus,
    /// Only this job's items.
    #[arg(long)]
    pub job: Option<String>,
    /// Only this caller's items.
    #[arg(long, value_name = "NAME")]
    pub caller: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub limit: u32,
}

/// Which review items to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReviewStatus {
    /// Waiting for a person.
    Open,
    /// Resolved.
    Resolved,
    /// Both.
    All,
}

/// `backstop review resolve`.
#[derive(Debug, Args)]
pub struct ReviewResolveArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The review item's id.
    #[arg(long)]
    pub id: i64,
    /// The operator's decision (an outcome id of the pack, or words).
    #[arg(long)]
    pub decision: String,
    /// The operator resolving it.
    #[arg(long, value_name = "NAME")]
    pub by: String,
    /// A note for the record.
    #[arg(long)]
    pub note: Option<String>,
    /// The time of the resolution (RFC 3339), instead of the clock.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
}

/// `backstop purge`.
#[derive(Debug, Args)]
pub struct PurgeArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Keep records younger than this (`30d`, `72h`, `90m`).
    #[arg(long, value_name = "DURATION", default_value = "30d")]
    pub older_than: String,
    /// The time to count back from (RFC 3339), instead of the clock.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
}

pub const TASK_HELP: &str = "\
Examples:
  backstop task show build-7 --caller research-agent --db ./backstop.db
  backstop task reset build-7 --caller research-agent --db postgres://user@host/backstop

A task's call-level state is the ledger's call journal (what `backstop serve` records for
POST /v1/recover, /v1/outcomes and /v1/grants). `show` replays the last 24 hours of it and
prints the task as GET /v1/tasks/{task} does: attempts per class, the policy denial that
stopped it, its tools' breakers and budgets, and the step the next failure of each class would
get. `reset` journals an operator's reset (counters, and a policy stop, lifted) that every
server on the ledger applies, then prints the task.

Exit codes:
  0  the task was printed
  1  the ledger could not be opened, read or written
  2  bad flags; every issue is listed";

/// `backstop task ...`.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Print a task's call-level state as JSON: counters, stop, tools, the next steps.
    #[command(after_help = TASK_HELP)]
    Show(TaskArgs),
    /// Reset a task's counters and lift a policy stop (as an operator), then print it.
    #[command(after_help = TASK_HELP)]
    Reset(TaskArgs),
}

/// `backstop task show|reset`.
#[derive(Debug, Args)]
pub struct TaskArgs {
    /// The task.
    pub task: String,
    /// Whose task: tasks belong to the caller that reported them.
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub caller: String,
    #[command(flatten)]
    pub db: DbArgs,
}
