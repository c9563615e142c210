//! Where the agent works. `preflight` decides branch, base and worktree from the plan and the
//! repository without changing anything; `create` then takes the lock and makes the worktree.
//! Everything that can be refused is refused in `preflight`.

use crate::error::Error;
use crate::git::{slug, Discovered, Git, WorktreeList};
use crate::layout::Layout;
use crate::lock::{BranchLock, RepoLock, Taken};
use crate::manifest::plan::Plan;
use crate::manifest::schema::Strategy;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) struct Preflight {
    pub(crate) strategy: Strategy,
    /// The main worktree's root; `.eden/` lives here.
    pub(crate) root: PathBuf,
    /// The checkout eden was started in (`copy_to_worktree` copies from here).
    pub(crate) checkout: PathBuf,
    pub(crate) common_dir: PathBuf,
    pub(crate) branch: String,
    /// The branch the run started from (and, for merge-to-head, merges back into).
    pub(crate) base_branch: Option<String>,
    pub(crate) base_commit: String,
    /// Where the run's branch starts: the base, or with `--from` another run's commit.
    pub(crate) start_commit: String,
    pub(crate) worktree: PathBuf,
    pub(crate) action: WorktreeAction,
}

pub(crate) enum WorktreeAction {
    /// `head`: the agent works in the user's checkout.
    UseCheckout,
    CreateWithNewBranch,
    CreateForExistingBranch,
    Reuse,
}

pub(crate) struct Workspace {
    pub(crate) pre: Preflight,
    pub(crate) repo: Git,
    pub(crate) worktree: Git,
    pub(crate) lock: BranchLock,
    pub(crate) run_id: String,
}

impl Preflight {
    pub(crate) fn layout(&self) -> Layout {
        Layout::new(&self.root, &self.common_dir)
    }
}

impl Workspace {
    /// Take the repository lock for a git operation that changes what runs share.
    pub(crate) fn repository_lock(&self, what: &str, waiting: &mut dyn FnMut(&str)) -> Result<RepoLock, Error> {
        RepoLock::acquire(&self.pre.layout().repository_lock(), &self.run_id, what, waiting)
    }

    /// Did this run create the worktree (so it may remove it)?
    pub(crate) fn owns_worktree(&self) -> bool {
        matches!(self.pre.action, WorktreeAction::CreateWithNewBranch | WorktreeAction::CreateForExistingBranch)
    }
}

/// How the checkout is going to be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// An agent left alone: with `head`, its `git add -A` could sweep up anything uncommitted.
    Run,
    /// `eden interactive`: the person drives, so untracked files (a manifest just written by
    /// `eden init`) do not stand in the way of `head`; changes to tracked files still do.
    Session,
}

/// `found` is the repository as `Git::discover` found it where eden was started (or why there
/// is none: reported here, after the manifest's own errors).
pub(crate) fn preflight(
    plan: &Plan,
    found: &Result<Discovered, Error>,
    run_id: &str,
    usage: Use,
) -> Result<Preflight, Error> {
    let found = found.clone()?;
    super::copy::check_sources(&found.checkout, &plan.copy_to_worktree)?;
    refuse_mounts_of_the_repository(plan, &found)?;
    if let Some(remote) = &plan.branch.push {
        check_remote(&Git::new(&found.root), remote)?;
    }
    let checkout = Git::new(&found.checkout);
    let current = checkout.current_branch()?;
    match plan.branch.strategy {
        Strategy::Head => head(plan, found, current, usage),
        Strategy::MergeToHead => merge_to_head(plan, found, current, run_id),
        Strategy::Named => named(plan, found, current),
    }
}

/// `branch.push` names a remote of this repository.
/// `--from`: the run's branch starts at `from`'s commit instead of the base's. Only where the
/// run makes a branch of its own (`merge-to-head`, or `named` with a new branch).
pub(crate) fn start_from(pre: &mut Preflight, from: Option<&crate::record::FromRecord>) -> Result<(), Error> {
    let Some(from) = from else { return Ok(()) };
    if !matches!(pre.action, WorktreeAction::CreateWithNewBranch) {
        return Err(Error::usage(format!(
            "`--from {}` needs a branch of the run's own to start at its commit; strategy `{}` {}",
            from.run,
            pre.strategy.as_str(),
            if pre.strategy == Strategy::Head { "works in your checkout" } else { "continues a branch that exists" }
        ))
        .with_hint("use strategy `merge-to-head` (the default), or `named` with a branch that does not exist yet"));
    }
    pre.start_commit = from.commit.clone();
    Ok(())
}

