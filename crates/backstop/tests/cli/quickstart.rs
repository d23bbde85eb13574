//! The documents' runnable blocks, run as written, and the documents' paths and links.
//!
//! `the_quickstart_runs_as_written` reads the `sh` block of README.md's `## Quickstart` when it
//! runs, and `the_live_walkthrough_runs_as_written` the one of docs/side-effects.md's live
//! path, so an edit of either is tested with no edit here. A block becomes one `bash` script
//! under these rules:
//!
//! - `cargo build -p backstop` is skipped: cargo already built the binary this test runs.
//! - `B=./target/debug/backstop` becomes `B=` the binary cargo built for this test; the block
//!   must set `B` exactly so, once.
//! - Any other `cargo` line is refused: the block runs the built binary as `$B`.
//! - A service (`$B serve`, `$B mcp`) never returns, for a reader pasting the block as for this
//!   test: its line must end with `&`. It is then started in the background and killed, with
//!   everything else the script started, when the script ends. A service line without `&` is
//!   refused.
//! - Every other line runs as written, in order, under `set -euo pipefail`: the first command
//!   that fails ends the run, and the test names its document's line and shows the output.
//!
//! The script runs in a fresh temporary folder holding copies of the repository's folders the
//! block names (`examples/`, `packs/`, `rules/`), with `TMPDIR` inside it, so the ledger, the
//! logs and the scratch files it writes never land in the repository. A run gets two minutes.

use std::fmt::Write as _;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{TempDir, workspace_root};

/// The line the Quickstart builds with; skipped here.
const BUILD_LINE: &str = "cargo build -p backstop";
/// The line that names the binary; replaced by the one cargo built for this test.
const BINARY_LINE: &str = "B=./target/debug/backstop";
/// Subcommands that run until stopped.
const SERVICES: [&str; 2] = ["serve", "mcp"];
/// The longest a whole run may take.
const TIME_LIMIT: Duration = Duration::from_mins(2);

/// The lines of the first `sh` block under the section `heading` of `document` (named `name`),
/// with the line number of the block's first line.
fn sh_block<'a>(document: &'a str, name: &str, heading: &str) -> (usize, Vec<&'a str>) {
    let lines: Vec<&str> = document.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_end() == heading)
        .unwrap_or_else(|| panic!("{name} has a `{heading}` section"));
    let open = (at + 1..lines.len())
        .find(|&i| lines[i].trim_end() == "```sh")
        .filter(|&i| !lines[at + 1..i].iter().any(|l| l.starts_with("## ")))
        .unwrap_or_else(|| panic!("{name}'s `{heading}` has a ```sh block"));
    let close = (open + 1..lines.len())
        .find(|&i| lines[i].trim_end() == "```")
        .unwrap_or_else(|| panic!("{name}'s ```sh block under `{heading}` is closed"));
    (open + 2, lines[open + 1..close].to_vec())
}

/// Whether a line runs a service: `$B serve`, `backstop mcp`, `-- serve`.
fn starts_service(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.windows(2).any(|pair| {
        let runs_backstop = pair[0] == "$B" || pair[0] == "--" || pair[0].ends_with("backstop");
        runs_backstop && SERVICES.contains(&pair[1])
    })
}

