//! The service's one TOML file: where to listen, the ledger, packs and rules to load, API keys
//! and limits. Every issue is listed with its path; nothing starts on a config with issues.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use backstop_core::{Issue, input};
use backstop_store::Location;
use toml::{Table, Value};

/// The default address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7600";
/// The default ledger file.
pub const DEFAULT_DB: &str = "./backstop.db";

mod effects;
mod notify;
mod proxy;
mod retention;

pub use retention::Retention;

pub use effects::{EffectsConfig, MIN_SECRET_CHARS, SIMULATOR_SOURCE, WebhookSource};
pub use notify::{NotifyConfig, NotifyTarget};

const TOP_KEYS: [&str; 14] = [
    "outbound",
    "proxy",
    "retention",
    "notify",
    "dispatch",
    "webhooks",
    "simulator",
    "listen",
    "db",
    "packs",
    "rules",
    "strategies",
    "limits",
    "keys",
];
const LIMIT_KEYS: [&str; 10] = [
    "body_bytes",
    "timeout_ms",
    "rate_per_second",
    "burst",
    "auth_failures_per_second",
    "auth_failures_burst",
    "header_timeout_ms",
    "idle_timeout_ms",
    "max_connections",
    "max_connections_per_address",
];
const KEY_KEYS: [&str; 3] = ["hash", "caller", "role"];

/// The service's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The ledger: a `SQLite` file, or a `postgres://` URL.
    pub db: Location,
    /// Pack files, or directories whose `*.toml` files are packs.
    pub packs: Vec<PathBuf>,
    /// Classifier rule files, or directories whose `*.toml` files are rule files (in name
    /// order), in front of the built-in rules.
    pub rules: Vec<PathBuf>,
    /// Recovery strategy files, or directories whose `*.toml` files are (in name order), each
    /// over the built-in strategies and the files before it.
    pub strategies: Vec<PathBuf>,
    /// Request limits.
    pub limits: Limits,
    /// API keys; none means the service is open (and loopback only).
    pub keys: Vec<ApiKey>,
    /// Side effects: the live key, webhook sources, the simulator, the sweep.
    pub effects: EffectsConfig,
    /// Notifications for people: `[[notify]]` targets and their delivery.
    pub notify: NotifyConfig,
    /// Where the service may send requests of its own (`[outbound]`).
    pub outbound: crate::outbound::Outbound,
    /// How long records are kept, and how often `serve` purges what is older (`[retention]`).
    pub retention: Retention,
    /// Upstream MCP servers `backstop proxy --config` fronts: `[[proxy]]`.
    pub proxy: Vec<backstop_mcp::proxy::ProxySettings>,
}

/// Request limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// The largest request body (default 1 MiB); over it, 413.
    pub body_bytes: usize,
    /// The longest a request may take (default 10 s); past it, 503.
    pub timeout: Duration,
    /// Requests per second per caller, refilled continuously (default 200).
    pub rate_per_second: f64,
    /// Requests a caller may make at once before the rate applies (default 400).
    pub burst: f64,
    /// Failed authentications per second per client address (default 5): a brake on
    /// guessing keys.
    pub auth_failures_per_second: f64,
    /// Failed authentications a client address may make at once (default 20).
    pub auth_failures_burst: f64,
    /// From a request's first byte to the end of its head (default 10 s); past it, the
    /// connection is closed.
    pub header_timeout: Duration,
    /// How long a connection may wait for its next request (default 60 s); past it, closed.
    pub idle_timeout: Duration,
    /// Connections open at once (default 1024); past it, new ones wait until one closes.
    pub max_connections: usize,
    /// Connections open at once from one client address (default 256); past it, a new one
    /// from that address is closed at once, so one client cannot take every slot.
    pub max_connections_per_address: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            body_bytes: 1024 * 1024,
            timeout: Duration::from_secs(10),
            rate_per_second: 200.0,
            burst: 400.0,
            auth_failures_per_second: crate::limits::AUTH_FAILURES_PER_SECOND,
            auth_failures_burst: crate::limits::AUTH_FAILURES_BURST,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_mins(1),
            max_connections: 1024,
            max_connections_per_address: 256,
        }
    }
}

/// One API key: stored as the hex SHA-256 of the key, never the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// Lower-case hex SHA-256 of the key (`backstop config hash-key KEY` prints it).
    pub hash: String,
    /// The caller the key speaks for: cases belong to it.
    pub caller: String,
    /// What the caller may do.
    pub role: Role,
}

