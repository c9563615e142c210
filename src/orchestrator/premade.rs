//! Worktrees made ahead (`eden pool up`): detached checkouts of the commit runs start from,
//! under `.eden/pool/worktrees/`, which a run claims instead of checking out every file — a
//! rename (`git worktree move` to the run's path) and a ref update (the run's branch made at
//! that commit, the worktree's `HEAD` pointed at it). Checking out 50,000 files takes seconds;
//! this takes milliseconds. Only a worktree at exactly the run's start commit is claimed, so its
//! files are the commit's, as a new worktree's would be. Claims are one at a time, under
//! `.eden/pool/worktrees.lock`; a detached `eden __eden-pool-refill REPO worktrees` makes the
//! next one at the base's tip. Nothing here is ever handed to a sandbox before it is a run's.

use crate::error::Error;
use crate::git::Git;
use crate::layout::Layout;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The refill subcommand's second argument for worktrees (a sandbox pool's is its key).
pub(crate) const REFILL_WORKTREES: &str = "worktrees";

/// `.eden/pool/worktrees.json`: how many to keep, and from which branch's tip.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pool {
    size: u32,
    /// A claimed worktree is replaced behind the claim.
    #[serde(default)]
    refill: bool,
    /// The branch runs start from (its tip when a worktree is made).
    base: String,
}

fn dir(layout: &Layout) -> PathBuf {
    layout.eden_dir().join("pool").join("worktrees")
}

fn file(layout: &Layout) -> PathBuf {
    layout.eden_dir().join("pool").join("worktrees.json")
}

fn lock(layout: &Layout) -> Result<nix::fcntl::Flock<std::fs::File>, Error> {
    let folder = layout.eden_dir().join("pool");
    fs_err::create_dir_all(&folder).map_err(|err| Error::git(err.to_string()))?;
    let file = std::fs::File::create(folder.join("worktrees.lock"))
        .map_err(|err| Error::git(format!("cannot open the worktree pool's lock: {err}")))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, err)| Error::git(format!("cannot take the worktree pool's lock: {err}")))
}

/// The worktrees made ahead, with the commit each is at (read from its own `HEAD`, which eden
/// wrote and no sandbox ever saw).
fn ready(layout: &Layout) -> Vec<(PathBuf, String)> {
    crate::safe_fs::dirs_in(&dir(layout))
        .into_iter()
        .filter_map(|path| {
            let pointer = std::fs::read_to_string(path.join(".git")).ok()?;
            let git_dir = PathBuf::from(pointer.strip_prefix("gitdir:")?.trim());
            let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?.trim().to_owned();
            (head.len() >= 40 && head.chars().all(|c| c.is_ascii_hexdigit())).then_some((path, head))
        })
        .collect()
}

/// How many worktrees are ready for a run starting at `commit` (`eden pool status`).
pub(crate) fn count(layout: &Layout) -> usize {
    ready(layout).len()
}

/// `eden pool up`: keep `size` worktrees made ahead at `base`'s tip (`commit`); those at another
/// commit are removed. Returns how many were made.
pub(crate) fn up(
    layout: &Layout,
    repo: &Git,
    base: &str,
    commit: &str,
    size: u32,
    refill: bool,
) -> Result<usize, Error> {
    let pool = Pool { size, refill, base: base.to_owned() };
    let json = serde_json::to_value(&pool).map_err(|err| Error::internal(err.to_string()))?;
    fs_err::create_dir_all(dir(layout)).map_err(|err| Error::git(err.to_string()))?;
    crate::record::save_json(&file(layout), &json).map_err(|err| Error::git(err.to_string()))?;
    top_up(layout, repo, commit, size)
}

/// Worktrees at other commits removed, then some made at `commit` until there are `size`. Each
/// is made aside (`.eden/pool/worktrees-making/`) and moved in, under the lock, once its files
/// are all there: a claim never gets one half checked out, and never waits for one being made.
fn top_up(layout: &Layout, repo: &Git, commit: &str, size: u32) -> Result<usize, Error> {
    let missing = {
        let _held = lock(layout)?;
        let ready = ready(layout);
        for (path, _) in ready.iter().filter(|(_, head)| head != commit) {
            remove(repo, path);
        }
        (size as usize).saturating_sub(ready.iter().filter(|(_, head)| head == commit).count())
    };
    let aside = layout.eden_dir().join("pool").join("worktrees-making");
    let mut fresh = Vec::new();
    for _ in 0..missing {
        let path = aside.join(crate::record::new_run_id());
        repo.add_worktree_detached(&path, commit)?;
        fresh.push(path);
    }
    // An index written in the second its files were is "racily clean": the run's first `git
    // status` would read every file. Settled a second later, here, it is not.
    if !fresh.is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    let mut made = 0;
    for path in &fresh {
        let _ = Git::new(path).run(["update-index", "-q", "--really-refresh"]);
        let _held = lock(layout)?;
        if !file(layout).is_file() {
            remove(repo, path); // taken down meanwhile
            continue;
        }
        fs_err::create_dir_all(dir(layout)).map_err(|err| Error::git(err.to_string()))?;
        let name = path.file_name().unwrap_or_default();
        repo.run([
            std::ffi::OsStr::new("worktree"),
            "move".as_ref(),
            path.as_os_str(),
            dir(layout).join(name).as_os_str(),
        ])?;
        made += 1;
    }
    let _ = std::fs::remove_dir(&aside);
    Ok(made)
}

