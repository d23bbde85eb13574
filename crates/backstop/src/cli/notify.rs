//! The flags of `backstop notify`.

use clap::{Args, Subcommand};

use super::OutputArgs;

pub const NOTIFY_LIST_HELP: &str = "\
Examples:
  backstop notify list --db ./backstop.db
  backstop notify list --db postgres://user@host/backstop --status failed --json

Lists the notifications `backstop serve` enqueued for its [[notify]] targets (docs/service.md,
\"Notifications\"), newest first: each event once per target, its stable id (the
Backstop-Event-Id header, the same on every retry), its status (pending, delivered, or failed:
given up), its tries, when it is tried next or was finished, and why the last try failed.
Human-readable on a terminal, JSON when piped or with --json: {\"notifications\": [...]}, each
with its payload (ids, names, times and the pack's hand-off; never excerpt text).

The ledger must exist: a --db path with no ledger is refused, never created.

Exit codes:
  0  the notifications were printed (none is not an error)
  1  the ledger could not be opened or read
  2  bad flags, or no ledger at --db (never created here)";

/// `backstop notify ...`.
#[derive(Debug, Subcommand)]
pub enum NotifyCommand {
    /// List notifications to people (`[[notify]]` targets): deliveries and failures.
    #[command(after_help = NOTIFY_LIST_HELP)]
    List(NotifyListArgs),
}

/// `backstop notify list`.
#[derive(Debug, Args)]
pub struct NotifyListArgs {
    /// The ledger: an existing `SQLite` file, or a `postgres://` URL.
    #[arg(long, value_name = "PATH|URL", default_value = "./backstop.db", env = crate::settings::ENV_DB, hide_env_values = true)]
    pub db: backstop_store::Location,
    /// Which notifications.
    #[arg(long, value_enum, default_value_t = NotifyStatusArg::All)]
    pub status: NotifyStatusArg,
    /// At most this many.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub limit: u32,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Which notifications to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NotifyStatusArg {
    /// Not delivered yet (tried again on their schedule).
    Pending,
    /// Delivered: a receiver answered 2xx.
    Delivered,
    /// Given up.
    Failed,
    /// Every status.
    All,
}