/// What a caller may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Classify, recover, ask for decisions, read its own cases and review items.
    Agent,
    /// Everything an agent may, plus resolving review items and granting retries.
    Operator,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN.parse().expect("a valid address"),
            db: Location::new(DEFAULT_DB),
            packs: Vec::new(),
            rules: Vec::new(),
            strategies: Vec::new(),
            limits: Limits::default(),
            keys: Vec::new(),
            effects: EffectsConfig::default(),
            notify: NotifyConfig::default(),
            outbound: crate::outbound::Outbound::default(),
            retention: Retention::default(),
            proxy: Vec::new(),
        }
    }
}

impl Config {
    /// Reads a config file; relative paths in it are relative to the file's folder.
    pub fn load(path: &Path) -> Result<Config, Vec<Issue>> {
        let text = crate::files::read_text(path, "", &path.display().to_string())
            .map_err(|issue| vec![issue])?;
        let base = path.parent().unwrap_or_else(|| Path::new("."));
        Config::parse(&text, base)
    }

    /// Parses a config's text; `base` is the folder relative paths start from.
    pub fn parse(text: &str, base: &Path) -> Result<Config, Vec<Issue>> {
        let (config, issues) = Config::parse_all(text, base);
        if issues.is_empty() {
            Ok(config)
        } else {
            Err(issues)
        }
    }

    /// Everything of the config that could be read, and every issue: `config check` goes on to
    /// check the packs and rules of a config that has issues of its own.
    pub fn parse_all(text: &str, base: &Path) -> (Config, Vec<Issue>) {
        let table = match input::toml_table(text) {
            Ok(table) => table,
            Err(issue) => return (Config::default(), vec![issue]),
        };
        let mut issues = Vec::new();
        let mut config = Config::default();
        unknown_keys(&table, "", &TOP_KEYS, &mut issues);
        if let Some(listen) = string(&table, "listen", "listen", &mut issues) {
            match listen.parse() {
                Ok(addr) => config.listen = addr,
                Err(_) => issues.push(Issue::new(
                    "listen",
                    "bad_address",
                    format!("`{listen}` is not an address like 127.0.0.1:7600"),
                )),
            }
        }
        if let Some(db) = string(&table, "db", "db", &mut issues) {
            // A file is relative to the config's folder; a URL is as written.
            config.db = match Location::new(&db) {
                Location::Sqlite(path) => Location::Sqlite(base.join(path)),
                postgres @ Location::Postgres(_) => postgres,
            };
        }
        config.packs = paths(&table, "packs", base, &mut issues);
        config.rules = paths(&table, "rules", base, &mut issues);
        config.strategies = paths(&table, "strategies", base, &mut issues);
        if let Some(value) = table.get("limits") {
            config.limits = limits(value, &mut issues);
        }
        if let Some(value) = table.get("keys") {
            config.keys = keys(value, &mut issues);
        }
        config.effects = effects::parse(&table, &mut issues);
        config.outbound = outbound(&table, &mut issues);
        config.retention = retention::parse(&table, &mut issues);
        config.notify = notify::parse(&table, &mut issues);
        config.proxy = proxy::parse(&table, &mut issues);
        for (i, target) in config.notify.targets.iter().enumerate() {
            if let Err(why) = config.outbound.check_url(&target.url) {
                issues.push(Issue::new(
                    format!("notify[{i}].url"),
                    "forbidden_target",
                    why,
                ));
            }
        }
        (config, issues)
    }
}

/// `[outbound]`: where the service may send requests of its own.
fn outbound(table: &Table, issues: &mut Vec<Issue>) -> crate::outbound::Outbound {
    let mut policy = crate::outbound::Outbound::default();
    let Some(value) = table.get("outbound") else {
        return policy;
    };
    let Some(section) = value.as_table() else {
        issues.push(Issue::new(
            "outbound",
            "wrong_type",
            "expected an [outbound] table",
        ));
        return policy;
    };
    unknown_keys(section, "outbound", &["allow_loopback"], issues);
    match section.get("allow_loopback") {
        None => {}
        Some(Value::Boolean(allow)) => policy.allow_loopback = *allow,
        Some(other) => issues.push(Issue::new(
            "outbound.allow_loopback",
            "wrong_type",
            format!("expected true or false, found {}", other.type_str()),
        )),
    }
    policy
}

/// The hex SHA-256 of an API key, as the config stores it.
pub fn hash_key(key: &str) -> String {
    use sha2::Digest as _;
    backstop_core::case::identity::hex(&sha2::Sha256::digest(key.as_bytes()))
}

fn unknown_keys(table: &Table, path: &str, known: &[&str], issues: &mut Vec<Issue>) {
    input::unknown_keys(table.keys(), path, known, input::Format::Toml, issues);
}

fn string(table: &Table, key: &str, path: &str, issues: &mut Vec<Issue>) -> Option<String> {
    match table.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        other => {
            issues.push(Issue::new(
                path,
                "wrong_type",
                format!("expected a non-empty string, found {}", other.type_str()),
            ));
            None
        }
    }
}

