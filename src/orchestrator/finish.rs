//! The end of a run, whatever happened: merge a successful merge-to-head branch into its
//! target, keep what must be kept (a branch with unmerged commits, a worktree with uncommitted
//! changes), remove the rest, release the lock. Never deletes uncommitted work.

use super::workspace::{Workspace, WorktreeAction};
use super::LoopEnd;
use crate::error::Error;
use crate::git::{merge_into, Commit, MergeResult, Removal};
use crate::manifest::schema::Strategy;
use crate::report::{Event, RunEvents};
use std::path::PathBuf;

pub(crate) struct Finished {
    /// Still held: the run is not over until its record says how it ended.
    pub lock: crate::lock::BranchLock,
    pub commits: Vec<Commit>,
    pub merged_into: Option<String>,
    pub merge_kind: Option<crate::record::MergeKind>,
    pub merge_commit: Option<String>,
    pub merge_onto: Option<String>,
    pub merge_queue_position: Option<u32>,
    pub merged_commits: Option<u32>,
    pub preserved_branch: Option<String>,
    pub preserved_worktree: Option<PathBuf>,
    pub error: Option<Error>,
}

/// How the merge is done and numbered.
pub(crate) struct MergeSettings<'a> {
    /// `branch.rebase`.
    pub rebase: bool,
    /// The invocation of several runs, whose merges are numbered.
    pub batch: Option<&'a str>,
    /// A worktree left dirty by a run that otherwise ended well fails it (exit 1): the agent's
    /// own work, not landed (false for interactive sessions and checkouts dirty from the start).
    pub leftovers_fail: bool,
}

pub(crate) fn finish(
    workspace: Workspace,
    outcome: Result<LoopEnd, Error>,
    known_commits: Option<Vec<Commit>>,
    settings: MergeSettings<'_>,
    reporter: &mut RunEvents,
) -> Finished {
    let pre = &workspace.pre;
    let mut error = outcome.err();
    let mut merged_into = None;
    let mut merge_commit = None;
    let mut merge_kind = None;
    let mut merge_onto = None;
    let mut merge_queue_position = None;
    let mut merged_commits = None;
    let mut preserved_branch = None;
    let mut preserved_worktree = None;

    // The loop collected the commits after each iteration; ask git only if it could not.
    let mut commits = match known_commits {
        Some(commits) => commits,
        None => workspace.repo.commits_between(&pre.base_commit, &pre.branch).unwrap_or_else(|err| {
            error.get_or_insert(err);
            Vec::new()
        }),
    };

    // Merging, removing the worktree and deleting the branch change what every run of this
    // repository shares: one eden process at a time.
    let shared = match workspace
        .repository_lock("merging and cleaning up", &mut |message| reporter.report(&Event::Info { message }))
    {
        Ok(lock) => Some(lock),
        Err(err) => {
            error.get_or_insert(err);
            None
        }
    };
    let mut merged = commits.is_empty();
    if pre.strategy == Strategy::MergeToHead && error.is_none() && !commits.is_empty() {
        let target = pre.base_branch.clone().expect("merge-to-head has a target");
        match merge_into(&workspace.repo, &pre.branch, &target, settings.rebase) {
            Ok(MergeResult::Conflict { files }) => {
                error = Some(conflict_error(&pre.branch, &target, &files));
            }
            Ok(result) => {
                use crate::record::MergeKind;
                (merge_kind, merge_commit, merge_onto) = match result {
                    MergeResult::FastForward { commit, onto } => {
                        (Some(MergeKind::FastForward), Some(commit), Some(onto))
                    }
                    MergeResult::Merged { commit, onto } => (Some(MergeKind::MergeCommit), Some(commit), Some(onto)),
                    MergeResult::Rebased { commit, onto, commits: replayed } => {
                        // What the target now holds are the replayed commits.
                        commits = replayed;
                        (Some(MergeKind::Rebase), Some(commit), Some(onto))
                    }
                    MergeResult::UpToDate | MergeResult::Conflict { .. } => (Some(MergeKind::UpToDate), None, None),
                };
                let how = match (merge_kind, &merge_onto) {
                    (Some(MergeKind::Rebase), Some(onto)) => format!("replayed onto `{target}` ({})", short(onto)),
                    (_, Some(onto)) => format!("onto {}", short(onto)),
                    _ => "already there".to_owned(),
                };
                // What entered the target: the run's commits, and any it lacked besides.
                let landed = match (&merge_kind, &merge_onto) {
                    (Some(MergeKind::Rebase), _) => Some(commits.len() as u32),
                    (_, Some(onto)) => workspace
                        .repo
                        .run(["rev-list", "--count", &format!("{onto}..refs/heads/{}", pre.branch)])
                        .ok()
                        .and_then(|count| count.trim().parse().ok()),
                    _ => Some(0),
                };
                merged_commits = landed;
                merged_into = Some(target.clone());
                merged = true;
                merge_queue_position = settings.batch.and_then(|batch| queue_position(&pre.layout(), batch, &target));
                let position =
                    merge_queue_position.map(|n| format!(", merge {n} of this invocation")).unwrap_or_default();
                let count = landed.unwrap_or(commits.len() as u32);
                let message =
                    format!("merged {count} commit(s) from `{}` into `{target}` ({how}{position})", pre.branch);
                reporter.report(&Event::Merged {
                    target: &target,
                    branch: &pre.branch,
                    commits: count,
                    kind: merge_kind.unwrap_or(MergeKind::UpToDate),
                    merge_commit: merge_commit.as_deref(),
                    onto: merge_onto.as_deref(),
                    queue_position: merge_queue_position,
                    message: &message,
                });
            }
            Err(err) => error = Some(err),
        }
    }

    // git refuses to remove a worktree with modified or untracked files: that is our test for
    // "has uncommitted work", so nothing can be lost here.
    let worktree_removed = match pre.action {
        WorktreeAction::UseCheckout => false,
        WorktreeAction::Reuse => {
            if workspace.worktree.dirty_paths().map_or(true, |paths| !paths.is_empty()) {
                preserved_worktree = Some(pre.worktree.clone());
            }
            false
        }
        WorktreeAction::CreateWithNewBranch | WorktreeAction::CreateForExistingBranch if shared.is_none() => {
            preserved_worktree = Some(pre.worktree.clone());
            false
        }
        WorktreeAction::CreateWithNewBranch | WorktreeAction::CreateForExistingBranch => {
            match workspace.repo.remove_worktree(&pre.worktree) {
                Ok(Removal::Removed) => true,
                Ok(Removal::KeptDirty) => {
                    preserved_worktree = Some(pre.worktree.clone());
                    false
                }
                Err(err) => {
                    reporter.report(&Event::Warning { message: &format!("could not remove the worktree: {err}") });
                    preserved_worktree = Some(pre.worktree.clone());
                    false
                }
            }
        }
    };
    if let Some(path) = &preserved_worktree {
        reporter.report(&Event::Warning {
            message: &format!("the worktree has uncommitted changes and is kept: {}", path.display()),
        });
        if error.is_none() && settings.leftovers_fail {
            let count = workspace.worktree.dirty_paths().map_or(0, |paths| paths.len());
            error = Some(leftovers_error(path, count, merged_into.as_deref()));
        }
    }

    match pre.strategy {
        Strategy::Head => {}
        Strategy::Named => preserved_branch = Some(pre.branch.clone()),
        Strategy::MergeToHead => {
            if merged && worktree_removed {
                if let Err(err) = workspace.repo.delete_branch(&pre.branch) {
                    reporter.report(&Event::Warning { message: &format!("could not delete the branch: {err}") });
                    preserved_branch = Some(pre.branch.clone());
                }
            } else {
                preserved_branch = Some(pre.branch.clone());
            }
        }
    }

    // An unfinished run is not merged: say how to land its work anyway.
    if let (Some(error), Strategy::MergeToHead, Some(branch)) = (&mut error, pre.strategy, &preserved_branch) {
        if error.kind == crate::error::ErrorKind::Incomplete && !commits.is_empty() {
            error
                .message
                .push_str(&format!("; nothing was merged, and `{branch}` keeps its {} commit(s)", commits.len()));
            let hint = error.hint.take().unwrap_or_default();
            error.hint = Some(format!("to merge the work as it is: `git merge {branch}`; or {hint}"));
        }
    }
    drop(shared);
    Finished {
        lock: workspace.lock,
        commits,
        merged_into,
        merge_kind,
        merge_commit,
        merge_onto,
        merge_queue_position,
        merged_commits,
        preserved_branch,
        preserved_worktree,
        error,
    }
}

