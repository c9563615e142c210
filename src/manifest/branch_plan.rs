//! `[branch]` and `copy_to_worktree`: where a run's work goes, and what it takes along.

use super::load::{KeyPath, Source};
use super::schema::{BranchSection, Manifest, Strategy};
use crate::error::Error;
use crate::values::branch_name_problem;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize)]
pub(crate) struct BranchPlan {
    pub(crate) strategy: Strategy,
    pub(crate) name: Option<String>,
    pub(crate) base: Option<String>,
    pub(crate) allow_dirty: bool,
    pub(crate) reuse_worktree: bool,
    pub(crate) rebase: bool,
    pub(crate) commit_leftovers: bool,
    /// `branch.push`: the remote the run's branch goes to after the run.
    pub(crate) push: Option<String>,
    /// `branch.push_base`: the base too, once merged into (merge-to-head).
    pub(crate) push_base: bool,
    /// `branch.protect`: globs a run may not change and still merge by itself.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) protect: Vec<String>,
}

/// `copy_to_worktree` entries: relative paths that stay inside the checkout.
pub(crate) fn resolve_copies(manifest: &Manifest, strategy: Strategy, source: &Source) -> Result<Vec<PathBuf>, Error> {
    use std::path::Component;
    let path = KeyPath::parse("copy_to_worktree");
    if !manifest.copy_to_worktree.is_empty() && strategy == Strategy::Head {
        return Err(source
            .error_at(&path, "`copy_to_worktree` does not apply to strategy `head`")
            .with_hint("`head` works in your checkout, which already has these files; remove the key"));
    }
    let mut entries = Vec::new();
    for (index, entry) in manifest.copy_to_worktree.iter().enumerate() {
        let problem = if entry.trim().is_empty() {
            Some("it is empty")
        } else if entry.starts_with('/') || entry.starts_with('~') {
            Some("it is absolute; give a path relative to the repository")
        } else if Path::new(entry).components().any(|c| c == Component::ParentDir) {
            Some("it leaves the repository with `..`")
        } else if Path::new(entry).components().next() == Some(Component::Normal(".git".as_ref())) {
            Some("eden does not copy git's own files")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(source.error_at(&path.index(index), format!("cannot copy `{entry}`: {problem}")).with_hint(
                "entries are files or folders relative to the repository, e.g. \".env\" or \"config/local\"",
            ));
        }
        let cleaned: PathBuf = Path::new(entry).components().filter(|c| *c != Component::CurDir).collect();
        if cleaned.as_os_str().is_empty() {
            return Err(source
                .error_at(&path.index(index), format!("cannot copy `{entry}`: it is the whole repository"))
                .with_hint("name the files or folders git does not have"));
        }
        entries.push(cleaned);
    }
    Ok(entries)
}