/// The script the block of document `name` becomes; `first_line` is the document's line of
/// the block's first line.
fn script(block: &[&str], first_line: usize, binary: &Path, name: &str) -> String {
    // The header is one line, so script line n + offset is the document's line n.
    let offset = first_line.saturating_sub(2);
    let mut out = format!(
        "set -euo pipefail; trap 'echo \"as written: {name} line $((LINENO + {offset})) \
         failed with exit status $?: $BASH_COMMAND\" >&2' ERR\n"
    );
    let mut binary_lines = 0;
    for (i, line) in block.iter().enumerate() {
        let at = first_line + i;
        let trimmed = line.trim();
        if trimmed == BUILD_LINE {
            out.push_str("# skipped: the test runs the binary cargo built for it\n");
        } else if trimmed == BINARY_LINE {
            binary_lines += 1;
            let quoted = binary.display().to_string().replace('\'', r"'\''");
            let _ = writeln!(out, "B='{quoted}'");
        } else if trimmed.starts_with("cargo ") {
            panic!(
                "{name} line {at}: `{trimmed}`: the block runs the binary it built as `$B`; \
                 another cargo command would build again"
            );
        } else {
            assert!(
                !starts_service(trimmed) || trimmed.ends_with('&'),
                "{name} line {at}: `{trimmed}` runs a service that never returns; end the \
                 line with `&` so the block goes on (the service is stopped when it ends)"
            );
            out.push_str(line);
            out.push('\n');
        }
    }
    assert_eq!(
        binary_lines, 1,
        "{name}'s block must set the binary with `{BINARY_LINE}`, once"
    );
    out
}

/// The repository's folders the script names as a path (`examples/...`, `packs/*.toml`).
fn named_folders(script: &str, root: &Path) -> Vec<String> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "._/-".contains(c);
    let mut names: Vec<String> = script
        .split(|c: char| !path_char(c))
        .filter(|token| token.contains('/'))
        .filter_map(|token| {
            let first = token.trim_start_matches("./").split('/').next()?;
            let skip = first.is_empty() || first.starts_with('.') || first == "target";
            (!skip && root.join(first).is_dir()).then(|| first.to_owned())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Copies a folder, file modes included (the example scripts are executable).
fn copy_folder(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("the copy's folder can be made");
    for entry in fs::read_dir(from).expect("the folder can be read") {
        let entry = entry.expect("the folder can be read");
        let kind = entry.file_type().expect("an entry has a type");
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_folder(&entry.path(), &target);
        } else if kind.is_file() {
            fs::copy(entry.path(), &target).expect("the file can be copied");
        }
    }
}

/// Kills what is left of the script's process group: services it started in the background.
fn kill_group(leader: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{leader}")])
        .stderr(Stdio::null())
        .status();
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs the `sh` block under `heading` of the repository's document `name` as written.
fn run_as_written(name: &str, heading: &str) {
    use std::os::unix::process::CommandExt as _;

    let root = workspace_root();
    let document =
        fs::read_to_string(root.join(name)).unwrap_or_else(|e| panic!("{name} can be read: {e}"));
    let (first_line, block) = sh_block(&document, name, heading);
    let script = script(
        &block,
        first_line,
        Path::new(env!("CARGO_BIN_EXE_backstop")),
        name,
    );

    let dir = TempDir::new("as-written");
    let copied = named_folders(&script, &root);
    for folder in &copied {
        copy_folder(&root.join(folder), &dir.path().join(folder));
    }
    let tmp = dir.path().join("tmp");
    fs::create_dir_all(&tmp).expect("the temp folder can be made");
    fs::write(dir.path().join("block.sh"), &script).expect("the script can be written");
    let log_path = dir.path().join("block.log");
    let log = fs::File::create(&log_path).expect("the log can be made");

    let mut child = Command::new("bash")
        .arg("block.sh")
        .current_dir(dir.path())
        .env_remove("BACKSTOP_LOG")
        .env_remove("BACKSTOP_DB")
        .env("TMPDIR", &tmp)
        .env("COLUMNS", "100")
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("the log can be shared"))
        .stderr(log)
        .process_group(0)
        .spawn()
        .expect("bash starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("bash can be waited for") {
            break Some(status);
        }
        if started.elapsed() > TIME_LIMIT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    kill_group(child.id());
    let _ = child.wait();
    let output = fs::read_to_string(&log_path).unwrap_or_default();
    match status {
        None => panic!(
            "{name}'s `{heading}` block ran past {TIME_LIMIT:?}; the end of its output:\n{}",
            tail(&output, 60)
        ),
        Some(status) => {
            let failed = output
                .lines()
                .rfind(|l| l.starts_with("as written: "))
                .unwrap_or("the block failed");
            assert!(
                status.success(),
                "{failed} ({status}); the end of its output:\n{}",
                tail(&output, 40)
            );
        }
    }
    // Run where a reader runs it (the repository), the block leaves nothing behind: whatever
    // it writes goes under the temporary folder.
    let mut left: Vec<String> = fs::read_dir(dir.path())
        .expect("the run's folder can be read")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| !["tmp", "block.sh", "block.log"].contains(&name.as_str()))
        .filter(|name| !copied.contains(name))
        .collect();
    left.sort();
    assert!(
        left.is_empty(),
        "{name}'s `{heading}` block left files where it ran (write them under `mktemp -d`): {left:?}"
    );
}

