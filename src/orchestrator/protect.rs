//! What a run may not change and still merge by itself: the files that steer eden's next run of
//! the same manifest (the manifest, its prompt files, a `cli` agent's script, the scripts its
//! hooks and checks run, `Dockerfile.eden`), and the person's own `branch.protect` globs. A
//! `merge-to-head` run whose commits touch one is not merged: its branch is kept and the run
//! ends with exit 10 (`protected`), saying which; `eden merge RUN` merges it after review.

use crate::error::{Error, ErrorKind};
use crate::git::Git;
use crate::manifest::plan::Plan;
use std::path::{Path, PathBuf};

/// The files and globs a run is kept from changing unreviewed, relative to the repository.
#[derive(Debug, Clone, Default)]
pub(crate) struct Protected {
    /// Files that steer eden, relative to the repository's top.
    files: Vec<String>,
    /// `branch.protect`.
    globs: Vec<String>,
}

impl Protected {
    /// What `plan` names, for a repository checked out at `checkout`.
    pub(crate) fn of(plan: &Plan, checkout: &Path) -> Protected {
        let checkout = crate::git::dunce_canonical(checkout);
        let mut absolute: Vec<PathBuf> = plan.manifest.iter().cloned().collect();
        let mut files = vec!["Dockerfile.eden".to_owned()];
        for step in &plan.steps {
            absolute.extend(step.prompt.file.iter().cloned());
            if let Some(binary) = step.agent.binary().filter(|binary| binary.components().count() > 1) {
                absolute.push(binary.to_path_buf());
            }
            for check in &step.checks {
                files.extend(scripts_in(&check.cmd, check.cwd.as_deref()));
            }
        }
        for hooks in [&plan.hooks.host, &plan.hooks.sandbox] {
            for hook in hooks.values().flatten() {
                files.extend(scripts_in(&hook.cmd, hook.cwd.as_deref()));
            }
        }
        for path in absolute {
            let path = crate::git::dunce_canonical(&path);
            if let Ok(relative) = path.strip_prefix(&checkout) {
                files.push(relative.to_string_lossy().into_owned());
            }
        }
        files.sort();
        files.dedup();
        Protected { files, globs: plan.branch.protect.clone() }
    }

    /// The protected paths among those the commits `base..tip` touch.
    pub(crate) fn touched(&self, repo: &Git, base: &str, tip: &str) -> Result<Vec<String>, Error> {
        let changed = repo.run(["log", "--no-renames", "--name-only", "--format=", "-z", &format!("{base}..{tip}")])?;
        let mut touched: Vec<String> = changed
            .split('\0')
            .filter(|path| !path.is_empty())
            .filter(|path| {
                self.files.iter().any(|file| file == path) || self.globs.iter().any(|glob| matches(glob, path))
            })
            .map(str::to_owned)
            .collect();
        touched.sort();
        touched.dedup();
        Ok(touched)
    }
}

/// The error of a run that changed what steers eden.
pub(crate) fn refused(touched: &[String], run_id: &str) -> Error {
    let shown: Vec<String> = touched.iter().take(8).map(|path| format!("`{path}`")).collect();
    let more = if touched.len() > 8 { format!(" and {} more", touched.len() - 8) } else { String::new() };
    Error::new(
        ErrorKind::Protected { files: touched.to_vec() },
        format!(
            "the run's commits change {}{more}, which steer eden's next run (or `branch.protect` names): not merged",
            shown.join(", ")
        ),
    )
    .with_hint(format!("review them with `eden diff {run_id}`, then merge with `eden merge {run_id}`"))
}

/// The scripts a command runs from the repository: each word that is a relative path (`./x`,
/// `scripts/x.sh`), relative to the command's `cwd` in the worktree.
fn scripts_in(cmd: &str, cwd: Option<&str>) -> Vec<String> {
    let words = shlex::split(cmd).unwrap_or_default();
    words
        .iter()
        .filter(|word| word.contains('/') && !word.starts_with(['/', '-', '$', '~']) && !word.contains("://"))
        .filter_map(|word| normalize(&Path::new(cwd.unwrap_or("")).join(word)))
        .collect()
}

/// `path` without `.` components, or `None` when it leaves the repository.
fn normalize(path: &Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::Normal(name) => parts.push(name.to_string_lossy().into_owned()),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Does `glob` match `path` (both relative to the repository's top)? `*` and `?` within a
/// folder's name, `**` any number of folders; a glob without `/` matches a name at any depth.
pub(crate) fn matches(glob: &str, path: &str) -> bool {
    let glob = glob.trim_start_matches("./").trim_end_matches('/');
    let path_parts: Vec<&str> = path.split('/').collect();
    if !glob.contains('/') {
        return path_parts.iter().any(|part| name_matches(glob.as_bytes(), part.as_bytes()));
    }
    let glob_parts: Vec<&str> = glob.split('/').collect();
    parts_match(&glob_parts, &path_parts)
        || (glob_parts.last() != Some(&"**") && prefix_match(&glob_parts, &path_parts))
}

/// A glob naming a folder covers what is in it.
fn prefix_match(glob: &[&str], path: &[&str]) -> bool {
    (1..path.len()).any(|end| parts_match(glob, &path[..end]))
}

fn parts_match(glob: &[&str], path: &[&str]) -> bool {
    match glob.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| parts_match(rest, &path[skip..])),
        Some((first, rest)) => path
            .split_first()
            .is_some_and(|(name, others)| name_matches(first.as_bytes(), name.as_bytes()) && parts_match(rest, others)),
    }
}

fn name_matches(glob: &[u8], name: &[u8]) -> bool {
    match glob.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| name_matches(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && name_matches(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && name_matches(rest, &name[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_documented() {
        assert!(matches(".github/workflows/**", ".github/workflows/ci.yml"));
        assert!(matches(".github/workflows/**", ".github/workflows/a/b.yml"));
        assert!(!matches(".github/workflows/**", ".github/other.yml"));
        assert!(matches(".claude/**", ".claude/settings.json"));
        assert!(matches(".claude", ".claude/settings.json"), "a folder covers what is in it");
        assert!(matches("*.lock", "deep/down/Cargo.lock"));
        assert!(matches("src/*.rs", "src/main.rs"));
        assert!(!matches("src/*.rs", "src/a/main.rs"));
        assert!(matches("src/**/*.rs", "src/main.rs") && matches("src/**/*.rs", "src/a/b/main.rs"));
        assert!(matches("Make?ile", "Makefile") && !matches("Make?ile", "Maakefile"));
    }

    #[test]
    fn hook_scripts_are_found_in_commands() {
        assert_eq!(scripts_in("./scripts/report.sh $EDEN_STATUS", None), ["scripts/report.sh"]);
        assert_eq!(scripts_in("sh tools/check.sh --fast", Some("sub")), ["sub/tools/check.sh"]);
        assert_eq!(scripts_in("cargo test", None), Vec::<String>::new());
        assert_eq!(scripts_in("/usr/bin/env x https://example.com/a", None), Vec::<String>::new());
        assert_eq!(scripts_in("../outside/x.sh", None), Vec::<String>::new());
    }
}
