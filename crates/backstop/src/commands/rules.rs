//! `backstop rules check` and `backstop rules show`.

use std::io::{self, Write};

use backstop_core::classify::DEFAULT_RULES;
use backstop_core::classify::lint::check_rules;

use super::EXIT_OK;
use super::check::check_files;
use crate::cli::RulesCheckArgs;

/// Lints each file; every issue is listed with its file and path.
pub fn check(args: &RulesCheckArgs, out: &mut impl Write) -> io::Result<u8> {
    check_files(args, out, check_rules)
}

/// Prints the built-in rules.
pub fn show(out: &mut impl Write) -> io::Result<u8> {
    out.write_all(DEFAULT_RULES.as_bytes())?;
    Ok(EXIT_OK)
}
