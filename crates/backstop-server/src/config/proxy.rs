//! `[[proxy]]`: upstream MCP servers `backstop proxy --config` fronts, each with how its tools
//! are governed.
//!
//! ```toml
//! [[proxy]]
//! name = "files"
//! command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]
//! trusted = true                    # believe the server's readOnlyHint / idempotentHint
//! timeout_s = 60                    # without an answer or progress
//! [proxy.tools.write_file]
//! idempotent = false
//! ```

use backstop_core::Issue;
use backstop_mcp::proxy::ProxySettings;
use toml::Table;

/// Reads `[[proxy]]` from the config's top table.
pub(super) fn parse(table: &Table, issues: &mut Vec<Issue>) -> Vec<ProxySettings> {
    let Some(value) = table.get("proxy") else {
        return Vec::new();
    };
    let Some(items) = value.as_array() else {
        issues.push(Issue::new(
            "proxy",
            "wrong_type",
            "expected [[proxy]] tables",
        ));
        return Vec::new();
    };
    let mut proxies: Vec<ProxySettings> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("proxy[{i}]");
        let read: Result<ProxySettings, _> = serde_path_to_error::deserialize(item.clone());
        let settings = match read {
            Ok(settings) => settings,
            Err(e) => {
                let at = e.path().to_string();
                let at = if at == "." {
                    path
                } else {
                    format!("{path}.{at}")
                };
                issues.push(Issue::new(at, "invalid", e.into_inner().to_string()));
                continue;
            }
        };
        for issue in settings.issues(&path) {
            issues.push(Issue::new(issue.path, "invalid", issue.message));
        }
        if proxies.iter().any(|p| p.name == settings.name) {
            issues.push(Issue::new(
                format!("{path}.name"),
                "duplicate",
                format!("`{}` names two [[proxy]] entries", settings.name),
            ));
        }
        proxies.push(settings);
    }
    proxies
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    #[test]
    fn a_proxy_entry_is_read_with_its_tools_and_defaults() {
        let config = Config::parse(
            "[[proxy]]\nname = \"files\"\ncommand = [\"npx\", \"server\"]\ntrusted = true\n\
             [proxy.tools.write_file]\nidempotent = false\ntimeout_s = 5\n",
            Path::new("."),
        )
        .unwrap();
        let proxy = &config.proxy[0];
        assert_eq!(proxy.name, "files");
        assert!(proxy.trusted);
        assert_eq!(
            proxy.timeout_s,
            backstop_mcp::proxy::settings::DEFAULT_TIMEOUT_S
        );
        assert_eq!(proxy.tools["write_file"].idempotent, Some(false));
    }

    #[test]
    fn a_bad_proxy_entry_is_refused_at_its_path() {
        let issues = Config::parse(
            "[[proxy]]\nname = \"files\"\ncommand = [\"npx\"]\n\
             [[proxy]]\nname = \"web\"\ncommand = [\"npx\"]\n[proxy.tools.w]\nidempotnt = true\n\
             [[proxy]]\nname = \"files\"\ncommand = []\n",
            Path::new("."),
        )
        .unwrap_err();
        let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "proxy[1].tools.w.idempotnt",
                "proxy[2].command",
                "proxy[2].name"
            ]
        );
        assert!(issues[0].message.contains("idempotnt"), "{issues:?}");
    }
}
