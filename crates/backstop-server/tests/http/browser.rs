//! The operator's page in a real browser: headless Chromium driven through chromedriver
//! (`WebDriver`). Sign in, filter the queue, open an item, resolve it, see it leave the queue
//! and the case change in the ledger; a wrong CSRF token and a missing session are refused.
//! Screenshots of each page go to `target/ui-screenshots/`.
//!
//! Without `chromedriver` on the PATH the test says it is skipped; with
//! `BACKSTOP_TEST_BROWSER=1` (`.ci/run` sets it) a missing driver fails it instead.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

use crate::support::{AGENT_A, AGENT_B, OPERATOR, Server, start, vendor};

const PII: &str = "The processor handles personal data of customers.";

/// A chromedriver process, killed when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// chromedriver on a free port, or `None` (the test is skipped) when it is not installed
/// and `BACKSTOP_TEST_BROWSER` does not ask for it.
fn driver() -> Option<Driver> {
    let required = std::env::var_os("BACKSTOP_TEST_BROWSER").is_some();
    let port = free_port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) if !required => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!(
                    "browser test skipped: chromedriver could not start ({e}); install chromium and chromium-driver, or set BACKSTOP_TEST_BROWSER=1 to make this a failure"
                );
            }
            return None;
        }
        Err(e) => panic!("BACKSTOP_TEST_BROWSER is set but chromedriver could not start: {e}"),
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "chromedriver did not listen in 20 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    })
}

fn screenshots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn shot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.unwrap();
    std::fs::write(screenshots().join(format!("{name}.png")), png).unwrap();
}

/// The text of the first element `css` finds, waiting for the page to show it.
async fn text(browser: &Client, css: &str) -> String {
    find(browser, css).await.text().await.unwrap()
}

/// The first element `css` finds, waiting up to 30 s (a click's page may still be loading).
async fn find(browser: &Client, css: &str) -> fantoccini::elements::Element {
    browser
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
}

