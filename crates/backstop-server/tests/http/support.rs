//! A server per test, and a small client.
//!
//! The ledger is a `SQLite` file in the test's folder, or, when `BACKSTOP_TEST_HTTP_POSTGRES`
//! names a database as a `postgres://` URL (`.ci/run` sets it for a second run of this suite),
//! a schema of its own in that database, opened from a URL as `backstop serve --db` opens it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use backstop_server::catalog::Catalog;
use backstop_server::config::{ApiKey, Limits, Role, hash_key};
use backstop_server::{AppState, Config};
use backstop_store::{Location, SqliteStore, Store};
use serde_json::Value;

/// The agent's key (caller `agent-a`), another agent's (`agent-b`) and the operator's.
pub const AGENT_A: &str = "key-agent-a";
pub const AGENT_B: &str = "key-agent-b";
pub const OPERATOR: &str = "key-operator";

/// A running server; stopped when dropped.
#[derive(Debug)]
pub struct Server {
    pub address: SocketAddr,
    pub state: Arc<AppState>,
    pub dir: PathBuf,
    /// The ledger's path as the test gave it (on `PostgreSQL`, the schema stands for it).
    pub ledger: PathBuf,
    /// The `PostgreSQL` schema holding the ledger, when the suite runs on `PostgreSQL`.
    schema: Option<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(schema) = &self.schema {
            postgres_ledger::drop_schema(schema);
        }
    }
}

/// The suite on `PostgreSQL`: a schema per ledger path, in the database the environment names.
mod postgres_ledger {
    use std::hash::{DefaultHasher, Hash, Hasher};
    use std::path::Path;

    /// The environment variable naming the database (`postgres://user@host:port/db`).
    pub const ENV: &str = "BACKSTOP_TEST_HTTP_POSTGRES";

    /// The database URL, when the suite runs on `PostgreSQL`.
    pub fn base() -> Option<String> {
        std::env::var(ENV).ok().filter(|v| !v.trim().is_empty())
    }

    /// The schema standing for the `SQLite` file `path` (the same path, the same schema, so a
    /// restart finds its ledger), created if new, and the URL that opens it.
    pub fn schema_for(base: &str, path: &Path) -> (String, String) {
        let mut hasher = DefaultHasher::new();
        path.hash(&mut hasher);
        let schema = format!("backstop_http_{:016x}", hasher.finish());
        let mut admin = postgres::Client::connect(base, postgres::NoTls)
            .unwrap_or_else(|e| panic!("{ENV}={base}: {e}"));
        admin
            .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .unwrap();
        let separator = if base.contains('?') { '&' } else { '?' };
        // The schema names the connections too, so a test can find (and cut) them.
        let url = format!(
            "{base}{separator}options=-c%20search_path%3D{schema}&application_name={schema}"
        );
        (schema, url)
    }

    pub fn drop_schema(schema: &str) {
        if let Some(base) = base()
            && let Ok(mut admin) = postgres::Client::connect(&base, postgres::NoTls)
        {
            let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
    }
}

fn temp_dir() -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "backstop-http-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The repository's `packs/` folder.
pub fn packs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../packs")
}

/// A server with the shipped packs and three keys.
pub fn start() -> Server {
    start_with(|_| {})
}

/// A server with the shipped packs, three keys, and `change` applied to its config.
pub fn start_with(change: impl FnOnce(&mut Config)) -> Server {
    let dir = temp_dir();
    let mut config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        db: Location::Sqlite(dir.join("ledger.db")),
        packs: vec![packs_dir()],
        rules: Vec::new(),
        strategies: Vec::new(),
        limits: Limits::default(),
        keys: vec![
            key(AGENT_A, "agent-a", Role::Agent),
            key(AGENT_B, "agent-b", Role::Agent),
            key(OPERATOR, "dana", Role::Operator),
        ],
        effects: backstop_server::config::EffectsConfig::default(),
        notify: backstop_server::config::NotifyConfig::default(),
        // The suite's receivers and status endpoints are on loopback.
        outbound: backstop_server::outbound::Outbound {
            allow_loopback: true,
        },
        retention: backstop_server::config::Retention::default(),
        proxy: Vec::new(),
    };
    change(&mut config);
    start_config(config, None, dir)
}

