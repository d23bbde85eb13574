//! The command line, as clap structs that mirror the flags. Meaning is given in `settings.rs`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod cases;
mod effects;
mod notify;
mod proxy;
mod service;
mod suppress;

use cases::{APPROACHES_HELP, DECIDE_HELP, PURGE_HELP};
pub use cases::{
    ApproachesArgs, CalibrateCallsArgs, CalibrateCommand, CasesCommand, CasesShowArgs, DecideArgs,
    LedgerArgs, PurgeArgs, ReviewCommand, ReviewListArgs, ReviewResolveArgs, ReviewShowArgs,
    ReviewStatus, TaskArgs, TaskCommand,
};
use effects::{DEMO_HELP, DISPATCH_HELP, KEY_HELP, RECONCILE_HELP};
pub use effects::{
    DemoArgs, DispatchArgs, DispatchCommand, KeyArgs, OutcomeArgs, OutcomeFlag, PackBriefArgs,
    PackSchemaArgs, ReconcileArgs, ShowDispatchArgs,
};
pub use notify::{NotifyCommand, NotifyListArgs, NotifyStatusArg};
use proxy::PROXY_HELP;
pub use proxy::ProxyArgs;
pub use service::{ConfigCheckArgs, ConfigCommand, HashKeyArgs, McpArgs, ServeArgs};
use service::{MCP_HELP, SERVE_HELP};
pub use suppress::{SuppressCommand, SuppressLiftArgs, SuppressListArgs};

