//! `backstop mcp`: backstop's tools over the Model Context Protocol on stdio, on the local
//! ledger (the service's router in this process) or a running service.

use std::io::{self, Write};
use std::path::Path;

use backstop_core::Issue;
use backstop_mcp::rmcp::ServiceExt;
use backstop_mcp::{BackstopMcp, Remote};
use backstop_server::catalog::Catalog;
use backstop_server::mcp::InProcess;
use backstop_server::{Config, routes};

use super::hint_counted::Sender;
use super::serve::{Notifies, build_state, config_file, open_store};
use super::{EXIT_ISSUES, EXIT_OK};
use crate::cli::McpArgs;
use crate::output;
use crate::settings::OutputMode;

/// Serves MCP on stdin and stdout until the client closes them.
pub fn run(args: &McpArgs, err: &mut impl Write) -> io::Result<u8> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if let Some(server) = &args.server {
        return run_remote(&runtime, server, args.key_file.as_deref(), err);
    }
    let (config, issues) = resolve(args);
    if !issues.is_empty() {
        return output::refuse_command(OutputMode::Human, &issues, &mut io::sink(), err);
    }
    let backend = match local_backend(&runtime, config, args.config.clone(), err)? {
        Ok(backend) => backend,
        Err(code) => return Ok(code),
    };
    runtime.block_on(serve_stdio(Sender::Local(backend), err))
}

/// Requests per second a stdio server's own router allows: no limit that matters (finite, so the
/// token bucket's arithmetic stays finite).
const LOCAL_RATE: f64 = 1e12;

/// The service's router in this process over the config's ledger, as the backend of a stdio
/// server (`mcp`, `proxy`); `Err(exit code)` once why not is written to `err`. The local
/// operator's own connection: no keys, and no notifications sent from here.
pub(super) fn local_backend(
    runtime: &tokio::runtime::Runtime,
    mut config: Config,
    config_path: Option<std::path::PathBuf>,
    err: &mut impl Write,
) -> io::Result<Result<InProcess, u8>> {
    // The per-caller rate limit guards a shared service from a flooding caller; in this
    // process the one caller is the local operator's own agent, and the limit would only
    // throttle it against itself (a proxy asks backstop several times per tool call).
    config.limits.rate_per_second = LOCAL_RATE;
    config.limits.burst = LOCAL_RATE;
    let catalog = match Catalog::load(&config) {
        Ok(catalog) => catalog,
        Err(issues) => {
            let code = output::refuse_command(OutputMode::Human, &issues, &mut io::sink(), err)?;
            return Ok(Err(code));
        }
    };
    let Some(store) = open_store(&config, err)? else {
        return Ok(Err(EXIT_ISSUES));
    };
    runtime.block_on(async {
        let built = build_state(config, config_path, catalog, store, Notifies::No, err).await?;
        let Some(state) = built else {
            return Ok(Err(EXIT_ISSUES));
        };
        let body_limit = state.config.limits.body_bytes;
        Ok(Ok(InProcess::new(routes::api_router(state), body_limit)))
    })
}

/// Forwards every tool call to the service at `server`, with the key in `key_file`.
fn run_remote(
    runtime: &tokio::runtime::Runtime,
    server: &str,
    key_file: Option<&Path>,
    err: &mut impl Write,
) -> io::Result<u8> {
    let mut issues = Vec::new();
    let key = key_file.and_then(|path| {
        crate::settings::read_key(path)
            .map_err(|i| issues.push(i))
            .ok()
    });
    if let Err(issue) = crate::settings::check_url(server, "--server") {
        issues.push(issue);
    }
    if !issues.is_empty() {
        return output::refuse_command(OutputMode::Human, &issues, &mut io::sink(), err);
    }
    tracing::info!(server = %server, "mcp: forwarding to a running service");
    runtime.block_on(serve_stdio(Sender::Remote(Remote::new(server, key)), err))
}

async fn serve_stdio(backend: Sender, err: &mut impl Write) -> io::Result<u8> {
    let server = match BackstopMcp::new(backend)
        .serve(backstop_mcp::rmcp::transport::stdio())
        .await
    {
        Ok(server) => server,
        Err(e) => {
            writeln!(err, "backstop: mcp: the client did not initialize: {e}")?;
            return Ok(EXIT_ISSUES);
        }
    };
    match server.waiting().await {
        Ok(_) => Ok(EXIT_OK),
        Err(e) => {
            writeln!(err, "backstop: mcp: {e}")?;
            Ok(EXIT_ISSUES)
        }
    }
}

/// The local config: the file's, under the flags; never its keys (stdio is the local
/// operator's own connection, like an open service).
fn resolve(args: &McpArgs) -> (Config, Vec<Issue>) {
    let mut issues = Vec::new();
    let mut config = config_file(args.config.as_deref(), &mut issues);
    config.keys.clear();
    if let Some(db) = &args.db {
        config.db.clone_from(db);
    }
    if !args.packs.is_empty() {
        config.packs.clone_from(&args.packs);
    }
    if !args.rules.is_empty() {
        config.rules.clone_from(&args.rules);
    }
    if !args.strategies.is_empty() {
        config.strategies.clone_from(&args.strategies);
    }
    (config, issues)
}
