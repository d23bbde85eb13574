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
    /// The ledger: a `SQLite` file or a `postgres://` URL (overrides the config's `db`; default
    /// ./backstop.db).
    #[arg(long, value_name = "PATH", env = crate::settings::ENV_DB, hide_env_values = true)]
    pub db: Option<PathBuf>,
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
    HashKey(HashKeyArgs),
    /// Make a new random API key: prints the key (give it to the caller) and its hash (put it
    /// in a `[[keys]]` entry).
    NewKey,
}

/// `backstop config check`.
#[derive(Debug, Args)]
pub struct ConfigCheckArgs {
    /// The config file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print issues as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `backstop config hash-key`.
#[derive(Debug, Args)]
pub struct HashKeyArgs {
    /// The API key; read from stdin when absent, so it stays out of the shell history.
    #[arg(value_name = "KEY")]
    pub key: Option<String>,
}