/// Exit codes, the same meaning for every command; each command's --help lists its own.
pub const EXIT_CODES: &str = "\
Exit codes (the same failure, the same code, in every command):
  0  done (for classify: a classification was printed, whatever its class)
  1  a checked file has issues (rules, strategies, pack, config check), or an I/O or ledger
     failure (or a service's 5xx, for hint --server)
  2  bad input: a flag, a report or request (not JSON, or malformed), or a file that is
     missing, unreadable or has issues; every issue is listed and nothing was changed
  3  a well-formed request was refused (unknown case, decision not allowed, a conflict, a key
     the service does not know); the refusal is printed
  4-8  backstop loop's own ends (see backstop loop --help)
Each command's --help lists the codes it uses; docs/cli.md has the whole grammar.";

/// The exit codes a command group's --help gives (its subcommands list their own).
const GROUP_EXIT_CODES: &str = "\
Exit codes: each subcommand's --help lists its own; across them 0 is done, 1 a check that found
issues or an I/O or ledger failure, 2 bad input (every issue listed; nothing changed), 3 a
refusal (printed).";

/// backstop: the retry-and-escalation authority for AI agents.
///
/// An agent asks backstop what to do after anything other than a clean success. backstop
/// classifies the failure with rules (never a prompt) and answers with a typed next step.
#[derive(Debug, Parser)]
#[command(name = "backstop", version, after_help = EXIT_CODES)]
pub struct Cli {
    /// Log filter (e.g. `debug`, `backstop=trace`); logs go to stderr.
    #[arg(long, global = true, value_name = "FILTER", default_value = "warn", env = crate::settings::ENV_LOG)]
    pub log_level: String,

    /// Log lines as text or as JSON objects (one per line).
    #[arg(long, global = true, value_enum, value_name = "FORMAT", default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// For people.
    Text,
    /// One JSON object per line.
    Json,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP service: classify, recover, decide cases, reviews, metrics.
    #[command(after_help = SERVE_HELP)]
    Serve(ServeArgs),
    /// Serve backstop's tools to an agent over the Model Context Protocol (stdio), on the local
    /// ledger or a running service.
    #[command(after_help = MCP_HELP)]
    Mcp(McpArgs),
    /// Front an MCP server: its tools, resources and prompts passed through, every tool call
    /// governed (counted, refused when the task was stopped, resent only when safe).
    #[command(after_help = PROXY_HELP)]
    Proxy(ProxyArgs),
    /// Work with the service's config file.
    #[command(subcommand, after_help = GROUP_EXIT_CODES)]
    Config(ConfigCommand),
    /// Classify a failed call: one report from flags or stdin, or a JSON Lines stream.
    #[command(after_help = CLASSIFY_HELP)]
    Classify(Box<ClassifyArgs>),
    /// Work with classifier rule files.
    #[command(subcommand, after_help = GROUP_EXIT_CODES)]
    Rules(RulesCommand),
    /// The next step after a failed call: classify it, count the attempt, answer what to do.
    #[command(after_help = HINT_HELP)]
    Hint(Box<HintArgs>),
    /// Replay a recorded trace of call outcomes: what backstop would have said at each step.
    #[command(after_help = REPLAY_HELP)]
    Replay(ReplayArgs),
    /// Work with recovery strategy files.
    #[command(subcommand, after_help = GROUP_EXIT_CODES)]
    Strategies(StrategiesCommand),
    /// Keep working until the tests pass: run an attempt, then the tests; stop early when another
    /// attempt is not worth it.
    #[command(
        name = "loop",
        after_help = LOOP_HELP,
        subcommand_negates_reqs = true,
        args_conflicts_with_subcommands = true
    )]
    Loop(LoopArgs),
    /// Simulate many clients retrying against one resource, to compare backoff kinds.
    #[command(subcommand, after_help = GROUP_EXIT_CODES)]
    Simulate(SimulateCommand),
    /// Work with pack files: the policy for one job.
    #[command(subcommand, after_help = GROUP_EXIT_CODES)]
    Pack(PackCommand),
    /// Ask for a decision on a case: a request read from stdin, judged against a pack, counted
    /// on the ledger.
    #[command(after_help = DECIDE_HELP)]
    Decide(DecideArgs),
    /// Show what the ledger keeps of a case.
    #[command(subcommand, after_help = GROUP_EXIT_CODES)]
    Cases(CasesCommand),
    /// Review items: held cases and escalated tasks waiting for a person.
    #[command(subcommand, after_help = GROUP_EXIT_CODES)]
    Review(ReviewCommand),
    /// Notifications to people (`[[notify]]`): delivered, pending and failed.
    #[command(subcommand, after_help = GROUP_EXIT_CODES)]
    Notify(NotifyCommand),
    /// A task's call-level state on the ledger: show it, or reset it.
    #[command(subcommand, after_help = GROUP_EXIT_CODES)]
    Task(TaskCommand),
    /// Govern an agent's tool calls from its command hooks (Claude Code's hooks before and
    /// after each tool call): one hook document on stdin, the answer on stdout.
    #[command(after_help = HOOK_HELP)]
    Hook(HookArgs),
    /// The failed approaches the ledger remembers: tools and operations on which a task spent
    /// every attempt of a class.
    #[command(after_help = APPROACHES_HELP)]
    Approaches(ApproachesArgs),
    /// Learn from the ledger's outcomes: how often each retry recovered, per tool and class.
    #[command(subcommand, after_help = GROUP_EXIT_CODES)]
    Calibrate(CalibrateCommand),
    /// The suppression list (contacts that asked not to be contacted): list it, or lift an
    /// entry as an operator, with who, when and why kept.
    #[command(subcommand, after_help = GROUP_EXIT_CODES)]
    Suppress(SuppressCommand),
    /// Delete ledger records past retention (30 days by default).
    #[command(after_help = PURGE_HELP)]
    Purge(PurgeArgs),
    /// Ask permission for a side effect (a call, an email): one answer per recipient, the same
    /// content permitted once; report its outcome; show it.
    #[command(after_help = DISPATCH_HELP)]
    Dispatch(DispatchArgs),
    /// Print the content-derived keys of a dispatch request, touching no ledger.
    #[command(after_help = KEY_HELP)]
    Key(KeyArgs),
    /// Run the reconciliation sweep once: results that never came are fetched, or escalated.
    #[command(after_help = RECONCILE_HELP)]
    Reconcile(ReconcileArgs),
    /// Run the eight-purchase-order scenario end to end on a temporary ledger.
    #[command(after_help = DEMO_HELP)]
    Demo(DemoArgs),
    /// Print a shell's completion script for every command and flag.
    #[command(after_help = COMPLETIONS_HELP)]
    Completions(CompletionsArgs),
    /// Write a man page for backstop and for each of its commands.
    #[command(after_help = MAN_HELP)]
    Man(ManArgs),
}

const COMPLETIONS_HELP: &str = "\
Examples:
  backstop completions bash > ~/.local/share/bash-completion/completions/backstop
  backstop completions zsh > \"${fpath[1]}/_backstop\"
  backstop completions fish > ~/.config/fish/completions/backstop.fish

Exit codes:
  0  the script was printed
  2  an unknown shell";

const MAN_HELP: &str = "\
Examples:
  backstop man --out ~/.local/share/man/man1 && man backstop
  backstop man | man -l -

