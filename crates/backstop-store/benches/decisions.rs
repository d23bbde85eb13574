//! Durable decisions per second on the `SQLite` ledger, in process and single-threaded, with
//! p50/p99 latency; and in the same run, raw rusqlite doing one small transaction per attempt
//! (an attempt row and a stored result) on the same settings, for the ratio.
//!
//! `cargo bench -p backstop-store --bench decisions [-- CASES]` (default 10,000 cases, two
//! attempts each: an undecided one, then a decided one).

use std::sync::Arc;
use std::time::{Duration, Instant};

use backstop_core::case::parse_request;
use backstop_core::pack::parse_pack;
use backstop_store::{Reply, SqliteStore, Store};
use jiff::Timestamp;

/// A three-question pack: two quote-judged questions and one value question.
const PACK: &str = r#"
job = "vendor-risk"
title = "Vendor review"
[identity]
mode = "id"
match = "domain"
[attempts]
escalate = "desk"
[unresolved]
next_step = "Send the DPA."
escalate = "desk"
[[questions]]
key = "data_access"
text = "Which customer data does the vendor handle?"
fix = "Quote the scope clause."
where_to_look = "The DPA."
answers = [
  { value = "none", means = "None.", indicators = ["no customer data", "does not process (any )?customer data"] },
  { value = "pii", means = "Personal data.", indicators = ["personal data", "\\bPII\\b"] },
]
[[questions]]
key = "subprocessors"
text = "Subprocessors?"
fix = "Quote the subprocessor clause."
where_to_look = "Annex B."
answers = [
  { value = "none", means = "None.", indicators = ["no sub-?processors"] },
  { value = "listed", means = "Listed.", indicators = ["sub-?processors (are|include)"] },
]
[[questions]]
key = "region"
text = "Where is data stored?"
judge = "value"
fix = "Send the storage region."
where_to_look = "The hosting section."
answers = [{ value = "eu", means = "EU." }, { value = "us", means = "US." }]
[[rules]]
when = { data_access = "none", subprocessors = "none", region = "eu" }
outcome = "approve"
[[rules]]
when = { data_access = ["none", "pii"] }
outcome = "reject"
[[outcomes]]
id = "approve"
kind = "decision"
next_step = "Approve."
[[outcomes]]
id = "reject"
kind = "decision"
next_step = "Reject."
[[escalations]]
id = "desk"
why = "Unsettled."
to = "Vendor desk"
next_step = "Open a ticket."
"#;

