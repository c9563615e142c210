//! docker and podman: one implementation, two binaries. One long-lived container per run
//! (`--init`, labels `eden.run`, `eden.repo`, `eden.branch`, `eden.pid`), the worktree and the
//! repository's `.git` mounted at the same absolute paths as on the host (so git's worktree links
//! resolve in both directions), the host's uid:gid. Every agent command is an `exec` in it.
//!
//! Environment values never go on a command line: the engine client gets them in its own
//! environment and is told only the names (`-e NAME`).
//!
//! Killing the `exec` client does not stop what it started inside, so each command runs behind
//! a tiny wrapper that writes its pid (an exec'd process leads its own process group) to a file
//! in the mounted `.git`; kills then signal that group inside the container. Nothing a command
//! starts may outlive it, so when the command ends the wrapper kills every process in the
//! container but the init and the keep-alive (the run's commands run one at a time, so whatever
//! else is there was left by this one); if the wrapper itself was SIGKILLed, eden runs that
//! sweep as an exec of its own.

use super::{Prepared, SandboxHandle};
use crate::error::Error;
use crate::layout::{LABEL_BRANCH, LABEL_PID, LABEL_REPO, LABEL_RUN};
use crate::manifest::plan::{ContainerPlan, Engine};
use crate::manifest::schema::Network;
use crate::process::{Inside, Output, ProcessBuilder, Stdin};
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where eden's own executable appears inside (the simulated agent runs it).
const EDEN_INSIDE: &str = "/opt/eden/bin/eden";

/// Kills every process in the container except the init (1), the keep-alive (`KEEP`) and the
/// shell running it, twice over for processes forked during the first pass.
const SWEEP: &str = r#"for pass in 1 2; do for p in /proc/[0-9]*; do p=${p#/proc/}; case $p in 1|KEEP|$$) ;; *) kill -9 "$p" 2>/dev/null;; esac; done; done"#;

/// `sh -c WRAPPER PIDFILE PROGRAM ARGS...`: writes its pid, runs the command in the foreground,
/// sweeps what the command left, and exits with the command's status. The trap (a handler, so
/// the command starts with default dispositions) makes a signal for the group end the command
/// first; the shell runs the trap, and the sweep, once the command has gone.
fn wrapper(keep: &str) -> String {
    format!(
        r#"trap : INT TERM HUP QUIT; echo $$ > "$0"; "$@"; status=$?; {}; exit $status"#,
        SWEEP.replace("KEEP", keep)
    )
}

/// Git inside works on a repository owned by the same uid, but the mount may make it look
/// foreign; allow it per command, never through anyone's global config.
const GIT_SAFE_DIRECTORY: [(&str, &str); 1] = [("safe.directory", "*")];

pub struct Container {
    engine: Engine,
    name: String,
    /// The engine's id for it, and the image it runs.
    id: String,
    image: String,
    /// Host folder (inside the mounted `.git`) for the pid files of running commands.
    pid_dir: PathBuf,
    next_exec: AtomicU64,
    /// The pid (inside) of the process that keeps the container alive; sweeps spare it.
    keep: String,
    /// Programs already found in the image (checked once each, before their first exec).
    found: std::sync::Mutex<std::collections::HashSet<std::ffi::OsString>>,
    /// Set for every exec unless the command sets it itself (the agent's state folders).
    exec_env: Vec<(&'static str, PathBuf)>,
    /// Removes the container if eden dies without doing it (SIGKILL).
    guard: Option<crate::process::guard::Guard>,
    /// Keeps the allowlist following its names' addresses (`network = "allowlist"`).
    firewall: Option<super::firewall::Refresher>,
    removed: bool,
}

/// What the container needs to know about the run.
pub struct ContainerRequest<'a> {
    pub plan: &'a ContainerPlan,
    pub run_id: &'a str,
    pub repo_root: &'a Path,
    pub common_dir: &'a Path,
    /// Where the pid files of its commands go (`.git/eden-exec/<run-id>`, mounted inside).
    pub exec_dir: &'a Path,
    pub worktree: &'a Path,
    pub branch: &'a str,
}