#[test]
fn the_quickstart_runs_as_written() {
    run_as_written("README.md", "## Quickstart");
}

/// The live path (a live pack and key, `permitted`, the outcome, a signed webhook, the
/// decision) at whatever hour this runs: the dispatch names its own time.
#[test]
fn the_live_walkthrough_runs_as_written() {
    run_as_written(
        "docs/side-effects.md",
        "## 6. The live path, end to end, at any hour",
    );
}

#[test]
fn the_quickstart_script_skips_the_build_and_runs_the_test_binary() {
    let block = [
        "cargo build -p backstop",
        "B=./target/debug/backstop",
        "$B classify --status 503",
        "$B serve --listen 127.0.0.1:0 &",
    ];
    let script = script(&block, 10, Path::new("/bin/backstop"), "README.md");
    let lines: Vec<&str> = script.lines().collect();
    assert!(lines[0].contains("$((LINENO + 8))"), "{script}");
    assert!(lines[1].starts_with("# skipped"), "{script}");
    assert_eq!(lines[2], "B='/bin/backstop'");
    assert_eq!(lines[3], "$B classify --status 503");
    assert_eq!(lines[4], "$B serve --listen 127.0.0.1:0 &");
}

#[test]
#[should_panic(expected = "runs a service that never returns")]
fn a_service_in_the_quickstart_must_run_in_the_background() {
    let block = ["B=./target/debug/backstop", "$B serve"];
    script(&block, 5, Path::new("/bin/backstop"), "README.md");
}

/// The documents people read: README.md and the other top-level documents, docs/*.md,
/// examples/README.md, bench/README.md and every README.md under clients/.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs = Vec::new();
    for folder in [root.to_path_buf(), root.join("docs")] {
        for entry in fs::read_dir(&folder).expect("the folder can be read") {
            let path = entry.expect("the folder can be read").path();
            if path.extension().is_some_and(|e| e == "md") {
                docs.push(path);
            }
        }
    }
    for readme in [
        root.join("examples/README.md"),
        root.join("bench/README.md"),
    ] {
        if readme.is_file() {
            docs.push(readme);
        }
    }
    readmes_under(&root.join("clients"), &mut docs);
    docs.sort();
    docs
}

/// Every README.md under `folder`, skipping hidden folders and installed dependencies.
fn readmes_under(folder: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let skipped =
            name.starts_with('.') || ["node_modules", "target", "venv"].contains(&name.as_str());
        if path.is_dir() && !skipped {
            readmes_under(&path, out);
        } else if name == "README.md" {
            out.push(path);
        }
    }
}

/// A document's path from the repository root, for messages.
fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Every `examples/...` path a text names, with its line number.
fn example_paths(text: &str) -> Vec<(usize, String)> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "._/-".contains(c);
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for (start, _) in line.match_indices("examples/") {
            if line[..start].chars().next_back().is_some_and(path_char) {
                continue; // part of another path: `crates/x/examples/...`
            }
            let rest = &line[start..];
            let end = rest.find(|c: char| !path_char(c)).unwrap_or(rest.len());
            found.push((i + 1, rest[..end].trim_end_matches('.').to_owned()));
        }
    }
    found
}

