//! `backstop rules check` and `backstop rules show`.

use std::io::{self, Write};

use backstop_core::classify::DEFAULT_RULES;
use backstop_core::classify::extract::EXTRACTORS;
use backstop_core::classify::lint::check_rules;

use super::EXIT_OK;
use super::check::check_files;
use crate::cli::RulesCheckArgs;

/// Lints each file; every issue is listed with its file and path.
pub fn check(args: &RulesCheckArgs, out: &mut impl Write) -> io::Result<u8> {
    check_files(args, out, check_rules)
}

/// Prints the extractors, then the built-in rules. The extractors are TOML comments, so the
/// whole output is still a rules file a user can start from.
pub fn show(out: &mut impl Write) -> io::Result<u8> {
    writeln!(
        out,
        "# Extractors: they run before the rules and read message and output text; what they\n\
         # find fills the report fields it lacks (an explicit field always wins) and shows in\n\
         # evidence as {{\"field\": \"message\", \"extracted\": ..., \"by\": NAME}}. In order:\n#"
    )?;
    for extractor in EXTRACTORS {
        writeln!(out, "# {}: {}", extractor.name, extractor.reads)?;
        writeln!(out, "#   e.g. {}", extractor.example.replace('\n', "\\n"))?;
        writeln!(out, "#   finds {}", extractor.finds)?;
    }
    writeln!(out, "#")?;
    out.write_all(DEFAULT_RULES.as_bytes())?;
    Ok(EXIT_OK)
}
