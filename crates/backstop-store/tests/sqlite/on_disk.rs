//! What only the file shows: no excerpt text on disk, migrations on reopen, two stores on one
//! file.

use std::sync::Arc;

use backstop_store::{SqliteStore, Store};

use crate::conformance::support::{ask, at, attempts, shipped, vendor};
use crate::temp_dir;

/// Every byte of the database and its WAL.
fn bytes_on_disk(dir: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        all.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    all
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Invariant 7: "No excerpt text is stored: only question keys, source ids, locators and
/// hashes." A planted excerpt is searched for in the database file and its WAL.
#[test]
fn a_planted_excerpt_is_nowhere_in_the_database_files() {
    let dir = temp_dir();
    let planted = "The vendor does not process any customer data (planted-7c1e).";
    let related = "Northwind Traders, planted-related-9d2b";
    {
        let store = SqliteStore::open(dir.join("ledger.db")).unwrap();
        let pack = shipped("vendor-risk");
        let mut body = vendor("e1", "northwind.com", &[("dpa.pdf", "§4.2", planted)]);
        body["related"]["counterparty"]["excerpts"] =
            serde_json::json!([{"source": "crm", "locator": "acct-991", "text": related}]);
        let held = ask(&store, &pack, "a", &body, at(0));
        assert_eq!(held.result()["status"], "held");
        let mut issued = crate::conformance::support::company("e1", None, &[planted]);
        issued["execution_id"] = serde_json::json!("e2");
        ask(
            &store,
            &shipped("company-classification"),
            "a",
            &issued,
            at(1),
        );
        let on_disk = bytes_on_disk(&dir);
        assert!(
            contains(&on_disk, "dpa.pdf") && contains(&on_disk, "§4.2"),
            "sanity"
        );
        assert!(!contains(&on_disk, "planted-7c1e"));
        assert!(!contains(&on_disk, "planted-related-9d2b"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reopening runs no migration twice and keeps every record.
#[test]
fn reopening_keeps_the_ledger() {
    let dir = temp_dir();
    let path = dir.join("ledger.db");
    let pack = shipped("vendor-risk");
    {
        let store = SqliteStore::open(&path).unwrap();
        ask(&store, &pack, "a", &vendor("e1", "x.com", &[]), at(0));
    }
    let store = SqliteStore::open(&path).unwrap();
    let again = ask(
        &store,
        &pack,
        "a",
        &vendor("e2", "x.com", &[("a", "b", "c")]),
        at(1),
    );
    assert_eq!(attempts(again.result()).0, 2);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A database from a newer backstop is refused, not damaged.
#[test]
fn a_newer_schema_is_refused() {
    let dir = temp_dir();
    let path = dir.join("ledger.db");
    drop(SqliteStore::open(&path).unwrap());
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.pragma_update(None, "user_version", 99).unwrap();
    drop(raw);
    let error = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(error.contains("newer"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A path that cannot be a database says which path and why.
#[test]
fn an_unopenable_path_names_itself() {
    let dir = temp_dir();
    let path = dir.join("missing-folder").join("ledger.db");
    let error = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(error.contains("missing-folder"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two stores on one file (two processes, say) still count each attempt once and never pass
/// the limit: each attempt is one `BEGIN IMMEDIATE` transaction.
#[test]
fn two_stores_on_one_file_share_the_limit() {
    let dir = temp_dir();
    let path = dir.join("ledger.db");
    let stores: Vec<Arc<SqliteStore>> = (0..2)
        .map(|_| Arc::new(SqliteStore::open(&path).unwrap()))
        .collect();
    let pack = shipped("vendor-risk");
    std::thread::scope(|scope| {
        for (n, store) in stores.iter().enumerate() {
            let pack = &pack;
            scope.spawn(move || {
                for i in 0..20 {
                    let locator = format!("q{n}-{i}");
                    let body = vendor(
                        &format!("s{n}-{i}"),
                        "two.com",
                        &[("questionnaire.pdf", &locator, "Security matters.")],
                    );
                    ask(store.as_ref(), pack, "a", &body, at(i));
                }
            });
        }
    });
    let record = stores[0]
        .case("a", "vendor-risk", "two.com")
        .unwrap()
        .unwrap();
    assert_eq!(
        record.attempts.len(),
        4,
        "the limit of 3 and the one extra progress earns"
    );
    drop(stores);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The call journal across connections to one file (processes, say): one order, every event
/// seen once by every follower.
#[test]
fn stores_on_one_file_journaling_at_once_see_one_order() {
    let dir = temp_dir();
    let path = dir.join("ledger.db");
    let opened: Vec<SqliteStore> = (0..3).map(|_| SqliteStore::open(&path).unwrap()).collect();
    let stores: Vec<&dyn Store> = opened.iter().map(|s| s as &dyn Store).collect();
    crate::conformance::keeping::writers_on_one_ledger_see_one_journal_order(&stores);
    drop(opened);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Invariant 6 across processes: sixteen requests for the same content from four stores on
/// one file give exactly one permit.
#[test]
fn sixteen_dispatches_from_four_stores_on_one_file_permit_once() {
    use crate::conformance::dispatch::{call, dispatch, po_live};
    use backstop_store::AnswerKind;
    let dir = temp_dir();
    let path = dir.join("ledger.db");
    let stores: Vec<Arc<SqliteStore>> = (0..4)
        .map(|_| Arc::new(SqliteStore::open(&path).unwrap()))
        .collect();
    let pack = po_live();
    let body = call("PO-RACE", "r1", "+15550199");
    let answers: Vec<AnswerKind> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let (store, pack, body) = (&stores[i % 4], &pack, &body);
                scope.spawn(move || dispatch(store.as_ref(), pack, body, at(0)).answers[0].answer)
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    drop(stores);
    let _ = std::fs::remove_dir_all(&dir);
    let permits = answers
        .iter()
        .filter(|a| **a == AnswerKind::Permitted)
        .count();
    assert_eq!(permits, 1, "{answers:?}");
}