fn check_remote(repo: &Git, remote: &str) -> Result<(), Error> {
    if repo.check(["remote", "get-url", "--push", remote])? {
        return Ok(());
    }
    let known = repo.run(["remote"]).unwrap_or_default();
    let known: Vec<String> = known.lines().map(|name| format!("`{name}`")).collect();
    let known = if known.is_empty() { "it has none".to_owned() } else { format!("it has {}", known.join(", ")) };
    Err(Error::usage(format!("`branch.push` names `{remote}`, which is not a remote of this repository ({known})"))
        .with_hint(format!("add it (`git remote add {remote} URL`) or name another in `branch.push`")))
}

/// A sandbox must not be handed this repository (its `.git`, the checkout, other worktrees):
/// that is what it keeps from the agent.
fn refuse_mounts_of_the_repository(plan: &Plan, found: &Discovered) -> Result<(), Error> {
    let canonical = |path: &Path| crate::git::dunce_canonical(path);
    let repository = [canonical(&found.root), canonical(&found.common_dir), canonical(&found.checkout)];
    crate::sandbox::provider(&plan.sandbox).refuse_repository_mounts(&repository)
}

/// `head`: the agent works in the checkout, on its branch; refused if it has uncommitted
/// changes unless `allow_dirty`.
fn head(plan: &Plan, found: Discovered, current: Option<String>, usage: Use) -> Result<Preflight, Error> {
    let checkout = Git::new(&found.checkout);
    let branch = current.ok_or_else(|| {
        Error::git("HEAD is detached; strategy `head` commits onto the checked-out branch").with_hint(
            "check out a branch first (`git switch <branch>`, or `git switch -c <new-branch>` to keep this commit)",
        )
    })?;
    let base_commit = checkout.resolve("HEAD")?.ok_or_else(|| no_commits(&found.checkout))?;
    if !plan.branch.allow_dirty {
        let dirty = match usage {
            Use::Run => checkout.dirty_paths()?,
            Use::Session => checkout.tracked_changes()?,
        };
        if !dirty.is_empty() {
            let shown: Vec<&str> = dirty.iter().take(5).map(String::as_str).collect();
            let more = if dirty.len() > 5 { format!("\n  … and {} more", dirty.len() - 5) } else { String::new() };
            return Err(Error::git(format!(
                "the checkout `{}` has uncommitted changes:\n  {}{more}",
                found.checkout.display(),
                shown.join("\n  "),
            ))
            .with_hint(
                "strategy `head` works in your checkout: commit or stash first, or set `branch.allow_dirty = true`",
            ));
        }
    }
    Ok(Preflight {
        strategy: Strategy::Head,
        root: found.root,
        checkout: found.checkout.clone(),
        common_dir: found.common_dir,
        base_branch: Some(branch.clone()),
        branch,
        start_commit: base_commit.clone(),
        base_commit,
        worktree: found.checkout,
        action: WorktreeAction::UseCheckout,
    })
}

/// `merge-to-head`: a new `eden/<name>-<run id>` branch from the base, merged back at the end.
fn merge_to_head(plan: &Plan, found: Discovered, current: Option<String>, run_id: &str) -> Result<Preflight, Error> {
    let repo = Git::new(&found.root);
    let base = match &plan.branch.base {
        Some(base) => base.clone(),
        None => current.clone().ok_or_else(|| {
            Error::git("HEAD is detached, so there is no branch to merge back into")
                .with_hint("check out a branch, or set `branch.base` to the branch to merge into")
        })?,
    };
    let base_commit = repo.branch_commit(&base)?.ok_or_else(|| {
        if current.as_deref() == Some(base.as_str()) {
            return no_commits(&found.root);
        }
        Error::git(format!("base branch `{base}` does not exist"))
            .with_hint("strategy `merge-to-head` merges back into `branch.base`, which must be a local branch")
    })?;
    // The merge at the end lands in the checkout that has the base: if that has uncommitted
    // changes, say so now, not after the agent has run.
    if !plan.branch.allow_dirty {
        if let Some(checkout) = WorktreeList::read(&repo)?.find_branch(&base) {
            refuse_dirty(Path::new(checkout), &base, &found_layout(&found).repository_lock())?;
        }
    }
    let branch = format!("eden/{}-{run_id}", plan.name);
    Ok(Preflight {
        strategy: Strategy::MergeToHead,
        worktree: found_layout(&found).worktrees().join(slug(&branch)),
        checkout: found.checkout,
        common_dir: found.common_dir,
        root: found.root,
        branch,
        base_branch: Some(base),
        start_commit: base_commit.clone(),
        base_commit,
        action: WorktreeAction::CreateWithNewBranch,
    })
}

