//! `backstop serve` as a real process: start-up from a config file, `/healthz` and `/readyz`,
//! SIGTERM with a request in flight, SIGHUP reloads (a new pack, then a broken one), API keys
//! and roles, refused flags and configs, `config check|hash-key`, JSON logs, and no
//! acknowledged attempt lost to a SIGKILL in the middle of a load.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Run, TempDir, arg, run, workspace_root};

/// The line `serve` writes to stderr once it listens; the address follows it.
const LISTENING: &str = "backstop: listening on http://";
/// How long a start may take (the rule set is compiled first, unoptimized in tests).
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a stop, a refusal or a reload may take.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) const VENDOR: &str = "vendor-risk.toml";
const COMPANY: &str = "company-classification.toml";
const PO: &str = "po-acknowledgement.toml";

/// A `backstop serve` process; killed if a test ends (or panics) without stopping it.
#[derive(Debug)]
pub(crate) struct Server {
    child: Child,
    /// The address it listens on, from its `listening` line.
    address: String,
    /// Everything it has written to stderr so far, drained by a thread of its own.
    stderr: Arc<Mutex<String>>,
    drain: Option<JoinHandle<()>>,
}

impl Server {
    /// Runs `backstop serve ARGS` in `dir` and waits for its `listening` line, then for
    /// `/healthz` to answer, as a supervisor's readiness check would (signals sent right after
    /// the line can come before the handlers exist: see
    /// [`signals_right_after_the_listening_line_are_handled`]).
    pub(crate) fn start(dir: &Path, args: &[&str]) -> Server {
        let server = Server::start_unchecked(dir, args);
        let agent = client();
        let deadline = Instant::now() + START_TIMEOUT;
        while !matches!(get_raw(&agent, &server.url("/healthz"), None), Ok((200, _))) {
            assert!(
                Instant::now() < deadline,
                "/healthz never answered; stderr:\n{}",
                server.stderr()
            );
            thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// Runs `backstop serve ARGS` in `dir` and waits for its `listening` line only.
    fn start_unchecked(dir: &Path, args: &[&str]) -> Server {
        let mut child = serve_command(dir, args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the backstop binary starts");
        let pipe = child.stderr.take().expect("stderr is piped");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (lines, received) = mpsc::channel::<String>();
        // Drained for the whole life of the process, so it never blocks on a full pipe; once
        // the start is seen nobody receives the lines, and the failed sends are ignored.
        let drain = {
            let stderr = Arc::clone(&stderr);
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    {
                        let mut all = stderr.lock().unwrap_or_else(PoisonError::into_inner);
                        all.push_str(&line);
                        all.push('\n');
                    }
                    let _ = lines.send(line);
                }
            })
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            match received.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(LISTENING) {
                        let address = rest.split(' ').next().unwrap_or_default().to_owned();
                        return Server {
                            child,
                            address,
                            stderr,
                            drain: Some(drain),
                        };
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = child.wait();
                    let _ = drain.join();
                    panic!(
                        "serve {args:?} stopped before listening ({status:?}); stderr:\n{}",
                        stderr.lock().unwrap_or_else(PoisonError::into_inner)
                    );
                }
                Err(RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "serve {args:?} did not listen within {START_TIMEOUT:?}; stderr:\n{}",
                        stderr.lock().unwrap_or_else(PoisonError::into_inner)
                    );
                }
            }
        }
    }

    /// `http://ADDRESS/PATH`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Everything written to stderr so far.
    pub(crate) fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sends `kill -NAME PID`.
    pub(crate) fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{name} failed: {status}");
    }

    /// Whether the process is still running.
    fn running(&mut self) -> bool {
        self.child
            .try_wait()
            .expect("the process can be polled")
            .is_none()
    }

    /// Waits for the process to end: its exit code (none when a signal ended it) and all of
    /// its stderr.
    fn wait(&mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("the process can be polled") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "serve did not stop within {SETTLE_TIMEOUT:?}; stderr:\n{}",
                    self.stderr()
                );
            }
            thread::sleep(Duration::from_millis(20));
        };
        if let Some(drain) = self.drain.take() {
            drain.join().expect("the stderr drain does not panic");
        }
        (status.code(), self.stderr())
    }

    /// SIGTERM, then [`Server::wait`].
    pub(crate) fn stop(&mut self) -> (Option<i32>, String) {
        self.signal("TERM");
        self.wait()
    }

    /// Polls `check` on the stderr until it holds; panics after [`SETTLE_TIMEOUT`].
    #[track_caller]
    fn wait_for_stderr(&self, what: &str, check: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        while !check(&self.stderr()) {
            assert!(
                Instant::now() < deadline,
                "stderr never showed {what}; stderr:\n{}",
                self.stderr()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `backstop serve ARGS` in `dir`, with no settings from the caller's environment.
fn serve_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_backstop"));
    command
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .env_remove("BACKSTOP_LOG")
        .env_remove("BACKSTOP_DB")
        .env_remove("BACKSTOP_LISTEN")
        .stdin(Stdio::null());
    command
}

/// Runs `backstop serve ARGS` in `dir`, which must stop by itself (a refusal); a serve that
/// keeps running is killed and the test fails.
fn serve_refused(dir: &Path, args: &[&str]) -> Run {
    let mut child = serve_command(dir, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the backstop binary starts");
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    while child
        .try_wait()
        .expect("the process can be polled")
        .is_none()
    {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("the process ends");
            panic!(
                "serve {args:?} kept running; stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("the process ends");
    Run {
        code: output.status.code().expect("serve exits with a code"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// A temp dir with `packs/` holding copies of the named shipped packs and `backstop.toml`: a
/// loopback listen on any port, `ledger.db`, the `packs` folder and `extra`.
#[derive(Debug)]
pub(crate) struct Setup {
    pub(crate) dir: TempDir,
    config: PathBuf,
}

impl Setup {
    pub(crate) fn new(tag: &str, packs: &[&str], extra: &str) -> Setup {
        let dir = TempDir::new(tag);
        std::fs::create_dir(dir.path().join("packs")).expect("the packs folder can be created");
        let setup = Setup {
            config: dir.write(
                "backstop.toml",
                &format!(
                    "listen = \"127.0.0.1:0\"\ndb = \"ledger.db\"\npacks = [\"packs\"]\n{extra}\n"
                ),
            ),
            dir,
        };
        for pack in packs {
            setup.add_pack(pack);
        }
        setup
    }

    /// Copies the shipped pack `name` into `packs/`.
    fn add_pack(&self, name: &str) {
        std::fs::copy(
            workspace_root().join("packs").join(name),
            self.pack_path(name),
        )
        .expect("the shipped pack can be copied");
    }

    fn pack_path(&self, name: &str) -> PathBuf {
        self.dir.path().join("packs").join(name)
    }

    /// `serve --config backstop.toml ARGS`.
    pub(crate) fn start(&self, args: &[&str]) -> Server {
        let mut all = vec!["--config", arg(&self.config)];
        all.extend_from_slice(args);
        Server::start(self.dir.path(), &all)
    }
}

/// An HTTP client that hands back every status as a response.
pub(crate) fn client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

/// `GET url`, with `Authorization: Bearer KEY` when a key is given: the status and the body.
fn get_raw(
    agent: &ureq::Agent,
    url: &str,
    key: Option<&str>,
) -> Result<(u16, String), ureq::Error> {
    let mut request = agent.get(url);
    if let Some(key) = key {
        request = request.header("Authorization", format!("Bearer {key}"));
    }
    let mut response = request.call()?;
    let status = response.status().as_u16();
    Ok((status, response.body_mut().read_to_string()?))
}

/// `POST url` with a JSON body.
pub(crate) fn post_raw(
    agent: &ureq::Agent,
    url: &str,
    key: Option<&str>,
    body: &str,
) -> Result<(u16, String), ureq::Error> {
    let mut request = agent.post(url).header("Content-Type", "application/json");
    if let Some(key) = key {
        request = request.header("Authorization", format!("Bearer {key}"));
    }
    let mut response = request.send(body)?;
    let status = response.status().as_u16();
    Ok((status, response.body_mut().read_to_string()?))
}

/// A response that must come, with a JSON body.
#[track_caller]
fn json_reply(what: &str, reply: Result<(u16, String), ureq::Error>) -> (u16, Value) {
    let (status, body) = reply.unwrap_or_else(|e| panic!("{what}: no response: {e}"));
    let value = serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("{what}: {status} with a body that is not JSON ({e}): {body}"));
    (status, value)
}

#[track_caller]
pub(crate) fn get(server: &Server, path: &str, key: Option<&str>) -> (u16, Value) {
    json_reply(
        &format!("GET {path}"),
        get_raw(&client(), &server.url(path), key),
    )
}

#[track_caller]
pub(crate) fn post(server: &Server, path: &str, key: Option<&str>, body: &Value) -> (u16, Value) {
    json_reply(
        &format!("POST {path}"),
        post_raw(&client(), &server.url(path), key, &body.to_string()),
    )
}

/// The jobs `/readyz` lists.
#[track_caller]
pub(crate) fn ready_jobs(server: &Server) -> Vec<String> {
    let (status, ready) = get(server, "/readyz", None);
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["status"], "ready", "{ready}");
    ready["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("readyz without a jobs list: {ready}"))
        .iter()
        .map(|job| job.as_str().expect("a job is a string").to_owned())
        .collect()
}

/// A vendor-risk request whose quote answers nothing: a counted, undecided attempt.
fn undecided(execution_id: &str, case: &str) -> Value {
    vendor(execution_id, case, "Security first.")
}

/// A vendor-risk request quoting `text` for `data_access`.
pub(crate) fn vendor(execution_id: &str, case: &str, text: &str) -> Value {
    json!({
        "execution_id": execution_id,
        "case": {"id": case},
        "questions": {"data_access": {"excerpts": [
            {"source": "dpa.pdf", "locator": "§1", "text": text},
        ]}},
        "related": {"counterparty": {"id": "acct-1"}},
    })
}

/// A po-acknowledgement request that leaves the case undecided.
fn po_request(execution_id: &str) -> Value {
    json!({
        "execution_id": execution_id,
        "case": {"fields": {"supplier": "Acme Ltd", "po_number": "PO-1"}},
        "questions": {"needs_human": {"value": "no"}, "received": {"value": "maybe"}},
        "source_status": "completed",
        "confidence": 0.9,
    })
}

/// The execution ids of a shown case's attempts, oldest first.
fn execution_ids(case: &Value) -> Vec<String> {
    case["attempts"]
        .as_array()
        .unwrap_or_else(|| panic!("no attempts array: {case}"))
        .iter()
        .map(|a| {
            a["execution_id"]
                .as_str()
                .expect("a string execution_id")
                .to_owned()
        })
        .collect()
}

#[test]
fn serve_answers_health_and_readiness_and_finishes_a_request_in_flight_on_sigterm() {
    let setup = Setup::new("serve-up", &[VENDOR, COMPANY], "");
    let mut server = setup.start(&[]);
    let started = server.stderr();
    assert!(
        started.contains("jobs: company-classification, vendor-risk; open: no API keys"),
        "{started}"
    );
    assert!(
        setup.dir.path().join("ledger.db").exists(),
        "the ledger is next to the config"
    );
    assert_eq!(
        get(&server, "/healthz", None),
        (200, json!({"status": "ok"}))
    );
    assert_eq!(
        ready_jobs(&server),
        ["company-classification", "vendor-risk"]
    );

    // A request whose body is half sent when SIGTERM comes: the service waits for it, answers
    // it, and only then stops.
    let body = undecided("e-in-flight", "northwind.com").to_string();
    let (head, tail) = body.split_at(body.len() / 2);
    let mut stream = TcpStream::connect(&server.address).expect("the service accepts");
    stream
        .set_read_timeout(Some(SETTLE_TIMEOUT))
        .expect("a read timeout can be set");
    write!(
        stream,
        "POST /v1/jobs/vendor-risk/decisions HTTP/1.1\r\nHost: {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
        server.address,
        body.len()
    )
    .expect("the request head is sent");
    stream.flush().expect("the request head is sent");
    thread::sleep(Duration::from_millis(300));
    server.signal("TERM");
    server.wait_for_stderr("the stopping warning", |e| e.contains("stopping"));
    thread::sleep(Duration::from_millis(300));
    assert!(
        server.running(),
        "serve stopped with a request in flight; stderr:\n{}",
        server.stderr()
    );
    stream
        .write_all(tail.as_bytes())
        .expect("the rest of the body is sent");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("the request in flight is answered");
    assert!(response.starts_with("HTTP/1.1 200 "), "{response}");
    assert!(response.contains("\"status\":\"undecided\""), "{response}");

    let (code, stderr) = server.wait();
    assert_eq!(code, Some(0), "{stderr}");
    // A clean stop closes the ledger: every thread holding it is joined and the WAL is
    // truncated.
    let wal = setup.dir.path().join("ledger.db-wal");
    let left = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert_eq!(left, 0, "{left} bytes of WAL left after a clean stop");
}

#[test]
fn sighup_loads_a_new_pack_and_a_bad_reload_keeps_the_old_ones() {
    let setup = Setup::new("serve-reload", &[VENDOR], "");
    let mut server = setup.start(&[]);
    assert_eq!(ready_jobs(&server), ["vendor-risk"]);
    let (status, refused) = post(
        &server,
        "/v1/jobs/po-acknowledgement/decisions",
        None,
        &po_request("k1"),
    );
    assert_eq!(status, 404, "{refused}");
    assert_eq!(refused["error"]["code"], "unknown_job", "{refused}");

    setup.add_pack(PO);
    server.signal("HUP");
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    while ready_jobs(&server) != ["po-acknowledgement", "vendor-risk"] {
        assert!(
            Instant::now() < deadline,
            "the new pack was not loaded; stderr:\n{}",
            server.stderr()
        );
        thread::sleep(Duration::from_millis(50));
    }
    let (status, result) = post(
        &server,
        "/v1/jobs/po-acknowledgement/decisions",
        None,
        &po_request("k1"),
    );
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["status"], "undecided", "{result}");
    assert!(
        server
            .stderr()
            .contains("reloaded packs, rules and strategies"),
        "{}",
        server.stderr()
    );

    // A broken pack: the reload is refused, logged with the file, and both jobs still work.
    std::fs::write(setup.pack_path("broken.toml"), "job = \n").expect("the pack is written");
    server.signal("HUP");
    server.wait_for_stderr("the refused reload", |e| e.contains("reload refused"));
    let stderr = server.stderr();
    let refusal = stderr
        .lines()
        .find(|line| line.contains("reload refused"))
        .expect("the refusal line");
    assert!(refusal.contains("ERROR"), "{refusal}");
    assert!(stderr.contains("broken.toml"), "{stderr}");
    assert_eq!(ready_jobs(&server), ["po-acknowledgement", "vendor-risk"]);
    for (job, request) in [
        ("po-acknowledgement", po_request("k2")),
        ("vendor-risk", undecided("e1", "northwind.com")),
    ] {
        let (status, result) = post(
            &server,
            &format!("/v1/jobs/{job}/decisions"),
            None,
            &request,
        );
        assert_eq!(status, 200, "{job}: {result}");
    }

    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
}

/// `backstop config hash-key` of `key`, given as an argument or on stdin.
#[track_caller]
fn hash_key(key: &str, on_stdin: bool) -> String {
    let run = if on_stdin {
        run(&["config", "hash-key"], format!("{key}\n").as_bytes())
    } else {
        run(&["config", "hash-key", key], b"")
    };
    run.expect_code(0);
    let hash = run.stdout.trim_end().to_owned();
    assert!(
        hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        "{run:#?}"
    );
    hash
}

#[test]
fn api_keys_name_callers_and_only_an_operator_resolves_a_review() {
    const AGENT: &str = "agent-secret-1-0123456789abcdef0123456789";
    const OPERATOR: &str = "operator-secret-2-0123456789abcdef012345678";
    let agent_hash = hash_key(AGENT, false);
    let operator_hash = hash_key(OPERATOR, true);
    assert_ne!(agent_hash, operator_hash);
    let setup = Setup::new(
        "serve-keys",
        &[VENDOR],
        &format!(
            "[[keys]]\nhash = \"{agent_hash}\"\ncaller = \"agent-a\"\nrole = \"agent\"\n\
             [[keys]]\nhash = \"{operator_hash}\"\ncaller = \"ops\"\nrole = \"operator\"\n"
        ),
    );
    let mut server = setup.start(&[]);
    assert!(
        !server.stderr().contains("open: no API keys"),
        "{}",
        server.stderr()
    );
    assert_eq!(get(&server, "/healthz", None).0, 200, "no key is needed");

    let held = vendor(
        "e1",
        "acme.io",
        "The vendor processes personal data of our customers.",
    );
    let path = "/v1/jobs/vendor-risk/decisions";
    for key in [None, Some("not-a-known-key"), Some(agent_hash.as_str())] {
        let (status, refused) = post(&server, path, key, &held);
        assert_eq!(status, 401, "{key:?}: {refused}");
        assert_eq!(refused["error"]["code"], "unauthorized", "{refused}");
    }
    let (status, result) = post(&server, path, Some(AGENT), &held);
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["status"], "held", "{result}");

    let (status, case) = get(&server, "/v1/jobs/vendor-risk/cases/acme.io", Some(AGENT));
    assert_eq!(status, 200, "{case}");
    assert_eq!(case["caller"], "agent-a", "{case}");
    let (status, list) = get(&server, "/v1/reviews", Some(AGENT));
    assert_eq!(status, 200, "{list}");
    let id = list["reviews"][0]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("no review item: {list}"));
    let resolve = format!("/v1/reviews/{id}/resolve");
    let decision = json!({"decision": "approve", "note": "DPA checked"});

    let (status, refused) = post(&server, &resolve, None, &decision);
    assert_eq!(status, 401, "{refused}");
    let (status, refused) = post(&server, &resolve, Some(AGENT), &decision);
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    let (status, resolved) = post(&server, &resolve, Some(OPERATOR), &decision);
    assert_eq!(status, 200, "{resolved}");
    assert_eq!(resolved["resolution"]["by"], "ops", "{resolved}");
    assert_eq!(resolved["resolution"]["decision"], "approve", "{resolved}");

    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
}

/// A user who reaches for `--port` is shown the `--listen` to give, and nothing starts.
#[test]
fn a_port_flag_is_refused_with_the_listen_to_give() {
    let dir = TempDir::new("serve-port");
    let db = dir.path().join("ledger.db");
    let refused = serve_refused(dir.path(), &["--port", "7700", "--db", arg(&db)]);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("--listen 127.0.0.1:7700"),
        "{refused:#?}"
    );
    assert!(!db.exists(), "a refused serve creates no ledger");
}

#[test]
fn an_open_service_listens_on_loopback_only_and_keys_allow_any_address() {
    let dir = TempDir::new("serve-exposed");
    let db = dir.path().join("ledger.db");
    let refused = serve_refused(dir.path(), &["--listen", "0.0.0.0:0", "--db", arg(&db)]);
    refused.expect_code(2);
    assert!(refused.stderr.contains("loopback"), "{refused:#?}");
    assert!(
        refused
            .stderr
            .contains("--listen: no API keys are configured"),
        "{refused:#?}"
    );
    assert!(
        refused.stderr.contains("(open_and_exposed)"),
        "{refused:#?}"
    );
    assert!(!db.exists(), "a refused serve creates no ledger");

    // The same from the config's `listen`.
    let exposed = Setup::new("serve-exposed-config", &[VENDOR], "");
    let text = std::fs::read_to_string(&exposed.config).expect("the config is readable");
    std::fs::write(&exposed.config, text.replace("127.0.0.1:0", "0.0.0.0:0"))
        .expect("the config is written");
    let refused = serve_refused(exposed.dir.path(), &["--config", arg(&exposed.config)]);
    refused.expect_code(2);
    assert!(refused.stderr.contains("loopback"), "{refused:#?}");
    let checked = run(&["config", "check", arg(&exposed.config), "--json"], b"");
    checked.expect_code(1);
    assert_eq!(checked.json()["issues"][0]["code"], "open_and_exposed");

    // With a key the service is not open, and may listen anywhere.
    let with_key = Setup::new(
        "serve-exposed-keys",
        &[VENDOR],
        &format!(
            "[[keys]]\nhash = \"{}\"\ncaller = \"a\"\nrole = \"agent\"\n",
            hash_key("k-0123456789abcdef0123456789abcdef", false)
        ),
    );
    let mut server = with_key.start(&["--listen", "0.0.0.0:0"]);
    let port = server
        .address
        .rsplit(':')
        .next()
        .expect("an address with a port")
        .to_owned();
    assert!(server.address.starts_with("0.0.0.0:"), "{}", server.address);
    server.address = format!("127.0.0.1:{port}");
    assert_eq!(get(&server, "/healthz", None).0, 200);
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn bad_flags_configs_and_packs_are_refused_with_every_issue_and_exit_2() {
    let setup = Setup::new("serve-bad", &[VENDOR], "");
    let bad = setup.dir.write(
        "bad.toml",
        "colour = 1\nlisten = \"nowhere\"\npacks = [\"packs\"]\n[limits]\nburst = 0\n",
    );
    let origin = format!("--config {}", bad.display());
    let refused = serve_refused(
        setup.dir.path(),
        &["--config", arg(&bad), "--listen", "also-nowhere"],
    );
    refused.expect_code(2);
    assert_eq!(refused.stdout, "", "{refused:#?}");
    for (path, code) in [
        (format!("{origin}: colour"), "unknown_key"),
        (format!("{origin}: listen"), "bad_address"),
        (format!("{origin}: limits.burst"), "out_of_range"),
        ("--listen".to_owned(), "bad_address"),
    ] {
        assert!(
            refused
                .stderr
                .lines()
                .any(|line| line.trim_start().starts_with(&format!("{path}: "))
                    && line.ends_with(&format!("({code})"))),
            "no `{path}` ({code}) issue: {refused:#?}"
        );
    }

    // A broken pack and a missing rules file named by a good config.
    std::fs::write(setup.pack_path("broken.toml"), "job = \n").expect("the pack is written");
    let missing_rules = setup.dir.path().join("missing-rules.toml");
    let named = setup.dir.write(
        "named.toml",
        "listen = \"127.0.0.1:0\"\ndb = \"ledger.db\"\npacks = [\"packs\"]\n\
         rules = [\"missing-rules.toml\"]\n",
    );
    let refused = serve_refused(setup.dir.path(), &["--config", arg(&named)]);
    refused.expect_code(2);
    let broken = setup.pack_path("broken.toml").display().to_string();
    assert!(refused.stderr.contains(&broken), "{refused:#?}");
    assert!(
        refused
            .stderr
            .contains(&missing_rules.display().to_string()),
        "{refused:#?}"
    );
    assert!(
        !setup.dir.path().join("ledger.db").exists(),
        "a refused serve creates no ledger"
    );

    let unknown = serve_refused(
        setup.dir.path(),
        &["--config", arg(&setup.config), "--colour"],
    );
    unknown.expect_code(2);
    assert!(unknown.stderr.contains("--colour"), "{unknown:#?}");
}

#[test]
fn an_address_in_use_or_a_ledger_that_cannot_open_exits_1() {
    let setup = Setup::new("serve-exit-1", &[VENDOR], "");
    let taken = TcpListener::bind("127.0.0.1:0").expect("a port can be bound");
    let address = taken.local_addr().expect("a bound address").to_string();
    let refused = serve_refused(
        setup.dir.path(),
        &["--config", arg(&setup.config), "--listen", &address],
    );
    refused.expect_code(1);
    assert!(
        refused
            .stderr
            .contains(&format!("cannot listen on {address}")),
        "{refused:#?}"
    );

    let nowhere = setup.dir.path().join("no-such-folder/ledger.db");
    let refused = serve_refused(
        setup.dir.path(),
        &["--config", arg(&setup.config), "--db", arg(&nowhere)],
    );
    refused.expect_code(1);
    assert!(refused.stderr.contains("--db"), "{refused:#?}");
}

#[test]
fn config_check_exits_0_1_or_2_and_lists_every_issue_as_json() {
    let setup = Setup::new("config-check", &[VENDOR, PO], "[limits]\nburst = 10\n");
    let file = arg(&setup.config).to_owned();

    let ok = run(&["config", "check", "--output-format", "human", &file], b"");
    ok.expect_code(0);
    assert_eq!(ok.stdout, format!("{file}: ok\n"));
    let ok = run(&["config", "check", &file, "--json"], b"");
    ok.expect_code(0);
    assert_eq!(ok.json(), json!({"file": file, "ok": true, "issues": []}));

    // The config's own issues.
    let own = setup.dir.write(
        "own.toml",
        "colour = 1\nlisten = \"nowhere\"\n[[keys]]\nhash = \"plain\"\ncaller = \"a\"\nrole = \"agent\"\n",
    );
    let checked = run(&["config", "check", arg(&own), "--json"], b"");
    checked.expect_code(1);
    let report = checked.json();
    assert_eq!(report["file"], arg(&own));
    assert_eq!(report["ok"], false);
    let mut paths = crate::support::issues_of(&report["issues"]);
    paths.sort();
    assert_eq!(
        paths,
        crate::support::pairs(&[
            ("colour", "unknown_key"),
            ("keys[0].hash", "bad_hash"),
            ("listen", "bad_address"),
        ])
    );
    let human = run(
        &["config", "check", "--output-format", "human", arg(&own)],
        b"",
    );
    human.expect_code(1);
    assert!(
        human
            .stdout
            .starts_with(&format!("{}: 3 issues\n", arg(&own))),
        "{human:#?}"
    );

    // The issues of the files it names, each under the file's path.
    std::fs::write(setup.pack_path("broken.toml"), "job = \n").expect("the pack is written");
    let named = setup.dir.write(
        "named.toml",
        "packs = [\"packs\", \"missing-pack.toml\"]\nrules = [\"missing-rules.toml\"]\n",
    );
    let checked = run(&["config", "check", arg(&named), "--json"], b"");
    checked.expect_code(1);
    let report = checked.json();
    let mut paths = crate::support::issues_of(&report["issues"]);
    paths.sort();
    let under = |name: &str| setup.dir.path().join(name).display().to_string();
    let mut expected = vec![
        (under("packs/broken.toml"), "bad_toml".to_owned()),
        (under("missing-pack.toml"), "not_found".to_owned()),
        (under("missing-rules.toml"), "not_found".to_owned()),
    ];
    expected.sort();
    assert_eq!(paths, expected, "{report}");

    // A config with issues of its own still has the files it names checked.
    let both = setup
        .dir
        .write("both.toml", "colour = 1\npacks = [\"packs\"]\n");
    let checked = run(&["config", "check", arg(&both), "--json"], b"");
    checked.expect_code(1);
    let report = checked.json();
    let mut paths = crate::support::issues_of(&report["issues"]);
    paths.sort();
    let mut expected = vec![
        ("colour".to_owned(), "unknown_key".to_owned()),
        (under("packs/broken.toml"), "bad_toml".to_owned()),
    ];
    expected.sort();
    assert_eq!(paths, expected, "{report}");

    let missing = setup.dir.path().join("missing.toml");
    let checked = run(&["config", "check", arg(&missing), "--json"], b"");
    checked.expect_code(2);
    let report = checked.json();
    assert_eq!(report["ok"], false, "{report}");
    assert_eq!(report["issues"][0]["code"], "unreadable", "{report}");
    let mut keys: Vec<&String> = report.as_object().expect("an object").keys().collect();
    keys.sort();
    assert_eq!(keys, ["file", "issues", "ok"]);
    run(
        &["config", "check", "--output-format", "human", arg(&missing)],
        b"",
    )
    .expect_code(2);
}

#[test]
fn config_hash_key_prints_the_sha256_of_a_key_from_the_argument_or_stdin() {
    // The SHA-256 of 32 × "a".
    let key = "a".repeat(32);
    let sha = "3ba3f5f43b92602683c19aee62a20342b084dd5971ddd33808d81a328879a547";
    assert_eq!(hash_key(&key, false), sha);
    assert_eq!(
        hash_key(&key, true),
        sha,
        "the newline on stdin is not hashed"
    );
    let abc = sha;
    let short = run(&["config", "hash-key", "abc"], b"");
    short.expect_code(2);
    assert!(
        short.stderr.contains("at least 32 characters"),
        "{short:#?}"
    );
    for refused in [
        run(&["config", "hash-key", ""], b""),
        run(&["config", "hash-key", "   "], b""),
        run(&["config", "hash-key"], b"\n"),
    ] {
        refused.expect_code(2);
        assert!(
            !refused.stdout.contains(&abc[..8]) && refused.stdout.len() < 64,
            "{refused:#?}"
        );
    }
}

#[test]
fn config_new_key_prints_a_random_key_and_its_hash() {
    let made = run(&["config", "new-key"], b"");
    made.expect_code(0);
    let lines: Vec<&str> = made.stdout.lines().collect();
    let key = lines[0].strip_prefix("key  ").expect("a key line");
    let hash = lines[1].strip_prefix("hash ").expect("a hash line");
    assert_eq!(key.len(), 64, "256 bits in hex: {key}");
    assert_eq!(hash_key(key, false), hash, "the hash is the key's");
    let again = run(&["config", "new-key"], b"");
    assert_ne!(again.stdout, made.stdout, "each key is new");
}

#[test]
fn a_sigkill_in_the_middle_of_a_load_loses_no_acknowledged_attempt() {
    const CLIENTS: usize = 8;
    let setup = Setup::new(
        "serve-sigkill",
        &[VENDOR],
        "[limits]\nrate_per_second = 1000000\nburst = 1000000\n",
    );
    let mut server = setup.start(&[]);
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<JoinHandle<Vec<(String, String)>>> = (0..CLIENTS)
        .map(|thread| {
            let url = server.url("/v1/jobs/vendor-risk/decisions");
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                let agent = client();
                let mut acknowledged = Vec::new();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let case = format!("c{thread}-{i}.com");
                    let execution = format!("x{thread}-{i}");
                    i += 1;
                    let body = undecided(&execution, &case).to_string();
                    // An error (the connection dropped by the kill) or any other status is not
                    // an acknowledgement.
                    if let Ok((200, answer)) = post_raw(&agent, &url, None, &body)
                        && serde_json::from_str::<Value>(&answer)
                            .is_ok_and(|v| v["attempts"]["used"] == 1)
                    {
                        acknowledged.push((case, execution));
                    }
                }
                acknowledged
            })
        })
        .collect();
    thread::sleep(Duration::from_secs(1));
    server.signal("KILL");
    let (code, stderr) = server.wait();
    stop.store(true, Ordering::Relaxed);
    let acknowledged: Vec<(String, String)> = clients
        .into_iter()
        .flat_map(|c| c.join().expect("a client does not panic"))
        .collect();
    assert_eq!(code, None, "SIGKILL ended the service: {stderr}");
    assert!(
        !acknowledged.is_empty(),
        "no decision was acknowledged before the kill; stderr:\n{stderr}"
    );

    let server = setup.start(&[]);
    let agent = client();
    let mut lost = Vec::new();
    for (case, execution) in &acknowledged {
        let (status, shown) = json_reply(
            &format!("case {case}"),
            get_raw(
                &agent,
                &server.url(&format!("/v1/jobs/vendor-risk/cases/{case}")),
                None,
            ),
        );
        if status != 200 || execution_ids(&shown) != [execution.as_str()] {
            lost.push(format!("{case} {execution}: {status} {shown}"));
        }
    }
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged attempts lost after a SIGKILL, e.g. {:?}",
        lost.len(),
        acknowledged.len(),
        &lost[..lost.len().min(3)]
    );
    // A resend of an acknowledged request is the stored result: no second attempt.
    let (case, execution) = &acknowledged[acknowledged.len() / 2];
    let (status, again) = post(
        &server,
        "/v1/jobs/vendor-risk/decisions",
        None,
        &undecided(execution, case),
    );
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["attempts"]["used"], 1, "{again}");
}

