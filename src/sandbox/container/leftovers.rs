//! What eden finds of containers it did not remove itself: listing by label, salvage, removal.

use super::exec::{exec_in, label_template, listing, remove, remove_volume};
use super::pool::LABEL_POOL;
use crate::error::Error;
use crate::layout::{LABEL_BASE, LABEL_BRANCH, LABEL_PID, LABEL_REPO, LABEL_RUN, LABEL_USER, LABEL_WORKSPACE};
use crate::manifest::plan::{Engine, EngineHost};
use crate::process::ProcessBuilder;
use crate::record::SandboxEngine;
use crate::sandbox::engine::{self, Target};
use crate::sandbox::provider::{Left, Leftover, Leftovers, Recorded, Removal, Scope, Verdict};
use crate::sandbox::repository::{self, Channel};
use std::path::{Path, PathBuf};

/// An eden container, as `ps` lists it.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    pub(crate) name: String,
    /// Labels `eden.run` and `eden.pid` (0 when missing).
    pub(crate) run_id: String,
    pub(crate) pid: i32,
    pub(crate) pooled: Pooled,
}

/// Whether a container is a warm pool's member, and which kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pooled {
    No,
    /// Waiting for a claim (`running`: not yet at the end of its idle time).
    Idle {
        running: bool,
    },
    /// Claimed by a run (its claim read from the repository: the run's id and eden's pid);
    /// `kept`: the run ended with work too big to come back, kept in it.
    Claimed {
        kept: bool,
    },
}

impl Listed {
    /// Is the eden process that started it (or claimed it) still running? An idle pool
    /// member is nobody's to prune.
    pub(crate) fn owner_alive(&self) -> bool {
        matches!(self.pooled, Pooled::Idle { .. })
            || self.pid > 0 && crate::process::ProcessStamp { pid: self.pid as u32, start: 0 }.is_alive()
    }
}

fn filter(repo: Option<&Path>) -> String {
    match repo {
        Some(root) => format!("label={LABEL_REPO}={}", root.display()),
        None => format!("label={LABEL_RUN}"),
    }
}

/// eden's containers on `engine`: of the repository at `repo`, or of every repository.
pub(crate) fn list(target: &Target, repo: Option<&Path>) -> Result<Vec<Listed>, Error> {
    let label = |name: &str| label_template(target.engine, name);
    let fields = [
        "{{.Names}}".to_owned(),
        label(LABEL_RUN),
        label(LABEL_PID),
        label(LABEL_POOL),
        label(LABEL_REPO),
        "{{.State}}".to_owned(),
    ];
    let rows = listing(target, &["ps", "-a", "--filter", &filter(repo)], &fields, "containers")?;
    Ok(rows
        .iter()
        .filter_map(|fields| {
            let [name, run_id, pid, pool, repo, state] = &fields[..] else { return None };
            let name = name.trim().to_owned();
            let (mut run_id, mut pid) = (run_id.to_owned(), pid.trim().parse().unwrap_or(0));
            let pooled = match (pool.is_empty(), name.starts_with(super::pool::IDLE_PREFIX)) {
                (true, _) => Pooled::No,
                (false, true) => Pooled::Idle { running: super::pool::is_running(state) },
                (false, false) => {
                    let claim = super::pool::read_claim(Path::new(repo), &name);
                    if let Some(claim) = &claim {
                        (run_id, pid) = (claim.run_id.clone(), claim.process.pid as i32);
                    }
                    Pooled::Claimed { kept: claim.is_some_and(|claim| claim.kept) }
                }
            };
            (!name.is_empty()).then_some(Listed { name, run_id, pid, pooled })
        })
        .collect())
}

/// eden's workspace volumes on `engine` (of `repo`, or every repository): name, run id, repo.
pub(crate) fn list_volumes(target: &Target, repo: Option<&Path>) -> Result<Vec<(String, String, String)>, Error> {
    // docker's `Label` function, podman's `Labels` map: docker 20.10 cannot `index` its labels.
    let label = |name: &str| label_template(target.engine, name);
    let fields = ["{{.Name}}".to_owned(), label(LABEL_RUN), label(LABEL_REPO)];
    let rows = listing(target, &["volume", "ls", "--filter", &filter(repo)], &fields, "volumes")?;
    Ok(rows
        .into_iter()
        .filter_map(|fields| {
            let mut fields = fields.into_iter();
            let name = fields.next().filter(|name| !name.trim().is_empty())?;
            Some((name, fields.next().unwrap_or_default(), fields.next().unwrap_or_default()))
        })
        .collect())
}

/// A container known only by its name and labels (its eden is gone), for salvage.
struct Labelled {
    target: Target,
    name: String,
    workspace: PathBuf,
    /// The run's `uid:gid` (`eden.user`; a container of an older eden ran as it by default).
    user: String,
}

impl Channel for Labelled {
    fn inside(&self, command: ProcessBuilder) -> Result<ProcessBuilder, Error> {
        let user = (!self.user.is_empty()).then_some(self.user.as_str());
        Ok(exec_in(&self.target, &self.name, user, command, &[], &[]))
    }

