//! What a run may not change and still merge by itself: the files that steer eden's next run of
//! the same manifest (the manifest, its prompt files, a `cli` agent's script, the scripts its
//! hooks and checks run, `Dockerfile.eden`), what its host hooks execute on this machine
//! (`host_reads`: what their scripts source, what their tools read by convention,
//! `hooks.host.reads`), the person's git hooks when `core.hooksPath` is in the repository, and
//! the person's own `branch.protect` globs. A `merge-to-head` run whose commits touch one is not
//! merged: its branch is kept and the run ends with exit 10 (`protected`), saying which;
//! `eden merge RUN` merges it after review.

use super::glob::Globs;
use super::host_reads;
use crate::error::{Error, ErrorKind};
use crate::git::Git;
use crate::manifest::plan::Plan;
use std::path::{Path, PathBuf};

/// The files and globs a run is kept from changing unreviewed, relative to the repository.
#[derive(Debug, Clone, Default)]
pub(crate) struct Protected {
    /// Files that steer eden, relative to the repository's top.
    files: Vec<String>,
    /// What host hooks read, the git hooks' folder, `branch.protect`.
    globs: Vec<String>,
}

impl Protected {
    /// What `plan` names, for a repository checked out at `checkout` whose files are read as
    /// they are at `base` (the commit the run is based on: the person's, not the agent's).
    pub(crate) fn of(plan: &Plan, checkout: &Path, base: &str) -> Protected {
        let checkout = crate::git::dunce_canonical(checkout);
        let repo = Git::new(&checkout);
        let mut absolute: Vec<PathBuf> = plan.manifest.iter().cloned().collect();
        let mut files = vec!["Dockerfile.eden".to_owned()];
        for step in &plan.steps {
            absolute.extend(step.prompt.file.iter().cloned());
            if let Some(binary) = step.agent.binary().filter(|binary| binary.components().count() > 1) {
                absolute.push(binary.to_path_buf());
            }
            for check in &step.checks {
                files.extend(host_reads::scripts_in(&check.cmd, check.cwd.as_deref().unwrap_or("")));
            }
        }
        for hook in plan.hooks.sandbox.values().flatten() {
            files.extend(host_reads::scripts_in(&hook.cmd, hook.cwd.as_deref().unwrap_or("")));
        }
        for path in absolute {
            let path = crate::git::dunce_canonical(&path);
            if let Ok(relative) = path.strip_prefix(&checkout) {
                files.push(relative.to_string_lossy().into_owned());
            }
        }
        files.sort();
        files.dedup();
        let read = |path: &str| read_at(&repo, base, path);
        let mut globs: Vec<String> = host_reads::of(plan, &read).into_iter().flat_map(|hook| hook.reads).collect();
        globs.extend(host_reads::git_hooks_folder(&repo, &checkout));
        globs.extend(plan.branch.protect.iter().cloned());
        // What judges a pull request (its CI) is out of the agent's reach.
        if plan.pull_request.is_some() {
            globs.push(".github/workflows/**".to_owned());
        }
        globs.sort();
        globs.dedup();
        Protected { files, globs }
    }

    /// The protected paths among those the commits `base..tip` touch.
    pub(crate) fn touched(&self, repo: &Git, base: &str, tip: &str) -> Result<Vec<String>, Error> {
        let changed = repo.run(["log", "--no-renames", "--name-only", "--format=", "-z", &format!("{base}..{tip}")])?;
        let globs = Globs::new(self.globs.iter().map(String::as_str));
        let mut touched: Vec<String> = changed
            .split('\0')
            .filter(|path| !path.is_empty())
            .filter(|path| self.files.iter().any(|file| file == path) || globs.matches(path))
            .map(str::to_owned)
            .collect();
        touched.sort();
        touched.dedup();
        Ok(touched)
    }
}

/// The error of a run that changed what steers eden.
/// `pull_request`: the work was to be pushed to a pull request (which CI and reviewers judge),
/// not merged here.
pub(crate) fn refused(touched: &[String], run_id: &str, pull_request: bool) -> Error {
    let shown: Vec<String> = touched.iter().take(8).map(|path| format!("`{path}`")).collect();
    let more = if touched.len() > 8 { format!(" and {} more", touched.len() - 8) } else { String::new() };
    let (what, hint) = match pull_request {
        true => (
            "what judges its pull request (`.github/workflows/**`), steer eden's next run or run on this machine (or `branch.protect` names): not pushed",
            format!("review them with `eden diff {run_id}`; the branch is kept here, and pushing it is yours to do"),
        ),
        false => (
            "steer eden's next run or run on this machine (or `branch.protect` names): not merged",
            format!("review them with `eden diff {run_id}`, then merge with `eden merge {run_id}`"),
        ),
    };
    Error::new(
        ErrorKind::Protected { files: touched.to_vec() },
        format!("the run's commits change {}{more}, which {what}", shown.join(", ")),
    )
    .with_hint(hint)
}

/// A repository file's text at `commit`, if it is there and small enough to read for what it
/// sources.
pub(crate) fn read_at(repo: &Git, commit: &str, path: &str) -> Option<String> {
    let object = format!("{commit}:{path}");
    let size: u64 = repo.run(["cat-file", "-s", &object]).ok()?.trim().parse().ok()?;
    if size > 1 << 20 {
        return None;
    }
    repo.run(["cat-file", "blob", &object]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_scripts_are_found_in_commands() {
        use host_reads::scripts_in;
        assert_eq!(scripts_in("./scripts/report.sh $EDEN_STATUS", ""), ["scripts/report.sh"]);
        assert_eq!(scripts_in("sh tools/check.sh --fast", "sub"), ["sub/tools/check.sh"]);
        assert_eq!(scripts_in("cargo test", ""), Vec::<String>::new());
        assert_eq!(scripts_in("/usr/bin/env x https://example.com/a", ""), Vec::<String>::new());
        assert_eq!(scripts_in("../outside/x.sh", ""), Vec::<String>::new());
        let reports = "./run-tests.sh --junitxml=report/junit.xml > report/out.txt 2>report/err.txt < in/data";
        assert_eq!(scripts_in(reports, ""), ["run-tests.sh"], "what a redirection names is data");
        assert_eq!(scripts_in("make 2>&1 ./after.sh", ""), ["after.sh"]);
    }
}
