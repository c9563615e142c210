//! Where agent commands run: on the host, inside one long-lived container per run, or in an
//! isolated copy under bubblewrap. The orchestrator only sees `SandboxHandle`: turn a command
//! into one that runs in the sandbox, reach the processes it started there when they must be
//! killed, bring the agent's work back, and clean up.
//!
//! The boundary: nothing a sandboxed agent writes is ever executed, or read as configuration,
//! by eden or by the person's git or agent CLI on the host. A sandbox has a repository of its
//! own and private agent state folders; what comes back is data (`repository`: checked git
//! objects, a checked patch; transcripts read through `safe_fs`).

pub(crate) mod agent_state;
pub(crate) mod artifacts;
mod carry;
mod container;
pub(crate) mod door;
pub(crate) mod engine;
pub(crate) mod firewall;
mod handle;
mod isolated;
mod ledger;
mod none;
pub(crate) mod pack;
mod pod;
pub(crate) mod provider;
pub(crate) mod reach;
pub(crate) mod registry;
pub(crate) mod remote_rules;
pub(crate) mod repository;
pub(crate) mod services;
mod unpack;

pub(crate) use handle::{Prepared, RunSite, SandboxHandle};
pub(crate) use none::Host;
pub(crate) use provider::Provider;
pub(crate) use registry::{provider, run_salvage};

/// The hidden subcommand a sandbox's guard runs if eden dies: `__eden-salvage ENGINE [HOST]
/// NAME` for a container, `__eden-salvage kubernetes CONTEXT NAMESPACE REPO RUN NAME` for a pod.
pub(crate) const SALVAGE_SUBCOMMAND: &str = "__eden-salvage";

/// The hidden subcommand that tops a warm pool up behind a claim: `__eden-pool-refill REPO KEY`
/// (`KEY`: a sandbox pool's, or `worktrees` for the worktrees made ahead).
pub(crate) const POOL_REFILL_SUBCOMMAND: &str = "__eden-pool-refill";

/// How long after a claim its refill starts: the run that claimed sets up and starts its agent
/// first, undisturbed.
const REFILL_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// After a claim: a detached `eden __eden-pool-refill REPO KEY` tops the pool up.
pub(crate) fn refill_behind(repo: &std::path::Path, key: &str) {
    let Ok(eden) = std::env::current_exe() else { return };
    let refill = crate::process::ProcessBuilder::new(eden).arg(POOL_REFILL_SUBCOMMAND).arg(repo).arg(key);
    let _ = refill.spawn_detached();
}

/// A refill's body: alone (with another refill holding `lock`, nothing to do), `REFILL_AFTER`
/// behind the claim, then `top_up`. Returns the exit code.
pub(crate) fn refill_alone(lock: &std::path::Path, top_up: impl FnOnce() -> Result<(), crate::error::Error>) -> i32 {
    let Ok(file) = std::fs::File::create(lock) else { return 1 };
    let Ok(_held) = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) else { return 0 };
    std::thread::sleep(REFILL_AFTER);
    top_up().map_or(1, |()| 0)
}

/// The longest one of eden's own commands in a sandbox (seeding it, bringing work back, a
/// salvage) may take; then it is stopped, with everything it started.
pub(crate) const SANDBOX_STEP: std::time::Duration = std::time::Duration::from_secs(600);

/// The longest one call of an engine's or a cluster's client (`docker run`, `kubectl get`, …)
/// may take, on this machine or over a network.
pub(crate) const ENGINE_CALL: std::time::Duration = std::time::Duration::from_secs(300);

pub(crate) use crate::manifest::plan::DEFAULT_MAX_RETURN;

/// Where a container or an isolated sandbox sees the run's proxy folder.
pub(crate) const PROXY_INSIDE: &str = "/run/eden-proxy";
