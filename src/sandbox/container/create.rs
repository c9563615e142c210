//! Making the run's container: `docker run` with what it mounts, then its workspace handed to
//! the run's user, its network rules installed and its repository seeded.

use super::exec::{
    is_gvisor, run_user, GIT_DIR_INSIDE, KEEP_ALIVE_SCRIPT, OBJECTS_INSIDE, PIDS_INSIDE, PRIVILEGES, SEED_AHEAD_INSIDE,
    SETUP_CAPABILITIES, START_SCRIPT,
};
use super::exec::{remove, remove_volume};
use super::handle::Container;
use super::pool;
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
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

/// What the container needs to know about the run.
pub(crate) struct ContainerRequest<'a> {
    /// The steps' programs, looked for in the image while it is seeded.
    pub(crate) programs: &'a [PathBuf],
    pub(crate) plan: &'a ContainerPlan,
    /// The engine, as `preflight` found it.
    pub(crate) engaged: &'a Engaged,
    pub(crate) site: &'a RunSite,
}

/// The engine a run's container goes on, checked: which one, and whether it sees this machine's
/// Start the run's container (after `preflight`) and seed its workspace. Anything that fails
/// after the container exists removes it, and its volume.
/// `pruning`, the prune of earlier runs' containers going on beside: a claimed member takes it
/// (its handle waits for it at the end); otherwise the caller waits for it.
pub(crate) fn start(
    request: &ContainerRequest<'_>,
    pruning: &mut Option<super::leftovers::Pruning>,
) -> Result<(Box<dyn SandboxHandle>, Origin), Error> {
    let eden =
        std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
    let base = request.site.base()?;
    let alternates = shape(request.plan, request.engaged, &request.site.common_dir, &eden, false).alternates;
    let seed = seed_request(request, &alternates);
    std::thread::scope(|scope| {
        // The seed's host half (the sandbox's `.git`, from the host's git) while the container
        // is claimed or made.
        let ready = scope.spawn(|| repository::prepare(&seed));
        let (cold, ready) = match warm(request, &eden, &base, ready, pruning)? {
            Warm::Claimed(container, member) => return Ok((container, Origin::Warm { member })),
            Warm::Cold(why, ready) => (why, ready),
        };
        cold_start(request, &eden, base, ready)
            .map(|container| (container, cold.map_or(Origin::Cold, Origin::ColdBecause)))
    })
}

/// The seed's host half, on a thread of its own.
type ReadySeed<'scope> = std::thread::ScopedJoinHandle<'scope, Result<repository::Ready, Error>>;

fn joined(ready: ReadySeed<'_>) -> Result<repository::Ready, Error> {
    ready.join().unwrap_or_else(|_| Err(Error::internal("preparing the sandbox's repository panicked")))
}

/// What the seed needs (with `SeedRequest::first` unset: `Container::seed_and_rules` sets it).
fn seed_request<'a>(request: &'a ContainerRequest<'_>, alternates: &'a [String]) -> repository::SeedRequest<'a> {
    repository::SeedRequest {
        host_worktree: &request.site.worktree,
        branch: &request.site.branch,
        scratch: &request.site.scratch,
        alternates,
        separate_git_dir: request.plan.expose_worktree.then_some(GIT_DIR_INSIDE),
        first: None,
        ahead: None,
    }
}

/// How the run's container came.
pub(crate) enum Origin {
    /// Made for the run (no warm pool in this repository).
    Cold,
    /// Made for the run, with the reason no pool member was claimed.
    ColdBecause(String),
    /// Claimed from the warm pool: the member's name before the claim.
    Warm { member: String },
}

enum Warm<'scope> {
    Claimed(Box<dyn SandboxHandle>, String),
    /// Why not (`None`: the repository has no pool, so nothing to say), and the seed's host half
    /// for the cold start.
    Cold(Option<String>, ReadySeed<'scope>),
}

