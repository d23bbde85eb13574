//! `backstop pack check` and `backstop pack schema`.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use backstop_core::Issue;
use backstop_core::effects::{implied_schema, lint_result_schema};
use backstop_core::pack::{check_pack, parse_pack};
use backstop_server::Config;
use backstop_server::catalog::{Catalog, default_packs};

use super::check::check_files;
use super::{EXIT_BAD_INPUT, EXIT_OK};
use crate::cli::{PackSchemaArgs, RulesCheckArgs};
use crate::output;
use crate::settings::OutputMode;

/// Checks each pack file; every issue is listed with its file and path. A pack whose
/// `[dispatch]` names a `result_schema` has that file linted too (paths `result_schema: ...`).
pub fn check(args: &RulesCheckArgs, out: &mut impl Write) -> io::Result<u8> {
    check_files(args, out, |text, origin| {
        let mut issues = check_pack(text, origin);
        if !issues.is_empty() {
            return issues;
        }
        let Ok(pack) = parse_pack(text) else {
            return issues;
        };
        if let Some(file) = pack
            .dispatch
            .as_ref()
            .and_then(|d| d.result_schema.as_ref())
        {
            let path = Path::new(origin)
                .parent()
                .unwrap_or(Path::new("."))
                .join(file);
            let at = "dispatch.result_schema";
            match fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|t| {
                    serde_json::from_str::<serde_json::Value>(&t).map_err(|e| e.to_string())
                }) {
                Ok(schema) => issues.extend(
                    lint_result_schema(&pack, &schema)
                        .into_iter()
                        .map(|i| i.within(&format!("{at} ({file})"))),
                ),
                Err(e) => issues.push(Issue::new(
                    at,
                    "unreadable",
                    format!("cannot read {}: {e}", path.display()),
                )),
            }
        }
        issues
    })
}

/// Prints the strict result schema the job's pack implies.
pub fn schema(args: &PackSchemaArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let direct = Path::new(&args.job);
    let pack = if direct.extension().is_some_and(|e| e == "toml") && direct.is_file() {
        let text = fs::read_to_string(direct)?;
        parse_pack(&text).map_err(|issues| {
            let origin = direct.display().to_string();
            issues
                .into_iter()
                .map(|i| i.within(&origin))
                .collect::<Vec<_>>()
        })
    } else {
        let packs = if args.packs.is_empty() {
            default_packs()
        } else {
            args.packs.clone()
        };
        let config = Config {
            packs,
            ..Config::default()
        };
        Catalog::load(&config).and_then(|catalog| {
            catalog
                .packs
                .get(&args.job)
                .map(|p| (**p).clone())
                .ok_or_else(|| {
                    let jobs: Vec<&str> = catalog.packs.keys().map(String::as_str).collect();
                    vec![Issue::new(
                        "JOB",
                        "unknown_job",
                        format!(
                            "no pack is loaded for job `{}`; loaded: {}",
                            args.job,
                            if jobs.is_empty() {
                                "none".to_owned()
                            } else {
                                jobs.join(", ")
                            }
                        ),
                    )]
                })
        })
    };
    match pack {
        Ok(pack) => {
            serde_json::to_writer_pretty(&mut *out, &implied_schema(&pack))?;
            writeln!(out)?;
            Ok(EXIT_OK)
        }
        Err(issues) => {
            output::refuse_command(OutputMode::Human, &issues, out, err)?;
            Ok(EXIT_BAD_INPUT)
        }
    }
}