#[test]
fn log_format_json_writes_every_log_line_as_a_json_object() {
    let setup = Setup::new("serve-json-logs", &[VENDOR], "");
    let mut server = setup.start(&["--log-level", "info", "--log-format", "json"]);
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
    let logs: Vec<Value> = stderr
        .lines()
        .filter(|line| !line.starts_with(LISTENING))
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("log line `{line}` is not JSON ({e}):\n{stderr}"))
        })
        .collect();
    assert!(!logs.is_empty(), "no log lines at info:\n{stderr}");
    for log in &logs {
        assert!(log.is_object(), "{log}");
        assert!(log["level"].is_string(), "{log}");
        assert!(log["fields"]["message"].is_string(), "{log}");
    }
    let messages: Vec<&str> = logs
        .iter()
        .filter_map(|log| log["fields"]["message"].as_str())
        .collect();
    assert!(messages.contains(&"listening"), "{messages:?}");
    assert!(messages.contains(&"stopped"), "{messages:?}");
}

#[test]
fn signals_right_after_the_listening_line_are_handled() {
    let setup = Setup::new("serve-early-signal", &[VENDOR], "");
    for round in 0..10 {
        for signal in ["TERM", "HUP"] {
            let mut server =
                Server::start_unchecked(setup.dir.path(), &["--config", arg(&setup.config)]);
            server.signal(signal);
            if signal == "HUP" {
                thread::sleep(Duration::from_millis(100));
                assert!(
                    server.running(),
                    "round {round}: SIGHUP right after `listening` stopped serve; stderr:\n{}",
                    server.stderr()
                );
                server.signal("TERM");
            }
            let (code, stderr) = server.wait();
            assert_eq!(
                code,
                Some(0),
                "round {round}: SIG{signal} right after `listening`; stderr:\n{stderr}"
            );
        }
    }
}

