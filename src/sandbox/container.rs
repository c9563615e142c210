//! docker and podman: one implementation, two binaries. One long-lived container per run
//! (`--init`, labels `eden.run`, `eden.repo`, `eden.branch`, `eden.pid`, the host's uid:gid),
//! every agent command an `exec` in it.
//!
//! The container never sees the host's worktree or `.git`. Its workspace is a volume of its own
//! (named like the container), mounted at the worktree's absolute path (so prompts, transcripts
//! and `PWD` read the same), holding a repository of its own that `repository::seed` fills
//! from the host worktree; the host's object stores are mounted read-only as its alternates, so
//! no history is copied. After every iteration the agent's commits come back as a checked
//! bundle, at the end its uncommitted work as a checked patch (`repository`). The agent's state
//! folders are private copies (`agent_state`).
//!
//! Environment values never go on a command line: the engine client gets them in its own
//! environment and is told only the names (`-e NAME`).
//!
//! Killing the `exec` client does not stop what it started inside, so each command runs behind
//! a tiny wrapper that writes its pid (an exec'd process leads its own process group) to a file
//! inside the container; kills then signal that group inside the container too. Nothing a
//! command starts may outlive it, so when the command ends the wrapper kills every process in
//! the container but the init and the keep-alive (the run's commands run one at a time, so
//! whatever else is there was left by this one); if the wrapper itself was SIGKILLed, eden runs
//! that sweep as an exec of its own.

use super::agent_state::PrivateState;
use super::carry::{self, first_line, EDEN_INSIDE};
use super::engine::{self, Reach, Target};
use super::ledger::Ledger;
use super::repository::{self, Channel};
use super::{Prepared, RunSite, SandboxHandle};
use crate::error::Error;
use crate::layout::{LABEL_BASE, LABEL_BRANCH, LABEL_PID, LABEL_REPO, LABEL_RUN, LABEL_USER, LABEL_WORKSPACE};
use crate::manifest::plan::{ContainerPlan, Engine, EngineHost};
use crate::manifest::schema::Network;
use crate::process::{Output, ProcessBuilder, Stdin};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the host's object stores appear inside, read-only: `/opt/eden/objects/<n>`.
const OBJECTS_INSIDE: &str = "/opt/eden/objects";

/// The pid files of running commands, inside the container (made by the start-up exec).
const PIDS_INSIDE: &str = "/tmp/.eden-exec";

/// With `expose_worktree`: where the container's own repository is (the workspace volume), and
/// what the worktree's `.git` says inside (a read-only file over the host's pointer).
const GIT_DIR_INSIDE: &str = "/opt/eden/git";