/// Refuse a checkout of `base` with uncommitted changes to tracked files. Another run's merge
/// into that checkout shows as changes while it lasts: they are looked at again once no eden
/// process holds the repository lock.
fn refuse_dirty(checkout: &Path, base: &str, repository_lock: &Path) -> Result<(), Error> {
    let git = Git::new(checkout);
    let mut changes = git.tracked_changes()?;
    let mut looks = 0;
    while !changes.is_empty() && looks < 20 && RepoLock::wait_while_held(repository_lock, Duration::from_secs(60)) {
        changes = git.tracked_changes()?;
        looks += 1;
    }
    if changes.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = changes.iter().take(5).map(|line| line.trim_start()).collect();
    let more = if changes.len() > 5 { format!("\n  … and {} more", changes.len() - 5) } else { String::new() };
    Err(Error::git(format!(
        "`{base}` is checked out at `{}` with uncommitted changes, where the run's merge would land:\n  {}{more}",
        checkout.display(),
        shown.join("\n  ")
    ))
    .with_hint(
        "commit or stash them first (nothing was started), or use strategy `named` to keep the work on a branch; `branch.allow_dirty = true` runs anyway",
    ))
}

/// `named`: the branch given, created from the base if missing, in eden's worktree for it.
fn named(plan: &Plan, found: Discovered, current: Option<String>) -> Result<Preflight, Error> {
    let repo = Git::new(&found.root);
    let branch = plan.branch.name.clone().expect("validated: named has a name");
    let eden_path = found_layout(&found).worktrees().join(slug(&branch));
    let layout = found_layout(&found);
    let (action, base_branch, base_commit) = match repo.branch_commit(&branch)? {
        Some(tip) => {
            let lock = layout.locks().join(format!("{}.lock", slug(&branch)));
            (existing_branch_action(&repo, &branch, &eden_path, &lock, plan.branch.reuse_worktree)?, None, tip)
        }
        None => {
            let base = plan.branch.base.clone().or(current);
            let base_commit = match &base {
                Some(base) => repo.resolve(base)?.ok_or_else(|| {
                    Error::git(format!("base `{base}` does not exist"))
                        .with_hint("set `branch.base` to an existing branch")
                })?,
                None => Git::new(&found.checkout).resolve("HEAD")?.ok_or_else(|| no_commits(&found.checkout))?,
            };
            (WorktreeAction::CreateWithNewBranch, base, base_commit)
        }
    };
    Ok(Preflight {
        strategy: Strategy::Named,
        checkout: found.checkout,
        common_dir: found.common_dir,
        root: found.root,
        branch,
        base_branch,
        start_commit: base_commit.clone(),
        base_commit,
        worktree: eden_path,
        action,
    })
}

/// For an existing branch: a new worktree, eden's own one again (`reuse_worktree`), or a
/// refusal when it is checked out somewhere.
fn existing_branch_action(
    repo: &Git,
    branch: &str,
    eden_path: &Path,
    lock: &Path,
    reuse: bool,
) -> Result<WorktreeAction, Error> {
    if let Some(holder) = BranchLock::holder(lock) {
        return Err(Error::git(format!(
            "branch `{branch}` is in use by another eden run (pid {}, run {})",
            holder.process.pid, holder.run_id
        ))
        .with_hint("wait for that run to finish, or use another branch"));
    }
    match WorktreeList::read(repo)?.find_branch(branch) {
        None => Ok(WorktreeAction::CreateForExistingBranch),
        Some(path) if same_path(path, eden_path) && reuse => Ok(WorktreeAction::Reuse),
        Some(path) if same_path(path, eden_path) => {
            Err(Error::git(format!("branch `{branch}` already has an eden worktree at `{}`", path.display()))
                .with_hint(
                    "set `branch.reuse_worktree = true` to continue in it, or remove it with `git worktree remove`",
                ))
        }
        Some(path) => Err(Error::git(format!("branch `{branch}` is checked out at `{}`", path.display()))
            .with_hint("check out another branch there first; eden works on its own worktree")),
    }
}

