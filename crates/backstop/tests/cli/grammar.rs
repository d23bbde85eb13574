//! The command-line grammar of docs/cli.md, held for every command: a refusal is the refusal
//! JSON on stdout when piped and readable on stderr for a person, with the exit code of the
//! one table, and nothing is left behind. The commands come from docs/cli.md's generated part,
//! which a unit test keeps equal to the binary's command tree, so a new command without an
//! entry here fails.

use std::path::Path;

use crate::support::{Run, TempDir, arg, run_in, workspace_root};

/// Commands with no refusal of their own to show, and why.
const EXEMPT: [(&str, &str); 12] = [
    (
        "backstop serve",
        "a server: its refusals are the HTTP suite's",
    ),
    ("backstop mcp", "a server: its refusals are the MCP suite's"),
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

/// One refused run of each command: its path, its arguments (`DB` a ledger that does not
/// exist, `DIR` an empty folder) and the refusal code and exit code it must give.
fn refused_runs() -> Vec<(&'static str, Vec<&'static str>, &'static str, i32)> {
    let ledger = ["--db", "DB"];
    let with = |head: &[&'static str], tail: &[&'static str]| {
        head.iter().chain(tail).copied().collect::<Vec<_>>()
    };
    vec![
        (
            "backstop classify",
            vec!["classify", "--status", "999"],
            "malformed",
            2,
        ),
        (
            "backstop hint",
            vec!["hint", "--task", "t", "--status", "999"],
            "malformed",
            2,
        ),
        (
            "backstop replay",
            vec!["replay", "DIR/missing.jsonl"],
            "malformed",
            2,
        ),
        (
            "backstop loop calibrate",
            vec!["loop", "calibrate", "DIR/missing.jsonl"],
            "malformed",
            2,
        ),
        (
            "backstop simulate backoff",
            vec!["simulate", "backoff", "--clients", "0"],
            "malformed",
            2,
        ),
        (
            "backstop pack brief",
            vec!["pack", "brief", "no-such-job", "--packs", "DIR"],
            "malformed",
            2,
        ),
        (
            "backstop pack schema",
            vec!["pack", "schema", "no-such-job", "--packs", "DIR"],
            "malformed",
            2,
        ),
        (
            "backstop decide",
            with(&["decide", "--pack", "DIR/missing.toml"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop cases show",
            with(&["cases", "show", "--job", "j", "--case", "c"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop review list",
            with(&["review", "list"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop review show",
            with(&["review", "show", "1"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop review resolve",
            with(
                &[
                    "review",
                    "resolve",
                    "--id",
                    "1",
                    "--decision",
                    "handoff",
                    "--by",
                    "x",
                ],
                &ledger,
            ),
            "malformed",
            2,
        ),
        (
            "backstop notify list",
            with(&["notify", "list"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop task show",
            with(&["task", "show", "t"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop task reset",
            with(&["task", "reset", "t"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop suppress list",
            with(&["suppress", "list"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop suppress lift",
            with(
                &[
                    "suppress",
                    "lift",
                    "--job",
                    "j",
                    "--contact",
                    "c",
                    "--by",
                    "x",
                    "--reason",
                    " ",
                ],
                &ledger,
            ),
            "malformed",
            2,
        ),
        (
            "backstop purge",
            with(&["purge", "--older-than", "soon"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop dispatch",
            with(&["dispatch", "--pack", "DIR/missing.toml"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop dispatch outcome",
            with(&["dispatch", "outcome", "k", "--outcome", "sent"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop dispatch show",
            with(&["dispatch", "show", "k"], &ledger),
            "malformed",
            2,
        ),
        (
            "backstop key",
            vec!["key", "--pack", "DIR/missing.toml"],
            "malformed",
            2,
        ),
        (
            "backstop reconcile",
            with(&["reconcile", "--packs", "DIR"], &ledger),
            "malformed",
            2,
        ),
    ]
}

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
    let runs = refused_runs();
    for path in runnable_commands() {
        let listed = runs.iter().any(|(p, ..)| *p == path)
            || EXEMPT.iter().any(|(p, _)| *p == path)
            || CHECKS.contains(&path.as_str());
        assert!(listed, "{path}: no refused run here, and not exempt");
    }
    for (path, args, code, exit) in runs {
        let dir = TempDir::new("grammar");
        let piped = refused(dir.path(), &args, &[]);
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
            let person = refused(dir.path(), &args, &["--output-format", "human"]);
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
