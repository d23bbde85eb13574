//! Checking files (`rules check`, `strategies check`): every issue of every file, with paths.

use std::io::{self, Write};

use backstop_core::Issue;
use backstop_server::files::read_text;
use serde_json::json;

use super::{EXIT_BAD_INPUT, EXIT_ISSUES, EXIT_OK};
use crate::cli::RulesCheckArgs;
use crate::output;
use crate::settings::OutputMode;

/// Checks each file with `check(text, origin)`; exit 0 when all are clean, 1 when any has
/// issues, 2 when one cannot be read.
pub fn check_files(
    args: &RulesCheckArgs,
    out: &mut impl Write,
    check: impl Fn(&str, &str) -> Vec<Issue>,
) -> io::Result<u8> {
    let mut report = Vec::new();
    let mut unreadable = false;
    for path in &args.files {
        let origin = path.display().to_string();
        let issues = match read_text(path, "", "the file") {
            Ok(text) => check(&text, &origin),
            Err(issue) => {
                unreadable = true;
                vec![issue]
            }
        };
        report.push((origin, issues));
    }
    if args.output.mode() == OutputMode::Json {
        let files: Vec<_> = report
            .iter()
            .map(|(file, issues)| json!({"file": file, "ok": issues.is_empty(), "issues": issues}))
            .collect();
        output::json_line(out, &json!({"files": files}))?;
    } else {
        for (file, issues) in &report {
            if issues.is_empty() {
                writeln!(out, "{file}: ok")?;
            } else {
                let noun = if issues.len() == 1 { "issue" } else { "issues" };
                output::issues_human(out, &format!("{file}: {} {noun}", issues.len()), issues)?;
            }
        }
    }
    Ok(if unreadable {
        EXIT_BAD_INPUT
    } else if report.iter().any(|(_, issues)| !issues.is_empty()) {
        EXIT_ISSUES
    } else {
        EXIT_OK
    })
}
