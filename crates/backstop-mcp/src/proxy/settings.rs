//! A proxy's settings: the upstream it fronts and how each of its tools is governed. The same
//! shape is a `[[proxy]]` entry of the service's config and what `backstop proxy`'s flags build.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long a `tools/call` may go without an answer or a progress notification (seconds).
pub const DEFAULT_TIMEOUT_S: u64 = 60;
/// How long a `tools/call` may take at all, progress or not (seconds).
pub const DEFAULT_MAX_TIMEOUT_S: u64 = 600;
/// How long the upstream may take to start and answer `initialize` (seconds).
pub const DEFAULT_START_TIMEOUT_S: u64 = 30;
/// The longest wait before a resend the proxy sits out itself; a longer one goes back to the
/// model as "retry in N s" (seconds).
pub const DEFAULT_RESEND_WAIT_MAX_S: u64 = 30;

/// One upstream MCP server and how its calls are governed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxySettings {
    /// The proxy's name: the prefix of its sessions' task names and, on the service, its path
    /// (`/proxy/NAME/mcp`).
    pub name: String,
    /// The upstream as a command and its arguments, started as a child process and spoken to
    /// on its stdin and stdout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Whether the upstream's own `readOnlyHint` and `idempotentHint` are believed: only then
    /// does a hint make a tool safe to resend.
    #[serde(default)]
    pub trusted: bool,
    /// Seconds a call may go without an answer or a progress notification.
    #[serde(default = "default_timeout")]
    pub timeout_s: u64,
    /// Seconds a call may take at all, however much progress it reports.
    #[serde(default = "default_max_timeout")]
    pub max_timeout_s: u64,
    /// Seconds the upstream may take to start and answer `initialize`.
    #[serde(default = "default_start_timeout")]
    pub start_timeout_s: u64,
    /// The longest wait before a resend the proxy sits out itself.
    #[serde(default = "default_resend_wait_max")]
    pub resend_wait_max_s: u64,
    /// Settings of single tools, by the tool's name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolSettings>,
}

/// How one tool is governed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSettings {
    /// Whether a call of the tool may be sent again without doing its effect twice; said here,
    /// it overrides the upstream's hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Seconds a call of this tool may go without an answer or progress (the proxy's
    /// `timeout_s` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_S
}
fn default_max_timeout() -> u64 {
    DEFAULT_MAX_TIMEOUT_S
}
fn default_start_timeout() -> u64 {
    DEFAULT_START_TIMEOUT_S
}
fn default_resend_wait_max() -> u64 {
    DEFAULT_RESEND_WAIT_MAX_S
}

/// A setting that cannot work: its path and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingIssue {
    /// Where (`proxy.files.tools.write_file.timeout_s`).
    pub path: String,
    /// Why.
    pub message: String,
}

impl ProxySettings {
    /// Settings with every default, for the upstream `command`.
    pub fn new(name: impl Into<String>, command: Vec<String>) -> Self {
        ProxySettings {
            name: name.into(),
            command,
            trusted: false,
            timeout_s: DEFAULT_TIMEOUT_S,
            max_timeout_s: DEFAULT_MAX_TIMEOUT_S,
            start_timeout_s: DEFAULT_START_TIMEOUT_S,
            resend_wait_max_s: DEFAULT_RESEND_WAIT_MAX_S,
            tools: BTreeMap::new(),
        }
    }