    fn workspace(&self) -> &Path {
        &self.workspace
    }
}

/// Saves what a killed run's container still holds, then removes it and its volume: its branch's
/// commits as `.eden/patches/<run>.salvaged.bundle` and its uncommitted work as
/// `<run>.salvaged.patch`, in the repository its labels name (`repository::salvage`). Returns
/// the paths saved.
pub(crate) fn salvage_and_remove(target: &Target, name: &str) -> Result<Vec<PathBuf>, Error> {
    let format = [LABEL_RUN, LABEL_REPO, LABEL_BRANCH, LABEL_WORKSPACE, LABEL_BASE, LABEL_USER, LABEL_POOL]
        .map(|key| format!("{{{{index .Config.Labels \"{key}\"}}}}"))
        .join("\t");
    let format = format!("{{{{.State.Running}}}}\t{format}");
    let inspected = engine::run(target.command().args(["inspect", "--format", &format, name]))?;
    let mut fields: Vec<String> =
        inspected.stdout.trim_end_matches(['\n', '\r']).split('\t').map(str::to_owned).collect();
    // A claimed pool member's labels were set before its run: whose it is, the claim says.
    let claimed = match &fields[..] {
        [_, run_id, repo, _, _, _, _, pool] if run_id.is_empty() && !pool.is_empty() => {
            super::pool::read_claim(Path::new(repo), name).map(|claim| (repo.clone(), claim))
        }
        _ => None,
    };
    if let Some((_, claim)) = &claimed {
        fields[1] = claim.run_id.clone();
        fields[3] = claim.branch.clone();
        fields[4] = claim.workspace.clone();
        fields[5] = claim.base.clone();
        fields[6] = claim.user.clone();
    }
    let mut saved = Vec::new();
    if let (true, [running, run_id, repo, branch, workspace, base, user, _]) = (inspected.success(), &fields[..]) {
        if !run_id.is_empty() && !repo.is_empty() && !workspace.is_empty() {
            if running != "true" {
                let _ = engine::run(target.command().args(["start", name]));
            }
            let patches = crate::layout::Layout::new(repo, Path::new(repo).join(".git")).patches();
            let user = if user.contains(':') { user.clone() } else { String::new() };
            let channel =
                Labelled { target: target.clone(), name: name.to_owned(), workspace: PathBuf::from(workspace), user };
            saved = repository::salvage(&channel, branch, base, &patches, run_id, crate::sandbox::DEFAULT_MAX_RETURN);
        }
        if !run_id.is_empty() && !workspace.is_empty() {
            crate::sandbox::services::remove_of_run(target, run_id)?;
        }
    }
    remove(target, name)?;
    remove_volume(target, name)?;
    if let Some((repo, _)) = claimed {
        super::pool::forget_claim(Path::new(&repo), name);
    }
    Ok(saved)
}

/// The prune's removals, as warnings: each container, and where what it held is saved.
pub(super) fn pruned_said(pruned: Vec<(String, Vec<PathBuf>)>) -> Vec<String> {
    let mut warnings = Vec::new();
    for (name, saved) in pruned {
        let saved = saved.iter().map(|path| format!(" `{}`", path.display())).collect::<String>();
        let saved = if saved.is_empty() { String::new() } else { format!("; what it held is saved as{saved}") };
        warnings.push(format!("removed container `{name}` left by an earlier run{saved}"));
    }
    warnings
}

/// A prune of abandoned containers, going on beside a run's start (`prune_abandoned`).
pub(crate) type Pruning = std::thread::JoinHandle<Vec<(String, Vec<PathBuf>)>>;

/// Remove containers of this repository left by eden processes that no longer exist (eden was
/// killed before it could clean up, and its guard did not either), saving what they held first.
/// Returns the names removed and the files saved.
pub(crate) fn prune_abandoned(target: &Target, repo_root: &Path) -> Vec<(String, Vec<PathBuf>)> {
    let Ok(listed) = list(target, Some(repo_root)) else { return Vec::new() };
    listed
        .into_iter()
        .filter(|container| !container.owner_alive())
        .filter_map(|container| salvage_and_remove(target, &container.name).ok().map(|saved| (container.name, saved)))
        .collect()
}

/// Containers labelled by eden and their workspace volumes, on every engine that is installed
/// and every engine a record names (`eden clean`).
pub(super) fn survey(scope: &Scope<'_>) -> Leftovers {
    let mut found = Leftovers::default();
    // Of this repository, or (`--all-repos`) of any.
    let repo = match (scope.all_repos, scope.layout) {
        (true, _) => None,
        (false, Some(layout)) => Some(layout.root.as_path()),
        (false, None) => return found,
    };
    let mut targets: Vec<Target> = [Engine::Docker, Engine::Podman].map(|engine| Target::new(engine, None)).into();
    for recorded in scope.recorded {
        if let Some(target) = recorded_target(recorded).filter(|target| !targets.contains(target)) {
            targets.push(target);
        }
    }
    for target in targets.iter().filter(|target| which::which(target.binary()).is_ok()) {
        if let Err(err) = on_engine(target, repo, scope, &mut found.found) {
            found.warnings.push(err.message);
        }
    }
    found
}

