//! The sanitized git runner and the repository queries eden needs.

use crate::error::{Error, Reason};
use crate::process::{Output, ProcessBuilder};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Variables that would point git somewhere other than the directory we name.
pub(crate) const GIT_ENV_TO_REMOVE: [&str; 8] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

/// git configuration for every git eden runs or starts an agent or hook with: no automatic
/// maintenance. After a commit, git may start `gc` or `maintenance` (packing refs, repacking)
/// in the background; eden ends every process a command leaves behind, and a git killed in the
/// middle of that leaves lock files (`packed-refs.lock`) that break every later ref update in
/// the repository. Your own git commands still do the maintenance.
pub(crate) const NO_BACKGROUND_WORK: [(&str, &str); 2] = [("gc.auto", "0"), ("maintenance.auto", "false")];

/// `core.hooksPath` for eden's own git: a path that holds no hook (git looks for
/// `/dev/null/<hook>`, which cannot exist).
pub(crate) const NO_HOOKS: &str = "core.hooksPath=/dev/null";

/// Add `settings` to what a command's git reads, through `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n`
/// (never a config file), after any the command already sets that way.
pub(crate) fn with_config(command: ProcessBuilder, settings: &[(&str, &str)]) -> ProcessBuilder {
    let count = command
        .get_env()
        .iter()
        .rev()
        .find(|(key, _)| key == "GIT_CONFIG_COUNT")
        .and_then(|(_, value)| value.as_ref()?.to_str()?.parse::<usize>().ok())
        .unwrap_or(0);
    let mut command = command.env("GIT_CONFIG_COUNT", (count + settings.len()).to_string());
    for (offset, (key, value)) in settings.iter().enumerate() {
        command = command
            .env(format!("GIT_CONFIG_KEY_{}", count + offset), key)
            .env(format!("GIT_CONFIG_VALUE_{}", count + offset), value);
    }
    command
}

/// A git command runner bound to one directory.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    pub(crate) dir: PathBuf,
}

/// Where things are, as `discover` found them.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The main worktree's root: `.eden/` lives here.
    pub(crate) root: PathBuf,
    /// The repository's shared `.git` directory.
    pub(crate) common_dir: PathBuf,
    /// The checkout eden was started in (the main worktree or a linked one).
    pub(crate) checkout: PathBuf,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub(crate) struct Commit {
    pub(crate) sha: String,
    pub(crate) subject: String,
}

impl Git {
    pub(crate) fn new(dir: impl Into<PathBuf>) -> Self {
        Git { dir: dir.into() }
    }