Without --out, prints backstop(1) alone. With --out, writes backstop.1 and one page per command
(backstop-review-resolve.1, ...), each from the same text as --help.

Exit codes:
  0  the pages were written
  1  the folder could not be written";

/// `backstop completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `backstop man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The folder to write every page to (made if missing); without it, backstop(1) is printed.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

const CLASSIFY_HELP: &str = "\
Examples:
  backstop classify --status 503 --header 'Retry-After: 2'
  echo '{\"error_code\": \"insufficient_quota\", \"http_status\": 429}' | backstop classify
  backstop classify --jsonl < reports.jsonl > classifications.jsonl

With no report flags, one JSON report is read from stdin (fields as the flags, in snake_case:
http_status, headers, grpc_code, exit_code, signal, errno, sqlstate, exception, error_code,
message, output, schema, side_effects, elapsed_ms, tool, operation, idempotent,
idempotency_key). Output is human-readable on
a terminal and JSON when piped or with --json. With --jsonl, each input line gets one output
line: a classification, or {\"line\": N, \"error\": {...}} for a bad line; the stream goes on.

Exit codes:
  0  a classification was printed (also for unclassified, and for --jsonl with bad lines)
  1  an I/O failure
  2  bad input: a flag, the report or a --rules file was refused; every issue is listed";

const HINT_HELP: &str = "\
Examples:
  backstop hint --task t1 --status 503 --tool search
  echo '{\"http_status\": 429, \"headers\": {\"retry-after\": \"2\"}}' | backstop hint --task t1
  backstop hint --task t1 --jsonl < failures.jsonl
  backstop hint --task t1 --exception ReadTimeout --operation 'POST /v1/charges'

A call that may have taken effect (a timeout or a reset after it was sent, a 502 or 504) and is
not idempotent (POST or PATCH with no --idempotency-key, --idempotent false, or a tool set
`idempotent = false` in the strategies) is never answered retry_same: the step is reconcile
(check whether it happened, then resend only under an idempotency key).

Examples, counted on a ledger from run to run:
  backstop hint --db backstop.db --task t1 --status 503 --tool search
  backstop hint --server http://127.0.0.1:7600 --key-file key.txt --task t1 --status 503

Without --db or --server, a one-shot hint starts from fresh counters. With --db, the attempt is
counted on that ledger exactly as the service's POST /v1/recover counts it (breakers, budgets,
a policy denial that stops the task), so the next run of hint, a service or an MCP server on
the same ledger sees it; with --server, the running service counts it. Either way failures are
counted at the time they are answered: --now, --seed and a line's `at` are refused. With --jsonl, each line is one failure of the trace,
counters carried from line to line: a report, or {\"report\": {...}, \"task\": \"t2\",
\"at\": \"2026-01-01T00:00:05Z\", \"context\": {\"tool\": ..., \"operation\": ..., \"error\": ...}}
where every key but report is optional (task defaults to --task, at to --now; --task may be
left out when every line names its task: a line that names none is refused). The step is JSON
when piped or with --json: {class, action, hint, delay_ms, defer_until, attempts, breaker,
budget, escalation, reason}.

Exit codes:
  0  a step was printed (whatever its action; also for --jsonl with bad lines)
  1  an I/O failure, a ledger failure, or the --server could not be reached
  2  bad input: a flag, the report, a rules or strategies file was refused; every issue listed
  3  the --server refused the request (a bad key, too many requests): the refusal is printed";

const REPLAY_HELP: &str = "\
A trace is JSON Lines in time order, one call outcome a line:
  {\"at\": \"2026-01-01T00:00:00Z\", \"task\": \"t1\", \"tool\": \"search\", \"outcome\": \"failure\", \"report\": {\"http_status\": 503}}
  {\"at\": \"2026-01-01T00:00:02Z\", \"task\": \"t1\", \"tool\": \"search\", \"outcome\": \"success\"}
Each failure is classified and given backstop's step; successes feed the tool's breaker and
budget. A call is counted as saved when an earlier step for the same task and tool said stop,
escalate or fall back, or asked for a wait that had not yet passed. A bad trace is refused
whole, every bad line listed.

Exit codes:
  0  the replay was printed
  1  an I/O failure
  2  bad input: the trace, a flag, a rules or strategies file was refused";

const LOOP_HELP: &str = "\
Each round runs the attempt command (if given), then the test command, both with `sh -c`.
The attempt's environment carries BACKSTOP_ATTEMPT, BACKSTOP_MAX_ATTEMPTS, BACKSTOP_STRATEGY
(same_approach or change_approach) and BACKSTOP_FAILURE_FILE (the last failure, secrets
redacted, and a short history). Only a passing test run (exit status 0) ends the loop as done.
After a failure the built-in decider reads the test output (cargo test, nextest, pytest, go
test, jest, vitest, or an `N passed, N failed` line), scores the next attempt 1 to 5 and
chooses same_approach, change_approach or stop; output it cannot read leaves the fixed cap in
charge. Secrets are redacted from test output before it is shown, logged or written.

Examples:
  backstop loop --test 'cargo test' --attempt './agent.sh' --max-attempts 5
  backstop loop --test 'pytest -q' --attempt 'make fix' --log loop.jsonl --handoff handoff/

Exit codes:
  0  the tests passed
  1  an I/O failure
  2  bad flags
  3  every attempt was spent (the last failure is in --handoff)
  4  the decider chose to stop
  5  the expected score fell below --threshold
  6  the external decider abstained: ask a person
  7  the test command could not run (not found or not executable)
  8  the attempt command could not run (not found or not executable)

An external decider (--decider URL) gets POST {\"state\": {attempt, max_attempts, tests,
test_output, previous_failures}, \"questions\": {next_attempt, strategy}} with a fresh
Idempotency-Key per question and, if BACKSTOP_DECIDER_KEY is set, a bearer token. It answers
{\"answers\": {\"next_attempt\": {\"expected_score\", \"abstained\"}, \"strategy\":
{\"decision\", \"abstained\"}}}. An error or a timeout leaves the fixed cap in charge.";

/// `backstop loop`.
#[derive(Debug, Args)]
pub struct LoopArgs {
    /// The test command; exit status 0 means the work is done.
    #[arg(long, value_name = "CMD", required = true)]
    pub test: Option<String>,
    /// The command that makes one attempt (an agent run, a fix script).
    #[arg(long, value_name = "CMD")]
    pub attempt: Option<String>,
    /// The most attempts, 1 to 1000.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_attempts: u32,
    /// Stop when the expected score (1 to 5) of the next attempt is below this. The default
    /// stops only on the built-in decider's lowest score (the same failure three times): a
    /// failure seen twice changes the approach first.
    #[arg(long, value_name = "SCORE", default_value_t = 1.5, value_parser = parse_threshold)]
    pub threshold: f64,
    /// `builtin` (reads the test output), or the URL of an external decider to POST to
    /// (bearer token from `BACKSTOP_DECIDER_KEY`).
    #[arg(long, value_name = "builtin|URL", default_value = "builtin", value_parser = parse_decider)]
    pub decider: String,
    /// How long to wait for an external decider before the fixed cap decides (e.g. 60s).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    pub decider_timeout: std::time::Duration,
    /// Append one JSON line per attempt (score, result, reason) to this file.
    #[arg(long, value_name = "FILE.jsonl")]
    pub log: Option<PathBuf>,
    /// When the loop stops without passing, write handoff.md and handoff.json here.
    #[arg(long, value_name = "DIR")]
    pub handoff: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(subcommand)]
    pub command: Option<LoopCommand>,
}

/// `backstop loop ...`.
#[derive(Debug, Subcommand)]
pub enum LoopCommand {
    /// From loop logs: the pass rate of the attempt after each score, and the threshold that
    /// would have saved the most attempts without stopping a run that later passed.
    #[command(
        after_help = "Exit codes:\n  0  the table was printed (with a recommended threshold or the reason for none)\n  2  a log could not be read, or a line is not a loop log line (every one is listed)"
    )]
    Calibrate(CalibrateArgs),
}

/// `backstop loop calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Logs written by `backstop loop --log`.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

fn parse_decider(text: &str) -> Result<String, String> {
    if text == "builtin" || text.starts_with("http://") || text.starts_with("https://") {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "`{text}` is neither `builtin` nor an http:// or https:// URL"
        ))
    }
}

