//! Where agent commands run: on the host, inside one long-lived container per run, or in an
//! isolated copy under bubblewrap. The orchestrator only sees `SandboxHandle`: turn a command
//! into one that runs in the sandbox, reach the processes it started there when they must be
//! killed, bring the agent's work back, and clean up.
//!
//! The boundary: nothing a sandboxed agent writes is ever executed, or read as configuration,
//! by eden or by the person's git or agent CLI on the host. A sandbox has a repository of its
//! own and private agent state folders; what comes back is data (`repository`: checked git
//! objects, a checked patch; transcripts read through `safe_fs`).

pub mod agent_state;
pub mod artifacts;
pub mod bubble;
mod carry;
pub mod container;
pub mod engine;
pub mod firewall;
pub mod isolated;
mod ledger;
pub mod pod;
mod pod_rules;
mod pod_services;
pub mod reach;
pub mod remote_rules;
pub(crate) mod repository;
pub mod services;
mod unpack;

pub use container::{prune_abandoned, start as start_container};

use crate::error::Error;
use crate::process::{Inside, ProcessBuilder};
use std::path::PathBuf;

/// The hidden subcommand a sandbox's guard runs if eden dies: `__eden-salvage ENGINE [HOST]
/// NAME` for a container, `__eden-salvage kubernetes CONTEXT NAMESPACE REPO RUN NAME` for a pod.
pub const SALVAGE_SUBCOMMAND: &str = "__eden-salvage";

/// `eden __eden-salvage …` (a guard's cleanup): saves what the sandbox holds, removes it, and
/// returns the exit code.
pub fn run_salvage(args: &[std::ffi::OsString]) -> i32 {
    let Some((name, target)) = args.split_last() else { return 2 };
    let Some(name) = name.to_str() else { return 2 };
    if let Some(kube) = pod::Kube::from_args(target) {
        let (Some(repo), Some(run_id)) = (target.get(3), target.get(4).and_then(|id| id.to_str())) else { return 2 };
        return pod::salvage_and_delete(&kube, name, std::path::Path::new(repo), run_id).map_or(1, |_| 0);
    }
    let Some(target) = engine::Target::from_args(target) else { return 2 };
    container::salvage_and_remove(&target, name).map_or(1, |_| 0)
}

/// Where a run is, for the sandbox that will hold it: the same for every kind.
#[derive(Debug, Clone)]
pub struct RunSite {
    pub run_id: String,
    pub repo_root: PathBuf,
    /// The repository's common `.git` (its object stores).
    pub common_dir: PathBuf,
    /// The run's worktree on the host: the sandbox starts from its files, and its work lands there.
    pub worktree: PathBuf,
    pub branch: String,
    /// `.eden/tmp/<run-id>`: eden's scratch folder for the run.
    pub scratch: PathBuf,
    /// Where uncommitted work is saved as a patch (`.eden/patches`).
    pub patches: PathBuf,
    /// The repository lock, held while work is fetched back into the shared repository.
    pub repository_lock: PathBuf,
    /// The agent's private state folders.
    pub agent_state: Vec<agent_state::PrivateState>,
    /// The folder of the proxies that hold the agent's keys, which the sandbox is given (at
    /// `PROXY_INSIDE`, read-only).
    pub proxy: Option<PathBuf>,
    /// `sandbox.max_return`: the most one iteration may send back.
    pub max_return: u64,
}

/// The longest one of eden's own commands in a sandbox (seeding it, bringing work back, a
/// salvage) may take; then it is stopped, with everything it started.
pub const SANDBOX_STEP: std::time::Duration = std::time::Duration::from_secs(600);

/// The longest one call of an engine's or a cluster's client (`docker run`, `kubectl get`, …)
/// may take, on this machine or over a network.
pub const ENGINE_CALL: std::time::Duration = std::time::Duration::from_secs(300);

pub use crate::manifest::plan::DEFAULT_MAX_RETURN;

/// Where a container or an isolated sandbox sees the run's proxy folder.
pub const PROXY_INSIDE: &str = "/run/eden-proxy";

impl RunSite {
    /// The commit the run's worktree is at: where the sandbox's branch starts.
    fn base(&self) -> Result<String, Error> {
        crate::git::Git::new(&self.worktree)
            .resolve("HEAD")?
            .ok_or_else(|| Error::git(format!("the worktree `{}` has no commit", self.worktree.display())))
    }
}

/// A command ready to start on the host, and how to reach what it runs inside the sandbox.
pub struct Prepared {
    pub command: ProcessBuilder,
    /// Reaches the command's processes inside the sandbox (killing the host-side client of a
    /// `docker exec` leaves them running). `None` when the host process group is everything.
    pub inside: Option<Box<dyn Inside>>,
}

pub trait SandboxHandle: Send {
    /// `none`, `docker`, `podman`.
    fn kind(&self) -> &'static str;
    /// The container (engine, name, id, image), if there is one.
    fn container(&self) -> Option<crate::record::ContainerRecord>;
    fn prepare(&self, command: ProcessBuilder) -> Result<Prepared, Error>;
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
    /// The workspace's files `request` selects, copied into its folder (`artifacts`). Without a
    /// sandbox, the worktree on this machine.
    fn artifacts(&self, request: &artifacts::ArtifactRequest<'_>) -> Result<artifacts::Collected, Error> {
        artifacts::collect(&|command| command, request.worktree, request)
    }
    /// Remove the sandbox, bringing back what must come back first (its last commits, its
    /// uncommitted work as a patch). Idempotent. Returns a note for the display, if any.
    fn close(&mut self) -> Result<Option<String>, Error>;
}

/// No sandbox: commands run on the host as they are.
pub struct Host;

impl SandboxHandle for Host {
    fn kind(&self) -> &'static str {
        "none"
    }

    fn container(&self) -> Option<crate::record::ContainerRecord> {
        None
    }

    fn prepare(&self, command: ProcessBuilder) -> Result<Prepared, Error> {
        Ok(Prepared { command: command.contained(), inside: None })
    }

    fn close(&mut self) -> Result<Option<String>, Error> {
        Ok(None)
    }
}
