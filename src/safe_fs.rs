//! Reading, listing and removing inside folders an agent could have written (a sandbox's
//! workspace, its private agent state, a worktree the agent ran in) without ever following a
//! link the agent made. Every path is walked component by component from a folder eden made
//! itself (`Dir::open`), each component opened with `O_NOFOLLOW`: a symlink anywhere below that
//! folder is an error (`ELOOP`, or `NotADirectory`), never a way out. Removals use `unlinkat` on
//! the folder handle that was checked, so what is removed is what was looked at.

use nix::dir::{Dir as DirStream, Type};
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fchmod, fstat, fstatat, Mode, SFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// What a directory entry is, as it is (a symlink is a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

/// An open folder: everything below it is reached through this handle.
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
}

fn io(errno: nix::errno::Errno) -> std::io::Error {
    std::io::Error::from(errno)
}

/// The plain names a relative path is made of; `..`, absolute paths and `.` are refused.
fn names(relative: &Path) -> std::io::Result<Vec<&OsStr>> {
    relative
        .components()
        .map(|component| match component {
            Component::Normal(name) => Ok(name),
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("`{}` is not a plain relative path", relative.display()),
            )),
        })
        .collect()
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY.union(OFlag::O_DIRECTORY).union(OFlag::O_NOFOLLOW).union(OFlag::O_CLOEXEC);

