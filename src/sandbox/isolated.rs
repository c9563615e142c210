//! `isolated`: the agent works in a private clone of the worktree outside the repository, under
//! bubblewrap — the whole system read-only, only the clone (and a private `TMPDIR`) writable,
//! optionally without network. It cannot touch the host repository or other worktrees.
//! After each iteration its commits are fetched back into the worktree; at the end anything it
//! left uncommitted is saved as a patch under `.eden/patches/` and applied to the worktree. If
//! bringing work back fails, the clone is kept and its path reported.

use super::{Prepared, SandboxHandle};
use crate::error::Error;
use crate::git::Git;
use crate::process::ProcessBuilder;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub struct IsolatedRequest<'a> {
    pub run_id: &'a str,
    pub repo_root: &'a Path,
    pub worktree: &'a Path,
    pub network: bool,
    /// Where uncommitted work is saved as a patch (`.eden/patches`).
    pub patches: &'a Path,
    /// The repository lock, held while work is fetched back into the shared repository.
    pub repository_lock: &'a Path,
    /// `copy_to_worktree` entries (relative): git does not carry them into the clone.
    pub copied: &'a [PathBuf],
    /// The agent's configuration and transcript folders: writable inside, as in containers,
    /// so it can log in and keep its sessions.
    pub agent_state: &'a [PathBuf],
}

/// Written into the clone's `.git` (`eden-owner.json`): whose copy this is, so `eden clean` can
/// tell a live run's copy from an abandoned one, and which repository its work belongs to.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Owner {
    pub run_id: String,
    pub repo: PathBuf,
    pub process: crate::process::ProcessStamp,
}

impl Owner {
    fn path(copy: &Path) -> PathBuf {
        copy.join(".git").join("eden-owner.json")
    }

    pub fn read(copy: &Path) -> Option<Owner> {
        serde_json::from_str(&std::fs::read_to_string(Self::path(copy)).ok()?).ok()
    }
}

pub struct Isolated {
    copy: PathBuf,
    /// The agent's writable temporary folder (`TMPDIR`); the host's `/tmp` stays read-only.
    tmp: PathBuf,
    worktree: PathBuf,
    patches: PathBuf,
    repository_lock: PathBuf,
    run_id: String,
    network: bool,
    agent_state: Vec<PathBuf>,
    /// Set when work could not be brought back: the copy must survive.
    keep: AtomicBool,
    closed: bool,
}

pub fn start(request: &IsolatedRequest<'_>) -> Result<Box<dyn SandboxHandle>, Error> {
    if which::which("bwrap").is_err() {
        return Err(Error::sandbox("sandbox kind `isolated` needs bubblewrap (`bwrap`), which is not installed")
            .with_hint("install it (Debian: `apt-get install bubblewrap`), or use `docker` or `podman`"));
    }
    let (copy, tmp) = crate::layout::isolated_copy(request.run_id);
    // A real copy (no hardlinks): the agent may write anything in it, objects included.
    let clone = Git::new(request.repo_root).run([
        "clone".as_ref(),
        "--quiet".as_ref(),
        "--no-hardlinks".as_ref(),
        request.worktree.as_os_str(),
        copy.as_os_str(),
    ]);
    if let Err(err) = clone {
        let _ = fs_err::remove_dir_all(&copy);
        return Err(Error::sandbox(format!("cannot make the isolated copy: {}", err.message)));
    }
    let owner = Owner {
        run_id: request.run_id.to_owned(),
        repo: request.repo_root.to_owned(),
        process: crate::process::ProcessStamp::current(),
    };
    let written = serde_json::to_string(&owner)
        .map_err(std::io::Error::other)
        .and_then(|json| fs_err::write(Owner::path(&copy), json));
    if let Err(err) = written {
        let _ = fs_err::remove_dir_all(&copy);
        return Err(Error::sandbox(format!("cannot prepare the isolated copy: {err}")));
    }
    if let Err(err) = carry_copies(request.worktree, &copy, request.copied) {
        let _ = fs_err::remove_dir_all(&copy);
        return Err(Error::sandbox(format!("cannot put the `copy_to_worktree` files into the isolated copy: {err}")));
    }
    if let Err(err) = fs_err::create_dir_all(&tmp) {
        let _ = fs_err::remove_dir_all(&copy);
        return Err(Error::sandbox(format!("cannot make the isolated temporary folder: {err}")));
    }
    for state in request.agent_state {
        if let Err(err) = fs_err::create_dir_all(state) {
            let _ = fs_err::remove_dir_all(&copy);
            let _ = fs_err::remove_dir_all(&tmp);
            return Err(Error::sandbox(format!("cannot create the agent's folder `{}`: {err}", state.display()))
                .with_hint("set `sandbox.mount_agent_config = false` to run without it"));
        }
    }
    Ok(Box::new(Isolated {
        copy,
        tmp,
        worktree: request.worktree.to_path_buf(),
        patches: request.patches.to_owned(),
        repository_lock: request.repository_lock.to_owned(),
        run_id: request.run_id.to_owned(),
        network: request.network,
        agent_state: request.agent_state.to_vec(),
        keep: AtomicBool::new(false),
        closed: false,
    }))
}

