//! `eden clean`: find everything eden left behind — worktrees, `eden/*` branches, containers and
//! their workspace volumes, locks nobody holds, isolated copies, agents' private state folders,
//! scratch folders, and (on request) old logs, records, sessions, patches and artifacts — and remove what
//! is safe to remove.
//!
//! What a sandbox wrote is never trusted here: no git runs in an isolated copy or a container's
//! workspace on the host. A killed run's container or copy is asked (inside, as the run did) for
//! what it still holds, which is saved under `.eden/patches/` as a bundle and a patch before it
//! is removed; folders are removed without following any symlink (`safe_fs`).
//!
//! Safe means: never anything of a run that is still going (its branch lock is held, or its
//! record says `running` and its eden process is alive), never a worktree with uncommitted
//! changes, never a branch with commits no other branch has, never an isolated copy holding work
//! that was not brought back. Those are kept and listed with the reason; `--force` removes the
//! last three kinds too, never a live run's. The survey changes nothing; removal happens item by
//! item under the repository lock, each step complete in itself, so an interrupted clean leaves
//! a consistent state and running it again finishes the job.

use crate::error::Error;
use crate::git::{slug, Git, WorktreeList};
use crate::layout::{self, Layout};
use crate::lock::{BranchLock, RepoLock};
use crate::process::ProcessStamp;
use crate::record::RunStatus;
use crate::sandbox::provider::{Left, Recorded, Removal, Scope, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub(crate) struct Settings {
    /// Also remove logs, records, sessions and patches older than this.
    pub(crate) older_than: Option<Duration>,
    /// Also remove dirty worktrees, unmerged branches and copies with work in them.
    pub(crate) force: bool,
    /// Only list.
    pub(crate) dry_run: bool,
    /// Containers and isolated copies of every repository, not just this one.
    pub(crate) all_repos: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    Worktree,
    Branch,
    Container,
    Lock,
    /// A lock file a git process of a dead run left (`refs/heads/<branch>.lock`, `index.lock`).
    GitLock,
    IsolatedCopy,
    ExecDir,
    /// A container's workspace volume whose container is gone.
    Volume,
    /// A run's private agent state folder (`.eden/agent-state/<run>`).
    AgentState,
    /// A run's scratch folder (`.eden/tmp/<run>`).
    Scratch,
    Record,
    Log,
    Session,
    Patch,
    /// A run's kept files (`.eden/artifacts/<run>`).
    Artifacts,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Worktree => "worktree",
            Kind::Branch => "branch",
            Kind::Container => "container",
            Kind::Lock => "lock",
            Kind::GitLock => "git lock",
            Kind::IsolatedCopy => "isolated copy",
            Kind::ExecDir => "exec folder",
            Kind::Volume => "volume",
            Kind::AgentState => "agent state",
            Kind::Scratch => "scratch folder",
            Kind::Record => "record",
            Kind::Log => "log",
            Kind::Session => "session",
            Kind::Patch => "patch",
            Kind::Artifacts => "artifacts",
        }
    }
}

/// What clean does (or did) with an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// `--dry-run`: it would be removed.
    WouldRemove,
    Removed,
    /// `--dry-run`: it would be marked.
    WouldMark,
    /// An abandoned run's record, marked as such.
    Marked,
    Kept,
    /// Removal was attempted and failed (the reason says why).
    Failed,
    /// Not reached: clean was interrupted first.
    Skipped,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::WouldRemove => "would remove",
            Outcome::Removed => "removed",
            Outcome::WouldMark => "would mark",
            Outcome::Marked => "marked",
            Outcome::Kept => "kept",
            Outcome::Failed => "failed",
            Outcome::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Item {
    pub(crate) kind: Kind,
    /// A path (relative to the repository when inside it), a branch or a container name.
    pub(crate) name: String,
    pub(crate) outcome: Outcome,
    pub(crate) reason: String,
    /// Kept, but `--force` would remove it.
    pub(crate) needs_force: bool,
    #[serde(skip)]
    action: Option<Action>,
}

#[derive(Debug, Clone)]
enum Action {
    RemoveWorktree {
        path: PathBuf,
        force: bool,
    },
    PruneWorktrees,
    /// A branch, deleted only if it is still at the commit the survey found.
    DeleteBranch {
        name: String,
        tip: String,
    },
    /// What a sandbox kind found: saved what it holds under `.eden/patches`, then removed.
    Sandbox(Removal),
    RemoveFile(PathBuf),
    RemoveDir(PathBuf),
    MarkAbandoned(PathBuf),
}