#[test]
fn every_examples_path_the_documents_name_exists_and_every_example_is_described() {
    let root = workspace_root();
    let mut missing = Vec::new();
    for doc in documents(&root) {
        let text = fs::read_to_string(&doc).expect("the document can be read");
        for (line, path) in example_paths(&text) {
            if !root.join(&path).exists() {
                missing.push(format!("{}:{line}: {path}", shown(&doc, &root)));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but missing:\n{}",
        missing.join("\n")
    );

    let examples = root.join("examples");
    let readme = fs::read_to_string(examples.join("README.md")).expect("examples/README.md");
    let mut files = Vec::new();
    list_files(&examples, &examples, &mut files);
    let undescribed: Vec<&String> = files
        .iter()
        .filter(|f| *f != "README.md" && !readme.contains(&format!("`{f}`")))
        .collect();
    assert!(
        undescribed.is_empty(),
        "examples/README.md does not describe: {undescribed:?}"
    );
}

/// Every file under `folder`, as a path relative to `base`.
fn list_files(folder: &Path, base: &Path, out: &mut Vec<String>) {
    for entry in fs::read_dir(folder)
        .expect("the folder can be read")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            list_files(&path, base, out);
        } else {
            let relative = path.strip_prefix(base).expect("under its base");
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// Where a relative link lands, resolved without touching the disk; `None` when it climbs
/// out of the repository.
fn resolve(doc: &Path, target: &str, root: &Path) -> Option<PathBuf> {
    let mut path = doc.parent()?.strip_prefix(root).ok()?.to_path_buf();
    for part in Path::new(target).components() {
        match part {
            Component::Normal(name) => path.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                if !path.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(root.join(path))
}

/// What a document says that points outside the repository: links that leave it or lead
/// nowhere, and names of material that is not part of it.
fn outside_references(text: &str, doc: &Path, root: &Path) -> Vec<String> {
    const NOT_HERE: [&str; 7] = [
        "../shared",
        "/work/",
        "/home/",
        "/Users/",
        "PACKS.md",
        "DESIGN.md",
        "STYLE.md",
    ];
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = i + 1;
        for name in NOT_HERE {
            if line.contains(name) {
                found.push(format!(
                    "line {at}: names `{name}`, which is not in this repository"
                ));
            }
        }
        for (start, _) in line.match_indices("](") {
            let rest = &line[start + 2..];
            let target = &rest[..rest.find(')').unwrap_or(rest.len())];
            let external = ["http://", "https://", "mailto:", "#"];
            if external.iter().any(|p| target.starts_with(p)) {
                continue;
            }
            let file = target.split('#').next().unwrap_or_default();
            match resolve(doc, file, root) {
                None => found.push(format!("line {at}: `{target}` leaves the repository")),
                Some(path) if !path.exists() => {
                    found.push(format!("line {at}: `{target}` leads nowhere"));
                }
                Some(_) => {}
            }
        }
        found.extend(
            seed_references(line)
                .into_iter()
                .map(|s| format!("line {at}: `{s}` names reference material")),
        );
    }
    found
}

/// Mentions of "seeds" as reference material: `seed 001`, `seed-003`, `the seeds`, `seeds/`.
/// The seed of a random number generator (`seed = 1`, "the jitter's seed", "the same seed")
/// is a different word and passes.
fn seed_references(line: &str) -> Vec<String> {
    let lower = line.to_lowercase();
    let mut found = Vec::new();
    for (start, _) in lower.match_indices("seed") {
        if lower[..start]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
        {
            continue; // inside another word
        }
        let rest = &lower[start + 4..];
        let plural = rest.starts_with('s') && !rest[1..].starts_with(char::is_alphanumeric);
        let numbered = {
            let after = rest.trim_start_matches(['s', ' ', '-', '_', '#']);
            after.len() >= 3 && after[..3].chars().all(|c| c.is_ascii_digit())
        };
        let random = ["random ", "rng ", "jitter "]
            .iter()
            .any(|w| lower[..start].ends_with(w));
        if numbered || (plural && !random) {
            let end = (start + 12).min(line.len());
            found.push(lower.get(start..end).unwrap_or(&lower[start..]).to_owned());
        }
    }
    found
}

#[test]
fn no_document_links_outside_the_repository_or_names_reference_seeds() {
    let root = workspace_root();
    let mut found = Vec::new();
    for doc in documents(&root) {
        let text = fs::read_to_string(&doc).expect("the document can be read");
        for problem in outside_references(&text, &doc, &root) {
            found.push(format!("{}: {problem}", shown(&doc, &root)));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn seed_references_tell_reference_material_from_a_random_seed() {
    for fine in [
        "seed = 1",
        "the jitter's seed are parameters",
        "the same seed gives the same losses",
        "a `SplitMix64` stream started from a seed the caller passes",
        "random seeds",
        "seeded",
    ] {
        assert!(seed_references(fine).is_empty(), "{fine}");
    }
    for refused in [
        "as in seed 001",
        "Seed-003 says",
        "the seeds",
        "see seeds/002",
    ] {
        assert!(!seed_references(refused).is_empty(), "{refused}");
    }
}

/// The `sh` block after the README's paragraph that starts with `lead`, as its lines.
fn block_after<'a>(readme: &'a str, lead: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = readme.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with(lead))
        .unwrap_or_else(|| panic!("README.md has a paragraph starting `{lead}`"));
    let open = (at..lines.len())
        .find(|&i| lines[i].trim_end() == "```sh")
        .unwrap_or_else(|| panic!("an ```sh block follows `{lead}`"));
    let close = (open + 1..lines.len())
        .find(|&i| lines[i].trim_end() == "```")
        .expect("the block is closed");
    lines[open + 1..close].to_vec()
}

/// README's run command, as written but for the port (any free one here, so a backstop already
/// on 7600 cannot fail the test), in a fresh folder holding a copy of `packs/`: it serves the
/// example packs, answers the README's `curl`, sends a browser at `/` to the page, and leaves
/// nothing behind but its ledger. Its test command is the one `.ci/run` runs.
#[test]
fn the_readme_run_and_test_commands_work_as_written() {
    let root = workspace_root();
    let readme = fs::read_to_string(root.join("README.md")).expect("README.md is readable");
    let run_block = block_after(&readme, "**Run it**");
    assert_eq!(run_block, ["cargo run -p backstop -- serve"]);
    let args: Vec<&str> = run_block[0]
        .split_once(" -- serve")
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let tests_block = block_after(&readme, "**Run the tests:**");
    assert_eq!(tests_block, ["cargo test --workspace"]);
    let ci = fs::read_to_string(root.join(".ci/run")).expect(".ci/run is readable");
    assert!(
        ci.lines().any(|line| line.trim() == tests_block[0]),
        ".ci/run runs the README's test command"
    );

    let dir = TempDir::new("readme-run");
    copy_folder(&root.join("packs"), &dir.path().join("packs"));
    let mut all = args.clone();
    all.extend(["--listen", "127.0.0.1:0"]);
    let mut server = crate::serve_cmd::Server::start(dir.path(), &all);
    let curl = readme
        .lines()
        .find(|l| l.contains("curl -s localhost:7600/v1/classify -d '"))
        .expect("the README's curl line");
    let body = curl
        .split("-d '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("the curl's body");
    let (status, answer) = crate::serve_cmd::post(
        &server,
        "/v1/classify",
        None,
        &serde_json::from_str(body).expect("the curl's body is JSON"),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["class"], "rate_limited", "{answer}");
    let jobs = crate::serve_cmd::ready_jobs(&server);
    assert!(jobs.contains(&"vendor-risk".to_owned()), "{jobs:?}");
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(0), "{stderr}");
    let left: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "packs" && !name.starts_with("backstop.db"))
        .collect();
    assert!(left.is_empty(), "the run left {left:?}");
    assert!(
        dir.path().join("backstop.db").is_file(),
        "its ledger is ./backstop.db"
    );
}
