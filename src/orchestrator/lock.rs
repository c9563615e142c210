//! One run per branch: `.eden/locks/<branch-slug>.lock` holds the owner's pid. A lock whose
//! owner is no longer alive is stale and reclaimed; a live one refuses the run.

use crate::error::Error;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct BranchLock {
    path: PathBuf,
}

/// What happened while taking the lock, for the display.
pub enum Taken {
    Fresh,
    ReclaimedFrom(i32),
}

impl BranchLock {
    pub fn acquire(locks_dir: &Path, slug: &str, branch: &str, run_id: &str) -> Result<(BranchLock, Taken), Error> {
        let path = locks_dir.join(format!("{slug}.lock"));
        let io_error = |err: std::io::Error| Error::git(format!("cannot write the lock `{}`: {err}", path.display()));
        fs_err::create_dir_all(locks_dir).map_err(io_error)?;
        let mut taken = Taken::Fresh;
        for _ in 0..3 {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    writeln!(file, "{}\n{run_id}", std::process::id()).map_err(io_error)?;
                    return Ok((BranchLock { path }, taken));
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                    let owner = std::fs::read_to_string(&path).ok();
                    let pid = owner.as_deref().and_then(|text| text.lines().next()?.trim().parse::<i32>().ok());
                    match pid {
                        Some(pid) if is_alive(pid) => {
                            return Err(Error::git(format!(
                                "branch `{branch}` is in use by another eden run (pid {pid})"
                            ))
                            .with_hint(format!(
                                "wait for that run to finish; if pid {pid} is not eden, delete `{}`",
                                path.display()
                            )));
                        }
                        _ => {
                            // Dead owner (or unreadable lock): stale. Remove and try again.
                            let _ = std::fs::remove_file(&path);
                            taken = Taken::ReclaimedFrom(pid.unwrap_or(0));
                        }
                    }
                }
                Err(err) => return Err(io_error(err)),
            }
        }
        Err(Error::git(format!("cannot take the lock `{}`: it keeps reappearing", path.display())))
    }
}

fn is_alive(pid: i32) -> bool {
    pid > 0 && !matches!(kill(Pid::from_raw(pid), None), Err(nix::errno::Errno::ESRCH))
}

impl Drop for BranchLock {
    fn drop(&mut self) {
        // Remove only our own lock.
        let ours =
            std::fs::read_to_string(&self.path).ok().and_then(|text| text.lines().next()?.trim().parse::<u32>().ok())
                == Some(std::process::id());
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