/// What the survey found, before anything is done.
pub(crate) struct Survey {
    pub(crate) items: Vec<Item>,
    /// Problems that did not stop the survey (an engine that does not answer).
    pub(crate) warnings: Vec<String>,
    /// Logs, records and sessions present and kept because no `--older-than` was given.
    pub(crate) history_kept: usize,
}

/// A record, as far as clean needs it.
#[derive(Deserialize)]
struct RecordHead {
    id: String,
    status: Option<RunStatus>,
    process: Option<ProcessStamp>,
    branch: Option<String>,
    container: Option<ContainerHead>,
    exit_reason: Option<crate::record::ExitReason>,
}

impl RecordHead {
    /// Could its sandbox still be there? Not after a run that finished: it removed its
    /// container or pod, but for the volume of work too big to come back (a sandbox error). An
    /// engine or cluster only such records name is not asked (one that is gone would be a
    /// warning at every `eden clean`).
    fn may_have_left_a_sandbox(&self) -> bool {
        self.status != Some(RunStatus::Finished) || self.exit_reason == Some(crate::record::ExitReason::SandboxError)
    }
}

/// Which engine a record's container went on.
#[derive(Deserialize)]
struct ContainerHead {
    engine: String,
    host: Option<String>,
    name: Option<String>,
}

/// Which runs are going right now.
#[derive(Default)]
struct Live {
    run_ids: HashSet<String>,
    /// Slugs of branches whose lock is held (a worktree's folder name is its branch's slug).
    slugs: HashSet<String>,
    /// The sandboxes the records of runs that may have left one name.
    recorded: Vec<Recorded>,
}

/// Look at everything; change nothing.
pub(crate) fn survey(layout: Option<&Layout>, settings: &Settings) -> Survey {
    let mut survey = Survey { items: Vec::new(), warnings: Vec::new(), history_kept: 0 };
    let mut live = Live::default();
    if let Some(layout) = layout {
        locks(layout, &mut live, &mut survey);
        records(layout, &mut live, &mut survey);
        worktrees_and_branches(layout, settings, &live, &mut survey);
        legacy_exec_dirs(layout, &live, &mut survey);
        run_folders(layout, &live, &mut survey);
    }
    sandboxes(layout, settings, &live, &mut survey);
    if let Some(layout) = layout {
        history(layout, settings, &live, &mut survey);
    }
    // The order of removal: containers first (they use the worktrees), then worktrees, then the
    // branches they free, then the rest.
    survey.items.sort_by_key(|item| match item.kind {
        Kind::Container => 0,
        Kind::GitLock => 1,
        Kind::Worktree => 2,
        Kind::Branch => 3,
        _ => 4,
    });
    if settings.dry_run {
        for item in &mut survey.items {
            item.outcome = match item.outcome {
                Outcome::Removed => Outcome::WouldRemove,
                Outcome::Marked => Outcome::WouldMark,
                other => other,
            };
            item.action = None;
        }
    }
    survey
}

impl Item {
    fn remove(kind: Kind, name: String, reason: impl Into<String>, action: Action) -> Item {
        Item { kind, name, outcome: Outcome::Removed, reason: reason.into(), needs_force: false, action: Some(action) }
    }

    fn mark(kind: Kind, name: String, reason: impl Into<String>, action: Action) -> Item {
        Item { outcome: Outcome::Marked, ..Item::remove(kind, name, reason, action) }
    }

    fn keep(kind: Kind, name: String, reason: impl Into<String>) -> Item {
        Item { kind, name, outcome: Outcome::Kept, reason: reason.into(), needs_force: false, action: None }
    }

    /// Kept unless `force`, in which case removed by `action` (with the same reason).
    fn unsafe_to_remove(kind: Kind, name: String, reason: String, force: bool, action: Action) -> Item {
        if force {
            Item::remove(kind, name, format!("{reason} (--force)"), action)
        } else {
            Item { needs_force: true, ..Item::keep(kind, name, format!("{reason}; `--force` to delete")) }
        }
    }
}

