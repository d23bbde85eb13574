//! `backstop demo`: eight purchase orders, one batch call through the simulator, webhook
//! deliveries (some twice, one lost), the sweep, and the PO pack's decisions, end to end on a
//! temporary ledger; then the do-not-call contact's next order (suppressed) and a batch with
//! one contact off the allowlist (simulated whole).

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use backstop_core::effects::parse_dispatch;
use backstop_core::effects::simulator::{SimulatorSettings, plan};
use backstop_core::pack::parse_pack;
use backstop_server::catalog::Catalog;
use backstop_server::{AppState, Config};
use backstop_store::{DispatchFilter, Store};
use jiff::Timestamp;
use serde::Serialize;
use serde_json::{Value, json};

use super::{EXIT_ISSUES, EXIT_OK};
use crate::cli::DemoArgs;

const PACK: &str = include_str!("../../../../packs/po-acknowledgement.toml");
const CALLER: &str = "local";
/// The one contact the demo's pack may reach live: none of the eight orders' is, so their
/// batch goes to the simulator.
const LISTED: &str = "+15550109001";

/// One purchase order of the scenario: its number, what the supplier says, and what the PO
/// pack should make of it.
struct Order {
    po: &'static str,
    confidence: f64,
    result: Value,
}

fn orders(tomorrow: &str) -> Vec<Order> {
    let answer = |needs: &str, spoke: &str, received: &str, status: &str| json!({"needs_human": needs, "spoke_with": spoke, "received": received, "po_status": status});
    let mut delayed = answer("no", "intended_contact", "yes", "delayed");
    delayed["ship_date"] = json!(tomorrow);
    vec![
        Order {
            po: "PO-1001",
            confidence: 0.94,
            result: answer("no", "intended_contact", "yes", "on_time"),
        },
        Order {
            po: "PO-1002",
            confidence: 0.91,
            result: delayed,
        },
        Order {
            po: "PO-1003",
            confidence: 0.97,
            result: answer("do_not_call", "intended_contact", "unknown", "unknown"),
        },
        Order {
            po: "PO-1004",
            confidence: 0.9,
            result: answer("wants_human", "authorized_representative", "yes", "on_time"),
        },
        Order {
            po: "PO-1005",
            confidence: 0.88,
            result: answer("disputes_po", "intended_contact", "no", "blocked"),
        },
        Order {
            po: "PO-1006",
            confidence: 0.93,
            result: answer("no", "someone_else", "yes", "on_time"),
        },
        Order {
            po: "PO-1007",
            confidence: 0.52,
            result: answer("no", "intended_contact", "yes", "on_time"),
        },
        Order {
            po: "PO-1008",
            confidence: 0.9,
            result: Value::Null,
        },
    ]
}

/// The batch: one recipient per order, each with the simulator's answer for it.
fn batch(orders: &[Order]) -> Value {
    let recipients: Vec<Value> = orders
        .iter()
        .enumerate()
        .map(|(i, o)| {
            json!({
                "id": format!("supplier-{}", i + 1),
                "contact": format!("+1555010{:04}", i + 1),
                "case": {"fields": {"supplier": format!("Supplier {}", i + 1), "po_number": o.po}},
                "values": {"supplier": format!("Supplier {}", i + 1), "po_number": o.po},
                "simulate": {"status": "completed", "confidence": o.confidence, "result": o.result},
            })
        })
        .collect();
    json!({
        "content": {"task": "Say you are an AI assistant calling for Northwind Traders. Ask each supplier about their own order only: was it received, and will it ship on time? Never guess a date; never negotiate price or payment terms; never ask for passwords or card data. If they ask for a person, stop."},
        "values": {"company": "Northwind Traders"},
        "recipients": recipients,
    })
}

/// What the demo does after the eight orders, and what came of it.
#[derive(Debug, Serialize)]
struct Then {
    what: String,
    answers: Vec<String>,
    reason: String,
}

/// A one-recipient-per-order batch of `(po, contact)`, with the eight orders' content.
fn follow_up(orders: &[(&str, &str)]) -> Value {
    let mut body = batch(&[]);
    body["recipients"] = orders
        .iter()
        .enumerate()
        .map(|(i, (po, contact))| {
            json!({"id": format!("follow-up-{}", i + 1), "contact": contact,
                   "case": {"fields": {"supplier": "Supplier 3", "po_number": po}}})
        })
        .collect();
    body
}

/// A row of the table.
#[derive(Debug, Serialize)]
struct Row {
    po: String,
    outcome: String,
    escalation: String,
    dispatches: u32,
    duplicates_dropped: u32,
    reconciled: bool,
}