fn paths(table: &Table, key: &str, base: &Path, issues: &mut Vec<Issue>) -> Vec<PathBuf> {
    let Some(value) = table.get(key) else {
        return Vec::new();
    };
    let Some(items) = value.as_array() else {
        issues.push(Issue::new(
            key,
            "wrong_type",
            format!("expected a list of paths, found {}", value.type_str()),
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(p) if !p.trim().is_empty() => out.push(base.join(p)),
            _ => issues.push(Issue::new(
                format!("{key}[{i}]"),
                "wrong_type",
                format!("expected a path, found {}", item.type_str()),
            )),
        }
    }
    out
}

fn limits(value: &Value, issues: &mut Vec<Issue>) -> Limits {
    let mut limits = Limits::default();
    let Some(table) = value.as_table() else {
        issues.push(Issue::new("limits", "wrong_type", "expected a table"));
        return limits;
    };
    unknown_keys(table, "limits", &LIMIT_KEYS, issues);
    let mut positive = |key: &str| -> Option<f64> {
        let path = format!("limits.{key}");
        let value = table.get(key)?;
        #[allow(clippy::cast_precision_loss)]
        let number = match value {
            Value::Integer(n) => Some(*n as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        };
        match number {
            Some(n) if n > 0.0 && n.is_finite() => Some(n),
            _ => {
                issues.push(Issue::new(
                    path,
                    "out_of_range",
                    format!("expected a number above 0, found {value}"),
                ));
                None
            }
        }
    };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    if let Some(n) = positive("body_bytes") {
        limits.body_bytes = n as usize;
    }
    if let Some(ms) = positive("timeout_ms") {
        limits.timeout = Duration::from_secs_f64(ms / 1000.0);
    }
    if let Some(rate) = positive("rate_per_second") {
        limits.rate_per_second = rate;
    }
    if let Some(burst) = positive("burst") {
        limits.burst = burst.max(1.0);
    }
    if let Some(rate) = positive("auth_failures_per_second") {
        limits.auth_failures_per_second = rate;
    }
    if let Some(burst) = positive("auth_failures_burst") {
        limits.auth_failures_burst = burst.max(1.0);
    }
    if let Some(ms) = positive("header_timeout_ms") {
        limits.header_timeout = Duration::from_secs_f64(ms / 1000.0);
    }
    if let Some(ms) = positive("idle_timeout_ms") {
        limits.idle_timeout = Duration::from_secs_f64(ms / 1000.0);
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    if let Some(n) = positive("max_connections") {
        limits.max_connections = (n as usize).max(1);
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    if let Some(n) = positive("max_connections_per_address") {
        limits.max_connections_per_address = (n as usize).max(1);
    }
    limits
}

fn keys(value: &Value, issues: &mut Vec<Issue>) -> Vec<ApiKey> {
    let Some(items) = value.as_array() else {
        issues.push(Issue::new("keys", "wrong_type", "expected [[keys]] tables"));
        return Vec::new();
    };
    let mut out: Vec<ApiKey> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("keys[{i}]");
        let Some(table) = item.as_table() else {
            issues.push(Issue::new(path, "wrong_type", "expected a table"));
            continue;
        };
        unknown_keys(table, &path, &KEY_KEYS, issues);
        let hash = string(table, "hash", &format!("{path}.hash"), issues);
        let caller = string(table, "caller", &format!("{path}.caller"), issues);
        let role = match string(table, "role", &format!("{path}.role"), issues).as_deref() {
            Some("agent") => Some(Role::Agent),
            Some("operator") => Some(Role::Operator),
            Some(other) => {
                issues.push(Issue::new(
                    format!("{path}.role"),
                    "unknown_role",
                    format!("`{other}` is not a role; roles are agent and operator"),
                ));
                None
            }
            None => None,
        };
        for field in ["hash", "caller"] {
            if table.get(field).is_none() {
                issues.push(Issue::new(
                    format!("{path}.{field}"),
                    "required",
                    format!("a key needs `{field}`"),
                ));
            }
        }
        if table.get("role").is_none() {
            issues.push(Issue::new(
                format!("{path}.role"),
                "required",
                "a key needs `role` (agent or operator)",
            ));
        }
        if let Some(h) = &hash
            && (h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            issues.push(Issue::new(
                format!("{path}.hash"),
                "bad_hash",
                "expected the key's SHA-256 as 64 hex digits (`backstop config hash-key KEY`); \
                 never the key itself",
            ));
            continue;
        }
        if let (Some(hash), Some(caller), Some(role)) = (hash, caller, role) {
            let hash = hash.to_ascii_lowercase();
            if out.iter().any(|k| k.hash == hash) {
                issues.push(Issue::new(
                    format!("{path}.hash"),
                    "duplicate",
                    "this key is already listed",
                ));
                continue;
            }
            out.push(ApiKey { hash, caller, role });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notify_target_the_outbound_policy_forbids_is_an_issue_at_its_path() {
        let text = |allow: &str, url: &str| {
            format!(
                "{allow}\n[[notify]]\nurl = \"{url}\"\nsecret = \"0123456789abcdef\"\nevents = [\"review_opened\"]\n"
            )
        };
        let issues = |text: &str| {
            let (_, issues) = Config::parse_all(text, Path::new("/etc/backstop"));
            issues
                .into_iter()
                .map(|i| (i.path, i.code))
                .collect::<Vec<_>>()
        };
        let forbidden = vec![("notify[0].url".to_owned(), "forbidden_target".to_owned())];
        assert_eq!(
            issues(&text("", "http://169.254.169.254/latest")),
            forbidden
        );
        assert_eq!(issues(&text("", "http://127.0.0.1:9000/hook")), forbidden);
        let local = "[outbound]\nallow_loopback = true";
        assert_eq!(issues(&text(local, "http://127.0.0.1:9000/hook")), vec![]);
        assert_eq!(
            issues(&text(local, "http://169.254.169.254/latest")),
            forbidden,
            "metadata stays forbidden"
        );
        assert_eq!(
            issues("[outbound]\nallow_loopback = \"yes\"\nmore = 1\n"),
            vec![
                ("outbound.more".to_owned(), "unknown_key".to_owned()),
                (
                    "outbound.allow_loopback".to_owned(),
                    "wrong_type".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn an_empty_config_gives_the_defaults() {
        let config = Config::parse("", Path::new("/etc/backstop")).unwrap();
        assert_eq!(config.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(config.limits.body_bytes, 1024 * 1024);
        assert!(config.keys.is_empty());
    }

    #[test]
    fn a_full_config_parses_with_paths_from_its_folder() {
        let text = format!(
            r#"
listen = "0.0.0.0:8080"
db = "ledger.db"
packs = ["packs"]
rules = ["/abs/rules.toml"]
[limits]
body_bytes = 2048
timeout_ms = 500
rate_per_second = 5
burst = 10
auth_failures_per_second = 0.5
auth_failures_burst = 3
header_timeout_ms = 2500
idle_timeout_ms = 30000
max_connections = 64
[[keys]]
hash = "{}"
caller = "agent-a"
role = "agent"
"#,
            hash_key("secret")
        );
        let config = Config::parse(&text, Path::new("/etc/backstop")).unwrap();
        assert_eq!(
            config.db,
            Location::Sqlite("/etc/backstop/ledger.db".into())
        );
        assert_eq!(config.packs, [Path::new("/etc/backstop/packs")]);
        assert_eq!(config.rules, [Path::new("/abs/rules.toml")]);
        assert_eq!(config.limits.timeout, Duration::from_millis(500));
        assert_eq!(config.limits.header_timeout, Duration::from_millis(2500));
        assert_eq!(config.limits.idle_timeout, Duration::from_secs(30));
        assert_eq!(config.limits.max_connections, 64);
        assert!((config.limits.auth_failures_per_second - 0.5).abs() < f64::EPSILON);
        assert!((config.limits.auth_failures_burst - 3.0).abs() < f64::EPSILON);
        assert_eq!(config.keys[0].role, Role::Agent);
    }

    #[test]
    fn every_issue_is_listed_with_its_path() {
        let text = r#"
listen = "nowhere"
colour = 1
packs = "packs"
[limits]
body_bytes = -1
speed = 2
idle_timeout_ms = 0
max_connections = "many"
[[keys]]
hash = "plain-text-key"
caller = "a"
role = "admin"
[[keys]]
caller = "b"
"#;
        let issues = Config::parse(text, Path::new(".")).unwrap_err();
        let mut found: Vec<(&str, &str)> = issues
            .iter()
            .map(|i| (i.path.as_str(), i.code.as_str()))
            .collect();
        found.sort_unstable();
        assert_eq!(
            found,
            [
                ("colour", "unknown_key"),
                ("keys[0].hash", "bad_hash"),
                ("keys[0].role", "unknown_role"),
                ("keys[1].hash", "required"),
                ("keys[1].role", "required"),
                ("limits.body_bytes", "out_of_range"),
                ("limits.idle_timeout_ms", "out_of_range"),
                ("limits.max_connections", "out_of_range"),
                ("limits.speed", "unknown_key"),
                ("listen", "bad_address"),
                ("packs", "wrong_type"),
            ]
        );
    }

    #[test]
    fn keys_are_hashed_with_sha256() {
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
