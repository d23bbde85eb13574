//! `backstop pack check`, `backstop pack schema` and `backstop pack brief`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use backstop_core::Issue;
use backstop_core::effects::implied_schema;
use backstop_core::pack::Pack;
use backstop_server::Config;
use backstop_server::catalog::{Catalog, default_packs, read_pack, served_pack};
use backstop_server::files::read_text;

use super::check::check_files;
use super::{EXIT_BAD_INPUT, EXIT_OK};
use crate::cli::{PackBriefArgs, PackSchemaArgs, RulesCheckArgs};
use crate::output;
use crate::settings::OutputMode;

/// Checks each pack file; every issue is listed with its file and path. A pack whose
/// `[dispatch]` names a `result_schema` has that file linted too (paths `result_schema: ...`).
pub fn check(args: &RulesCheckArgs, out: &mut impl Write) -> io::Result<u8> {
    // The jobs of the files checked so far: a second pack for a job is refused, as `serve`
    // refuses it.
    let jobs = RefCell::new(BTreeMap::<String, String>::new());
    check_files(args, out, |text, origin| {
        let outbound = backstop_server::outbound::Outbound::default();
        match served_pack(text, Path::new(origin), outbound) {
            Ok(pack) => match jobs.borrow_mut().entry(pack.job.clone()) {
                Entry::Occupied(first) => vec![Issue::new(
                    "job",
                    "duplicate_job",
                    format!("{} already names job `{}`", first.get(), pack.job),
                )],
                Entry::Vacant(slot) => {
                    slot.insert(origin.to_owned());
                    Vec::new()
                }
            },
            Err(issues) => issues,
        }
    })
}

/// Prints the strict result schema the job's pack implies.
pub fn schema(args: &PackSchemaArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    match load_job(&args.job, &args.packs) {
        Ok(pack) => {
            serde_json::to_writer_pretty(&mut *out, &implied_schema(&pack))?;
            writeln!(out)?;
            Ok(EXIT_OK)
        }
        // The schema is JSON wherever it goes; a refusal is for a person only on a terminal.
        Err(issues) => {
            let mode = OutputMode::choose(false, crate::cli::OutputChoice::Auto);
            output::refuse_command(mode, &issues, out, err)
        }
    }
}

/// Prints a job's brief: what an agent needs to write a good first request.
pub fn brief(args: &PackBriefArgs, out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mode = args.output.mode();
    match load_job(&args.job, &args.packs) {
        Ok(pack) => {
            let brief = backstop_core::pack::brief(&pack);
            match mode {
                OutputMode::Json => {
                    output::json_line(out, &brief)?;
                }
                OutputMode::Human => output::brief_human(out, &brief)?,
            }
            Ok(EXIT_OK)
        }
        Err(issues) => {
            output::refuse_command(mode, &issues, out, err)?;
            Ok(EXIT_BAD_INPUT)
        }
    }
}

/// The pack of `job`: a pack file when `job` names one, else the job's pack among `packs`
/// (default ./packs). Every issue has the file in its path.
fn load_job(job: &str, packs: &[PathBuf]) -> Result<Pack, Vec<Issue>> {
    let direct = Path::new(job);
    if direct.extension().is_some_and(|e| e == "toml") && direct.is_file() {
        let origin = direct.display().to_string();
        let text = read_text(direct, &origin, "the pack").map_err(|issue| vec![issue])?;
        return read_pack(&text, direct)
            .map_err(|issues| issues.into_iter().map(|i| i.within(&origin)).collect());
    }
    let packs_given = packs;
    let packs = packs_by_job(packs)?;
    packs.get(job).map(|p| (**p).clone()).ok_or_else(|| {
        vec![Issue::new(
            "JOB",
            "unknown_job",
            format!(
                "no pack is loaded for job `{job}` from {}; loaded: {} (name the folder or \
                 file with --packs, or give the pack file itself)",
                packs_searched(packs_given),
                job_list(&packs)
            ),
        )]
    })
}

/// Where packs were looked for, for a message.
pub(crate) fn packs_searched(packs: &[PathBuf]) -> String {
    if packs.is_empty() {
        let here = Path::new("packs");
        if here.is_dir() {
            "./packs".to_owned()
        } else {
            "./packs (there is no such folder here)".to_owned()
        }
    } else {
        packs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The packs in `packs` (pack files or folders; default ./packs, when it is a folder), by job.
///
/// # Errors
/// Every issue of every pack file (unreadable, with issues, a job named twice), with the file
/// in its path.
pub(crate) fn packs_by_job(packs: &[PathBuf]) -> Result<BTreeMap<String, Arc<Pack>>, Vec<Issue>> {
    let config = Config {
        packs: if packs.is_empty() {
            default_packs()
        } else {
            packs.to_vec()
        },
        ..Config::default()
    };
    Ok(Catalog::load(&config)?.packs)
}

/// The jobs loaded, for a message: `a, b`, or `none`.
pub(crate) fn job_list(packs: &BTreeMap<String, Arc<Pack>>) -> String {
    if packs.is_empty() {
        "none".to_owned()
    } else {
        packs
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}