pub(super) fn engine_command(engine: Engine) -> ProcessBuilder {
    ProcessBuilder::new(engine.binary())
}

pub(super) fn run(command: ProcessBuilder) -> Result<Output, Error> {
    command.output().map_err(|err| Error::sandbox(format!("cannot run `{command}`: {err}")))
}

/// Checks that need no container: the engine is installed, reachable, and has the image.
pub fn preflight(engine: Engine, image: &str) -> Result<(), Error> {
    let binary = engine.binary();
    if which::which(binary).is_err() {
        return Err(Error::sandbox(format!("`{binary}` is not installed (sandbox kind `{binary}`)"))
            .with_hint(match engine {
            Engine::Docker => {
                "install Docker (Debian: `apt-get install docker.io`) and start it, or use `sandbox.kind = \"podman\"`"
            }
            Engine::Podman => "install podman (Debian: `apt-get install podman`), or use `sandbox.kind = \"docker\"`",
        }));
    }
    let info = run(engine_command(engine).args(["version", "--format", "{{.Server.Version}}"]))?;
    if !info.success() {
        return Err(Error::sandbox(format!(
            "`{binary} version` cannot reach the engine: {}",
            first_line(&info.stderr)
        ))
        .with_hint(match engine {
            Engine::Docker => "is the Docker daemon running? start it (`sudo systemctl start docker`, or `dockerd &`)",
            Engine::Podman => "check `podman info` for the engine's own error",
        }));
    }
    let inspect = run(engine_command(engine).args(["image", "inspect", "--format", "{{.Id}}", image]))?;
    if !inspect.success() {
        return Err(Error::sandbox(format!("image `{image}` is not available to {binary}"))
            .with_hint(format!("build it first (`{binary} build -t {image} .`); eden never pulls images")));
    }
    Ok(())
}

