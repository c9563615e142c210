//! `[[service]]` on docker and podman: each service is a container of its own that joins the
//! sandbox's network namespace (`--network container:SANDBOX`), as the containers of a pod do.
//! The agent reaches a service at `127.0.0.1` by its name (an `/etc/hosts` entry the sandbox is
//! given with `--add-host`), whatever the sandbox's `network`: loopback is never refused. The
//! namespace is the run's own, and its rules (`firewall`, `remote_rules`) are the services'
//! too: a service reaches exactly what the agent may, so nothing the agent can make a service
//! do (a database's `COPY … FROM PROGRAM`) reaches further. A network of the engine's shared by
//! the containers would not do that: measured, a container on an `--internal` docker network
//! still reaches this machine at the network's gateway.
//!
//! A service holds few capabilities (`CAPABILITIES`: what an image's entrypoint needs to hand
//! its files to its own user and become it) and none to change the rules, and cannot gain any.
//! Its containers carry the run's labels and `eden.service`: removed before the sandbox at the
//! end, on Ctrl-C, by the guard's salvage if eden dies, and by `eden clean`.

use super::engine::{self, Target};
use crate::error::Error;
use crate::manifest::plan::Engine;
use crate::manifest::services_plan::ServicePlan;
use crate::process::ProcessBuilder;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The label naming a container's service (absent on the sandbox's own container).
pub(crate) const LABEL_SERVICE: &str = "eden.service";

/// How often a service is asked whether it is ready.
const READY_POLL: Duration = Duration::from_millis(100);

/// The longest one `ready` command may take before it counts as not ready.
const READY_CALL: Duration = Duration::from_secs(10);

/// How many of a failed service's last log lines its error shows.
const LOG_LINES: usize = 20;

/// The most of one such line it shows.
const LOG_LINE_CHARS: usize = 500;

/// All a service may hold: an entrypoint's `chown` and switch to its own user (postgres'
/// `gosu`), signals to its own processes, a port under 1024. Not `NET_ADMIN` or `NET_RAW`.
const CAPABILITIES: [&str; 8] =
    ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID", "KILL", "NET_BIND_SERVICE"];

/// The container of `service` beside `sandbox`.
pub(crate) fn container_name(sandbox: &str, service: &str) -> String {
    format!("{sandbox}-{service}")
}

/// `--add-host NAME:127.0.0.1` for each service: the sandbox's (and so the services')
/// `/etc/hosts`.
pub(crate) fn host_entries(services: &[ServicePlan]) -> Vec<String> {
    services.iter().flat_map(|service| ["--add-host".to_owned(), format!("{}:127.0.0.1", service.name)]).collect()
}

/// Checks before anything is made: every service's image is on the engine.
pub(crate) fn check_images(target: &Target, services: &[ServicePlan]) -> Result<(), Error> {
    for service in services {
        let inspect = engine::run(target.command().args(["image", "inspect", "--format", "{{.Id}}", &service.image]))?;
        if !inspect.success() {
            return Err(Error::sandbox(format!(
                "service `{}`'s image `{}` is not available to {}",
                service.name,
                service.image,
                target.describe()
            ))
            .with_hint(format!(
                "build or load it there first (`{} pull {}` where a registry is reachable, `docker save | docker load` where not); eden never pulls images",
                target.binary(),
                service.image
            )));
        }
    }
    Ok(())
}

/// Start every service beside the running `sandbox` and wait until each is ready. The names
/// of the containers made go into `started` as they are made (the caller removes them, whatever
/// happens).
pub(crate) fn start(
    target: &Target,
    sandbox: &str,
    labels: &[(&str, String)],
    services: &[ServicePlan],
    started: &mut Vec<String>,
) -> Result<(), Error> {
    for service in services {
        let name = container_name(sandbox, &service.name);
        started.push(name.clone());
        let made = engine::run(run_command(target, sandbox, &name, labels, service).finishing())?;
        if !made.success() {
            return Err(Error::sandbox(format!(
                "service `{}` did not start ({}): {}",
                service.name,
                service.image,
                made.stderr.trim()
            ))
            .with_hint("check its `image` and `command`"));
        }
    }
    let since = Instant::now();
    // The first failure ends the others' waits.
    let failed = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let waits: Vec<_> = services
            .iter()
            .map(|service| {
                let (name, failed) = (container_name(sandbox, &service.name), &failed);
                scope.spawn(move || {
                    let waited = wait_ready(target, &name, service, since, failed);
                    failed.fetch_or(waited.is_err(), Ordering::SeqCst);
                    waited
                })
            })
            .collect();
        let panicked = || Err(Error::internal("a readiness wait panicked"));
        let mut results: Vec<Result<(), Error>> =
            waits.into_iter().map(|wait| wait.join().unwrap_or_else(|_| panicked())).collect();
        match results.iter().position(Result::is_err) {
            Some(first) => results.swap_remove(first),
            None => Ok(()),
        }
    })
}