fn short(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}

/// With several runs at once: this merge's place among the invocation's merges into `target`.
/// The caller holds the repository lock, so the count and the merge agree.
fn queue_position(layout: &crate::layout::Layout, batch: &str, target: &str) -> Option<u32> {
    use std::io::Write;
    let path = layout.batch_merges(batch);
    let before = std::fs::read_to_string(&path).unwrap_or_default();
    let position = before.lines().filter(|line| *line == target).count() as u32 + 1;
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).ok()?;
    writeln!(file, "{target}").ok()?;
    Some(position)
}

/// A run that ended well but left work uncommitted: never a silent success.
fn leftovers_error(worktree: &std::path::Path, count: usize, merged_into: Option<&str>) -> Error {
    let landed = match merged_into {
        Some(target) => format!("its commits are merged into `{target}`, but "),
        None => String::new(),
    };
    Error::new(
        crate::error::ErrorKind::Uncommitted,
        format!(
            "the agent finished, but {landed}it left {count} uncommitted change(s) in {}, which are on no branch",
            worktree.display()
        ),
    )
    .with_hint(format!(
        "look at them (`git -C {wt} status`), commit what you want (`git -C {wt} add -A && git -C {wt} commit`); or set `branch.commit_leftovers = true` to have eden commit what the agent leaves",
        wt = worktree.display()
    ))
}

fn conflict_error(branch: &str, target: &str, files: &[String]) -> Error {
    let listed = files.iter().map(|f| format!("  {f}")).collect::<Vec<_>>().join("\n");
    Error::new(crate::error::ErrorKind::MergeConflict { files: files.to_vec() }, format!(
        "merging `{branch}` into `{target}` conflicts; `{target}` was left untouched and `{branch}` is kept\nconflicting files:\n{listed}"
    ))
    .with_hint(format!(
        "to finish by hand: `git switch {target} && git merge {branch}`, resolve the conflicts, `git commit`, then `git branch -d {branch}`"
    ))
}
