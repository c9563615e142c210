//! `artifacts`: files of the sandbox's workspace that match the run's globs, committed or not,
//! brought back as data into `.eden/artifacts/RUN/`, never merged. What crosses is hostile
//! input, as everything from a sandbox: the workspace's regular files are listed inside
//! (`find -type f`: links are listed apart, never followed), matched here, then sent as one tar
//! stream counted against `sandbox.max_return` as it arrives and read by `unpack` (regular files
//! only, names confined to the folder). A file over the limit stays behind, said so.

use super::unpack;
use crate::error::Error;
use crate::process::{ProcessBuilder, Stdin};
use crate::record::ArtifactRecord;
use std::path::Path;

/// The most the listing of a workspace's files may be.
const MAX_LISTING: u64 = 64 * 1024 * 1024;

/// Lists the workspace's regular files under `$1` bytes, then (after `//over//`) the bigger
/// ones, then (after `//link//`) its symbolic links, each NUL-ended; `.git` and `.eden` left out.
const LIST_SCRIPT: &str = r#"set -e
find . \( -path ./.git -o -path ./.eden \) -prune -o -type f -size -"$1"c -print0
printf '//over//\0'
find . \( -path ./.git -o -path ./.eden \) -prune -o -type f -size +"$(( $1 - 1 ))"c -print0
printf '//link//\0'
find . \( -path ./.git -o -path ./.eden \) -prune -o -type l -print0"#;

/// What to collect, and where.
pub(crate) struct ArtifactRequest<'a> {
    /// Does this path (relative to the workspace, `/`-separated) match the globs?
    pub(crate) select: &'a dyn Fn(&str) -> bool,
    /// `.eden/artifacts/RUN`: made here, written only by eden.
    pub(crate) into: &'a Path,
    /// `sandbox.max_return`.
    pub(crate) limit: u64,
    /// The run's scratch folder (the listing and the stream are spooled there).
    pub(crate) scratch: &'a Path,
    /// The worktree on this machine: the workspace of a run without a sandbox.
    pub(crate) worktree: &'a Path,
}

/// What came back, and what was left behind and why.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub(crate) files: Vec<ArtifactRecord>,
    /// Warnings: files over the limit, links not followed.
    pub(crate) left: Vec<String>,
}

/// Collect through `inside` (runs a command in the workspace `workspace`, as the sandbox sees
/// it).
pub(crate) fn collect(
    inside: &dyn Fn(ProcessBuilder) -> ProcessBuilder,
    workspace: &Path,
    request: &ArtifactRequest<'_>,
) -> Result<Collected, Error> {
    fs_err::create_dir_all(request.scratch).map_err(|err| Error::sandbox(err.to_string()))?;
    let limit = request.limit.max(1);
    let list = ProcessBuilder::new("sh").args(["-c", LIST_SCRIPT, "sh", &(limit + 1).to_string()]).cwd(workspace);
    let listing = spool(&inside(list.env("LC_ALL", "C")), &request.scratch.join("artifacts.list"), MAX_LISTING)?;
    let listing = listing.ok_or_else(|| {
        Error::sandbox("the workspace lists more files than eden reads for artifacts").with_hint("narrow `artifacts`")
    })?;
    let mut collected = Collected::default();
    let (mut wanted, mut section) = (Vec::new(), "");
    for entry in listing.split(|byte| *byte == 0).filter(|entry| !entry.is_empty()) {
        let Ok(entry) = std::str::from_utf8(entry) else { continue };
        if entry == "//over//" || entry == "//link//" {
            section = entry;
            continue;
        }
        let path = entry.trim_start_matches("./");
        if path.contains('\n') || !(request.select)(path) {
            continue;
        }
        match section {
            "" => wanted.push(path.to_owned()),
            "//over//" => collected.left.push(format!(
                "artifact `{path}` is larger than `sandbox.max_return` ({}): left in the sandbox",
                crate::values::format_size(request.limit)
            )),
            _ => collected.left.push(format!("artifact `{path}` is a symbolic link: not followed, not kept")),
        }
    }
    if wanted.is_empty() {
        return Ok(collected);
    }
    let names = wanted.join("\n") + "\n";
    let tar = inside(ProcessBuilder::new("tar").args(["-c", "-f", "-", "-T", "-"]).cwd(workspace))
        .stdin(Stdin::Bytes(names.into_bytes()));
    let stream = request.scratch.join("artifacts.tar");
    if spool(&tar, &stream, request.limit)?.is_none() {
        let _ = std::fs::remove_file(&stream);
        collected.left.push(format!(
            "the artifacts together are more than `sandbox.max_return` ({}): none of {} file(s) kept",
            crate::values::format_size(request.limit),
            wanted.len()
        ));
        return Ok(collected);
    }
    fs_err::create_dir_all(request.into).map_err(|err| Error::sandbox(err.to_string()))?;
    let read = std::fs::File::open(&stream)
        .and_then(|file| unpack::unpack(std::io::BufReader::new(file), request.into, request.limit));
    let _ = std::fs::remove_file(&stream);
    read.map_err(|err| Error::sandbox(format!("the artifacts were not taken back: {err}")))?;
    collected.files = wanted.iter().filter_map(|path| record(request.into, path)).collect();
    Ok(collected)
}

/// Run `command`, its stdout into `file` (at most `limit` bytes): the bytes, `None` over the
/// limit. (The tar stream is read back from the file, not kept.)
fn spool(command: &ProcessBuilder, file: &Path, limit: u64) -> Result<Option<Vec<u8>>, Error> {
    let out = fs_err::File::create(file).map_err(|err| Error::sandbox(err.to_string()))?;
    let capped = command
        .output_to_file_capped(out.into_parts().0, limit)
        .map_err(|err| Error::sandbox(format!("cannot run `{command}`: {err}")))?;
    if capped.over {
        return Ok(None);
    }
    if !capped.output.success() {
        let _ = std::fs::remove_file(file);
        return Err(Error::sandbox(format!(
            "cannot collect the artifacts: {}",
            super::carry::first_line(&capped.output.stderr)
        ))
        .with_hint("artifacts need `sh`, `find` and `tar` in the sandbox"));
    }
    let bytes = if file.extension().is_some_and(|ext| ext == "list") {
        let bytes = std::fs::read(file).map_err(|err| Error::sandbox(err.to_string()))?;
        let _ = std::fs::remove_file(file);
        bytes
    } else {
        Vec::new()
    };
    Ok(Some(bytes))
}

/// The record of one kept file: its path, size and SHA-256 (`None` if it did not come back as
/// a regular file).
fn record(into: &Path, path: &str) -> Option<ArtifactRecord> {
    let full = into.join(path);
    let meta = std::fs::symlink_metadata(&full).ok().filter(|meta| meta.is_file())?;
    let mut file = std::fs::File::open(&full).ok()?;
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = std::io::Read::read(&mut file, &mut buffer).ok()?;
        if read == 0 {
            break;
        }
        context.update(&buffer[..read]);
    }
    let sha256 = context.finish().as_ref().iter().map(|byte| format!("{byte:02x}")).collect();
    Some(ArtifactRecord { path: path.to_owned(), bytes: meta.len(), sha256 })
}
