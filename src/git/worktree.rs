//! Worktrees: where each run's agent works, under `.eden/worktrees/<branch-slug>`.

use super::Git;
use crate::error::Error;
use std::path::{Path, PathBuf};

/// A branch name made into one path component: `eden/fix-login` → `eden-fix-login`.
pub fn slug(branch: &str) -> String {
    branch.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' }).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    Removed,
    /// It has uncommitted changes and was left in place.
    KeptDirty,
}

/// `git worktree list --porcelain`, parsed.
pub struct WorktreeList {
    pub entries: Vec<(PathBuf, Option<String>)>,
}

impl WorktreeList {
    pub fn read(git: &Git) -> Result<Self, Error> {
        let text = git.run(["worktree", "list", "--porcelain"])?;
        let mut entries = Vec::new();
        for block in text.split("\n\n") {
            let mut path = None;
            let mut branch = None;
            for line in block.lines() {
                if let Some(p) = line.strip_prefix("worktree ") {
                    path = Some(PathBuf::from(p));
                } else if let Some(b) = line.strip_prefix("branch refs/heads/") {
                    branch = Some(b.to_owned());
                }
            }
            if let Some(path) = path {
                entries.push((path, branch));
            }
        }
        Ok(WorktreeList { entries })
    }

    /// The worktree that has `branch` checked out.
    pub fn find_branch(&self, branch: &str) -> Option<&Path> {
        self.entries.iter().find(|(_, b)| b.as_deref() == Some(branch)).map(|(path, _)| path.as_path())
    }
}

impl Git {
    /// Create a worktree at `path` on a new branch `branch` starting at `base`.
    pub fn add_worktree_new_branch(&self, path: &Path, branch: &str, base: &str) -> Result<(), Error> {
        self.run([
            "worktree".as_ref(),
            "add".as_ref(),
            "--quiet".as_ref(),
            "-b".as_ref(),
            branch.as_ref(),
            path.as_os_str(),
            base.as_ref(),
        ])
        .map(drop)
    }

    /// Create a worktree at `path` for the existing `branch`.
    pub fn add_worktree(&self, path: &Path, branch: &str) -> Result<(), Error> {
        self.run(["worktree".as_ref(), "add".as_ref(), "--quiet".as_ref(), path.as_os_str(), branch.as_ref()]).map(drop)
    }

    /// Remove a clean worktree. git itself refuses when it has modified or untracked files, so
    /// this can never lose work: that refusal is `Ok(Removal::KeptDirty)`.
    pub fn remove_worktree(&self, path: &Path) -> Result<Removal, Error> {
        let (output, command) = self.output(["worktree".as_ref(), "remove".as_ref(), path.as_os_str()])?;
        if output.success() {
            return Ok(Removal::Removed);
        }
        if output.stderr.contains("modified or untracked files") {
            return Ok(Removal::KeptDirty);
        }
        Err(Error::git(format!("`{command}` failed: {}", output.stderr.trim())))
    }

    /// Delete a branch whose commits are safe elsewhere (merged, or none of its own).
    pub fn delete_branch(&self, branch: &str) -> Result<(), Error> {
        self.run(["branch", "-D", "--quiet", branch]).map(drop)
    }
}
