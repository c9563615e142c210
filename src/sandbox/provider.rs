//! What a sandbox kind is to the rest of eden. A kind lives in a folder of its own under
//! `src/sandbox/` and answers through two traits, found by the `registry`:
//!
//! - `Provider`, a kind bound to a run's `[sandbox]` plan: what must exist before anything is
//!   made (`preflight`), the running sandbox (`start` → `SandboxHandle`), what the agent can
//!   reach (`reach`), `eden doctor`'s findings for the plan, and what the kind can do (share
//!   this machine's files, let an interactive agent skip its permission prompts, …).
//! - `Kind`, the same kind without a plan: what this machine has for it (`eden doctor`), what
//!   earlier runs left of it (`eden clean`), a killed run's sandbox (`eden discard`), and the
//!   guard's salvage after eden died.
//!
//! Nothing outside a kind's folder tells the kinds apart: it asks these.

use super::{RunSite, SandboxHandle};
use crate::error::Error;
use crate::manifest::plan::{EngineHost, Plan};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// A kind bound to one run's `[sandbox]` plan.
pub(crate) trait Provider: Send + Sync {
    /// The `[sandbox] kind` it is (`docker` and `podman` by their engine), for messages.
    fn name(&self) -> &'static str;

    /// Does the agent run anywhere but on this machine, as the person (false only for `none`)?
    fn sandboxed(&self) -> bool {
        true
    }

    /// What must exist before anything is made: the engine and image, the runtime, the
    /// cluster and its permissions. Nothing is created. `holds_keys`: a step's key is held by
    /// eden's proxy, which the sandbox must be able to reach.
    fn preflight(&mut self, holds_keys: bool) -> Result<(), Error>;

    /// `preflight` for every place a run of this plan may be placed on (several runs at once).
    fn preflight_everywhere(&mut self) -> Result<(), Error> {
        self.preflight(false)
    }

    /// The places runs of this plan are spread over (`sandbox.host`), in order; empty when the
    /// kind places them itself or has one place.
    fn hosts(&self) -> Vec<String> {
        Vec::new()
    }

    /// A manifest that hands the sandbox a folder of this repository (which the sandbox keeps
    /// from the agent) is refused here. `repository`: its root, common `.git` and checkout.
    fn refuse_repository_mounts(&self, _repository: &[PathBuf]) -> Result<(), Error> {
        Ok(())
    }

    /// The running sandbox for a run (after `preflight`).
    fn start(&self, start: &Start<'_>) -> Result<Started, Error>;

    /// What the agent can read, connect to and do, in words (`--dry-run`, `eden doctor`).
    fn reach(&self) -> Reach;

    /// `eden doctor MANIFEST`'s findings for this plan (`host`: doctor's `--host`).
    fn doctor(&self, _plan: &Plan, _host: Option<&EngineHost>) -> Vec<Check> {
        Vec::new()
    }

    /// Must the steps' agent CLIs be installed on this machine (false when they run from the
    /// sandbox's image)?
    fn agents_on_this_machine(&self) -> bool {
        true
    }

    /// Where the folder of the proxies that hold the agent's keys (`dir` on this machine)
    /// appears to the agent.
    fn proxy_inside(&self, _dir: &Path) -> PathBuf {
        PathBuf::from(super::PROXY_INSIDE)
    }

    /// The folder the agent works in, as it sees it (sessions carried in are keyed to it).
    fn agent_cwd(&self, _run_id: &str, worktree: &Path) -> PathBuf {
        worktree.to_owned()
    }

    /// What `eden interactive` may do here: `Ok(true)` when the agent may skip its permission
    /// prompts (the sandbox is the boundary), `Ok(false)` when it asks as usual; an error when
    /// a terminal cannot be attached.
    fn interactive(&self) -> Result<bool, Error>;

    /// `eden pool up`: `size` idle sandboxes of this plan made ahead for the repository, each
    /// ending after `idle` unless a run claims it (after `preflight`).
    fn pool_up(&self, _pool: &PoolRequest<'_>) -> Result<PoolUp, Error> {
        Err(Error::usage(format!(
            "a warm pool is built for `docker`, `podman` and `kubernetes` sandboxes, not for `{}`: there is nothing to start ahead",
            self.name()
        ))
        .with_hint("give `eden pool up` a manifest whose `sandbox.kind` is `docker`, `podman` or `kubernetes`"))
    }

    /// The image the kind runs, which `eden image build --manifest` builds (`None`: the kind
    /// has none of its own to build).
    fn built_image(&self) -> Option<BuiltImage> {
        None
    }
}

/// What `eden pool up` asks for.
pub(crate) struct PoolRequest<'a> {
    pub(crate) layout: &'a crate::layout::Layout,
    pub(crate) size: u32,
    pub(crate) idle: std::time::Duration,
    /// A replacement is started behind each claim.
    pub(crate) refill: bool,
    /// The manifest, as given (for `eden pool status`).
    pub(crate) manifest: Option<String>,
    /// The branch the manifest's runs start from, where they make a worktree of their own: a
    /// kind may hold the repository at its tip in each member, made ahead.
    pub(crate) base: Option<String>,
}

