//! `/mcp`: MCP over streamable HTTP, behind the same keys; each tool call is an API request
//! made as the caller whose key carried it.

use serde_json::{Value, json};

use crate::support::{AGENT_A, AGENT_B, Server, start};

const VERSION: &str = "2025-06-18";

/// One JSON-RPC request to `/mcp`, with `key`; the HTTP status and the JSON-RPC answer.
fn rpc(server: &Server, key: Option<&str>, method: &str, params: &Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer = server.call_with(
        "POST",
        "/mcp",
        key,
        &[
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", VERSION),
        ],
        Some(&body.to_string()),
    );
    let json = serde_json::from_str(&answer.text).unwrap_or(Value::Null);
    (answer.status, json)
}

fn initialize(server: &Server, key: &str) -> Value {
    let (status, answer) = rpc(
        server,
        Some(key),
        "initialize",
        &json!({"protocolVersion": VERSION, "capabilities": {},
                "clientInfo": {"name": "http-suite", "version": "1"}}),
    );
    assert_eq!(status, 200, "{answer}");
    answer
}

fn call_tool(server: &Server, key: &str, name: &str, arguments: &Value) -> Value {
    let (status, answer) = rpc(
        server,
        Some(key),
        "tools/call",
        &json!({"name": name, "arguments": arguments}),
    );
    assert_eq!(status, 200, "{answer}");
    answer["result"].clone()
}

#[test]
fn initialize_and_list_the_tools_with_a_key() {
    let server = start();
    let answer = initialize(&server, AGENT_A);
    assert_eq!(answer["result"]["serverInfo"]["name"], "backstop");
    let (_, listed) = rpc(&server, Some(AGENT_A), "tools/list", &json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for expected in [
        "classify",
        "next_step",
        "report_outcome",
        "job_brief",
        "case_status",
        "decide_vendor-risk",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let decide = tools
        .iter()
        .find(|t| t["name"] == "decide_vendor-risk")
        .unwrap();
    assert_eq!(decide["inputSchema"]["type"], "object");
    assert!(decide["inputSchema"]["properties"]["execution_id"].is_object());
}

#[test]
fn without_a_known_key_nothing_is_answered() {
    let server = start();
    let (status, answer) = rpc(&server, None, "tools/list", &json!({}));
    assert_eq!(status, 401, "{answer}");
    assert_eq!(answer["error"]["code"], "unauthorized");
    let (status, _) = rpc(&server, Some("not-a-key"), "tools/list", &json!({}));
    assert_eq!(status, 401);
}

#[test]
fn a_tool_call_counts_against_the_callers_own_task() {
    let server = start();
    initialize(&server, AGENT_A);
    let result = call_tool(
        &server,
        AGENT_A,
        "next_step",
        &json!({"task": "mcp-task", "report": {"http_status": 503},
                "context": {"tool": "search"}}),
    );
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["class"], "transient");
    let line = result["content"][0]["text"].as_str().unwrap();
    assert!(line.starts_with("retry in "), "{line}");
    // The attempt is agent A's, as if it had called /v1/recover itself.
    let task = server.get("/v1/tasks/mcp-task", Some(AGENT_A)).json();
    assert_eq!(task["task_used"], 1, "{task}");
    let other = server.get("/v1/tasks/mcp-task", Some(AGENT_B)).json();
    assert_eq!(other["task_used"], 0, "{other}");
}

#[test]
fn a_refusal_is_a_tool_error_and_counts_nothing() {
    let server = start();
    initialize(&server, AGENT_A);
    let result = call_tool(
        &server,
        AGENT_A,
        "next_step",
        &json!({"task": "mcp-bad", "report": {"http_status": 503, "body": "x"}}),
    );
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["error"]["code"], "malformed");
    let line = result["content"][0]["text"].as_str().unwrap();
    assert!(line.starts_with("refused (400 malformed)"), "{line}");
    let task = server.get("/v1/tasks/mcp-bad", Some(AGENT_A)).json();
    assert_eq!(task["task_used"], 0, "{task}");
}
