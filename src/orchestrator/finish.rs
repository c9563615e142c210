//! The end of a run, whatever happened: merge a successful merge-to-head branch into its
//! target, keep what must be kept (a branch with unmerged commits, a worktree with uncommitted
//! changes), remove the rest, release the lock. Never deletes uncommitted work.

use super::steps::LoopEnd;
use super::workspace::{Workspace, WorktreeAction};
use crate::error::Error;
use crate::git::{merge_into, Commit, MergeResult, Removal};
use crate::manifest::schema::Strategy;
use crate::record::MergeKind;
use crate::report::{Event, RunEvents};
use std::path::PathBuf;

pub(crate) struct Finished {
    /// Still held: the run is not over until its record says how it ended.
    pub(crate) lock: crate::lock::BranchLock,
    pub(crate) commits: Vec<Commit>,
    pub(crate) merged: Option<Merged>,
    pub(crate) preserved_branch: Option<String>,
    pub(crate) preserved_worktree: Option<PathBuf>,
    pub(crate) error: Option<Error>,
    /// One of several attempts: this one's work landed.
    pub(crate) chosen: bool,
}

/// A merge into the run's target that happened.
pub(crate) struct Merged {
    pub(crate) into: String,
    pub(crate) kind: MergeKind,
    /// The target's new tip and the tip it moved from (`None` when it was already there).
    pub(crate) commit: Option<String>,
    pub(crate) onto: Option<String>,
    /// Its place among the merges of an invocation of several runs.
    pub(crate) queue_position: Option<u32>,
    /// How many commits entered the target.
    pub(crate) commits: Option<u32>,
    /// How long the merge waited for the repository lock: its wait in the merge queue.
    pub(crate) waited_ms: u64,
}

/// How the merge is done and numbered.
pub(crate) struct MergeSettings<'a> {
    /// `branch.rebase`.
    pub(crate) rebase: bool,
    /// The invocation of several runs, whose merges are numbered.
    pub(crate) batch: Option<&'a str>,
    /// One of several attempts at the same task: it merges only if no other attempt did.
    pub(crate) attempt: Option<&'a crate::record::AttemptRecord>,
    /// `attempts_pick = "best"`: no attempt merges by itself; the choice is made when all end.
    pub(crate) hold: bool,
    /// A worktree left dirty by a run that otherwise ended well fails it (exit 1): the agent's
    /// own work, not landed (false for interactive sessions and checkouts dirty from the start).
    pub(crate) leftovers_fail: bool,
    /// What the run may not change and still merge by itself.
    pub(crate) protected: super::protect::Protected,
    /// `[pull_request]`: the work lands through the forge, never by a merge here.
    pub(crate) pull_request: bool,
}

/// What the run's work lands as: the decision, before anything is done.
#[derive(Debug, PartialEq, Eq)]
enum Landing {
    /// `head`: the commits are on the checked-out branch already.
    InPlace,
    /// `named`, or a `merge-to-head` run that failed with commits: they stay on the branch.
    Branch,
    /// A `merge-to-head` run that ended well with commits: merged into its target.
    Merge { target: String },
    /// A `merge-to-head` run with no commits: nothing to land, nothing to keep.
    Nothing,
}

fn decide(strategy: Strategy, failed: bool, has_commits: bool, target: Option<&str>) -> Landing {
    match (strategy, target) {
        (Strategy::Head, _) => Landing::InPlace,
        (Strategy::Named, _) => Landing::Branch,
        (Strategy::MergeToHead, _) if !has_commits => Landing::Nothing,
        (Strategy::MergeToHead, Some(target)) if !failed => Landing::Merge { target: target.to_owned() },
        (Strategy::MergeToHead, _) => Landing::Branch,
    }
}