/// Branch locks: a held one marks its run as live; one nobody holds is left by a dead run.
fn locks(layout: &Layout, live: &mut Live, survey: &mut Survey) {
    for path in crate::safe_fs::files_in(&layout.locks()) {
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else { continue };
        if file_name.starts_with("batch-") && file_name.ends_with(".merges") {
            // The merge count of several runs at once, removed by their `eden run` at the end;
            // one a day old was left by a killed one (no invocation lasts that long unnoticed).
            let age = std::fs::metadata(&path).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
            if age.is_some_and(|age| age > std::time::Duration::from_secs(24 * 3600)) {
                let name = relative(layout, &path);
                survey.items.push(Item::remove(
                    Kind::Lock,
                    name,
                    "left by a killed `eden run` of several manifests",
                    Action::RemoveFile(path),
                ));
            }
            continue;
        }
        let Some(slug) = file_name.strip_suffix(".lock") else { continue };
        if file_name == layout::REPOSITORY_LOCK {
            continue;
        }
        let name = relative(layout, &path);
        if BranchLock::is_held(&path) {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            let mut lines = holder.lines();
            let pid = lines.next().and_then(ProcessStamp::parse).map_or(0, |stamp| stamp.pid);
            if let Some(run_id) = lines.next().filter(|id| !id.is_empty()) {
                live.run_ids.insert(run_id.to_owned());
            }
            live.slugs.insert(slug.to_owned());
            survey.items.push(Item::keep(Kind::Lock, name, format!("held by a running eden (pid {pid})")));
        } else {
            survey.items.push(Item::remove(Kind::Lock, name, "nobody holds it", Action::RemoveFile(path)));
        }
    }
}

/// Records of runs whose eden is alive mark them as live; `running` ones whose eden is gone
/// are marked abandoned; temporary files of an interrupted write go.
fn records(layout: &Layout, live: &mut Live, survey: &mut Survey) {
    for path in crate::safe_fs::files_in(&layout.runs()) {
        let name = relative(layout, &path);
        if path.extension().is_some_and(|ext| ext == "tmp") {
            survey.items.push(Item::remove(Kind::Record, name, "an unfinished write", Action::RemoveFile(path)));
            continue;
        }
        let Some(head) = read_record(&path) else { continue };
        if let Some(container) = head.container.as_ref().filter(|_| head.may_have_left_a_sandbox()) {
            live.recorded.push(Recorded {
                run_id: head.id.clone(),
                engine: container.engine.clone(),
                host: container.host.clone(),
                name: container.name.clone(),
            });
        }
        let Some(process) = head.process else { continue };
        match head.status.map(|status| status.observed(&process)) {
            Some(RunStatus::Running) => {
                if let Some(branch) = &head.branch {
                    live.slugs.insert(slug(branch));
                }
                live.run_ids.insert(head.id);
            }
            Some(RunStatus::Abandoned) if head.status == Some(RunStatus::Running) => {
                let reason = format!("run {} was abandoned: its eden (pid {}) is gone", head.id, process.pid);
                survey.items.push(Item::mark(Kind::Record, name, reason, Action::MarkAbandoned(path)));
            }
            _ => {}
        }
    }
}

fn read_record(path: &Path) -> Option<RecordHead> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Worktrees under `.eden/worktrees` (registered or stray folders), then `eden/*` branches.
fn worktrees_and_branches(layout: &Layout, settings: &Settings, live: &Live, survey: &mut Survey) {
    let repo = Git::new(&layout.root);
    let list = match WorktreeList::read(&repo) {
        Ok(list) => list,
        Err(err) => {
            survey.warnings.push(format!("cannot list the worktrees: {}", err.message));
            return;
        }
    };
    let (leaving, registered) = registered_worktrees(layout, settings, live, survey, &list);
    stray_folders(layout, settings, live, survey, &registered);
    eden_branches(layout, settings, live, survey, &list, &leaving);
}