fn parse_timeout(text: &str) -> Result<std::time::Duration, String> {
    match text.parse::<jiff::SignedDuration>() {
        Ok(d) if d.is_positive() => std::time::Duration::try_from(d).map_err(|e| e.to_string()),
        _ => Err(format!(
            "`{text}` is not a positive duration like 60s or 1m30s"
        )),
    }
}

fn parse_threshold(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if (1.0..=5.0).contains(&v) => Ok(v),
        _ => Err(format!("`{text}` is not a score from 1 to 5")),
    }
}

/// `backstop hint`.
#[derive(Debug, Args)]
pub struct HintArgs {
    /// The agent's task: attempts are counted per task (with --jsonl, the task of lines that
    /// name none; needed only if one doesn't).
    #[arg(long, value_name = "ID", required_unless_present = "jsonl")]
    pub task: Option<String>,
    #[command(flatten)]
    pub report: ReportArgs,
    /// The time of the failure (RFC 3339); default: now.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Read one failure per line from stdin; write one JSON step per line, counters carried.
    #[arg(long, conflicts_with_all = REPORT_FLAGS, conflicts_with = "output_format")]
    pub jsonl: bool,
    /// Count on this ledger, as the service's `POST /v1/recover` does, so the next run (and a
    /// service or MCP server on the same ledger) sees this attempt: a `SQLite` file (created if
    /// missing) or a `postgres://` URL. Failures are counted when they are answered.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["server", "now", "seed"])]
    pub db: Option<backstop_store::Location>,
    /// Count on a running service instead: each failure is sent to `URL/v1/recover`, and the
    /// service's rules and strategies answer.
    #[arg(long, value_name = "URL", conflicts_with_all = ["now", "seed", "rules", "strategies"])]
    pub server: Option<String>,
    /// The API key for --server, in a file of one line.
    #[arg(long, value_name = "FILE", requires = "server")]
    pub key_file: Option<PathBuf>,
}