/// Add a worktree; if git refuses because a worktree whose folder is gone is still registered
/// there (a run killed while making it, a folder deleted by hand), forget those and try again.
fn with_pruning(repo: &Git, add: impl Fn() -> Result<(), Error>) -> Result<(), Error> {
    match add() {
        Err(err)
            if err
                .git_said()
                .is_some_and(|said| said.contains("already registered") || said.contains("missing but")) =>
        {
            repo.prune_worktrees()?;
            add()
        }
        result => result,
    }
}

fn found_layout(found: &crate::git::Discovered) -> Layout {
    Layout::new(&found.root, &found.common_dir)
}

fn no_commits(dir: &Path) -> Error {
    Error::git(format!("the repository at `{}` has no commits yet", dir.display()))
        .with_hint("make a first commit; eden branches off an existing commit")
}

fn same_path(a: &Path, b: &Path) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canonical(a) == canonical(b)
}

/// Take the branch lock and make the worktree, under the repository lock (other eden processes
/// may be adding or removing worktrees of the same repository right now). On failure everything
/// made here is undone.
pub(crate) fn create(pre: Preflight, run_id: &str, notes: &mut Vec<String>) -> Result<Workspace, Error> {
    let layout = pre.layout();
    let repo = Git::new(&pre.root);
    let shared = RepoLock::acquire(&layout.repository_lock(), run_id, "creating the worktree", &mut |message| {
        notes.push(message.to_owned())
    })?;
    Git::exclude_folder(&pre.common_dir, crate::layout::EDEN_DIR)?;
    let (lock, taken) = BranchLock::acquire(&layout.locks(), &slug(&pre.branch), &pre.branch, run_id)?;
    if let Taken::ReclaimedFrom(pid) = taken {
        notes.push(format!("reclaimed a stale lock on `{}` left by pid {pid}", pre.branch));
        // That run died: git may have died with it, mid-update, leaving its own locks.
        for stale in crate::git::leftover_locks(&pre.common_dir, &pre.branch, &pre.worktree) {
            if std::fs::remove_file(&stale).is_ok() {
                notes.push(format!("removed `{}`, left by a git process of that run", stale.display()));
            }
        }
    }
    match pre.action {
        WorktreeAction::UseCheckout => {}
        WorktreeAction::Reuse => {
            if !repo.marks(&pre.branch).is_empty() {
                let _ = repo.mark_branch(&pre.branch, run_id);
            }
        }
        WorktreeAction::CreateWithNewBranch => {
            // A worktree `eden pool up` made ahead at the start commit, or a new one.
            let premade = super::premade::claim(&layout, &repo, &pre.worktree, &pre.branch, &pre.start_commit);
            let made = match premade {
                Ok(true) => Ok(()),
                Ok(false) | Err(_) => {
                    with_pruning(&repo, || repo.add_worktree_new_branch(&pre.worktree, &pre.branch, &pre.start_commit))
                }
            };
            if let Err(err) = made {
                // `git worktree add -b` may have made the branch before failing.
                if let Ok(Some(tip)) = repo.branch_commit(&pre.branch) {
                    let _ = repo.delete_branch(&pre.branch, &tip);
                }
                return Err(err);
            }
            if let Err(err) = repo.mark_branch(&pre.branch, run_id) {
                let _ = repo.run([
                    std::ffi::OsStr::new("worktree"),
                    "remove".as_ref(),
                    "--force".as_ref(),
                    pre.worktree.as_os_str(),
                ]);
                let _ = repo.delete_branch(&pre.branch, &pre.start_commit);
                return Err(err);
            }
        }
        WorktreeAction::CreateForExistingBranch => {
            with_pruning(&repo, || repo.add_worktree(&pre.worktree, &pre.branch))?;
            // A branch eden made for an earlier run is this run's too; one of the person's
            // stays theirs.
            if !repo.marks(&pre.branch).is_empty() {
                let _ = repo.mark_branch(&pre.branch, run_id);
            }
        }
    }
    drop(shared);
    let worktree = Git::new(&pre.worktree);
    Ok(Workspace { pre, repo, worktree, lock, run_id: run_id.to_owned() })
}