/// Worktrees git knows under `.eden/worktrees`: which go, and which stay and why. Returns the
/// worktrees that will be gone after this clean (their branches may then go too), and every
/// registered one.
fn registered_worktrees(
    layout: &Layout,
    settings: &Settings,
    live: &Live,
    survey: &mut Survey,
    list: &WorktreeList,
) -> (HashSet<PathBuf>, HashSet<PathBuf>) {
    let eden_worktrees = crate::git::dunce_canonical(&layout.worktrees());
    let ours = |path: &Path| path.starts_with(&eden_worktrees) || path.starts_with(layout.worktrees());
    let mut leaving: HashSet<PathBuf> = HashSet::new();
    let mut registered: HashSet<PathBuf> = HashSet::new();
    let mut pruned = false;
    let here = std::env::current_dir().map(|dir| crate::git::dunce_canonical(&dir)).unwrap_or_default();
    for entry in list.entries.iter().filter(|entry| ours(&entry.path)) {
        registered.insert(crate::git::dunce_canonical(&entry.path));
        let name = relative(layout, &entry.path);
        let folder = entry.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if live.slugs.contains(&folder) {
            survey.items.push(Item::keep(Kind::Worktree, name, "its run is still going"));
            continue;
        }
        if here.starts_with(crate::git::dunce_canonical(&entry.path)) {
            survey.items.push(Item::keep(Kind::Worktree, name, "you are in it (the current directory)"));
            continue;
        }
        if entry.prunable {
            // One `git worktree prune` forgets them all.
            let mut item = Item::remove(Kind::Worktree, name, "its folder is gone", Action::PruneWorktrees);
            if pruned {
                item.action = None;
            }
            pruned = true;
            survey.items.push(item);
            leaving.insert(entry.path.clone());
            continue;
        }
        let dirty = Git::new(&entry.path).dirty_paths().map(|paths| paths.len()).unwrap_or(usize::MAX);
        if dirty == 0 {
            let action = Action::RemoveWorktree { path: entry.path.clone(), force: false };
            survey.items.push(Item::remove(Kind::Worktree, name, "clean, and its run is over", action));
            leaving.insert(entry.path.clone());
        } else {
            let reason = if dirty == usize::MAX {
                "git cannot read its status".to_owned()
            } else {
                format!("{dirty} uncommitted change(s)")
            };
            let action = Action::RemoveWorktree { path: entry.path.clone(), force: true };
            survey.items.push(Item::unsafe_to_remove(Kind::Worktree, name, reason, settings.force, action));
            if settings.force {
                leaving.insert(entry.path.clone());
            }
        }
    }
    (leaving, registered)
}

/// Folders in `.eden/worktrees` git does not know: empty ones go, others may hold files.
fn stray_folders(
    layout: &Layout,
    settings: &Settings,
    live: &Live,
    survey: &mut Survey,
    registered: &HashSet<PathBuf>,
) {
    for path in crate::safe_fs::dirs_in(&layout.worktrees()) {
        if registered.contains(&crate::git::dunce_canonical(&path)) {
            continue;
        }
        let name = relative(layout, &path);
        let folder = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if live.slugs.contains(&folder) {
            survey.items.push(Item::keep(Kind::Worktree, name, "its run is still going"));
        } else if std::fs::read_dir(&path).is_ok_and(|mut entries| entries.next().is_none()) {
            survey.items.push(Item::remove(Kind::Worktree, name, "an empty folder", Action::RemoveDir(path)));
        } else {
            let reason = "a folder git does not know as a worktree, with files in it".to_owned();
            survey.items.push(Item::unsafe_to_remove(
                Kind::Worktree,
                name,
                reason,
                settings.force,
                Action::RemoveDir(path),
            ));
        }
    }
}

/// `eden/*` branches: leftover git locks of runs that are over, and the branches whose every
/// commit is elsewhere (or all of them, with `--force`) unless a worktree that stays has them.
fn eden_branches(
    layout: &Layout,
    settings: &Settings,
    live: &Live,
    survey: &mut Survey,
    list: &WorktreeList,
    leaving: &HashSet<PathBuf>,
) {
    let repo = Git::new(&layout.root);
    let branches = match repo.run(["for-each-ref", "--format=%(refname:short)", "refs/heads/eden/"]) {
        Ok(text) => text,
        Err(err) => {
            survey.warnings.push(format!("cannot list the branches: {}", err.message));
            return;
        }
    };
    for branch in branches.lines().filter(|line| !line.is_empty()) {
        let name = branch.to_owned();
        if live.slugs.contains(&slug(branch)) {
            survey.items.push(Item::keep(Kind::Branch, name, "its run is still going"));
            continue;
        }
        // Its run is over: git locks of its branch and worktree are leftovers of a killed git.
        let worktree = layout.worktrees().join(slug(branch));
        for stale in crate::git::leftover_locks(&layout.common_dir, branch, &worktree) {
            let reason = "left by a git process of a run that is over";
            survey.items.push(Item::remove(
                Kind::GitLock,
                stale.display().to_string(),
                reason,
                Action::RemoveFile(stale),
            ));
        }
        if let Some(entry) = list.entries.iter().find(|entry| entry.branch.as_deref() == Some(branch)) {
            if !leaving.contains(&entry.path) {
                let reason = format!("checked out in `{}`", relative(layout, &entry.path));
                survey.items.push(Item::keep(Kind::Branch, name, reason));
                continue;
            }
        }
        let Ok(Some(tip)) = repo.branch_commit(branch) else {
            survey.items.push(Item::keep(Kind::Branch, name, "git cannot read where it points"));
            continue;
        };
        let delete = Action::DeleteBranch { name: branch.to_owned(), tip };
        let exclude = format!("--exclude={branch}");
        let unmerged = repo
            .run(["rev-list", "--count", &format!("refs/heads/{branch}"), "--not", &exclude, "--branches"])
            .ok()
            .and_then(|count| count.trim().parse::<usize>().ok());
        match unmerged {
            Some(0) => {
                survey.items.push(Item::remove(Kind::Branch, name, "every commit of it is on another branch", delete))
            }
            Some(count) => survey.items.push(Item::unsafe_to_remove(
                Kind::Branch,
                name,
                format!("{count} commit(s) on no other branch"),
                settings.force,
                delete,
            )),
            None => survey.items.push(Item::keep(Kind::Branch, name, "git cannot count its commits")),
        }
    }
}

