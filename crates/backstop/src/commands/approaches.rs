//! `backstop approaches`: the failed approaches the ledger's call journal remembers.

use std::io::{self, Write};

use backstop_server::journal;
use backstop_server::routes::approaches::ApproachList;
use backstop_server::routes::recover::check_name;
use jiff::Timestamp;

use super::EXIT_OK;
use super::cases::{open_existing, store_failed};
use crate::cli::ApproachesArgs;
use crate::output;
use crate::settings::OutputMode;

/// Replays the journal, prints the live failed approaches.
pub fn run(args: &ApproachesArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mode = args.output.mode();
    let mut issues = Vec::new();
    if let Some(caller) = &args.caller {
        check_name(caller, "--caller", &mut issues);
    }
    if !issues.is_empty() {
        return output::refuse_command(mode, &issues, out, err);
    }
    let store = match open_existing(&args.db.db, "approaches", mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    let calls = match journal::load(store.as_ref()) {
        Ok((calls, _)) => calls,
        Err(e) => return store_failed(&e, err),
    };
    let approaches = calls
        .recovery
        .failed_approaches(args.caller.as_deref(), Timestamp::now());
    if mode == OutputMode::Json {
        return output::result(mode, out, &ApproachList { approaches });
    }
    if approaches.is_empty() {
        writeln!(out, "no failed approaches")?;
    }
    for a in &approaches {
        writeln!(out, "{}: {}", a.caller, a.approach.summary)?;
        writeln!(
            out,
            "  last failed {}, forgotten at {} (or when {} succeeds)",
            a.approach.last_at, a.approach.expires_at, a.approach.tool
        )?;
    }
    Ok(EXIT_OK)
}
