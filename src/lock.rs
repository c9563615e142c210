//! Locks between eden processes, as `flock(2)` on files in `.eden/locks/`: the kernel releases
//! one when its holder dies, however it dies, so a crash never leaves a lock held. The file also
//! says who holds it (pid and start time, run id), for messages only.
//!
//! - `BranchLock`, one per branch: a run holds it from before its worktree exists until its
//!   record is written, so two runs never work on one branch.
//! - `RepoLock`, one per repository: held around every git operation that changes what runs
//!   share — creating and removing worktrees, deleting branches, merging into a base — so that
//!   concurrent runs (separate eden processes) never interleave them.

use crate::error::Error;
use crate::process::ProcessStamp;
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// An exclusive flock on a lock file, with the holder written into it.
#[derive(Debug)]
struct Held {
    path: PathBuf,
    /// Holding it is the lock; closing it (drop, or the process dying) releases it.
    _file: Flock<File>,
}

/// What a lock file says about its holder (or its last holder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    pub(crate) process: ProcessStamp,
    pub(crate) run_id: String,
}

impl Holder {
    fn parse(text: &str) -> Option<Holder> {
        let mut lines = text.lines();
        let process = ProcessStamp::parse(lines.next()?)?;
        Some(Holder { process, run_id: lines.next().unwrap_or_default().trim().to_owned() })
    }
}

enum Attempt {
    Taken(Held, Option<Holder>),
    Busy(Option<Holder>),
}

impl Held {
    /// Try once to take the lock at `path`. On success the file names us; the previous holder
    /// (whose lock the kernel released) is returned for the "reclaimed" note.
    fn try_take(path: &Path, run_id: &str) -> std::io::Result<Attempt> {
        loop {
            let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
            let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(locked) => locked,
                Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => return Ok(Attempt::Busy(read_holder(&mut file))),
                Err((_, errno)) => return Err(errno.into()),
            };
            // Whoever held it before may have removed the file as they let go: a lock on an
            // unlinked file locks nothing. Open again until the file we hold is the one there.
            if !same_file(&file, path) {
                continue;
            }
            let previous = read_holder(&mut file);
            file.set_len(0)?;
            file.rewind()?;
            writeln!(file, "{}\n{run_id}", ProcessStamp::current().to_text())?;
            return Ok(Attempt::Taken(Held { path: path.to_owned(), _file: file }, previous));
        }
    }
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    Holder::parse(&text)
}

fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(held), Ok(there)) => held.dev() == there.dev() && held.ino() == there.ino(),
        _ => false,
    }
}

/// One run per branch: `.eden/locks/<branch-slug>.lock`.
#[derive(Debug)]
pub struct BranchLock {
    held: Held,
}

/// What happened while taking the lock, for the display.
#[derive(Debug)]
pub enum Taken {
    Fresh,
    /// The lock file was left by a run that died without releasing it (pid).
    ReclaimedFrom(u32),
}

