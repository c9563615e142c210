//! `copy_to_worktree`: files git does not have (`.env`, local config) copied from the checkout
//! into the new worktree before the hooks run. At the end, copies the run left unchanged are
//! removed again, so they do not make the worktree look dirty; a copy the agent changed stays,
//! and with it the worktree, like any uncommitted work.

use crate::error::Error;
use crate::values::format_duration;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What was copied: files (source, destination) and the folders made for them, in order.
#[derive(Debug, Default)]
pub struct Copied {
    pub files: Vec<(PathBuf, PathBuf)>,
    pub dirs: Vec<PathBuf>,
}

/// Every source must exist before anything is created.
pub fn check_sources(checkout: &Path, entries: &[PathBuf]) -> Result<(), Error> {
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
pub async fn copy_into(
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
            for entry in &entries {
                copy_path(&checkout.join(entry), &worktree.join(entry), &cancel, &copied)?;
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
    remove(&copied, |_, _| true);
    *copied = Copied::default();
    Err(error)
}

fn copy_path(source: &Path, dest: &Path, cancel: &AtomicBool, copied: &Mutex<Copied>) -> std::io::Result<()> {
    if cancel.load(Ordering::SeqCst) {
        return Err(std::io::Error::other("cancelled"));
    }
    let meta = std::fs::symlink_metadata(source)?;
    if let Some(parent) = dest.parent() {
        make_dirs(parent, copied)?;
    }
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(source)?;
        let _ = std::fs::remove_file(dest);
        std::os::unix::fs::symlink(target, dest)?;
        copied.lock().unwrap_or_else(|e| e.into_inner()).files.push((source.to_owned(), dest.to_owned()));
    } else if meta.is_dir() {
        make_dirs(dest, copied)?;
        let mut children: Vec<_> = std::fs::read_dir(source)?.collect::<Result<_, _>>()?;
        children.sort_by_key(|child| child.file_name());
        for child in children {
            copy_path(&child.path(), &dest.join(child.file_name()), cancel, copied)?;
        }
    } else if meta.is_file() {
        // Listed first: a copy cut short is still found and removed.
        copied.lock().unwrap_or_else(|e| e.into_inner()).files.push((source.to_owned(), dest.to_owned()));
        std::fs::copy(source, dest)?;
    } else {
        return Err(std::io::Error::other(format!("`{}` is not a file, folder or symlink", source.display())));
    }
    Ok(())
}

fn make_dirs(dir: &Path, copied: &Mutex<Copied>) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        make_dirs(parent, copied)?;
    }
    std::fs::create_dir(dir)?;
    copied.lock().unwrap_or_else(|e| e.into_inner()).dirs.push(dir.to_owned());
    Ok(())
}

/// Remove the copies that are still identical to their source, and the folders made for them
/// if they are empty now. Returns how many copies were changed (and so kept).
pub fn remove_unchanged(copied: &Copied) -> usize {
    copied.files.len() - remove(copied, same_content)
}

/// Remove the copies `removable` accepts, then the folders made for them that are now empty.
/// Returns how many copies were removed.
fn remove(copied: &Copied, removable: impl Fn(&Path, &Path) -> bool) -> usize {
    let mut removed = 0;
    for (source, dest) in &copied.files {
        if removable(source, dest) {
            let _ = std::fs::remove_file(dest);
            removed += 1;
        }
    }
    for dir in copied.dirs.iter().rev() {
        let _ = std::fs::remove_dir(dir); // only succeeds when empty
    }
    removed
}

fn same_content(source: &Path, dest: &Path) -> bool {
    let (Ok(a), Ok(b)) = (std::fs::symlink_metadata(source), std::fs::symlink_metadata(dest)) else {
        return false;
    };
    match (a.file_type().is_symlink(), b.file_type().is_symlink()) {
        (true, true) => std::fs::read_link(source).ok() == std::fs::read_link(dest).ok(),
        (false, false) => {
            a.len() == b.len() && matches!((std::fs::read(source), std::fs::read(dest)), (Ok(x), Ok(y)) if x == y)
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
}
