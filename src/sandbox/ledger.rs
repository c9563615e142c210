//! What the host knows of a sandbox's own repository, and the steps that bring its work home
//! through the sandbox's channel: the same for an isolated copy, a container and a pod. After
//! each iteration the branch's new commits (`sync`); at the end the last commits and what the
//! agent left uncommitted (`bring_home`), and if that fails, what the sandbox holds is saved
//! under `.eden/patches/` before it goes.

use super::repository::{self, Channel, CommitsBack, Returned};
use super::RunSite;
use crate::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub(crate) struct Ledger {
    worktree: PathBuf,
    branch: String,
    run_id: String,
    scratch: PathBuf,
    repository_lock: PathBuf,
    patches: PathBuf,
    /// Commits the host has that the sandbox's branch grew from: the start, then each one
    /// fetched, newest first.
    known: Mutex<Vec<String>>,
}

impl Ledger {
    /// The run's ledger, its sandbox's branch starting at `base`.
    pub fn new(site: &RunSite, base: String) -> Ledger {
        Ledger {
            worktree: site.worktree.clone(),
            branch: site.branch.clone(),
            run_id: site.run_id.clone(),
            scratch: site.scratch.clone(),
            repository_lock: site.repository_lock.clone(),
            patches: site.patches.clone(),
            known: Mutex::new(vec![base]),
        }
    }

    /// The run's worktree on the host (and the workspace's path in a container or pod).
    pub fn worktree(&self) -> &Path {
        &self.worktree
    }

    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// eden's scratch folder for the run (`.eden/tmp/<run>`).
    pub fn scratch(&self) -> &Path {
        &self.scratch
    }

    fn known(&self) -> Vec<String> {
        self.known.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The branch's commits the host lacks, fetched as a checked bundle and checked out in the
    /// worktree. `reported_tip`: the tip the command's wrapper noted, when the host has it
    /// already there is nothing to ask. `shared_files`: the sandbox works in the host
    /// worktree's files (`expose_worktree`).
    pub fn sync(&self, channel: &dyn Channel, reported_tip: Option<&str>, shared_files: bool) -> Result<(), Error> {
        let known = self.known();
        if reported_tip.is_some_and(|tip| known.first().map(String::as_str) == Some(tip)) {
            return Ok(());
        }
        let back = CommitsBack {
            channel,
            host_worktree: &self.worktree,
            branch: &self.branch,
            known: &known,
            scratch: &self.scratch,
            repository_lock: &self.repository_lock,
            run_id: &self.run_id,
            shared_files,
        };
        if let Returned::MovedTo(tip) = repository::bring_commits(&back)? {
            self.known.lock().unwrap_or_else(|e| e.into_inner()).insert(0, tip);
        }
        Ok(())
    }

    /// The end of the run in the sandbox: its last commits, then what it left uncommitted,
    /// saved as `.eden/patches/<run>.patch` and applied to the worktree (unless the sandbox
    /// worked in the worktree's own files). If any of it fails, what the sandbox holds is
    /// saved first and the error says where. Returns a note for the display, if any.
    pub fn bring_home(&self, channel: &dyn Channel, shared_files: bool) -> Result<Option<String>, Error> {
        let brought = self.sync(channel, None, shared_files).and_then(|()| match shared_files {
            true => Ok(None),
            false => self.bring_uncommitted(channel),
        });
        brought.map_err(|err| {
            let base = self.known().last().cloned().unwrap_or_default();
            let saved = repository::salvage(channel, &self.branch, &base, &self.patches, &self.run_id);
            repository::salvaged_error(err, &saved)
        })
    }

    fn bring_uncommitted(&self, channel: &dyn Channel) -> Result<Option<String>, Error> {
        let tip = self.known()[0].clone();
        let patch = self.patches.join(format!("{}.patch", self.run_id));
        let files = repository::save_uncommitted(channel, &tip, &self.scratch, &patch)?;
        if files == 0 {
            return Ok(None);
        }
        repository::apply_patch(&self.worktree, &patch)?;
        Ok(Some(format!(
            "the agent left {files} file(s) uncommitted: saved as {} and applied to the worktree",
            patch.display()
        )))
    }
}