/// `<.git>/eden-exec/<run-id>`: pid files of containers of eden versions that mounted `.git`
/// into the container. A container could replace the folder with a symlink: only a real folder
/// is looked into, and what is in it is removed without following anything.
fn legacy_exec_dirs(layout: &Layout, live: &Live, survey: &mut Survey) {
    let legacy = layout.legacy_exec_dirs();
    match std::fs::symlink_metadata(&legacy) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            let name = legacy.display().to_string();
            let reason = "not a folder (a symlink a container made?): removed, nothing it points at";
            survey.items.push(Item::remove(Kind::ExecDir, name, reason, Action::RemoveFile(legacy)));
            return;
        }
        Err(_) => return,
    }
    for path in crate::safe_fs::dirs_in(&legacy) {
        let run_id = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let name = path.display().to_string();
        if live.run_ids.contains(&run_id) {
            survey.items.push(Item::keep(Kind::ExecDir, name, "its run is still going"));
        } else {
            survey.items.push(Item::remove(Kind::ExecDir, name, "its run is over", Action::RemoveDir(path)));
        }
    }
}

/// `.eden/agent-state/<run>` and `.eden/tmp/<run>` of runs that are over (killed before their
/// end removed them).
fn run_folders(layout: &Layout, live: &Live, survey: &mut Survey) {
    for (kind, parent) in [(Kind::AgentState, layout.agent_states()), (Kind::Scratch, layout.scratches())] {
        for path in crate::safe_fs::dirs_in(&parent) {
            let run_id = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let name = relative(layout, &path);
            if live.run_ids.contains(&run_id) {
                survey.items.push(Item::keep(kind, name, "its run is still going"));
            } else {
                survey.items.push(Item::remove(kind, name, "its run is over", Action::RemoveDir(path)));
            }
        }
    }
}

/// What every sandbox kind finds of earlier runs: containers and their volumes, pods,
/// isolated copies. Each kind says what is safe to remove.
fn sandboxes(layout: Option<&Layout>, settings: &Settings, live: &Live, survey: &mut Survey) {
    let scope = Scope {
        all_repos: settings.all_repos,
        force: settings.force,
        live: &live.run_ids,
        layout,
        recorded: &live.recorded,
    };
    for row in &crate::sandbox::registry::KINDS {
        let found = row.kind.leftovers(&scope);
        survey.warnings.extend(found.warnings);
        for leftover in found.found {
            let kind = match leftover.what {
                Left::Sandbox => Kind::Container,
                Left::Volume => Kind::Volume,
                Left::Copy => Kind::IsolatedCopy,
            };
            let (name, reason, action) = (leftover.name, leftover.reason, leftover.removal.map(Action::Sandbox));
            survey.items.push(match (leftover.verdict, action) {
                (Verdict::Remove, Some(action)) => Item::remove(kind, name, reason, action),
                (Verdict::Unsafe, Some(action)) => Item::unsafe_to_remove(kind, name, reason, settings.force, action),
                _ => Item::keep(kind, name, reason),
            });
        }
    }
}