/// Copy the `copy_to_worktree` files into the clone too, and keep them out of its git status, so
/// they are neither committed by the agent nor brought back as its uncommitted work.
fn carry_copies(worktree: &Path, copy: &Path, entries: &[PathBuf]) -> Result<(), String> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut exclude = String::from("\n# copy_to_worktree (eden)\n");
    for entry in entries {
        let dest = copy.join(entry);
        if let Some(parent) = dest.parent() {
            fs_err::create_dir_all(parent).map_err(|err| err.to_string())?;
        }
        let output = ProcessBuilder::new("cp")
            .args(["-a".as_ref(), "--".as_ref(), worktree.join(entry).as_os_str(), dest.as_os_str()])
            .output()
            .map_err(|err| err.to_string())?;
        if !output.success() {
            return Err(output.stderr.trim().to_owned());
        }
        exclude.push_str(&format!("/{}\n", entry.display()));
    }
    let info = copy.join(".git").join("info");
    fs_err::create_dir_all(&info).map_err(|err| err.to_string())?;
    let path = info.join("exclude");
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    fs_err::write(&path, existing + &exclude).map_err(|err| err.to_string())
}

impl Isolated {
    fn kept_error(&self, what: &str, err: &Error) -> Error {
        self.keep.store(true, Ordering::SeqCst);
        Error::sandbox(format!("{what}: {}; the agent's copy is kept at {}", err.message, self.copy.display()))
            .with_hint(format!(
                "bring the work over by hand: `git -C {} log`, `git -C {} diff`",
                self.copy.display(),
                self.copy.display()
            ))
    }

    /// Uncommitted changes in the copy, as a binary patch against its HEAD.
    fn uncommitted_patch(&self) -> Result<Option<String>, Error> {
        let copy = Git::new(&self.copy);
        if copy.dirty_paths()?.is_empty() {
            return Ok(None);
        }
        copy.run(["add", "-A"])?;
        let patch = copy.run(["diff", "--cached", "--binary", "HEAD"])?;
        Ok((!patch.trim().is_empty()).then(|| format!("{patch}\n")))
    }
}

impl SandboxHandle for Isolated {
    fn kind(&self) -> &'static str {
        "isolated"
    }

    fn container(&self) -> Option<crate::record::ContainerRecord> {
        None
    }

    fn prepare(&self, command: ProcessBuilder) -> Result<Prepared, Error> {
        // The agent works in the copy: its directory moves there, everything else stays.
        let cwd = match command.get_cwd() {
            Some(cwd) => match cwd.strip_prefix(&self.worktree) {
                Ok(inside) if inside.as_os_str().is_empty() => self.copy.clone(),
                Ok(inside) => self.copy.join(inside),
                Err(_) => cwd.to_path_buf(),
            },
            None => self.copy.clone(),
        };
        let mut wrapped = ProcessBuilder::new("bwrap")
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .arg("--bind")
            .arg(&self.copy)
            .arg(&self.copy)
            .arg("--bind")
            .arg(&self.tmp)
            .arg(&self.tmp);
        for state in &self.agent_state {
            wrapped = wrapped.arg("--bind").arg(state).arg(state);
        }
        wrapped = wrapped.args(["--unshare-pid", "--die-with-parent"]);
        if !self.network {
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
        for (key, value) in command.get_env() {
            wrapped = match value {
                Some(value) if key != "PWD" => wrapped.env(key, value),
                Some(_) => wrapped,
                None => wrapped.env_remove(key),
            };
        }
        let mut command = command;
        Ok(Prepared { command: wrapped.stdin(command.take_stdin()), inside: None })
    }

    fn sync(&self) -> Result<Option<String>, Error> {
        let worktree = Git::new(&self.worktree);
        // A fetch reads every worktree's metadata, which other runs add and remove under this
        // lock: without it, a worktree removed meanwhile fails the fetch.
        let shared = crate::lock::RepoLock::acquire(
            &self.repository_lock,
            &self.run_id,
            "fetching the agent's commits",
            &mut |_| {},
        )
        .map_err(|err| self.kept_error("cannot bring the agent's commits back", &err))?;
        let fetched = worktree
            .run(["fetch".as_ref(), "--quiet".as_ref(), self.copy.as_os_str(), OsString::from("HEAD").as_os_str()])
            .and_then(|_| worktree.run(["merge", "--ff-only", "--quiet", "FETCH_HEAD"]));
        drop(shared);
        match fetched {
            Ok(_) => Ok(None),
            Err(err) => Err(self.kept_error("cannot bring the agent's commits back", &err)),
        }
    }

    fn close(&mut self) -> Result<Option<String>, Error> {
        if self.closed {
            return Ok(None);
        }
        self.closed = true;
        let mut note = None;
        if !self.keep.load(Ordering::SeqCst) {
            match self.uncommitted_patch() {
                Ok(None) => {}
                Ok(Some(patch)) => {
                    let path = self.patches.join(format!("{}.patch", self.run_id));
                    let saved = fs_err::create_dir_all(&self.patches).and_then(|()| fs_err::write(&path, &patch));
                    if let Err(err) = saved {
                        return Err(self
                            .kept_error("cannot save the agent's uncommitted work", &Error::sandbox(err.to_string())));
                    }
                    let applied = Git::new(&self.worktree).run([
                        "apply".as_ref(),
                        "--whitespace=nowarn".as_ref(),
                        path.as_os_str(),
                    ]);
                    if let Err(err) = applied {
                        return Err(
                            self.kept_error(&format!("cannot apply `{}` to the worktree", path.display()), &err)
                        );
                    }
                    let files = patch.lines().filter(|l| l.starts_with("diff --git ")).count();
                    note = Some(format!(
                        "the agent left {files} file(s) uncommitted: saved as {} and applied to the worktree",
                        path.display()
                    ));
                }
                Err(err) => return Err(self.kept_error("cannot read the agent's uncommitted work", &err)),
            }
        }
        let _ = fs_err::remove_dir_all(&self.tmp);
        if !self.keep.load(Ordering::SeqCst) {
            let _ = fs_err::remove_dir_all(&self.copy);
        }
        Ok(note)
    }
}

impl Drop for Isolated {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