/// `backstop replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace: JSON Lines of call outcomes in time order.
    #[arg(value_name = "TRACE.jsonl")]
    pub trace: PathBuf,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The policy a recovery command applies (`hint`, `replay`).
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// A rules file to use before the built-in rules; repeat for more.
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// A strategies file over the built-in strategies (see `backstop strategies show`).
    #[arg(long, value_name = "FILE")]
    pub strategies: Option<PathBuf>,
    /// The seed of the delays' jitter: the same seed gives the same steps.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
}

/// `backstop strategies ...`.
#[derive(Debug, Subcommand)]
pub enum StrategiesCommand {
    /// Check strategy files over the built-in table; every issue is listed with its path.
    #[command(
        after_help = "Exit codes:\n  0  no issues\n  1  issues found (listed)\n  2  a file could not be read"
    )]
    Check(RulesCheckArgs),
    /// Print the built-in strategies (rules/strategies.toml).
    #[command(after_help = PRINT_EXIT_CODES)]
    Show,
}

const HOOK_HELP: &str = "\
Examples (as the hook command in an agent's settings; docs/hooks.md has the entry to paste):
  backstop hook --db ~/.backstop/hooks.db
  backstop hook --server http://127.0.0.1:7600 --key-file ~/.backstop/key.txt

Reads one hook document (JSON) on stdin: hook_event_name, session_id, tool_name, tool_input,
and tool_response (PostToolUse) or error (PostToolUseFailure). The session is the task, the
tool the tool, and the call's arguments (hashed) its operation.
  PreToolUse          denied (permissionDecision deny, with the reason the model reads) when
                      the session was stopped by a policy denial, the tool's breaker is open,
                      or the same call (tool and arguments) spent every attempt of a class;
                      otherwise nothing is printed and the call goes on
  PostToolUseFailure  the failure is counted as POST /v1/recover counts it; the next step is
  PostToolUse         printed as additionalContext (the model reads it). A PostToolUse whose
   (failed)           response says is_error/isError/success:false is a failure too, and its
                      step to stop, hand off or reconcile also blocks (decision block)
  PostToolUse (ok)    reported as a success: the session's counters start again
Other events are ignored (exit 0, nothing printed). The ledger is created if missing.

Exit codes (the hook protocol's):
  0  answered (JSON on stdout, or nothing to say)
  1  backstop could not answer (a bad document, a bad flag, a ledger or service that failed):
     the reason is on stderr, and the agent goes on with the call; backstop never blocks a
     call because it failed itself";

/// `backstop hook`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The ledger the hook counts on: a `SQLite` file (created if missing) or a `postgres://`
    /// URL.
    #[arg(long, value_name = "PATH", default_value = "./backstop.db", env = crate::settings::ENV_DB, hide_env_values = true)]
    pub db: backstop_store::Location,
    /// Count on a running service instead of a ledger (a fleet of agents shares it).
    #[arg(long, value_name = "URL", conflicts_with_all = ["rules", "strategies"])]
    pub server: Option<String>,
    /// The API key for --server, in a file of one line.
    #[arg(long, value_name = "FILE", requires = "server")]
    pub key_file: Option<PathBuf>,
    /// A rules file to use before the built-in rules; repeat for more.
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// A strategies file over the built-in strategies.
    #[arg(long, value_name = "FILE")]
    pub strategies: Option<PathBuf>,
}

