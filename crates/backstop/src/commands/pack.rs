//! `backstop pack check`.

use std::io::{self, Write};

use backstop_core::pack::check_pack;

use super::check::check_files;
use crate::cli::RulesCheckArgs;

/// Checks each pack file; every issue is listed with its file and path.
pub fn check(args: &RulesCheckArgs, out: &mut impl Write) -> io::Result<u8> {
    check_files(args, out, check_pack)
}