/// Start the run's container (after `preflight`). Anything that fails after the container
/// exists removes it.
pub fn start(request: &ContainerRequest<'_>) -> Result<Box<dyn SandboxHandle>, Error> {
    let plan = request.plan;
    let engine = plan.engine;
    let name = format!("eden-{}", request.run_id);
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    let eden =
        std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;

    let mut command = engine_command(engine)
        .args(["run", "-d", "--init", "--name", &name])
        .args(["--label", &format!("{LABEL_RUN}={}", request.run_id)])
        .args(["--label", &format!("{LABEL_REPO}={}", request.repo_root.display())])
        .args(["--label", &format!("{LABEL_BRANCH}={}", request.branch)])
        .args(["--label", &format!("{LABEL_PID}={}", std::process::id())])
        .args(["--user", &format!("{uid}:{gid}")])
        .args(["--network", network_name(plan.network)])
        // Nothing inside may change the namespace's rules (the allowlist) or forge packets.
        .args(if plan.network == Network::Allowlist {
            &["--cap-drop", "NET_ADMIN", "--cap-drop", "NET_RAW"][..]
        } else {
            &[]
        })
        .args(["-w", &request.worktree.to_string_lossy()]);
    if engine == Engine::Podman {
        command = command.arg("--pull=never");
        if uid != 0 {
            command = command.arg("--userns=keep-id");
        }
    }
    for path in [request.worktree, request.common_dir] {
        let path = path.to_string_lossy();
        command = command.args(["-v", &format!("{path}:{path}")]);
    }
    command = command.args(["-v", &format!("{}:{EDEN_INSIDE}:ro", eden.display())]);
    // The agent's configuration and transcripts live on the host, where sessions are captured.
    for state in &plan.agent_state {
        fs_err::create_dir_all(&state.mount).map_err(|err| {
            Error::sandbox(format!("cannot create the agent's folder `{}`: {err}", state.mount.display()))
                .with_hint("set `sandbox.mount_agent_config = false` to run without it")
        })?;
        let path = state.mount.to_string_lossy();
        command = command.args(["-v", &format!("{path}:{path}")]);
    }
    for mount in &plan.mounts {
        let mode = if mount.read_only { ":ro" } else { "" };
        command = command.args(["-v", &format!("{}:{}{mode}", mount.host.display(), mount.sandbox)]);
    }
    if let Some(cpus) = plan.cpus {
        command = command.args(["--cpus", &cpus.to_string()]);
    }
    if let Some(memory) = plan.memory {
        command = command.args(["--memory", &memory.to_string()]);
    }
    if let Some(pids) = plan.pids_limit {
        command = command.args(["--pids-limit", &pids.to_string()]);
    }
    command = command.args(&plan.run_args).arg(&plan.image).args(["tail", "-f", "/dev/null"]);

    let output = run(command.clone())?;
    let mut container = Container {
        engine,
        name: name.clone(),
        id: output.stdout.trim().to_owned(),
        image: plan.image.clone(),
        pid_dir: request.exec_dir.to_owned(),
        next_exec: AtomicU64::new(0),
        keep: String::new(),
        found: Default::default(),
        exec_env: plan.agent_state.iter().map(|state| (state.var, state.value.clone())).collect(),
        guard: None,
        removed: false,
        firewall: None,
    };
    container.guard = crate::process::guard::Guard::start(&engine_command(engine).args(["rm", "-f", &name])).ok();
    if !output.success() {
        let _ = container.close();
        return Err(Error::sandbox(format!(
            "the {} container failed to start: {}",
            engine.binary(),
            output.stderr.trim()
        ))
        .with_hint(format!("the command was `{command}`")));
    }
    // A limit the engine accepted but cannot enforce is reported as a warning: refuse the run.
    if let Some(warning) = output.stderr.lines().find(|l| l.contains("WARNING") && l.to_lowercase().contains("limit")) {
        let _ = container.close();
        return Err(Error::sandbox(format!("{} cannot enforce a limit: {}", engine.binary(), warning.trim()))
            .with_hint("remove the limit from `[sandbox]`, or run on a host whose kernel supports it"));
    }
    if let Err(err) = fs_err::create_dir_all(&container.pid_dir) {
        let _ = container.close();
        return Err(Error::sandbox(format!("cannot prepare the container's exec folder: {err}")));
    }
    // The image's user must be able to work in the worktree. And the init's only child right
    // now is the keep-alive (an exec's parent is outside the container): remember it, so sweeps
    // spare it.
    let check = "test -w \"$PWD\" || exit 3; for stat in /proc/[0-9]*/stat; do \
                 read -r pid comm state ppid rest < \"$stat\"; if [ \"$ppid\" = 1 ]; then echo \"$pid\"; fi; done";
    let check = run(engine_command(engine).args(["exec", &name, "sh", "-c", check]))?;
    if !check.success() {
        let _ = container.close();
        return Err(Error::sandbox(format!(
            "in image `{}`, uid {uid} cannot write the worktree (or the image has no `sh`)",
            plan.image
        ))
        .with_hint("the image must have `sh` and let the host's user write bind mounts; build it with that uid/gid"));
    }
    match check.stdout.split_whitespace().collect::<Vec<_>>()[..] {
        [pid] if pid.parse::<u32>().is_ok() => container.keep = pid.to_owned(),
        _ => {
            let _ = container.close();
            return Err(Error::sandbox(format!(
                "cannot tell the keep-alive process of container `{name}` from others: {}",
                first_line(&check.stdout)
            ))
            .with_hint("eden runs the container with `--init`; an image whose entrypoint starts processes of its own is not supported"));
        }
    }
    if plan.network == Network::Allowlist {
        match super::firewall::install(engine, &name, &plan.allow) {
            Ok(refresher) => container.firewall = refresher,
            Err(err) => {
                let _ = container.close();
                return Err(err);
            }
        }
    }
    Ok(Box::new(container))
}

fn network_name(network: Network) -> &'static str {
    match network {
        Network::Bridge => "bridge",
        Network::None => "none",
        Network::Host => "host",
        // The engine's bridge, with the allowlist's rules installed in the namespace.
        Network::Allowlist => "bridge",
    }
}

