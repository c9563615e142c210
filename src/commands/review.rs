//! Reviewing what a run did, and deciding about it: `eden diff RUN` (what it changed against its
//! base, through git's own pager and diff settings), `eden merge RUN` (a kept run's branch merged
//! through the same safe path and lock as a run's own merge) and `eden discard RUN` (its branch,
//! worktree and container removed, its record kept). RUN as in `eden sessions`: `last`, a run id
//! or a prefix of one, a session id.

use crate::cli::{DiffArgs, DiscardArgs, ReviewArgs};
use crate::error::Error;
use crate::git::{slug, Git, MergeResult};
use crate::layout::Layout;
use crate::lock::{BranchLock, RepoLock};
use crate::record::{MergeKind, RunRecord};
use crate::sessions::history;
use crate::ui::{print_data, print_note};
use std::path::PathBuf;

/// The run RUN names, its whole record, and the repository.
fn the_run(run: &str, repo: Option<&PathBuf>) -> Result<(Layout, Git, RunRecord), Error> {
    let layout = super::layout(repo)?;
    let (runs, _) = history::load(&layout);
    let light = history::find(&runs, run)?;
    let record = RunRecord::load(&light.record_path)?;
    let git = Git::new(&layout.root);
    Ok((layout, git, record))
}

/// `eden diff`.
pub(crate) fn diff(mut args: DiffArgs) -> Result<i32, Error> {
    // No run id starts with `-`: `eden diff --stat` is the last run's, with `--stat` for git.
    if args.run.starts_with('-') {
        args.args.insert(0, std::mem::replace(&mut args.run, "last".to_owned()));
    }
    let (_, git, record) = the_run(&args.run, args.repo.as_ref())?;
    let Some(tip) = super::last_commit(&git, &record)? else {
        print_note(&format!("run `{}` made no commits", record.id));
        return Ok(0);
    };
    if git.resolve(&tip)?.is_none() || git.resolve(&record.base_commit)?.is_none() {
        return Err(Error::git(format!("the commits of run `{}` are no longer in this repository", record.id))
            .with_hint("its branch was deleted and git collected its commits"));
    }
    let range = [record.base_commit.clone(), tip];
    let status = git
        .command(["diff".to_owned()].iter().chain(&range).chain(&args.args))
        .status_inherited()
        .map_err(|err| Error::git(format!("cannot run `git diff`: {err}")))?;
    if let Some(worktree) = record.preserved_worktree.as_ref().filter(|path| path.is_dir()) {
        print_note(&format!(
            "its kept worktree `{}` holds uncommitted work too: `git -C {} diff`",
            worktree.display(),
            worktree.display()
        ));
    }
    Ok(if status.success() { 0 } else { 7 })
}

/// The run's branch lock, so nothing is done to a run that is still going.
fn lock_of(layout: &Layout, record: &RunRecord, branch: &str, what: &str) -> Result<BranchLock, Error> {
    let taken = BranchLock::acquire(&layout.locks(), &slug(branch), branch, &format!("{what}-{}", record.id));
    taken.map(|(lock, _)| lock).map_err(|err| {
        Error::git(format!("run `{}` is still going: {}", record.id, err.message))
            .with_hint(format!("wait until it ends (`eden sessions list`), then `eden {what} {}`", record.id))
    })
}

/// The kept branch of a run that `eden merge` may merge (its tip), and the base it goes into.
fn what_to_merge(git: &Git, record: &RunRecord) -> Result<(String, String, String), Error> {
    let id = &record.id;
    let kept = record.preserved_branch.clone().and_then(|branch| Some((git.branch_commit(&branch).ok()??, branch)));
    let Some((tip, branch)) = kept else {
        let why = if record.commits.is_empty() { "it made no commits" } else { "its branch is gone" };
        return Err(Error::usage(format!("run `{id}` has no branch to merge: {why}"))
            .with_hint("`eden sessions show` says how the run ended"));
    };
    if record.strategy == crate::manifest::schema::Strategy::Head {
        return Err(Error::usage(format!(
            "run `{id}` worked on `{branch}` itself (strategy `head`): nothing to merge"
        ))
        .with_hint("its commits are on that branch already"));
    }
    let Some(target) = record.base_branch.clone().filter(|target| *target != branch) else {
        return Err(Error::usage(format!(
            "run `{id}` went on in `{branch}`, which existed before it: it has no base of its own to merge into"
        ))
        .with_hint(format!("merge it where you want it: `git switch <target> && git merge {branch}`")));
    };
    if !git.made_for(&branch, id) {
        return Err(Error::usage(format!(
            "run `{id}` names `{branch}`, which eden did not make for that run: nothing was merged"
        ))
        .with_hint(format!("if it is yours to merge, merge it by hand: `git merge {branch}`")));
    }
    Ok((tip, branch, target))
}

