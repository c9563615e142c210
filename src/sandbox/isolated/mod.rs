//! `isolated`: the agent works in a private copy of the worktree outside the repository, under
//! bubblewrap, in a world made for it (`bubble`): the system's program folders and a filtered
//! `/etc` read-only; its copy, a private `/tmp` and home, its private state folders writable;
//! no capability; no network but loopback unless `network = "host"`; only the environment it
//! is handed. It cannot touch or read the host repository, other worktrees, the person's home
//! or this machine's sockets.
//!
//! The copy is a repository of its own, seeded like a container's workspace
//! (`repository::seed`; the host's object stores, readable anyway, are its alternates). The host
//! never runs git in it: every git command that reads the copy runs inside bubblewrap too, and
//! the host only receives a checked bundle after each iteration and a checked patch at the end.
//! If bringing work back fails, what the copy holds is saved under `.eden/patches/` first.

pub(crate) mod bubble;

mod provider;

use crate::error::Error;
use crate::manifest::plan::IsolatedPlan;
use crate::manifest::schema::Network;
use crate::process::ProcessBuilder;
use crate::sandbox::ledger::Ledger;
use crate::sandbox::repository::{self, Channel};
use crate::sandbox::{Prepared, RunSite, SandboxHandle};
pub(crate) use provider::{Provider, KIND};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Written beside the copy (`eden-isolated-<run>.json`, where the agent cannot write): whose
/// copy this is, so `eden clean` can tell a live run's copy from an abandoned one, and which
/// repository its work belongs to.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Owner {
    pub(crate) run_id: String,
    pub(crate) repo: PathBuf,
    pub(crate) branch: String,
    /// The commit the copy started from.
    pub(crate) base: String,
    pub(crate) process: crate::process::ProcessStamp,
    /// `sandbox.max_return`: a salvage brings back no more than the run itself would have.
    #[serde(default = "default_max_return")]
    pub(crate) max_return: u64,
}

fn default_max_return() -> u64 {
    crate::sandbox::DEFAULT_MAX_RETURN
}

impl Owner {
    pub(crate) fn read(run_id: &str) -> Option<Owner> {
        serde_json::from_str(&std::fs::read_to_string(crate::layout::isolated_copy(run_id).owner).ok()?).ok()
    }
}

/// bubblewrap around a command: the sandbox `bubble::tree` builds, the copy the working
/// directory, an environment of its own.
struct Bubble {
    copy: PathBuf,
    /// bwrap's arguments that build the sandbox (all but the network and working directory).
    tree: Vec<OsString>,
    /// The agent may use this machine's network (`network = "host"`).
    network: bool,
}

impl Bubble {
    fn new(paths: &crate::layout::IsolatedPaths, view: &bubble::View<'_>, network: bool) -> Bubble {
        Bubble { copy: paths.copy.clone(), tree: bubble::tree(view), network }
    }

    fn wrap(&self, command: ProcessBuilder, network: bool) -> ProcessBuilder {
        // The agent works in the copy: its directory moves there, everything else stays.
        let cwd = command.get_cwd().map_or_else(|| self.copy.clone(), Path::to_path_buf);
        let mut wrapped = ProcessBuilder::new("bwrap").args(&self.tree);
        if !network {
            wrapped = wrapped.arg("--unshare-net");
        }
        // Nothing of eden's environment but `bubble::base_env`: the command's own on top.
        wrapped = wrapped
            .arg("--chdir")
            .arg(&cwd)
            .arg("--")
            .arg(command.program())
            .args(command.get_args())
            .cwd(&cwd)
            .env_clear();
        for (key, value) in bubble::base_env() {
            wrapped = wrapped.env(key, value);
        }
        for (key, value) in command.get_env() {
            wrapped = match value {
                Some(value) if key != "PWD" => wrapped.env(key, value),
                Some(_) => wrapped,
                None => wrapped.env_remove(key),
            };
        }
        wrapped
    }
}

impl Channel for Bubble {
    fn inside(&self, command: ProcessBuilder) -> Result<ProcessBuilder, Error> {
        // eden's own scripts need no network.
        Ok(self.wrap(command, false))
    }

    fn workspace(&self) -> &Path {
        &self.copy
    }
}

