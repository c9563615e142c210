//! What eden finds of containers it did not remove itself: listing by label, salvage, removal.

use super::exec::exec_in;
use crate::error::Error;
use crate::layout::{LABEL_BASE, LABEL_BRANCH, LABEL_PID, LABEL_REPO, LABEL_RUN, LABEL_USER, LABEL_WORKSPACE};
use crate::manifest::plan::{Engine, EngineHost};
use crate::process::ProcessBuilder;
use crate::record::SandboxEngine;
use crate::sandbox::carry::first_line;
use crate::sandbox::engine::{self, Target};
use crate::sandbox::provider::{Check, Left, Leftover, Leftovers, Recorded, Removal, Scope, Verdict};
use crate::sandbox::repository::{self, Channel};
use std::path::{Path, PathBuf};

/// An eden container, as `ps` lists it.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    pub(crate) name: String,
    /// Labels `eden.run` and `eden.pid` (0 when missing).
    pub(crate) run_id: String,
    pub(crate) pid: i32,
}

impl Listed {
    /// Is the eden process that started it still running?
    pub(crate) fn owner_alive(&self) -> bool {
        self.pid > 0 && crate::process::ProcessStamp { pid: self.pid as u32, start: 0 }.is_alive()
    }
}

/// The engines' templates differ: docker's `ps` and `volume ls` have a `Label` function,
/// podman's a `Labels` map.
fn label_template(engine: Engine, name: &str) -> String {
    match engine {
        Engine::Docker => format!("{{{{.Label \"{name}\"}}}}"),
        Engine::Podman => format!("{{{{index .Labels \"{name}\"}}}}"),
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
    let format = format!("{{{{.Names}}}}\t{}\t{}", label(LABEL_RUN), label(LABEL_PID));
    let listing = engine::run(target.command().args(["ps", "-a", "--filter", &filter(repo), "--format", &format]))?;
    if !listing.success() {
        return Err(Error::sandbox(format!(
            "`{} ps` cannot list containers ({}): {}",
            target.binary(),
            target.describe(),
            first_line(&listing.stderr)
        )));
    }
    Ok(listing
        .stdout
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let name = fields.next()?.trim().to_owned();
            let run_id = fields.next().unwrap_or_default().to_owned();
            let pid = fields.next().and_then(|pid| pid.trim().parse().ok()).unwrap_or(0);
            (!name.is_empty()).then_some(Listed { name, run_id, pid })
        })
        .collect())
}

/// eden's workspace volumes on `engine` (of `repo`, or every repository): name, run id, repo.
pub(crate) fn list_volumes(target: &Target, repo: Option<&Path>) -> Result<Vec<(String, String, String)>, Error> {
    // docker's `Label` function, podman's `Labels` map: docker 20.10 cannot `index` its labels.
    let label = |name: &str| label_template(target.engine, name);
    let format = format!("{{{{.Name}}}}\t{}\t{}", label(LABEL_RUN), label(LABEL_REPO));
    let listing = engine::run(target.command().args(["volume", "ls", "--filter", &filter(repo), "--format", &format]))?;
    if !listing.success() {
        return Err(Error::sandbox(format!(
            "`{} volume ls` cannot list volumes ({}): {}",
            target.binary(),
            target.describe(),
            first_line(&listing.stderr)
        )));
    }
    Ok(listing
        .stdout
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\t').map(str::to_owned);
            let name = fields.next().filter(|name| !name.trim().is_empty())?;
            Some((name, fields.next().unwrap_or_default(), fields.next().unwrap_or_default()))
        })
        .collect())
}

/// Remove a container, running or not. Gone already is fine.
pub(crate) fn remove(target: &Target, name: &str) -> Result<(), Error> {
    let output = engine::run(target.command().args(["rm", "-f", name]).finishing())?;
    if output.success() || output.stderr.to_lowercase().contains("no such container") {
        return Ok(());
    }
    Err(Error::sandbox(format!("cannot remove container `{name}`: {}", output.stderr.trim())))
}

/// Remove a workspace volume. Gone already is fine.
pub(crate) fn remove_volume(target: &Target, name: &str) -> Result<(), Error> {
    let output = engine::run(target.command().args(["volume", "rm", "-f", name]).finishing())?;
    let stderr = output.stderr.to_lowercase();
    if output.success() || stderr.contains("no such volume") || stderr.contains("no volume with name") {
        return Ok(());
    }
    Err(Error::sandbox(format!("cannot remove volume `{name}`: {}", output.stderr.trim())))
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
    let format = [LABEL_RUN, LABEL_REPO, LABEL_BRANCH, LABEL_WORKSPACE, LABEL_BASE, LABEL_USER]
        .map(|key| format!("{{{{index .Config.Labels \"{key}\"}}}}"))
        .join("\t");
    let format = format!("{{{{.State.Running}}}}\t{format}");
    let inspected = engine::run(target.command().args(["inspect", "--format", &format, name]))?;
    let fields: Vec<String> = inspected.stdout.trim_end().split('\t').map(str::to_owned).collect();
    let mut saved = Vec::new();
    if let (true, [running, run_id, repo, branch, workspace, base, user]) = (inspected.success(), &fields[..]) {
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
    Ok(saved)
}

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

/// docker and podman without a plan.
pub(crate) struct Containers;

pub(crate) static KIND: Containers = Containers;

impl crate::sandbox::provider::Kind for Containers {
    fn machine(&self, host: Option<&EngineHost>, _wanted: bool, named: &[String]) -> Vec<Check> {
        super::doctor::machine(host, named)
    }

    /// Containers labelled by eden and their workspace volumes, on every engine that is
    /// installed and every engine a record names.
    fn leftovers(&self, scope: &Scope<'_>) -> Leftovers {
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

    /// A container the run left (it was killed): what it holds saved under `.eden/patches`,
    /// then removed, as `eden clean` does.
    fn remove_of_run(&self, repo: &Path, sandbox: &Recorded) -> Result<Vec<String>, Error> {
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

    /// `eden __eden-salvage ENGINE [HOST] NAME`.
    fn salvage(&self, args: &[std::ffi::OsString]) -> Option<i32> {
        let (name, target) = args.split_last()?;
        let target = Target::from_args(target)?;
        let Some(name) = name.to_str() else { return Some(2) };
        Some(salvage_and_remove(&target, name).map_or(1, |_| 0))
    }
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
