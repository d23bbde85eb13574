//! Running the `backstop` binary as a user would, and temporary files for it to read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// The `--now` every `classify` run gets, so HTTP-date retry hints are deterministic.
pub const NOW: &str = "2026-01-01T00:00:00Z";

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// Everything written to stdout, as text.
    pub stdout: String,
    /// Everything written to stderr, as text.
    pub stderr: String,
}

impl Run {
    /// Stdout parsed as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {self:#?}"))
    }

    /// Stdout parsed as JSON Lines, one value per line.
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| {
                serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("line `{line}` is not JSON ({e}): {self:#?}"))
            })
            .collect()
    }

    /// A command line the parser refused: exit 2, clap's message for a person on stderr and,
    /// stdout being a pipe, the refusal JSON there with the one issue it names; that issue.
    #[track_caller]
    pub fn command_line_refused(&self) -> Value {
        self.expect_code(2);
        assert!(self.stderr.starts_with("error: "), "{self:#?}");
        let refusal = self.json();
        assert_eq!(refusal["error"]["code"], "malformed", "{refusal}");
        let issues = refusal["error"]["issues"].as_array().expect("issues");
        assert_eq!(issues.len(), 1, "{refusal}");
        issues[0].clone()
    }

    /// Panics with the whole run unless it exited with `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit code: {self:#?}");
        self
    }
}

/// Runs `backstop ARGS` in `dir` with `stdin` as its standard input.
///
/// The environment is pinned so output does not depend on the caller's: no log filter from
/// `BACKSTOP_LOG` and no ledger from `BACKSTOP_DB` (both show up in `--help`), and 100 columns
/// for clap's wrapping.
pub fn run_in(dir: Option<&Path>, args: &[&str], stdin: &[u8]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_backstop"));
    command
        .args(args)
        .env_remove("BACKSTOP_LOG")
        .env_remove("BACKSTOP_DB")
        .env("COLUMNS", "100")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let mut child = command.spawn().expect("the backstop binary starts");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.to_vec();
    // Written from a thread so a large input cannot deadlock against a full stdout pipe; a
    // write error only means the binary stopped reading (a refused flag), which the exit code
    // and stderr then show.
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().expect("the backstop binary runs");
    writer.join().expect("the stdin writer does not panic");
    Run {
        code: output.status.code().expect("backstop exits with a code"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs `backstop ARGS` with `stdin` as its standard input.
pub fn run(args: &[&str], stdin: &[u8]) -> Run {
    run_in(None, args, stdin)
}

/// Runs `backstop classify --now NOW ARGS` with empty stdin.
pub fn classify(args: &[&str]) -> Run {
    classify_stdin(args, b"")
}

/// Runs `backstop classify --now NOW ARGS` with `stdin` as its standard input.
pub fn classify_stdin(args: &[&str], stdin: &[u8]) -> Run {
    let mut all = vec!["classify", "--now", NOW];
    all.extend_from_slice(args);
    run(&all, stdin)
}

/// The workspace root, where `rules/default.toml` lives.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `(path, code)` of every issue in an `{"error": {"issues": [...]}}` refusal.
pub fn issue_paths_and_codes(refusal: &Value) -> Vec<(String, String)> {
    issues_of(&refusal["error"]["issues"])
}

/// `(path, code)` of every issue in a JSON array of issues.
pub fn issues_of(issues: &Value) -> Vec<(String, String)> {
    issues
        .as_array()
        .unwrap_or_else(|| panic!("issues is not an array: {issues}"))
        .iter()
        .map(|issue| {
            let text = |key: &str| {
                issue[key]
                    .as_str()
                    .unwrap_or_else(|| panic!("issue without a string `{key}`: {issue}"))
                    .to_owned()
            };
            assert!(
                issue["message"].as_str().is_some_and(|m| !m.is_empty()),
                "issue without a message: {issue}"
            );
            (text("path"), text("code"))
        })
        .collect()
}

/// Turns `&[("path", "code")]` into owned pairs, to compare with [`issues_of`].
pub fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(path, code)| ((*path).to_owned(), (*code).to_owned()))
        .collect()
}

/// A directory of its own under the system temp dir, removed when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// A new, empty directory whose name no other test (or test run) shares.
    pub fn new(tag: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "backstop-cli-test-{}-{n}-{tag}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("the temp dir can be created");
        TempDir { path }
    }

    /// Writes `name` in the directory and returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path.join(name);
        std::fs::write(&path, text).expect("the temp file can be written");
        path
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `assert` with an insta filter that shows this directory as `[TMP]`.
    pub fn snapshot(&self, assert: impl FnOnce()) {
        let mut settings = insta::Settings::clone_current();
        settings.add_filter(&regex_escape(&self.path.display().to_string()), "[TMP]");
        settings.bind(assert);
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// `text` as a regular expression that matches exactly it.
fn regex_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// A path as the `&str` the binary gets on its command line.
pub fn arg(path: &Path) -> &str {
    path.to_str().expect("temp paths are UTF-8")
}
