//! Worktrees: where each run's agent works, under `.eden/worktrees/<branch-slug>`.

use super::Git;
use crate::error::Error;
use std::path::{Path, PathBuf};

/// The key under `branch.<name>` that says which run eden made a branch for.
const BRANCH_MARK: &str = "edenRun";

/// A branch name made into one path component: `eden/fix-login` → `eden-fix-login`.
pub(crate) fn slug(branch: &str) -> String {
    branch.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' }).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Removal {
    Removed,
    /// It has uncommitted changes and was left in place.
    KeptDirty,
    /// Whether it has uncommitted changes could not be told in the time given: left in place.
    NotChecked,
}

/// One entry of `git worktree list --porcelain`.
#[derive(Debug, Clone)]
pub(crate) struct WorktreeEntry {
    pub(crate) path: PathBuf,
    /// The checked-out branch; `None` when detached (or bare).
    pub(crate) branch: Option<String>,
    /// Registered, but its folder is gone: `git worktree prune` removes the registration.
    pub(crate) prunable: bool,
}

/// `git worktree list --porcelain`, parsed.
pub(crate) struct WorktreeList {
    pub(crate) entries: Vec<WorktreeEntry>,
}

/// A new worktree's files are written by one worker per core: git does so only past
/// `checkout.thresholdForParallelism` (100) files, so a small repository is as before; 50,000
/// files took 1.11 s instead of 1.28 s on two cores (`bench/warm.sh --big`).
const PARALLEL_CHECKOUT: [&str; 2] = ["-c", "checkout.workers=0"];

impl WorktreeList {
    /// Read the list. Another eden process may be adding a worktree right now (under the
    /// repository lock, which readers do not take): git then cannot read the half-made entry
    /// (`failed to read .git/worktrees/<name>/commondir`) and a moment later it can.
    pub(crate) fn read(git: &Git) -> Result<Self, Error> {
        let mut attempt = 0;
        let text = loop {
            match git.run(["worktree", "list", "--porcelain"]) {
                Err(err) if attempt < 10 && err.git_said().is_some_and(|said| said.contains("failed to read")) => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                result => break result?,
            }
        };
        let mut entries = Vec::new();
        for block in text.split("\n\n") {
            let mut entry = WorktreeEntry { path: PathBuf::new(), branch: None, prunable: false };
            for line in block.lines() {
                if let Some(path) = line.strip_prefix("worktree ") {
                    entry.path = PathBuf::from(path);
                } else if let Some(branch) = line.strip_prefix("branch refs/heads/") {
                    entry.branch = Some(branch.to_owned());
                } else if line == "prunable" || line.starts_with("prunable ") {
                    entry.prunable = true;
                }
            }
            if !entry.path.as_os_str().is_empty() {
                entries.push(entry);
            }
        }
        Ok(WorktreeList { entries })
    }

    /// The worktree that has `branch` checked out (one whose folder is gone does not count).
    pub(crate) fn find_branch(&self, branch: &str) -> Option<&Path> {
        self.entries
            .iter()
            .find(|entry| !entry.prunable && entry.branch.as_deref() == Some(branch))
            .map(|entry| entry.path.as_path())
    }
}

/// Lock files git leaves behind when one of its processes is killed mid-update (an agent's
/// `git commit` when eden is killed): the branch's ref lock, and the index and HEAD locks of the
/// worktree's own git folder. Only safe to remove when nothing of that run is alive any more.
pub(crate) fn leftover_locks(common_dir: &Path, branch: &str, worktree: &Path) -> Vec<PathBuf> {
    let mut locks = vec![common_dir.join("refs").join("heads").join(format!("{branch}.lock"))];
    let dot_git = worktree.join(".git");
    for entry in std::fs::read_dir(common_dir.join("worktrees")).into_iter().flatten().flatten() {
        // `gitdir` in a worktree's git folder names the worktree's `.git` file.
        let points_here = std::fs::read_to_string(entry.path().join("gitdir"))
            .is_ok_and(|gitdir| Path::new(gitdir.trim()) == dot_git);
        if points_here {
            locks.extend(["index.lock", "HEAD.lock"].map(|name| entry.path().join(name)));
        }
    }
    locks.retain(|lock| lock.exists());
    locks
}

impl Git {
    /// Forget worktrees whose folders are gone (a run killed while it made one, a folder deleted
    /// by hand), so their paths and branches can be used again.
    pub(crate) fn prune_worktrees(&self) -> Result<(), Error> {
        self.run(["worktree", "prune"]).map(drop)
    }

    /// Create a worktree at `path` on a new branch `branch` starting at `base`.
    pub(crate) fn add_worktree_new_branch(&self, path: &Path, branch: &str, base: &str) -> Result<(), Error> {
        self.add(&["-b".as_ref(), branch.as_ref(), path.as_os_str(), base.as_ref()])
    }

    /// Create a worktree at `path` for the existing `branch`.
    pub(crate) fn add_worktree(&self, path: &Path, branch: &str) -> Result<(), Error> {
        self.add(&[path.as_os_str(), branch.as_ref()])
    }