/// What `eden pool up` did.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct PoolUp {
    /// The pool's key (a hash of what its members are made with).
    pub(crate) pool: String,
    pub(crate) engine: String,
    pub(crate) image: String,
    pub(crate) made: Vec<String>,
    /// Idle members ready for a claim now.
    pub(crate) idle: usize,
    /// The worktrees made ahead with them (`None`: the plan's runs make none of their own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) worktrees: Option<WorktreesAhead>,
}

/// `eden pool up`'s worktrees made ahead (`orchestrator::premade`).
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct WorktreesAhead {
    /// The branch runs start from, and its tip (abbreviated).
    pub(crate) base: String,
    pub(crate) commit: String,
    pub(crate) made: usize,
    pub(crate) ready: usize,
}

/// One pool of the repository, for `eden pool status`.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct PoolStatus {
    pub(crate) pool: String,
    pub(crate) engine: String,
    pub(crate) image: String,
    pub(crate) size: u32,
    pub(crate) manifest: Option<String>,
    pub(crate) members: Vec<PoolMember>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct PoolMember {
    pub(crate) name: String,
    /// `starting` (still being made), `idle`, `ended` (its idle time is up), or `claimed`.
    pub(crate) state: &'static str,
    /// The run that claimed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) run: Option<String>,
    /// When an idle member ends (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) idle_until: Option<String>,
}

/// What `eden image build --manifest` builds: with which engine, where, and its tag.
pub(crate) struct BuiltImage {
    pub(crate) engine: &'static str,
    pub(crate) hosts: Vec<String>,
    pub(crate) image: String,
}

/// What the agent can read, connect to and do, in words.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Reach {
    /// What it can read (and write, where it says so).
    pub(crate) reads: Vec<String>,
    /// Where it can connect.
    pub(crate) connects: String,
    /// What privileges it holds.
    pub(crate) privileges: String,
}

/// What `start` is given.
pub(crate) struct Start<'a> {
    pub(crate) site: &'a RunSite,
    /// The steps' agent programs (a sandbox on this machine that hides its folders binds them).
    pub(crate) programs: &'a [PathBuf],
}

/// A started sandbox, and what the run says of it.
pub(crate) struct Started {
    pub(crate) handle: Box<dyn SandboxHandle>,
    /// Said as warnings first (what an earlier run left, removed on the way).
    pub(crate) warnings: Vec<String>,
    /// Said as notes (why a warm pool's member was not claimed).
    pub(crate) notes: Vec<String>,
    /// The `SandboxStarted` event, for a sandbox that has one.
    pub(crate) announce: Option<Announce>,
}

impl Started {
    pub(crate) fn quietly(handle: Box<dyn SandboxHandle>) -> Started {
        Started { handle, warnings: Vec::new(), notes: Vec::new(), announce: None }
    }
}

/// What the `SandboxStarted` event says.
pub(crate) struct Announce {
    pub(crate) engine: crate::record::SandboxEngine,
    pub(crate) name: String,
    pub(crate) host: Option<String>,
    pub(crate) node: Option<String>,
    pub(crate) message: String,
}

/// One of `eden doctor`'s findings.
pub(crate) struct Check {
    pub(crate) name: String,
    pub(crate) found: Result<String, Missing>,
}

/// A finding's failure: what is wrong, the fix, and whether the manifest needs it.
pub(crate) struct Missing {
    pub(crate) detail: String,
    pub(crate) fix: String,
    pub(crate) required: bool,
}

impl Check {
    pub(crate) fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check { name: name.into(), found: Ok(detail.into()) }
    }

    pub(crate) fn missing(
        name: impl Into<String>,
        required: bool,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check { name: name.into(), found: Err(Missing { detail: detail.into(), fix: fix.into(), required }) }
    }
}

/// A kind without a plan.
pub(crate) trait Kind: Sync {
    /// `eden doctor`'s findings on what this machine has for the kind (`wanted`: the
    /// manifest's sandbox is of this kind; `named`: checks already made, not repeated).
    fn machine(&self, _host: Option<&EngineHost>, _wanted: bool, _named: &[String]) -> Vec<Check> {
        Vec::new()
    }

