//! The flags of the side-effect commands: `dispatch`, `key`, `reconcile`, `demo`, and
//! `pack schema`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::cases::{DbArgs, LedgerArgs};

pub const DISPATCH_HELP: &str = "\
Examples:
  backstop dispatch --pack packs/po-acknowledgement.toml < call.json
  backstop dispatch outcome dk_4f0c... --outcome unknown --failure-code E504
  backstop dispatch show dk_4f0c...

The request (stdin) names the content sent, the values interpolated into it, and the
recipients, each with its own id, contact and case:
  {\"content\": {\"task\": \"...\"}, \"values\": {\"company\": \"Northwind Traders\"},
   \"recipients\": [{\"id\": \"r1\", \"contact\": \"+15550100\",
                    \"case\": {\"fields\": {\"supplier\": \"Acme\", \"po_number\": \"PO-1\"}}}]}
Each recipient is answered: permitted (go, with its key; then report the outcome), simulated,
deferred (with not_before; never escalated), suppressed, duplicate, reconcile, or refused (with
the escalation). A dispatch goes live only when the pack says `live = true` and --config names
a service config holding [dispatch] live_key. The same content always gets the same key: asked
for twice, it is permitted once.

Exit codes:
  0  every recipient was answered (the answers are printed; JSON when piped or with --json)
  1  the ledger could not be opened or written
  2  bad input: bad flags, a bad pack or config, or a request that is not JSON or is
     malformed (every issue is listed); for `outcome` and `show`, no ledger at --db (they never
     create one)
  3  the request was refused (no [dispatch] table; the refusal is printed), or for `outcome`
     and `show`: no such dispatch, or a report that comes too late";

pub const KEY_HELP: &str = "\
Example:
  backstop key --pack packs/po-acknowledgement.toml --caller buyer-agent < call.json

Prints the content-derived key of each recipient of a dispatch request, and the batch's key,
without touching a ledger. The key is a SHA-256 of the caller, the job, the case, the canonical
content (JSON keys sorted) and the recipient: the same request gives the same keys on any
machine, in any recipient order.

Exit codes:
  0  the keys were printed
  2  bad input: bad flags, a bad pack, or a request that is not JSON or is malformed (every
     issue is printed)
  3  the pack has no [dispatch] table";

pub const RECONCILE_HELP: &str = "\
Examples:
  backstop reconcile --config backstop.toml
  backstop reconcile --db ./backstop.db --packs packs --now 2026-12-02T18:00:00Z

Runs the reconciliation sweep once, as `serve` does on its interval: every dispatch with no
result past its pack's reconcile_after is asked for (the pack's status_url, or the simulator for
a simulated one); what comes back is decided like a webhook's result, and what stays unknown is
reconciled once more and then handed to a person. Recorded deliveries still pending are decided
too. No attempt is used and nothing is ever dispatched again.

Exit codes:
  0  the sweep ran; what it did is printed (JSON when piped or with --json)
  1  the ledger could not be opened, read or written
  2  bad flags or a bad config (every issue is listed), or no ledger at --db";

pub const DEMO_HELP: &str = "\
Runs the purchase-order scenario end to end on a temporary ledger, with nothing to set up: one
batch dispatch to eight suppliers through the simulator (not live), signed webhook deliveries
(some sent twice, one lost), the reconciliation sweep that finds the lost one, and the PO pack's
decisions. Prints one row per purchase order: its outcome, its escalation, its dispatches, the
duplicate deliveries dropped, and whether it was reconciled. Quiet hours are left out of the
demo's copy of the pack, so it runs at any hour.

Exit codes:
  0  the scenario ran
  1  it could not (a port, the temporary ledger)";

/// `backstop dispatch`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct DispatchArgs {
    #[command(subcommand)]
    pub command: Option<DispatchCommand>,
    /// The job's pack file (it needs a [dispatch] table).
    #[arg(long, value_name = "FILE", required = true)]
    pub pack: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
    /// Who is asking: dispatches and cases belong to one caller.
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub caller: String,
    /// A service config whose `[dispatch] live_key` lets a live pack dispatch live.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The time of the dispatch (RFC 3339), instead of the clock.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    #[command(flatten)]
    pub output: super::OutputArgs,
}

