//! `backstop task show|reset` on a ledger `serve` wrote: the same task the service sees, and a
//! reset the service applies.

use serde_json::{Value, json};

use crate::serve_cmd::{Setup, VENDOR, post};
use crate::support::{arg, run};

fn task(args: &[&str]) -> (i32, Value, String) {
    let ran = run(args, b"");
    let value = serde_json::from_str(&ran.stdout).unwrap_or(Value::Null);
    (ran.code, value, ran.stderr)
}

#[test]
fn task_show_and_reset_work_on_the_services_journal() {
    let setup = Setup::new("task-cmd", &[VENDOR], "");
    let ledger = setup.dir.path().join("ledger.db");
    let db = arg(&ledger);
    let mut server = setup.start(&[]);
    let failure =
        json!({"task": "build-7", "report": {"http_status": 503}, "context": {"tool": "ci"}});
    post(&server, "/v1/recover", None, &failure);
    post(&server, "/v1/recover", None, &failure);
    let denied = json!({"task": "build-8", "report": {"http_status": 403, "error_code": "content_policy_violation"}});
    post(&server, "/v1/recover", None, &denied);

    // While the service runs: the CLI reads the same journal.
    let (code, shown, stderr) = task(&["task", "show", "build-7", "--db", db]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(shown["task"], "build-7");
    assert_eq!(shown["caller"], "local");
    assert_eq!(
        shown["classes"],
        json!([{"class": "transient", "used": 2}]),
        "{shown}"
    );
    assert_eq!(shown["tools"][0]["tool"], "ci");

    // The CLI is the local operator: its reset lifts a policy stop, and the service applies it.
    let (code, reset, stderr) = task(&["task", "reset", "build-8", "--db", db]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(reset["stopped_by"], Value::Null, "{reset}");
    let (status, step) = post(
        &server,
        "/v1/recover",
        None,
        &json!({"task": "build-8", "report": {"http_status": 503}}),
    );
    assert_eq!(status, 200);
    assert_eq!(step["action"], "retry_same", "{step}");
    let (code, _) = server.stop();
    assert_eq!(code, Some(0));

    // Bad flags: every issue at once, exit 2, nothing written.
    let long = "x".repeat(300);
    let refused = run(
        &["task", "show", &long, "--caller", "a\u{7}b", "--db", db],
        b"",
    );
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stdout.contains("\"task\"") && refused.stdout.contains("--caller"),
        "{refused:?}"
    );
    let nowhere = setup.dir.path().join("no/such/dir/ledger.db");
    let failed = run(&["task", "show", "t", "--db", arg(&nowhere)], b"");
    // A missing ledger is a missing file: exit 2.
    assert_eq!(failed.code, 2, "{failed:?}");
    assert!(failed.stdout.contains("--db"), "{failed:?}");
}

#[test]
fn approaches_lists_what_the_services_tasks_spent() {
    let setup = Setup::new("approaches-cmd", &[], "");
    let ledger = setup.dir.path().join("ledger.db");
    let db = arg(&ledger);
    let mut server = setup.start(&[]);
    let failure = json!({"task": "build-9", "report": {"http_status": 503},
        "context": {"tool": "ci", "operation": "POST /builds"}});
    for _ in 0..10 {
        let (_, step) = post(&server, "/v1/recover", None, &failure);
        if step["action"] == "escalate" {
            break;
        }
    }
    let (code, listed, stderr) = task(&["approaches", "--db", db, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let approaches = listed["approaches"].as_array().unwrap();
    assert_eq!(approaches.len(), 1, "{listed}");
    assert_eq!(approaches[0]["caller"], "local");
    assert_eq!(approaches[0]["tool"], "ci");
    assert_eq!(approaches[0]["operation"], "POST /builds");
    let (_, none, _) = task(&["approaches", "--db", db, "--caller", "someone", "--json"]);
    assert_eq!(none["approaches"], json!([]), "{none}");
    let human = run(&["approaches", "--db", db, "--output-format", "human"], b"");
    human.expect_code(0);
    assert!(
        human
            .stdout
            .starts_with("local: ci POST /builds failed 5 times"),
        "{}",
        human.stdout
    );
    server.stop();
}