    /// What earlier runs left of this kind (`eden clean`). Changes nothing.
    fn leftovers(&self, _scope: &Scope<'_>) -> Leftovers {
        Leftovers::default()
    }

    /// A killed run's sandbox, as its record names it, saved and removed (`eden discard`).
    /// Returns what was removed, for the display.
    fn remove_of_run(&self, _repo: &Path, _sandbox: &Recorded) -> Result<Vec<String>, Error> {
        Ok(Vec::new())
    }

    /// `eden pool status`: the repository's warm pools of this kind.
    fn pools(&self, _layout: &crate::layout::Layout) -> Result<Vec<PoolStatus>, Error> {
        Ok(Vec::new())
    }

    /// `eden pool down`: every idle member of the repository's pools of this kind removed, and
    /// the pools forgotten. Returns what was removed.
    fn pool_down(&self, _layout: &crate::layout::Layout) -> Result<Vec<String>, Error> {
        Ok(Vec::new())
    }

    /// `eden __eden-pool-refill REPO KEY`: `None` when `KEY` is no pool of this kind's; else
    /// the exit code.
    fn pool_refill(&self, _args: &[std::ffi::OsString]) -> Option<i32> {
        None
    }

    /// A guard's cleanup after eden died (`eden __eden-salvage ARGS`): `None` when the
    /// arguments are not this kind's; else the exit code.
    fn salvage(&self, _args: &[std::ffi::OsString]) -> Option<i32> {
        None
    }
}

/// A sandbox as a record eden wrote names it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) run_id: String,
    /// `docker`, `podman`, `kubernetes` (the record's engine).
    pub(crate) engine: String,
    /// The engine's address or the pod's cluster.
    pub(crate) host: Option<String>,
    pub(crate) name: Option<String>,
}

/// Where `eden clean` looks.
pub(crate) struct Scope<'a> {
    /// `--all-repos`: of every repository, not just this one.
    pub(crate) all_repos: bool,
    /// `--force`.
    pub(crate) force: bool,
    /// The runs going right now.
    pub(crate) live: &'a HashSet<String>,
    /// The repository's folders (`None`: outside one).
    pub(crate) layout: Option<&'a crate::layout::Layout>,
    /// The sandboxes the records of runs that may have left one name (engines beyond the
    /// clients' defaults, pods).
    pub(crate) recorded: &'a [Recorded],
}

/// What `leftovers` found.
#[derive(Default)]
pub(crate) struct Leftovers {
    pub(crate) found: Vec<Leftover>,
    /// Problems that did not stop the look (an engine that does not answer).
    pub(crate) warnings: Vec<String>,
}

/// One thing left behind, and what to do with it.
pub(crate) struct Leftover {
    pub(crate) what: Left,
    pub(crate) name: String,
    pub(crate) verdict: Verdict,
    pub(crate) reason: String,
    /// Saves what it holds (if anything) and removes it.
    pub(crate) removal: Option<Removal>,
}

/// A removal to carry out later, under the repository lock.
#[derive(Clone)]
pub(crate) struct Removal(std::sync::Arc<dyn Fn() -> Result<(), Error> + Send + Sync>);

impl Removal {
    pub(crate) fn new(remove: impl Fn() -> Result<(), Error> + Send + Sync + 'static) -> Removal {
        Removal(std::sync::Arc::new(remove))
    }

    pub(crate) fn run(&self) -> Result<(), Error> {
        (self.0)()
    }
}

impl std::fmt::Debug for Removal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Removal")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Left {
    /// A running or stopped sandbox (a container, a pod).
    Sandbox,
    /// A sandbox's workspace, without its sandbox.
    Volume,
    /// An isolated copy of a worktree.
    Copy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Remove,
    Keep,
    /// Kept unless `--force` (it may hold work that never came back).
    Unsafe,
}

/// The first line a command prints (its version), or `None` when it does not run or fails.
pub(crate) fn first_line(command: crate::process::ProcessBuilder) -> Option<String> {
    let output = command.output().ok()?;
    if !output.success() {
        return None;
    }
    let text = if output.stdout.trim().is_empty() { &output.stderr } else { &output.stdout };
    // A version line's own full stop (`GitHub Copilot CLI 1.0.102.`) would run into what follows.
    text.lines().map(|line| line.trim().trim_end_matches('.')).find(|line| !line.is_empty()).map(str::to_owned)
}
