//! `backstop proxy`: one upstream MCP server behind backstop, served to the client on stdio;
//! every tool call counted on the ledger (`--db`) or a running service (`--server`).

use std::io::{self, Write};

use backstop_core::Issue;
use backstop_mcp::Remote;
use backstop_mcp::proxy::{ProxyServer, ProxySettings, ToolSettings};
use backstop_mcp::rmcp::ServiceExt;
use backstop_server::Config;

use super::hint_counted::Sender;
use super::serve::config_file;
use super::{EXIT_ISSUES, EXIT_OK};
use crate::cli::ProxyArgs;
use crate::output;
use crate::settings::{OutputMode, check_url, read_key};

/// Serves the proxy on stdin and stdout until the client closes them.
pub fn run(args: &ProxyArgs, err: &mut impl Write) -> io::Result<u8> {
    let (config, settings, mut issues) = resolve(args);
    let session = args.session.clone().unwrap_or_else(|| {
        let id = uuid::Uuid::new_v4().simple().to_string();
        format!("{}-{}", settings.name, &id[..12])
    });
    backstop_server::routes::recover::check_name(&session, "--session", &mut issues);
    let remote = match &args.server {
        Some(url) => {
            if let Err(issue) = check_url(url, "--server") {
                issues.push(issue);
            }
            let key = match args.key_file.as_deref().map(read_key).transpose() {
                Ok(key) => key,
                Err(issue) => {
                    issues.push(issue);
                    None
                }
            };
            Some(Remote::new(url, key))
        }
        None => None,
    };
    if !issues.is_empty() {
        return output::refuse_command(OutputMode::Human, &issues, &mut io::sink(), err);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if let Some(remote) = remote {
        tracing::info!(proxy = %settings.name, "proxy: counting on a running service");
        let backend = Sender::Remote(remote);
        return runtime.block_on(Box::pin(serve_stdio(settings, session, backend, err)));
    }
    let backend = match super::mcp::local_backend(&runtime, config, args.config.clone(), err)? {
        Ok(backend) => backend,
        Err(code) => return Ok(code),
    };
    let backend = Sender::Local(backend);
    runtime.block_on(Box::pin(serve_stdio(settings, session, backend, err)))
}

async fn serve_stdio(
    settings: ProxySettings,
    session: String,
    backend: Sender,
    err: &mut impl Write,
) -> io::Result<u8> {
    let proxy = ProxyServer::start_stdio(settings, session, backend).await;
    let server = match proxy.serve(backstop_mcp::rmcp::transport::stdio()).await {
        Ok(server) => server,
        Err(e) => {
            writeln!(err, "backstop: proxy: the client did not initialize: {e}")?;
            return Ok(EXIT_ISSUES);
        }
    };
    match server.waiting().await {
        Ok(_) => Ok(EXIT_OK),
        Err(e) => {
            writeln!(err, "backstop: proxy: {e}")?;
            Ok(EXIT_ISSUES)
        }
    }
}

/// The ledger's config, the proxy's settings (the config's `[[proxy]]` entry under the flags)
/// and every issue.
fn resolve(args: &ProxyArgs) -> (Config, ProxySettings, Vec<Issue>) {
    let mut issues = Vec::new();
    let mut config = config_file(args.config.as_deref(), &mut issues);
    config.keys.clear();
    if args.config.is_none() {
        // A proxy decides no cases: no packs are read unless the config names them.
        config.packs.clear();
    }
    if let Some(db) = &args.db {
        config.db.clone_from(db);
    }
    if !args.rules.is_empty() {
        config.rules.clone_from(&args.rules);
    }
    if !args.strategies.is_empty() {
        config.strategies.clone_from(&args.strategies);
    }
    let mut settings = config
        .proxy
        .iter()
        .find(|p| p.name == args.name)
        .cloned()
        .unwrap_or_else(|| ProxySettings::new(&args.name, Vec::new()));
    if !args.command.is_empty() {
        settings.command.clone_from(&args.command);
    }
    settings.trusted |= args.trusted;
    if let Some(seconds) = args.timeout {
        settings.timeout_s = seconds;
    }
    if let Some(seconds) = args.max_timeout {
        settings.max_timeout_s = seconds;
    }
    if let Some(seconds) = args.start_timeout {
        settings.start_timeout_s = seconds;
    }
    for (tools, idempotent) in [(&args.idempotent, true), (&args.not_idempotent, false)] {
        for tool in tools {
            settings
                .tools
                .entry(tool.clone())
                .or_insert_with(ToolSettings::default)
                .idempotent = Some(idempotent);
        }
    }
    for issue in settings.issues("proxy") {
        let path = match issue.path.as_str() {
            "proxy.name" => "--name".to_owned(),
            "proxy.command" => "COMMAND".to_owned(),
            "proxy.timeout_s" | "proxy.max_timeout_s" => "--max-timeout".to_owned(),
            other => other.to_owned(),
        };
        let message = if path == "COMMAND" {
            format!(
                "{}: give it after `--` (backstop proxy --name {} -- npx ...), or as `command` of a [[proxy]] entry named {} in --config",
                issue.message, args.name, args.name
            )
        } else {
            issue.message
        };
        issues.push(Issue::new(path, "invalid", message));
    }
    (config, settings, issues)
}
