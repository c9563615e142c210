//! `artifacts`: after each step with globs of its own, and at the end of the run (before the
//! sandbox goes), the workspace's files that match are kept in `.eden/artifacts/RUN/` through
//! the sandbox's channel (`sandbox::artifacts`), listed in the record, never merged. A failed
//! collection is a warning: the run's result is the work's, not its by-products'.

use super::glob::Globs;
use super::journal::Journal;
use super::workspace::Workspace;
use crate::record::ArtifactRecord;
use crate::report::{Event, RunEvents};
use crate::sandbox::artifacts::ArtifactRequest;
use crate::sandbox::SandboxHandle;

/// Where and how much: what every collection of a run shares.
pub(super) struct Keeping<'a> {
    pub(crate) sandbox: &'a dyn SandboxHandle,
    pub(crate) workspace: &'a Workspace,
    pub(crate) run_id: &'a str,
    /// `sandbox.max_return`.
    pub(crate) limit: u64,
    pub(crate) journal: &'a Journal,
}

/// Keep the files `globs` match, after `what` (`step \`review\``, `the run`).
pub(super) fn keep(keeping: &Keeping<'_>, globs: &[String], what: &str, events: &mut RunEvents) {
    if globs.is_empty() {
        return;
    }
    let pre = &keeping.workspace.pre;
    let layout = pre.layout();
    let into = layout.artifacts(keeping.run_id);
    let globs = Globs::new(globs.iter().map(String::as_str));
    let select = |path: &str| globs.matches(path);
    let scratch = layout.scratch(keeping.run_id).join("artifacts");
    let request = ArtifactRequest {
        select: &select,
        into: &into,
        limit: keeping.limit,
        scratch: &scratch,
        worktree: &pre.worktree,
    };
    let collected = keeping.sandbox.artifacts(&request);
    let _ = crate::safe_fs::remove_tree(&scratch);
    let collected = match collected {
        Ok(collected) => collected,
        Err(err) => {
            let message = format!("the artifacts after {what} were not kept: {}", err.message);
            events.report(&Event::Warning { message: message.into() });
            return;
        }
    };
    for left in &collected.left {
        events.report(&Event::Warning { message: left.as_str().into() });
    }
    if collected.files.is_empty() {
        let message = format!("no file matched `artifacts` after {what}");
        events.report(&Event::Info { message: message.into() });
        return;
    }
    let shown: Vec<String> = collected
        .files
        .iter()
        .map(|file| format!("{} ({})", file.path, crate::values::format_size(file.bytes)))
        .collect();
    let message =
        format!("kept {} artifact(s) after {what} in `{}`: {}", shown.len(), into.display(), shown.join(", "));
    events.report(&Event::Info { message: message.into() });
    let _ = keeping.journal.update(|record| {
        record.artifacts_dir = Some(into.clone());
        for file in collected.files {
            record.artifacts.retain(|known: &ArtifactRecord| known.path != file.path);
            record.artifacts.push(file);
        }
        record.artifacts.sort_by(|a, b| a.path.cmp(&b.path));
    });
}