/// A container the run left (it was killed): what it holds saved under `.eden/patches`, then
/// removed, as `eden clean` does (`eden discard`).
pub(super) fn remove_of_run(repo: &Path, sandbox: &Recorded) -> Result<Vec<String>, Error> {
    let Some(engine) = SandboxEngine::named(&sandbox.engine).and_then(SandboxEngine::container_engine) else {
        return Ok(Vec::new());
    };
    let target = Target::new(engine, sandbox.host.clone().map(EngineHost::Url));
    if which::which(target.binary()).is_err() {
        return Ok(Vec::new());
    }
    let mut removed = Vec::new();
    for found in list(&target, Some(repo))?.into_iter().filter(|found| found.run_id == sandbox.run_id) {
        salvage_and_remove(&target, &found.name)?;
        removed.push(format!("container `{}`", found.name));
    }
    Ok(removed)
}

/// The engine a record names beyond the clients' defaults (`sandbox.host`, a remote engine).
fn recorded_target(recorded: &Recorded) -> Option<Target> {
    let engine = SandboxEngine::named(&recorded.engine)?.container_engine()?;
    let host = EngineHost::parse(recorded.host.as_deref()?).ok()?;
    Some(Target::new(engine, Some(host)))
}

/// One engine's containers and volumes of `repo` (`None`: of every repository).
fn on_engine(target: &Target, repo: Option<&Path>, scope: &Scope<'_>, found: &mut Vec<Leftover>) -> Result<(), Error> {
    let before = found.len();
    for listed in list(target, repo)? {
        let name = format!("{} ({})", listed.name, target.describe());
        if let Some(leftover) = pool_member(target, &listed, scope, &name) {
            found.push(leftover);
            continue;
        }
        if scope.live.contains(&listed.run_id) || listed.owner_alive() {
            let reason = format!("its run is still going (pid {})", listed.pid);
            found.push(Leftover { what: Left::Sandbox, name, verdict: Verdict::Keep, reason, removal: None });
        } else {
            let (target, container) = (target.clone(), listed.name.clone());
            let removal = Removal::new(move || salvage_and_remove(&target, &container).map(drop));
            let reason = "its run is over (what it holds is saved under `.eden/patches` first)".to_owned();
            found.push(Leftover {
                what: Left::Sandbox,
                name,
                verdict: Verdict::Remove,
                reason,
                removal: Some(removal),
            });
        }
    }
    let containers: Vec<String> = found[before..].iter().map(|leftover| leftover.name.clone()).collect();
    for (volume, run_id, _) in list_volumes(target, repo)? {
        let name = format!("{volume} ({})", target.describe());
        if containers.contains(&name) {
            continue; // goes with its container
        }
        if scope.live.contains(&run_id) {
            let reason = "its run is still going".to_owned();
            found.push(Leftover { what: Left::Volume, name, verdict: Verdict::Keep, reason, removal: None });
            continue;
        }
        let reason = "the workspace of a run whose container is gone: it may hold work that never came back".to_owned();
        let target = target.clone();
        let removal = Removal::new(move || remove_volume(&target, &volume));
        found.push(Leftover { what: Left::Volume, name, verdict: Verdict::Unsafe, reason, removal: Some(removal) });
    }
    Ok(())
}

/// What `eden clean` does with a warm pool's member: an idle one stays until its idle time is
/// up (`eden pool down` removes it); one claimed by a run that is over is salvaged like any
/// run's container (`None`), but for one keeping work too big to come back, which only
/// `--force` removes.
fn pool_member(target: &Target, listed: &Listed, scope: &Scope<'_>, name: &str) -> Option<Leftover> {
    let leftover = |verdict, reason: &str, removal| Leftover {
        what: Left::Sandbox,
        name: name.to_owned(),
        verdict,
        reason: reason.to_owned(),
        removal,
    };
    let (target_for_removal, member) = (target.clone(), listed.name.clone());
    let removal = Removal::new(move || salvage_and_remove(&target_for_removal, &member).map(drop));
    match listed.pooled {
        Pooled::No => None,
        Pooled::Idle { running: true } => Some(leftover(
            Verdict::Keep,
            "an idle member of this repository's warm pool (`eden pool down` removes it)",
            None,
        )),
        Pooled::Idle { running: false } => {
            Some(leftover(Verdict::Remove, "a warm pool's member whose idle time is up", Some(removal)))
        }
        Pooled::Claimed { kept: true } if !(scope.live.contains(&listed.run_id) || listed.owner_alive()) => {
            Some(leftover(Verdict::Unsafe, "a pool member keeping its run's work, too big to come back", Some(removal)))
        }
        Pooled::Claimed { .. } => None,
    }
}
