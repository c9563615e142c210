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
    /// `sandbox.max_return`.
    limit: u64,
    /// Bringing work back found more than `limit`: the sandbox's workspace is to be kept.
    over: std::sync::atomic::AtomicBool,
    /// A command of the run's ran in the sandbox: until then there is nothing to bring back.
    used: std::sync::atomic::AtomicBool,
}

impl Ledger {
    /// The run's ledger, its sandbox's branch starting at `base`.
    pub(crate) fn new(site: &RunSite, base: String) -> Ledger {
        Ledger {
            worktree: site.worktree.clone(),
            branch: site.branch.clone(),
            run_id: site.run_id.clone(),
            scratch: site.scratch.clone(),
            repository_lock: site.repository_lock.clone(),
            patches: site.patches.clone(),
            known: Mutex::new(vec![base]),
            limit: site.max_return,
            over: std::sync::atomic::AtomicBool::new(false),
            used: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// A command of the run's is about to run in the sandbox.
    pub(crate) fn note_used(&self) {
        self.used.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// `sandbox.max_return`: the most one iteration may send back.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// Did the sandbox send back more than `sandbox.max_return`? Then nothing of it came back
    /// and its workspace is kept (the work is there, and nowhere else).
    pub(crate) fn over_limit(&self) -> bool {
        self.over.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The run's worktree on the host (and the workspace's path in a container or pod).
    pub(crate) fn worktree(&self) -> &Path {
        &self.worktree
    }

    pub(crate) fn branch(&self) -> &str {
        &self.branch
    }

    /// eden's scratch folder for the run (`.eden/tmp/<run>`).
    pub(crate) fn scratch(&self) -> &Path {
        &self.scratch
    }

    fn known(&self) -> Vec<String> {
        self.known.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The branch's commits the host lacks, fetched as a checked bundle and checked out in the
    /// worktree. `reported_tip`: the tip the command's wrapper noted, when the host has it
    /// already there is nothing to ask. `shared_files`: the sandbox works in the host
    /// worktree's files (`expose_worktree`).
    pub(crate) fn sync(
        &self,
        channel: &dyn Channel,
        reported_tip: Option<&str>,
        shared_files: bool,
    ) -> Result<(), Error> {
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
            limit: self.limit,
        };
        let brought = repository::bring_commits(&back).inspect_err(|err| self.note_over(err))?;
        if let Returned::MovedTo(tip) = brought {
            self.known.lock().unwrap_or_else(|e| e.into_inner()).insert(0, tip);
        }
        Ok(())
    }

    /// The end of the run in the sandbox: its last commits, then what it left uncommitted,
    /// saved as `.eden/patches/<run>.patch` and applied to the worktree (unless the sandbox
    /// worked in the worktree's own files). If any of it fails, what the sandbox holds is
    /// saved first and the error says where. Returns a note for the display, if any.
    pub(crate) fn bring_home(&self, channel: &dyn Channel, shared_files: bool) -> Result<Option<String>, Error> {
        // Seeded and nothing run in it (a start cut short): nothing to bring back, no time lost.
        if !self.used.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(None);
        }
        let brought = self.sync(channel, None, shared_files).and_then(|()| match shared_files {
            true => Ok(None),
            false => self.bring_uncommitted(channel),
        });
        brought.map_err(|err| {
            // Too big to come back, it is too big to salvage: the sandbox keeps it.
            if self.over_limit() {
                return err;
            }
            let base = self.known().last().cloned().unwrap_or_default();
            let saved = repository::salvage(channel, &self.branch, &base, &self.patches, &self.run_id, self.limit);
            repository::salvaged_error(err, &saved)
        })
    }

    fn note_over(&self, err: &Error) {
        if err.reason() == Some(&crate::error::Reason::OverMaxReturn) {
            self.over.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    fn bring_uncommitted(&self, channel: &dyn Channel) -> Result<Option<String>, Error> {
        let tip = self.known()[0].clone();
        let patch = self.patches.join(format!("{}.patch", self.run_id));
        let files = repository::save_uncommitted(channel, &tip, &self.scratch, &patch, self.limit)
            .inspect_err(|err| self.note_over(err))?;
        if files == 0 {
            return Ok(None);
        }
        repository::apply_patch(&self.worktree, &patch, self.limit)?;
        Ok(Some(format!(
            "the agent left {files} file(s) uncommitted: saved as {} and applied to the worktree",
            patch.display()
        )))
    }
}