pub(crate) fn resolve_branch(section: &BranchSection, source: &Source) -> Result<BranchPlan, Error> {
    let path = KeyPath::parse("branch");
    let strategy = section.strategy.unwrap_or(Strategy::MergeToHead);
    let only_for = |key: &str, set: bool, owner: &str| -> Result<(), Error> {
        if set {
            return Err(source
                .error_at_key(
                    &path.child(key),
                    format!("`branch.{key}` does not apply to strategy `{}`", strategy.as_str()),
                )
                .with_hint(format!("it is used by {owner}")));
        }
        Ok(())
    };
    if strategy != Strategy::Named {
        only_for("name", section.name.is_some(), "strategy `named`")?;
        only_for("reuse_worktree", section.reuse_worktree.is_some(), "strategy `named`")?;
    }
    if strategy == Strategy::Named {
        only_for("allow_dirty", section.allow_dirty.is_some(), "strategies `head` and `merge-to-head`")?;
    }
    if strategy == Strategy::Head {
        only_for("base", section.base.is_some(), "strategies `merge-to-head` and `named`")?;
    }
    if strategy != Strategy::MergeToHead {
        only_for("rebase", section.rebase.is_some(), "strategy `merge-to-head`")?;
        only_for("push_base", section.push_base.is_some(), "strategy `merge-to-head`")?;
        only_for("protect", section.protect.is_some(), "strategy `merge-to-head` (the others merge nothing)")?;
    }
    for (index, glob) in section.protect.iter().flatten().enumerate() {
        let bad = glob.trim().is_empty() || glob.starts_with('/') || glob.split('/').any(|part| part == "..");
        if bad {
            return Err(source
                .error_at(&path.child("protect").index(index), format!("`{glob}` is not a path in the repository"))
                .with_hint(
                    "give globs relative to the repository's top: `.github/workflows/**`, `.claude/**`, `*.lock`",
                ));
        }
    }
    if section.push_base == Some(true) && section.push.is_none() {
        return Err(source
            .error_at_key(&path.child("push_base"), "`branch.push_base` needs `branch.push`")
            .with_hint("name the remote the base goes to: `push = \"origin\"`"));
    }
    if let Some(remote) = &section.push {
        let bad =
            remote.is_empty() || remote.starts_with('-') || remote.chars().any(|c| c.is_whitespace() || c.is_control());
        if bad {
            return Err(source
                .error_at(&path.child("push"), format!("`{remote}` is not a remote's name"))
                .with_hint("name a remote of this repository, as `git remote` lists them: `push = \"origin\"`"));
        }
    }
    if strategy == Strategy::Named && section.name.is_none() {
        return Err(source
            .error_at(&path.child("strategy"), "strategy `named` needs `branch.name`")
            .with_hint("set `branch.name = \"eden/my-task\"` (or `--branch`)"));
    }
    for (key, value) in [("name", &section.name), ("base", &section.base)] {
        if let Some(value) = value {
            if let Some(problem) = branch_name_problem(value) {
                return Err(source
                    .error_at(&path.child(key), format!("`{value}` is not a valid branch name: {problem}"))
                    .with_hint("branch names follow `git check-ref-format --branch`"));
            }
        }
    }
    Ok(BranchPlan {
        strategy,
        name: section.name.clone(),
        base: section.base.clone(),
        allow_dirty: section.allow_dirty.unwrap_or(false),
        reuse_worktree: section.reuse_worktree.unwrap_or(false),
        rebase: section.rebase.unwrap_or(false),
        commit_leftovers: section.commit_leftovers.unwrap_or(false),
        push: section.push.clone(),
        push_base: section.push_base.unwrap_or(false),
        protect: section.protect.clone().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn branch(text: &str) -> Result<BranchPlan, String> {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        resolve_branch(&manifest.branch, &source).map_err(|err| err.message)
    }

    #[test]
    fn defaults_and_refusals() {
        let plan = branch("").unwrap();
        assert_eq!(plan.strategy, Strategy::MergeToHead);
        assert!(!plan.push_base && plan.protect.is_empty());
        let named = branch("[branch]\nstrategy = \"named\"\n").unwrap_err();
        assert!(named.starts_with("plan.toml:2:12: strategy `named` needs `branch.name`"), "{named}");
        assert!(branch("[branch]\npush_base = true\n").unwrap_err().contains("needs `branch.push`"));
        assert!(branch("[branch]\nprotect = [\"../x\"]\n").unwrap_err().contains("not a path in the repository"));
        assert!(branch("[branch]\nstrategy = \"head\"\nbase = \"main\"\n").unwrap_err().contains("does not apply"));
        assert!(branch("[branch]\npush = \"-x\"\n").unwrap_err().contains("not a remote's name"));
        assert!(branch("[branch]\nbase = \"a..b\"\n").unwrap_err().contains("not a valid branch name"));
    }

    #[test]
    fn copies_stay_in_the_checkout() {
        let copies = |text: &str| {
            let (manifest, source) = super::super::load::from_text(text).unwrap();
            resolve_copies(&manifest, Strategy::MergeToHead, &source).map_err(|err| err.message)
        };
        assert_eq!(copies("copy_to_worktree = [\"./config/local\"]").unwrap(), [PathBuf::from("config/local")]);
        for bad in ["/etc", "../x", ".git/config", ".", ""] {
            assert!(copies(&format!("copy_to_worktree = [\"{bad}\"]")).is_err(), "{bad}");
        }
    }
}
