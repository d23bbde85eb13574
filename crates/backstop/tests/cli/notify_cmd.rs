//! `notify list` on a ledger whose targets `serve` subscribed: an event recorded by
//! `backstop decide` (any process on the ledger) is enqueued for every target; pending,
//! delivered and failed rows listed as JSON and as a table; a missing ledger refused, never
//! created; `[[notify]]` config issues with their paths.

use backstop_core::notify::{NotifyKind, NotifyStatus};
use backstop_store::{NotifyOutcome, Subscription};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::support::{TempDir, arg, issues_of, pairs, run, workspace_root};

/// A vendor-risk request whose excerpt holds the case in `review_privacy`.
fn held(case: &str) -> Value {
    json!({
        "execution_id": format!("run-{case}"),
        "case": {"id": case},
        "questions": {"data_access": {"excerpts": [
            {"source": "dpa.pdf", "locator": "§4.3",
             "text": "The processor handles personal data of customers."}]}},
        "related": {"counterparty": {"id": "acct-991"}},
    })
}

#[test]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn notify_list_shows_pending_delivered_and_failed() {
    let dir = TempDir::new("notify-list");
    let db = dir.path().join("ledger.db");
    {
        // What `serve` does at start with its [[notify]] entries.
        let store = backstop_store::open(arg(&db)).unwrap();
        let subscriptions = [
            Subscription {
                target: "ops".to_owned(),
                kinds: vec![NotifyKind::ReviewOpened, NotifyKind::Escalation],
            },
            Subscription {
                target: "audit".to_owned(),
                kinds: vec![NotifyKind::Escalation],
            },
        ];
        store
            .subscribe_notifications(&subscriptions, Timestamp::now())
            .unwrap();
    }
    let pack = workspace_root().join("packs/vendor-risk.toml");
    let decided = run(
        &["decide", "--pack", arg(&pack), "--db", arg(&db)],
        held("acme.example").to_string().as_bytes(),
    );
    decided.expect_code(0);
    assert_eq!(decided.json()["status"], "held");
    {
        // A worker's tries: one delivered, one given up.
        let store = backstop_store::open(arg(&db)).unwrap();
        let now = Timestamp::now();
        let claimed = store
            .claim_notifications("ops", "w", now, SignedDuration::from_secs(60), 10)
            .unwrap();
        assert_eq!(claimed.len(), 2);
        let failed = NotifyOutcome::Failed {
            error: "HTTP 410".to_owned(),
        };
        for (row, outcome) in claimed.iter().zip([NotifyOutcome::Delivered, failed]) {
            assert!(
                store
                    .finish_notification(&row.id, "ops", "w", &outcome, now)
                    .unwrap()
            );
        }
    }

    let listed = run(&["notify", "list", "--db", arg(&db), "--json"], b"");
    listed.expect_code(0);
    let rows = listed.json()["notifications"].as_array().unwrap().clone();
    let mut seen: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["target"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        pairs(&[
            ("audit", "pending"),
            ("ops", "delivered"),
            ("ops", "failed")
        ])
    );
    for row in &rows {
        assert!(row["id"].as_str().unwrap().starts_with("ntf_"), "{row}");
        assert_eq!(row["payload"]["case_id"], "acme.example");
        assert!(
            !row.to_string().contains("personal data of customers"),
            "{row}"
        );
    }

    let failed = run(
        &[
            "notify",
            "list",
            "--db",
            arg(&db),
            "--status",
            "failed",
            "--json",
        ],
        b"",
    );
    failed.expect_code(0);
    let failed = failed.json()["notifications"].clone();
    assert_eq!(failed.as_array().unwrap().len(), 1);
    assert_eq!(failed[0]["last_error"], "HTTP 410");
    assert_eq!(failed[0]["attempts"], 1);
    let status = NotifyStatus::Failed.as_str();
    assert_eq!(failed[0]["status"], status);

    // Piped, it is JSON too; asked for, a table.
    let piped = run(&["notify", "list", "--db", arg(&db)], b"");
    piped.expect_code(0);
    assert_eq!(piped.json()["notifications"].as_array().unwrap().len(), 3);
    let table = run(
        &[
            "notify",
            "list",
            "--db",
            arg(&db),
            "--output-format",
            "human",
        ],
        b"",
    );
    table.expect_code(0);
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", table.stdout);
    assert!(lines[0].starts_with("ID"), "{}", table.stdout);
    assert!(lines[0].contains("TARGET") && lines[0].contains("LAST ERROR"));
    assert!(
        table.stdout.contains("vendor-risk/acme.example"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("HTTP 410"), "{}", table.stdout);
    let pending = run(
        &[
            "notify",
            "list",
            "--db",
            arg(&db),
            "--status",
            "pending",
            "--output-format",
            "human",
        ],
        b"",
    );
    assert!(pending.stdout.contains(" next "), "{}", pending.stdout);
}