/// A seed under which the simulator loses exactly one of `keys` (not the last, whose result
/// is null anyway) and sends at least two twice: the scenario the demo shows.
fn seed_for(keys: &[String], base: SimulatorSettings) -> SimulatorSettings {
    (1..10_000)
        .map(|seed| SimulatorSettings { seed, ..base })
        .find(|s| {
            let plans: Vec<u32> = keys.iter().map(|k| plan(s, k).copies).collect();
            let lost = plans.iter().filter(|c| **c == 0).count();
            lost == 1 && plans.last() != Some(&0) && plans.iter().filter(|c| **c == 2).count() >= 2
        })
        .unwrap_or(base)
}

pub fn run(args: &DemoArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let dir = std::env::temp_dir().join(format!(
        "backstop-demo-{}-{}",
        std::process::id(),
        Timestamp::now().as_nanosecond()
    ));
    let done = scenario(&dir, err);
    let _ = std::fs::remove_dir_all(&dir);
    let (rows, then) = match done {
        Ok(done) => done,
        Err(e) => {
            writeln!(err, "backstop: the demo could not run: {e}")?;
            return Ok(EXIT_ISSUES);
        }
    };
    if args.output.mode() == crate::settings::OutputMode::Json {
        crate::output::json_line(out, &json!({"orders": rows, "then": then}))?;
    } else {
        table(out, &rows)?;
        for t in &then {
            writeln!(
                out,
                "then: {}: {} ({})",
                t.what,
                t.answers.join(", "),
                t.reason
            )?;
        }
    }
    Ok(EXIT_OK)
}

fn table(out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    writeln!(
        out,
        "{:<8}  {:<36}  {:<19}  {:>10}  {:>10}  {:>10}",
        "PO", "outcome", "escalation", "dispatches", "duplicates", "reconciled"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:<8}  {:<36}  {:<19}  {:>10}  {:>10}  {:>10}",
            r.po,
            r.outcome,
            r.escalation,
            r.dispatches,
            r.duplicates_dropped,
            if r.reconciled { "yes" } else { "no" }
        )?;
    }
    Ok(())
}

fn scenario(dir: &std::path::Path, err: &mut impl Write) -> io::Result<(Vec<Row>, Vec<Then>)> {
    let packs = dir.join("packs");
    std::fs::create_dir_all(&packs)?;
    let text = PACK
        .replace("quiet_hours = { start = \"20:00\", end = \"08:00\" }\n", "")
        .replace(
            "live = false",
            &format!("live = true\nallowlist = [\"{LISTED}\"]"),
        );
    std::fs::write(packs.join("po-acknowledgement.toml"), &text)?;
    let pack = parse_pack(&text).map_err(|e| io::Error::other(format!("{e:?}")))?;
    let tomorrow = (Timestamp::now() + jiff::SignedDuration::from_hours(24))
        .to_zoned_datetime(jiff::tz::TimeZone::UTC)
        .date()
        .to_string();
    let orders = orders(&tomorrow);
    let body = batch(&orders);
    let request = parse_dispatch(&pack, CALLER, &body, &|z| {
        jiff::tz::TimeZone::get(z).is_ok()
    })
    .map_err(|e| io::Error::other(format!("{e:?}")))?;
    let keys: Vec<String> = request.recipients.iter().map(|r| r.key.clone()).collect();
    let mut config = Config {
        listen: "127.0.0.1:0".parse().expect("an address"),
        db: backstop_store::Location::Sqlite(dir.join("ledger.db")),
        packs: vec![packs],
        ..Config::default()
    };
    config.effects.simulator = seed_for(
        &keys,
        SimulatorSettings {
            duplicate_share: 0.35,
            lost_share: 0.15,
            min_delay_ms: 20,
            max_delay_ms: 300,
            seed: 1,
        },
    );
    config.effects.sweep_interval = Duration::from_hours(1);
    // A live key, so the allowlist decides: the demo never reaches a real contact.
    config.effects.live_key = Some(backstop_server::effects::fresh_secret());
    let expected_sent: u64 = keys
        .iter()
        .map(|k| u64::from(plan(&config.effects.simulator, k).copies))
        .sum();
    let catalog = Catalog::load(&config).map_err(|e| io::Error::other(format!("{e:?}")))?;
    let store: Arc<dyn Store> = Arc::from(config.db.open().map_err(io::Error::other)?);
    writeln!(
        err,
        "backstop demo: eight purchase orders, one batch call through the simulator (ledger {})",
        dir.display()
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let state = {
            let store = Arc::clone(&store);
            tokio::task::spawn_blocking(move || {
                AppState::new(config, None, catalog, store, Timestamp::now())
            })
            .await
            .map_err(io::Error::other)?
            .map_err(io::Error::other)?
        };
        let state = Arc::new(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(backstop_server::serve(
            listener,
            Arc::clone(&state),
            async {
                let _ = stopped.await;
            },
        ));
        let url = format!("http://{address}/v1/jobs/po-acknowledgement/dispatches");
        let reply = post(&url, &body).await?;
        let simulated = reply["answers"].as_array().map_or(0, |a| {
            a.iter().filter(|x| x["answer"] == "simulated").count()
        });
        if simulated != orders.len() {
            return Err(io::Error::other(format!(
                "the dispatch was not simulated for every order: {reply}"
            )));
        }
        settle(&state, expected_sent).await?;
        // Past the pack's reconcile_after: the sweep asks the simulator for what never came.
        let later = Timestamp::now() + jiff::SignedDuration::from_mins(16);
        backstop_server::effects::sweep_once(&state, later)
            .await
            .map_err(io::Error::other)?;
        let rows = rows(&state, &orders, &request).await?;
        let then = then(&url).await?;
        let _ = stop.send(());
        let _ = serving.await;
        Ok((rows, then))
    })
}