/// Waits up to 30 s for the element `css` finds to hold `needle` (a click's page may still
/// be on its way); its text.
async fn shows(browser: &Client, css: &str, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = match browser.find(Locator::Css(css)).await {
            Ok(element) => element.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if found.contains(needle) {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{css} never showed `{needle}`: {found}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Clicks the first element `css` finds.
async fn click(browser: &Client, css: &str) {
    find(browser, css).await.click().await.unwrap();
}

async fn path(browser: &Client) -> String {
    let url = browser.current_url().await.unwrap();
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

/// Waits up to 30 s for the browser to be at `expected` (a click's navigation may still run).
async fn arrive(browser: &Client, expected: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let at = path(browser).await;
        if at == expected {
            return;
        }
        if Instant::now() > deadline {
            let page = browser.source().await.unwrap_or_default();
            panic!("at {at}, not {expected}: {page}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn sign_in(browser: &Client, server: &Server, key: &str) {
    browser.goto(&server.url("/ui")).await.unwrap();
    assert_eq!(
        path(browser).await,
        "/ui/login",
        "no session: the sign-in page"
    );
    find(browser, "#key").await.send_keys(key).await.unwrap();
    browser
        .find(Locator::Css("#login button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Runs a ledger read on a thread of its own: the `PostgreSQL` client blocks, which it may not
/// do on the thread that drives the browser's runtime.
fn ledger<T: Send>(read: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| scope.spawn(read).join().unwrap())
}

async fn queue_rows(browser: &Client) -> usize {
    browser
        .find_all(Locator::Css("#queue tbody tr"))
        .await
        .unwrap()
        .len()
}

#[test]
#[cfg_attr(
    not(backstop_browser),
    ignore = "needs BACKSTOP_TEST_BROWSER=1 and chromium with chromium-driver"
)]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn an_operator_works_the_queue_in_a_browser() {
    let Some(driver) = driver() else {
        return;
    };
    let server = start();
    // Two held cases of two callers, and one that reached its attempt limit.
    for (key, execution, case) in [
        (AGENT_A, "b-1", "held-a.example"),
        (AGENT_B, "b-2", "held-b.example"),
    ] {
        let held = server.post(
            "/v1/jobs/vendor-risk/decisions",
            Some(key),
            &vendor(execution, case, PII),
        );
        assert_eq!(held.json()["status"], "held", "{}", held.text);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".to_owned(),
            json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                            "--disable-dev-shm-usage", "--window-size=1280,1000"]}),
        );
        let browser = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&driver.url)
            .await
            .expect("a Chromium session");

        // An agent's key is refused; the operator's signs in.
        sign_in(&browser, &server, AGENT_A).await;
        shows(&browser, "main", "agent's key").await;
        shot(&browser, "login").await;
        sign_in(&browser, &server, OPERATOR).await;
        arrive(&browser, "/ui").await;
        shows(&browser, "h1", "Queue: 2 open").await;
        assert_eq!(queue_rows(&browser).await, 2);
        shot(&browser, "queue").await;

        // Filter by caller: one item left.
        find(&browser, "#caller")
            .await
            .send_keys("agent-a")
            .await
            .unwrap();
        click(&browser, "form.filters button").await;
        shows(&browser, "#caller", "").await;
        let deadline = Instant::now() + Duration::from_secs(30);
        while !path(&browser).await.contains("caller=agent-a") {
            assert!(Instant::now() < deadline, "the filter was not applied");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        shows(&browser, "h1", "Queue: 1 open").await;
        assert_eq!(queue_rows(&browser).await, 1);
        assert!(text(&browser, "#queue").await.contains("held-a.example"));

        // Open the item: the escalation, the questions, the attempts.
        click(&browser, "#queue tbody a").await;
        shows(&browser, "h1", "Item #").await;
        let item_path = path(&browser).await;
        assert!(item_path.starts_with("/ui/items/"), "{item_path}");
        let id: i64 = item_path.rsplit('/').next().unwrap().parse().unwrap();
        let page = text(&browser, "main").await;
        assert!(page.contains("Privacy team"), "{page}");
        assert!(page.contains("data_access"), "{page}");
        assert!(
            !page.contains(PII),
            "excerpt text is never shown: it is not stored"
        );
        assert_eq!(
            browser
                .find_all(Locator::Css("#attempts tbody tr"))
                .await
                .unwrap()
                .len(),
            1
        );
        shot(&browser, "item").await;

        // A wrong CSRF token is refused, and nothing changes.
        browser
            .execute(
                "document.querySelector('#resolve input[name=csrf]').value = 'wrong';",
                vec![],
            )
            .await
            .unwrap();
        click(&browser, "#resolve input[value=approve]").await;
        click(&browser, "#resolve button").await;
        shows(&browser, "main", "CSRF token is wrong").await;
        let untouched = ledger(|| server.state.store.review(id).unwrap().unwrap());
        assert!(untouched.resolution.is_none());

        // Resolve it for real: it leaves the queue, and the ledger shows it.
        browser.goto(&server.url(&item_path)).await.unwrap();
        shows(&browser, "h1", "Item #").await;
        click(&browser, "#resolve input[value=approve]").await;
        find(&browser, "#note")
            .await
            .send_keys("DPA signed; approved by privacy.")
            .await
            .unwrap();
        click(&browser, "#resolve button").await;
        arrive(&browser, &format!("/ui?resolved={id}")).await;
        shows(&browser, "main", &format!("Item {id} is resolved")).await;
        assert_eq!(queue_rows(&browser).await, 1, "one item left");
        assert!(!text(&browser, "#queue").await.contains("held-a.example"));
        let item = ledger(|| server.state.store.review(id).unwrap().unwrap());
        let resolution = item.resolution.unwrap();
        assert_eq!(
            (resolution.decision.as_str(), resolution.by.as_str()),
            ("approve", "dana")
        );
        let case = ledger(|| {
            server
                .state
                .store
                .case("agent-a", "vendor-risk", "held-a.example")
                .unwrap()
                .unwrap()
        });
        assert_eq!(case.cycle, 1, "the resolution ended the case's cycle");

        // The fleet.
        browser.goto(&server.url("/ui/fleet")).await.unwrap();
        shows(&browser, "h1", "Fleet").await;
        assert!(text(&browser, "#decisions").await.contains("vendor-risk"));
        shot(&browser, "fleet").await;

        // Without a session: the pages send the browser to sign in, and a form is refused.
        browser.goto(&server.url("/ui")).await.unwrap();
        let other = find(&browser, "#queue tbody a")
            .await
            .attr("href")
            .await
            .unwrap()
            .unwrap();
        browser.goto(&server.url(&other)).await.unwrap();
        shows(&browser, "h1", "Item #").await;
        browser.delete_all_cookies().await.unwrap();
        click(&browser, "#resolve input[value=approve]").await;
        click(&browser, "#resolve button").await;
        shows(&browser, "main", "not signed in").await;
        browser.goto(&server.url("/ui/fleet")).await.unwrap();
        arrive(&browser, "/ui/login").await;
        let open = ledger(|| {
            server
                .state
                .store
                .reviews(&backstop_store::ReviewFilter::default())
                .unwrap()
        });
        assert_eq!(open.iter().filter(|i| i.resolution.is_none()).count(), 1);

        browser.close().await.unwrap();
    });
}
