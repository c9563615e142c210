//! The shapes of what an agent's own file gives its spec row beyond its command line and
//! parser: how it keeps its transcripts (`Transcripts`, `Store`) and its flags for its own UI
//! (`UiFlags`), with the folder helpers the stores share. A leaf: the agents' files import it,
//! it imports none of them.

use crate::process::ProcessBuilder;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// How an agent keeps its transcripts.
pub(crate) enum Transcripts {
    /// It writes none of its own: the run's log holds its stream (Cursor, `cli`, `simulated`).
    None,
    /// Only its own CLI can give one: these arguments, then the session id, run where the agent
    /// ran and with its environment (opencode keeps sessions in SQLite: `opencode export <id>`).
    Export(&'static [&'static str]),
    /// Files in its first state folder, laid out its own way.
    Files(Store),
}

/// An agent's own layout of transcript files, each function given its state folder.
#[derive(Clone, Copy)]
pub(crate) struct Store {
    /// The transcript of a session (its id already checked plain) that ran in a directory.
    pub(crate) locate: fn(state: &Path, session_id: &str, cwd: &Path) -> Result<Found, NotFound>,
    /// The newest session started in a directory since a moment, and its id.
    pub(crate) newest: fn(state: &Path, cwd: &Path, since: SystemTime) -> Option<(String, PathBuf)>,
    /// Where a session moved to a directory is written, given its transcript's file name
    /// (`None`: its sessions cannot be moved).
    pub(crate) transfer: Option<TransferTo>,
    /// The one place it resumes a session from, when it looks nowhere else (Claude Code: the
    /// project folder of its working directory). `None`: it finds a session by its id.
    pub(crate) resumes_from: Option<fn(state: &Path, session_id: &str, cwd: &Path) -> PathBuf>,
}

/// Where a session moved to a directory is written: its state folder, the session id, the
/// directory and the transcript's file name.
pub(crate) type TransferTo = fn(state: &Path, session_id: &str, cwd: &Path, file_name: &str) -> PathBuf;

/// A transcript file, with the transcripts of the subagents it started.
#[derive(Debug, PartialEq)]
pub(crate) struct Found {
    pub(crate) main: PathBuf,
    pub(crate) subagents: Vec<PathBuf>,
}

impl Found {
    pub(crate) fn alone(main: PathBuf) -> Found {
        Found { main, subagents: Vec::new() }
    }
}

/// Where an agent's transcript for one session is.
#[derive(Debug, PartialEq)]
pub(crate) enum Located {
    File(Found),
    /// Only the agent's own CLI can produce it: these arguments, then the session id.
    Export(&'static [&'static str]),
    /// This agent writes no transcript of its own.
    Nothing,
}

/// A transcript that could not be found: where it was looked for.
#[derive(Debug)]
pub(crate) struct NotFound {
    pub(crate) tried: String,
}

/// Session ids become file names: only plain ones are used in paths.
pub(crate) fn plain_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// What an agent CLI's own UI starts with, beyond its executable.
pub(crate) struct Ui<'a> {
    pub(crate) model: Option<&'a str>,
    /// A session to continue.
    pub(crate) resume: Option<&'a str>,
    /// Skip its permission prompts (in a container only).
    pub(crate) bypass: bool,
}

/// An agent's flags for its own UI (its spec row's `interactive`), and the flag that gives the
/// first message when it takes one by a flag (else it is the last argument before `extra_args`).
pub(crate) type UiFlags = fn(ProcessBuilder, &Ui<'_>) -> (ProcessBuilder, Option<&'static str>);

/// What is in a folder (nothing when it cannot be read).
fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).map(|read| read.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default()
}

/// The folders in a folder.
pub(crate) fn dirs(dir: &Path) -> Vec<PathBuf> {
    entries(dir).into_iter().filter(|p| p.is_dir()).collect()
}

/// The files in a folder.
pub(crate) fn files(dir: impl AsRef<Path>) -> Vec<PathBuf> {
    entries(dir.as_ref()).into_iter().filter(|p| p.is_file()).collect()
}

/// The `.jsonl` files in a folder.
pub(super) fn jsonl(dir: &Path) -> Vec<PathBuf> {
    files(dir).into_iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect()
}

/// Names sorted newest first, for names that sort by time (`2026`, `11`, `23`).
pub(super) fn newest_first(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort();
    paths.reverse();
    paths
}

/// Of `paths`, the one modified last, at or after `since`.
pub(super) fn modified_last(paths: Vec<PathBuf>, since: SystemTime) -> Option<PathBuf> {
    let fresh = |path: &PathBuf| path.metadata().and_then(|m| m.modified()).ok().filter(|time| *time >= since);
    paths.into_iter().filter_map(|path| fresh(&path).map(|time| (time, path))).max().map(|(_, path)| path)
}

/// A file's name without its extension.
pub(super) fn stem(path: &Path) -> String {
    path.file_stem().unwrap_or_default().to_string_lossy().into_owned()
}

/// The first file under `folders` (one level down) whose name ends with `suffix`.
pub(super) fn find_by_suffix(folders: Vec<PathBuf>, suffix: &str) -> Option<PathBuf> {
    folders
        .into_iter()
        .flat_map(files)
        .find(|path| path.file_name().unwrap_or_default().to_string_lossy().ends_with(suffix))
}
