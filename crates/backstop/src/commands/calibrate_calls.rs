//! `backstop calibrate calls`: how often the k-th retry recovered, per tool and class, read
//! from the ledger's call journal.

use std::io::{self, Write};

use backstop_core::recover::calibrate::{CallCalibration, calibrate};

use super::EXIT_OK;
use super::cases::{open_existing, store_failed};
use crate::cli::CalibrateCallsArgs;
use crate::output;
use crate::settings::OutputMode;

/// Reads the whole journal, prints the calibration.
pub fn run(
    args: &CalibrateCallsArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let mode = args.output.mode();
    let store = match open_existing(&args.db.db, "calibrate calls", mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    let entries = match store.journal_after(0) {
        Ok(entries) => entries,
        Err(e) => return store_failed(&e, err),
    };
    let calibration = calibrate(&entries);
    if mode == OutputMode::Json {
        return output::result(mode, out, &calibration);
    }
    print_table(&calibration, out)?;
    Ok(EXIT_OK)
}

/// For a person: a block per tool and class, each retry on a line, then the recommendation.
fn print_table(c: &CallCalibration, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "{} failures and {} task successes in the journal",
        c.failures, c.successes
    )?;
    for row in &c.rows {
        writeln!(
            out,
            "\n{} {}: {} failures in {} episodes",
            row.tool, row.class, row.failures, row.episodes
        )?;
        if !row.retries.is_empty() {
            writeln!(out, "  retry  tried  recovered  rate")?;
        }
        for retry in &row.retries {
            writeln!(
                out,
                "  {:>5}  {:>5}  {:>9}  {:>3.0}%",
                retry.retry,
                retry.tried,
                retry.recovered,
                retry.rate * 100.0
            )?;
        }
        match (&row.recommended, &row.note) {
            (Some(r), _) => {
                let wait = |ms: Option<u64>| {
                    ms.map_or_else(|| "none recovered".to_owned(), |ms| format!("{ms} ms"))
                };
                writeln!(
                    out,
                    "  recommended: max_attempts {}, backoff base {}, max {}",
                    r.max_attempts,
                    wait(r.backoff_base_ms),
                    wait(r.backoff_max_ms)
                )?;
            }
            (None, Some(note)) => writeln!(out, "  no recommendation: {note}")?,
            (None, None) => {}
        }
    }
    Ok(())
}