impl Dir {
    /// Open a folder eden made itself (or the person's own): its last component must not be a
    /// symlink; the components above it are the caller's to vouch for.
    pub(crate) fn open(path: &Path) -> std::io::Result<Dir> {
        let fd = openat(None, path, DIR_FLAGS, Mode::empty()).map_err(io)?;
        // SAFETY: `openat` returned a new descriptor that nothing else owns.
        Ok(Dir { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    fn child(&self, name: &OsStr) -> std::io::Result<Dir> {
        let fd = openat(Some(self.fd.as_raw_fd()), name, DIR_FLAGS, Mode::empty()).map_err(io)?;
        // SAFETY: as above.
        Ok(Dir { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// The folder at `relative` below this one, no component a symlink.
    pub(crate) fn dir(&self, relative: &Path) -> std::io::Result<Dir> {
        let mut dir = Dir { fd: self.fd.try_clone()? };
        for name in names(relative)? {
            dir = dir.child(name)?;
        }
        Ok(dir)
    }

    /// The parent folder of `relative` (opened safely) and its last name.
    fn parent_of<'a>(&self, relative: &'a Path) -> std::io::Result<(Dir, &'a OsStr)> {
        let names = names(relative)?;
        let Some((last, parents)) = names.split_last() else {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "an empty path"));
        };
        let mut dir = Dir { fd: self.fd.try_clone()? };
        for name in parents {
            dir = dir.child(name)?;
        }
        Ok((dir, last))
    }

    /// What `relative` is, without following it; `None` when it does not exist (or a folder on
    /// the way is not a plain folder).
    pub(crate) fn kind(&self, relative: &Path) -> Option<Kind> {
        let (dir, name) = self.parent_of(relative).ok()?;
        dir.kind_of(name)
    }

    fn kind_of(&self, name: &OsStr) -> Option<Kind> {
        let stat = fstatat(Some(self.fd.as_raw_fd()), name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
        Some(kind_of_mode(stat.st_mode))
    }

    /// A regular file's contents (at most `limit` bytes; more is an error).
    pub(crate) fn read(&self, relative: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
        let (dir, name) = self.parent_of(relative)?;
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        let fd = openat(Some(dir.fd.as_raw_fd()), name, flags, Mode::empty()).map_err(io)?;
        // SAFETY: a new descriptor that nothing else owns.
        let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        let stat = fstat(file.as_raw_fd()).map_err(io)?;
        if kind_of_mode(stat.st_mode) != Kind::File {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("`{}` is not a regular file", relative.display()),
            ));
        }
        let mut data = Vec::new();
        file.take(limit + 1).read_to_end(&mut data)?;
        if data.len() as u64 > limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("`{}` is larger than {limit} bytes", relative.display()),
            ));
        }
        Ok(data)
    }

    /// What the symlink at `relative` points at (the link itself is not followed).
    pub(crate) fn read_link(&self, relative: &Path) -> std::io::Result<OsString> {
        let (dir, name) = self.parent_of(relative)?;
        nix::fcntl::readlinkat(Some(dir.fd.as_raw_fd()), name).map_err(io)
    }

    /// The entries of this folder, each with what it is (symlinks not followed), sorted.
    pub(crate) fn entries(&self) -> std::io::Result<Vec<(OsString, Kind)>> {
        let fd = openat(Some(self.fd.as_raw_fd()), ".", DIR_FLAGS, Mode::empty()).map_err(io)?;
        let mut stream = DirStream::from_fd(fd).map_err(io)?;
        let mut entries = Vec::new();
        for entry in stream.iter() {
            let entry = entry.map_err(io)?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes()).to_owned();
            if name == "." || name == ".." {
                continue;
            }
            let kind = match entry.file_type() {
                Some(Type::File) => Kind::File,
                Some(Type::Directory) => Kind::Dir,
                Some(Type::Symlink) => Kind::Symlink,
                Some(_) => Kind::Other,
                None => self.kind_of(&name).unwrap_or(Kind::Other),
            };
            entries.push((name, kind));
        }
        entries.sort();
        Ok(entries)
    }

    /// Remove the file or symlink at `relative` (never what a symlink points at). Gone
    /// already is fine.
    pub(crate) fn remove_file(&self, relative: &Path) -> std::io::Result<()> {
        let (dir, name) = self.parent_of(relative)?;
        match unlinkat(Some(dir.fd.as_raw_fd()), name, UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
            Err(errno) => Err(io(errno)),
        }
    }

    /// Remove the folder at `relative` if it is empty; `Ok(false)` when it is not (or is gone).
    pub(crate) fn remove_empty_dir(&self, relative: &Path) -> std::io::Result<bool> {
        let (dir, name) = self.parent_of(relative)?;
        match unlinkat(Some(dir.fd.as_raw_fd()), name, UnlinkatFlags::RemoveDir) {
            Ok(()) => Ok(true),
            Err(nix::errno::Errno::ENOTEMPTY | nix::errno::Errno::EEXIST | nix::errno::Errno::ENOENT) => Ok(false),
            Err(errno) => Err(io(errno)),
        }
    }

    fn remove_entry(&self, name: &OsStr) -> std::io::Result<()> {
        match self.kind_of(name) {
            None => Ok(()),
            Some(Kind::Dir) => {
                let child = self.child(name)?;
                child.empty()?;
                drop(child);
                unlinkat(Some(self.fd.as_raw_fd()), name, UnlinkatFlags::RemoveDir).map_err(io)
            }
            Some(_) => match unlinkat(Some(self.fd.as_raw_fd()), name, UnlinkatFlags::NoRemoveDir) {
                Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
                Err(errno) => Err(io(errno)),
            },
        }
    }

    /// Remove everything in this folder.
    fn empty(&self) -> std::io::Result<()> {
        // The owner may always change a folder's mode: one made `chmod 0` must still go.
        let mode = fstat(self.fd.as_raw_fd()).map_err(io)?.st_mode;
        if mode & 0o700 != 0o700 {
            fchmod(self.fd.as_raw_fd(), Mode::from_bits_truncate((mode | 0o700) & 0o7777)).map_err(io)?;
        }
        for (name, _) in self.entries()? {
            self.remove_entry(&name)?;
        }
        Ok(())
    }
}

/// Remove the folder `path` eden made and everything in it, following no symlink below it.
/// `path` itself must not be a symlink (that would be an error, not a removal elsewhere); gone
/// already is fine.
pub(crate) fn remove_tree(path: &Path) -> std::io::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a removable path"));
    };
    let parent = match Dir::open(parent) {
        Ok(parent) => parent,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    match parent.kind_of(name) {
        None => Ok(()),
        Some(Kind::Dir) => parent.remove_entry(name),
        Some(_) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("`{}` is not a folder (a symlink?); not removed", path.display()),
        )),
    }
}