/// `eden merge`.
pub(crate) fn merge(args: ReviewArgs) -> Result<i32, Error> {
    let (layout, git, mut record) = the_run(&args.run, args.repo.as_ref())?;
    let id = record.id.clone();
    let run_branch = record.branch.clone();
    let _lock = lock_of(&layout, &record, &run_branch, "merge")?;
    if let Some(target) = &record.merged_into {
        return Err(Error::usage(format!("run `{id}` was merged into `{target}` already")).with_hint("nothing to do"));
    }
    let (tip, branch, target) = what_to_merge(&git, &record)?;
    let _repository = RepoLock::acquire(&layout.repository_lock(), &id, "merging", &mut |_| {})?;
    let commits = git.run(["rev-list", "--count", &format!("refs/heads/{target}..refs/heads/{branch}")])?;
    let (kind, commit, onto) = match crate::git::merge_into(&git, &branch, &target, false)? {
        MergeResult::Conflict { files } => {
            return Err(Error::git(format!(
                "`{branch}` conflicts with `{target}` in: {}; nothing was merged",
                files.join(", ")
            ))
            .with_hint(format!("resolve it by hand: `git switch {target} && git merge {branch}`")));
        }
        MergeResult::FastForward { commit, onto } => (MergeKind::FastForward, Some(commit), Some(onto)),
        MergeResult::Merged { commit, onto } => (MergeKind::MergeCommit, Some(commit), Some(onto)),
        MergeResult::Rebased { commit, onto, .. } => (MergeKind::Rebase, Some(commit), Some(onto)),
        MergeResult::UpToDate => (MergeKind::UpToDate, None, None),
    };
    // Tidy as a run does after its merge: the worktree if it is clean, then the branch.
    let worktree = record.preserved_worktree.clone().filter(|path| path.is_dir());
    let removed = match &worktree {
        Some(path) => git.run([std::ffi::OsStr::new("worktree"), "remove".as_ref(), path.as_os_str()]).is_ok(),
        None => true,
    };
    if removed {
        record.preserved_worktree = None;
        if git.delete_branch(&branch, &tip).is_ok() {
            record.preserved_branch = None;
        }
    }
    record.merged_into = Some(target.clone());
    record.merge_kind = Some(kind);
    record.merge_commit = commit;
    record.merge_onto = onto;
    record.merged_commits = commits.trim().parse().ok();
    let at = crate::record::now_rfc3339();
    record.later.push(crate::record::LaterRecord {
        at,
        action: crate::record::LaterAction::Merged,
        into: Some(target.clone()),
    });
    record.save().map_err(|err| Error::internal("cannot write the run record").with_source(err))?;
    print_note(&format!("merged {} commit(s) of run `{id}` from `{branch}` into `{target}`", commits.trim()));
    if !removed {
        print_note(&format!(
            "its worktree `{}` holds uncommitted changes: kept, with the branch",
            worktree.unwrap_or_default().display()
        ));
    }
    if args.json {
        print_data(&serde_json::to_string_pretty(&record).expect("records serialize"));
    }
    Ok(0)
}