/// `backstop classify`.
#[derive(Debug, Args)]
pub struct ClassifyArgs {
    #[command(flatten)]
    pub report: ReportArgs,

    /// The time to read HTTP-date retry hints against (RFC 3339); default: now.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// A rules file to use before the built-in rules; repeat for more (first file first).
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Read one JSON report per line from stdin; write one JSON result per line.
    /// (JSON Lines output is always JSON: --output-format is refused with it.)
    #[arg(long, conflicts_with_all = REPORT_FLAGS, conflicts_with = "output_format")]
    pub jsonl: bool,
}

/// The flags that make up one report (`classify`, `hint`).
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// HTTP status code (100-599).
    #[arg(long, value_name = "CODE", allow_hyphen_values = true)]
    pub status: Option<String>,
    /// A response header as 'Name: value'; repeat for more.
    #[arg(long = "header", short = 'H', value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,
    /// gRPC status code, as a name (UNAVAILABLE) or number (14).
    #[arg(long, value_name = "CODE")]
    pub grpc_code: Option<String>,
    /// Process exit status.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub exit_code: Option<String>,
    /// The signal that ended the process (SIGKILL, KILL or 9).
    #[arg(long, value_name = "SIGNAL")]
    pub signal: Option<String>,
    /// errno name (ECONNRESET).
    #[arg(long, value_name = "NAME")]
    pub errno: Option<String>,
    /// SQLSTATE (40001).
    #[arg(long, value_name = "CODE")]
    pub sqlstate: Option<String>,
    /// Exception type name, qualified or not (requests.exceptions.ConnectTimeout).
    #[arg(long, value_name = "TYPE")]
    pub exception: Option<String>,
    /// A provider's error code (`ThrottlingException`, `insufficient_quota`).
    #[arg(long, value_name = "CODE")]
    pub error_code: Option<String>,
    /// The error message.
    #[arg(long, short = 'm', value_name = "TEXT", allow_hyphen_values = true)]
    pub message: Option<String>,
    /// The tool's output as JSON, or @FILE.
    #[arg(long, value_name = "JSON")]
    pub output: Option<String>,
    /// The JSON Schema the output should meet, as JSON or @FILE.
    #[arg(long, value_name = "JSON")]
    pub schema: Option<String>,
    /// Side effects done out of total, as DONE/TOTAL (2/5).
    #[arg(long, value_name = "DONE/TOTAL")]
    pub side_effects: Option<String>,
    /// How long the call ran before it failed, in milliseconds.
    #[arg(long, value_name = "MS", allow_hyphen_values = true)]
    pub elapsed_ms: Option<String>,
    /// The tool that was called.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// The operation called on the tool; one that starts with an HTTP method (POST /v1/charges)
    /// says whether the call is idempotent (GET, HEAD, PUT, DELETE are; POST, PATCH are not).
    #[arg(long, value_name = "NAME")]
    pub operation: Option<String>,
    /// Whether sending the call again cannot do its effect twice (true or false); unsaid, the
    /// key, the tool's setting and the operation's HTTP method decide.
    #[arg(long, value_name = "BOOL")]
    pub idempotent: Option<bool>,
    /// The idempotency key the call was sent with: a resend must use the same one.
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
}

/// The flags that make up a report; `--jsonl` takes none of them.
pub const REPORT_FLAGS: [&str; 18] = [
    "status",
    "headers",
    "grpc_code",
    "exit_code",
    "signal",
    "errno",
    "sqlstate",
    "exception",
    "error_code",
    "message",
    "output",
    "schema",
    "side_effects",
    "elapsed_ms",
    "tool",
    "operation",
    "idempotent",
    "idempotency_key",
];

/// How a command prints.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Print JSON even on a terminal (same as --output-format json).
    #[arg(long, conflicts_with = "output_format")]
    pub json: bool,
    /// How to print: auto (human on a terminal, JSON when piped), human or json.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = OutputChoice::Auto)]
    pub output_format: OutputChoice,
}

impl OutputArgs {
    /// The output mode these flags choose.
    pub fn mode(&self) -> crate::settings::OutputMode {
        crate::settings::OutputMode::choose(self.json, self.output_format)
    }
}

