//! `isolated`: the agent works in a private copy of the worktree outside the repository, under
//! bubblewrap — the whole system read-only, only the copy (and a private `TMPDIR`, and its
//! private state folders) writable, optionally without network. It cannot touch the host
//! repository or other worktrees.
//!
//! The copy is a repository of its own, seeded like a container's workspace
//! (`repository::seed`; the host's object stores, readable anyway, are its alternates). The host
//! never runs git in it: every git command that reads the copy runs inside bubblewrap too, and
//! the host only receives a checked bundle after each iteration and a checked patch at the end.
//! If bringing work back fails, what the copy holds is saved under `.eden/patches/` first.

use super::ledger::Ledger;
use super::repository::{self, Channel};
use super::{Prepared, RunSite, SandboxHandle};
use crate::error::Error;
use crate::process::ProcessBuilder;
use std::path::{Path, PathBuf};

/// Written beside the copy (`eden-isolated-<run>.json`, where the agent cannot write): whose
/// copy this is, so `eden clean` can tell a live run's copy from an abandoned one, and which
/// repository its work belongs to.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Owner {
    pub run_id: String,
    pub repo: PathBuf,
    pub branch: String,
    /// The commit the copy started from.
    pub base: String,
    pub process: crate::process::ProcessStamp,
}

impl Owner {
    pub fn read(run_id: &str) -> Option<Owner> {
        serde_json::from_str(&std::fs::read_to_string(crate::layout::isolated_copy(run_id).owner).ok()?).ok()
    }
}

/// bubblewrap around a command: the whole system read-only, the copy, its `TMPDIR` and the
/// private state folders writable, the copy the working directory.
struct Bubble {
    copy: PathBuf,
    tmp: PathBuf,
    writable: Vec<PathBuf>,
    network: bool,
}

impl Bubble {
    fn wrap(&self, command: ProcessBuilder, network: bool) -> ProcessBuilder {
        // The agent works in the copy: its directory moves there, everything else stays.
        let cwd = command.get_cwd().map_or_else(|| self.copy.clone(), Path::to_path_buf);
        let mut wrapped = ProcessBuilder::new("bwrap")
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .arg("--bind")
            .arg(&self.copy)
            .arg(&self.copy)
            .arg("--bind")
            .arg(&self.tmp)
            .arg(&self.tmp);
        for folder in &self.writable {
            wrapped = wrapped.arg("--bind").arg(folder).arg(folder);
        }
        // A host name of its own too (its own UTS namespace): what runs inside is told apart.
        wrapped = wrapped.args(["--unshare-pid", "--unshare-uts", "--die-with-parent"]);
        if !network {
            wrapped = wrapped.arg("--unshare-net");
        }
        wrapped = wrapped
            .arg("--chdir")
            .arg(&cwd)
            .arg("--")
            .arg(command.program())
            .args(command.get_args())
            .cwd(&cwd)
            .env("TMPDIR", &self.tmp);
        for key in crate::git::GIT_ENV_TO_REMOVE {
            wrapped = wrapped.env_remove(key);
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
    fn inside(&self, command: ProcessBuilder) -> ProcessBuilder {
        // eden's own scripts need no network.
        self.wrap(command, false)
    }

    fn workspace(&self) -> &Path {
        &self.copy
    }
}

pub struct Isolated {
    bubble: Bubble,
    ledger: Ledger,
    owner: PathBuf,
    state_env: Vec<(&'static str, PathBuf)>,
    closed: bool,
}

/// The run's isolated copy, seeded; with network unless `network` is false.
pub fn start(site: &RunSite, network: bool) -> Result<Box<dyn SandboxHandle>, Error> {
    if which::which("bwrap").is_err() {
        return Err(Error::sandbox("sandbox kind `isolated` needs bubblewrap (`bwrap`), which is not installed")
            .with_hint("install it (Debian: `apt-get install bubblewrap`), or use `docker` or `podman`"));
    }
    let paths = crate::layout::isolated_copy(&site.run_id);
    let base = site.base()?;
    let isolated = Isolated {
        bubble: Bubble {
            copy: paths.copy.clone(),
            tmp: paths.tmp.clone(),
            writable: site.agent_state.iter().map(|state| state.folder.clone()).collect(),
            network,
        },
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
    };
    // From here on the handle removes what was made, whatever fails.
    let made = serde_json::to_string(&owner)
        .map_err(std::io::Error::other)
        .and_then(|json| fs_err::write(&paths.owner, json))
        .and_then(|()| fs_err::create_dir(&paths.copy))
        .and_then(|()| fs_err::create_dir(&paths.tmp))
        .map_err(|err| Error::sandbox(format!("cannot make the isolated copy: {err}")));
    let mut handle = Box::new(isolated);
    if let Err(err) = made {
        handle.remove();
        return Err(err);
    }
    let alternates: Vec<String> =
        repository::object_stores(&site.common_dir).iter().map(|store| store.display().to_string()).collect();
    let seed = repository::SeedRequest {
        host_worktree: &site.worktree,
        branch: &site.branch,
        scratch: &site.scratch,
        alternates: &alternates,
        separate_git_dir: None,
    };
    if let Err(err) = repository::seed(&handle.bubble, &seed) {
        handle.remove();
        return Err(err);
    }
    Ok(handle)
}

impl Isolated {
    fn remove(&mut self) {
        self.closed = true;
        let _ = crate::safe_fs::remove_tree(&self.bubble.copy);
        let _ = crate::safe_fs::remove_tree(&self.bubble.tmp);
        let _ = crate::safe_fs::remove_tree(self.ledger.scratch());
        let _ = std::fs::remove_file(&self.owner);
    }
}

impl SandboxHandle for Isolated {
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
        Ok(Prepared { command: self.bubble.wrap(command, self.bubble.network).stdin(stdin), inside: None })
    }

    fn sync(&self, reported_tip: Option<&str>) -> Result<Option<String>, Error> {
        self.ledger.sync(&self.bubble, reported_tip, false)?;
        Ok(None)
    }

    fn close(&mut self) -> Result<Option<String>, Error> {
        if self.closed {
            return Ok(None);
        }
        let brought = self.ledger.bring_home(&self.bubble, false);
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
/// Returns the files saved.
pub fn salvage_and_remove(run_id: &str, owner: &Owner) -> Vec<PathBuf> {
    let paths = crate::layout::isolated_copy(run_id);
    let bubble = Bubble { copy: paths.copy.clone(), tmp: paths.tmp.clone(), writable: Vec::new(), network: false };
    let patches = crate::layout::Layout::new(&owner.repo, owner.repo.join(".git")).patches();
    let saved = if paths.copy.is_dir() {
        let _ = fs_err::create_dir_all(&paths.tmp);
        repository::salvage(&bubble, &owner.branch, &owner.base, &patches, run_id)
    } else {
        Vec::new()
    };
    let _ = crate::safe_fs::remove_tree(&paths.copy);
    let _ = crate::safe_fs::remove_tree(&paths.tmp);
    let _ = std::fs::remove_file(&paths.owner);
    saved
}