/// `sh -c WRAPPER PIDFILE PROGRAM ARGS...`: the command run as every sandbox's commands are
/// (`carry::run_and_sweep`), its pid written to PIDFILE; last, unless the command has a
/// terminal, it notes the branch's tip.
fn wrapper(keep: &str, note_tip: Option<(&Path, &str)>) -> String {
    let note = note_tip.map_or_else(String::new, |(workspace, branch)| carry::tip_note(workspace, branch));
    carry::run_and_sweep(r#""$0""#, keep, &note)
}

/// Run as root once the container is up: the workspace volume (made by the engine, owned by
/// root) handed to the run's user, the pid folder made, and the init's one child (the
/// keep-alive; an exec's parent is outside the container) printed, so sweeps spare it.
const START_SCRIPT: &str = r#"set -e
chown "$1" "$2" && mkdir -p "$3" && chown "$1" "$3"
for stat in /proc/[0-9]*/stat; do read -r pid comm state ppid rest < "$stat"; if [ "$ppid" = 1 ]; then echo "$pid"; fi; done"#;

/// Every container runs without capabilities and cannot gain any (setuid programs, file
/// capabilities): nothing inside can change the network rules, forge packets, mount, or load
/// anything into the kernel. `run_args` that would give some back need `expose_host`.
const PRIVILEGES: [&str; 4] = ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"];

/// When the run's user is not root, eden's own set-up commands, which run as root in the
/// container before (and between) the agent's (`as_root`: the workspace handed to the user,
/// state folders carried in and out), need these back. The container's own user is root (under
/// no-new-privileges an exec as root holds capabilities only then); every command of the run's
/// is an exec as the run's user, which holds none of them and cannot gain them.
const SETUP_CAPABILITIES: [&str; 6] = ["--cap-add", "CHOWN", "--cap-add", "DAC_OVERRIDE", "--cap-add", "FOWNER"];

/// The run's user in its container: this machine's `uid:gid`.
fn run_user() -> String {
    format!("{}:{}", nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw())
}

/// gVisor's runtime (`runsc`, by name or path).
pub(crate) fn is_gvisor(runtime: &str) -> bool {
    runtime.rsplit('/').next().is_some_and(|name| name.starts_with("runsc"))
}

/// Git inside works on a repository owned by the same uid, but a mount may make it look
/// foreign; allow it per command, never through anyone's global config.
const GIT_SAFE_DIRECTORY: [(&str, &str); 1] = [("safe.directory", "*")];

pub(crate) struct Container {
    target: Target,
    /// The engine does not see this machine's files: everything crosses its channel.
    remote: bool,
    /// What the record says of the engine's address.
    recorded_host: Option<String>,
    name: String,
    /// The engine's id for it, and the image it runs.
    id: String,
    image: String,
    /// The run's worktree, branch and what came back (the worktree's path is also the
    /// workspace volume's place inside).
    ledger: Ledger,
    next_exec: AtomicU64,
    /// The pid (inside) of the process that keeps the container alive; sweeps spare it.
    keep: String,
    /// Programs already found in the image (checked once each, before their first exec).
    found: carry::Found,
    /// Set for every exec unless the command sets it itself (the agent's private state folders).
    exec_env: Vec<(&'static str, PathBuf)>,
    /// The agent's private state folders (a remote engine gets copies, which come back).
    states: Vec<PrivateState>,
    /// eden's executable is inside (a remote engine gets a copy, the first time it is needed).
    eden_inside: std::sync::atomic::AtomicBool,
    /// Salvages and removes the container if eden dies without doing it (SIGKILL).
    guard: Option<crate::process::guard::Guard>,
    /// Keeps the allowlist following its names' addresses (`network = "allowlist"`).
    firewall: Option<super::firewall::Refresher>,
    /// A remote engine's way to the held keys' proxy (`proxy::tunnel`).
    tunnel: Option<crate::proxy::tunnel::Tunnel>,
    /// The workspace volume, kept when work could not be brought back from it.
    keep_volume: bool,
    /// `expose_worktree`: the host worktree is bind-mounted; only the repository is the
    /// container's own.
    exposed: bool,
    /// The containers of its `[[service]]`s made so far (`services`), removed before it.
    services: Vec<String>,
    removed: bool,
}

/// What the container needs to know about the run.
pub(crate) struct ContainerRequest<'a> {
    pub(crate) plan: &'a ContainerPlan,
    /// The engine, as `preflight` found it.
    pub(crate) engaged: &'a Engaged,
    pub(crate) site: &'a RunSite,
}

/// The engine a run's container goes on, checked: which one, and whether it sees this machine's
/// files.
#[derive(Debug, Clone)]
pub(crate) struct Engaged {
    pub(crate) target: Target,
    pub(crate) reach: Reach,
    /// With docker and `sandbox.runtime`: the arguments the runtime is registered with.
    pub(crate) runtime_args: Vec<String>,
}

impl Engaged {
    pub(crate) fn remote(&self) -> bool {
        matches!(self.reach, Reach::Remote { .. })
    }

    /// What the record keeps to reach the engine again (`eden clean`, the guard): the host as
    /// given, or a remote engine's address as the client resolved it; nothing for a local
    /// default.
    pub(crate) fn host_to_record(&self) -> Option<String> {
        match (&self.target.host, &self.reach) {
            (Some(host), _) => Some(host.as_str().to_owned()),
            (None, Reach::Remote { endpoint }) => Some(endpoint.clone()),
            (None, Reach::Local) => None,
        }
    }
}

/// Checks that need no container: the engine is installed and reachable, has the image, and
/// can give the run what the plan asks for. The first of `plan.hosts` is the run's engine.
pub(crate) fn preflight(plan: &ContainerPlan) -> Result<Engaged, Error> {
    preflight_on(plan, plan.hosts.first())
}

/// `preflight` for one of the plan's hosts (`None`: the client's default).
pub(crate) fn preflight_on(plan: &ContainerPlan, host: Option<&EngineHost>) -> Result<Engaged, Error> {
    let target = Target::new(plan.engine, host.cloned());
    let binary = target.binary();
    if which::which(binary).is_err() {
        return Err(Error::sandbox(format!("`{binary}` is not installed (sandbox kind `{binary}`)"))
            .with_hint(match plan.engine {
            Engine::Docker => {
                "install Docker (Debian: `apt-get install docker.io`) and start it, or use `sandbox.kind = \"podman\"`"
            }
            Engine::Podman => "install podman (Debian: `apt-get install podman`), or use `sandbox.kind = \"docker\"`",
        }));
    }
    let reach = target.reach()?;
    let remote = matches!(reach, Reach::Remote { .. });
    if remote {
        refuse_on_remote(plan, &target)?;
    } else if !nix::unistd::geteuid().is_root() {
        match plan.network {
            Network::Allowlist => return Err(super::firewall::needs_root(&super::firewall::Policy::Allow(Vec::new()))),
            Network::Internet => return Err(super::firewall::needs_root(&super::firewall::Policy::Internet)),
            _ => {}
        }
    }
    let info = engine::run(target.command().args(["version", "--format", "{{.Server.Version}}"]))?;
    if !info.success() {
        return Err(Error::sandbox(format!(
            "`{binary} version` cannot reach the engine ({}): {}",
            target.describe(),
            first_line(&info.stderr)
        ))
        .with_hint(match (plan.engine, remote) {
            (_, true) => "check the address, that the engine listens there, and for TLS `DOCKER_TLS_VERIFY` and `DOCKER_CERT_PATH` (ssh: that `ssh HOST` works without a prompt)",
            (Engine::Docker, false) => "is the Docker daemon running? start it (`sudo systemctl start docker`, or `dockerd &`)",
            (Engine::Podman, false) => "check `podman info` for the engine's own error",
        }));
    }
    let inspect = engine::run(target.command().args(["image", "inspect", "--format", "{{.Id}}", &plan.image]))?;
    if !inspect.success() {
        let image = &plan.image;
        let hint = match &target.host {
            Some(_) if remote => format!(
                "build it there: `eden image build --engine {binary}{} --tag {image}`, or copy yours there: `eden image push --engine {binary}{} {image}`; eden never pulls images",
                target.host_flag(),
                target.host_flag()
            ),
            _ => format!(
                "build it first: `eden image build --engine {binary}{} --tag {image}` (from `Dockerfile.eden`, which `eden init --sandbox {binary}` writes); eden never pulls images",
                target.host_flag()
            ),
        };
        return Err(
            Error::sandbox(format!("image `{image}` is not available to {}", target.describe())).with_hint(hint)
        );
    }
    super::services::check_images(&target, &plan.services)?;
    let runtime_args = match &plan.runtime {
        Some(runtime) => check_runtime(&target, runtime)?,
        None => Vec::new(),
    };
    let engaged = Engaged { target, reach, runtime_args };
    engaged.refuse_services_under_gvisor(plan)?;
    Ok(engaged)
}

impl Engaged {
    /// Services reach the agent on the namespace's loopback, which under docker's gVisor is the
    /// namespace's only when runsc is registered with `--network=host` (podman: eden passes it).
    fn refuse_services_under_gvisor(&self, plan: &ContainerPlan) -> Result<(), Error> {
        let gvisor = plan.runtime.as_deref().is_some_and(is_gvisor);
        let host_stack = self.runtime_args.iter().any(|arg| arg.trim_start_matches('-') == "network=host");
        if plan.services.is_empty() || !gvisor || plan.engine != Engine::Docker || host_stack {
            return Ok(());
        }
        Err(Error::sandbox(
            "`[[service]]` under gVisor needs runsc to use the container's network namespace: as docker registered it, the agent's loopback is gVisor's own, where no service is",
        )
        .with_hint("add `\"--network=host\"` to the runtime's `runtimeArgs` in `/etc/docker/daemon.json` and reload the daemon (the namespace is still the container's own), or remove `sandbox.runtime`"))
    }

    /// Under gVisor, can the sandbox connect to a unix socket mounted into it (the held keys'
    /// proxy)? runsc refuses unless told `--host-uds=open` (docker: in its registration; podman:
    /// eden passes it).
    pub(crate) fn gvisor_refuses_host_sockets(&self, plan: &ContainerPlan) -> bool {
        let gvisor = plan.runtime.as_deref().is_some_and(is_gvisor);
        let allowed = self.runtime_args.iter().any(|arg| {
            let arg = arg.trim_start_matches('-');
            matches!(arg, "host-uds=open" | "host-uds=all" | "fsgofer-host-uds" | "fsgofer-host-uds=true")
        });
        gvisor && plan.engine == Engine::Docker && !allowed
    }
}

/// `sandbox.runtime` is one the engine can run: registered with docker (`docker info`; returns
/// the arguments it is registered with), or for podman a path that exists or a name on `PATH`
/// or in its configuration (podman itself then says which it lacks).
fn check_runtime(target: &Target, runtime: &str) -> Result<Vec<String>, Error> {
    let known = match target.engine {
        Engine::Docker => {
            let info = engine::run(target.command().args(["info", "--format", "{{json .Runtimes}}"]))?;
            let registered: Option<serde_json::Map<String, serde_json::Value>> =
                serde_json::from_str(info.stdout.trim()).ok();
            let registered = registered.unwrap_or_default();
            if let Some(entry) = registered.get(runtime) {
                let args = entry["runtimeArgs"].as_array().into_iter().flatten();
                return Ok(args.filter_map(|arg| arg.as_str().map(str::to_owned)).collect());
            }
            let names: Vec<&str> = registered.keys().map(String::as_str).collect();
            format!("it has {}", if names.is_empty() { "none eden can read".to_owned() } else { names.join(", ") })
        }
        Engine::Podman if runtime.starts_with('/') => {
            if Path::new(runtime).is_file() || target.host.is_some() {
                return Ok(Vec::new());
            }
            format!("`{runtime}` does not exist")
        }
        Engine::Podman => return Ok(Vec::new()),
    };
    let hint = match target.engine {
        Engine::Docker => "register it in `/etc/docker/daemon.json` (gVisor: `{\"runtimes\": {\"runsc\": {\"path\": \"/usr/bin/runsc\", \"runtimeArgs\": [\"--network=host\", \"--host-uds=open\"]}}}`) and reload the daemon (`systemctl reload docker`, or `kill -HUP` dockerd); or remove `sandbox.runtime`".to_owned(),
        Engine::Podman => "install it (gVisor: `apt-get install runsc`), or give its path in `sandbox.runtime`".to_owned(),
    };
    Err(Error::sandbox(format!("{} has no runtime `{runtime}` (`sandbox.runtime`): {known}", target.describe()))
        .with_hint(hint))
}

/// What needs the engine to see this machine's files, refused before anything starts.
fn refuse_on_remote(plan: &ContainerPlan, target: &Target) -> Result<(), Error> {
    let engine = target.describe();
    let refused = if plan.expose_worktree {
        Some((
            "`sandbox.expose_worktree`",
            "it bind-mounts the worktree, which a remote engine cannot see",
            "remove it: the container gets a copy of its own",
        ))
    } else if !plan.mounts.is_empty() {
        Some((
            "`sandbox.mounts`",
            "their sources are folders on this machine, which a remote engine cannot see",
            "remove them, or run on a local engine",
        ))
    } else {
        None
    };
    match refused {
        None => Ok(()),
        Some((what, why, hint)) => {
            Err(Error::usage(format!("{what} does not work on a remote engine ({engine}): {why}")).with_hint(hint))
        }
    }
}

/// Start the run's container (after `preflight`) and seed its workspace. Anything that fails
/// after the container exists removes it, and its volume.
pub(crate) fn start(request: &ContainerRequest<'_>) -> Result<Box<dyn SandboxHandle>, Error> {
    let plan = request.plan;
    let target = &request.engaged.target;
    let name = format!("eden-{}", request.site.run_id);
    let eden =
        std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
    let base = request.site.base()?;
    let labels = labels(request, &base);
    create_volume(target, &name, &labels[..2])?;
    let run = run_command(request, &name, &eden, &labels).inspect_err(|_| {
        let _ = remove_volume(target, &name);
    })?;
    // Not cut short by Ctrl-C (the engine would make the container all the same, after eden
    // looked): a quick call, bounded by its timeout, and a further signal still stops it.
    let output = engine::run(run.command.clone().finishing()).inspect_err(|_| {
        let _ = remove(target, &name);
        let _ = remove_volume(target, &name);
    })?;
    let mut container = Container {
        target: target.clone(),
        remote: request.engaged.remote(),
        recorded_host: request.engaged.host_to_record(),
        name: name.clone(),
        id: output.stdout.trim().to_owned(),
        image: plan.image.clone(),
        ledger: Ledger::new(request.site, base),
        next_exec: AtomicU64::new(0),
        keep: String::new(),
        found: Default::default(),
        exec_env: request.site.agent_state.iter().map(|state| (state.var, state.value.clone())).collect(),
        states: request.site.agent_state.clone(),
        eden_inside: std::sync::atomic::AtomicBool::new(!request.engaged.remote()),
        guard: None,
        firewall: None,
        tunnel: None,
        keep_volume: false,
        exposed: plan.expose_worktree,
        services: Vec::new(),
        removed: false,
    };
    let salvage = ProcessBuilder::new(&eden).arg(super::SALVAGE_SUBCOMMAND).args(target.to_args()).arg(&name);
    container.guard = crate::process::guard::Guard::start(&salvage).ok();
    // Services join the namespace once its rules are in; they are ready before any hook runs.
    let set_up = container.set_up(request, &run, &output).and_then(|()| {
        let labels = service_labels(&labels);
        super::services::start(target, &name, &labels, &plan.services, &mut container.services)
    });
    match set_up {
        Ok(()) => Ok(Box::new(container)),
        Err(err) => {
            let _ = container.close_quietly();
            Err(err)
        }
    }
}

/// The labels that say whose a container (and its volume: the first two) is, for `eden clean`,
/// the salvage and the next run's prune.
fn labels(request: &ContainerRequest<'_>, base: &str) -> [(&'static str, String); 7] {
    [
        (LABEL_RUN, request.site.run_id.to_owned()),
        (LABEL_REPO, request.site.repo_root.display().to_string()),
        (LABEL_BRANCH, request.site.branch.to_owned()),
        (LABEL_PID, std::process::id().to_string()),
        (LABEL_WORKSPACE, request.site.worktree.display().to_string()),
        (LABEL_BASE, base.to_owned()),
        (LABEL_USER, run_user()),
    ]
}