/// `backstop dispatch ...`.
#[derive(Debug, Subcommand)]
pub enum DispatchCommand {
    /// Report whether a permitted dispatch went out: sent, failed or unknown.
    #[command(after_help = "Exit codes:
  0  the outcome was recorded (the dispatch is printed)
  1  the ledger could not be opened or written
  2  bad flags, or no ledger at --db (never created here)
  3  no such dispatch, or a report that comes too late (the refusal is printed)")]
    Outcome(OutcomeArgs),
    /// Print a dispatch and the deliveries recorded for it.
    #[command(after_help = "Exit codes:
  0  the dispatch was printed
  1  the ledger could not be opened or read
  2  bad flags, or no ledger at --db (never created here)
  3  no such dispatch (the refusal is printed)")]
    Show(ShowDispatchArgs),
}

/// What an agent reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutcomeFlag {
    /// It went out.
    Sent,
    /// It certainly did not go out.
    Failed,
    /// It may have (a timeout after sending).
    Unknown,
}

/// `backstop dispatch outcome`.
#[derive(Debug, Args)]
pub struct OutcomeArgs {
    /// The dispatch's key.
    pub key: String,
    /// What happened.
    #[arg(long, value_enum)]
    pub outcome: OutcomeFlag,
    /// The target's failure code: stored and shown to a person, never branched on.
    #[arg(long, value_name = "CODE")]
    pub failure_code: Option<String>,
    #[command(flatten)]
    pub db: LedgerArgs,
    /// Whose dispatch it is.
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub caller: String,
    #[command(flatten)]
    pub output: super::OutputArgs,
}

/// `backstop dispatch show`.
#[derive(Debug, Args)]
pub struct ShowDispatchArgs {
    /// The dispatch's key.
    pub key: String,
    #[command(flatten)]
    pub db: LedgerArgs,
    #[command(flatten)]
    pub output: super::OutputArgs,
}

/// `backstop key`.
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// The job's pack file.
    #[arg(long, value_name = "FILE")]
    pub pack: PathBuf,
    /// The caller the dispatch is for (keys differ per caller, as cases do).
    #[arg(long, value_name = "NAME", default_value = "local")]
    pub caller: String,
    #[command(flatten)]
    pub output: super::OutputArgs,
}

/// `backstop reconcile`.
#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// The service's config (its ledger, packs and status URLs).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The ledger, over the config's.
    #[arg(long, value_name = "PATH", env = crate::settings::ENV_DB, hide_env_values = true)]
    pub db: Option<backstop_store::Location>,
    /// Pack files or folders, over the config's (default ./packs).
    #[arg(long, value_name = "PATH")]
    pub packs: Vec<PathBuf>,
    /// The time the sweep counts from (RFC 3339), instead of the clock.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    #[command(flatten)]
    pub output: super::OutputArgs,
}

/// `backstop demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub output: super::OutputArgs,
}

/// `backstop pack schema`.
#[derive(Debug, Args)]
pub struct PackSchemaArgs {
    /// The job, or a pack file.
    #[arg(value_name = "JOB")]
    pub job: String,
    /// Where packs are found (files or folders; default ./packs).
    #[arg(long, value_name = "PATH")]
    pub packs: Vec<PathBuf>,
}

/// `backstop pack brief`.
#[derive(Debug, Args)]
pub struct PackBriefArgs {
    /// The job, or a pack file.
    #[arg(value_name = "JOB")]
    pub job: String,
    /// Where packs are found (files or folders; default ./packs).
    #[arg(long, value_name = "PATH")]
    pub packs: Vec<PathBuf>,
    /// How to print.
    #[command(flatten)]
    pub output: super::OutputArgs,
}
