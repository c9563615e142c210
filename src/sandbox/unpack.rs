//! Reading back a tar stream a sandbox made (a remote engine's agent state, after every
//! iteration) into a folder only eden writes. The stream is hostile input: only regular files
//! and folders are taken, each name must be plain relative components (no `..`, nothing
//! absolute), nothing already there that is not a file or folder is written through, and the
//! whole is capped in size. Links, devices and anything else are skipped, never made. The
//! `tar` crate reads the headers (checksums, numbers, ustar prefixes, padding); long names and
//! pax records are read here, bounded, and every check above is eden's own.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The most entries (files, folders, links, headers) one stream may hold.
const MAX_ENTRIES: usize = 200_000;

/// What one unpack did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Unpacked {
    pub(crate) files: usize,
    pub(crate) bytes: u64,
    /// Entries left out (links, devices, names that leave the folder).
    pub(crate) skipped: usize,
}

/// A file one unpack wrote: its name below the folder, and its size and SHA-256 (hex) from the
/// bytes as they arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Received {
    pub(crate) path: String,
    pub(crate) bytes: u64,
    pub(crate) sha256: String,
}

/// How one unpack goes: which names it takes (`None`: all), whether it hashes what it writes.
#[derive(Clone, Copy)]
struct Taking<'a> {
    wanted: Option<&'a std::collections::HashSet<String>>,
    hash: bool,
}

/// Unpack `stream` into `into` (a folder eden made and only eden writes), at most `limit` bytes
/// of file contents.
pub(crate) fn unpack(stream: impl Read, into: &Path, limit: u64) -> std::io::Result<Unpacked> {
    unpack_with(stream, into, limit, Taking { wanted: None, hash: false }).map(|(done, _)| done)
}

/// Unpack only the files named in `wanted`, each hashed as it arrives; a stop (Ctrl-C) ends it
/// at once.
pub(crate) fn unpack_wanted(
    stream: impl Read,
    into: &Path,
    limit: u64,
    wanted: &std::collections::HashSet<String>,
) -> std::io::Result<Vec<Received>> {
    unpack_with(stream, into, limit, Taking { wanted: Some(wanted), hash: true }).map(|(_, received)| received)
}

fn unpack_with(
    stream: impl Read,
    into: &Path,
    limit: u64,
    taking: Taking<'_>,
) -> std::io::Result<(Unpacked, Vec<Received>)> {
    let (mut done, mut received) = (Unpacked::default(), Vec::new());
    let mut archive = tar::Archive::new(stream);
    // Raw: long names and pax records are read here, bounded, not by the crate.
    let entries = archive.entries()?.raw(true);
    let mut long_name: Option<Vec<u8>> = None;
    let mut count = 0usize;
    for entry in entries {
        if taking.hash && crate::process::stopping() {
            return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "stopped"));
        }
        let mut entry = entry?;
        count += 1;
        if count > MAX_ENTRIES {
            return Err(invalid("the sandbox's state has more entries than eden takes back"));
        }
        let (kind, size) = (entry.header().entry_type(), entry.size());
        let name = long_name.take().unwrap_or_else(|| entry.path_bytes().into_owned());
        let relative = confined(&name).filter(|relative| !relative.as_os_str().is_empty());
        let taken = relative.filter(|relative| {
            taking.wanted.is_none_or(|wanted| !kind.is_dir() && wanted.contains(&*relative.to_string_lossy()))
        });
        match (kind, taken) {
            // GNU long name, or a pax header whose `path` names the next entry.
            (tar::EntryType::GNULongName, _) => long_name = Some(trim_nul(&read_data(&mut entry, size)?).to_vec()),
            (tar::EntryType::XHeader, _) => long_name = pax_path(&read_data(&mut entry, size)?),
            (tar::EntryType::Directory, Some(relative)) => make_dirs(into, &relative)?,
            (tar::EntryType::Regular, Some(relative)) => {
                if done.bytes + size > limit {
                    return Err(invalid("the sandbox's files are larger than eden takes back"));
                }
                match write_file(&mut entry, into, &relative, size, taking.hash)? {
                    Some(sha256) => {
                        done.files += 1;
                        done.bytes += size;
                        let path = relative.to_string_lossy().into_owned();
                        received.extend(sha256.map(|sha256| Received { path, bytes: size, sha256 }));
                    }
                    None => done.skipped += 1,
                }
            }
            // The folder itself.
            (tar::EntryType::Directory, None) if confined(&name).is_some_and(|r| r.as_os_str().is_empty()) => {}
            // Links, devices, names that leave the folder: the crate skips their data.
            _ => done.skipped += 1,
        }
    }
    Ok((done, received))
}

/// One regular file of `size` bytes from `stream` at `relative` below `into`, and its SHA-256
/// when `hash`; `None` (skipped) where something that is not a file is there already.
fn write_file(
    stream: &mut impl Read,
    into: &Path,
    relative: &Path,
    size: u64,
    hash: bool,
) -> std::io::Result<Option<Option<String>>> {
    if let Some(parent) = relative.parent() {
        make_dirs(into, parent)?;
    }
    let path = into.join(relative);
    if std::fs::symlink_metadata(&path).is_ok_and(|meta| !meta.is_file()) {
        return Ok(None);
    }
    let mut file = std::fs::File::create(&path)?;
    let mut context = hash.then(|| ring::digest::Context::new(&ring::digest::SHA256));
    let (mut left, mut buffer) = (size, vec![0u8; 64 * 1024]);
    while left > 0 {
        let want = buffer.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let read = stream.read(&mut buffer[..want])?;
        if read == 0 {
            return Err(invalid("the tar stream ended inside a file"));
        }
        std::io::Write::write_all(&mut file, &buffer[..read])?;
        if let Some(context) = &mut context {
            context.update(&buffer[..read]);
            if crate::process::stopping() {
                return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "stopped"));
            }
        }
        left -= read as u64;
    }
    let digest = context.map(|context| context.finish().as_ref().iter().map(|byte| format!("{byte:02x}")).collect());
    Ok(Some(digest))
}

