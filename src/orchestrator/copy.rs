//! `copy_to_worktree`: files git does not have (`.env`, local config) copied from the checkout
//! into the new worktree before the hooks run. At the end, copies the run left unchanged are
//! removed again, so they do not make the worktree look dirty; a copy the agent changed stays,
//! and with it the worktree, like any uncommitted work.
//!
//! The agent may have replaced a copied folder with a symlink to somewhere else (the checkout's
//! own folder, say): the removal walks the worktree with `safe_fs`, so a copy reached through a
//! symlink counts as changed and stays, and nothing outside the worktree is ever removed.

use crate::error::Error;
use crate::safe_fs;
use crate::values::format_duration;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What was copied: files (source, destination relative to the worktree) and the folders made
/// for them (relative), in order.
#[derive(Debug, Default)]
pub(crate) struct Copied {
    pub(crate) worktree: PathBuf,
    pub(crate) files: Vec<(PathBuf, PathBuf)>,
    pub(crate) dirs: Vec<PathBuf>,
}

/// Every source must exist before anything is created.
pub(crate) fn check_sources(checkout: &Path, entries: &[PathBuf]) -> Result<(), Error> {
    for entry in entries {
        let source = checkout.join(entry);
        if std::fs::symlink_metadata(&source).is_err() {
            return Err(Error::usage(format!("`copy_to_worktree` source `{}` does not exist", source.display()))
                .with_hint(format!(
                    "paths are relative to the checkout eden runs in ({}); create it or remove the entry",
                    checkout.display()
                )));
        }
    }
    Ok(())
}

/// Copy the entries from `checkout` into `worktree`, giving up after `timeout`. What was copied
/// before a failure is in `copied` either way, so it can be cleaned up.
pub(crate) async fn copy_into(
    checkout: &Path,
    worktree: &Path,
    entries: &[PathBuf],
    timeout: Duration,
    copied: &Arc<Mutex<Copied>>,
) -> Result<usize, Error> {
    let cancel = Arc::new(AtomicBool::new(false));
    let mut job = {
        let (checkout, worktree, entries) = (checkout.to_owned(), worktree.to_owned(), entries.to_vec());
        let (cancel, copied) = (cancel.clone(), copied.clone());
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            copied.lock().unwrap_or_else(|e| e.into_inner()).worktree = worktree.clone();
            for entry in &entries {
                copy_path(&checkout.join(entry), &worktree, entry, &cancel, &copied)?;
            }
            Ok(())
        })
    };
    let error = match tokio::time::timeout(timeout, &mut job).await {
        Ok(Ok(Ok(()))) => return Ok(copied.lock().unwrap_or_else(|e| e.into_inner()).files.len()),
        Ok(Ok(Err(err))) => Error::internal(format!("cannot copy `copy_to_worktree` files into the worktree: {err}"))
            .with_hint("check the entries' permissions and the free space"),
        Ok(Err(err)) => Error::internal(format!("copying `copy_to_worktree` files failed: {err}")),
        Err(_) => {
            // Stop after the file being copied, and wait for that: nothing may write into the
            // worktree behind our back.
            cancel.store(true, Ordering::SeqCst);
            let _ = job.await;
            Error::timeout(format!(
                "copying `copy_to_worktree` files took longer than {} and was stopped",
                format_duration(timeout)
            ))
            .with_hint("raise `timeouts.copy_to_worktree`, or copy less (large folders belong in a mount or a hook)")
        }
    };
    // Nothing ran after a failed copy, so every copy (a partial one too) is ours to remove.
    let mut copied = copied.lock().unwrap_or_else(|e| e.into_inner());
    remove(&copied, |_, _, _| true);
    *copied = Copied::default();
    Err(error)
}

/// Copy `source` to `relative` in `worktree` (a folder eden just made: nothing else writes it
/// yet).
fn copy_path(
    source: &Path,
    worktree: &Path,
    relative: &Path,
    cancel: &AtomicBool,
    copied: &Mutex<Copied>,
) -> std::io::Result<()> {
    if cancel.load(Ordering::SeqCst) {
        return Err(std::io::Error::other("cancelled"));
    }
    let meta = std::fs::symlink_metadata(source)?;
    if let Some(parent) = relative.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        make_dirs(worktree, parent, copied)?;
    }
    let dest = worktree.join(relative);
    let record = |copied: &Mutex<Copied>| {
        copied.lock().unwrap_or_else(|e| e.into_inner()).files.push((source.to_owned(), relative.to_owned()));
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(source)?;
        let _ = std::fs::remove_file(&dest);
        std::os::unix::fs::symlink(target, &dest)?;
        record(copied);
    } else if meta.is_dir() {
        make_dirs(worktree, relative, copied)?;
        let mut children: Vec<_> = std::fs::read_dir(source)?.collect::<Result<_, _>>()?;
        children.sort_by_key(|child| child.file_name());
        for child in children {
            copy_path(&child.path(), worktree, &relative.join(child.file_name()), cancel, copied)?;
        }
    } else if meta.is_file() {
        // Listed first: a copy cut short is still found and removed.
        record(copied);
        std::fs::copy(source, &dest)?;
    } else {
        return Err(std::io::Error::other(format!("`{}` is not a file, folder or symlink", source.display())));
    }
    Ok(())
}

fn make_dirs(worktree: &Path, relative: &Path, copied: &Mutex<Copied>) -> std::io::Result<()> {
    if worktree.join(relative).is_dir() {
        return Ok(());
    }
    if let Some(parent) = relative.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        make_dirs(worktree, parent, copied)?;
    }
    std::fs::create_dir(worktree.join(relative))?;
    copied.lock().unwrap_or_else(|e| e.into_inner()).dirs.push(relative.to_owned());
    Ok(())
}