/// What became of the worktree.
enum WorktreeEnd {
    /// The person's checkout, or a reused worktree: never removed.
    Untouched,
    Removed,
    /// Kept: it holds uncommitted changes (or could not be removed).
    Kept(PathBuf),
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
    // What the branch holds now, from git: the loop's list is behind whenever work came back
    // after its last look (the sandbox's close after a stop brings the last commits home), and
    // a branch is deleted below only at the tip read here.
    let tip = workspace.repo.branch_commit(&pre.branch).ok().flatten();
    let mut commits = match workspace.repo.commits_between(&pre.start_commit, &pre.branch) {
        Ok(commits) => commits,
        Err(err) => known_commits.unwrap_or_else(|| {
            error.get_or_insert(err);
            Vec::new()
        }),
    };
    // Merging, removing the worktree and deleting the branch change what every run of this
    // repository shares: one eden process at a time.
    let asked = std::time::Instant::now();
    let shared = match workspace.repository_lock("merging and cleaning up", &mut |message| {
        reporter.report(&Event::Info { message: message.into() })
    }) {
        Ok(lock) => Some(lock),
        Err(err) => {
            error.get_or_insert(err);
            None
        }
    };
    let has_work = !commits.is_empty() || carries_work(&workspace);
    if error.is_none() && has_work {
        guard_what_steers(&workspace, &settings, &mut error, reporter);
    }
    let target = pre.base_branch.as_deref().filter(|_| !settings.pull_request);
    let mut landing = decide(pre.strategy, error.is_some(), has_work, target);
    let claim = settle_attempt(&mut landing, &settings, shared.is_some(), &workspace, reporter);
    let waited_ms = u64::try_from(asked.elapsed().as_millis()).unwrap_or(u64::MAX);
    let merged = match &landing {
        Landing::Merge { target } => match merge(&workspace, target, &settings, &mut commits, reporter) {
            Ok(merged) => Some(Merged { waited_ms, ..merged }),
            Err(err) => {
                error = Some(err);
                None
            }
        },
        _ => None,
    };
    // A claimed attempt whose merge failed gives the others their chance.
    if let (Some(claim), None) = (&claim, &merged) {
        let _ = std::fs::remove_file(claim);
    }
    let chosen = claim.is_some() && merged.is_some();
    let stopped = error.as_ref().is_some_and(|error| matches!(error.kind, crate::error::ErrorKind::Interrupted { .. }));
    let worktree = close_worktree(&workspace, shared.is_some(), stopped, reporter);
    let worktree_removed = matches!(worktree, WorktreeEnd::Removed);
    let preserved_worktree = match worktree {
        WorktreeEnd::Kept(path) => Some(path),
        _ => None,
    };
    if let (Some(path), None, true) = (&preserved_worktree, &error, settings.leftovers_fail) {
        let count = workspace.worktree.dirty_paths().map_or(0, |paths| paths.len());
        error = Some(leftovers_error(path, count, merged.as_ref().map(|merged| merged.into.as_str())));
    }
    let landed = merged.is_some() || landing == Landing::Nothing;
    let preserved_branch = settle_branch(&workspace, &landing, (landed && worktree_removed, tip.as_deref()), reporter);
    if let (Some(error), Some(branch)) = (&mut error, &preserved_branch) {
        explain_unmerged(error, pre.strategy, branch, (&workspace.run_id, commits.len()));
    }
    if let Some(error) = &mut error {
        explain_checks_failed(error, preserved_branch.as_deref(), &workspace.run_id);
    }
    drop(shared);
    Finished { lock: workspace.lock, commits, merged, preserved_branch, preserved_worktree, error, chosen }
}

/// A run started `--from` another carries that run's commits: they land with it, even when it
/// adds none of its own.
fn carries_work(workspace: &Workspace) -> bool {
    let pre = &workspace.pre;
    pre.start_commit != pre.base_commit
        && workspace.repo.commits_between(&pre.base_commit, &pre.branch).is_ok_and(|carried| !carried.is_empty())
}

/// Of several attempts, the first to get here with work to merge lands (the claim's path);
/// under the repository lock (`locked`), so two cannot both be first. The others, and every
/// attempt when the best is chosen at the end (`hold`), keep their branches.
fn settle_attempt(
    landing: &mut Landing,
    settings: &MergeSettings<'_>,
    locked: bool,
    workspace: &Workspace,
    reporter: &mut RunEvents,
) -> Option<PathBuf> {
    let (Landing::Merge { .. }, Some(attempt)) = (&*landing, settings.attempt) else { return None };
    if settings.hold {
        reporter.report(&Event::Info {
            message: "the branch is kept until every attempt has ended: the best of them lands".into(),
        });
        *landing = Landing::Branch;
        return None;
    }
    if !locked {
        return None;
    }
    let claim = claim_attempt(workspace, attempt, reporter);
    if claim.is_none() {
        *landing = Landing::Branch;
    }
    claim
}