    /// Every setting that cannot work, each under `prefix` (`proxy.files`).
    pub fn issues(&self, prefix: &str) -> Vec<SettingIssue> {
        let mut issues = Vec::new();
        let mut push = |path: String, message: &str| {
            issues.push(SettingIssue {
                path,
                message: message.to_owned(),
            });
        };
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_ok {
            push(
                format!("{prefix}.name"),
                "must be 1 to 64 letters, digits, '-' or '_'",
            );
        }
        if self.command.is_empty() {
            push(
                format!("{prefix}.command"),
                "names no upstream: give the command that starts the MCP server",
            );
        } else if self.command[0].trim().is_empty() {
            push(format!("{prefix}.command"), "its program is empty");
        }
        for (field, value) in [
            ("timeout_s", self.timeout_s),
            ("max_timeout_s", self.max_timeout_s),
            ("start_timeout_s", self.start_timeout_s),
        ] {
            if value == 0 {
                push(format!("{prefix}.{field}"), "must be at least 1 second");
            }
        }
        if self.max_timeout_s < self.timeout_s {
            push(
                format!("{prefix}.max_timeout_s"),
                "must be at least timeout_s",
            );
        }
        for (tool, settings) in &self.tools {
            if settings.timeout_s == Some(0) {
                push(
                    format!("{prefix}.tools.{tool}.timeout_s"),
                    "must be at least 1 second",
                );
            }
            if settings.timeout_s.is_some_and(|t| t > self.max_timeout_s) {
                push(
                    format!("{prefix}.tools.{tool}.timeout_s"),
                    "must be at most the proxy's max_timeout_s",
                );
            }
        }
        issues
    }

    /// How long a call of `tool` may go without an answer or progress.
    pub fn timeout_of(&self, tool: &str) -> Duration {
        let seconds = self
            .tools
            .get(tool)
            .and_then(|t| t.timeout_s)
            .unwrap_or(self.timeout_s);
        Duration::from_secs(seconds)
    }

    /// How long any call may take.
    pub fn max_timeout(&self) -> Duration {
        Duration::from_secs(self.max_timeout_s)
    }

    /// Whether the upstream's hints can decide `tool`'s safety: the upstream is trusted and no
    /// setting of the tool says.
    pub fn heeds_hints(&self, tool: &str) -> bool {
        self.trusted && self.tools.get(tool).and_then(|t| t.idempotent).is_none()
    }

    /// Whether `tool` may be sent again: its setting here, else (from a trusted upstream) its
    /// hints; a tool nobody vouches for is not.
    pub fn resend_safe(&self, tool: &str, hints: ToolHints) -> bool {
        if let Some(idempotent) = self.tools.get(tool).and_then(|t| t.idempotent) {
            return idempotent;
        }
        self.trusted && (hints.read_only || hints.idempotent)
    }
}

/// What an upstream says of a tool in its annotations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolHints {
    /// `readOnlyHint`.
    pub read_only: bool,
    /// `idempotentHint`.
    pub idempotent: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_trusted_upstreams_hints_or_a_setting_make_a_tool_safe_to_resend() {
        let mut settings = ProxySettings::new("files", vec!["server".to_owned()]);
        let read_only = ToolHints {
            read_only: true,
            idempotent: false,
        };
        assert!(!settings.resend_safe("read", read_only));
        settings.trusted = true;
        assert!(settings.resend_safe("read", read_only));
        assert!(!settings.resend_safe("write", ToolHints::default()));
        settings.tools.insert(
            "read".to_owned(),
            ToolSettings {
                idempotent: Some(false),
                timeout_s: None,
            },
        );
        assert!(!settings.resend_safe("read", read_only));
        settings.tools.insert(
            "write".to_owned(),
            ToolSettings {
                idempotent: Some(true),
                timeout_s: Some(5),
            },
        );
        assert!(settings.resend_safe("write", ToolHints::default()));
        assert_eq!(settings.timeout_of("write"), Duration::from_secs(5));
        assert_eq!(
            settings.timeout_of("read"),
            Duration::from_secs(DEFAULT_TIMEOUT_S)
        );
    }

    #[test]
    fn settings_that_cannot_work_are_named_by_their_path() {
        let mut settings = ProxySettings::new("files/x", Vec::new());
        settings.timeout_s = 700;
        settings.tools.insert(
            "slow".to_owned(),
            ToolSettings {
                idempotent: None,
                timeout_s: Some(0),
            },
        );
        let paths: Vec<String> = settings
            .issues("proxy[0]")
            .into_iter()
            .map(|i| i.path)
            .collect();
        assert_eq!(
            paths,
            [
                "proxy[0].name",
                "proxy[0].command",
                "proxy[0].max_timeout_s",
                "proxy[0].tools.slow.timeout_s"
            ]
        );
        assert!(
            ProxySettings::new("files", vec!["npx".to_owned()])
                .issues("proxy[0]")
                .is_empty()
        );
    }
}