/// `name`, as plain components below the folder (empty: the folder itself); `None` for
/// anything else.
fn confined(name: &[u8]) -> Option<PathBuf> {
    let text = std::str::from_utf8(name).ok()?;
    let mut path = PathBuf::new();
    for component in Path::new(text).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(path)
}

/// Folders below `into`, made one by one; a component that exists as anything but a folder (a
/// link) is an error, never followed.
fn make_dirs(into: &Path, relative: &Path) -> std::io::Result<()> {
    let mut path = into.to_path_buf();
    for part in relative.components() {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(invalid("a folder in the sandbox's files is a file or link here")),
            Err(_) => std::fs::create_dir(&path)?,
        }
    }
    Ok(())
}

/// The `path` record of a pax header.
fn pax_path(records: &[u8]) -> Option<Vec<u8>> {
    let mut extensions = tar::PaxExtensions::new(records);
    let path = extensions.find_map(|record| record.ok().filter(|record| record.key_bytes() == b"path"))?;
    Some(path.value_bytes().to_vec())
}

fn trim_nul(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|b| *b == 0).unwrap_or(field.len());
    &field[..end]
}

/// A long name's or pax header's data: at most 64 KiB.
fn read_data(entry: &mut impl Read, size: u64) -> std::io::Result<Vec<u8>> {
    if size > 64 * 1024 {
        return Err(invalid("a tar header entry is too large"));
    }
    let mut data = Vec::with_capacity(size as usize);
    entry.take(size).read_to_end(&mut data)?;
    if data.len() as u64 != size {
        return Err(invalid("the tar stream ended inside an entry"));
    }
    Ok(data)
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar stream made by the real `tar` from `dir`.
    fn tar_of(dir: &Path, args: &[&str]) -> Vec<u8> {
        let output = std::process::Command::new("tar")
            .args(args)
            .arg("-c")
            .arg("-f")
            .arg("-")
            .arg("-C")
            .arg(dir)
            .arg(".")
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        output.stdout
    }

    #[test]
    fn files_and_folders_come_back_links_do_not() {
        let temp = tempfile::tempdir().unwrap();
        let from = temp.path().join("from");
        let long = "d".repeat(120);
        std::fs::create_dir_all(from.join("projects").join(&long)).unwrap();
        std::fs::write(from.join("projects").join(&long).join("s-1.jsonl"), "{}\n").unwrap();
        std::fs::write(from.join("empty"), "").unwrap();
        std::os::unix::fs::symlink("/etc", from.join("escape")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", from.join("passwd")).unwrap();
        // GNU's long names and pax's `path` records (ustar cannot hold the long name at all).
        for format in ["--format=gnu", "--format=pax"] {
            let into = temp.path().join(format!("into{format}"));
            std::fs::create_dir(&into).unwrap();
            let done = unpack(&tar_of(&from, &[format])[..], &into, 1 << 20).unwrap();
            assert_eq!((done.files, done.skipped), (2, 2), "{format:?}");
            assert_eq!(std::fs::read_to_string(into.join("projects").join(&long).join("s-1.jsonl")).unwrap(), "{}\n");
            assert!(!into.join("escape").exists() && !into.join("passwd").exists());
        }
    }

    #[test]
    fn names_that_leave_the_folder_are_skipped() {
        assert_eq!(confined(b"./a/b"), Some(PathBuf::from("a/b")));
        assert_eq!(confined(b"../etc/passwd"), None);
        assert_eq!(confined(b"/etc/passwd"), None);
        assert_eq!(confined(b"a/../../b"), None);
        assert_eq!(confined(b"."), Some(PathBuf::new()), "the folder itself");
    }

    #[test]
    fn a_link_already_there_is_not_written_through() {
        let temp = tempfile::tempdir().unwrap();
        let from = temp.path().join("from");
        std::fs::create_dir_all(from.join("sub")).unwrap();
        std::fs::write(from.join("sub/file"), "x").unwrap();
        let into = temp.path().join("into");
        std::fs::create_dir(&into).unwrap();
        let outside = temp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, into.join("sub")).unwrap();
        assert!(unpack(&tar_of(&from, &[])[..], &into, 1 << 20).is_err());
        assert!(!outside.join("file").exists());
    }

    #[test]
    fn too_much_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let from = temp.path().join("from");
        std::fs::create_dir(&from).unwrap();
        std::fs::write(from.join("big"), vec![b'x'; 4096]).unwrap();
        let into = temp.path().join("into");
        std::fs::create_dir(&into).unwrap();
        assert!(unpack(&tar_of(&from, &[])[..], &into, 1000).is_err());
        let mut garbage = tar_of(&from, &[]);
        garbage[150] ^= 1;
        assert!(unpack(&garbage[..], &into, 1 << 20).is_err(), "a bad checksum");
    }

    #[test]
    fn a_long_name_claiming_a_gigabyte_is_refused_before_it_is_read() {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::GNULongName);
        header.set_path("././@LongLink").unwrap();
        header.set_size(1 << 30);
        header.set_cksum();
        let mut stream = header.as_bytes().to_vec();
        stream.extend_from_slice(&[b'a'; 4096]);
        let into = tempfile::tempdir().unwrap();
        let error = unpack(&stream[..], into.path(), 1 << 40).unwrap_err();
        assert_eq!(error.to_string(), "a tar header entry is too large");
    }
}
