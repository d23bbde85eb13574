//! What the service judges with: the packs by job and the classifier rules, loaded from the
//! config's files and swapped whole on a reload.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use backstop_core::pack::{Pack, parse_pack};
use backstop_core::{Issue, RuleSet};

use crate::config::Config;
use crate::files::{read_text, toml_files_in};

/// Packs by job, and the classifier rules.
#[derive(Debug)]
pub struct Catalog {
    /// The packs, by job.
    pub packs: BTreeMap<String, Arc<Pack>>,
    /// The classifier rules: the config's files in front of the built-in ones.
    pub rules: RuleSet,
    /// The pack files loaded, for the log.
    pub pack_files: Vec<PathBuf>,
    /// The recovery strategy files (`(origin, text)`), over the built-in strategies: checked
    /// here, and journaled so every server on the ledger uses them.
    pub strategy_files: Vec<(String, String)>,
}

impl Catalog {
    /// Loads every pack and rule file the config names; every issue has the file in its path.
    pub fn load(config: &Config) -> Result<Catalog, Vec<Issue>> {
        let mut issues = Vec::new();
        let mut packs = BTreeMap::new();
        let mut pack_files = Vec::new();
        for file in toml_files_in(&config.packs, &mut issues) {
            let origin = file.display().to_string();
            let text = match read_text(&file, &origin, "the pack") {
                Ok(text) => text,
                Err(issue) => {
                    issues.push(issue);
                    continue;
                }
            };
            match served_pack(&text, &file, config.outbound) {
                Ok(pack) => {
                    if packs.contains_key(&pack.job) {
                        issues.push(Issue::new(
                            format!("{origin}: job"),
                            "duplicate_job",
                            format!("another pack already names job `{}`", pack.job),
                        ));
                        continue;
                    }
                    packs.insert(pack.job.clone(), Arc::new(pack));
                    pack_files.push(file);
                }
                Err(found) => issues.extend(found.into_iter().map(|issue| issue.within(&origin))),
            }
        }
        let mut files = Vec::new();
        for path in toml_files_in(&config.rules, &mut issues) {
            let origin = path.display().to_string();
            match read_text(&path, &origin, "the rules file") {
                Ok(text) => files.push((origin, text)),
                Err(issue) => issues.push(issue),
            }
        }
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(o, t)| (o.as_str(), t.as_str()))
            .collect();
        let rules = match RuleSet::load(&borrowed) {
            Ok(rules) => Some(rules),
            Err(found) => {
                issues.extend(found);
                None
            }
        };
        let mut strategy_files = Vec::new();
        for path in toml_files_in(&config.strategies, &mut issues) {
            let origin = path.display().to_string();
            match read_text(&path, &origin, "the strategies file") {
                Ok(text) => strategy_files.push((origin, text)),
                Err(issue) => issues.push(issue),
            }
        }
        if let Err(found) = strategy_table(&strategy_files) {
            issues.extend(found);
        }
        match rules {
            Some(rules) if issues.is_empty() => Ok(Catalog {
                packs,
                rules,
                pack_files,
                strategy_files,
            }),
            _ => Err(issues),
        }
    }
}

/// The built-in strategies with `files` (`(origin, text)`) over them.
///
/// # Errors
/// Every issue of every file, with its origin.
pub fn strategy_table(
    files: &[(String, String)],
) -> Result<backstop_core::recover::StrategyTable, Vec<Issue>> {
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(o, t)| (o.as_str(), t.as_str()))
        .collect();
    backstop_core::recover::StrategyTable::load_all(&borrowed)
}

/// A pack file's text as every command that loads one reads it (`decide --pack`, `dispatch
/// --pack`, `cases show --pack`, `pack brief|schema FILE`, and, with [`served_pack`], `serve`,
/// `config check` and `pack check`): parsed, then linted by [`lint_pack`]. Paths are inside
/// the file.
///
/// # Errors
/// Every issue of the text, or else every lint.
pub fn read_pack(text: &str, file: &Path) -> Result<Pack, Vec<Issue>> {
    let pack = parse_pack(text)?;
    let issues = lint_pack(&pack, file);
    if issues.is_empty() {
        Ok(pack)
    } else {
        Err(issues)
    }
}