/// Remove the copies that are still identical to their source, and the folders made for them
/// if they are empty now. Returns how many copies were changed (and so kept).
pub(crate) fn remove_unchanged(copied: &Copied) -> usize {
    copied.files.len() - remove(copied, same_content)
}

/// Remove the copies `removable` accepts, then the folders made for them that are now empty,
/// all through the worktree's own handle (no symlink followed). Returns how many copies were
/// removed.
fn remove(copied: &Copied, removable: impl Fn(&safe_fs::Dir, &Path, &Path) -> bool) -> usize {
    if copied.files.is_empty() && copied.dirs.is_empty() {
        return 0;
    }
    let Ok(worktree) = safe_fs::Dir::open(&copied.worktree) else { return 0 };
    let mut removed = 0;
    for (source, dest) in &copied.files {
        if removable(&worktree, source, dest) && worktree.remove_file(dest).is_ok() {
            removed += 1;
        }
    }
    for dir in copied.dirs.iter().rev() {
        let _ = worktree.remove_empty_dir(dir); // only when empty and a plain folder
    }
    removed
}

/// `branch.commit_leftovers`: commit everything uncommitted in `worktree` except the copied
/// entries (a changed `.env` must never land in git). Returns the commit and how many files it
/// holds, or `None` when there was nothing.
pub(crate) fn commit_leftovers(
    worktree: &crate::git::Git,
    copies: &[PathBuf],
) -> Result<Option<(String, usize)>, Error> {
    let mut add: Vec<std::ffi::OsString> = vec!["add".into(), "-A".into(), "--".into(), ".".into()];
    for copy in copies {
        let mut exclude = std::ffi::OsString::from(":(exclude,top,literal)");
        exclude.push(copy);
        add.push(exclude);
    }
    worktree.run(&add)?;
    let staged = worktree.run(["diff", "--cached", "--name-only"])?;
    let files = staged.lines().filter(|line| !line.is_empty()).count();
    if files == 0 {
        return Ok(None);
    }
    worktree.run(["commit", "--quiet", "-m", "Work the agent left uncommitted (eden: branch.commit_leftovers)"])?;
    let sha = worktree.resolve("HEAD")?.unwrap_or_default();
    Ok(Some((sha, files)))
}

/// Is the copy at `dest` (reached without following any symlink) still what `source` is?
fn same_content(worktree: &safe_fs::Dir, source: &Path, dest: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(source) else { return false };
    match worktree.kind(dest) {
        Some(safe_fs::Kind::Symlink) if meta.file_type().is_symlink() => {
            std::fs::read_link(source).ok().map(PathBuf::into_os_string) == worktree.read_link(dest).ok()
        }
        Some(safe_fs::Kind::File) if meta.is_file() => {
            matches!((std::fs::read(source), worktree.read(dest, meta.len())), (Ok(x), Ok(y)) if x == y)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn copies_and_removes_what_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("from"), dir.path().join("to"));
        std::fs::create_dir_all(from.join("conf/nested")).unwrap();
        std::fs::create_dir_all(&to).unwrap();
        std::fs::write(from.join(".env"), "A=1\n").unwrap();
        std::fs::write(from.join("conf/nested/a.toml"), "a").unwrap();
        std::fs::write(from.join("conf/b.toml"), "b").unwrap();
        std::os::unix::fs::symlink("b.toml", from.join("conf/link")).unwrap();
        let copied = Arc::new(Mutex::new(Copied::default()));
        let entries = [PathBuf::from(".env"), PathBuf::from("conf")];
        let count = copy_into(&from, &to, &entries, Duration::from_secs(10), &copied).await.unwrap();
        assert_eq!(count, 4);
        assert_eq!(std::fs::read_to_string(to.join("conf/nested/a.toml")).unwrap(), "a");
        assert_eq!(std::fs::read_link(to.join("conf/link")).unwrap(), Path::new("b.toml"));

        std::fs::write(to.join("conf/b.toml"), "changed").unwrap();
        let copied = copied.lock().unwrap();
        assert_eq!(remove_unchanged(&copied), 1);
        assert!(!to.join(".env").exists());
        assert!(!to.join("conf/nested").exists(), "emptied folders go too");
        assert_eq!(std::fs::read_to_string(to.join("conf/b.toml")).unwrap(), "changed", "changed copies stay");
    }

    /// The agent swapped a copied folder for a symlink to the checkout's own: the originals
    /// there are identical to their sources (they are the sources), and must not be removed.
    #[tokio::test]
    async fn a_folder_swapped_for_a_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("from"), dir.path().join("to"));
        std::fs::create_dir_all(from.join("conf")).unwrap();
        std::fs::create_dir_all(&to).unwrap();
        std::fs::write(from.join("conf/a.toml"), "a").unwrap();
        let copied = Arc::new(Mutex::new(Copied::default()));
        copy_into(&from, &to, &[PathBuf::from("conf")], Duration::from_secs(10), &copied).await.unwrap();
        std::fs::remove_dir_all(to.join("conf")).unwrap();
        std::os::unix::fs::symlink(from.join("conf"), to.join("conf")).unwrap();
        assert_eq!(remove_unchanged(&copied.lock().unwrap()), 1, "counted as changed");
        assert_eq!(std::fs::read_to_string(from.join("conf/a.toml")).unwrap(), "a", "the original is untouched");
        assert!(to.join("conf").is_symlink());
    }
}
