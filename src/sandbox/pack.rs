//! eden's own listing and packing of a workspace's files, run inside the sandbox as eden's
//! executable (already there for the simulated agent and the probes), so what `artifacts`
//! collects never depends on the image's `find` and `tar`: an agent that is root in its
//! container can replace those, and GNU tar reads a listed name that starts with `-` as an
//! option. What these print is still hostile input on the host (`artifacts`, `unpack`).
//!
//! - `__eden-list LIMIT`: every entry below the working folder (`.git` and `.eden` at its top
//!   left out), not following links, each as a kind byte and a name, NUL-ended: `f` a regular
//!   file under `LIMIT` bytes, `o` a bigger one, `l` a symbolic link.
//! - `__eden-pack`: the files named on stdin (NUL-ended) as one tar stream on stdout, each
//!   opened without following a link; a name that is not plain relative components is skipped.

use std::io::{Read, Write};
use std::path::{Component, Path};

pub(crate) const LIST_SUBCOMMAND: &str = "__eden-list";
pub(crate) const PACK_SUBCOMMAND: &str = "__eden-pack";

/// `__eden-list LIMIT`.
pub(crate) fn run_list(args: &[std::ffi::OsString]) -> i32 {
    let Some(limit) = args.first().and_then(|arg| arg.to_str()).and_then(|arg| arg.parse::<u64>().ok()) else {
        return 2;
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match list(Path::new("."), "", limit, &mut out).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

fn list(folder: &Path, prefix: &str, limit: u64, out: &mut impl Write) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(folder)?.filter_map(Result::ok).collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
        if prefix.is_empty() && (name == ".git" || name == crate::layout::EDEN_DIR) {
            continue;
        }
        let path = format!("{prefix}{name}");
        // `symlink_metadata`: a link is said as one, never followed.
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else { continue };
        let kind = match meta.file_type() {
            kind if kind.is_dir() => {
                list(&entry.path(), &format!("{path}/"), limit, out)?;
                continue;
            }
            kind if kind.is_symlink() => b'l',
            kind if kind.is_file() && meta.len() < limit => b'f',
            kind if kind.is_file() => b'o',
            _ => continue,
        };
        out.write_all(&[kind, 0])?;
        out.write_all(path.as_bytes())?;
        out.write_all(&[0])?;
    }
    Ok(())
}

/// `__eden-pack`.
pub(crate) fn run_pack() -> i32 {
    let mut names = Vec::new();
    if std::io::stdin().lock().read_to_end(&mut names).is_err() {
        return 1;
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for name in names.split(|byte| *byte == 0).filter(|name| !name.is_empty()) {
        let Some(name) = std::str::from_utf8(name).ok().filter(|name| is_plain(name)) else { continue };
        if pack_one(Path::new("."), name, &mut out).is_err() {
            return 1;
        }
    }
    // The end of the archive: two empty blocks.
    match out.write_all(&[0u8; 1024]).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// A name of plain components below the working folder.
pub(crate) fn is_plain(name: &str) -> bool {
    !name.is_empty()
        && !name.contains('\n')
        && Path::new(name).components().all(|component| matches!(component, Component::Normal(_)))
}

/// One regular file as a tar entry (a GNU long-name entry first when the name needs it); a file
/// that is not one now (a link put in its place) is left out.
fn pack_one(folder: &Path, name: &str, out: &mut impl Write) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NOFOLLOW).open(folder.join(name));
    let Ok(file) = opened else { return Ok(()) };
    let Ok(meta) = file.metadata() else { return Ok(()) };
    if !meta.is_file() {
        return Ok(());
    }
    let size = meta.len();
    if name.len() > 99 {
        let long = [name.as_bytes(), &[0]].concat();
        out.write_all(&header(b"././@LongLink", long.len() as u64, b'L'))?;
        write_padded(out, &mut &long[..], long.len() as u64)?;
    }
    let short = &name.as_bytes()[..name.len().min(99)];
    out.write_all(&header(short, size, b'0'))?;
    // Exactly the size announced, whatever the file does meanwhile.
    write_padded(out, &mut file.take(size).chain(std::io::repeat(0)), size)
}

fn write_padded(out: &mut impl Write, data: &mut impl Read, size: u64) -> std::io::Result<()> {
    let copied = std::io::copy(&mut data.take(size), out)?;
    debug_assert_eq!(copied, size);
    let padding = (512 - size % 512) % 512;
    out.write_all(&vec![0u8; padding as usize])
}

/// A ustar header: name, mode 0644, size, type; the checksum over it.
fn header(name: &[u8], size: u64, kind: u8) -> [u8; 512] {
    let mut header = [0u8; 512];
    header[..name.len()].copy_from_slice(name);
    header[100..107].copy_from_slice(b"0000644");
    header[108..115].copy_from_slice(b"0000000");
    header[116..123].copy_from_slice(b"0000000");
    header[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    header[136..147].copy_from_slice(b"00000000000");
    header[156] = kind;
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|byte| u32::from(*byte)).sum();
    header[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_says_files_big_files_and_links_and_follows_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("out/deep")).unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join("out/deep/report.txt"), "ok").unwrap();
        std::fs::write(dir.path().join("-report.txt"), "dash").unwrap();
        std::fs::write(dir.path().join("big.bin"), vec![0u8; 100]).unwrap();
        std::fs::write(dir.path().join(".git/config"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("out/escape")).unwrap();
        let mut listed = Vec::new();
        list(dir.path(), "", 50, &mut listed).unwrap();
        let text = String::from_utf8(listed).unwrap().replace('\0', "|");
        assert_eq!(text, "f|-report.txt|o|big.bin|f|out/deep/report.txt|l|out/escape|");
    }

    #[test]
    fn a_pack_is_a_tar_stream_eden_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("{}/file.txt", "d".repeat(120));
        std::fs::create_dir_all(dir.path().join("d".repeat(120))).unwrap();
        std::fs::write(dir.path().join(&long), "long").unwrap();
        std::fs::write(dir.path().join("-report.txt"), "dash").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("link")).unwrap();
        let mut stream = Vec::new();
        for name in [long.as_str(), "-report.txt", "link", "../outside"] {
            if is_plain(name) {
                pack_one(dir.path(), name, &mut stream).unwrap();
            }
        }
        stream.extend_from_slice(&[0u8; 1024]);
        let into = tempfile::tempdir().unwrap();
        let done = super::super::unpack::unpack(&stream[..], into.path(), 1 << 20).unwrap();
        assert_eq!(done.files, 2);
        assert_eq!(std::fs::read_to_string(into.path().join(&long)).unwrap(), "long");
        assert_eq!(std::fs::read_to_string(into.path().join("-report.txt")).unwrap(), "dash");
        assert!(!into.path().join("link").exists());
        // The real tar reads it too.
        let check = std::process::Command::new("tar")
            .args(["-t", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        check.stdin.as_ref().unwrap().write_all(&stream).unwrap();
        let listed = check.wait_with_output().unwrap();
        assert!(listed.status.success());
        assert_eq!(String::from_utf8_lossy(&listed.stdout).lines().count(), 2);
    }
}