/// Claim the landing for `attempt` among its group (`Layout::attempt_claim`, made only if
/// absent): the claim's path, or `None` (said) when another attempt landed first.
fn claim_attempt(
    workspace: &Workspace,
    attempt: &crate::record::AttemptRecord,
    reporter: &mut RunEvents,
) -> Option<PathBuf> {
    let claim = workspace.pre.layout().attempt_claim(&attempt.group);
    let made = std::fs::OpenOptions::new().write(true).create_new(true).open(&claim);
    match made {
        Ok(mut file) => {
            use std::io::Write;
            let _ = writeln!(file, "{} {}", attempt.number, workspace.run_id);
            Some(claim)
        }
        Err(_) => {
            let first = std::fs::read_to_string(&claim).unwrap_or_default();
            let number = first.split_whitespace().next().unwrap_or("another");
            reporter.report(&Event::Info {
                message: format!(
                    "attempt {number} of {} landed first: this attempt's work stays on its branch",
                    attempt.of
                )
                .into(),
            });
            None
        }
    }
}

/// Merge the run's branch into `target`, and say so. What the target now holds of a rebase
/// are the replayed commits: they replace `commits`.
fn merge(
    workspace: &Workspace,
    target: &str,
    settings: &MergeSettings<'_>,
    commits: &mut Vec<Commit>,
    reporter: &mut RunEvents,
) -> Result<Merged, Error> {
    let branch = &workspace.pre.branch;
    let (kind, commit, onto) = match merge_into(&workspace.repo, branch, target, settings.rebase)? {
        MergeResult::Conflict { files } => return Err(conflict_error(branch, target, &files)),
        MergeResult::FastForward { commit, onto } => (MergeKind::FastForward, Some(commit), Some(onto)),
        MergeResult::Merged { commit, onto } => (MergeKind::MergeCommit, Some(commit), Some(onto)),
        MergeResult::Rebased { commit, onto, commits: replayed } => {
            *commits = replayed;
            (MergeKind::Rebase, Some(commit), Some(onto))
        }
        MergeResult::UpToDate => (MergeKind::UpToDate, None, None),
    };
    // What entered the target: the run's commits, and any it lacked besides.
    let landed = match (kind, &onto) {
        (MergeKind::Rebase, _) => Some(commits.len() as u32),
        (_, Some(onto)) => workspace
            .repo
            .run(["rev-list", "--count", &format!("{onto}..refs/heads/{branch}")])
            .ok()
            .and_then(|count| count.trim().parse().ok()),
        _ => Some(0),
    };
    let queue_position = settings.batch.and_then(|batch| queue_position(&workspace.pre.layout(), batch, target));
    let merged = Merged { into: target.to_owned(), kind, commit, onto, queue_position, commits: landed, waited_ms: 0 };
    report_merge(&merged, branch, commits.len() as u32, reporter);
    Ok(merged)
}

fn report_merge(merged: &Merged, branch: &str, run_commits: u32, reporter: &mut RunEvents) {
    let target = &merged.into;
    let how = match (merged.kind, &merged.onto) {
        (MergeKind::Rebase, Some(onto)) => format!("replayed onto `{target}` ({})", short(onto)),
        (_, Some(onto)) => format!("onto {}", short(onto)),
        _ => "already there".to_owned(),
    };
    let position = merged.queue_position.map(|n| format!(", merge {n} of this invocation")).unwrap_or_default();
    let count = merged.commits.unwrap_or(run_commits);
    let message = format!("merged {count} commit(s) from `{branch}` into `{target}` ({how}{position})");
    reporter.report(&Event::Merged {
        target: target.as_str().into(),
        branch: branch.into(),
        commits: count,
        kind: merged.kind,
        merge_commit: merged.commit.as_deref().map(Into::into),
        onto: merged.onto.as_deref().map(Into::into),
        queue_position: merged.queue_position,
        message: message.as_str().into(),
    });
}

/// Remove the worktree eden made, unless it holds uncommitted work: git refuses to remove a
/// worktree with modified or untracked files, and that is the test, so nothing can be lost.
/// Without the repository lock nothing shared is touched: it is kept.
/// After a stop (Ctrl-C, SIGTERM), the person waits: the worktree's removal gets this long to
/// tell whether it holds uncommitted work, its files deleted afterwards on their own.
const STOPPED_REMOVAL: std::time::Duration = std::time::Duration::from_millis(1200);