fn request(case: usize, attempt: usize) -> String {
    let first =
        r#"{"source": "dpa.pdf", "locator": "§4", "text": "I think there is no customer data."}"#;
    let decided = r#"{"source": "dpa.pdf", "locator": "§4.2", "text": "The vendor does not process any customer data."}"#;
    let data = if attempt == 0 { first } else { decided };
    format!(
        r#"{{"execution_id": "run-{case}-{attempt}", "case": {{"id": "Vendor-{case}.example.com"}},
            "questions": {{
              "data_access": {{"excerpts": [{data}]}},
              "subprocessors": {{"excerpts": [{{"source": "dpa.pdf", "locator": "annex B", "text": "We use no subprocessors."}}]}},
              "region": {{"value": "eu"}}
            }},
            "confidence": 0.9, "source_status": "completed"}}"#
    )
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("backstop-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[allow(clippy::cast_precision_loss, clippy::print_stdout)]
fn main() {
    let cases: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000);
    let pack = Arc::new(parse_pack(PACK).unwrap());
    let bodies: Vec<String> = (0..2)
        .flat_map(|attempt| (0..cases).map(move |case| request(case, attempt)))
        .collect();

    let dir = fresh_dir("ledger");
    let store = SqliteStore::open(dir.join("ledger.db")).unwrap();
    let now: Timestamp = "2026-11-30T00:00:00Z".parse().unwrap();
    let mut latencies = Vec::with_capacity(bodies.len());
    let mut decided = 0usize;
    let written_before = bytes_written();
    let started = Instant::now();
    for body in &bodies {
        let begin = Instant::now();
        let value: serde_json::Value = serde_json::from_str(body).unwrap();
        let request = parse_request(&pack, "bench", &value).unwrap();
        let reply = store
            .decide(Arc::clone(&pack), "bench", request, now)
            .unwrap();
        latencies.push(begin.elapsed());
        if let Reply::Counted(result) = reply {
            decided += usize::from(result.outcome.is_some());
        }
    }
    let elapsed = started.elapsed();
    let written = bytes_written().saturating_sub(written_before);
    assert_eq!(decided, cases, "every second attempt decides");
    latencies.sort_unstable();
    let rate = bodies.len() as f64 / elapsed.as_secs_f64();

    let raw_dir = fresh_dir("raw");
    let raw_rate = raw_rusqlite(&raw_dir.join("raw.db"), bodies.len());

    println!("durable decisions (SQLite, WAL, synchronous=NORMAL, one transaction each):");
    println!(
        "  {} decisions in {:.2}s: {:.0} decisions/s; p50 {:.1}µs, p99 {:.1}µs, max {:.1}µs",
        bodies.len(),
        elapsed.as_secs_f64(),
        rate,
        percentile(&latencies, 0.50).as_secs_f64() * 1e6,
        percentile(&latencies, 0.99).as_secs_f64() * 1e6,
        latencies.last().unwrap().as_secs_f64() * 1e6,
    );
    println!(
        "  bytes written by the process per decision (WAL and checkpoints): {:.0}",
        written as f64 / bodies.len() as f64
    );
    println!(
        "raw rusqlite, one transaction per attempt (two inserts), same settings: {raw_rate:.0}/s"
    );
    println!("ratio backstop/raw: {:.2}", rate / raw_rate);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&raw_dir);
}

/// Bytes this process has written with write calls (`wchar` of `/proc/self/io`), or 0 where
/// that file does not exist: a count that does not depend on how busy the machine is.
fn bytes_written() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines().find_map(|line| {
                line.strip_prefix("wchar: ")
                    .and_then(|n| n.trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

/// Attempts per second when each is one transaction inserting an attempt row and a stored
/// result, with nothing read and nothing judged.
#[allow(clippy::cast_precision_loss)]
fn raw_rusqlite(path: &std::path::Path, count: usize) -> f64 {
    let mut connection = rusqlite::Connection::open(path).unwrap();
    connection
        .pragma_update(None, "journal_mode", "WAL")
        .unwrap();
    connection
        .pragma_update(None, "synchronous", "NORMAL")
        .unwrap();
    connection
        .execute_batch(
            "CREATE TABLE attempts (id INTEGER PRIMARY KEY, case_id TEXT, execution_id TEXT,
                                    at INTEGER, closed TEXT);
             CREATE TABLE executions (execution_id TEXT PRIMARY KEY, result TEXT) WITHOUT ROWID;",
        )
        .unwrap();
    let result = "x".repeat(900);
    let started = Instant::now();
    for i in 0..count {
        let tx = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        let execution = format!("run-{i}");
        tx.prepare_cached(
            "INSERT INTO attempts (case_id, execution_id, at, closed) VALUES (?1, ?2, ?3, ?4)",
        )
        .unwrap()
        .execute(rusqlite::params![
            format!("vendor-{}", i / 2),
            execution,
            i64::try_from(i).unwrap(),
            "[\"data_access\"]"
        ])
        .unwrap();
        tx.prepare_cached("INSERT INTO executions (execution_id, result) VALUES (?1, ?2)")
            .unwrap()
            .execute(rusqlite::params![execution, result])
            .unwrap();
        tx.commit().unwrap();
    }
    count as f64 / started.elapsed().as_secs_f64()
}
