//! The flags of `serve` and `config`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

pub const SERVE_HELP: &str = "\
Examples:
  backstop serve                                  # 127.0.0.1:7600, ./backstop.db, ./packs
  backstop serve --config /etc/backstop/backstop.toml --log-format json

With no API keys in the config the service is open (every caller is the local operator) and
listens on loopback only. SIGHUP reloads packs, rules and strategies (a bad reload keeps the old
ones and logs why); every server on one ledger uses the strategies the last one to start or
reload announced; SIGTERM or Ctrl-C stops after the requests in flight. The routes are listed by
GET /openapi.json; docs/service.md describes them.

Exit codes:
  0  stopped by SIGTERM or Ctrl-C
  1  the address or the ledger could not be opened
  2  a bad flag, config, pack or rules file; every issue is listed";

/// `backstop serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen (overrides the config's `listen`).
    #[arg(long, value_name = "ADDR", env = crate::settings::ENV_LISTEN)]
    pub listen: Option<String>,
    /// Not a flag of `serve`: taken only to refuse it with the `--listen` to give instead.
    #[arg(long, value_name = "PORT", hide = true)]
    pub port: Option<String>,
    /// The ledger: a `SQLite` file or a `postgres://` URL (overrides the config's `db`; default
    /// ./backstop.db).
    #[arg(long, value_name = "PATH", env = crate::settings::ENV_DB, hide_env_values = true)]
    pub db: Option<backstop_store::Location>,
    /// The service's TOML config: listen, db, packs, rules, strategies, limits, keys.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A recovery strategy file (or a folder of them), over the built-in strategies; repeat for
    /// more, each over the ones before (overrides the config's `strategies`, also on a reload).
    #[arg(long, value_name = "FILE")]
    pub strategies: Vec<PathBuf>,
}

/// `backstop config ...`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Check a config file and every pack and rules file it names; every issue is listed.
    #[command(
        after_help = "Exit codes:\n  0  no issues\n  1  issues found (listed)\n  2  the file could not be read"
    )]
    Check(ConfigCheckArgs),
    /// Print the hash of an API key, for a `[[keys]]` entry (the key itself is never stored);
    /// a key is at least 32 characters.
    #[command(
        after_help = "Exit codes:\n  0  the hash was printed\n  2  the key is shorter than 32 characters"
    )]
    HashKey(HashKeyArgs),
    /// Make a new random API key: prints the key (give it to the caller) and its hash (put it
    /// in a `[[keys]]` entry).
    #[command(
        after_help = "Exit codes:\n  0  a key and its hash were printed\n  1  the system's random source could not be read"
    )]
    NewKey,
    /// Replace the operator page's session secret in the ledger: every signed-in operator is
    /// signed out (every server of the fleet takes the new secret up within 30 s). Do it when a
    /// session cookie may have leaked, or on a schedule.
    #[command(
        after_help = "Exit codes:\n  0  the secret was replaced\n  1  the ledger could not be opened or written\n  2  no ledger at --db"
    )]
    RotateSessionSecret(crate::cli::LedgerArgs),
}

/// `backstop config check`.
#[derive(Debug, Args)]
pub struct ConfigCheckArgs {
    /// The config file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub output: crate::cli::OutputArgs,
}

/// `backstop config hash-key`.
#[derive(Debug, Args)]
pub struct HashKeyArgs {
    /// The API key; read from stdin when absent, so it stays out of the shell history.
    #[arg(value_name = "KEY")]
    pub key: Option<String>,
}

pub const MCP_HELP: &str = "\
Examples:
  backstop mcp                                    # ./backstop.db, ./packs, over stdio
  backstop mcp --db ~/.backstop/ledger.db --packs ./packs --rules ./my-rules.toml
  backstop mcp --server http://backstop.internal:7600 --key-file ~/.backstop/key

An MCP client starts this command and speaks JSON-RPC on its stdin and stdout (logs go to
stderr). Tools: classify, next_step, report_outcome, job_brief, case_status and one decide_JOB
per loaded pack; each job's brief is also a resource (backstop://jobs/JOB). Every result carries
the JSON and one line an LLM can act on; a refusal comes back as a tool error.

Locally (the default) the tools work on the ledger directly, as the local operator; with
--server they go to a running `backstop serve` with the key in --key-file. `backstop serve`
also serves MCP over streamable HTTP at /mcp, behind its API keys.

Exit codes:
  0  the client closed the connection
  1  the ledger or the server could not be reached
  2  a bad flag, config, pack or rules file, or an unreadable key file; every issue is listed";

/// `backstop mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The ledger: a `SQLite` file or a `postgres://` URL (default ./backstop.db, or the
    /// config's `db`).
    #[arg(long, value_name = "PATH", env = crate::settings::ENV_DB, hide_env_values = true, conflicts_with = "server")]
    pub db: Option<backstop_store::Location>,
    /// A pack file or a folder of them; repeat for more (default ./packs, or the config's
    /// `packs`).
    #[arg(long, value_name = "PATH", conflicts_with = "server")]
    pub packs: Vec<PathBuf>,
    /// A classifier rules file, over the built-in rules; repeat for more (default: the
    /// config's `rules`).
    #[arg(long, value_name = "FILE", conflicts_with = "server")]
    pub rules: Vec<PathBuf>,
    /// A recovery strategy file (or a folder of them), over the built-in strategies.
    #[arg(long, value_name = "FILE", conflicts_with = "server")]
    pub strategies: Vec<PathBuf>,
    /// A service config to take db, packs, rules, strategies and limits from (its keys are not
    /// used: stdio is the local operator's own connection).
    #[arg(long, value_name = "FILE", conflicts_with = "server")]
    pub config: Option<PathBuf>,
    /// Send every tool call to a running `backstop serve` at this URL instead.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// The file holding the API key for --server (the key is never a flag, so it stays out of
    /// process lists).
    #[arg(long, value_name = "FILE", requires = "server")]
    pub key_file: Option<PathBuf>,
}