fn close_worktree(workspace: &Workspace, locked: bool, stopped: bool, reporter: &mut RunEvents) -> WorktreeEnd {
    let pre = &workspace.pre;
    let kept = WorktreeEnd::Kept(pre.worktree.clone());
    let removal = match pre.action {
        WorktreeAction::UseCheckout => return WorktreeEnd::Untouched,
        WorktreeAction::Reuse if workspace.worktree.dirty_paths().map_or(true, |paths| !paths.is_empty()) => {
            Ok(Removal::KeptDirty)
        }
        WorktreeAction::Reuse => return WorktreeEnd::Untouched,
        WorktreeAction::CreateWithNewBranch | WorktreeAction::CreateForExistingBranch if !locked => {
            Ok(Removal::KeptDirty)
        }
        WorktreeAction::CreateWithNewBranch | WorktreeAction::CreateForExistingBranch if stopped => {
            let trash = pre.layout().scratches().join(format!("removed-{}", workspace.run_id));
            workspace.repo.remove_worktree_within(&pre.worktree, &trash, STOPPED_REMOVAL)
        }
        WorktreeAction::CreateWithNewBranch | WorktreeAction::CreateForExistingBranch => {
            workspace.repo.remove_worktree(&pre.worktree)
        }
    };
    let why = match removal {
        Ok(Removal::Removed) => return WorktreeEnd::Removed,
        Ok(Removal::KeptDirty) => "has uncommitted changes and is kept".to_owned(),
        Ok(Removal::NotChecked) => format!(
            "was not checked for uncommitted changes in time and is kept (`eden discard {}` removes it)",
            workspace.run_id
        ),
        Err(err) => {
            reporter.report(&Event::Warning { message: format!("could not remove the worktree: {err}").into() });
            "is kept".to_owned()
        }
    };
    reporter.report(&Event::Warning { message: format!("the worktree {why}: {}", pre.worktree.display()).into() });
    kept
}

/// The run's branch: kept with `named`, and with `merge-to-head` unless its work landed (or
/// there was none) and its worktree is gone (`may_go`), when it is deleted if it is still at
/// `tip`, the commit the landing was decided on. `head` has no branch of its own.
fn settle_branch(
    workspace: &Workspace,
    landing: &Landing,
    (may_go, tip): (bool, Option<&str>),
    reporter: &mut RunEvents,
) -> Option<String> {
    let branch = &workspace.pre.branch;
    match (landing, tip) {
        (Landing::InPlace, _) => None,
        (Landing::Merge { .. } | Landing::Nothing, None) if may_go => None,
        (Landing::Merge { .. } | Landing::Nothing, Some(tip)) if may_go => {
            match workspace.repo.delete_branch(branch, tip) {
                Ok(()) => None,
                Err(err) => {
                    reporter.report(&Event::Warning { message: format!("could not delete the branch: {err}").into() });
                    Some(branch.clone())
                }
            }
        }
        _ => Some(branch.clone()),
    }
}

/// An unfinished `merge-to-head` run is not merged: say how to land its work anyway. A run
/// stopped (a signal, a timeout, a cap) says where what it committed is.
fn explain_unmerged(error: &mut Error, strategy: Strategy, branch: &str, (run_id, commits): (&str, usize)) {
    use crate::error::ErrorKind;
    if strategy != Strategy::MergeToHead || commits == 0 {
        return;
    }
    let review = format!("`eden diff {run_id}`, then `eden merge {run_id}` or `eden discard {run_id}`");
    match error.kind {
        ErrorKind::Incomplete => {
            error.message.push_str(&format!("; nothing was merged, and `{branch}` keeps its {commits} commit(s)"));
            let hint = error.hint.take().unwrap_or_default();
            error.hint = Some(format!(
                "to review and merge the work as it is: `eden diff {run_id}`, `eden merge {run_id}`; or {hint}"
            ));
        }
        ErrorKind::Interrupted { .. } | ErrorKind::Timeout | ErrorKind::Budget { .. } => {
            let kept = format!("what it committed is kept on `{branch}` ({commits} commit(s)): {review}");
            error.hint = Some(match error.hint.take() {
                Some(hint) => format!("{hint}; {kept}"),
                None => kept,
            });
        }
        _ => {}
    }
}

/// Checks still failing when the iterations ran out: what there is to look at, by the run's id
/// (of several runs, `last` may be another), and what can be done with the branch if one is kept.
fn explain_checks_failed(error: &mut Error, branch: Option<&str>, run_id: &str) {
    if error.kind != crate::error::ErrorKind::ChecksFailed {
        return;
    }
    error.hint = Some(match branch {
        Some(branch) => format!(
            "`{branch}` is kept: see the failures with `eden sessions show {run_id}`, review the work with `eden diff {run_id}`, then merge it anyway (`eden merge {run_id}`) or drop it (`eden discard {run_id}`); or raise `loop.max_iterations`"
        ),
        None => format!(
            "the agent committed nothing, so no branch is kept: see the failures with `eden sessions show {run_id}`, then fix the checks or the prompt and run again"
        ),
    });
}