/// A service's labels: the run's, without the workspace's (a salvage finds nothing to save in
/// it, and only removes it).
fn service_labels<'a>(labels: &'a [(&'static str, String)]) -> Vec<(&'a str, String)> {
    labels
        .iter()
        .filter(|(key, _)| ![LABEL_WORKSPACE, LABEL_BASE].contains(key))
        .map(|(key, value)| (*key, value.clone()))
        .collect()
}

fn create_volume(target: &Target, name: &str, labels: &[(&str, String)]) -> Result<(), Error> {
    let mut volume = target.command().args(["volume", "create"]);
    for (key, value) in labels {
        volume = volume.args(["--label", &format!("{key}={value}")]);
    }
    let made = engine::run(volume.arg(name))?;
    if !made.success() {
        return Err(Error::sandbox(format!(
            "{} cannot create the workspace volume `{name}`: {}",
            target.describe(),
            first_line(&made.stderr)
        )));
    }
    Ok(())
}

/// `docker run` for the run's container, and what it mounts where.
struct RunCommand {
    command: ProcessBuilder,
    /// Where the workspace volume is inside (the worktree's path, or with `expose_worktree`
    /// the container's own repository).
    workspace_volume: String,
    /// The host's object stores inside, read-only: the seeded repository's alternates.
    alternates: Vec<String>,
}

fn run_command(
    request: &ContainerRequest<'_>,
    name: &str,
    eden: &Path,
    labels: &[(&str, String)],
) -> Result<RunCommand, Error> {
    let plan = request.plan;
    let uid = nix::unistd::getuid().as_raw();
    let worktree = request.site.worktree.to_string_lossy();
    let remote = request.engaged.remote();
    let mut command = request.engaged.target.command().args(["run", "-d", "--init", "--name", name]);
    for (key, value) in labels {
        command = command.args(["--label", &format!("{key}={value}")]);
    }
    command = command
        // The container's own user is root, holding (when the run's user is not) only what
        // eden's set-up commands need; every command of the run's is an exec as its user.
        .args(["--user", "0:0"])
        .args(["--network", network_name(plan.network)])
        .args(super::services::host_entries(&plan.services))
        .args(PRIVILEGES)
        .args(if uid == 0 { &[][..] } else { &SETUP_CAPABILITIES[..] })
        .args(["-w", &worktree]);
    if let Some(runtime) = &plan.runtime {
        command = command.args(["--runtime", runtime]);
        if plan.engine == Engine::Podman && is_gvisor(runtime) {
            // podman hands gVisor the container's network namespace; runsc is to use that
            // namespace's stack (where eden's rules are), or none.
            // With services, the namespace's own stack: its loopback is theirs too.
            let own_stack = plan.network == Network::None && plan.services.is_empty();
            let flag = if own_stack { "network=none" } else { "network=host" };
            command = command.args(["--runtime-flag", flag]);
            // The held keys' proxy is a unix socket in a folder mounted in, which gVisor
            // connects to only when told (sockets mounted in, nothing else of this machine's).
            if request.site.proxy.is_some() && !remote {
                command = command.args(["--runtime-flag", "host-uds=open"]);
            }
        }
    }
    if plan.engine == Engine::Podman {
        command = command.arg("--pull=never");
        if uid != 0 {
            command = command.arg("--userns=keep-id");
        }
    }
    let (mut command, workspace_volume) = mount_workspace(command, request, name)?;
    let mut alternates = Vec::new();
    // A remote engine sees none of this machine's files: what these mounts give, the channel
    // carries instead (`Container::set_up`).
    if !remote {
        for (n, store) in repository::object_stores(&request.site.common_dir).iter().enumerate() {
            let inside = format!("{OBJECTS_INSIDE}/{n}");
            command = command.args(["-v", &format!("{}:{inside}:ro", store.display())]);
            alternates.push(inside);
        }
        command = command.args(["-v", &format!("{}:{EDEN_INSIDE}:ro", eden.display())]);
        for state in &request.site.agent_state {
            let path = state.folder.to_string_lossy();
            command = command.args(["-v", &format!("{path}:{path}")]);
        }
    }
    // Read-only: connecting to a socket needs no write access to its folder, and nothing
    // inside may put files where eden's proxy lives. A remote engine gets a tunnel instead.
    if let Some(proxy) = request.site.proxy.as_ref().filter(|_| !remote) {
        command = command.args(["-v", &format!("{}:{}:ro", proxy.display(), super::PROXY_INSIDE)]);
    }
    for mount in &plan.mounts {
        let mode = if mount.read_only { ":ro" } else { "" };
        command = command.args(["-v", &format!("{}:{}{mode}", mount.host.display(), mount.sandbox)]);
    }
    let command = limits(command, plan).args(&plan.run_args).arg(&plan.image).args(["tail", "-f", "/dev/null"]);
    Ok(RunCommand { command, workspace_volume, alternates })
}

/// The workspace volume at the worktree's path; with `expose_worktree` the host's files there
/// instead, and the volume holding only the container's own repository, the host's `.git`
/// pointer covered by a read-only one naming it.
fn mount_workspace(
    command: ProcessBuilder,
    request: &ContainerRequest<'_>,
    name: &str,
) -> Result<(ProcessBuilder, String), Error> {
    let worktree = request.site.worktree.to_string_lossy();
    if !request.plan.expose_worktree {
        return Ok((command.args(["-v", &format!("{name}:{worktree}")]), worktree.into_owned()));
    }
    let pointer = request.site.scratch.join("dot-git");
    fs_err::create_dir_all(&request.site.scratch)
        .and_then(|()| fs_err::write(&pointer, format!("gitdir: {GIT_DIR_INSIDE}\n")))
        .map_err(|err| Error::sandbox(format!("cannot prepare the worktree's mount: {err}")))?;
    let command = command
        .args(["-v", &format!("{worktree}:{worktree}")])
        .args(["-v", &format!("{}:{worktree}/.git:ro", pointer.display())])
        .args(["-v", &format!("{name}:{GIT_DIR_INSIDE}")]);
    Ok((command, GIT_DIR_INSIDE.to_owned()))
}

fn limits(mut command: ProcessBuilder, plan: &ContainerPlan) -> ProcessBuilder {
    if let Some(cpus) = plan.cpus {
        command = command.args(["--cpus", &cpus.to_string()]);
    }
    if let Some(memory) = plan.memory {
        command = command.args(["--memory", &memory.to_string()]);
    }
    if let Some(pids) = plan.pids_limit {
        command = command.args(["--pids-limit", &pids.to_string()]);
    }
    command
}

impl Container {
    /// After `docker run`: the container started and enforces its limits, its workspace is
    /// the run's user's, its keep-alive is known, its allowlist installed, its repository
    /// seeded. An error leaves the removal to the caller.
    fn set_up(&mut self, request: &ContainerRequest<'_>, run: &RunCommand, output: &Output) -> Result<(), Error> {
        let (plan, binary) = (request.plan, self.target.binary());
        if !output.success() {
            let gvisor = plan.runtime.as_deref().is_some_and(is_gvisor);
            let hint = match (gvisor, plan.pids_limit) {
                (true, Some(limit)) => format!(
                    "under gVisor its own threads count toward `pids_limit` ({limit}): raise it (a few hundred), or remove it; the command was `{}`",
                    run.command
                ),
                _ => format!("the command was `{}`", run.command),
            };
            return Err(Error::sandbox(format!("the {binary} container failed to start: {}", output.stderr.trim()))
                .with_hint(hint));
        }
        // A limit the engine accepted but cannot enforce is reported as a warning: refuse the run.
        if let Some(warning) =
            output.stderr.lines().find(|l| l.contains("WARNING") && l.to_lowercase().contains("limit"))
        {
            return Err(Error::sandbox(format!("{binary} cannot enforce a limit: {}", warning.trim()))
                .with_hint("remove the limit from `[sandbox]`, or run on a host whose kernel supports it"));
        }
        self.keep = self.prepare_workspace(&run.workspace_volume)?;
        if self.remote {
            let owner = format!("{}:{}", nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
            let exec = |command, stdin| self.as_root(command, stdin);
            carry::push_state(&self.states, &exec, Some(&owner), "container")?;
            if let Some(proxy) = &request.site.proxy {
                carry::copy_eden_in(&self.eden_inside, &exec, "container")?;
                let tunnel = carry::tunnel_proxy(proxy, &exec, "container")?;
                // Root's, out of the agent's reach when it is not root; sweeps spare it.
                self.keep = format!("{}|{}", self.keep, tunnel.pid_inside());
                self.tunnel = Some(tunnel);
            }
        }
        // The network rules go in while the workspace is seeded (eden's own commands, which
        // connect nowhere); both are done before any hook or agent command runs.
        let policy = match plan.network {
            Network::Allowlist => Some(super::firewall::Policy::Allow(plan.allow.clone())),
            Network::Internet => Some(super::firewall::Policy::Internet),
            _ => None,
        };
        let (engine, name) = (self.target.engine, self.name.clone());
        // A remote engine's rules go in from a helper there, after the seeding (below).
        let (local, remote) = match self.remote {
            true => (None, policy),
            false => (policy, None),
        };
        let rules = local.map(|policy| std::thread::spawn(move || super::firewall::install(engine, &name, &policy)));
        let seed = repository::SeedRequest {
            host_worktree: &request.site.worktree,
            branch: &request.site.branch,
            scratch: &request.site.scratch,
            alternates: &run.alternates,
            separate_git_dir: plan.expose_worktree.then_some(GIT_DIR_INSIDE),
        };
        let seeded = repository::seed(self, &seed).map(|_| ());
        if let Some(rules) = rules {
            let installed = rules.join().map_err(|_| Error::internal("installing the network rules panicked"))?;
            self.firewall = installed?;
        }
        seeded?;
        if let Some(policy) = remote {
            let sandbox = super::remote_rules::RemoteSandbox {
                target: &self.target,
                name: &self.name,
                image: &self.image,
                endpoint: self.recorded_host.as_deref(),
                as_root: &|command, stdin| self.as_root(command, stdin),
                eden_inside: &self.eden_inside,
                scratch: request.site.scratch.as_path(),
            };
            let refresher = super::remote_rules::install(&sandbox, &policy)?;
            self.firewall = refresher;
        }
        Ok(())
    }

    /// The workspace volume (made by the engine, owned by root) handed to the run's user, the
    /// pid folder made; returns the keep-alive's pid, which sweeps spare.
    fn prepare_workspace(&self, workspace_volume: &str) -> Result<String, Error> {
        let owner = format!("{}:{}", nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
        let name = &self.name;
        let script = ["sh", "-c", START_SCRIPT, "sh", &owner, workspace_volume, PIDS_INSIDE];
        let check = engine::run(self.target.command().args(["exec", "-u", "0", name]).args(script))?;
        if !check.success() {
            return Err(Error::sandbox(format!(
                "cannot prepare the workspace in container `{name}` (image `{}`): {}",
                self.image,
                first_line(&check.stderr)
            ))
            .with_hint("the image must have `sh`, `chown` and a writable `/tmp`"));
        }
        match check.stdout.split_whitespace().collect::<Vec<_>>()[..] {
            [pid] if pid.parse::<u32>().is_ok() => Ok(pid.to_owned()),
            _ => Err(Error::sandbox(format!(
                "cannot tell the keep-alive process of container `{name}` from others: {}",
                first_line(&check.stdout)
            ))
            .with_hint("eden runs the container with `--init`; an image whose entrypoint starts processes of its own is not supported")),
        }
    }
}

fn network_name(network: Network) -> &'static str {
    match network {
        Network::Bridge => "bridge",
        Network::None => "none",
        Network::Host => "host",
        // The engine's bridge, with eden's rules installed in the namespace.
        Network::Allowlist | Network::Internet => "bridge",
    }
}

impl Channel for Container {
    fn inside(&self, command: ProcessBuilder) -> ProcessBuilder {
        self.exec(command, &["-i"])
    }

    fn workspace(&self) -> &Path {
        self.ledger.worktree()
    }
}

impl SandboxHandle for Container {
    fn workspace_git(&self, args: &[&str]) -> Option<Result<crate::process::Output, Error>> {
        Some(super::repository::workspace_git(self, args))
    }

    fn artifacts(&self, request: &super::artifacts::ArtifactRequest<'_>) -> Result<super::artifacts::Collected, Error> {
        carry::copy_eden_in(&self.eden_inside, &|command, stdin| self.as_root(command, stdin), "container")?;
        let channel: &dyn Channel = self;
        let inside = super::artifacts::EdenInside {
            inside: &|command| channel.inside(command),
            eden: Path::new(EDEN_INSIDE),
            workspace: channel.workspace(),
        };
        super::artifacts::collect(&inside, request)
    }

    fn kind(&self) -> &'static str {
        self.target.binary()
    }

    fn container(&self) -> Option<crate::record::ContainerRecord> {
        Some(crate::record::ContainerRecord {
            engine: self.target.engine.into(),
            host: self.recorded_host.clone(),
            name: self.name.clone(),
            id: self.id.clone(),
            image: self.image.clone(),
            node: None,
            network_policy: None,
        })
    }

    fn state_env(&self) -> Vec<(&'static str, PathBuf)> {
        self.exec_env.clone()
    }

    fn prepare(&self, command: ProcessBuilder) -> Result<Prepared, Error> {
        self.ledger.note_used();
        let mut command = command;
        let stdin = command.take_stdin();
        let program = if carry::runs_eden(&command) {
            carry::copy_eden_in(&self.eden_inside, &|command, stdin| self.as_root(command, stdin), "container")?;
            EDEN_INSIDE.as_ref()
        } else {
            command.program()
        };
        let sandbox = format!("container `{}`", self.name);
        let exec = |command, _| self.exec(command, &[]);
        for program in std::iter::once(program).chain(carry::relayed_program(&command)) {
            carry::check_program(&self.found, &exec, program, &sandbox)?;
        }
        let n = self.next_exec.fetch_add(1, Ordering::SeqCst);
        let pid_file = format!("{PIDS_INSIDE}/{n}.pid");
        let note_tip =
            (!matches!(stdin, Stdin::Terminal { .. })).then_some((self.ledger.worktree(), self.ledger.branch()));
        let flags: &[&str] = match stdin {
            Stdin::Bytes(_) | Stdin::Terminal { tty: false } => &["-i"],
            // A terminal inside, sized and resized by the engine's client from ours.
            Stdin::Terminal { tty: true } => &["-it"],
            Stdin::Null => &[],
        };
        let script = wrapper(&self.keep, note_tip);
        let mut args: Vec<std::ffi::OsString> =
            vec!["-c".into(), script.into(), pid_file.clone().into(), program.to_owned()];
        args.extend(command.get_args().iter().cloned());
        let wrapped = command.with_program("sh", args);
        let exec = self.exec(wrapped, flags).stdin(stdin);
        let (target, name) = (self.target.clone(), self.name.clone());
        let inside = carry::InsideSandbox {
            exec: Box::new(move |argv| target.command().args(["exec", &name]).args(argv)),
            pid_file,
            keep: self.keep.clone(),
            gone: Some(self.target.command().args(["wait", &self.name])),
        };
        Ok(Prepared { command: exec, inside: Some(Box::new(inside)) })
    }

    fn sync(&self, reported_tip: Option<&str>) -> Result<Option<String>, Error> {
        self.ledger.sync(self, reported_tip, self.exposed).map_err(|err| self.kept_if_over(err))?;
        Ok(None)
    }

    fn bring_state_back(&self) -> Result<(), Error> {
        if self.remote {
            carry::pull_state(
                &self.states,
                &|command, stdin| self.as_root(command, stdin),
                self.ledger.scratch(),
                "container",
                self.ledger.limit(),
            )?;
        }
        Ok(())
    }

    fn check_alive(&self, exit_code: Option<i32>) -> Result<(), Error> {
        // A container being removed kills the command first (137) and disappears a moment
        // later: after a kill (or the engine's own error, 125), watch it for a while. 126 and
        // 127 are the command's shell saying a program would not run: the container is fine.
        let watch_for = match exit_code {
            Some(code) if code == 125 || code > 128 => std::time::Duration::from_secs(5),
            _ => std::time::Duration::ZERO,
        };
        let deadline = std::time::Instant::now() + watch_for;
        loop {
            if !self.running()? {
                break;
            }
            if std::time::Instant::now() >= deadline {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Err(Error::sandbox(format!(
            "the {} container `{}` stopped or was removed, so the command in it failed",
            self.target.binary(),
            self.name
        ))
        .with_hint(
            "something outside eden stopped or removed it (`docker rm`, a daemon restart, the OOM killer); run again",
        ))
    }

    fn close(&mut self) -> Result<Option<String>, Error> {
        if self.removed {
            return Ok(None);
        }
        // Stopped by something else: started again, so what it holds can still come back.
        let alive = self.running().unwrap_or(false)
            || (engine::run(self.target.command().args(["start", &self.name])).is_ok_and(|out| out.success())
                && self.running().unwrap_or(false));
        if !alive {
            // Removed under us: its volume still holds the work, and is kept.
            self.keep_volume = true;
            self.close_quietly()?;
            return Err(Error::sandbox(format!(
                "the {} container `{}` was gone at the end of the run, so its last work could not come back",
                self.target.binary(),
                self.name
            ))
            .with_hint(format!(
                "the agent's workspace is kept in the volume `{}`; `eden clean --force` removes it",
                self.name
            )));
        }
        let brought = self.ledger.bring_home(self, self.exposed);
        // Work too big to come back stays in the workspace volume, for the person to look at.
        if self.ledger.over_limit() {
            self.keep_volume = true;
        }
        let brought = brought.map_err(|err| self.kept_if_over(err));
        self.close_quietly()?;
        brought
    }
}

impl Container {
    /// Work too big to come back (`sandbox.max_return`) stays in the workspace volume, which
    /// the container's removal keeps: the error says where.
    fn kept_if_over(&self, err: Error) -> Error {
        if !self.ledger.over_limit() {
            return err;
        }
        let (engine, name) = (self.target.binary(), &self.name);
        err.with_hint(format!(
            "the agent's work is kept in the {engine} volume `{name}` (`{engine} run --rm -it -v {name}:/w IMAGE sh` to look; `eden clean --force` removes it); raise `sandbox.max_return` if its work is meant to be that big"
        ))
    }

    /// `ENGINE exec [flags] -u USER -w CWD -e NAME… NAME PROGRAM ARGS…` for `command`, as the
    /// run's user unless `flags` name one, its environment passed by name only (the values
    /// travel in the client's own environment).
    fn exec(&self, command: ProcessBuilder, flags: &[&str]) -> ProcessBuilder {
        let user = (!flags.contains(&"-u")).then(run_user);
        exec_in(&self.target, &self.name, user.as_deref(), command, flags, &self.exec_env)
    }

    fn running(&self) -> Result<bool, Error> {
        let state = engine::run(self.target.command().args(["inspect", "--format", "{{.State.Running}}", &self.name]))?;
        Ok(state.success() && state.stdout.trim() == "true")
    }

    /// `command` inside as root (for what the run's user may not write yet), its stdin open
    /// when `stdin` is set.
    fn as_root(&self, command: ProcessBuilder, stdin: bool) -> ProcessBuilder {
        self.exec(command, if stdin { &["-i", "-u", "0"] } else { &["-u", "0"] })
    }

    /// Remove the container (and its volume unless kept), bringing nothing back.
    fn close_quietly(&mut self) -> Result<(), Error> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        self.firewall = None;
        self.tunnel = None;
        let _ = crate::safe_fs::remove_tree(self.ledger.scratch());
        super::services::remove(&self.target, &self.services)?;
        remove(&self.target, &self.name)?;
        if !self.keep_volume {
            remove_volume(&self.target, &self.name)?;
        }
        // Removed: the guard has nothing left to do.
        self.guard = None;
        Ok(())
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// `docker|podman exec FLAGS [-u USER] [-w CWD] [-e NAME]… NAME PROGRAM ARGS…`: `command` run in
/// container `name`, git trusting the workspace, its variables (and `defaults` it does not set)
/// passed by name only, their values in the client's environment, never on a command line. The
/// one way eden runs a command in a container, whether its run is going or it is being salvaged.
fn exec_in(
    target: &Target,
    name: &str,
    user: Option<&str>,
    command: ProcessBuilder,
    flags: &[&str],
    defaults: &[(&'static str, PathBuf)],
) -> ProcessBuilder {
    let command = crate::git::with_config(command, &GIT_SAFE_DIRECTORY);
    let mut exec = target.command().arg("exec").args(flags);
    if let Some(user) = user {
        exec = exec.args(["-u", user]);
    }
    if let Some(cwd) = command.get_cwd() {
        exec = exec.args(["-w".as_ref(), cwd.as_os_str()]);
    }
    for (key, value) in defaults {
        if !command.get_env().iter().any(|(set, _)| set == key) {
            exec = exec.args(["-e", key]).env(key, value);
        }
    }
    for (key, value) in command.get_env() {
        if let Some(value) = value.as_ref().filter(|_| key != "PWD") {
            exec = exec.arg("-e").arg(key).env(key, value);
        }
    }
    exec.arg(name).arg(command.program()).args(command.get_args())
}

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
    fn inside(&self, command: ProcessBuilder) -> ProcessBuilder {
        let user = (!self.user.is_empty()).then_some(self.user.as_str());
        exec_in(&self.target, &self.name, user, command, &[], &[])
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
            saved = repository::salvage(&channel, branch, base, &patches, run_id, super::DEFAULT_MAX_RETURN);
        }
        if !run_id.is_empty() && !workspace.is_empty() {
            super::services::remove_of_run(target, run_id)?;
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