/// `eden discard`.
pub(crate) fn discard(args: DiscardArgs) -> Result<i32, Error> {
    let (layout, git, mut record) = the_run(&args.review.run, args.review.repo.as_ref())?;
    let id = record.id.clone();
    let _lock = lock_of(&layout, &record, &record.branch, "discard")?;
    let branch = record.preserved_branch.clone().unwrap_or_else(|| record.branch.clone());
    let _repository = RepoLock::acquire(&layout.repository_lock(), &id, "discarding", &mut |_| {})?;
    let mut done = Vec::new();
    // The kept worktree; for a run that was killed, the worktree it had: only ever one of
    // eden's own, whatever the record says.
    let worktree = record.preserved_worktree.clone().or_else(|| {
        let own = record.merged_into.is_none();
        own.then(|| record.worktree.clone())
    });
    let worktree = worktree.filter(|path| {
        let path = crate::values::normalize_path(path);
        path.starts_with(layout.worktrees()) && path != layout.worktrees()
    });
    if let Some(worktree) = worktree.filter(|path| path.is_dir()) {
        let dirty = Git::new(&worktree).dirty_paths().unwrap_or_default();
        if !dirty.is_empty() && !args.force {
            return Err(Error::usage(format!(
                "the worktree `{}` of run `{id}` has {} uncommitted change(s); nothing was removed",
                worktree.display(),
                dirty.len()
            ))
            .with_hint("look at them first (`git -C <worktree> status`); `--force` discards them too"));
        }
        let mut remove = vec![std::ffi::OsString::from("worktree"), "remove".into()];
        if args.force {
            remove.push("--force".into());
        }
        remove.push(worktree.clone().into());
        git.run(remove)?;
        record.preserved_worktree = None;
        done.push(format!("worktree `{}`", worktree.display()));
    }
    // The branch of a run that landed on `head` is the person's own: never deleted.
    let own = record.strategy == crate::manifest::schema::Strategy::Head;
    match git.branch_commit(&branch)?.filter(|_| !own) {
        Some(_) if !git.made_for(&branch, &id) => print_note(&format!(
            "kept the branch `{branch}`: eden did not make it for run `{id}` (`git branch -D {branch}` deletes it)"
        )),
        Some(tip) => match others_on(&git, &record, &branch)? {
            None => {
                git.delete_branch(&branch, &tip)?;
                record.preserved_branch = None;
                done.push(format!("branch `{branch}`"));
            }
            Some(why) => {
                print_note(&format!("kept the branch `{branch}`: {why} (`git branch -D {branch}` deletes it)"))
            }
        },
        None => {}
    }
    done.extend(remove_sandbox(&layout, &record)?);
    // A merged run's work is in its target: nothing of it is discarded, whatever goes here.
    let merged = record.merged_into.clone();
    if !done.is_empty() && merged.is_none() {
        let at = crate::record::now_rfc3339();
        record.later.push(crate::record::LaterRecord { at, action: crate::record::LaterAction::Discarded, into: None });
    }
    // Its kept files go with its work; the record still lists them.
    let artifacts = layout.artifacts(&id);
    if artifacts.is_dir() {
        crate::safe_fs::remove_tree(&artifacts)
            .map_err(|err| Error::internal("cannot remove the run's artifacts").with_source(err))?;
        done.push(format!("artifacts `{}`", artifacts.display()));
    }
    record.save().map_err(|err| Error::internal("cannot write the run record").with_source(err))?;
    print_note(&discarded(&id, &done, merged.as_deref()));
    Ok(0)
}

/// What `eden discard` says it did: for a merged run, that its work stays where it landed.
fn discarded(id: &str, done: &[String], merged: Option<&str>) -> String {
    match (done.is_empty(), merged) {
        (true, Some(target)) => format!(
            "run `{id}` was merged into `{target}`: its work is there, and nothing is discarded (`git revert` undoes a merge)"
        ),
        (false, Some(target)) => format!(
            "removed {} of run `{id}`; its work stays merged into `{target}` (`git revert` undoes a merge)",
            done.join(", ")
        ),
        (true, None) => format!("run `{id}` left nothing to discard; its record stays"),
        (false, None) => format!("discarded {} of run `{id}`; its record stays", done.join(", ")),
    }
}

/// Why deleting `branch` would lose more than the run's own work, if it would: commits on it
/// that are not the run's (someone committed after), or history before the run that no other
/// branch holds (a `named` branch that existed before it).
fn others_on(git: &Git, record: &RunRecord, branch: &str) -> Result<Option<String>, Error> {
    let range = format!("{}..refs/heads/{branch}", record.base_commit);
    let ours: std::collections::HashSet<&str> = record.commits.iter().map(|commit| commit.sha.as_str()).collect();
    let listed = git.run(["rev-list", range.as_str()])?;
    let foreign = listed.lines().filter(|sha| !ours.contains(sha)).count();
    if foreign > 0 {
        return Ok(Some(format!("it has {foreign} commit(s) that are not the run's")));
    }
    let holders = git.run(["branch", "--format=%(refname:short)", "--contains", &record.base_commit])?;
    if !holders.lines().any(|holder| holder != branch) {
        return Ok(Some("what it held before the run is on no other branch".into()));
    }
    Ok(None)
}

/// The sandbox the run left (it was killed): what it holds saved under `.eden/patches`, then
/// removed, as `eden clean` does. Its kind is asked, as the record names it.
fn remove_sandbox(layout: &Layout, record: &RunRecord) -> Result<Vec<String>, Error> {
    let Some(container) = &record.container else { return Ok(Vec::new()) };
    let recorded = crate::sandbox::provider::Recorded {
        run_id: record.id.clone(),
        engine: container.engine.as_str().to_owned(),
        host: container.host.clone(),
        name: Some(container.name.clone()),
    };
    let mut removed = Vec::new();
    for row in &crate::sandbox::registry::KINDS {
        removed.extend(row.kind.remove_of_run(&layout.root, &recorded)?);
    }
    Ok(removed)
}
