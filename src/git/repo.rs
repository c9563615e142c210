//! The sanitized git runner and the repository queries eden needs.

use crate::error::Error;
use crate::process::ProcessBuilder;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Variables that would point git somewhere other than the directory we name.
const GIT_ENV_TO_REMOVE: [&str; 8] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

/// A git command runner bound to one directory.
#[derive(Debug, Clone)]
pub struct Git {
    pub dir: PathBuf,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Commit {
    pub sha: String,
    pub subject: String,
}

impl Git {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Git { dir: dir.into() }
    }

    pub fn command<I, S>(&self, args: I) -> ProcessBuilder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut command = ProcessBuilder::new("git")
            .arg("-c")
            .arg("core.fsmonitor=false")
            .args(args)
            .cwd(&self.dir)
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0");
        for key in GIT_ENV_TO_REMOVE {
            command = command.env_remove(key);
        }
        command
    }

    /// Run and return stdout (trimmed of the final newline); a failure is a git error that
    /// shows the command and git's own message.
    pub fn run<I, S>(&self, args: I) -> Result<String, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let command = self.command(args);
        let output = command.output().map_err(|err| {
            Error::git(format!("cannot run `{command}`: {err}")).with_hint("is git installed and on PATH?")
        })?;
        if !output.success() {
            let message = output.stderr.trim();
            return Err(Error::git(format!("`{command}` failed: {message}")));
        }
        Ok(output.stdout.trim_end_matches('\n').to_owned())
    }

    /// Run and report only whether git succeeded (for queries answered by the exit code).
    pub fn check<I, S>(&self, args: I) -> Result<bool, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let command = self.command(args);
        let output = command.output().map_err(|err| Error::git(format!("cannot run `{command}`: {err}")))?;
        Ok(output.success())
    }

    /// The main worktree's root for the repository containing `dir`.
    pub fn discover(dir: &Path) -> Result<PathBuf, Error> {
        let probe = Git::new(dir);
        let not_a_repo = || {
            Error::usage(format!("`{}` is not inside a git repository", dir.display()))
                .with_hint("run eden from your repository, or pass `--repo PATH`")
        };
        if !dir.is_dir() {
            return Err(not_a_repo());
        }
        let common = probe
            .run(["rev-parse", "--path-format=absolute", "--git-common-dir"])
            .map_err(|_| not_a_repo())?;
        if probe.run(["rev-parse", "--is-bare-repository"]).is_ok_and(|bare| bare == "true") {
            return Err(Error::usage("eden needs a repository with a working tree, not a bare one"));
        }
        let common = PathBuf::from(common);
        let root = if common.file_name().is_some_and(|name| name == ".git") {
            common.parent().map(Path::to_path_buf).ok_or_else(not_a_repo)?
        } else {
            PathBuf::from(probe.run(["rev-parse", "--show-toplevel"])?)
        };
        Ok(dunce_canonical(&root))
    }

    pub fn git_common_dir(&self) -> Result<PathBuf, Error> {
        Ok(PathBuf::from(self.run(["rev-parse", "--path-format=absolute", "--git-common-dir"])?))
    }

    /// The checked-out branch, or `None` on a detached HEAD.
    pub fn current_branch(&self) -> Result<Option<String>, Error> {
        let output = self.command(["symbolic-ref", "--quiet", "--short", "HEAD"]).output();
        match output {
            Ok(output) if output.success() => Ok(Some(output.stdout.trim().to_owned())),
            Ok(_) => Ok(None),
            Err(err) => Err(Error::git(format!("cannot run git: {err}"))),
        }
    }

    /// Resolve a revision to a commit id, `None` if it does not exist.
    pub fn resolve(&self, revision: &str) -> Result<Option<String>, Error> {
        let spec = format!("{revision}^{{commit}}");
        let output = self
            .command(["rev-parse", "--verify", "--quiet", spec.as_str()])
            .output()
            .map_err(|err| Error::git(format!("cannot run git: {err}")))?;
        Ok(output.success().then(|| output.stdout.trim().to_owned()))
    }

    pub fn branch_exists(&self, branch: &str) -> Result<bool, Error> {
        self.check(["show-ref", "--verify", "--quiet", &format!("refs/heads/{branch}")])
    }

    /// Uncommitted changes (staged, unstaged or untracked, ignoring what git ignores), as
    /// `git status --porcelain` lines.
    pub fn dirty_paths(&self) -> Result<Vec<String>, Error> {
        let status = self.run(["status", "--porcelain", "--untracked-files=normal"])?;
        Ok(status.lines().map(str::to_owned).collect())
    }

    /// Commits reachable from `tip` but not from `base`, oldest first.
    pub fn commits_between(&self, base: &str, tip: &str) -> Result<Vec<Commit>, Error> {
        let range = format!("{base}..{tip}");
        let log = self.run(["log", "--reverse", "--format=%H%x00%s", range.as_str(), "--"])?;
        Ok(log
            .lines()
            .filter_map(|line| line.split_once('\0'))
            .map(|(sha, subject)| Commit { sha: sha.to_owned(), subject: subject.to_owned() })
            .collect())
    }

    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool, Error> {
        self.check(["merge-base", "--is-ancestor", ancestor, descendant])
    }

    /// Add `.eden/` to the repository's `info/exclude` so eden's state never shows up as
    /// untracked files. Idempotent.
    pub fn exclude_eden_dir(&self) -> Result<(), Error> {
        let info = self.git_common_dir()?.join("info");
        let exclude = info.join("exclude");
        let current = std::fs::read_to_string(&exclude).unwrap_or_default();
        if current.lines().any(|line| matches!(line.trim(), ".eden/" | ".eden" | "/.eden/" | "/.eden")) {
            return Ok(());
        }
        let write_error = |err: std::io::Error| Error::git(format!("cannot update `{}`: {err}", exclude.display()));
        fs_err::create_dir_all(&info).map_err(write_error)?;
        let separator = if current.is_empty() || current.ends_with('\n') { "" } else { "\n" };
        fs_err::write(&exclude, format!("{current}{separator}# eden's worktrees, locks and logs\n/.eden/\n"))
            .map_err(write_error)
    }
}

/// Canonicalize, falling back to the path as given (so messages still show something useful).
pub fn dunce_canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
