//! `backstop proxy`: flags.

use std::path::PathBuf;

use clap::Args;

pub const PROXY_HELP: &str = "\
Examples (as the command of an MCP server in an agent's config; docs/proxy.md has the entries):
  backstop proxy --name files -- npx -y @modelcontextprotocol/server-filesystem /srv/data
  backstop proxy --name payments --idempotent get_charge -- python payments_server.py
  backstop proxy --name files --config ~/.backstop/backstop.toml        # its [[proxy]] entry
  backstop proxy --name files --server http://backstop.internal:7600 --key-file ~/.backstop/key -- npx ...

An MCP client starts this command instead of the server itself; backstop starts the server (the
command after --) and passes its tools, resources and prompts through unchanged. Every
tools/call is governed, with the session as the task (or the task the client names in
_meta \"backstop/task\") and the tool as the tool:
  before   refused, never reaching the server, when the task was stopped by a policy denial
           (until an operator resets it), the tool's circuit breaker is open, or this exact call
           (tool and arguments) already spent every attempt of a class
  failure  a JSON-RPC error, a result with isError, a timeout or a server that died is counted
           as POST /v1/recover counts it; the model gets a result with isError, one line to act
           on first (\"retry in 4 s\", \"stop: policy denial ...\", \"handed to ...\") and the step's
           JSON as structuredContent
  resend   the proxy sends a call again itself, after the step's wait, only when the tool is
           safe to resend: --idempotent TOOL (or `idempotent = true` in the config), or the
           server's readOnlyHint/idempotentHint with --trusted. A timeout or a dropped
           connection on any other tool is an unknown outcome: never sent again
  success  passed on unchanged, and reported to the tool's breaker; the recovery of a call that
           failed before also starts the task's counters again
A server that dies is started again on the next request; one that cannot start leaves the
proxy up, answering each call with the failure.

Exit codes:
  0  the client closed the connection
  1  the client never initialized, or the ledger could not be opened
  2  a bad flag, config or key file, or no server command; every issue is listed";

/// `backstop proxy`.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// The proxy's name: its sessions are tasks named NAME-<id>, and its entry in --config is
    /// the `[[proxy]]` with this name.
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// The task name of this session (default: NAME-<random id>, one per connection).
    #[arg(long, value_name = "TASK")]
    pub session: Option<String>,
    /// A service config: the `[[proxy]]` entry named --name gives the server's command and its
    /// tools' settings (flags override it); db, rules and strategies come from it too.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The ledger: a `SQLite` file (created if missing) or a `postgres://` URL (default
    /// ./backstop.db, or the config's `db`).
    #[arg(long, value_name = "PATH", env = crate::settings::ENV_DB, hide_env_values = true, conflicts_with = "server")]
    pub db: Option<backstop_store::Location>,
    /// A classifier rules file, over the built-in rules; repeat for more.
    #[arg(long, value_name = "FILE", conflicts_with = "server")]
    pub rules: Vec<PathBuf>,
    /// A recovery strategy file (or a folder of them), over the built-in strategies.
    #[arg(long, value_name = "FILE", conflicts_with = "server")]
    pub strategies: Vec<PathBuf>,
    /// Count on a running `backstop serve` at this URL instead of a ledger: proxies on many
    /// machines share its breakers, budgets and tasks.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// The file holding the API key for --server.
    #[arg(long, value_name = "FILE", requires = "server")]
    pub key_file: Option<PathBuf>,
    /// Believe the server's readOnlyHint and idempotentHint: a tool with either is safe to
    /// resend.
    #[arg(long)]
    pub trusted: bool,
    /// A tool that is safe to send again (its effect cannot happen twice); repeat for more.
    #[arg(long, value_name = "TOOL")]
    pub idempotent: Vec<String>,
    /// A tool that is never sent again, whatever the server's hints say; repeat for more.
    #[arg(long, value_name = "TOOL")]
    pub not_idempotent: Vec<String>,
    /// Seconds a call may go without an answer or a progress notification [default: 60].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
    /// Seconds a call may take at all, however much progress it reports [default: 600].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_timeout: Option<u64>,
    /// Seconds the server may take to start and answer initialize [default: 30].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub start_timeout: Option<u64>,
    /// The MCP server's command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}