pub(crate) struct Isolated {
    bubble: Bubble,
    /// The host folder behind the private `/tmp` and home.
    private: PathBuf,
    ledger: Ledger,
    owner: PathBuf,
    state_env: Vec<(&'static str, PathBuf)>,
    closed: bool,
}

/// The run's isolated copy, seeded. `programs` are what the sandbox runs from this machine
/// besides eden (the steps' agents, as found on its `PATH`).
pub(crate) fn start(
    site: &RunSite,
    plan: &IsolatedPlan,
    programs: &[PathBuf],
) -> Result<Box<dyn SandboxHandle>, Error> {
    if which::which("bwrap").is_err() {
        return Err(Error::sandbox("sandbox kind `isolated` needs bubblewrap (`bwrap`), which is not installed")
            .with_hint("install it (Debian: `apt-get install bubblewrap`), or use `docker` or `podman`"));
    }
    let eden =
        std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
    let paths = crate::layout::isolated_copy(&site.run_id);
    let base = site.base()?;
    let stores = repository::object_stores(&site.common_dir);
    let writable: Vec<PathBuf> = site.agent_state.iter().map(|state| state.folder.clone()).collect();
    let mut exposed = vec![eden];
    exposed.extend(programs.iter().filter_map(|program| bubble::find_program(program)));
    let (tmp, home) = (paths.tmp.join("tmp"), paths.tmp.join("home"));
    let view = bubble::View {
        copy: &paths.copy,
        tmp: &tmp,
        home: &home,
        writable: &writable,
        read_only: &stores,
        programs: &exposed,
        proxy: site.proxy.as_deref(),
        mounts: &plan.mounts,
        host_network: plan.network == Network::Host,
    };
    let isolated = Isolated {
        bubble: Bubble::new(&paths, &view, plan.network == Network::Host),
        private: paths.tmp.clone(),
        ledger: Ledger::new(site, base.clone()),
        owner: paths.owner.clone(),
        state_env: site.agent_state.iter().map(|state| (state.var, state.value.clone())).collect(),
        closed: false,
    };
    let owner = Owner {
        run_id: site.run_id.clone(),
        repo: site.repo_root.clone(),
        branch: site.branch.clone(),
        base,
        process: crate::process::ProcessStamp::current(),
        max_return: site.max_return,
    };
    // From here on the handle removes what was made, whatever fails.
    let made = serde_json::to_string(&owner)
        .map_err(std::io::Error::other)
        .and_then(|json| fs_err::write(&paths.owner, json))
        .and_then(|()| fs_err::create_dir(&paths.copy))
        .and_then(|()| fs_err::create_dir(&paths.tmp))
        .and_then(|()| fs_err::create_dir(&tmp))
        .and_then(|()| fs_err::create_dir(&home))
        .map_err(|err| Error::sandbox(format!("cannot make the isolated copy: {err}")));
    let mut handle = Box::new(isolated);
    if let Err(err) = made {
        handle.remove();
        return Err(err);
    }
    let alternates: Vec<String> = stores.iter().map(|store| store.display().to_string()).collect();
    let seed = repository::SeedRequest {
        host_worktree: &site.worktree,
        branch: &site.branch,
        scratch: &site.scratch,
        alternates: &alternates,
        separate_git_dir: None,
        first: None,
        ahead: None,
    };
    if let Err(err) = repository::seed(&handle.bubble, &seed) {
        handle.remove();
        return Err(err);
    }
    Ok(handle)
}

impl Isolated {
    /// Work too big to come back (`sandbox.max_return`) stays in the copy: the error says where.
    fn kept_if_over(&self, err: Error) -> Error {
        if !self.ledger.over_limit() {
            return err;
        }
        err.with_hint(format!(
            "the agent's work is kept in its copy at {} (`eden clean --force` removes it); raise `sandbox.max_return` if its work is meant to be that big",
            self.bubble.copy.display()
        ))
    }

    fn remove(&mut self) {
        self.closed = true;
        let _ = crate::safe_fs::remove_tree(&self.bubble.copy);
        let _ = crate::safe_fs::remove_tree(&self.private);
        let _ = crate::safe_fs::remove_tree(self.ledger.scratch());
        let _ = std::fs::remove_file(&self.owner);
    }
}

impl SandboxHandle for Isolated {
    fn workspace_git(&self, args: &[&str]) -> Option<Result<crate::process::Output, Error>> {
        Some(crate::sandbox::repository::workspace_git(&self.bubble, args))
    }