fn remove(repo: &Git, path: &Path) {
    let _ = repo.run([std::ffi::OsStr::new("worktree"), "remove".as_ref(), "--force".as_ref(), path.as_os_str()]);
}

/// A worktree made ahead at `start`, moved to `worktree` and on a new branch `branch` there;
/// `false` when none is ready at `start` (the caller makes the worktree as usual). Anything
/// that fails after the move undoes it and says `false` too.
pub(crate) fn claim(layout: &Layout, repo: &Git, worktree: &Path, branch: &str, start: &str) -> Result<bool, Error> {
    if !file(layout).is_file() {
        return Ok(false);
    }
    let held = lock(layout)?;
    let Some((path, _)) = ready(layout).into_iter().find(|(_, head)| head == start) else { return Ok(false) };
    if let Some(parent) = worktree.parent() {
        fs_err::create_dir_all(parent).map_err(|err| Error::git(err.to_string()))?;
    }
    repo.run([std::ffi::OsStr::new("worktree"), "move".as_ref(), path.as_os_str(), worktree.as_os_str()])?;
    drop(held);
    let reference = format!("refs/heads/{branch}");
    // The old value empty: made only if no such branch exists.
    let made = repo
        .run(["update-ref", "--create-reflog", "-m", &format!("branch: Created from {start}"), &reference, start, ""])
        .and_then(|_| Git::new(worktree).run(["symbolic-ref", "HEAD", &reference]));
    if made.is_err() {
        if let Ok(Some(tip)) = repo.branch_commit(branch) {
            let _ = repo.delete_branch(branch, &tip);
        }
        remove(repo, worktree);
        return Ok(false);
    }
    refill_behind(layout);
    Ok(true)
}

/// After a claim: a detached eden makes the next worktree, unless the pool was made not to.
fn refill_behind(layout: &Layout) {
    let pool: Option<Pool> =
        std::fs::read_to_string(file(layout)).ok().and_then(|text| serde_json::from_str(&text).ok());
    if pool.is_some_and(|pool| pool.refill) {
        crate::sandbox::refill_behind(&layout.root, REFILL_WORKTREES);
    }
}

/// `eden __eden-pool-refill REPO worktrees`: the pool of worktrees topped up at its base's tip.
/// `None` when the arguments are a sandbox pool's.
pub(crate) fn run_refill(args: &[std::ffi::OsString]) -> Option<i32> {
    let [repo, what] = args else { return None };
    if what != REFILL_WORKTREES {
        return None;
    }
    let layout = Layout::new(Path::new(repo), Path::new(repo).join(".git"));
    let pool: Pool = serde_json::from_str(&std::fs::read_to_string(file(&layout)).ok()?).ok()?;
    let lock = layout.eden_dir().join("pool").join("worktrees.refill.lock");
    Some(crate::sandbox::refill_alone(&lock, || {
        if !file(&layout).is_file() {
            return Ok(()); // taken down meanwhile
        }
        let repo = Git::new(&layout.root);
        let tip = repo.branch_commit(&pool.base)?.ok_or_else(|| Error::git(format!("no branch `{}`", pool.base)))?;
        top_up(&layout, &repo, &tip, pool.size).map(drop)
    }))
}

/// `eden pool down`: every worktree made ahead removed, and the pool forgotten.
pub(crate) fn down(layout: &Layout) -> Result<usize, Error> {
    if !file(layout).is_file() && !dir(layout).is_dir() {
        return Ok(0);
    }
    let _held = lock(layout)?;
    let _ = std::fs::remove_file(file(layout));
    let repo = Git::new(&layout.root);
    let ready = ready(layout);
    for (path, _) in &ready {
        remove(&repo, path);
    }
    // Any a killed refill left half made.
    let aside = layout.eden_dir().join("pool").join("worktrees-making");
    for path in crate::safe_fs::dirs_in(&aside) {
        remove(&repo, &path);
    }
    let _ = std::fs::remove_dir(&aside);
    let _ = repo.prune_worktrees();
    let _ = std::fs::remove_dir(dir(layout));
    Ok(ready.len())
}