#[test]
fn a_bad_strategies_file_refuses_the_start_with_its_path() {
    let setup = Setup::new("serve-bad-strategies", &[VENDOR], "");
    let bad = setup.dir.write(
        "strategies.toml",
        "[limits]\ntask_max_attempts = 0\n[tools.search]\nfallbacks = [\"search\"]\n",
    );
    let refused = serve_refused(
        setup.dir.path(),
        &["--config", arg(&setup.config), "--strategies", arg(&bad)],
    );
    refused.expect_code(2);
    for code in ["out_of_range", "self_fallback"] {
        assert!(
            refused
                .stderr
                .lines()
                .any(|line| line.contains("strategies.toml") && line.contains(code)),
            "no {code} issue naming the file: {refused:#?}"
        );
    }
}

#[test]
fn hint_with_a_server_is_counted_by_the_service_under_the_key_given() {
    const AGENT: &str = "agent-secret-3-0123456789abcdef0123456789";
    let agent_hash = hash_key(AGENT, false);
    let setup = Setup::new(
        "serve-hint",
        &[],
        &format!("[[keys]]\nhash = \"{agent_hash}\"\ncaller = \"agent-h\"\nrole = \"agent\"\n"),
    );
    let key_file = setup.dir.write("key.txt", &format!("{AGENT}\n"));
    let wrong_key = setup.dir.write("wrong.txt", "not-the-key\n");
    let mut server = setup.start(&[]);
    let base = server.url("");
    let hint = |key: &std::path::Path| {
        run(
            &[
                "hint",
                "--server",
                &base,
                "--key-file",
                arg(key),
                "--task",
                "h1",
                "--status",
                "503",
                "--tool",
                "search",
            ],
            b"",
        )
    };
    for expected in 1..=2 {
        let step = hint(&key_file);
        step.expect_code(0);
        assert_eq!(
            step.json()["attempts"]["class_used"],
            expected,
            "{}",
            step.stdout
        );
    }
    // The service counted both: its task view says so.
    let (status, task) = get(&server, "/v1/tasks/h1", Some(AGENT));
    assert_eq!(status, 200, "{task}");
    assert_eq!(task["task_used"], 2, "{task}");
    // A key the service does not know: its refusal, exit 3, nothing counted.
    let refused = hint(&wrong_key);
    refused.expect_code(3);
    assert_eq!(
        refused.json()["error"]["code"],
        "unauthorized",
        "{}",
        refused.stdout
    );
    let step = hint(&key_file);
    assert_eq!(step.json()["attempts"]["class_used"], 3, "{}", step.stdout);
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
}