    fn artifacts(
        &self,
        request: &crate::sandbox::artifacts::ArtifactRequest<'_>,
    ) -> Result<crate::sandbox::artifacts::Collected, Error> {
        // eden's executable is one of the programs the sandbox is given, at its own path.
        let eden =
            std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
        let channel: &dyn Channel = &self.bubble;
        let inside = crate::sandbox::artifacts::EdenInside {
            inside: &|command| channel.inside(command),
            eden: &eden,
            workspace: channel.workspace(),
        };
        crate::sandbox::artifacts::collect(&inside, request)
    }

    fn kind(&self) -> &'static str {
        "isolated"
    }

    fn container(&self) -> Option<crate::record::ContainerRecord> {
        None
    }

    fn state_env(&self) -> Vec<(&'static str, PathBuf)> {
        self.state_env.clone()
    }

    fn prepare(&self, command: ProcessBuilder) -> Result<Prepared, Error> {
        self.ledger.note_used();
        let mut command = command;
        // The working directory moves from the worktree to the same place in the copy.
        if let Some(cwd) = command.get_cwd().map(Path::to_path_buf) {
            if let Ok(inside) = cwd.strip_prefix(self.ledger.worktree()) {
                command = command.cwd(self.bubble.copy.join(inside));
            }
        }
        for (key, value) in &self.state_env {
            if !command.get_env().iter().any(|(set, _)| set == key) {
                command = command.env(key, value);
            }
        }
        let stdin = command.take_stdin();
        // Under eden's containment, as a command on the host: bubblewrap's own `--die-with-parent`
        // does not always hold once it has made a user namespace (its credentials change), and
        // a killed eden must leave nothing of the sandbox running.
        let command = self.bubble.wrap(command, self.bubble.network).stdin(stdin).contained();
        Ok(Prepared { command, inside: None })
    }

    fn sync(&self, reported_tip: Option<&str>) -> Result<Option<String>, Error> {
        self.ledger.sync(&self.bubble, reported_tip, false).map_err(|err| self.kept_if_over(err))?;
        Ok(None)
    }

    fn close(&mut self) -> Result<Option<String>, Error> {
        if self.closed {
            return Ok(None);
        }
        let brought = self.ledger.bring_home(&self.bubble, false);
        if self.ledger.over_limit() {
            // Work too big to come back stays in the copy, for the person to look at.
            self.closed = true;
            let _ = crate::safe_fs::remove_tree(&self.private);
            let _ = crate::safe_fs::remove_tree(self.ledger.scratch());
            return brought.map_err(|err| self.kept_if_over(err));
        }
        self.remove();
        brought
    }
}

impl Drop for Isolated {
    fn drop(&mut self) {
        if !self.closed {
            let _ = self.close();
        }
    }
}

/// What `eden clean` does with a killed run's copy: save its commits and uncommitted work
/// under the repository's `.eden/patches/` (run inside bubblewrap, as always), then remove it.
/// Returns the files saved. Work over the run's `max_return` is not brought back: the copy is
/// kept (an error says so) unless `force`.
pub(crate) fn salvage_and_remove(run_id: &str, owner: &Owner, force: bool) -> Result<Vec<PathBuf>, Error> {
    let paths = crate::layout::isolated_copy(run_id);
    let layout = crate::layout::Layout::new(&owner.repo, owner.repo.join(".git"));
    let (tmp, home) = (paths.tmp.join("tmp"), paths.tmp.join("home"));
    let stores = repository::object_stores(&layout.common_dir);
    let view = bubble::View {
        copy: &paths.copy,
        tmp: &tmp,
        home: &home,
        writable: &[],
        read_only: &stores,
        programs: &[],
        proxy: None,
        mounts: &[],
        host_network: false,
    };
    let bubble = Bubble::new(&paths, &view, false);
    let patches = layout.patches();
    let (saved, over) = if paths.copy.is_dir() {
        let _ = fs_err::create_dir_all(&tmp).and_then(|()| fs_err::create_dir_all(&home));
        repository::salvage_within(&bubble, &owner.branch, &owner.base, &patches, run_id, owner.max_return)
    } else {
        (Vec::new(), false)
    };
    if over && !force {
        return Err(Error::sandbox(format!(
            "the copy holds more than its run's `sandbox.max_return` ({}): kept at {}",
            crate::values::format_size(owner.max_return),
            paths.copy.display()
        ))
        .with_hint("take what you need from it, then `eden clean --force` removes it"));
    }
    let _ = crate::safe_fs::remove_tree(&paths.copy);
    let _ = crate::safe_fs::remove_tree(&paths.tmp);
    let _ = std::fs::remove_file(&paths.owner);
    Ok(saved)
}