/// A member of the warm pool made for this run's settings, claimed and set up for the run;
/// or why there is none to claim.
fn warm<'scope>(
    request: &ContainerRequest<'_>,
    eden: &Path,
    base: &str,
    ready: ReadySeed<'scope>,
    pruning: &mut Option<super::leftovers::Pruning>,
) -> Result<Warm<'scope>, Error> {
    let site = request.site;
    let layout = crate::layout::Layout::new(&site.repo_root, &site.common_dir);
    if !pool::pool_dir(&layout).is_dir() || pool::pools(&layout).is_empty() {
        return Ok(Warm::Cold(None, ready));
    }
    if request.plan.expose_worktree {
        return Ok(Warm::Cold(
            Some("`expose_worktree` mounts the worktree, which no member made ahead has".into()),
            ready,
        ));
    }
    if site.worktree.parent() != Some(layout.worktrees().as_path()) {
        return Ok(Warm::Cold(
            Some(format!(
                "the run works in `{}`, and members are made ready for a workspace in `{}`",
                site.worktree.display(),
                layout.worktrees().display()
            )),
            ready,
        ));
    }
    let target = &request.engaged.target;
    let shape = shape(request.plan, request.engaged, &site.common_dir, eden, false);
    let key = pool::key(target, &request.plan.image, &shape.args, eden);
    if pool::read_pool(&layout, &key).is_none() {
        return Ok(Warm::Cold(Some(
            "no warm pool of this repository was made with this run's sandbox settings (`eden pool status` lists them)"
                .into(),
        ), ready));
    }
    let name = format!("eden-{}", site.run_id);
    let claim = pool::Claim {
        run_id: site.run_id.clone(),
        branch: site.branch.clone(),
        workspace: site.worktree.display().to_string(),
        base: base.to_owned(),
        user: run_user(),
        process: crate::process::ProcessStamp::current(),
        kept: false,
        door: None,
    };
    let clock = std::time::Instant::now();
    let Some(claimed) = pool::claim(target, &layout, &key, &name, &claim, base)? else {
        pool::refill_behind(&layout, &key);
        return Ok(Warm::Cold(Some("the warm pool has no idle member left".into()), ready));
    };
    pool::refill_behind(&layout, &key);
    let member = claimed.member;
    let mut container = Container::new(request, &name, member.id.clone(), base.to_owned());
    container.door = claimed.door;
    container.renaming = claimed.renaming.map(|renaming| (member.name.clone(), renaming));
    container.pruning = pruning.take();
    container.time("claim", clock);
    container.pooled = Some(site.repo_root.clone());
    container.guard = guard(eden, target, &name);
    // The rename goes on behind the claim: until it is waited for (before services, which
    // name it, and at the end), the engine is asked by the container's id.
    let ahead = Some(member.seed.as_str()).filter(|seed| !seed.is_empty());
    let set_up = container
        .set_up(request, Workspace::MadeByTheSeed { ahead }, joined(ready))
        .and_then(|()| if request.plan.services.is_empty() { Ok(()) } else { container.renamed() })
        .and_then(|()| start_services(&mut container, request, &labels(request, base)));
    match set_up {
        Ok(()) => Ok(Warm::Claimed(Box::new(container), member.name)),
        Err(err) => {
            let _ = container.close_quietly();
            Err(err)
        }
    }
}