/// The same mistake gets the same refusal code, and the same issues, from `backstop decide`
/// and from `POST /v1/jobs/{job}/decisions`; the CLI's exit code is the one the table gives
/// the HTTP status.
#[test]
fn the_cli_and_http_refuse_the_same_mistake_with_the_same_code() {
    let setup = Setup::new("same-refusal", &[VENDOR], "");
    let mut server = setup.start(&[]);
    let url = server.url("/v1/jobs/vendor-risk/decisions");
    let pack = setup.pack_path(VENDOR);
    let db = setup.dir.path().join("cli.db");
    for body in [
        "{not json".to_owned(),
        "[1, 2]".to_owned(),
        json!({"execution_id": "e1", "colour": "red", "case": {"id": "acme.io"}}).to_string(),
    ] {
        let cli = run(
            &["decide", "--pack", arg(&pack), "--db", arg(&db)],
            body.as_bytes(),
        );
        let (status, http) = json_reply("decide", post_raw(&client(), &url, None, &body));
        let cli_refusal = cli.json();
        assert_eq!(
            cli_refusal["error"]["code"], http["error"]["code"],
            "{body}"
        );
        // The same issues at the same paths (each surface words its messages).
        assert_eq!(
            crate::support::issue_paths_and_codes(&cli_refusal),
            crate::support::issue_paths_and_codes(&http),
            "{body}"
        );
        let expected_exit = match status {
            400 | 413 | 415 | 422 => 2,
            500.. => 1,
            _ => 3,
        };
        assert_eq!(cli.code, expected_exit, "{body}: HTTP {status}");
    }
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
}
