//! `backstop strategies check` and `backstop strategies show`.

use std::io::{self, Write};

use backstop_core::recover::strategy::{DEFAULT_STRATEGIES, check_strategies};

use super::EXIT_OK;
use super::check::check_files;
use crate::cli::RulesCheckArgs;

/// Checks each file over the built-in table; every issue is listed with its file and path.
pub fn check(args: &RulesCheckArgs, out: &mut impl Write) -> io::Result<u8> {
    check_files(args, out, check_strategies)
}

/// Prints the built-in strategies.
pub fn show(out: &mut impl Write) -> io::Result<u8> {
    out.write_all(DEFAULT_STRATEGIES.as_bytes())?;
    Ok(EXIT_OK)
}
