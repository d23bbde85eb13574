//! `backstop purge`: ledger records past retention deleted.

use std::io::{self, Write};

use backstop_core::Issue;
use backstop_store::DEFAULT_RETENTION;
use jiff::SignedDuration;

use super::cases::{open_existing, store_failed};
use crate::cli::PurgeArgs;
use crate::output;
use crate::settings::resolve_now;

/// Deletes records older than `--older-than`; prints the counts.
pub fn run(args: &PurgeArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mut issues = Vec::new();
    let now = resolve_now(args.now.as_deref(), &mut issues);
    let keep = parse_retention(&args.older_than).unwrap_or_else(|why| {
        issues.push(Issue::new("--older-than", "bad_duration", why));
        DEFAULT_RETENTION
    });
    let mode = args.output.mode();
    if !issues.is_empty() {
        return output::refuse_command(mode, &issues, out, err);
    }
    let store = match open_existing(&args.db.db, "purge", mode, out, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    let Some(before) = now.checked_sub(keep).ok() else {
        let issue = Issue::new(
            "--older-than",
            "out_of_range",
            format!(
                "`{}` reaches before the earliest time there is",
                args.older_than
            ),
        );
        return output::refuse_command(mode, &[issue], out, err);
    };
    match store.purge(before) {
        Ok(purged) => {
            let report = serde_json::json!({"before": before, "deleted": purged});
            output::result(mode, out, &report)
        }
        Err(e) => store_failed(&e, err),
    }
}

/// A retention: `30d`, or any duration jiff reads (`72h`, `90m`); positive.
fn parse_retention(text: &str) -> Result<SignedDuration, String> {
    let parsed = match text.strip_suffix('d').map(str::parse::<i64>) {
        Some(Ok(days)) => days
            .checked_mul(86_400)
            .filter(|_| days < 3_650_000)
            .map(SignedDuration::from_secs)
            .ok_or_else(|| format!("`{text}` is too long")),
        _ => text
            .parse::<SignedDuration>()
            .map_err(|_| format!("`{text}` is not a duration like 30d, 72h or 90m")),
    }?;
    if parsed.is_positive() {
        Ok(parsed)
    } else {
        Err(format!("`{text}` must be longer than zero"))
    }
}
