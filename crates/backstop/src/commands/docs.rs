//! `backstop completions` and `backstop man`: shell completions and man pages, made from the
//! command tree itself, so they never disagree with `--help`.

use std::io::{self, Write};
use std::path::Path;

use clap::{Command, CommandFactory};

use super::{EXIT_ISSUES, EXIT_OK};
use crate::cli::{Cli, CompletionsArgs, ManArgs};

/// Prints the completion script for `args.shell`.
pub fn completions(args: &CompletionsArgs, out: &mut impl Write) -> io::Result<u8> {
    let mut command = Cli::command();
    // Made in memory first: the generator panics on a write error (a closed pipe), where the
    // rest of the CLI stops quietly.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "backstop", &mut script);
    out.write_all(&script)?;
    Ok(EXIT_OK)
}

/// Prints backstop(1), or writes it and a page per command under `args.out`.
pub fn man(args: &ManArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mut command = Cli::command();
    // Built, each subcommand knows its full name (`backstop review resolve`) for its synopsis.
    command.build();
    let Some(folder) = &args.out else {
        clap_mangen::Man::new(command).render(out)?;
        return Ok(EXIT_OK);
    };
    match write_pages(&command, "backstop", folder) {
        Ok(written) => {
            writeln!(out, "{written} pages written to {}", folder.display())?;
            Ok(EXIT_OK)
        }
        Err(e) => {
            writeln!(
                err,
                "backstop: cannot write the man pages to {}: {e}",
                folder.display()
            )?;
            Ok(EXIT_ISSUES)
        }
    }
}

/// Writes `name.1` for `command` and a page for each subcommand under it (`name-sub.1`), in
/// `folder`: how many.
fn write_pages(command: &Command, name: &str, folder: &Path) -> io::Result<usize> {
    std::fs::create_dir_all(folder)?;
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone())
        .title(name)
        .render(&mut page)?;
    std::fs::write(folder.join(format!("{name}.1")), page)?;
    let mut written = 1;
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        written += write_pages(sub, &format!("{name}-{}", sub.get_name()), folder)?;
    }
    Ok(written)
}