    /// Create a worktree at `path` with `HEAD` detached at `commit` (made ahead, for a run to
    /// claim: `orchestrator::premade`).
    pub(crate) fn add_worktree_detached(&self, path: &Path, commit: &str) -> Result<(), Error> {
        self.add(&["--detach".as_ref(), path.as_os_str(), commit.as_ref()])
    }

    /// `git worktree add --quiet ARGS…`, checking out with a worker per core.
    fn add(&self, args: &[&std::ffi::OsStr]) -> Result<(), Error> {
        let [config, workers] = PARALLEL_CHECKOUT.map(std::ffi::OsStr::new);
        let head = [config, workers, "worktree".as_ref(), "add".as_ref(), "--quiet".as_ref()];
        self.run(head.into_iter().chain(args.iter().copied())).map(drop)
    }

    /// Remove a clean worktree. git itself refuses when it has modified or untracked files, so
    /// this can never lose work: that refusal is `Ok(Removal::KeptDirty)`.
    pub(crate) fn remove_worktree(&self, path: &Path) -> Result<Removal, Error> {
        let (output, command) = self.output(["worktree".as_ref(), "remove".as_ref(), path.as_os_str()])?;
        if output.success() {
            return Ok(Removal::Removed);
        }
        if output.stderr.contains("modified or untracked files") {
            return Ok(Removal::KeptDirty);
        }
        Err(super::git_failure(&command, &output.stderr))
    }

    /// Remove a worktree within about `within`: its changes looked for (bounded; not told in
    /// time, it stays), then its folder moved to `trash` (a rename, on the same file system) and
    /// its registration pruned, and the files deleted by a process of their own that outlives
    /// eden (a stopped run answers at once; what a killed deletion leaves is `eden clean`'s).
    /// A worktree with submodules goes the usual way.
    pub(crate) fn remove_worktree_within(
        &self,
        path: &Path,
        trash: &Path,
        within: std::time::Duration,
    ) -> Result<Removal, Error> {
        if path.join(".gitmodules").exists() {
            return self.remove_worktree(path);
        }
        let status =
            Git::new(path).command(["status", "--porcelain", "--untracked-files=normal"]).timeout(within).output();
        let status = match status {
            Ok(output) if output.success() => output.stdout,
            Ok(output) => return Err(super::git_failure("git status", &output.stderr)),
            Err(err) if err.kind() == std::io::ErrorKind::TimedOut => return Ok(Removal::NotChecked),
            Err(err) => return Err(Error::git(format!("cannot run `git status`: {err}"))),
        };
        if !status.trim().is_empty() {
            return Ok(Removal::KeptDirty);
        }
        if let Some(parent) = trash.parent() {
            fs_err::create_dir_all(parent).map_err(|err| Error::git(err.to_string()))?;
        }
        if std::fs::rename(path, trash).is_err() {
            return self.remove_worktree(path);
        }
        self.prune_worktrees()?;
        let removal = crate::process::ProcessBuilder::new("rm").args(["-rf", "--"]).arg(trash).spawn_detached();
        if let Ok(mut child) = removal {
            // It reads nothing: its stdin closed, it goes on alone, spared by eden's sweep.
            drop(child.stdin.take());
            crate::process::contain::exempt(child.id());
        }
        Ok(Removal::Removed)
    }

    /// Delete a branch whose commits are safe elsewhere (merged, or none of its own), only if
    /// it is still at `tip`, the commit the caller found safe: a compare-and-delete, so a branch
    /// that moved since (work brought back late, a commit of the person's) is never lost.
    pub(crate) fn delete_branch(&self, branch: &str, tip: &str) -> Result<(), Error> {
        self.run(["update-ref", "-d", &format!("refs/heads/{branch}"), tip])?;
        // As `git branch -D` does: the branch's settings go with it (eden's mark among them).
        let _ = self.run(["config", "--remove-section", &format!("branch.{branch}")]);
        Ok(())
    }

    /// Mark `branch` as made by eden for run `run_id` (`branch.<name>.edenRun` in the
    /// repository's config): what eden may later merge, start from or delete as that run's is
    /// what carries this mark, never what a run record says. Retried: git refuses a config
    /// write while another holds its lock.
    pub(crate) fn mark_branch(&self, branch: &str, run_id: &str) -> Result<(), Error> {
        let key = format!("branch.{branch}.{BRANCH_MARK}");
        let mut last = None;
        for _ in 0..20 {
            match self.run(["config", "--add", &key, run_id]) {
                Ok(_) => return Ok(()),
                Err(err) => last = Some(err),
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        Err(last.expect("tried at least once"))
    }

    /// The runs eden made `branch` for, or carried it on in (empty: not eden's).
    pub(crate) fn marks(&self, branch: &str) -> Vec<String> {
        let key = format!("branch.{branch}.{BRANCH_MARK}");
        self.run(["config", "--get-all", &key])
            .map(|marks| marks.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// Was `branch` made by eden for run `run_id` (or carried on by it)?
    pub(crate) fn made_for(&self, branch: &str, run_id: &str) -> bool {
        self.marks(branch).iter().any(|mark| mark == run_id)
    }
}
