//! What the orchestrator sees of a sandbox (`SandboxHandle`) and where a run is (`RunSite`).

use super::{agent_state, artifacts};
use crate::error::Error;
use crate::process::{Inside, ProcessBuilder};
use std::path::PathBuf;

/// Where a run is, for the sandbox that will hold it: the same for every kind.
#[derive(Debug, Clone)]
pub(crate) struct RunSite {
    pub(crate) run_id: String,
    pub(crate) repo_root: PathBuf,
    /// The repository's common `.git` (its object stores).
    pub(crate) common_dir: PathBuf,
    /// The run's worktree on the host: the sandbox starts from its files, and its work lands there.
    pub(crate) worktree: PathBuf,
    pub(crate) branch: String,
    /// `.eden/tmp/<run-id>`: eden's scratch folder for the run.
    pub(crate) scratch: PathBuf,
    /// Where uncommitted work is saved as a patch (`.eden/patches`).
    pub(crate) patches: PathBuf,
    /// The repository lock, held while work is fetched back into the shared repository.
    pub(crate) repository_lock: PathBuf,
    /// The agent's private state folders.
    pub(crate) agent_state: Vec<agent_state::PrivateState>,
    /// The folder of the proxies that hold the agent's keys, which the sandbox is given (at
    /// `PROXY_INSIDE`, read-only).
    pub(crate) proxy: Option<PathBuf>,
    /// `sandbox.max_return`: the most one iteration may send back.
    pub(crate) max_return: u64,
}

impl RunSite {
    /// The commit the run's worktree is at: where the sandbox's branch starts.
    pub(super) fn base(&self) -> Result<String, Error> {
        crate::git::Git::new(&self.worktree)
            .resolve("HEAD")?
            .ok_or_else(|| Error::git(format!("the worktree `{}` has no commit", self.worktree.display())))
    }
}

/// A command ready to start on the host, and how to reach what it runs inside the sandbox.
pub(crate) struct Prepared {
    pub(crate) command: ProcessBuilder,
    /// Reaches the command's processes inside the sandbox (killing the host-side client of a
    /// `docker exec` leaves them running). `None` when the host process group is everything.
    pub(crate) inside: Option<Box<dyn Inside>>,
}

pub(crate) trait SandboxHandle: Send {
    /// `none`, `docker`, `podman`.
    fn kind(&self) -> &'static str;
    /// The container (engine, name, id, image), if there is one.
    fn container(&self) -> Option<crate::record::ContainerRecord>;
    fn prepare(&self, command: ProcessBuilder) -> Result<Prepared, Error>;
    /// How long each step of its start took (`claim` or `start`, `workspace`, `environment`,
    /// `seed`, `rules`) and when it ended, for the run's timings.
    fn timings(&self) -> Vec<(&'static str, std::time::Duration, std::time::Instant)> {
        Vec::new()
    }
    /// The variables that point the agent at its private state folders in this sandbox (set on
    /// the agent's command, so its transcripts are found there).
    fn state_env(&self) -> Vec<(&'static str, std::path::PathBuf)> {
        Vec::new()
    }
    /// After each iteration: bring the agent's commits into the host worktree (the sandbox has
    /// a repository of its own). `reported_tip` is the branch tip the command's wrapper noted
    /// as it ended, if it did: when the host has it already there is nothing to ask. Returns a
    /// note for the display, if any.
    fn sync(&self, _reported_tip: Option<&str>) -> Result<Option<String>, Error> {
        Ok(None)
    }
    /// Before a transcript is looked for: what the agent wrote in its state folders, where the
    /// host reads it (a remote engine's, copied back; elsewhere the folders are shared).
    fn bring_state_back(&self) -> Result<(), Error> {
        Ok(())
    }
    /// After a command in the sandbox failed (with `exit_code`): is the sandbox itself still
    /// there? An error here (exit 6) replaces the command's own failure, which was only a symptom.
    fn check_alive(&self, _exit_code: Option<i32>) -> Result<(), Error> {
        Ok(())
    }
    /// `git ARGS` in the sandbox's own repository, with eden's configuration (`None` without a
    /// sandbox: ask the worktree on this machine).
    fn workspace_git(&self, _args: &[&str]) -> Option<Result<crate::process::Output, Error>> {
        None
    }
    /// The workspace's files `request` selects, copied into its folder (`artifacts`). Without a
    /// sandbox, the worktree on this machine.
    fn artifacts(&self, request: &artifacts::ArtifactRequest<'_>) -> Result<artifacts::Collected, Error> {
        let eden =
            std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
        let inside = artifacts::EdenInside { inside: &|command| Ok(command), eden: &eden, workspace: request.worktree };
        artifacts::collect(&inside, request)
    }
    /// Remove the sandbox, bringing back what must come back first (its last commits, its
    /// uncommitted work as a patch). Idempotent. Returns a note for the display, if any.
    fn close(&mut self) -> Result<Option<String>, Error>;
}