/// `ENGINE run -d` for one service: in the sandbox's network namespace, its labels, its
/// environment by name only (the values travel in the client's environment).
fn run_command(
    target: &Target,
    sandbox: &str,
    name: &str,
    labels: &[(&str, String)],
    service: &ServicePlan,
) -> ProcessBuilder {
    let mut command = target.command().args(["run", "-d", "--name", name]);
    for (key, value) in labels {
        command = command.args(["--label", &format!("{key}={value}")]);
    }
    command = command
        .args(["--label", &format!("{LABEL_SERVICE}={}", service.name)])
        .args(["--network", &format!("container:{sandbox}")])
        .args(["--cap-drop", "ALL"])
        .args(CAPABILITIES.iter().flat_map(|capability| ["--cap-add", capability]))
        .args(["--security-opt", "no-new-privileges"]);
    if target.engine == Engine::Podman {
        command = command.arg("--pull=never");
    }
    if let Some(cpus) = service.cpus {
        command = command.args(["--cpus", &cpus.to_string()]);
    }
    if let Some(memory) = service.memory {
        command = command.args(["--memory", &memory.0.to_string()]);
    }
    if let Some(pids) = service.pids_limit {
        command = command.args(["--pids-limit", &pids.to_string()]);
    }
    for (key, value) in &service.env {
        command = command.args(["-e", key]).env(key, &value.0);
    }
    command.arg(&service.image).args(&service.command)
}

/// Until `service` answers its `ready` (or, without one, while it runs): an error naming it,
/// with its last log lines, when it exits first or its `ready_timeout` passes.
fn wait_ready(
    target: &Target,
    name: &str,
    service: &ServicePlan,
    since: Instant,
    failed: &AtomicBool,
) -> Result<(), Error> {
    loop {
        if failed.load(Ordering::SeqCst) {
            return Ok(());
        }
        if crate::process::stopping() {
            return Err(Error::interrupted(crate::process::signal_received().unwrap_or(crate::exit::Signal::INT)));
        }
        let state =
            engine::run(target.command().args(["inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name]))?;
        let state = state.stdout.trim().to_owned();
        if !state.starts_with("running") {
            let code = state.split_whitespace().nth(1).unwrap_or("?");
            return Err(Error::sandbox(format!(
                "service `{}` ({}) exited with code {code} before it was ready{}",
                service.name,
                service.image,
                last_lines(target, name)
            ))
            .with_hint("check its `command` and `env`; its container is removed with the run"));
        }
        let Some(ready) = &service.ready else { return Ok(()) };
        let check = target.command().args(["exec", name, "sh", "-c", ready]).timeout(READY_CALL);
        if check.output().is_ok_and(|output| output.success()) {
            return Ok(());
        }
        if since.elapsed() >= service.ready_timeout.0 {
            return Err(Error::sandbox(format!(
                "service `{}` ({}) was not ready after {} s: `{ready}` never succeeded{}",
                service.name,
                service.image,
                service.ready_timeout.0.as_secs_f64(),
                last_lines(target, name)
            ))
            .with_hint("raise its `ready_timeout`, or check that `ready` succeeds once it serves"));
        }
        std::thread::sleep(READY_POLL);
    }
}

/// The service's last log lines, as a block for its error (empty when it said nothing).
fn last_lines(target: &Target, name: &str) -> String {
    let logs = engine::run(target.command().args(["logs", "--tail", &LOG_LINES.to_string(), name]));
    let Ok(logs) = logs else { return String::new() };
    last_lines_block(&format!("{}{}", logs.stdout, logs.stderr))
}

/// A service's last `LOG_LINES` lines of output, as the end of its error (empty for none).
pub(super) fn last_lines_block(text: &str) -> String {
    // What a service prints is the agent's to influence: each line cut, like the count.
    let lines: Vec<String> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.chars().take(LOG_LINE_CHARS).collect())
        .collect();
    let lines = &lines[lines.len().saturating_sub(LOG_LINES)..];
    match lines.is_empty() {
        true => String::new(),
        false => format!("; its last lines:\n  {}", lines.join("\n  ")),
    }
}

/// Remove the services' containers (running or not; gone already is fine).
pub(crate) fn remove(target: &Target, names: &[String]) -> Result<(), Error> {
    if names.is_empty() {
        return Ok(());
    }
    let output = engine::run(target.command().args(["rm", "-f"]).args(names).finishing())?;
    let stderr = output.stderr.to_lowercase();
    if output.success() || stderr.lines().all(|line| line.contains("no such container")) {
        return Ok(());
    }
    Err(Error::sandbox(format!("cannot remove the services' containers: {}", output.stderr.trim())))
}

/// Remove the services of run `run_id` on `target`, found by their labels (the guard's salvage,
/// `eden clean`: the eden that knew their names is gone).
pub(crate) fn remove_of_run(target: &Target, run_id: &str) -> Result<(), Error> {
    let filters = ["--filter", &format!("label={LABEL_SERVICE}")];
    let run = format!("label={}={run_id}", crate::layout::LABEL_RUN);
    let listing = engine::run(target.command().args(["ps", "-a", "-q"]).args(filters).args(["--filter", &run]))?;
    let ids: Vec<String> = listing.stdout.split_whitespace().map(str::to_owned).collect();
    remove(target, &ids)
}