/// How output is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputChoice {
    /// Human-readable on a terminal, JSON otherwise.
    Auto,
    /// Human-readable.
    Human,
    /// JSON.
    Json,
}

/// The exit codes of a command that prints what is built in.
const PRINT_EXIT_CODES: &str = "Exit codes:\n  0  printed\n  1  an I/O failure (stdout closed)";

/// `backstop rules ...`.
#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// Lint rule files: syntax, unknown classes or fields, bad regexes, duplicate ids and rules
    /// an earlier rule shadows. Every issue is listed with its path.
    #[command(
        after_help = "Exit codes:\n  0  no issues\n  1  issues found (listed)\n  2  a file could not be read"
    )]
    Check(RulesCheckArgs),
    /// Print the extractors (as comments) and the built-in rules (rules/default.toml).
    #[command(after_help = PRINT_EXIT_CODES)]
    Show,
}

/// `backstop pack ...`.
#[derive(Debug, Subcommand)]
pub enum PackCommand {
    /// Check pack files: every issue listed with its path.
    #[command(
        after_help = "Exit codes:\n  0  no issues\n  1  issues found (listed)\n  2  a file could not be read"
    )]
    Check(RulesCheckArgs),
    /// Print the strict result schema a pack implies for the source that answers its
    /// dispatches: every judgment an enum with `unknown`, nothing else allowed.
    #[command(
        after_help = "Example:\n  backstop pack schema po-acknowledgement > po-result.json\n\nExit codes:\n  0  the schema was printed\n  2  no such job, or a pack with issues"
    )]
    Schema(PackSchemaArgs),
    /// Print a job's brief: its questions and answers with what each means, where to look,
    /// the related records, how a case is named, the attempt limit and window, the outcomes
    /// and the escalations with who they go to (never the indicator patterns or rules).
    #[command(
        after_help = "Example:\n  backstop pack brief vendor-risk\n  backstop pack brief packs/vendor-risk.toml --json\n\nExit codes:\n  0  the brief was printed\n  2  no such job, or a pack with issues"
    )]
    Brief(PackBriefArgs),
}

