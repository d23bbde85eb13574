//! `[[notify]]`: where notifications for people go, signed with a secret of each target's own.
//!
//! ```toml
//! [[notify]]
//! name = "ops"                                   # optional; default notify-<hash of the url>
//! url = "https://hooks.example.com/backstop"
//! secret = "at least 16 characters"
//! events = ["escalation", "review_opened", "attempt_limit", "dispatch_refused"]
//! format = "backstop"                            # or "slack"
//! ```

use backstop_core::Issue;
use backstop_core::notify::{DeliveryPolicy, NotifyFormat, NotifyKind};
use toml::{Table, Value};

use super::{MIN_SECRET_CHARS, string, unknown_keys};

const ENTRY_KEYS: [&str; 5] = ["name", "url", "secret", "events", "format"];

/// Notification targets and how they are delivered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NotifyConfig {
    /// The `[[notify]]` entries.
    pub targets: Vec<NotifyTarget>,
    /// Retries, breaker, lease and polling: fixed defaults, not read from the file.
    pub delivery: DeliveryPolicy,
}

/// One `[[notify]]` entry.
#[derive(Clone, PartialEq, Eq)]
pub struct NotifyTarget {
    /// Its name in the ledger and in `backstop notify list`.
    pub name: String,
    /// Where notifications are posted (http or https).
    pub url: String,
    /// The HMAC-SHA256 secret deliveries are signed with.
    pub secret: String,
    /// The kinds of events it is sent, at least one.
    pub events: Vec<NotifyKind>,
    /// The body's shape.
    pub format: NotifyFormat,
}

impl std::fmt::Debug for NotifyTarget {
    // The URL may carry a token (a Slack webhook's path does) and the secret is one: neither
    // is ever shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifyTarget")
            .field("name", &self.name)
            .field("events", &self.events)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

/// Reads `[[notify]]` from the config's top table.
pub(super) fn parse(table: &Table, issues: &mut Vec<Issue>) -> NotifyConfig {
    let mut config = NotifyConfig::default();
    let Some(value) = table.get("notify") else {
        return config;
    };
    let Some(items) = value.as_array() else {
        issues.push(Issue::new(
            "notify",
            "wrong_type",
            "expected [[notify]] tables",
        ));
        return config;
    };
    for (i, item) in items.iter().enumerate() {
        let path = format!("notify[{i}]");
        let Some(t) = item.as_table() else {
            issues.push(Issue::new(path, "wrong_type", "expected a table"));
            continue;
        };
        if let Some(target) = entry(t, &path, issues) {
            if config.targets.iter().any(|other| other.name == target.name) {
                issues.push(Issue::new(
                    format!("{path}.name"),
                    "duplicate",
                    format!(
                        "`{}` names two [[notify]] entries (without `name`, two entries with \
                         one url): give each its own name",
                        target.name
                    ),
                ));
            }
            config.targets.push(target);
        }
    }
    config
}

/// One entry, or `None` when it has issues (all of them recorded).
fn entry(t: &Table, path: &str, issues: &mut Vec<Issue>) -> Option<NotifyTarget> {
    let before = issues.len();
    unknown_keys(t, path, &ENTRY_KEYS, issues);
    for key in ["url", "secret", "events"] {
        if t.get(key).is_none() {
            issues.push(Issue::new(
                format!("{path}.{key}"),
                "missing",
                "this key is required",
            ));
        }
    }
    let url = string(t, "url", &format!("{path}.url"), issues);
    if let Some(url) = &url
        && let Err(why) = check_url(url)
    {
        issues.push(Issue::new(format!("{path}.url"), "bad_url", why));
    }
    let secret = string(t, "secret", &format!("{path}.secret"), issues);
    if secret
        .as_ref()
        .is_some_and(|s| s.chars().count() < MIN_SECRET_CHARS)
    {
        issues.push(Issue::new(
            format!("{path}.secret"),
            "too_short",
            format!("a notify secret has at least {MIN_SECRET_CHARS} characters"),
        ));
    }
    let events = t
        .get("events")
        .map(|v| events(v, &format!("{path}.events"), issues))
        .unwrap_or_default();
    let format = match string(t, "format", &format!("{path}.format"), issues) {
        None => NotifyFormat::default(),
        Some(name) => NotifyFormat::parse(&name).unwrap_or_else(|| {
            issues.push(Issue::new(
                format!("{path}.format"),
                "unknown_format",
                format!("`{name}` is not a format; formats are backstop and slack"),
            ));
            NotifyFormat::default()
        }),
    };
    let name = string(t, "name", &format!("{path}.name"), issues);
    let name_ok = |n: &str| {
        n.len() <= 100
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if let Some(n) = name.as_deref().filter(|n| !name_ok(n)) {
        issues.push(Issue::new(
            format!("{path}.name"),
            "bad_name",
            format!("`{n}` cannot name a target: 1 to 100 letters, digits, `-`, `_` or `.`"),
        ));
    }
    if issues.len() > before {
        return None;
    }
    let url = url?;
    Some(NotifyTarget {
        name: name.unwrap_or_else(|| default_name(&url)),
        url,
        secret: secret?,
        events,
        format,
    })
}

/// `events`: a non-empty list of known kinds, each once.
fn events(value: &Value, path: &str, issues: &mut Vec<Issue>) -> Vec<NotifyKind> {
    let known = NotifyKind::ALL.map(NotifyKind::as_str).join(", ");
    let Some(items) = value.as_array() else {
        issues.push(Issue::new(
            path,
            "wrong_type",
            format!("expected a list of events ({known})"),
        ));
        return Vec::new();
    };
    if items.is_empty() {
        issues.push(Issue::new(
            path,
            "empty",
            format!("name at least one event ({known})"),
        ));
    }
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}[{i}]");
        match item.as_str().map(|name| (name, NotifyKind::parse(name))) {
            Some((_, Some(kind))) if out.contains(&kind) => issues.push(Issue::new(
                at,
                "duplicate",
                format!("`{}` is listed twice", kind.as_str()),
            )),
            Some((_, Some(kind))) => out.push(kind),
            Some((name, None)) => issues.push(Issue::new(
                at,
                "unknown_event",
                format!("`{name}` is not an event; events are {known}"),
            )),
            None => issues.push(Issue::new(
                at,
                "wrong_type",
                format!("expected an event name, found {}", item.type_str()),
            )),
        }
    }
    out
}