/// A server for `config`; `config_path` is what a reload reads.
pub fn start_config(mut config: Config, config_path: Option<PathBuf>, dir: PathBuf) -> Server {
    let catalog = Catalog::load(&config).unwrap_or_else(|issues| panic!("{issues:?}"));
    let Location::Sqlite(ledger) = config.db.clone() else {
        panic!("the suite's ledgers start as files");
    };
    let (store, schema): (Arc<dyn Store>, Option<String>) = match postgres_ledger::base() {
        Some(base) => {
            let (schema, url) = postgres_ledger::schema_for(&base, &ledger);
            config.db = Location::Postgres(url.clone());
            let store = backstop_store::open(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
            (Arc::from(store), Some(schema))
        }
        None => (Arc::new(SqliteStore::open(&ledger).unwrap()), None),
    };
    let state = Arc::new(
        AppState::new(config, config_path, catalog, store, jiff::Timestamp::now()).unwrap(),
    );
    let shared = Arc::clone(&state);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (ready, address) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            ready.send(listener.local_addr().unwrap()).unwrap();
            backstop_server::serve(listener, state, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
    });
    Server {
        address: address.recv().unwrap(),
        state: shared,
        dir,
        ledger,
        schema,
        stop: Some(stop),
        thread: Some(thread),
    }
}

/// A second server on the same ledger as `server` (another process of the fleet, say), with
/// the same keys and packs.
pub fn start_beside(server: &Server) -> Server {
    let mut config = server.state.config.clone();
    config.db = Location::Sqlite(server.ledger.clone());
    start_config(config, None, temp_dir())
}

pub fn key(plain: &str, caller: &str, role: Role) -> ApiKey {
    ApiKey {
        hash: hash_key(plain),
        caller: caller.to_owned(),
        role,
    }
}

/// One answer: status, headers we look at, and the body as JSON (or text).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub retry_after: Option<String>,
    pub content_type: String,
    /// `Idempotent-Replayed: true`: a resend's stored step.
    pub replayed: bool,
    pub text: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }

    /// The refusal code, checking the one refusal shape on the way.
    pub fn refused(&self) -> String {
        let body = self.json();
        let error = body["error"]
            .as_object()
            .unwrap_or_else(|| panic!("not a refusal: {body}"));
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        assert!(error["issues"].is_array(), "{body}");
        error["code"].as_str().unwrap().to_owned()
    }
}

impl Server {
    /// The `application_name` of the server's `PostgreSQL` connections, when on `PostgreSQL`.
    pub fn application_name(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// `METHOD path` with an optional key and body.
    pub fn call(&self, method: &str, path: &str, key: Option<&str>, body: Option<&str>) -> Answer {
        self.call_with(method, path, key, &[], body)
    }

    /// A call with more request headers.
    pub fn call_with(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Answer {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let url = self.url(path);
        let auth = key.map(|k| format!("Bearer {k}"));
        let response = match (method, body) {
            ("GET", _) => {
                let mut request = agent.get(&url);
                if let Some(auth) = &auth {
                    request = request.header("Authorization", auth);
                }
                request.call()
            }
            (_, body) => {
                let mut request = match method {
                    "POST" => agent.post(&url),
                    "PUT" => agent.put(&url),
                    other => panic!("method {other}"),
                };
                request = request.header("Content-Type", "application/json");
                if let Some(auth) = &auth {
                    request = request.header("Authorization", auth);
                }
                for (name, value) in headers {
                    request = request.header(*name, *value);
                }
                request.send(body.unwrap_or_default())
            }
        };
        let mut response = response.unwrap();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let retry_after = header("retry-after");
        let content_type = header("content-type").unwrap_or_default();
        let replayed = header("idempotent-replayed").is_some_and(|v| v == "true");
        Answer {
            status: response.status().as_u16(),
            retry_after,
            content_type,
            replayed,
            text: response.body_mut().read_to_string().unwrap_or_default(),
        }
    }

    pub fn get(&self, path: &str, key: Option<&str>) -> Answer {
        self.call("GET", path, key, None)
    }

    pub fn post(&self, path: &str, key: Option<&str>, body: &Value) -> Answer {
        self.call("POST", path, key, Some(&body.to_string()))
    }
}

/// A vendor-risk request; `text` is the one `data_access` excerpt.
pub fn vendor(execution: &str, case: &str, text: &str) -> Value {
    serde_json::json!({
        "execution_id": execution,
        "case": {"id": case},
        "questions": {"data_access": {"excerpts": [
            {"source": "dpa.pdf", "locator": format!("§{execution}"), "text": text}
        ]}},
        "related": {"counterparty": {"id": "acct-991"}},
    })
}

/// Asserts `body` sent to `path` is refused 400 with an issue at `at` coded `code`.
#[track_caller]
pub fn refused_at(server: &Server, key: &str, path: &str, body: &Value, at: &str, code: &str) {
    let answer = server.post(path, Some(key), body);
    assert_eq!(
        (answer.status, answer.refused()),
        (400, "malformed".to_owned()),
        "{path} {at}: {}",
        answer.text
    );
    let issues = answer.json()["error"]["issues"].clone();
    assert!(
        issues
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["path"] == at && i["code"] == code),
        "expected {code} at {at}: {issues}"
    );
}
