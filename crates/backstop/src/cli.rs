//! The command line, as clap structs that mirror the flags. Meaning is given in `settings.rs`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Exit codes, the same for every command.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  done (for classify: a classification was printed, whatever its class)
  1  the checked file has issues (rules check), or an I/O failure
  2  bad input: a flag, a report or a rules file was refused; every issue is listed";

/// backstop: the retry-and-escalation authority for AI agents.
///
/// An agent asks backstop what to do after anything other than a clean success. backstop
/// classifies the failure with rules (never a prompt) and answers with a typed next step.
#[derive(Debug, Parser)]
#[command(name = "backstop", version, after_help = EXIT_CODES)]
pub struct Cli {
    /// Log filter (e.g. `debug`, `backstop=trace`); logs go to stderr.
    #[arg(long, global = true, default_value = "warn", env = crate::settings::ENV_LOG)]
    pub log: String,

    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Classify a failed call: one report from flags or stdin, or a JSON Lines stream.
    #[command(after_help = CLASSIFY_HELP)]
    Classify(Box<ClassifyArgs>),
    /// Work with classifier rule files.
    #[command(subcommand)]
    Rules(RulesCommand),
}

const CLASSIFY_HELP: &str = "\
Examples:
  backstop classify --status 503 --header 'Retry-After: 2'
  echo '{\"error_code\": \"insufficient_quota\", \"http_status\": 429}' | backstop classify
  backstop classify --jsonl < reports.jsonl > classifications.jsonl

With no report flags, one JSON report is read from stdin (fields as the flags, in snake_case:
http_status, headers, grpc_code, exit_code, signal, errno, sqlstate, exception, error_code,
message, output, schema, side_effects, elapsed_ms, tool, operation). Output is human-readable on
a terminal and JSON when piped or with --json. With --jsonl, each input line gets one output
line: a classification, or {\"line\": N, \"error\": {...}} for a bad line; the stream goes on.

Exit codes:
  0  a classification was printed (also for unclassified, and for --jsonl with bad lines)
  1  an I/O failure
  2  bad input: a flag, the report or a --rules file was refused; every issue is listed";

/// `backstop classify`.
#[derive(Debug, Args)]
pub struct ClassifyArgs {
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
    /// The operation called on the tool.
    #[arg(long, value_name = "NAME")]
    pub operation: Option<String>,

    /// The time to read HTTP-date retry hints against (RFC 3339); default: now.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// A rules file to use before the built-in rules; repeat for more (first file first).
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Print JSON even on a terminal (same as --output-format json).
    #[arg(long, conflicts_with = "output_format")]
    pub json: bool,
    /// How to print: auto (human on a terminal, JSON when piped), human or json.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = OutputChoice::Auto)]
    pub output_format: OutputChoice,
    /// Read one JSON report per line from stdin; write one JSON result per line.
    /// (JSON Lines output is always JSON: --output-format is refused with it.)
    #[arg(long, conflicts_with_all = REPORT_FLAGS, conflicts_with = "output_format")]
    pub jsonl: bool,
}

/// The flags that make up a report; `--jsonl` takes none of them.
pub const REPORT_FLAGS: [&str; 16] = [
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
];

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

/// `backstop rules ...`.
#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// Lint rule files: syntax, unknown classes or fields, bad regexes, duplicate ids and rules
    /// an earlier rule shadows. Every issue is listed with its path.
    #[command(
        after_help = "Exit codes:\n  0  no issues\n  1  issues found (listed)\n  2  a file could not be read"
    )]
    Check(RulesCheckArgs),
    /// Print the built-in rules (rules/default.toml).
    Show,
}

/// `backstop rules check`.
#[derive(Debug, Args)]
pub struct RulesCheckArgs {
    /// The rule files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print issues as JSON.
    #[arg(long)]
    pub json: bool,
}