/// The run's `[[service]]`s, in the container's network namespace once its rules are in: ready
/// before any hook runs.
fn start_services(
    container: &mut Container,
    request: &ContainerRequest<'_>,
    labels: &[(&'static str, String)],
) -> Result<(), Error> {
    let labels = service_labels(labels);
    let (target, name) = (container.target.clone(), container.name.clone());
    crate::sandbox::services::start(&target, &name, &labels, &request.plan.services, &mut container.services)
}

/// The salvage a guard runs if eden dies with the container still there.
fn guard(eden: &Path, target: &Target, name: &str) -> Option<crate::process::guard::Guard> {
    let salvage = ProcessBuilder::new(eden).arg(crate::sandbox::SALVAGE_SUBCOMMAND).args(target.to_args()).arg(name);
    crate::process::guard::Guard::start(&salvage).ok()
}

/// A container made for the run: its volume, `docker run`, the set-up.
fn cold_start(
    request: &ContainerRequest<'_>,
    eden: &Path,
    base: String,
    ready: ReadySeed<'_>,
) -> Result<Box<dyn SandboxHandle>, Error> {
    let target = &request.engaged.target;
    let name = format!("eden-{}", request.site.run_id);
    let labels = labels(request, &base);
    let clock = std::time::Instant::now();
    create_volume(target, &name, &labels[..2])?;
    let run = run_command(request, &name, eden, &labels).inspect_err(|_| {
        let _ = remove_volume(target, &name);
    })?;
    // Not cut short by Ctrl-C (the engine would make the container all the same, after eden
    // looked): a quick call, bounded by its timeout, and a further signal still stops it.
    let output = engine::run(run.command.clone().finishing()).inspect_err(|_| {
        let _ = remove(target, &name);
        let _ = remove_volume(target, &name);
    })?;
    let mut container = Container::new(request, &name, output.stdout.trim().to_owned(), base);
    container.time("start", clock);
    container.guard = guard(eden, target, &name);
    let set_up = check_started(request, &run, &output)
        .and_then(|()| container.set_up(request, Workspace::Volume(&run.workspace_volume), joined(ready)))
        .and_then(|()| start_services(&mut container, request, &labels));
    match set_up {
        Ok(()) => Ok(Box::new(container)),
        Err(err) => {
            let _ = container.close_quietly();
            Err(err)
        }
    }
}

/// The plan's network rules, installed in the container's namespace (from this machine on a
/// local engine, from a helper on a remote one).
fn policy(plan: &ContainerPlan) -> Option<crate::sandbox::firewall::Policy> {
    match plan.network {
        Network::Allowlist => Some(crate::sandbox::firewall::Policy::Allow(plan.allow.clone())),
        Network::Internet => Some(crate::sandbox::firewall::Policy::Internet),
        _ => None,
    }
}

impl Container {
    fn new(request: &ContainerRequest<'_>, name: &str, id: String, base: String) -> Container {
        Container {
            target: request.engaged.target.clone(),
            remote: request.engaged.remote(),
            pooled: None,
            recorded_host: request.engaged.host_to_record(),
            name: name.to_owned(),
            id,
            image: request.plan.image.clone(),
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
            exposed: request.plan.expose_worktree,
            services: Vec::new(),
            door: None,
            renaming: None,
            pruning: None,
            steps: Vec::new(),
            removed: false,
        }
    }
}

/// `docker run` made the container, which enforces every limit asked for.
fn check_started(request: &ContainerRequest<'_>, run: &RunCommand, output: &Output) -> Result<(), Error> {
    let (plan, binary) = (request.plan, request.engaged.target.binary());
    if !output.success() {
        let gvisor = plan.runtime.as_deref().is_some_and(is_gvisor);
        let hint = match (gvisor, plan.pids_limit) {
            (true, Some(limit)) => format!(
                "under gVisor its own threads count toward `pids_limit` ({limit}): raise it (a few hundred), or remove it; the command was `{}`",
                run.command
            ),
            _ => format!("the command was `{}`", run.command),
        };
        return Err(
            Error::sandbox(format!("the {binary} container failed to start: {}", output.stderr.trim())).with_hint(hint)
        );
    }
    // A limit the engine accepted but cannot enforce is reported as a warning: refuse the run.
    if let Some(warning) = output.stderr.lines().find(|l| l.contains("WARNING") && l.to_lowercase().contains("limit")) {
        return Err(Error::sandbox(format!("{binary} cannot enforce a limit: {}", warning.trim()))
            .with_hint("remove the limit from `[sandbox]`, or run on a host whose kernel supports it"));
    }
    Ok(())
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
}

/// The arguments every container of a plan on an engine is made with, whatever run it is
/// for: `docker run`'s after the name and labels, but for the working folder, the run's own
/// mounts, the image and its command. A warm pool's members are made with these, and a run
/// claims only a member made with its own (`pool`).
pub(super) struct Shape {
    pub(super) args: Vec<String>,
    /// The host's object stores inside, read-only: the seeded repository's alternates.
    pub(super) alternates: Vec<String>,
}

/// `proxy_socket`: the held keys' proxy is mounted in as a unix socket (gVisor must be told).
pub(super) fn shape(
    plan: &ContainerPlan,
    engaged: &Engaged,
    common_dir: &Path,
    eden: &Path,
    proxy_socket: bool,
) -> Shape {
    let uid = nix::unistd::getuid().as_raw();
    let remote = engaged.remote();
    let mut args: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| args.extend(items.iter().map(|item| (*item).to_owned()));
    // The container's own user is root, holding (when the run's user is not) only what
    // eden's set-up commands need; every command of the run's is an exec as its user.
    push(&["--user", "0:0", "--network", network_name(plan.network)]);
    let entries = crate::sandbox::services::host_entries(&plan.services);
    push(&entries.iter().map(String::as_str).collect::<Vec<_>>());
    push(&PRIVILEGES);
    push(if uid == 0 { &[][..] } else { &SETUP_CAPABILITIES[..] });
    if let Some(runtime) = &plan.runtime {
        push(&["--runtime", runtime]);
        if plan.engine == Engine::Podman && is_gvisor(runtime) {
            // podman hands gVisor the container's network namespace; runsc is to use that
            // namespace's stack (where eden's rules are), or none.
            // With services, the namespace's own stack: its loopback is theirs too.
            let own_stack = plan.network == Network::None && plan.services.is_empty();
            push(&["--runtime-flag", if own_stack { "network=none" } else { "network=host" }]);
            // The held keys' proxy is a unix socket in a folder mounted in, which gVisor
            // connects to only when told (sockets mounted in, nothing else of this machine's).
            if proxy_socket {
                push(&["--runtime-flag", "host-uds=open"]);
            }
        }
    }
    if plan.engine == Engine::Podman {
        push(&["--pull=never"]);
        if uid != 0 {
            push(&["--userns=keep-id"]);
        }
    }
    let mut alternates = Vec::new();
    // A remote engine sees none of this machine's files: what these mounts give, the channel
    // carries instead (`Container::set_up`).
    if !remote {
        for (n, store) in repository::object_stores(common_dir).iter().enumerate() {
            let inside = format!("{OBJECTS_INSIDE}/{n}");
            push(&["-v", &format!("{}:{inside}:ro", store.display())]);
            alternates.push(inside);
        }
        push(&["-v", &format!("{}:{EDEN_INSIDE}:ro", eden.display())]);
    }
    for mount in &plan.mounts {
        let mode = if mount.read_only { ":ro" } else { "" };
        push(&["-v", &format!("{}:{}{mode}", mount.host.display(), mount.sandbox)]);
    }
    if let Some(cpus) = plan.cpus {
        push(&["--cpus", &cpus.to_string()]);
    }
    if let Some(memory) = plan.memory {
        push(&["--memory", &memory.to_string()]);
    }
    if let Some(pids) = plan.pids_limit {
        push(&["--pids-limit", &pids.to_string()]);
    }
    push(&plan.run_args.iter().map(String::as_str).collect::<Vec<_>>());
    Shape { args, alternates }
}

/// `docker run` for the run's container, and what it mounts where.
fn run_command(
    request: &ContainerRequest<'_>,
    name: &str,
    eden: &Path,
    labels: &[(&str, String)],
) -> Result<RunCommand, Error> {
    let plan = request.plan;
    let remote = request.engaged.remote();
    let proxy_socket = request.site.proxy.is_some() && !remote;
    let shape = shape(plan, request.engaged, &request.site.common_dir, eden, proxy_socket);
    let mut command = request.engaged.target.command().args(["run", "-d", "--init", "--name", name]);
    for (key, value) in labels {
        command = command.args(["--label", &format!("{key}={value}")]);
    }
    let command = command.args(&shape.args).args(["-w".as_ref(), request.site.worktree.as_os_str()]);
    let (mut command, workspace_volume) = mount_workspace(command, request, name)?;
    if !remote {
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
    let command = command.arg(&plan.image).args(["tail", "-f", "/dev/null"]);
    Ok(RunCommand { command, workspace_volume })
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

/// Where a container's workspace comes from.
#[derive(Clone, Copy)]
enum Workspace<'a> {
    /// A volume mounted there (or, with `expose_worktree`, the repository's own folder), owned
    /// by root until the set-up hands it to the run's user.
    Volume(&'a str),
    /// Nothing yet: a claimed pool member, whose worktrees folder and pid folder were made
    /// ahead for the run's user. The seed makes the workspace (which ends the member's wait) and
    /// reads the keep-alive in the same exec; from the repository the member holds made ahead
    /// at `ahead`'s commit, if that is the run's.
    MadeByTheSeed { ahead: Option<&'a str> },
}

impl Container {
    /// After the container is up (made or claimed): its workspace is the run's user's, its
    /// keep-alive is known, what a run brings is carried in, its rules installed, its repository
    /// seeded. An error leaves the removal to the caller.
    fn set_up(
        &mut self,
        request: &ContainerRequest<'_>,
        workspace: Workspace<'_>,
        ready: Result<repository::Ready, Error>,
    ) -> Result<(), Error> {
        let plan = request.plan;
        if let Workspace::Volume(volume) = workspace {
            let clock = std::time::Instant::now();
            self.keep = self.prepare_workspace(volume)?;
            self.time("workspace", clock);
        }
        // The state folders go in, and the steps' programs are looked for, while the
        // repository is seeded: each is an exec of its own.
        let (pushed, seeded) = std::thread::scope(|scope| {
            let this = &*self;
            let pushed = scope.spawn(move || {
                let clock = std::time::Instant::now();
                this.push_state().map(|()| (clock.elapsed(), std::time::Instant::now()))
            });
            scope.spawn(move || this.look_for(request.programs));
            let clock = std::time::Instant::now();
            let seeded = this.seed_and_rules(request, workspace, ready);
            (pushed.join(), (seeded, clock.elapsed(), std::time::Instant::now()))
        });
        let (took, ended) = pushed.map_err(|_| Error::internal("carrying the state folders in panicked"))??;
        self.steps.push(("environment", took, ended));
        let ((seeded, firewall), took, ended) = seeded;
        self.steps.push(("seed", took, ended));
        // The keep-alive first: what is started below is added to what sweeps spare.
        if let Some(keep) = seeded? {
            self.keep = self.keep_alive(&keep)?;
        }
        if let Some(door) = &self.door {
            self.keep = format!("{}|{}", self.keep, door.inside);
        }
        if self.carried() {
            let exec = |command, stdin| self.as_root(command, stdin);
            if let Some(proxy) = &request.site.proxy {
                carry::copy_eden_in(&self.eden_inside, &exec, "container")?;
                let tunnel = carry::tunnel_proxy(proxy, &exec, "container")?;
                // Root's, out of the agent's reach when it is not root; sweeps spare it.
                self.keep = format!("{}|{}", self.keep, tunnel.pid_inside());
                self.tunnel = Some(tunnel);
            }
        }
        self.firewall = firewall?;
        let clock = std::time::Instant::now();
        if let Some(policy) = policy(plan).filter(|_| self.remote) {
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
            self.time("rules", clock);
        }
        Ok(())
    }

    /// A remote engine's or a pool member's state folders, carried in.
    fn push_state(&self) -> Result<(), Error> {
        if !self.carried() {
            return Ok(());
        }
        let owner = format!("{}:{}", nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
        let exec = |command, stdin| self.as_root(command, stdin);
        carry::push_state(&self.states, &exec, Some(&owner), "container")
    }

    /// The steps' programs looked for in the image ahead of their first exec (what is found is
    /// remembered; what is not is said when the program is run).
    fn look_for(&self, programs: &[PathBuf]) {
        let sandbox = format!("container `{}`", self.name);
        let exec = |command, _| self.exec(command, &[]);
        for program in programs {
            let _ = carry::check_program(&self.found, &exec, program.as_os_str(), &sandbox);
        }
    }

    /// The repository seeded, and on a local engine the network rules installed meanwhile
    /// (eden's own commands, which connect nowhere): both done before any hook or agent
    /// command runs. A remote engine's rules go in from a helper there, after (`set_up`).
    /// Returns what the seed's first script printed (the keep-alive), when it made the workspace.
    fn seed_and_rules(
        &self,
        request: &ContainerRequest<'_>,
        workspace: Workspace<'_>,
        ready: Result<repository::Ready, Error>,
    ) -> (Result<Option<String>, Error>, Result<Option<crate::sandbox::firewall::Refresher>, Error>) {
        let plan = request.plan;
        let (engine, name) = (self.target.engine, self.engine_ref().to_owned());
        let local = policy(plan).filter(|_| !self.remote);
        let rules =
            local.map(|policy| std::thread::spawn(move || crate::sandbox::firewall::install(engine, &name, &policy)));
        let (made, ahead) = match workspace {
            Workspace::MadeByTheSeed { ahead } => (true, ahead.map(|commit| (SEED_AHEAD_INSIDE, commit))),
            Workspace::Volume(_) => (false, None),
        };
        let seed =
            repository::SeedRequest { first: made.then_some(KEEP_ALIVE_SCRIPT), ahead, ..seed_request(request, &[]) };
        let seeded =
            ready.and_then(|ready| repository::send(self, &seed, ready)).map(|seeded| made.then_some(seeded.said));
        let firewall = match rules {
            Some(rules) => rules
                .join()
                .map_err(|_| Error::internal("installing the network rules panicked"))
                .and_then(|installed| installed),
            None => Ok(None),
        };
        (seeded, firewall)
    }

    /// A step of the start took from `since` until now.
    fn time(&mut self, step: &'static str, since: std::time::Instant) {
        self.steps.push((step, since.elapsed(), std::time::Instant::now()));
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
        self.keep_alive(&check.stdout)
    }

    /// The keep-alive's pid, from what `keep_alive_listing` printed.
    fn keep_alive(&self, printed: &str) -> Result<String, Error> {
        match printed.split_whitespace().collect::<Vec<_>>()[..] {
            [pid] if pid.parse::<u32>().is_ok() => Ok(pid.to_owned()),
            _ => Err(Error::sandbox(format!(
                "cannot tell the keep-alive process of container `{}` from others: {}",
                self.name,
                first_line(printed)
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