/// [`read_pack`], and a `status_url` the service may contact under `outbound`: what `serve`
/// loads, `config check` checks, and `pack check` checks under the default policy.
///
/// # Errors
/// Every issue [`read_pack`] finds, or the status URL's.
pub fn served_pack(
    text: &str,
    file: &Path,
    outbound: crate::outbound::Outbound,
) -> Result<Pack, Vec<Issue>> {
    let pack = read_pack(text, file)?;
    match forbidden_status_url(&pack, outbound) {
        Some(issue) => Err(vec![issue]),
        None => Ok(pack),
    }
}

/// What is wrong with a parsed pack beyond its own text, the same for `pack check`, `config
/// check` and `serve`: a time zone this machine does not know, and the result schema its
/// `[dispatch]` names (read beside the pack file `file`), linted as a source's structured
/// output needs it (no `$ref`, `oneOf` and the like; every judgment with `unknown`).
pub fn lint_pack(pack: &Pack, file: &std::path::Path) -> Vec<Issue> {
    let mut issues: Vec<Issue> = unknown_zone(pack).into_iter().collect();
    let Some(named) = pack
        .dispatch
        .as_ref()
        .and_then(|d| d.result_schema.as_ref())
    else {
        return issues;
    };
    let path = file
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join(named);
    let at = "dispatch.result_schema";
    let schema = read_text(&path, at, &path.display().to_string()).and_then(|text| {
        backstop_core::input::json_value(&text).map_err(|issue| {
            Issue::new(
                at,
                &issue.code,
                format!("{}: {}", path.display(), issue.message),
            )
        })
    });
    match schema {
        Ok(schema) => issues.extend(
            backstop_core::effects::lint_result_schema(pack, &schema)
                .into_iter()
                .map(|i| i.within(&format!("{at} ({named})"))),
        ),
        Err(issue) => issues.push(issue),
    }
    issues
}

/// The issue with a pack whose `[dispatch] time_zone` this machine does not know: its quiet
/// hours would be read in the wrong zone. (The core parses packs without I/O; the zone
/// database is read here.)
pub fn unknown_zone(pack: &Pack) -> Option<Issue> {
    let zone = &pack.dispatch.as_ref()?.time_zone;
    jiff::tz::TimeZone::get(zone).is_err().then(|| {
        Issue::new(
            "dispatch.time_zone",
            "unknown_time_zone",
            format!("`{zone}` is not a time zone this machine knows (an IANA name such as America/Chicago)"),
        )
    })
}

/// The issue with a pack whose `[dispatch] status_url` names a host the service may not
/// contact (see [`crate::outbound`]).
pub fn forbidden_status_url(pack: &Pack, policy: crate::outbound::Outbound) -> Option<Issue> {
    let url = pack.dispatch.as_ref()?.status_url.as_deref()?;
    let why = policy.check_url(&url.replace("{key}", "k")).err()?;
    Some(Issue::new("dispatch.status_url", "forbidden_target", why))
}

/// The default packs: `./packs` when it is a folder, so a fresh checkout serves its examples.
pub fn default_packs() -> Vec<PathBuf> {
    let here = Path::new("packs");
    if here.is_dir() {
        vec![here.to_path_buf()]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pack_whose_dispatch_zone_is_unknown_is_not_loaded() {
        let dir = std::env::temp_dir().join(format!("backstop-catalog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let shipped = include_str!("../../../packs/po-acknowledgement.toml");
        let file = dir.join("po.toml");
        std::fs::write(
            &file,
            shipped.replace("\"America/Chicago\"", "\"Mars/Olympus\""),
        )
        .unwrap();
        let config = Config {
            packs: vec![file.clone()],
            ..Config::default()
        };
        let issues = Catalog::load(&config).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert_eq!(issues[0].code, "unknown_time_zone");
        assert_eq!(
            issues[0].path,
            format!("{}: dispatch.time_zone", file.display())
        );
    }
}
