//! `backstop mcp`: JSON-RPC on stdin and stdout as an MCP client speaks it; bad flags refused
//! with their paths before anything is served.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::{TempDir, run_in, workspace_root};

/// Sends `message` as one line and, for a request, reads lines until its answer.
fn exchange(stdin: &mut impl Write, stdout: &mut impl BufRead, message: &Value) -> Option<Value> {
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
    let id = message.get("id")?;
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout closed");
        let answer: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout holds only JSON-RPC ({e}): {line}"));
        if answer.get("id") == Some(id) {
            return Some(answer);
        }
    }
}

#[test]
fn a_client_initializes_lists_and_calls_over_stdio() {
    let temp = TempDir::new("mcp-stdio");
    let dir = temp.path();
    let packs = workspace_root().join("packs");
    let mut child = Command::new(env!("CARGO_BIN_EXE_backstop"))
        .args(["mcp", "--db", "ledger.db", "--packs"])
        .arg(&packs)
        .current_dir(dir)
        .env_remove("BACKSTOP_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());

    let initialized = exchange(
        &mut stdin,
        &mut stdout,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "cli-suite", "version": "1"}}}),
    )
    .unwrap();
    assert_eq!(initialized["result"]["serverInfo"]["name"], "backstop");
    exchange(
        &mut stdin,
        &mut stdout,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let listed = exchange(
        &mut stdin,
        &mut stdout,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .unwrap();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"decide_vendor-risk"), "{names:?}");
    let called = exchange(
        &mut stdin,
        &mut stdout,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "next_step",
            "arguments": {"task": "t", "report": {"http_status": 403,
                          "message": "request blocked by content policy"}}}}),
    )
    .unwrap();
    let line = called["result"]["content"][0]["text"].as_str().unwrap();
    assert!(line.starts_with("stop: policy denial"), "{called}");

    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "exits 0 once the client closes stdin");
    // The attempt is on the local ledger.
    assert!(dir.join("ledger.db").exists());
}

#[test]
fn bad_flags_are_refused_with_their_paths_and_nothing_on_stdout() {
    let temp = TempDir::new("mcp-flags");
    let dir = temp.path();
    temp.write("empty-key", "\n");
    let refused = run_in(
        Some(dir),
        &["mcp", "--server", "ftp://x", "--key-file", "empty-key"],
        b"",
    );
    refused.expect_code(2);
    assert!(refused.stderr.contains("--server"), "{refused:#?}");
    assert!(
        refused.stderr.contains("--key-file empty-key"),
        "{refused:#?}"
    );
    assert_eq!(refused.stdout, "");

    temp.write("bad.toml", "job = 7\n");
    let refused = run_in(Some(dir), &["mcp", "--packs", "bad.toml"], b"");
    refused.expect_code(2);
    assert!(refused.stderr.contains("bad.toml"), "{refused:#?}");
    assert_eq!(refused.stdout, "");
    assert!(!dir.join("backstop.db").exists(), "no ledger is made");

    let refused = run_in(Some(dir), &["mcp", "--key-file", "k"], b"");
    refused.expect_code(2);
    assert!(refused.stderr.contains("--server"), "{refused:#?}");
}
