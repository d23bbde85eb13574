//! What every handler shares: the ledger, the loaded packs and rules, the recovery, the keys, the
//! limiter and the metrics.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use crate::journal::CallState;
use backstop_store::Store;
use jiff::Timestamp;

use crate::auth::Caller;
use crate::catalog::Catalog;
use crate::config::{Config, Role};
use crate::limits::RateLimiter;
use crate::metrics::Metrics;
use crate::queue::AttemptQueue;

/// The service's shared state.
#[derive(Debug)]
pub struct AppState {
    /// The ledger.
    pub store: Arc<dyn Store>,
    /// Attempts on their way to the ledger, in arrival order.
    pub attempts: AttemptQueue,
    /// Packs and rules; swapped whole on a reload.
    pub catalog: RwLock<Arc<Catalog>>,
    /// Per-task counters and per-tool health, as far into the call journal as the ledger
    /// thread has followed it (it alone changes them).
    pub recovery: Arc<Mutex<CallState>>,
    /// API key hashes to callers; empty when the service is open.
    pub keys: HashMap<String, Caller>,
    /// Request limits.
    pub config: Config,
    /// The config file, read again on a reload.
    pub config_path: Option<PathBuf>,
    /// Requests per caller.
    pub limiter: RateLimiter,
    /// Failed authentications per client address.
    pub auth_failures: RateLimiter,
    /// Counters for `/metrics`.
    pub metrics: Metrics,
    /// Side effects: the simulator's secret and stats, the wake-up for recorded deliveries.
    pub effects: crate::effects::Effects,
    /// The operator page's session secret, as the ledger holds it (read again every
    /// [`SECRET_REFRESH`], so a rotation reaches every server of the fleet).
    pub session_secret: RwLock<String>,
}

/// How often a server reads the ledger's session secret again.
pub const SECRET_REFRESH: std::time::Duration = std::time::Duration::from_secs(30);

impl AppState {
    /// The state for `config`, with its catalog loaded, and the call state loaded from the
    /// ledger (its rows, then the journal after them).
    ///
    /// It reads the ledger: call it outside an async runtime, or in `spawn_blocking`.
    pub fn new(
        config: Config,
        config_path: Option<PathBuf>,
        catalog: Catalog,
        store: Arc<dyn Store>,
        now: Timestamp,
    ) -> Result<AppState, backstop_store::StoreError> {
        Self::build(config, config_path, catalog, store, now, true)
    }

    /// The same, but the ledger's notification targets stay as the servers set them: for a
    /// process that sends no notifications (`backstop mcp` on a local ledger), whose empty
    /// `[[notify]]` must not unsubscribe the fleet's targets.
    pub fn new_keeping_subscriptions(
        config: Config,
        config_path: Option<PathBuf>,
        catalog: Catalog,
        store: Arc<dyn Store>,
        now: Timestamp,
    ) -> Result<AppState, backstop_store::StoreError> {
        Self::build(config, config_path, catalog, store, now, false)
    }

    fn build(
        config: Config,
        config_path: Option<PathBuf>,
        catalog: Catalog,
        store: Arc<dyn Store>,
        now: Timestamp,
        subscribe: bool,
    ) -> Result<AppState, backstop_store::StoreError> {
        let keys = config
            .keys
            .iter()
            .map(|k| {
                let caller = Caller {
                    id: k.caller.clone(),
                    role: k.role,
                };
                (k.hash.clone(), caller)
            })
            .collect();
        let (mut calls, mut position) = crate::journal::load(store.as_ref())?;
        // This server's strategies become the fleet's from here on in the journal.
        let announced = crate::journal::strategies_event(&catalog.strategy_files, now);
        crate::journal::journal(
            &mut calls,
            store.as_ref(),
            &[announced],
            &mut position,
            true,
        )?;
        if subscribe {
            // This server's [[notify]] targets become the ledger's from here on.
            crate::notify::subscribe(store.as_ref(), &config.notify.targets, now)?;
        }
        let session_secret = crate::ui::session::ledger_secret(store.as_ref(), now)?;
        let recovery = calls;
        let recovery = Arc::new(Mutex::new(recovery));
        let attempts = AttemptQueue::start(Arc::clone(&store), Arc::clone(&recovery), position)
            .map_err(|e| backstop_store::StoreError::Database(format!("cannot start: {e}")))?;
        Ok(AppState {
            attempts,
            store,
            catalog: RwLock::new(Arc::new(catalog)),
            recovery,
            keys,
            limiter: RateLimiter::new(config.limits.rate_per_second, config.limits.burst),
            auth_failures: RateLimiter::new(
                config.limits.auth_failures_per_second,
                config.limits.auth_failures_burst,
            ),
            effects: crate::effects::Effects::new(
                config
                    .effects
                    .simulator_secret
                    .clone()
                    .unwrap_or_else(crate::effects::fresh_secret),
            ),
            config,
            config_path,
            metrics: Metrics::default(),
            session_secret: RwLock::new(session_secret),
        })
    }

    /// The session secret in use.
    pub fn session_secret(&self) -> String {
        self.session_secret
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Reads the ledger's session secret again (after `backstop config
    /// rotate-session-secret`, say). It reads the ledger: call it off the async workers.
    ///
    /// # Errors
    /// The ledger failed; the secret in use stays.
    pub fn refresh_session_secret(&self) -> Result<(), backstop_store::StoreError> {
        let secret = crate::ui::session::ledger_secret(self.store.as_ref(), Timestamp::now())?;
        *self
            .session_secret
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = secret;
        Ok(())
    }

    /// Journals the strategies of the catalog in use, so every server on the ledger uses them
    /// from here on (after a reload).
    ///
    /// # Errors
    /// The journal could not be written.
    pub async fn announce_strategies(&self) -> Result<(), crate::queue::JournalError> {
        let event =
            crate::journal::strategies_event(&self.catalog().strategy_files, Timestamp::now());
        self.attempts.journal(event).await.map(|_| ())
    }

    /// Whether no keys are configured: every request is the local operator.
    pub fn is_open(&self) -> bool {
        self.keys.is_empty()
    }

    /// The current packs and rules.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(
            &self
                .catalog
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Loads the packs and rules again from the config file (or the start-up config); on any
    /// issue the old ones stay and the issues are returned.
    pub fn reload(&self) -> Result<usize, Vec<backstop_core::Issue>> {
        self.reload_with(None)
    }

    /// [`AppState::reload`], with the strategy files given on the command line (which the
    /// file's `strategies` do not override).
    pub fn reload_with(
        &self,
        strategies: Option<&[PathBuf]>,
    ) -> Result<usize, Vec<backstop_core::Issue>> {
        let mut config = match &self.config_path {
            Some(path) => Config::load(path)?,
            None => self.config.clone(),
        };
        if let Some(files) = strategies.filter(|f| !f.is_empty()) {
            config.strategies = files.to_vec();
        }
        let catalog = Catalog::load(&config)?;
        let count = catalog.packs.len();
        *self
            .catalog
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(catalog);
        Ok(count)
    }
}

/// The caller every request is when no keys are configured.
pub fn local_operator() -> Caller {
    Caller {
        id: "local".to_owned(),
        role: Role::Operator,
    }
}