    pub(crate) fn command<I, S>(&self, args: I) -> ProcessBuilder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        // No repository hook runs in eden's own git, whatever `core.hooksPath` says: a hook is
        // a file in the repository (a tracked `.githooks/`, husky's `.husky/`) that an agent
        // can write, and eden's merge, worktree, commit and push would run it on this machine.
        let mut command = ProcessBuilder::new("git").args(["-c", "core.fsmonitor=false", "-c", NO_HOOKS]);
        for (key, value) in NO_BACKGROUND_WORK {
            command = command.arg("-c").arg(format!("{key}={value}"));
        }
        let mut command = command.args(args).cwd(&self.dir).env("LC_ALL", "C").env("GIT_TERMINAL_PROMPT", "0");
        for key in GIT_ENV_TO_REMOVE {
            command = command.env_remove(key);
        }
        command
    }

    /// Run to completion whatever git's exit status, returning the output and the command line
    /// (for messages). Only failing to start git at all is an error here.
    pub(crate) fn output<I, S>(&self, args: I) -> Result<(Output, String), Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let command = self.command(args);
        let output = command.output().map_err(|err| {
            Error::git(format!("cannot run `{command}`: {err}")).with_hint("is git installed and on PATH?")
        })?;
        Ok((output, command.to_string()))
    }

    /// Run and return stdout (trimmed of the final newline); a failure is a git error that
    /// shows the command and git's own message.
    pub(crate) fn run<I, S>(&self, args: I) -> Result<String, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let (output, command) = self.output(args)?;
        if !output.success() {
            return Err(git_failure(&command, &output.stderr));
        }
        Ok(output.stdout.trim_end_matches('\n').to_owned())
    }

    /// Run and report only whether git succeeded (for queries answered by the exit code).
    pub(crate) fn check<I, S>(&self, args: I) -> Result<bool, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        Ok(self.output(args)?.0.success())
    }

    /// Find the repository containing `dir` with a single `git rev-parse`.
    pub(crate) fn discover(dir: &Path) -> Result<Discovered, Error> {
        let not_a_repo = || {
            Error::usage(format!("`{}` is not inside a git repository", dir.display()))
                .with_hint("run eden from your repository (one with a working tree), or pass `--repo PATH`")
        };
        if !dir.is_dir() {
            let what = if dir.exists() { "is not a directory" } else { "does not exist" };
            return Err(Error::usage(format!("`{}` {what}", dir.display()))
                .with_hint("give `--repo` (or run eden in) a folder of your repository"));
        }
        let output = Git::new(dir)
            .run(["rev-parse", "--path-format=absolute", "--git-common-dir", "--show-toplevel"])
            .map_err(|_| not_a_repo())?;
        let mut lines = output.lines().map(PathBuf::from);
        let (Some(common_dir), Some(checkout)) = (lines.next(), lines.next()) else {
            return Err(not_a_repo());
        };
        // The main worktree holds the common `.git`; a repository with a separate git dir
        // (`--separate-git-dir`) has no such parent, so its checkout is the root.
        let root = match common_dir.file_name() {
            Some(name) if name == ".git" => common_dir.parent().map_or_else(|| checkout.clone(), Path::to_path_buf),
            _ => checkout.clone(),
        };
        Ok(Discovered { root: dunce_canonical(&root), common_dir, checkout })
    }

    /// The checked-out branch, or `None` on a detached HEAD.
    pub(crate) fn current_branch(&self) -> Result<Option<String>, Error> {
        let (output, _) = self.output(["symbolic-ref", "--quiet", "--short", "HEAD"])?;
        Ok(output.success().then(|| output.stdout.trim().to_owned()))
    }

    /// Resolve a revision to a commit id, `None` if it does not exist.
    pub(crate) fn resolve(&self, revision: &str) -> Result<Option<String>, Error> {
        let spec = format!("{revision}^{{commit}}");
        let (output, _) = self.output(["rev-parse", "--verify", "--quiet", spec.as_str()])?;
        Ok(output.success().then(|| output.stdout.trim().to_owned()))
    }

    /// The commit a local branch points at, `None` if there is no such branch.
    pub(crate) fn branch_commit(&self, branch: &str) -> Result<Option<String>, Error> {
        self.resolve(&format!("refs/heads/{branch}"))
    }

    /// Uncommitted changes (staged, unstaged or untracked, ignoring what git ignores), as
    /// `git status --porcelain` lines.
    pub(crate) fn dirty_paths(&self) -> Result<Vec<String>, Error> {
        let status = self.run(["status", "--porcelain", "--untracked-files=normal"])?;
        Ok(status.lines().map(str::to_owned).collect())
    }

    /// Uncommitted changes to tracked files only (staged or not), as `git status --porcelain`
    /// lines: what a merge into this checkout could run into.
    pub(crate) fn tracked_changes(&self) -> Result<Vec<String>, Error> {
        let status = self.run(["status", "--porcelain", "--untracked-files=no"])?;
        Ok(status.lines().map(str::to_owned).collect())
    }

    /// Commits reachable from `tip` but not from `base`, oldest first.
    pub(crate) fn commits_between(&self, base: &str, tip: &str) -> Result<Vec<Commit>, Error> {
        let range = format!("{base}..{tip}");
        let log = self.run(["log", "--reverse", "--format=%H%x00%s", range.as_str(), "--"])?;
        Ok(log
            .lines()
            .filter_map(|line| line.split_once('\0'))
            .map(|(sha, subject)| Commit { sha: sha.to_owned(), subject: subject.to_owned() })
            .collect())
    }

    /// Add the top-level folder `name` to the repository's `info/exclude`, so what is in it
    /// never shows up as untracked files. Idempotent.
    pub(crate) fn exclude_folder(common_dir: &Path, name: &str) -> Result<(), Error> {
        let info = common_dir.join("info");
        let exclude = info.join("exclude");
        let current = std::fs::read_to_string(&exclude).unwrap_or_default();
        let forms = [format!("{name}/"), name.to_owned(), format!("/{name}/"), format!("/{name}")];
        if current.lines().any(|line| forms.iter().any(|form| line.trim() == form)) {
            return Ok(());
        }
        let write_error = |err: std::io::Error| Error::git(format!("cannot update `{}`: {err}", exclude.display()));
        fs_err::create_dir_all(&info).map_err(write_error)?;
        let separator = if current.is_empty() || current.ends_with('\n') { "" } else { "\n" };
        // Whole or not at all: a kill half-way must not cut the person's own patterns short.
        let temporary = info.join(format!("exclude.eden-{}", std::process::id()));
        fs_err::write(&temporary, format!("{current}{separator}# eden's worktrees, locks and logs\n/{name}/\n"))
            .and_then(|()| fs_err::rename(&temporary, &exclude))
            .map_err(|err| {
                let _ = std::fs::remove_file(&temporary);
                write_error(err)
            })
    }
}

/// A git command that failed: a git error, unless the disk is full — then it is the machine's
/// failure (exit 70), said as such.
pub(crate) fn git_failure(command: &str, stderr: &str) -> Error {
    let stderr = stderr.trim();
    if ["No space left on device", "Out of diskspace", "out of disk space"].iter().any(|said| stderr.contains(said)) {
        return Error::internal(format!("the disk is full: `{command}` failed: {stderr}"))
            .with_hint(DISK_FULL_HINT)
            .with_reason(Reason::GitSaid(stderr.to_owned()));
    }
    Error::git(format!("`{command}` failed: {stderr}")).with_reason(Reason::GitSaid(stderr.to_owned()))
}

/// What to do when a write failed for want of space.
pub(crate) const DISK_FULL_HINT: &str =
    "free some space on the disk that holds the repository (`eden clean --older-than 7d` removes old logs, sessions and patches), then run again: what was done so far is kept";

/// Canonicalize, falling back to the path as given (so messages still show something useful).
pub(crate) fn dunce_canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
