//! Reading the files a user names — configs, packs, rules, strategies, traces, logs, keys —
//! for the core's one reader ([`backstop_core::input`]): the text, or one `unreadable` issue
//! at the file's origin; and a folder's TOML files in name order.

use std::path::{Path, PathBuf};

use backstop_core::Issue;

/// The text of the file at `path`, or an `unreadable` issue at `origin` ("cannot read
/// {what}: {why}").
pub fn read_text(path: &Path, origin: &str, what: &str) -> Result<String, Issue> {
    std::fs::read_to_string(path)
        .map_err(|e| Issue::new(origin, "unreadable", format!("cannot read {what}: {e}")))
}

/// Each file named, and each folder's `*.toml` files in name order; a path that does not
/// exist or a folder that cannot be listed is an issue.
pub fn toml_files_in(paths: &[PathBuf], issues: &mut Vec<Issue>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            match std::fs::read_dir(path) {
                Ok(entries) => {
                    let mut found: Vec<PathBuf> = entries
                        .filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                        .collect();
                    found.sort();
                    out.extend(found);
                }
                Err(e) => issues.push(Issue::new(
                    path.display().to_string(),
                    "unreadable",
                    format!("cannot list the folder: {e}"),
                )),
            }
        } else if path.exists() {
            out.push(path.clone());
        } else {
            issues.push(Issue::new(
                path.display().to_string(),
                "not_found",
                "no such file or folder",
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_one_unreadable_issue_at_its_origin() {
        let issue = read_text(
            Path::new("/no/such/file.toml"),
            "--rules x",
            "the rules file",
        )
        .unwrap_err();
        assert_eq!(
            (issue.path.as_str(), issue.code.as_str()),
            ("--rules x", "unreadable")
        );
        assert!(
            issue.message.starts_with("cannot read the rules file: "),
            "{}",
            issue.message
        );
    }

    #[test]
    fn a_folder_gives_its_toml_files_in_name_order() {
        let dir = std::env::temp_dir().join(format!("backstop-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["b.toml", "a.toml", "notes.txt"] {
            std::fs::write(dir.join(name), "").unwrap();
        }
        let mut issues = Vec::new();
        let found = toml_files_in(&[dir.clone(), dir.join("missing.toml")], &mut issues);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found, [dir.join("a.toml"), dir.join("b.toml")]);
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].code, "not_found");
    }
}
