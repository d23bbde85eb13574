//! `backstop proxy`: an upstream MCP server behind backstop, spoken to as an MCP client speaks
//! JSON-RPC on stdin and stdout. The upstream here is `backstop mcp` itself (the suite in
//! tests/proxy runs the Python SDK's client against a test server and two npm servers).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use crate::support::{TempDir, run_in, workspace_root};

/// A proxy process and its pipes.
struct Proxy {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Proxy {
    fn start(dir: &std::path::Path, args: &[&str]) -> Proxy {
        let mut child = Command::new(env!("CARGO_BIN_EXE_backstop"))
            .arg("proxy")
            .args(args)
            .current_dir(dir)
            .env_remove("BACKSTOP_DB")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut proxy = Proxy {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        let initialized = proxy.request(
            "initialize",
            &json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "cli-suite", "version": "1"}}),
        );
        assert!(initialized.get("result").is_some(), "{initialized}");
        proxy.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        proxy
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and reads lines until its answer.
    fn request(&mut self, method: &str, params: &Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "stdout closed"
            );
            let answer: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout holds only JSON-RPC ({e}): {line}"));
            if answer.get("id") == Some(&json!(id)) {
                return answer;
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: &Value) -> Value {
        let answer = self.request("tools/call", &json!({"name": tool, "arguments": arguments}));
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("a tools/call answers with a result: {answer}"))
    }

    fn close(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "exits 0 once the client closes stdin");
    }
}

#[test]
fn tools_pass_through_and_a_tools_failure_is_governed() {
    let temp = TempDir::new("proxy-mcp");
    let dir = temp.path();
    let packs = workspace_root().join("packs");
    let bin = env!("CARGO_BIN_EXE_backstop");
    let packs = packs.to_str().unwrap();
    let mut proxy = Proxy::start(
        dir,
        &[
            "--name",
            "inner",
            "--db",
            "proxy.db",
            "--session",
            "s-1",
            "--",
            bin,
            "mcp",
            "--db",
            "inner.db",
            "--packs",
            packs,
        ],
    );
    let listed = proxy.request("tools/list", &json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.contains(&"next_step"), "{names:?}");
    assert!(names.contains(&"decide_vendor-risk"), "{names:?}");

    // A success is the upstream's result unchanged.
    let classified = proxy.call(
        "classify",
        &json!({"http_status": 429, "message": "slow down"}),
    );
    assert_ne!(classified["isError"], json!(true), "{classified}");
    assert_eq!(classified["structuredContent"]["class"], "rate_limited");

    // The upstream refuses bad arguments as a tool error: governed, counted on the session,
    // with the upstream's words after backstop's line.
    let refused = proxy.call("next_step", &json!({"report": {"http_status": 500}}));
    assert_eq!(refused["isError"], json!(true), "{refused}");
    let line = refused["content"][0]["text"].as_str().unwrap();
    assert!(line.starts_with("backstop: "), "{line}");
    let step = &refused["structuredContent"];
    assert_eq!(step["task"], "s-1", "{step}");
    assert_eq!(step["tool"], "next_step", "{step}");
    assert_eq!(step["attempts"]["task_used"], 1, "{step}");
    assert_ne!(step["action"], "retry_same", "{step}");
    assert!(
        refused["content"][1]["text"]
            .as_str()
            .unwrap()
            .starts_with("The tool said: "),
        "{refused}"
    );
    proxy.close();

    // The session's failure is on the proxy's ledger.
    let shown = run_in(
        Some(dir),
        &["task", "show", "s-1", "--db", "proxy.db", "--json"],
        b"",
    );
    assert_eq!(shown.code, 0, "{shown:#?}");
    assert_eq!(shown.json()["task_used"], 1, "{}", shown.stdout);
}

