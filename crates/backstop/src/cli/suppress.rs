//! The flags of `backstop suppress`.

use clap::{Args, Subcommand};

use super::OutputArgs;

pub const SUPPRESS_LIST_HELP: &str = "\
Examples:
  backstop suppress list --db ./backstop.db
  backstop suppress list --db ./backstop.db --contact +15550100 --lifted --json

Lists the contacts on the suppression list (a result asked not to be contacted: do_not_call),
newest first: whose, on which job, for one case or for every case, when and why. With
--lifted, the ones an operator lifted, with who lifted each, when and why. Human-readable on a
terminal, JSON when piped or with --json: {\"suppressions\": [...]}.

Exit codes:
  0  the suppressions were printed (none is not an error)
  1  the ledger could not be opened or read
  2  bad flags, or no ledger at --db (never created here)";

pub const SUPPRESS_LIFT_HELP: &str = "\
Examples:
  backstop suppress lift --db ./backstop.db --job po-acknowledgement --contact +15550100 \\
    --by dana --reason \"the supplier asked to be called again\"

Lifts a suppression: the contact may be reached again. Who lifted it (--by), when and why
(--reason, required) are kept (`suppress list --lifted`). --case lifts the suppression for one
case; without it, the one for every case of the caller on the job. The CLI is the local
operator; over HTTP, only an operator's key may lift (POST /v1/suppressions/lift).

Exit codes:
  0  lifted: the record is printed as JSON
  1  the ledger could not be opened or written
  2  bad flags, or no ledger at --db (never created here)
  3  refused: no such suppression is in force (not_found)";

/// `backstop suppress ...`.
#[derive(Debug, Subcommand)]
pub enum SuppressCommand {
    /// List the suppression list (or the lifted suppressions).
    #[command(after_help = SUPPRESS_LIST_HELP)]
    List(SuppressListArgs),
    /// Lift a suppression, with who, when and why kept.
    #[command(after_help = SUPPRESS_LIFT_HELP)]
    Lift(SuppressLiftArgs),
}

/// `backstop suppress list`.
#[derive(Debug, Args)]
pub struct SuppressListArgs {
    /// The ledger: an existing `SQLite` file, or a `postgres://` URL.
    #[arg(long, value_name = "PATH|URL", default_value = "./backstop.db", env = crate::settings::ENV_DB, hide_env_values = true)]
    pub db: backstop_store::Location,
    /// Only this caller's.
    #[arg(long, value_name = "NAME")]
    pub caller: Option<String>,
    /// Only this job's.
    #[arg(long, value_name = "JOB")]
    pub job: Option<String>,
    /// Only this contact's.
    #[arg(long, value_name = "CONTACT")]
    pub contact: Option<String>,
    /// The lifted suppressions instead, with who lifted each, when and why.
    #[arg(long)]
    pub lifted: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `backstop suppress lift`.
#[derive(Debug, Args)]
pub struct SuppressLiftArgs {
    /// The ledger: an existing `SQLite` file, or a `postgres://` URL.
    #[arg(long, value_name = "PATH|URL", default_value = "./backstop.db", env = crate::settings::ENV_DB, hide_env_values = true)]
    pub db: backstop_store::Location,
    /// Whose contact it is (the caller whose dispatch's result asked for it).
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub caller: String,
    /// The job.
    #[arg(long, value_name = "JOB")]
    pub job: String,
    /// The contact.
    #[arg(long, value_name = "CONTACT")]
    pub contact: String,
    /// The one case the suppression holds for (default: the one for every case).
    #[arg(long = "case", value_name = "ID")]
    pub case_id: Option<String>,
    /// The operator lifting it.
    #[arg(long, value_name = "NAME")]
    pub by: String,
    /// Why, for the record.
    #[arg(long)]
    pub reason: String,
    #[command(flatten)]
    pub output: OutputArgs,
}
