//! Recovery strategies in the service: from the config, journaled so every server on the
//! ledger uses them, refused when bad (at start and on a reload, which keeps the old ones).

use serde_json::json;

use backstop_server::catalog::Catalog;

use crate::support::{AGENT_A, Server, start_beside, start_with};

/// A strategies file that lets a task spend two attempts in all.
fn two_attempts(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("two-attempts.toml");
    std::fs::write(&path, "[limits]\ntask_max_attempts = 2\n").unwrap();
    path
}

fn task_max(server: &Server, task: &str) -> u64 {
    let failure = json!({"task": task, "report": {"http_status": 503}});
    let step = server.post("/v1/recover", Some(AGENT_A), &failure).json();
    step["attempts"]["task_max"].as_u64().unwrap()
}

#[test]
fn the_configs_strategies_apply_and_the_last_server_to_start_sets_the_fleets() {
    let dir = std::env::temp_dir().join(format!("backstop-strategies-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = two_attempts(&dir);
    let a = start_with(|c| c.strategies = vec![file.clone()]);
    assert_eq!(task_max(&a, "t1"), 2);
    let failure = json!({"task": "t2", "report": {"http_status": 503}});
    a.post("/v1/recover", Some(AGENT_A), &failure);
    a.post("/v1/recover", Some(AGENT_A), &failure);
    let third = a.post("/v1/recover", Some(AGENT_A), &failure).json();
    assert_eq!(third["action"], "escalate", "{third}");

    // A second server with the same config: the same strategies.
    let b = start_beside(&a);
    assert_eq!(task_max(&b, "t3"), 2);
    // A server started with none announces the built-in ones, and the fleet follows.
    let mut plain = a.state.config.clone();
    plain.db = backstop_store::Location::Sqlite(a.ledger.clone());
    plain.strategies = Vec::new();
    let c = crate::support::start_config(plain, None, dir.join("c"));
    assert_eq!(task_max(&c, "t4"), 12);
    assert_eq!(task_max(&a, "t5"), 12, "A follows the journal");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_strategies_file_is_refused_with_its_path() {
    let dir = std::env::temp_dir().join(format!("backstop-bad-strategies-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[limits]\ntask_max_attempts = 0\nnonsense = 1\n").unwrap();
    let config = backstop_server::Config {
        strategies: vec![bad.clone(), dir.join("missing.toml")],
        ..backstop_server::Config::default()
    };
    let issues = Catalog::load(&config).unwrap_err();
    let listed: Vec<String> = issues.iter().map(ToString::to_string).collect();
    assert!(listed.iter().any(|i| i.contains("bad.toml")), "{listed:#?}");
    assert!(
        listed.iter().any(|i| i.contains("missing.toml")),
        "{listed:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reload_with_bad_strategies_keeps_the_old_ones() {
    let dir =
        std::env::temp_dir().join(format!("backstop-reload-strategies-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = two_attempts(&dir);
    let config_path = dir.join("backstop.toml");
    std::fs::write(
        &config_path,
        format!("strategies = [{:?}]\n", file.display().to_string()),
    )
    .unwrap();
    let mut config = backstop_server::Config::load(&config_path).unwrap();
    config.keys = vec![crate::support::key(
        AGENT_A,
        "agent-a",
        backstop_server::config::Role::Agent,
    )];
    config.db = backstop_store::Location::Sqlite(dir.join("ledger.db"));
    let server = crate::support::start_config(config, Some(config_path), dir.join("run"));
    assert_eq!(task_max(&server, "t1"), 2);
    std::fs::write(&file, "[limits]\ntask_max_attempts = -3\n").unwrap();
    assert!(server.state.reload().is_err());
    assert_eq!(task_max(&server, "t2"), 2, "the old strategies stay");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fallback_step_names_the_next_tool_of_the_configured_chain() {
    let dir = std::env::temp_dir().join(format!("backstop-chain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let chain = dir.join("chain.toml");
    std::fs::write(&chain, "[tools.search]\nfallbacks = [\"search-b\"]\n").unwrap();
    let server = start_with(|c| c.strategies = vec![chain.clone()]);
    let missing = |task: &str, tool: &str| json!({"task": task, "report": {"http_status": 501}, "context": {"tool": tool}});
    let step = server
        .post("/v1/recover", Some(AGENT_A), &missing("t1", "search"))
        .json();
    assert_eq!(
        (step["action"].as_str(), step["fallback_tool"].as_str()),
        (Some("fallback_tool"), Some("search-b")),
        "{step}"
    );
    let spent = server
        .post("/v1/recover", Some(AGENT_A), &missing("t2", "search-b"))
        .json();
    assert_eq!(spent["action"], "escalate", "{spent}");
    let _ = std::fs::remove_dir_all(&dir);
}
