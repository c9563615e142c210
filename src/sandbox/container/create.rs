//! Making the run's container: `docker run` with what it mounts, then its workspace handed to
//! the run's user, its network rules installed and its repository seeded.

use super::exec::{
    is_gvisor, run_user, GIT_DIR_INSIDE, OBJECTS_INSIDE, PIDS_INSIDE, PRIVILEGES, SETUP_CAPABILITIES, START_SCRIPT,
};
use super::handle::Container;
use super::leftovers::{remove, remove_volume};
use super::preflight::Engaged;
use crate::error::Error;
use crate::layout::{LABEL_BASE, LABEL_BRANCH, LABEL_PID, LABEL_REPO, LABEL_RUN, LABEL_USER, LABEL_WORKSPACE};
use crate::manifest::plan::{ContainerPlan, Engine};
use crate::manifest::schema::Network;
use crate::process::{Output, ProcessBuilder};
use crate::sandbox::carry::{self, first_line, EDEN_INSIDE};
use crate::sandbox::engine::{self, Target};
use crate::sandbox::ledger::Ledger;
use crate::sandbox::repository::{self};
use crate::sandbox::{RunSite, SandboxHandle};
use std::path::Path;
use std::sync::atomic::AtomicU64;

/// What the container needs to know about the run.
pub(crate) struct ContainerRequest<'a> {
    pub(crate) plan: &'a ContainerPlan,
    /// The engine, as `preflight` found it.
    pub(crate) engaged: &'a Engaged,
    pub(crate) site: &'a RunSite,
}

/// The engine a run's container goes on, checked: which one, and whether it sees this machine's
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
    let salvage = ProcessBuilder::new(&eden).arg(crate::sandbox::SALVAGE_SUBCOMMAND).args(target.to_args()).arg(&name);
    container.guard = crate::process::guard::Guard::start(&salvage).ok();
    // Services join the namespace once its rules are in; they are ready before any hook runs.
    let set_up = container.set_up(request, &run, &output).and_then(|()| {
        let labels = service_labels(&labels);
        crate::sandbox::services::start(target, &name, &labels, &plan.services, &mut container.services)
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
        .args(crate::sandbox::services::host_entries(&plan.services))
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
        command = command.args(["-v", &format!("{}:{}:ro", proxy.display(), crate::sandbox::PROXY_INSIDE)]);
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
            Network::Allowlist => Some(crate::sandbox::firewall::Policy::Allow(plan.allow.clone())),
            Network::Internet => Some(crate::sandbox::firewall::Policy::Internet),
            _ => None,
        };
        let (engine, name) = (self.target.engine, self.name.clone());
        // A remote engine's rules go in from a helper there, after the seeding (below).
        let (local, remote) = match self.remote {
            true => (None, policy),
            false => (policy, None),
        };
        let rules =
            local.map(|policy| std::thread::spawn(move || crate::sandbox::firewall::install(engine, &name, &policy)));
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
            let sandbox = crate::sandbox::remote_rules::RemoteSandbox {
                target: &self.target,
                name: &self.name,
                image: &self.image,
                endpoint: self.recorded_host.as_deref(),
                as_root: &|command, stdin| self.as_root(command, stdin),
                eden_inside: &self.eden_inside,
                scratch: request.site.scratch.as_path(),
            };
            let refresher = crate::sandbox::remote_rules::install(&sandbox, &policy)?;
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