/// Whether `url` is an absolute http or https URL with a host.
fn check_url(url: &str) -> Result<(), String> {
    let expected = "expected an absolute http:// or https:// URL with a host";
    let uri: axum::http::Uri = url.parse().map_err(|_| format!("not a URL: {expected}"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(host)) if !host.is_empty() => Ok(()),
        (Some(scheme), _) if scheme != "http" && scheme != "https" => {
            Err(format!("the scheme `{scheme}` is not http or https"))
        }
        _ => Err(expected.to_owned()),
    }
}

/// A name for an entry without one: stable for its URL, showing nothing of it.
fn default_name(url: &str) -> String {
    let hash = backstop_core::case::identity::full_hash(url.as_bytes());
    format!("notify-{}", &hash[..8])
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::Config;

    fn issues(text: &str) -> Vec<(String, String)> {
        let mut found: Vec<_> = crate::Config::parse(text, Path::new("."))
            .unwrap_err()
            .into_iter()
            .map(|i| (i.path, i.code))
            .collect();
        found.sort();
        found
    }

    #[test]
    fn a_good_entry_parses_with_its_defaults() {
        let config = Config::parse(
            r#"
[outbound]
allow_loopback = true
[[notify]]
url = "https://hooks.example.com/backstop"
secret = "0123456789abcdef"
events = ["escalation", "review_opened"]
[[notify]]
name = "chat"
url = "http://127.0.0.1:9000/slack"
secret = "0123456789abcdef"
events = ["dispatch_refused"]
format = "slack"
"#,
            Path::new("."),
        )
        .unwrap();
        let targets = &config.notify.targets;
        assert_eq!(targets.len(), 2);
        assert!(
            targets[0].name.starts_with("notify-"),
            "{}",
            targets[0].name
        );
        assert_eq!(targets[0].format, super::NotifyFormat::Backstop);
        assert_eq!(
            targets[0].events,
            [
                super::NotifyKind::Escalation,
                super::NotifyKind::ReviewOpened
            ]
        );
        assert_eq!(targets[1].name, "chat");
        assert_eq!(targets[1].format, super::NotifyFormat::Slack);
        let shown = format!("{targets:?}");
        assert!(!shown.contains("0123456789abcdef") && !shown.contains("hooks.example"));
    }

    #[test]
    fn every_bad_entry_is_listed_with_its_path() {
        let found = issues(
            r#"
[[notify]]
url = "ftp://example.com/x"
secret = "short"
events = ["escalation", "escalations", 3, "escalation"]
format = "teams"
colour = "red"
[[notify]]
url = "not a url"
events = []
name = "has space"
[[notify]]
name = "dup"
url = "https://a.example.com/"
secret = "0123456789abcdef"
events = ["attempt_limit"]
[[notify]]
name = "dup"
url = "https://b.example.com/"
secret = "0123456789abcdef"
events = "escalation"
[[notify]]
name = "same"
url = "https://c.example.com/"
secret = "0123456789abcdef"
events = ["review_opened"]
[[notify]]
name = "same"
url = "https://d.example.com/"
secret = "0123456789abcdef"
events = ["review_opened"]
"#,
        );
        let expected: Vec<(String, String)> = [
            ("notify[0].colour", "unknown_key"),
            ("notify[0].events[1]", "unknown_event"),
            ("notify[0].events[2]", "wrong_type"),
            ("notify[0].events[3]", "duplicate"),
            ("notify[0].format", "unknown_format"),
            ("notify[0].secret", "too_short"),
            ("notify[0].url", "bad_url"),
            ("notify[1].events", "empty"),
            ("notify[1].name", "bad_name"),
            ("notify[1].secret", "missing"),
            ("notify[1].url", "bad_url"),
            ("notify[3].events", "wrong_type"),
            ("notify[5].name", "duplicate"),
        ]
        .iter()
        .map(|(p, c)| ((*p).to_owned(), (*c).to_owned()))
        .collect();
        assert_eq!(found, expected);
        assert_eq!(
            issues("notify = 3"),
            [("notify".to_owned(), "wrong_type".to_owned())]
        );
        assert_eq!(
            issues("[[notify]]\nurl = \"https://x.example.com\"\nsecret = \"0123456789abcdef\""),
            [("notify[0].events".to_owned(), "missing".to_owned())]
        );
    }
}