#[test]
fn notify_list_refuses_a_missing_ledger_and_creates_none() {
    let dir = TempDir::new("notify-missing");
    let db = dir.path().join("nowhere.db");
    // The same refusal as every command that reads a ledger (`review_cmd`): exit 2, as for any
    // missing file, on stderr.
    for format in ["json", "human"] {
        let refused = run(
            &[
                "notify",
                "list",
                "--db",
                arg(&db),
                "--output-format",
                format,
            ],
            b"",
        );
        refused.expect_code(2);
        // Refused in the mode asked for: for a person on stderr, or the refusal JSON.
        let named = format!("{}: no ledger there", db.display());
        let shown = if format == "human" {
            assert_eq!(refused.stdout, "", "{refused:#?}");
            &refused.stderr
        } else {
            assert_eq!(refused.json()["error"]["issues"][0]["code"], "no_ledger");
            &refused.stdout
        };
        assert!(shown.contains(&named), "{refused:#?}");
    }
    assert!(!db.exists(), "a missing ledger is never created");
    let empty = TempDir::new("notify-empty");
    let fresh = empty.path().join("ledger.db");
    drop(backstop_store::open(arg(&fresh)).unwrap());
    let none = run(
        &[
            "notify",
            "list",
            "--db",
            arg(&fresh),
            "--output-format",
            "human",
        ],
        b"",
    );
    none.expect_code(0);
    assert_eq!(none.stdout, "no notifications\n");
}

#[test]
fn notify_config_issues_have_their_paths_and_refuse_the_start() {
    let dir = TempDir::new("notify-config");
    let config = dir.write(
        "backstop.toml",
        r#"
[[notify]]
url = "ftp://hooks.example.com/x"
secret = "short"
events = ["escalation", "escalated"]
format = "teams"
[[notify]]
url = "https://hooks.example.com/backstop"
secret = "0123456789abcdef"
events = []
"#,
    );
    let checked = run(&["config", "check", arg(&config), "--json"], b"");
    checked.expect_code(1);
    let mut found = issues_of(&checked.json()["issues"]);
    found.sort();
    assert_eq!(
        found,
        pairs(&[
            ("notify[0].events[1]", "unknown_event"),
            ("notify[0].format", "unknown_format"),
            ("notify[0].secret", "too_short"),
            ("notify[0].url", "bad_url"),
            ("notify[1].events", "empty"),
        ])
    );
    let served = run(
        &["serve", "--config", arg(&config), "--listen", "127.0.0.1:0"],
        b"",
    );
    served.expect_code(2);
    assert!(served.stderr.contains("notify[0].events[1]"), "{served:#?}");
    assert!(
        served
            .stderr
            .contains("events are escalation, review_opened, attempt_limit, dispatch_refused"),
        "{served:#?}"
    );
}

#[test]
fn notify_list_help_lists_its_exit_codes() {
    let help = run(&["notify", "list", "--help"], b"");
    help.expect_code(0);
    for text in [
        "--status",
        "--db",
        "--json",
        "Exit codes:",
        "1  the ledger could not be opened or read",
        "2  bad flags, or no ledger at --db (never created here)",
    ] {
        assert!(help.stdout.contains(text), "{text}: {}", help.stdout);
    }
}
