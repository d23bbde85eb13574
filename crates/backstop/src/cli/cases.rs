//! The flags of the case commands: `decide`, `cases`, `review`, `purge`, `task`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::OutputArgs;

pub const DECIDE_HELP: &str = "\
Example:
  backstop decide --pack packs/vendor-risk.toml --db ./backstop.db < request.json

The request is the JSON docs/packs.md describes (execution_id, case, questions, related, confidence,
source_status). On a terminal the result reads as sentences (what was decided, the next step,
the attempts left, what to fix, why); JSON when piped or with --json. A resend with the same
execution_id returns the stored result and uses no attempt; a malformed request lists every
issue and uses no attempt.

Exit codes:
  0  a result was printed (decided, held, undecided or gap)
  1  the ledger could not be opened or written
  2  bad input: bad flags, a bad pack file, or a request that is not JSON or is malformed;
     every issue is listed and nothing is counted
  3  the request was refused (attempt_limit_reached, issued_case_limit,
     execution_id_conflict, case_in_review, unknown_case); the refusal is printed";

pub const PURGE_HELP: &str = "\
Deletes attempt records (with their stored results) older than --older-than, review items
resolved before then, notifications delivered, given up or enqueued before then, and cases with
nothing left. Open review items and their cases are kept.

Exit codes:
  0  done; the counts are printed (JSON when piped or with --json)
  1  the ledger could not be opened or written
  2  bad flags, or no ledger at --db (never created here)";

pub const CASES_SHOW_HELP: &str = "\
Example:
  backstop cases show --db ./backstop.db --job vendor-risk --case northwind.com

On a terminal: the case, its attempts as a timeline (cycle, number, time, status, outcome, what
the agent was told next, progress, the sources and locators it cited; never excerpt text, which
is not kept) and its review items. JSON when piped or with --json: the case as the ledger keeps
it. The ledger must exist: a --db path with no ledger is refused, never created.

Exit codes:
  0  the case was printed
  1  the ledger could not be opened or read
  2  bad flags, or no ledger at --db (never created here)
  3  no such case (a refusal is printed)";

pub const REVIEW_LIST_HELP: &str = "\
Examples:
  backstop review list --db ./backstop.db
  backstop review list --status all --job vendor-risk --json

