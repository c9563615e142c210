//! `artifacts`: files of the sandbox's workspace that match the run's globs, committed or not,
//! brought back as data into `.eden/artifacts/RUN/`, never merged. What crosses is hostile
//! input, as everything from a sandbox: the workspace's files are listed inside by eden's own
//! executable (`pack`: links said as links, never followed; the image's `find` and `tar` are
//! never asked), every name is checked here (plain components below the workspace) and matched,
//! then eden packs the chosen ones inside into one tar stream, counted against
//! `sandbox.max_return` as it arrives and read by `unpack` (regular files only, only the names
//! asked for, confined to the folder). Sizes and hashes come from the bytes received, never
//! from a file on this machine a name points at. A file over the limit stays behind, said so.

use super::unpack;
use crate::error::Error;
use crate::process::{ProcessBuilder, Stdin};
use crate::record::ArtifactRecord;
use std::path::Path;

/// The most the listing of a workspace's files may be.
const MAX_LISTING: u64 = 64 * 1024 * 1024;
/// The most warnings one collection gives about names it refuses.
const MAX_REFUSED_SAID: usize = 5;

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

/// How eden's own executable is run in the sandbox's workspace: `inside` wraps a command for
/// the sandbox, `eden` is the executable's path there.
pub(crate) struct EdenInside<'a> {
    pub(crate) inside: &'a dyn Fn(ProcessBuilder) -> Result<ProcessBuilder, Error>,
    pub(crate) eden: &'a Path,
    pub(crate) workspace: &'a Path,
}

impl EdenInside<'_> {
    fn command(&self, subcommand: &str) -> Result<ProcessBuilder, Error> {
        (self.inside)(ProcessBuilder::new(self.eden).arg(subcommand).cwd(self.workspace))
    }
}

/// Collect through eden's executable in the sandbox.
pub(crate) fn collect(eden: &EdenInside<'_>, request: &ArtifactRequest<'_>) -> Result<Collected, Error> {
    fs_err::create_dir_all(request.scratch).map_err(|err| Error::sandbox(err.to_string()))?;
    let limit = request.limit.max(1);
    let list = eden.command(super::pack::LIST_SUBCOMMAND)?.arg((limit + 1).to_string());
    let listing = spool(&list, &request.scratch.join("artifacts.list"), MAX_LISTING)?;
    let listing = listing.ok_or_else(|| {
        Error::sandbox("the workspace lists more files than eden reads for artifacts").with_hint("narrow `artifacts`")
    })?;
    let (wanted, mut collected) = choose(&listing, request);
    if wanted.is_empty() {
        return Ok(collected);
    }
    let names: Vec<u8> = wanted.iter().flat_map(|name| name.bytes().chain([0])).collect();
    let pack = eden.command(super::pack::PACK_SUBCOMMAND)?.stdin(Stdin::Bytes(names));
    let stream = request.scratch.join("artifacts.tar");
    if spool(&pack, &stream, request.limit)?.is_none() {
        let _ = std::fs::remove_file(&stream);
        collected.left.push(format!(
            "the artifacts together are more than `sandbox.max_return` ({}): none of {} file(s) kept",
            crate::values::format_size(request.limit),
            wanted.len()
        ));
        return Ok(collected);
    }
    fs_err::create_dir_all(request.into).map_err(|err| Error::sandbox(err.to_string()))?;
    let wanted: std::collections::HashSet<String> = wanted.into_iter().collect();
    let read = std::fs::File::open(&stream)
        .and_then(|file| unpack::unpack_wanted(std::io::BufReader::new(file), request.into, request.limit, &wanted));
    let _ = std::fs::remove_file(&stream);
    let received = read.map_err(|err| match err.kind() {
        std::io::ErrorKind::Interrupted => Error::sandbox("the artifacts were not taken back: stopped"),
        _ => Error::sandbox(format!("the artifacts were not taken back: {err}")),
    })?;
    collected.files = received
        .into_iter()
        .map(|file| ArtifactRecord { path: file.path, bytes: file.bytes, sha256: file.sha256 })
        .collect();
    collected.files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(collected)
}

/// The names of the listing to take (checked here: plain components below the workspace, and
/// matched), and what is left behind and why.
fn choose(listing: &[u8], request: &ArtifactRequest<'_>) -> (Vec<String>, Collected) {
    let (mut wanted, mut collected, mut refused) = (Vec::new(), Collected::default(), 0usize);
    let mut entries = listing.split(|byte| *byte == 0);
    while let (Some(kind), Some(name)) = (entries.next(), entries.next()) {
        let Ok(path) = std::str::from_utf8(name) else { continue };
        if !super::pack::is_plain(path) || kind.len() != 1 {
            refused += 1;
            if refused <= MAX_REFUSED_SAID {
                let shown: String = path.chars().take(80).collect::<String>().escape_debug().to_string();
                collected
                    .left
                    .push(format!("the sandbox listed `{shown}`, which is not a file in the workspace: ignored"));
            }
            continue;
        }
        if !(request.select)(path) {
            continue;
        }
        match kind[0] {
            b'f' => wanted.push(path.to_owned()),
            b'o' => collected.left.push(format!(
                "artifact `{path}` is larger than `sandbox.max_return` ({}): left in the sandbox",
                crate::values::format_size(request.limit)
            )),
            _ => collected.left.push(format!("artifact `{path}` is a symbolic link: not followed, not kept")),
        }
    }
    if refused > MAX_REFUSED_SAID {
        collected.left.push(format!("… and {} more such names", refused - MAX_REFUSED_SAID));
    }
    wanted.sort();
    wanted.dedup();
    (wanted, collected)
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
        .with_hint("eden lists and packs them with its own executable in the sandbox: is the sandbox still there?"));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_s_names_are_checked_here() {
        let select = |path: &str| path.starts_with("out/");
        let dir = std::path::Path::new("/nowhere");
        let request = ArtifactRequest { select: &select, into: dir, limit: 10, scratch: dir, worktree: dir };
        let mut listing = Vec::new();
        for (kind, name) in
            [("f", "out/a.txt"), ("f", "out/../../etc/passwd"), ("f", "/etc/shadow"), ("f", "out/-x"), ("o", "out/big")]
        {
            listing.extend_from_slice(format!("{kind}\0{name}\0").as_bytes());
        }
        let (wanted, collected) = choose(&listing, &request);
        assert_eq!(wanted, ["out/-x", "out/a.txt"]);
        assert_eq!(collected.left.len(), 3, "{:?}", collected.left);
        assert!(collected.left[0].contains("`out/../../etc/passwd`, which is not a file in the workspace"));
    }
}