fn first_line(text: &str) -> &str {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
}

impl SandboxHandle for Container {
    fn kind(&self) -> &'static str {
        self.engine.binary()
    }

    fn container(&self) -> Option<crate::record::ContainerRecord> {
        Some(crate::record::ContainerRecord {
            engine: self.engine.binary().to_owned(),
            name: self.name.clone(),
            id: self.id.clone(),
            image: self.image.clone(),
        })
    }

    fn prepare(&self, command: ProcessBuilder) -> Result<Prepared, Error> {
        let mut command = crate::git::with_config(command, &GIT_SAFE_DIRECTORY);
        let n = self.next_exec.fetch_add(1, Ordering::SeqCst);
        let pid_file = self.pid_dir.join(format!("{n}.pid"));
        let stdin = command.take_stdin();
        let mut exec = engine_command(self.engine).arg("exec");
        match stdin {
            Stdin::Bytes(_) | Stdin::Terminal { tty: false } => exec = exec.arg("-i"),
            // A terminal inside, sized and resized by the engine's client from ours.
            Stdin::Terminal { tty: true } => exec = exec.arg("-it"),
            Stdin::Null => {}
        }
        if let Some(cwd) = command.get_cwd() {
            exec = exec.args(["-w".as_ref(), cwd.as_os_str()]);
        }
        // Names only on the command line; the values travel in the client's environment.
        for (key, value) in &self.exec_env {
            if !command.get_env().iter().any(|(set, _)| set == key) {
                exec = exec.args(["-e", key]).env(key, value);
            }
        }
        for (key, value) in command.get_env() {
            if let Some(value) = value {
                if key != "PWD" {
                    exec = exec.arg("-e").arg(key).env(key, value);
                }
            }
        }
        let program = if Some(command.program()) == std::env::current_exe().ok().as_deref().map(Path::as_os_str) {
            EDEN_INSIDE.as_ref()
        } else {
            command.program()
        };
        self.check_program(program)?;
        exec = exec
            .arg(&self.name)
            .args(["sh", "-c", &wrapper(&self.keep)])
            .arg(&pid_file)
            .arg(program)
            .args(command.get_args())
            .stdin(stdin);
        let inside =
            InsideContainer { engine: self.engine, name: self.name.clone(), pid_file, keep: self.keep.clone() };
        Ok(Prepared { command: exec, inside: Some(Box::new(inside)) })
    }

    fn check_alive(&self, exit_code: Option<i32>) -> Result<(), Error> {
        // A container being removed kills the command first (137) and disappears a moment
        // later: after a kill (or an engine error, 125-127), watch it for a while.
        let watch_for = match exit_code {
            Some(code) if code >= 125 => std::time::Duration::from_secs(5),
            _ => std::time::Duration::ZERO,
        };
        let deadline = std::time::Instant::now() + watch_for;
        loop {
            let state =
                run(engine_command(self.engine).args(["inspect", "--format", "{{.State.Running}}", &self.name]))?;
            if !(state.success() && state.stdout.trim() == "true") {
                break;
            }
            if std::time::Instant::now() >= deadline {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Err(Error::sandbox(format!(
            "the {} container `{}` stopped or was removed, so the command in it failed",
            self.engine.binary(),
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
        self.removed = true;
        self.firewall = None;
        let _ = fs_err::remove_dir_all(&self.pid_dir);
        remove(self.engine, &self.name)?;
        // Removed: the guard has nothing left to do.
        self.guard = None;
        Ok(None)
    }
}

impl Container {
    /// Fail clearly, before running anything, when the image does not have the program.
    fn check_program(&self, program: &std::ffi::OsStr) -> Result<(), Error> {
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        if found.contains(program) {
            return Ok(());
        }
        let probe = engine_command(self.engine)
            .args(["exec", &self.name, "sh", "-c", "command -v \"$1\" >/dev/null", "sh"])
            .arg(program);
        if !run(probe)?.success() {
            return Err(Error::sandbox(format!(
                "`{}` was not found in container `{}`: the image has no such program on its PATH",
                program.to_string_lossy(),
                self.name
            ))
            .with_hint("install the agent in the image, or set `agent.binary` to its path inside the image"));
        }
        found.insert(program.to_owned());
        Ok(())
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// One command's processes in the container.
struct InsideContainer {
    engine: Engine,
    name: String,
    pid_file: PathBuf,
    keep: String,
}

impl Inside for InsideContainer {
    /// Signal the command's process group (busybox's `kill` has no `--`).
    fn signal_command(&self, signal: Signal) -> Option<ProcessBuilder> {
        let pid = std::fs::read_to_string(&self.pid_file).ok()?;
        let pid = pid.trim();
        pid.parse::<u32>().ok()?;
        let name = signal.as_str().trim_start_matches("SIG");
        let script = format!("kill -s {name} -- -{pid} 2>/dev/null || kill -{name} -{pid}");
        Some(engine_command(self.engine).args(["exec", &self.name, "sh", "-c", &script]))
    }

    fn sweep_command(&self) -> ProcessBuilder {
        let script = SWEEP.replace("KEEP", &self.keep);
        engine_command(self.engine).args(["exec", &self.name, "sh", "-c", &script])
    }
}

/// An eden container, as `ps` lists it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub engine: Engine,
    pub name: String,
    /// Labels `eden.run`, `eden.repo` and `eden.pid` (0 when missing).
    pub run_id: String,
    pub repo: String,
    pub pid: i32,
}

impl Listed {
    /// Is the eden process that started it still running?
    pub fn owner_alive(&self) -> bool {
        self.pid > 0 && crate::process::ProcessStamp { pid: self.pid as u32, start: 0 }.is_alive()
    }
}

/// eden's containers on `engine`: of the repository at `repo`, or of every repository.
pub fn list(engine: Engine, repo: Option<&Path>) -> Result<Vec<Listed>, Error> {
    let filter = match repo {
        Some(root) => format!("label={LABEL_REPO}={}", root.display()),
        None => format!("label={LABEL_RUN}"),
    };
    // The engines' templates differ: docker's `ps` has a `Label` function, podman a `Labels` map.
    let label = |name: &str| match engine {
        Engine::Docker => format!("{{{{.Label \"{name}\"}}}}"),
        Engine::Podman => format!("{{{{index .Labels \"{name}\"}}}}"),
    };
    let format = format!("{{{{.Names}}}}\t{}\t{}\t{}", label(LABEL_RUN), label(LABEL_PID), label(LABEL_REPO));
    let listing = run(engine_command(engine).args(["ps", "-a", "--filter", &filter, "--format", &format]))?;
    if !listing.success() {
        return Err(Error::sandbox(format!(
            "`{} ps` cannot list containers: {}",
            engine.binary(),
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
            let repo = fields.next().unwrap_or_default().to_owned();
            (!name.is_empty()).then_some(Listed { engine, name, run_id, repo, pid })
        })
        .collect())
}

/// Remove a container, running or not. Gone already is fine.
pub fn remove(engine: Engine, name: &str) -> Result<(), Error> {
    let output = run(engine_command(engine).args(["rm", "-f", name]))?;
    if output.success() || output.stderr.to_lowercase().contains("no such container") {
        return Ok(());
    }
    Err(Error::sandbox(format!("cannot remove container `{name}`: {}", output.stderr.trim())))
}

/// Remove containers of this repository left by eden processes that no longer exist (eden was
/// killed before it could clean up, and its guard did not either). Returns the names removed.
pub fn prune_abandoned(engine: Engine, repo_root: &Path) -> Vec<String> {
    let Ok(listed) = list(engine, Some(repo_root)) else { return Vec::new() };
    listed
        .into_iter()
        .filter(|container| !container.owner_alive() && remove(engine, &container.name).is_ok())
        .map(|container| container.name)
        .collect()
}