On a terminal: one row per item (id, kind, job, case or task, lane, escalation and who it goes
to, caller, age) and a count per lane. JSON when piped or with --json: {\"reviews\": [...]}.
The ledger must exist: a --db path with no ledger is refused, never created.

Exit codes:
  0  the items were printed (none is not an error)
  1  the ledger could not be opened or read
  2  bad flags, or no ledger at --db (never created here)";

pub const REVIEW_SHOW_HELP: &str = "\
Examples:
  backstop review show 7 --db ./backstop.db
  backstop review show 7 --packs packs --json

On a terminal: every field of the item (for a task's escalation its task, tool, class and
evidence) and the decisions it may be resolved with: a held case's pack decisions (found in
--packs) and `handoff`; a task's `retry`, `stop` and `handoff`. JSON when piped or with --json:
the item as `review resolve` prints it, with `allowed_decisions` (null once it is resolved, or
when the pack of a case's job is not found).

Exit codes:
  0  the item was printed
  1  the ledger could not be opened or read
  2  bad flags, or no ledger at --db (never created here)
  3  no such item (a refusal is printed)";

pub const REVIEW_RESOLVE_HELP: &str = "\
Examples:
  backstop review resolve --id 7 --decision approve --by dana --note 'DPA signed'
  backstop review resolve --id 9 --decision retry --by dana --db postgres://user@host/backstop

The decision is checked before anything is written: a held case takes one of its pack's
decision outcomes (the pack is found by job in --packs) or `handoff`; a task's escalation takes
`retry` (the task is reset, lifting a policy stop, for every server on the ledger), `stop` or
`handoff`. `backstop review show ID` lists them. The resolved item is printed (JSON when piped
or with --json).

Exit codes:
  0  resolved; the item is printed
  1  the ledger could not be opened, read or written
  2  no ledger at --db (never created here), bad flags, or no pack for a case's job in --packs;
     every issue is listed and nothing is written
  3  no such item, already resolved, or a decision the item does not take
     (`decision_not_allowed`, as HTTP's 409; the allowed ones are listed): a refusal is
     printed and nothing is written";

/// Where the ledger is, for a command that may create it: `--db`.
#[derive(Debug, Args)]
pub struct DbArgs {
    /// The ledger: a `SQLite` file (created if missing), or a `postgres://` URL.
    #[arg(long, value_name = "PATH", default_value = "./backstop.db", env = crate::settings::ENV_DB, hide_env_values = true)]
    pub db: backstop_store::Location,
}

/// Where the ledger is, for a command that only works on one that exists: `--db`.
#[derive(Debug, Args)]
pub struct LedgerArgs {
    /// The ledger: an existing `SQLite` file (never created here), or a `postgres://` URL.
    #[arg(long, value_name = "PATH", default_value = "./backstop.db", env = crate::settings::ENV_DB, hide_env_values = true)]
    pub db: backstop_store::Location,
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
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `backstop cases ...`.
#[derive(Debug, Subcommand)]
pub enum CasesCommand {
    /// Print a case with every kept attempt record and its review items.
    #[command(after_help = CASES_SHOW_HELP)]
    Show(CasesShowArgs),
}

/// `backstop cases show`.
#[derive(Debug, Args)]
pub struct CasesShowArgs {
    #[command(flatten)]
    pub db: LedgerArgs,
    /// The job.
    #[arg(long)]
    pub job: String,
    /// The case id, as results return it in `case.id`; when the job's pack is found (--pack,
    /// or by job in --packs), an id-mode subject is normalized first (`Northwind.com` finds
    /// `northwind.com`); when it is not, a note on stderr says the id is looked up as given.
    #[arg(long = "case", value_name = "ID")]
    pub case_id: String,
    /// The job's pack file, to normalize `--case` by its match rule (its job must be --job).
    #[arg(long, value_name = "FILE", conflicts_with = "packs")]
    pub pack: Option<PathBuf>,
    /// Pack files or folders where the job's pack is found by its job (default ./packs).
    #[arg(long, value_name = "PATH")]
    pub packs: Vec<PathBuf>,
    /// Whose case it is.
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub caller: String,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `backstop review ...`.
#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// List review items, newest first.
    #[command(after_help = REVIEW_LIST_HELP)]
    List(ReviewListArgs),
    /// Print one review item and the decisions it may be resolved with.
    #[command(after_help = REVIEW_SHOW_HELP)]
    Show(ReviewShowArgs),
    /// Resolve an open review item with an operator's decision; this ends the case's cycle, so
    /// its next attempt starts a new count.
    #[command(after_help = REVIEW_RESOLVE_HELP)]
    Resolve(ReviewResolveArgs),
}

/// `backstop review list`.
#[derive(Debug, Args)]
pub struct ReviewListArgs {
    #[command(flatten)]
    pub db: LedgerArgs,
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
    /// The time ages are counted to (RFC 3339), instead of the clock.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `backstop review show`.
#[derive(Debug, Args)]
pub struct ReviewShowArgs {
    /// The review item's id.
    #[arg(value_name = "ID")]
    pub id: i64,
    #[command(flatten)]
    pub db: LedgerArgs,
    /// Pack files or folders, to list a case's resolutions by its job (default ./packs).
    #[arg(long, value_name = "PATH")]
    pub packs: Vec<PathBuf>,
    /// The time its age is counted to (RFC 3339), instead of the clock.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
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

impl ReviewResolveArgs {
    /// The review item's id, given either way (clap requires one).
    pub fn id(&self) -> i64 {
        self.item.or(self.id_flag).unwrap_or_default()
    }
}

/// `backstop review resolve`.
#[derive(Debug, Args)]
pub struct ReviewResolveArgs {
    #[command(flatten)]
    pub db: LedgerArgs,
    /// The review item's id, as `review show ID` takes it.
    #[arg(
        value_name = "ID",
        required_unless_present = "id_flag",
        conflicts_with = "id_flag"
    )]
    pub item: Option<i64>,
    /// The review item's id, as a flag (the same as ID).
    #[arg(long = "id", id = "id_flag", value_name = "ID")]
    pub id_flag: Option<i64>,
    /// The operator's decision: a decision outcome of the case's pack, `retry` or `stop` for a
    /// task, or `handoff` (see `review show`).
    #[arg(long)]
    pub decision: String,
    /// Pack files or folders, to check a case's decision by its job (default ./packs).
    #[arg(long, value_name = "PATH")]
    pub packs: Vec<PathBuf>,
    /// The operator resolving it.
    #[arg(long, value_name = "NAME")]
    pub by: String,
    /// A note for the record.
    #[arg(long)]
    pub note: Option<String>,
    /// The time of the resolution (RFC 3339), instead of the clock.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `backstop purge`.
#[derive(Debug, Args)]
pub struct PurgeArgs {
    #[command(flatten)]
    pub db: LedgerArgs,
    /// Keep records younger than this (`30d`, `72h`, `90m`).
    #[arg(long, value_name = "DURATION", default_value = "30d")]
    pub older_than: String,
    /// The time to count back from (RFC 3339), instead of the clock.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
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
  2  bad flags (every issue is listed), or no ledger at --db (never created here)";

/// `backstop task ...`.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Print a task's call-level state: counters, stop, tools, the next steps.
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
    pub db: LedgerArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub const CALIBRATE_CALLS_HELP: &str = "\
Examples:
  backstop calibrate calls --db ./backstop.db
  backstop calibrate calls --db postgres://user@host/backstop --json

Reads the ledger's call journal (what `backstop serve`, `hint --db` and the MCP server record)
and prints, per tool and class, how often the k-th retry of a failed call recovered, and the
limit and backoff the outcomes recommend. A task's failures of one tool and class, each within
an hour of the one before, are one episode: its first failure is the call, each later one a
retry that failed, and a success of the task reported to POST /v1/outcomes (with `task`) is the
retry that recovered. Another tool or class, a reset or an hour's gap ends an episode with no
recovery; an episode's last retry that nothing followed is not counted. A recommendation needs
30 failures of the tool and class and 5 first retries: max_attempts is how many retries in a
row recovered at least 10% of the times they were tried (0: do not retry this class on this
tool), the backoff base and cap the median and 90th percentile of the waits before a retry
that recovered. Nothing is written.

Exit codes:
  0  the table was printed (with a recommendation or the reason for none, per tool and class)
  1  the ledger could not be opened or read
  2  bad flags, or no ledger at --db (never created here)";

/// `backstop calibrate ...`.
#[derive(Debug, Subcommand)]
pub enum CalibrateCommand {
    /// From the call journal: per tool and class, how often the k-th retry recovered, and the
    /// retry limit and backoff it recommends.
    #[command(after_help = CALIBRATE_CALLS_HELP)]
    Calls(CalibrateCallsArgs),
}

/// `backstop calibrate calls`.
#[derive(Debug, Args)]
pub struct CalibrateCallsArgs {
    #[command(flatten)]
    pub db: LedgerArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub const APPROACHES_HELP: &str = "\
Examples:
  backstop approaches --db ./backstop.db
  backstop approaches --caller research-agent --db postgres://user@host/backstop --json

A failed approach is a tool and operation on which a task spent every attempt its failure's
class allows; backstop remembers it for the task's caller (a day after its last failure, or
until the tool succeeds again) and answers that caller's next task on the same tool and
operation with it, turning a resend into change_approach. This lists them from the ledger's
call journal, as GET /v1/approaches does for an operator: every caller's, or one caller's with
--caller. Nothing is written.

Exit codes:
  0  the list was printed (also when it is empty)
  1  the ledger could not be opened or read
  2  bad flags, or no ledger at --db (never created here)";

/// `backstop approaches`.
#[derive(Debug, Args)]
pub struct ApproachesArgs {
    /// Only this caller's approaches (default: every caller's).
    #[arg(long, value_name = "NAME")]
    pub caller: Option<String>,
    #[command(flatten)]
    pub db: LedgerArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}
