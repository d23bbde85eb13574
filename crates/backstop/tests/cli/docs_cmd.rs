//! `backstop completions` and `backstop man`, made from the command tree.

use std::process::Command;

use crate::support::{TempDir, arg, run};

/// Every command the tree has, as `backstop <command> [<subcommand>]` names it, read from
/// `--help` (so this test follows the tree, not a list kept here).
fn commands() -> Vec<String> {
    let help = run(&["--help"], b"");
    help.expect_code(0);
    help.stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A description's second line is indented further.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_every_command_and_a_commands_flags() {
    let script = run(&["completions", "bash"], b"");
    script.expect_code(0);
    let dir = TempDir::new("completions");
    let file = dir.write("backstop.bash", &script.stdout);
    // Load the script as bash-completion would, and ask it to complete `backstop ` and
    // `backstop review resolve --`.
    let complete = |words: &str| -> String {
        let shell = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _backstop backstop \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            arg(&file)
        );
        let output = Command::new("bash").args(["-c", &shell]).output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let top = complete("backstop ''");
    let names = commands();
    assert!(names.len() > 20, "{names:?}");
    for name in &names {
        assert!(
            top.lines().any(|l| l == name),
            "`{name}` not completed: {top}"
        );
    }
    let flags = complete("backstop review resolve --");
    for flag in ["--decision", "--by", "--note", "--db"] {
        assert!(
            flags.lines().any(|l| l == flag),
            "`{flag}` not completed: {flags}"
        );
    }
    for shell in ["zsh", "fish"] {
        let script = run(&["completions", shell], b"");
        script.expect_code(0);
        assert!(script.stdout.contains("review"), "{shell}");
    }
    run(&["completions", "tcsh"], b"").expect_code(2);
}

#[test]
fn man_writes_a_page_for_backstop_and_each_command() {
    let page = run(&["man"], b"");
    page.expect_code(0);
    assert!(page.stdout.contains(".TH backstop 1"), "{}", page.stdout);
    let dir = TempDir::new("man");
    let folder = dir.path().join("man1");
    let written = run(&["man", "--out", arg(&folder)], b"");
    written.expect_code(0);
    for name in commands() {
        let file = folder.join(format!("backstop-{name}.1"));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(text.contains(&format!(".TH backstop-{name} 1")), "{text}");
    }
    let resolve = std::fs::read_to_string(folder.join("backstop-review-resolve.1")).unwrap();
    assert!(resolve.contains("decision"), "{resolve}");
    // A folder that cannot be made: exit 1, said on stderr.
    let blocked = dir.write("file", "");
    let refused = run(&["man", "--out", arg(&blocked.join("sub"))], b"");
    refused.expect_code(1);
    assert!(
        refused.stderr.contains("cannot write the man pages"),
        "{refused:?}"
    );
}