/// Logs, records, sessions, patches and artifacts: kept unless older than `--older-than`.
fn history(layout: &Layout, settings: &Settings, live: &Live, survey: &mut Survey) {
    let mut files: Vec<(Kind, PathBuf, bool)> = Vec::new();
    for path in crate::safe_fs::files_in(&layout.logs()) {
        files.push((Kind::Log, path, false));
    }
    for path in crate::safe_fs::files_in(&layout.runs())
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
    {
        files.push((Kind::Record, path, false));
    }
    for path in crate::safe_fs::dirs_in(&layout.sessions()) {
        files.push((Kind::Session, path, true));
    }
    for path in crate::safe_fs::files_in(&layout.patches()) {
        files.push((Kind::Patch, path, false));
    }
    for path in crate::safe_fs::dirs_in(&layout.artifacts_root()) {
        files.push((Kind::Artifacts, path, true));
    }
    let Some(older_than) = settings.older_than else {
        survey.history_kept = files.len();
        return;
    };
    let cutoff = SystemTime::now().checked_sub(older_than).unwrap_or(SystemTime::UNIX_EPOCH);
    for (kind, path, is_dir) in files {
        let stem = path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if live.run_ids.iter().any(|id| stem.contains(id.as_str())) {
            continue;
        }
        let old = std::fs::metadata(&path).and_then(|meta| meta.modified()).is_ok_and(|modified| modified < cutoff);
        if !old {
            survey.history_kept += 1;
            continue;
        }
        let age = crate::values::format_duration(older_than);
        let action = if is_dir { Action::RemoveDir(path.clone()) } else { Action::RemoveFile(path.clone()) };
        survey.items.push(Item::remove(kind, relative(layout, &path), format!("older than {age}"), action));
    }
}

/// Carry out the survey: every item with an action, in its order, under the repository lock.
/// Stops early (the rest `skipped`) when `interrupted` says so.
pub(crate) fn execute(
    survey: &mut Survey,
    layout: Option<&Layout>,
    interrupted: &dyn Fn() -> bool,
) -> Result<(), Error> {
    let _lock = match layout {
        Some(layout) => Some(RepoLock::acquire(&layout.repository_lock(), "clean", "cleaning up", &mut |_| {})?),
        None => None,
    };
    for item in &mut survey.items {
        let Some(action) = item.action.take() else { continue };
        if interrupted() {
            item.outcome = Outcome::Skipped;
            continue;
        }
        match perform(&action, layout) {
            Ok(()) => {}
            Err(error) => {
                item.outcome = Outcome::Failed;
                item.reason = error.message;
            }
        }
    }
    Ok(())
}

fn perform(action: &Action, layout: Option<&Layout>) -> Result<(), Error> {
    let repo = || layout.map(|layout| Git::new(&layout.root)).ok_or_else(|| Error::usage("no repository"));
    let io = |err: std::io::Error| Error::internal(err.to_string());
    match action {
        Action::RemoveWorktree { path, force } => {
            let mut args: Vec<&std::ffi::OsStr> = vec!["worktree".as_ref(), "remove".as_ref()];
            if *force {
                args.push("--force".as_ref());
            }
            args.push(path.as_os_str());
            repo()?.run(args).map(drop)
        }
        Action::PruneWorktrees => repo()?.prune_worktrees(),
        Action::DeleteBranch { name, tip } => repo()?.delete_branch(name, tip),
        Action::Sandbox(removal) => removal.run(),
        Action::RemoveFile(path) => match std::fs::remove_file(path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(io(err)),
            _ => Ok(()),
        },
        // Never through a symlink: some of these folders were written by an agent.
        Action::RemoveDir(path) => crate::safe_fs::remove_tree(path).map_err(io),
        Action::MarkAbandoned(path) => {
            let text = std::fs::read_to_string(path).map_err(io)?;
            let mut record: serde_json::Value =
                serde_json::from_str(&text).map_err(|err| Error::internal(err.to_string()))?;
            record["status"] = serde_json::Value::from("abandoned");
            crate::record::save_json(path, &record).map_err(io)
        }
    }
}

/// `path` relative to the repository root when inside it, as given otherwise.
fn relative(layout: &Layout, path: &Path) -> String {
    let root = crate::git::dunce_canonical(&layout.root);
    path.strip_prefix(&layout.root)
        .or_else(|_| path.strip_prefix(&root))
        .map_or_else(|_| path.display().to_string(), |rest| rest.display().to_string())
}
