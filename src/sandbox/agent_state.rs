//! The agent's state folders in a sandbox. The person's own (`~/.claude`, `~/.codex`, …) are
//! never shown to it: an agent that could write them could leave hooks, instructions or
//! `notify` commands that their own agent CLI runs the next time they use it. Each run gets
//! private folders instead, under `.eden/agent-state/<run-id>/<VAR>/`, seeded with copies of
//! what the agent needs to log in and behave as configured (the spec's `seed` list), writable
//! only inside the sandbox, and removed when the run ends. Transcripts are captured from there
//! (`safe_fs`: no symlink followed) after every iteration; nothing is ever copied back.

use crate::error::Error;
use crate::manifest::plan::AgentStateMount;
use std::path::{Path, PathBuf};

/// One private folder: the variable that points the agent at it, its value, and the folder
/// the agent writes (the value itself, or its agent-specific part, e.g. `…/opencode`).
#[derive(Debug, Clone)]
pub(crate) struct PrivateState {
    pub(crate) var: &'static str,
    pub(crate) value: PathBuf,
    pub(crate) folder: PathBuf,
}

/// Make the run's private folders under `root` (`.eden/agent-state/<run-id>`), readable by the
/// person only, and seed them.
pub(crate) fn make(root: &Path, states: &[AgentStateMount]) -> Result<Vec<PrivateState>, Error> {
    if states.is_empty() {
        return Ok(Vec::new());
    }
    let made = make_folders(root, states);
    if made.is_err() {
        let _ = crate::safe_fs::remove_tree(root);
    }
    made
}

fn make_folders(root: &Path, states: &[AgentStateMount]) -> Result<Vec<PrivateState>, Error> {
    use std::os::unix::fs::PermissionsExt;
    let failed = |what: &Path, err: std::io::Error| {
        Error::sandbox(format!("cannot prepare the agent's private folder `{}`: {err}", what.display()))
            .with_hint("set `sandbox.mount_agent_config = false` to run without the agent's configuration")
    };
    fs_err::create_dir_all(root).map_err(|err| failed(root, err))?;
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700)).map_err(|err| failed(root, err))?;
    let mut private = Vec::new();
    for state in states {
        let value = root.join(state.var);
        let folder = if state.share.is_empty() { value.clone() } else { value.join(state.share) };
        fs_err::create_dir_all(&folder).map_err(|err| failed(&folder, err))?;
        for source in &state.seed {
            let Some(name) = source.file_name() else { continue };
            copy(source, &folder.join(name)).map_err(|err| failed(source, err))?;
        }
        private.push(PrivateState { var: state.var, value, folder });
    }
    Ok(private)
}

/// Copy the person's file or folder (their own symlinks followed: it is their data).
fn copy(source: &Path, dest: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(source)?;
    if meta.is_dir() {
        std::fs::create_dir_all(dest)?;
        for entry in std::fs::read_dir(source)? {
            let entry = entry?;
            copy(&entry.path(), &dest.join(entry.file_name()))?;
        }
        Ok(())
    } else if meta.is_file() {
        std::fs::copy(source, dest).map(drop)
    } else {
        Ok(())
    }
}

/// Remove a run's private folders (whatever the agent left in them, no symlink followed).
pub(crate) fn remove(root: &Path) -> std::io::Result<()> {
    crate::safe_fs::remove_tree(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_copies_and_the_person_keeps_theirs() {
        let temp = tempfile::tempdir().unwrap();
        let own = temp.path().join("own/.claude");
        std::fs::create_dir_all(own.join("agents")).unwrap();
        std::fs::write(own.join("settings.json"), "{}").unwrap();
        std::fs::write(own.join("agents/a.md"), "a").unwrap();
        let state = AgentStateMount {
            var: "CLAUDE_CONFIG_DIR",
            share: "",
            source: own.clone(),
            seed: vec![own.join("settings.json"), own.join("agents")],
        };
        let root = temp.path().join("repo/.eden/agent-state/run1");
        let private = make(&root, &[state]).unwrap();
        assert_eq!(private[0].value, root.join("CLAUDE_CONFIG_DIR"));
        std::fs::write(private[0].folder.join("settings.json"), "{\"hooks\":1}").unwrap();
        assert_eq!(std::fs::read_to_string(own.join("settings.json")).unwrap(), "{}", "the person's is untouched");
        assert_eq!(std::fs::read_to_string(private[0].folder.join("agents/a.md")).unwrap(), "a");
        std::os::unix::fs::symlink(&own, private[0].folder.join("escape")).unwrap();
        remove(&root).unwrap();
        assert!(!root.exists() && own.join("agents/a.md").exists());
    }
}
