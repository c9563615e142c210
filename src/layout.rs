//! Every path eden creates, in one place: `.eden/` at the repository's root (worktrees, locks,
//! logs, run records, patches, sessions, the agents' private state, scratch files), the isolated
//! copies in the temporary folder, and the labels that mark its containers and volumes.
//! (`.eden/.env` is yours, not eden's: `manifest::dotenv` reads it from `dotenv`.) Runs create these through `Layout`
//! and `eden clean` walks them through it, so nothing eden makes can be missed by the cleanup.

use std::path::{Path, PathBuf};

/// The user's config folder for eden: `$XDG_CONFIG_HOME/eden` (when absolute), else
/// `$HOME/.config/eden`; `env` reads the environment.
pub(crate) fn user_config_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let config = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| env("HOME").filter(|home| !home.is_empty()).map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("eden"))
}

#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The main worktree's root.
    pub(crate) root: PathBuf,
    /// The repository's shared `.git` directory.
    pub(crate) common_dir: PathBuf,
}

/// Prefix of an isolated copy's folder in the temporary folder; its private `/tmp` and home are in
/// the folder that adds `-tmp`, its owner file adds `.json`.
pub(crate) const ISOLATED_PREFIX: &str = "eden-isolated-";

impl Layout {
    pub(crate) fn new(root: impl Into<PathBuf>, common_dir: impl Into<PathBuf>) -> Self {
        Layout { root: root.into(), common_dir: common_dir.into() }
    }

    pub(crate) fn eden_dir(&self) -> PathBuf {
        self.root.join(EDEN_DIR)
    }

    /// The manifests `eden mcp` writes for quick runs.
    pub(crate) fn mcp_manifests(&self) -> PathBuf {
        self.eden_dir().join("mcp")
    }

    /// `.eden/worktrees/<branch-slug>`: one per branch.
    pub(crate) fn worktrees(&self) -> PathBuf {
        self.eden_dir().join("worktrees")
    }

    /// `.eden/locks/`: `<branch-slug>.lock` per branch in use, and the repository lock.
    pub(crate) fn locks(&self) -> PathBuf {
        self.eden_dir().join("locks")
    }

    /// The merges of one invocation of several runs so far, one target per line: the merge
    /// queue's positions (`merge_queue_position`). Written under the repository lock.
    pub(crate) fn batch_merges(&self, batch_id: &str) -> PathBuf {
        self.locks().join(format!("batch-{batch_id}.merges"))
    }

    /// Made by the attempt of an invocation of `--attempts` that lands, under the repository
    /// lock: the others see it and keep their branches. Removed when the invocation ends.
    pub(crate) fn attempt_claim(&self, group: &str) -> PathBuf {
        self.locks().join(format!("attempts-{group}.chosen"))
    }

    /// What attempt `number` of an invocation of `--attempts` has spent so far (its usage, as
    /// JSON), for the others' `[budget]`. Removed when the invocation ends.
    pub(crate) fn attempt_spend(&self, group: &str, number: u32) -> PathBuf {
        self.locks().join(format!("attempts-{group}.{number}.spend"))
    }

    /// Held around every git operation that changes what runs share (see `lock::RepoLock`).
    /// Never removed: removing an flock file while others wait on it would split the lock.
    pub(crate) fn repository_lock(&self) -> PathBuf {
        self.locks().join(REPOSITORY_LOCK)
    }

    /// `.eden/runs/<run-id>.json`.
    pub(crate) fn runs(&self) -> PathBuf {
        self.eden_dir().join("runs")
    }

    pub(crate) fn record(&self, run_id: &str) -> PathBuf {
        self.runs().join(format!("{run_id}.json"))
    }

    /// `.eden/logs/`: the JSON-lines logs.
    pub(crate) fn logs(&self) -> PathBuf {
        self.eden_dir().join("logs")
    }

    /// `.eden/patches/<run-id>.patch`: uncommitted work brought back from a sandbox (and
    /// `<run-id>.salvaged.{bundle,patch}`: what a killed eden's sandbox still held).
    pub(crate) fn patches(&self) -> PathBuf {
        self.eden_dir().join("patches")
    }

