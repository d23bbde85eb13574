//! `backstop serve`: the HTTP service.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use backstop_core::Issue;
use backstop_server::catalog::{Catalog, default_packs};
use backstop_server::{AppState, Config};
use jiff::Timestamp;
use tokio::signal::unix::{Signal, SignalKind};

use super::{EXIT_BAD_INPUT, EXIT_ISSUES, EXIT_OK};
use crate::cli::ServeArgs;
use crate::output;
use crate::settings::OutputMode;

/// Runs the service until SIGTERM or Ctrl-C.
pub fn run(args: &ServeArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    if let Some(port) = &args.port {
        writeln!(
            err,
            "error: `serve` has no --port; it takes the whole address: --listen 127.0.0.1:{port} \
             (or `listen` in the config)"
        )?;
        return Ok(EXIT_BAD_INPUT);
    }
    let (config, issues) = resolve(args);
    if !issues.is_empty() {
        return output::refuse_command(OutputMode::Human, &issues, out, err);
    }
    let catalog = match Catalog::load(&config) {
        Ok(catalog) => catalog,
        Err(issues) => return output::refuse_command(OutputMode::Human, &issues, out, err),
    };
    let Some(store) = open_store(&config, err)? else {
        return Ok(EXIT_ISSUES);
    };
    let shown = config.db.to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(config.listen).await {
            Ok(listener) => listener,
            Err(e) => {
                writeln!(err, "backstop: cannot listen on {}: {e}", config.listen)?;
                return Ok(EXIT_ISSUES);
            }
        };
        let address = listener.local_addr()?;
        // Signal handlers first: a SIGTERM or SIGHUP sent as soon as the "listening" line shows
        // must be handled, not end the process.
        let terminate = unix_signal(SignalKind::terminate())?;
        let hangup = unix_signal(SignalKind::hangup())?;
        let jobs: Vec<String> = catalog.packs.keys().cloned().collect();
        let open = config.keys.is_empty();
        let db = shown;
        let Some(state) = build_state(
            config,
            args.config.clone(),
            catalog,
            store,
            Notifies::Yes,
            err,
        )
        .await?
        else {
            return Ok(EXIT_ISSUES);
        };
        writeln!(
            err,
            "backstop: listening on http://{address} (ledger {}, jobs: {}{})",
            db,
            if jobs.is_empty() {
                "none".to_owned()
            } else {
                jobs.join(", ")
            },
            if open {
                "; open: no API keys, loopback only"
            } else {
                ""
            }
        )?;
        tracing::info!(%address, jobs = ?jobs, open, "listening");
        tokio::spawn(reload_on_hangup(
            Arc::clone(&state),
            hangup,
            args.strategies.clone(),
        ));
        backstop_server::serve(listener, state, shutdown_signal(terminate)).await?;
        tracing::info!("stopped");
        Ok(EXIT_OK)
    })
}

/// Whether the process sends notifications: only one that does sets the ledger's targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Notifies {
    /// `serve`: its `[[notify]]` entries become the ledger's targets.
    Yes,
    /// `mcp`: the targets the servers set stay.
    No,
}

/// Opens the config's ledger; `None` once the reason is written to `err`.
pub(super) fn open_store(
    config: &Config,
    err: &mut impl Write,
) -> io::Result<Option<Box<dyn backstop_store::Store>>> {
    super::cases::open(&config.db, err)
}

/// The service's state on `store`; `None` once the reason is written to `err`. Building it
/// reads the ledger (the journal replay): never on an async worker, where the `PostgreSQL`
/// client cannot block.
pub(super) async fn build_state(
    config: Config,
    config_path: Option<PathBuf>,
    catalog: Catalog,
    store: Box<dyn backstop_store::Store>,
    notifies: Notifies,
    err: &mut impl Write,
) -> io::Result<Option<Arc<AppState>>> {
    let built = tokio::task::spawn_blocking(move || {
        let (store, now) = (Arc::from(store), Timestamp::now());
        match notifies {
            Notifies::Yes => AppState::new(config, config_path, catalog, store, now),
            Notifies::No => {
                AppState::new_keeping_subscriptions(config, config_path, catalog, store, now)
            }
        }
    })
    .await
    .map_err(io::Error::other)?;
    match built {
        Ok(state) => Ok(Some(Arc::new(state))),
        Err(e) => {
            writeln!(err, "backstop: the ledger failed: {e}")?;
            Ok(None)
        }
    }
}

/// The config `--config` names, its issues under `--config PATH`; without one, the defaults
/// with the packs in ./packs.
pub(super) fn config_file(path: Option<&Path>, issues: &mut Vec<Issue>) -> Config {
    match path {
        Some(path) => Config::load(path).unwrap_or_else(|found| {
            let origin = format!("--config {}", path.display());
            issues.extend(found.into_iter().map(|issue| issue.within(&origin)));
            Config::default()
        }),
        None => Config {
            packs: default_packs(),
            ..Config::default()
        },
    }
}

/// The config the flags, the environment and the file give, with every issue.
fn resolve(args: &ServeArgs) -> (Config, Vec<Issue>) {
    let mut issues = Vec::new();
    let mut config = config_file(args.config.as_deref(), &mut issues);
    if let Some(listen) = &args.listen {
        match listen.parse::<SocketAddr>() {
            Ok(address) => config.listen = address,
            Err(_) => issues.push(Issue::new(
                "--listen",
                "bad_address",
                format!("`{listen}` is not an address like 127.0.0.1:7600"),
            )),
        }
    }
    if let Some(db) = &args.db {
        config.db.clone_from(db);
    }
    if !args.strategies.is_empty() {
        config.strategies.clone_from(&args.strategies);
    }
    if config.keys.is_empty() && !config.listen.ip().is_loopback() {
        issues.push(Issue::new(
            "--listen",
            "open_and_exposed",
            format!(
                "no API keys are configured, so the service is open; it listens on loopback \
                 only, not on {} (add [[keys]] to the config, or listen on 127.0.0.1)",
                config.listen
            ),
        ));
    }
    (config, issues)
}

fn unix_signal(kind: SignalKind) -> io::Result<Signal> {
    tokio::signal::unix::signal(kind)
}

/// Reloads packs, rules and strategies on every SIGHUP; a bad reload keeps the old ones. New
/// strategies are announced on the journal, so every server on the ledger takes them up.
async fn reload_on_hangup(state: Arc<AppState>, mut hangups: Signal, strategies: Vec<PathBuf>) {
    while hangups.recv().await.is_some() {
        let reloading = Arc::clone(&state);
        let flagged = strategies.clone();
        let outcome =
            tokio::task::spawn_blocking(move || reloading.reload_with(Some(&flagged))).await;
        match outcome {
            Ok(Ok(jobs)) => {
                tracing::warn!(jobs, "reloaded packs, rules and strategies");
                if let Err(e) = state.announce_strategies().await {
                    tracing::error!(error = ?e, "the reloaded strategies could not be journaled; the strategies in use stay");
                }
            }
            Ok(Err(issues)) => {
                let listed: Vec<String> = issues.iter().map(ToString::to_string).collect();
                tracing::error!(
                    issues = %listed.join("; ").replace('\n', " "),
                    "reload refused; the packs and rules loaded before stay"
                );
            }
            Err(e) => tracing::error!(error = %e, "reload failed; nothing changed"),
        }
    }
}

/// Completes on SIGTERM or Ctrl-C.
async fn shutdown_signal(mut terminate: Signal) {
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        _ = terminate.recv() => {},
    }
    tracing::warn!("stopping: finishing the requests in flight");
}