#[test]
fn a_server_that_cannot_start_leaves_the_proxy_up_and_each_call_says_why() {
    let temp = TempDir::new("proxy-missing");
    let dir = temp.path();
    let mut proxy = Proxy::start(
        dir,
        &[
            "--name",
            "gone",
            "--db",
            "proxy.db",
            "--",
            "/nonexistent/mcp-server",
            "--flag",
        ],
    );
    for _ in 0..2 {
        let result = proxy.call("read", &json!({"path": "/a"}));
        assert_eq!(result["isError"], json!(true), "{result}");
        let text = result["content"][1]["text"].as_str().unwrap();
        assert!(
            text.contains("`/nonexistent/mcp-server --flag` could not be started"),
            "{result}"
        );
        // Never sent, so it cannot have taken effect: no reconcile.
        assert_ne!(
            result["structuredContent"]["action"], "reconcile",
            "{result}"
        );
    }
    let listed = proxy.request("tools/list", &json!({}));
    assert!(
        listed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("could not be started")),
        "{listed}"
    );
    proxy.close();
}

#[test]
fn bad_flags_and_settings_are_refused_with_their_paths_and_leave_nothing() {
    let temp = TempDir::new("proxy-flags");
    let dir = temp.path();
    let no_command = run_in(
        Some(dir),
        &["proxy", "--name", "files", "--db", "x.db"],
        b"",
    );
    assert_eq!(no_command.code, 2, "{no_command:#?}");
    assert!(
        no_command.stderr.contains("COMMAND"),
        "{}",
        no_command.stderr
    );
    assert!(
        no_command.stderr.contains("after `--`"),
        "{}",
        no_command.stderr
    );
    assert_eq!(
        no_command.stdout, "",
        "stdout is the MCP connection's alone"
    );

    let config = temp.write(
        "backstop.toml",
        "[[proxy]]\nname = \"files\"\ncommand = [\"npx\", \"server\"]\n\
         [proxy.tools.write_file]\ntimeout_s = 0\n",
    );
    let bad_config = run_in(
        Some(dir),
        &[
            "proxy",
            "--name",
            "files",
            "--db",
            "x.db",
            "--config",
            config.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(bad_config.code, 2, "{bad_config:#?}");
    assert!(
        bad_config
            .stderr
            .contains("proxy[0].tools.write_file.timeout_s"),
        "{}",
        bad_config.stderr
    );

    let bad_session = run_in(
        Some(dir),
        &[
            "proxy",
            "--name",
            "files",
            "--db",
            "x.db",
            "--session",
            &"t".repeat(1000),
            "--",
            "npx",
        ],
        b"",
    );
    assert_eq!(bad_session.code, 2, "{bad_session:#?}");
    assert!(
        bad_session.stderr.contains("--session"),
        "{}",
        bad_session.stderr
    );

    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "backstop.toml")
        .collect();
    assert!(left.is_empty(), "a refused proxy left {left:?}");
}

#[test]
fn the_proxys_own_router_never_rate_limits_it_against_itself() {
    let temp = TempDir::new("proxy-rate");
    let dir = temp.path();
    // A service's limit of 2 requests a second; each governed call asks backstop four times.
    let config = temp.write(
        "backstop.toml",
        "db = \"proxy.db\"\n[limits]\nrate_per_second = 2\nburst = 2\n",
    );
    let mut proxy = Proxy::start(
        dir,
        &[
            "--name",
            "gone",
            "--config",
            config.to_str().unwrap(),
            "--",
            "/nonexistent/server",
        ],
    );
    for used in 1..=4 {
        let result = proxy.call("read", &json!({"path": "/a"}));
        let step = &result["structuredContent"];
        assert_eq!(step["attempts"]["task_used"], used, "{result}");
    }
    // Counted to the end: the class's attempts spent, the call is handed to a person.
    let result = proxy.call("read", &json!({"path": "/a"}));
    assert_eq!(
        result["structuredContent"]["action"], "escalate",
        "{result}"
    );
    proxy.close();
}
