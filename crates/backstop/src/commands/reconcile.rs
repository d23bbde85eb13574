//! `backstop reconcile`: the reconciliation sweep, once, on the ledger.

use std::io::{self, Write};
use std::sync::Arc;

use backstop_server::catalog::{Catalog, default_packs};
use backstop_server::{AppState, Config};

use super::EXIT_ISSUES;
use crate::cli::ReconcileArgs;
use crate::output;
use crate::settings::resolve_now;

/// Sweeps once and prints what it did.
pub fn run(args: &ReconcileArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mut issues = Vec::new();
    let now = resolve_now(args.now.as_deref(), &mut issues);
    let mut config = match &args.config {
        Some(path) => Config::load(path).unwrap_or_else(|found| {
            let origin = format!("--config {}", path.display());
            issues.extend(found.into_iter().map(|i| i.within(&origin)));
            Config::default()
        }),
        None => Config {
            packs: default_packs(),
            ..Config::default()
        },
    };
    if let Some(db) = &args.db {
        config.db.clone_from(db);
    }
    if !args.packs.is_empty() {
        config.packs.clone_from(&args.packs);
    }
    let location = config.db.to_string();
    if !config.db.may_exist() {
        issues.push(backstop_core::Issue::new(
            "--db",
            "no_ledger",
            format!("{location}: no such ledger (nothing was dispatched there)"),
        ));
    }
    let mode = args.output.mode();
    if !issues.is_empty() {
        return output::refuse_command(mode, &issues, out, err);
    }
    let catalog = match Catalog::load(&config) {
        Ok(catalog) => catalog,
        Err(issues) => return output::refuse_command(mode, &issues, out, err),
    };
    let store = match backstop_store::open(&location) {
        Ok(store) => store,
        Err(e) => {
            let shown = backstop_store::display_location(&location);
            writeln!(err, "backstop: --db {shown}: {e}")?;
            return Ok(EXIT_ISSUES);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let swept = runtime.block_on(async move {
        let state = tokio::task::spawn_blocking(move || {
            AppState::new(config, None, catalog, Arc::from(store), now)
        })
        .await
        .map_err(io::Error::other)?
        .map_err(io::Error::other)?;
        backstop_server::effects::sweep_once(&state, now)
            .await
            .map_err(io::Error::other)
    });
    match swept {
        Ok(swept) => output::result(mode, out, &swept),
        Err(e) => {
            writeln!(err, "backstop: the ledger failed: {e}")?;
            Ok(EXIT_ISSUES)
        }
    }
}