/// A `merge-to-head` run whose commits change what steers eden is not merged (exit 10); with
/// `head` they are in the checkout already, and with `named` on a branch kept anyway: said.
fn guard_what_steers(
    workspace: &Workspace,
    settings: &MergeSettings<'_>,
    error: &mut Option<Error>,
    reporter: &mut RunEvents,
) {
    let pre = &workspace.pre;
    let touched =
        match settings.protected.touched(&workspace.repo, &pre.base_commit, &format!("refs/heads/{}", pre.branch)) {
            Ok(touched) if touched.is_empty() => return,
            Ok(touched) => touched,
            Err(err) => {
                *error = Some(err);
                return;
            }
        };
    // What lands by itself (a merge here, a push to a pull request) may not change them.
    if pre.strategy == Strategy::MergeToHead || settings.pull_request {
        *error = Some(super::protect::refused(&touched, &workspace.run_id, settings.pull_request));
        return;
    }
    let files: Vec<String> = touched.iter().map(|path| format!("`{path}`")).collect();
    let message = format!(
        "the run's commits change {}, which steer eden's next run: review them before running the manifest again",
        files.join(", ")
    );
    reporter.report(&Event::Warning { message: message.as_str().into() });
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
        Some(target) => format!(" (its commits are merged into `{target}`)"),
        None => String::new(),
    };
    Error::new(
        crate::error::ErrorKind::Uncommitted,
        format!(
            "the agent finished{landed}, but it left {count} uncommitted change(s) in {}, which are on no branch",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_work_lands_as() {
        let main = Some("main");
        assert_eq!(decide(Strategy::Head, false, true, main), Landing::InPlace);
        assert_eq!(decide(Strategy::Named, false, true, main), Landing::Branch);
        assert_eq!(decide(Strategy::MergeToHead, false, true, main), Landing::Merge { target: "main".into() });
        // A failed run is not merged; its commits stay on its branch.
        assert_eq!(decide(Strategy::MergeToHead, true, true, main), Landing::Branch);
        // Nothing to land, failed or not: the branch need not stay.
        assert_eq!(decide(Strategy::MergeToHead, true, false, main), Landing::Nothing);
        assert_eq!(decide(Strategy::MergeToHead, false, false, main), Landing::Nothing);
        // No target to merge into (a detached start): kept, never guessed.
        assert_eq!(decide(Strategy::MergeToHead, false, true, None), Landing::Branch);
    }

    #[test]
    fn failed_checks_say_what_to_do_with_the_run() {
        let failed = || Error::new(crate::error::ErrorKind::ChecksFailed, "the checks `t` still failed");
        let mut kept = failed();
        explain_checks_failed(&mut kept, Some("eden/x"), "r1");
        let hint = kept.hint.unwrap();
        for said in
            ["`eden/x` is kept", "`eden sessions show r1`", "`eden diff r1`", "`eden merge r1`", "`eden discard r1`"]
        {
            assert!(hint.contains(said), "{said}: {hint}");
        }
        let mut nothing = failed();
        explain_checks_failed(&mut nothing, None, "r1");
        let hint = nothing.hint.unwrap();
        assert!(hint.contains("no branch is kept") && !hint.contains("eden merge"), "{hint}");
    }

    #[test]
    fn an_unfinished_run_says_how_to_land_its_work() {
        let mut error = Error::new(crate::error::ErrorKind::Incomplete, "no completion signal").with_hint("raise it");
        explain_unmerged(&mut error, Strategy::MergeToHead, "eden/x", ("r1", 2));
        assert!(error.message.ends_with("nothing was merged, and `eden/x` keeps its 2 commit(s)"), "{}", error.message);
        assert_eq!(
            error.hint.as_deref(),
            Some("to review and merge the work as it is: `eden diff r1`, `eden merge r1`; or raise it")
        );
        let mut other = Error::agent("exited 1");
        explain_unmerged(&mut other, Strategy::MergeToHead, "eden/x", ("r1", 2));
        assert_eq!(other.message, "exited 1");
    }
}