    /// `.eden/sessions/<run-id>/`: captured agent transcripts.
    pub(crate) fn sessions(&self) -> PathBuf {
        self.eden_dir().join("sessions")
    }

    /// `<common dir>/eden-exec/`: where versions before the sandbox boundary kept the pid files
    /// of container commands (the shared `.git` was mounted then). Only `eden clean` looks here.
    pub(crate) fn legacy_exec_dirs(&self) -> PathBuf {
        self.common_dir.join("eden-exec")
    }

    /// `.eden/agent-state/<run-id>/`: the agent's private state folders in a sandbox (its copy of
    /// the person's login and settings, its transcripts), one per variable that names one.
    /// `.eden/steer/<run>`: the prompt `eden steer` left for a running run's next iteration.
    pub(crate) fn steer(&self, run_id: &str) -> PathBuf {
        self.eden_dir().join("steer").join(run_id)
    }

    /// `.eden/artifacts`: each run's kept files, in a folder named by its id.
    pub(crate) fn artifacts_root(&self) -> PathBuf {
        self.eden_dir().join("artifacts")
    }

    pub(crate) fn artifacts(&self, run_id: &str) -> PathBuf {
        self.artifacts_root().join(run_id)
    }

    pub(crate) fn agent_states(&self) -> PathBuf {
        self.eden_dir().join("agent-state")
    }

    pub(crate) fn agent_state(&self, run_id: &str) -> PathBuf {
        self.agent_states().join(run_id)
    }

    /// `.eden/tmp/<run-id>/`: eden's own scratch files of a run (the `.git` it builds for a
    /// sandbox, bundles on their way in), removed when the run ends.
    pub(crate) fn scratches(&self) -> PathBuf {
        self.eden_dir().join("tmp")
    }

    pub(crate) fn scratch(&self, run_id: &str) -> PathBuf {
        self.scratches().join(run_id)
    }
}

/// eden's folder at the repository's root (kept out of git through `info/exclude`).
pub(crate) const EDEN_DIR: &str = ".eden";

/// `.eden/.env` of the repository at `root`: yours (eden only reads it), the secrets of runs.
pub(crate) fn dotenv(root: &Path) -> PathBuf {
    root.join(EDEN_DIR).join(".env")
}

/// Labels on every container eden starts: its run, repository, branch and eden's pid, and
/// where its workspace is inside and the commit it started from (to salvage its work if eden
/// dies). Its workspace volume has the same name and the run and repository labels.
pub(crate) const LABEL_RUN: &str = "eden.run";
pub(crate) const LABEL_REPO: &str = "eden.repo";
pub(crate) const LABEL_BRANCH: &str = "eden.branch";
pub(crate) const LABEL_PID: &str = "eden.pid";
pub(crate) const LABEL_WORKSPACE: &str = "eden.workspace";
pub(crate) const LABEL_BASE: &str = "eden.base";
/// The `uid:gid` the run's commands run as in its container (whose own user is root, holding
/// only what eden's set-up commands need).
pub(crate) const LABEL_USER: &str = "eden.user";

/// The file name of the repository lock inside `.eden/locks/`.
pub(crate) const REPOSITORY_LOCK: &str = "repository.lock";

/// Where an isolated run lives in the temporary folder.
pub(crate) struct IsolatedPaths {
    /// The copy the agent works in.
    pub(crate) copy: PathBuf,
    /// What is private to its sandbox: `tmp/` (its `/tmp`) and `home/` (its home).
    pub(crate) tmp: PathBuf,
    /// Whose run it is (`sandbox::isolated::Owner`), beside the copy where the agent cannot write.
    pub(crate) owner: PathBuf,
}

/// The isolated copy of a run: its folder in the temporary folder, its private `/tmp` and home,
/// and its owner file.
pub(crate) fn isolated_copy(run_id: &str) -> IsolatedPaths {
    let temp = std::env::temp_dir();
    IsolatedPaths {
        copy: temp.join(format!("{ISOLATED_PREFIX}{run_id}")),
        tmp: temp.join(format!("{ISOLATED_PREFIX}{run_id}-tmp")),
        owner: temp.join(format!("{ISOLATED_PREFIX}{run_id}.json")),
    }
}