fn kind_of_mode(mode: nix::libc::mode_t) -> Kind {
    match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFREG => Kind::File,
        SFlag::S_IFDIR => Kind::Dir,
        SFlag::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    }
}

/// `dir`'s entries and their kinds (a link is a link), sorted; none when it cannot be read.
fn sorted_entries(dir: &Path) -> Vec<(PathBuf, std::fs::FileType)> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut entries: Vec<_> =
        read.flatten().filter_map(|entry| Some((entry.path(), entry.file_type().ok()?))).collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
}

/// The files in `dir` (not following links), sorted.
/// A file a record names (a log, a record), opened to read: without blocking (it may name a
/// FIFO) or following a last link, and only when it is a regular file.
pub(crate) fn open_regular(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags.bits()).open(path).ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

pub(crate) fn files_in(dir: &Path) -> Vec<PathBuf> {
    sorted_entries(dir).into_iter().filter(|(_, kind)| kind.is_file()).map(|(path, _)| path).collect()
}

/// The folders in `dir` (not following links), sorted.
pub(crate) fn dirs_in(dir: &Path) -> Vec<PathBuf> {
    sorted_entries(dir).into_iter().filter(|(_, kind)| kind.is_dir()).map(|(path, _)| path).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn nothing_is_read_or_removed_through_a_symlink() {
        let temp = tempfile::tempdir().unwrap();
        let (inside, outside) = (temp.path().join("inside"), temp.path().join("outside"));
        std::fs::create_dir_all(inside.join("a")).unwrap();
        std::fs::create_dir_all(outside.join("keep")).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        std::fs::write(outside.join("keep/file"), "k").unwrap();
        std::fs::write(inside.join("a/plain"), "p").unwrap();
        symlink(&outside, inside.join("link")).unwrap();
        symlink(outside.join("secret"), inside.join("a/secret")).unwrap();
        let dir = Dir::open(&inside).unwrap();

        assert_eq!(dir.read(Path::new("a/plain"), 10).unwrap(), b"p");
        assert!(dir.read(Path::new("a/secret"), 10).is_err(), "a symlinked file is not read");
        assert!(dir.read(Path::new("link/secret"), 10).is_err(), "nor one behind a symlinked folder");
        assert!(dir.read(Path::new("../outside/secret"), 10).is_err(), "nor one above");
        assert!(dir.read(Path::new("a/plain"), 0).is_err(), "over the limit");
        assert_eq!(dir.kind(Path::new("link")), Some(Kind::Symlink));
        assert_eq!(dir.kind(Path::new("link/keep")), None);
        let names: Vec<_> = dir.entries().unwrap();
        assert_eq!(names, [("a".into(), Kind::Dir), ("link".into(), Kind::Symlink)]);

        dir.remove_file(Path::new("link/keep/file")).unwrap_err();
        assert!(!dir.remove_empty_dir(Path::new("link/keep")).unwrap_or(false));
        // An unwritable folder goes too; the symlinks in it go, their targets stay.
        std::fs::set_permissions(inside.join("a"), std::fs::Permissions::from_mode(0o500)).unwrap();
        remove_tree(&inside).unwrap();
        assert!(!inside.exists());
        assert_eq!(std::fs::read_to_string(outside.join("secret")).unwrap(), "s");
        assert_eq!(std::fs::read_to_string(outside.join("keep/file")).unwrap(), "k");
    }

    #[test]
    fn a_symlink_in_place_of_the_tree_is_not_removed() {
        let temp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(temp.path().join("target/x")).unwrap();
        symlink(temp.path().join("target"), temp.path().join("tree")).unwrap();
        assert!(remove_tree(&temp.path().join("tree")).is_err());
        assert!(temp.path().join("target/x").is_dir());
        remove_tree(&temp.path().join("missing")).unwrap();
    }
}