/// Posts a dispatch request to the demo's service: its answer.
async fn post(url: &str, body: &Value) -> io::Result<Value> {
    let (url, sent) = (url.to_owned(), body.to_string());
    tokio::task::spawn_blocking(move || {
        ureq::post(&url)
            .header("content-type", "application/json")
            .send(&sent)?
            .body_mut()
            .read_json::<Value>()
    })
    .await
    .map_err(io::Error::other)?
    .map_err(io::Error::other)
}

/// After the eight orders: PO-1003's contact asked not to be called, so its next order is
/// suppressed; a batch with one contact off the allowlist goes to the simulator whole.
async fn then(url: &str) -> io::Result<Vec<Then>> {
    let mut done = Vec::new();
    for (what, orders) in [
        (
            "PO-1013, to the contact of PO-1003 (who asked not to be called)",
            vec![("PO-1013", "+15550100003")],
        ),
        (
            "PO-1021 (its contact allowlisted) and PO-1022 (not) in one batch",
            vec![("PO-1021", LISTED), ("PO-1022", "+15550109002")],
        ),
    ] {
        let reply = post(url, &follow_up(&orders)).await?;
        let answers: Vec<Value> = reply["answers"].as_array().cloned().unwrap_or_default();
        done.push(Then {
            what: what.to_owned(),
            answers: answers
                .iter()
                .map(|a| a["answer"].as_str().unwrap_or("?").to_owned())
                .collect(),
            reason: answers
                .first()
                .and_then(|a| a["reason"].as_str())
                .unwrap_or_default()
                .to_owned(),
        });
    }
    Ok(done)
}

/// Waits until the simulator has sent what it meant to and every delivery is decided.
async fn settle(state: &Arc<AppState>, expected_sent: u64) -> io::Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let sent = state.effects.stats.sent.load(Ordering::Relaxed);
        let store = Arc::clone(&state.store);
        let pending = tokio::task::spawn_blocking(move || store.deliveries(true, None, 10))
            .await
            .map_err(io::Error::other)?
            .map_err(io::Error::other)?;
        if sent >= expected_sent && pending.is_empty() {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(io::Error::other(
                "the simulator's deliveries did not settle in 30 s",
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn rows(
    state: &Arc<AppState>,
    orders: &[Order],
    request: &backstop_core::effects::DispatchRequest,
) -> io::Result<Vec<Row>> {
    let store = Arc::clone(&state.store);
    let recipients: Vec<(String, String)> = request
        .recipients
        .iter()
        .map(|r| (r.key.clone(), r.case_id.clone()))
        .collect();
    let found = tokio::task::spawn_blocking(move || {
        let dispatches = store.dispatches(&DispatchFilter::default())?;
        let mut out = Vec::new();
        for (key, case_id) in recipients {
            let dispatch = dispatches.iter().find(|d| d.key == key).cloned();
            let deliveries = store.deliveries(false, Some(&key), 100)?;
            let case = store.case(CALLER, "po-acknowledgement", &case_id)?;
            out.push((key, dispatch, deliveries, case));
        }
        Ok::<_, backstop_store::StoreError>(out)
    })
    .await
    .map_err(io::Error::other)?
    .map_err(io::Error::other)?;
    let mut rows = Vec::new();
    for (order, (key, dispatch, deliveries, case)) in orders.iter().zip(found) {
        let last = case
            .as_ref()
            .and_then(|c| c.attempts.iter().rev().find(|a| a.record.status.counts()));
        let review = case.as_ref().and_then(|c| c.reviews.first());
        let outcome = match (last, review) {
            (_, Some(review)) => format!("held: {}", review.lane),
            (Some(a), None) => a
                .record
                .outcome
                .clone()
                .unwrap_or_else(|| a.record.status.as_str().to_owned()),
            (None, None) => "no result".to_owned(),
        };
        rows.push(Row {
            po: order.po.to_owned(),
            outcome,
            escalation: review.map_or_else(|| "-".to_owned(), |r| r.escalation.clone()),
            dispatches: dispatch.as_ref().map_or(0, |d| d.sends),
            duplicates_dropped: state.effects.stats.dropped(&key),
            reconciled: deliveries
                .iter()
                .any(|d| d.source == backstop_server::effects::sweep::RECONCILE_SOURCE),
        });
    }
    Ok(rows)
}