impl BranchLock {
    pub fn acquire(locks_dir: &Path, slug: &str, branch: &str, run_id: &str) -> Result<(BranchLock, Taken), Error> {
        let path = locks_dir.join(format!("{slug}.lock"));
        let io_error = |err: std::io::Error| Error::git(format!("cannot take the lock `{}`: {err}", path.display()));
        fs_err::create_dir_all(locks_dir).map_err(io_error)?;
        // `eden clean` holds a branch's lock for a moment while it checks it: try a few times.
        let mut busy = None;
        for _ in 0..10 {
            match Held::try_take(&path, run_id).map_err(io_error)? {
                Attempt::Taken(held, previous) => {
                    let taken = match previous {
                        Some(previous) if previous.process.pid != std::process::id() => {
                            Taken::ReclaimedFrom(previous.process.pid)
                        }
                        _ => Taken::Fresh,
                    };
                    return Ok((BranchLock { held }, taken));
                }
                Attempt::Busy(holder) => busy = holder,
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let who =
            busy.map_or_else(String::new, |holder| format!(" (pid {}, run {})", holder.process.pid, holder.run_id));
        Err(Error::git(format!("branch `{branch}` is in use by another eden run{who}"))
            .with_hint("wait for that run to finish, or use another branch"))
    }

    /// Is the lock at `path` held by a live process right now? (`eden clean`.)
    pub(crate) fn is_held(path: &Path) -> bool {
        let Ok(file) = File::open(path) else { return false };
        matches!(Flock::lock(file, FlockArg::LockSharedNonblock), Err((_, nix::errno::Errno::EWOULDBLOCK)))
    }

    /// The process the kernel says holds the lock at `path` right now (`/proc/locks`, by the
    /// file's device and inode): the proof that a pid is the run's eden, which a lock file's
    /// or a record's own words are not.
    pub(crate) fn held_by(path: &Path) -> Option<u32> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        let (major, minor, inode) = (nix::sys::stat::major(meta.dev()), nix::sys::stat::minor(meta.dev()), meta.ino());
        let locks = std::fs::read_to_string("/proc/locks").ok()?;
        locks.lines().find_map(|line| {
            // `1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF` (a waiter's line has `->`).
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.get(1) != Some(&"FLOCK") || fields.contains(&"->") {
                return None;
            }
            let mut device = fields.get(5)?.split(':');
            let (file_major, file_minor) = (device.next()?, device.next()?);
            let file_inode: u64 = device.next()?.parse().ok()?;
            let same = u64::from_str_radix(file_major, 16).ok()? == major
                && u64::from_str_radix(file_minor, 16).ok()? == minor
                && file_inode == inode;
            same.then(|| fields.get(4)?.parse().ok()).flatten()
        })
    }

    /// Who holds the lock at `path`, if it is held right now.
    pub(crate) fn holder(path: &Path) -> Option<Holder> {
        if !Self::is_held(path) {
            return None;
        }
        Holder::parse(&std::fs::read_to_string(path).ok()?)
    }
}

impl Drop for BranchLock {
    fn drop(&mut self) {
        // Removed while still held, so nobody can take the old file in between (see `try_take`).
        let _ = std::fs::remove_file(&self.held.path);
    }
}

/// The repository lock: `.eden/locks/repository.lock`, held for the length of one shared git
/// operation (seconds at most). The file stays: removing it would let two processes lock
/// different files of the same name.
#[derive(Debug)]
pub(crate) struct RepoLock {
    _held: Held,
}

/// How long to wait for another eden process's git operation before giving up.
const REPO_LOCK_PATIENCE: Duration = Duration::from_secs(600);

impl RepoLock {
    /// Wait for the lock; `waiting` is told once if that takes more than a moment (with the
    /// holder, when known). `what` names the operation for the error if the wait is too long.
    pub(crate) fn acquire(
        path: &Path,
        run_id: &str,
        what: &str,
        waiting: &mut dyn FnMut(&str),
    ) -> Result<RepoLock, Error> {
        let io_error = |err: std::io::Error| {
            Error::git(format!("cannot take the repository lock `{}`: {err}", path.display()))
                .with_hint("eden needs to write in `.eden/locks/` of the repository")
        };
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).map_err(io_error)?;
        }
        let start = Instant::now();
        let mut told = false;
        loop {
            // Ctrl-C stops the wait (in a run's teardown, which Ctrl-C starts, a second one).
            if crate::process::stopping() {
                let signal = crate::process::signal_received().unwrap_or(crate::exit::Signal::INT);
                return Err(Error::interrupted(signal)
                    .with_hint(format!("stopped while waiting for the repository lock ({what})")));
            }
            let holder = match Held::try_take(path, run_id).map_err(io_error)? {
                Attempt::Taken(held, _) => return Ok(RepoLock { _held: held }),
                Attempt::Busy(holder) => holder,
            };
            let waited = start.elapsed();
            if !told && waited > Duration::from_secs(2) {
                told = true;
                let who = holder.as_ref().map_or_else(String::new, |h| format!(" (pid {})", h.process.pid));
                waiting(&format!("waiting for another eden process{who} to finish with the repository before: {what}"));
            }
            if waited > REPO_LOCK_PATIENCE {
                let who = holder.map_or_else(String::new, |h| format!(" by pid {}", h.process.pid));
                return Err(Error::git(format!(
                    "the repository lock `{}` has been held{who} for over {} minutes; cannot {what}",
                    path.display(),
                    REPO_LOCK_PATIENCE.as_secs() / 60
                ))
                .with_hint("another eden process is stuck in a git operation: check it with `ps`, or stop it"));
            }
            // Runs of one invocation queue here for every merge: a short poll hands the lock on
            // without a gap (a trying open and flock costs microseconds); a long wait backs off.
            std::thread::sleep(Duration::from_millis(if waited < Duration::from_secs(10) { 2 } else { 50 }));
        }
    }
}

impl RepoLock {
    /// Wait, reading only, while another eden process holds the lock (a shared git operation
    /// under way, a merge into a checkout most often), at most `patience`. Returns whether it
    /// was held at all: a caller that saw a transient state looks again only then.
    pub(crate) fn wait_while_held(path: &Path, patience: Duration) -> bool {
        let start = Instant::now();
        let mut held = false;
        while BranchLock::is_held(path) && start.elapsed() < patience {
            held = true;
            std::thread::sleep(Duration::from_millis(5));
        }
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_branch_lock_refuses_a_second_holder_and_names_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let (first, taken) = BranchLock::acquire(dir.path(), "b", "b", "run-1").unwrap();
        assert!(matches!(taken, Taken::Fresh));
        assert!(BranchLock::is_held(&dir.path().join("b.lock")));
        let error = BranchLock::acquire(dir.path(), "b", "b", "run-2").unwrap_err();
        assert_eq!(
            error.message,
            format!("branch `b` is in use by another eden run (pid {}, run run-1)", std::process::id())
        );
        drop(first);
        assert!(!dir.path().join("b.lock").exists(), "released and removed");
        assert!(!BranchLock::is_held(&dir.path().join("b.lock")));
        assert!(BranchLock::acquire(dir.path(), "b", "b", "run-2").is_ok());
    }

    #[test]
    fn a_lock_file_nobody_holds_is_reclaimed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.lock"), "4242:17\nold-run\n").unwrap();
        assert!(!BranchLock::is_held(&dir.path().join("b.lock")));
        let (_lock, taken) = BranchLock::acquire(dir.path(), "b", "b", "run-1").unwrap();
        assert!(matches!(taken, Taken::ReclaimedFrom(4242)));
    }

    #[test]
    fn the_repository_lock_waits_for_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("repository.lock");
        let first = RepoLock::acquire(&path, "run-1", "test", &mut |_| {}).unwrap();
        let released = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = released.clone();
        let waiter = std::thread::spawn(move || {
            let _second = RepoLock::acquire(&path, "run-2", "test", &mut |_| {}).unwrap();
            assert!(flag.load(std::sync::atomic::Ordering::SeqCst), "taken only after the first let go");
        });
        std::thread::sleep(Duration::from_millis(100));
        released.store(true, std::sync::atomic::Ordering::SeqCst);
        drop(first);
        waiter.join().unwrap();
    }
}