/// `backstop rules check`.
#[derive(Debug, Args)]
pub struct RulesCheckArgs {
    /// The files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `backstop simulate ...`.
#[derive(Debug, Subcommand)]
pub enum SimulateCommand {
    /// Compare backoff kinds: how many calls and how long until every client has written.
    ///
    /// N clients each want one successful write to the same row, which is updated with a
    /// version check: a call takes --call-ms and succeeds only if no other write committed
    /// while it ran, otherwise the client backs off and calls again (at most 1000 calls a
    /// client). All clients start at once, and every kind (`none`, `full_jitter`,
    /// `equal_jitter`, `decorrelated`) is run from the same seed; no real time passes.
    #[command(after_help = SIMULATE_BACKOFF_HELP)]
    Backoff(SimulateBackoffArgs),
}

const SIMULATE_BACKOFF_HELP: &str = "\
Examples:
  backstop simulate backoff --clients 100
  backstop simulate backoff --clients 1000 --base 100ms --cap 20s --json

Calls take the same time and nothing else varies, so plain exponential backoff (none) shows its
worst case: clients that collided wait the same delay and collide again, one winner a round.

Exit codes:
  0  the simulation ran (also when a kind hit the limit of calls: see `finished`)
  1  an I/O failure
  2  bad input: a flag was refused; every issue is listed";

/// `backstop simulate backoff`.
#[derive(Debug, Args)]
pub struct SimulateBackoffArgs {
    /// How many clients contend, 1 to 100000.
    #[arg(long, value_name = "N", required = true, allow_hyphen_values = true)]
    pub clients: String,
    /// How long one call takes, in milliseconds.
    #[arg(
        long,
        value_name = "MS",
        default_value = "10",
        allow_hyphen_values = true
    )]
    pub call_ms: String,
    /// The first delay after a conflict (it doubles after each, up to --cap).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10ms",
        allow_hyphen_values = true
    )]
    pub base: String,
    /// The longest delay.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10s",
        allow_hyphen_values = true
    )]
    pub cap: String,
    /// The seed of the clients' jitter: the same seed gives the same result.
    #[arg(
        long,
        value_name = "N",
        default_value = "1",
        allow_hyphen_values = true
    )]
    pub seed: String,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use clap::CommandFactory;

    use super::Cli;

    /// Every command's path and its `--help` text, groups and their subcommands alike.
    fn every_help(command: &mut clap::Command, path: &str, out: &mut Vec<(String, String)>) {
        let help = command.render_long_help().to_string();
        out.push((path.to_owned(), help));
        for sub in command.get_subcommands_mut() {
            if sub.get_name() == "help" {
                continue;
            }
            let path = format!("{path} {}", sub.get_name());
            every_help(sub, &path, out);
        }
    }

    /// The commands that print no result of their own, so take no `--json` (docs/cli.md says
    /// why each).
    const NO_RESULT: [&str; 12] = [
        "backstop serve",
        "backstop proxy",
        "backstop hook",
        "backstop mcp",
        "backstop completions",
        "backstop man",
        "backstop rules show",
        "backstop strategies show",
        "backstop pack schema",
        "backstop config new-key",
        "backstop config hash-key",
        "backstop config rotate-session-secret",
    ];

    /// The command tree as the binary builds it, help wrapped at 100 columns.
    fn tree() -> clap::Command {
        let mut root = Cli::command().term_width(100);
        root.build();
        root
    }

    /// Every command that runs (not a group that only holds subcommands), with its path.
    fn runnable(command: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        if !command.is_subcommand_required_set() {
            out.push((path.to_owned(), command.clone()));
        }
        for sub in command.get_subcommands() {
            if sub.get_name() != "help" {
                runnable(sub, &format!("{path} {}", sub.get_name()), out);
            }
        }
    }

    #[test]
    fn every_command_that_prints_a_result_takes_json_and_an_output_format() {
        let mut commands = Vec::new();
        runnable(&tree(), "backstop", &mut commands);
        assert!(commands.len() > 30, "{} commands found", commands.len());
        for (path, command) in &commands {
            let ids: Vec<&str> = command
                .get_arguments()
                .map(|a| a.get_id().as_str())
                .collect();
            let takes = ids.contains(&"json") && ids.contains(&"output_format");
            if NO_RESULT.contains(&path.as_str()) {
                assert!(
                    !takes,
                    "{path} is listed as printing no result, yet takes --json"
                );
            } else {
                assert!(
                    takes,
                    "{path} prints a result but lacks --json or --output-format"
                );
            }
        }
        for path in NO_RESULT {
            assert!(
                commands.iter().any(|(p, _)| p == path),
                "{path} is no command"
            );
        }
    }

    /// Where the generated part of docs/cli.md starts.
    const GENERATED: &str =
        "<!-- every command's --help follows, generated: do not edit below this line -->\n";

    /// Every command's `--help`, as docs/cli.md shows it.
    fn reference() -> String {
        let mut helps = Vec::new();
        every_help(&mut tree(), "backstop", &mut helps);
        let mut text = String::new();
        for (path, help) in helps {
            let help = help.trim_end();
            let _ = write!(text, "\n### `{path}`\n\n```text\n{help}\n```\n");
        }
        text
    }

    #[test]
    fn cli_doc_shows_every_commands_help_as_the_binary_prints_it() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md");
        let doc = std::fs::read_to_string(path).expect("docs/cli.md is readable");
        let (grammar, shown) = doc
            .split_once(GENERATED)
            .expect("docs/cli.md has its generated part's marker line");
        let expected = reference();
        if std::env::var_os("BACKSTOP_WRITE_CLI_DOC").is_some() {
            std::fs::write(path, format!("{grammar}{GENERATED}{expected}")).unwrap();
            return;
        }
        assert!(
            shown == expected,
            "docs/cli.md does not match --help: run \
             BACKSTOP_WRITE_CLI_DOC=1 cargo test -p backstop --bin backstop cli_doc"
        );
    }

    #[test]
    fn every_command_lists_its_exit_codes_in_its_help() {
        let mut helps = Vec::new();
        every_help(&mut tree(), "backstop", &mut helps);
        assert!(helps.len() > 40, "{} commands found", helps.len());
        let missing: Vec<&str> = helps
            .iter()
            .filter(|(_, help)| !help.contains("Exit codes"))
            .map(|(path, _)| path.as_str())
            .collect();
        assert!(
            missing.is_empty(),
            "no exit codes in the help of: {missing:?}"
        );
        // The top-level list names every code a command uses.
        let top = &helps[0].1;
        for code in ["  0  ", "  1  ", "  2  ", "  3  ", "  4-8  "] {
            assert!(top.contains(code), "backstop --help lacks {code:?}:\n{top}");
        }
    }
}
