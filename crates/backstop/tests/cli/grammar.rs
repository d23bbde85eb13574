//! The command-line grammar of docs/cli.md, held for every command: a refusal is the refusal
//! JSON on stdout when piped and readable on stderr for a person, with the exit code of the
//! one table, and nothing is left behind. The commands come from docs/cli.md's generated part,
//! which a unit test keeps equal to the binary's command tree, so a new command without an
//! entry here fails.

use std::path::Path;

use crate::support::{Run, TempDir, arg, run_in, workspace_root};

/// Commands with no refusal of their own to show, and why.
const EXEMPT: [(&str, &str); 14] = [
    (
        "backstop serve",
        "a server: its refusals are the HTTP suite's",
    ),
    ("backstop mcp", "a server: its refusals are the MCP suite's"),
    (
        "backstop proxy",
        "a server on stdio: its refusals are proxy_cmd's and tests/proxy's",
    ),
    (
        "backstop completions",
        "only the parser checks its one argument",
    ),
    ("backstop man", "only the parser checks its flags"),
    ("backstop rules show", "takes no input"),
    ("backstop strategies show", "takes no input"),
    ("backstop demo", "takes no input"),
    (
        "backstop loop",
        "the parser checks its flags; what it runs reports itself",
    ),
    ("backstop config new-key", "takes no input"),
    (
        "backstop hook",
        "speaks the agent's hook protocol: its answers and exit codes are the agent's (docs/hooks.md)",
    ),
    (
        "backstop config hash-key",
        "prints a hash for a shell variable",
    ),
    (
        "backstop config rotate-session-secret",
        "prints one line of confirmation",
    ),
    (
        "backstop config check",
        "a check: its findings are its result",
    ),
];

/// A check's findings are its result (`{"files": [...]}`), not a refusal.
const CHECKS: [&str; 3] = [
    "backstop rules check",
    "backstop strategies check",
    "backstop pack check",
];

/// Every command that runs, from docs/cli.md: a group that only holds subcommands is left out.
fn runnable_commands() -> Vec<String> {
    let doc = std::fs::read_to_string(workspace_root().join("docs/cli.md")).unwrap();
    let mut found = Vec::new();
    for section in doc.split("\n### `").skip(1) {
        let (path, rest) = section.split_once('`').unwrap();
        let usage = rest
            .lines()
            .find(|line| line.starts_with("Usage: "))
            .unwrap_or_else(|| panic!("{path}: no usage line"));
        if !usage.trim_end().ends_with("<COMMAND>") {
            found.push(path.to_owned());
        }
    }
    found
}

/// One refused run of each command, each bad input (exit 2, `malformed`): its path and its
/// arguments (`DB` a ledger that does not exist, `DIR` an empty folder).
#[rustfmt::skip]
const REFUSED_RUNS: [(&str, &[&str]); 25] = [
    ("backstop classify", &["classify", "--status", "999"]),
    ("backstop hint", &["hint", "--task", "t", "--status", "999"]),
    ("backstop replay", &["replay", "DIR/missing.jsonl"]),
    ("backstop loop calibrate", &["loop", "calibrate", "DIR/missing.jsonl"]),
    ("backstop simulate backoff", &["simulate", "backoff", "--clients", "0"]),
    ("backstop pack brief", &["pack", "brief", "no-such-job", "--packs", "DIR"]),
    ("backstop pack schema", &["pack", "schema", "no-such-job", "--packs", "DIR"]),
    ("backstop decide", &["decide", "--pack", "DIR/missing.toml", "--db", "DB"]),
    ("backstop cases show", &["cases", "show", "--job", "j", "--case", "c", "--db", "DB"]),
    ("backstop review list", &["review", "list", "--db", "DB"]),
    ("backstop review show", &["review", "show", "1", "--db", "DB"]),
    ("backstop review resolve", &["review", "resolve", "--id", "1", "--decision", "handoff", "--by", "x", "--db", "DB"]),
    ("backstop notify list", &["notify", "list", "--db", "DB"]),
    ("backstop task show", &["task", "show", "t", "--db", "DB"]),
    ("backstop task reset", &["task", "reset", "t", "--db", "DB"]),
    ("backstop calibrate calls", &["calibrate", "calls", "--db", "DB"]),
    ("backstop approaches", &["approaches", "--db", "DB"]),
    ("backstop suppress list", &["suppress", "list", "--db", "DB"]),
    ("backstop suppress lift", &["suppress", "lift", "--job", "j", "--contact", "c", "--by", "x", "--reason", " ", "--db", "DB"]),
    ("backstop purge", &["purge", "--older-than", "soon", "--db", "DB"]),
    ("backstop dispatch", &["dispatch", "--pack", "DIR/missing.toml", "--db", "DB"]),
    ("backstop dispatch outcome", &["dispatch", "outcome", "k", "--outcome", "sent", "--db", "DB"]),
    ("backstop dispatch show", &["dispatch", "show", "k", "--db", "DB"]),
    ("backstop key", &["key", "--pack", "DIR/missing.toml"]),
    ("backstop reconcile", &["reconcile", "--packs", "DIR", "--db", "DB"]),
];

/// Runs `args` in `dir` with `DB` and `DIR` filled in, and `extra` after them.
fn refused(dir: &Path, args: &[&str], extra: &[&str]) -> Run {
    let db = dir.join("none.db");
    let filled: Vec<String> = args
        .iter()
        .map(|a| a.replace("DB", arg(&db)).replace("DIR", arg(dir)))
        .chain(extra.iter().map(|&e| e.to_owned()))
        .collect();
    let borrowed: Vec<&str> = filled.iter().map(String::as_str).collect();
    run_in(Some(dir), &borrowed, b"{}")
}

#[test]
fn every_command_refuses_as_json_when_piped_and_for_a_person_on_a_terminal() {
    for path in runnable_commands() {
        let listed = REFUSED_RUNS.iter().any(|(p, _)| *p == path)
            || EXEMPT.iter().any(|(p, _)| *p == path)
            || CHECKS.contains(&path.as_str());
        assert!(listed, "{path}: no refused run here, and not exempt");
    }
    let (code, exit) = ("malformed", 2);
    for (path, args) in REFUSED_RUNS {
        let dir = TempDir::new("grammar");
        let piped = refused(dir.path(), args, &[]);
        assert_eq!(piped.code, exit, "{path}: {piped:#?}");
        let refusal = piped.json();
        assert_eq!(refusal["error"]["code"], code, "{path}: {refusal}");
        assert!(refusal["error"]["message"].is_string(), "{path}: {refusal}");
        assert!(
            refusal["error"]["issues"]
                .as_array()
                .is_some_and(|i| !i.is_empty()),
            "{path}: {refusal}"
        );
        assert_eq!(piped.stderr, "", "{path}: a pipe gets the JSON alone");

        // `pack schema` takes no --output-format: its result is JSON wherever it goes.
        if path != "backstop pack schema" {
            let person = refused(dir.path(), args, &["--output-format", "human"]);
            assert_eq!(person.code, exit, "{path}: {person:#?}");
            assert_eq!(
                person.stdout, "",
                "{path}: a person's refusal goes to stderr"
            );
            assert!(
                !person.stderr.trim_start().starts_with('{') && person.stderr.contains("refused"),
                "{path}: {}",
                person.stderr
            );
        }
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "{path}: a refused command left {left:?}");
    }
}
