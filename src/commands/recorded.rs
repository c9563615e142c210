//! What a command takes from a run's record on its word when it starts another run for it
//! (`sessions resume`, `pr`): the manifest, only when it is in the repository, and the overrides
//! that choose the agent and how long it goes on, never what runs here.

use crate::error::Error;
use crate::sessions::history::Light;
use crate::ui::print_note;

/// What a resume may take from a run's record on its word: the agent, its model and effort, the
/// loop, the timeouts, prompt arguments. Not hooks, the sandbox, mounts or a binary to run.
const CARRIED: [&str; 6] = ["agent.kind=", "agent.model=", "agent.effort=", "loop.", "timeouts.", "prompt_args."];

/// The original run's own overrides, except what resuming decides (then ours, then the
/// user's, follow): the record's word chooses the agent and how long it goes on, never what
/// runs here.
pub(super) fn carried_overrides(run: &Light) -> Vec<String> {
    let decided = ["agent.resume", "branch.", "prompt", "name", "loop.max_iterations"];
    let mut set = Vec::new();
    for pair in run.overrides.iter().filter(|pair| !decided.iter().any(|key| pair.starts_with(key))) {
        if CARRIED.iter().any(|key| pair.starts_with(key)) {
            set.push(pair.clone());
        } else {
            let key = pair.split('=').next().unwrap_or_default();
            print_note(&format!("`{key}` from the run's record is not carried over: give it again with `--set`"));
        }
    }
    set
}

/// The manifest a run's record names, if it is still there: only one in the repository (a
/// record names any path it likes; one outside is given again with `--manifest`).
pub(super) fn record_manifest(
    run: &Light,
    layout: &crate::layout::Layout,
) -> Result<Option<std::path::PathBuf>, Error> {
    let Some(path) = run.manifest.clone().filter(|path| path.is_file()) else { return Ok(None) };
    let inside = std::fs::canonicalize(&path).is_ok_and(|path| path.starts_with(&layout.root));
    if !inside {
        return Err(Error::usage(format!(
            "run `{}` was run from `{}`, outside this repository: eden does not run a manifest on a record's word",
            run.id,
            path.display()
        ))
        .with_hint(format!(
            "name it yourself if it is yours: `eden sessions resume {} {}`",
            run.id,
            path.display()
        )));
    }
    Ok(Some(path))
}
