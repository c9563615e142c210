//! Before anything is made: the engine is there and answers, has the image, and can give the
//! run what its plan asks for (`Engaged`).

use super::exec::is_gvisor;
use crate::error::Error;
use crate::manifest::plan::{ContainerPlan, Engine, EngineHost};
use crate::manifest::schema::Network;
use crate::sandbox::carry::first_line;
use crate::sandbox::engine::{self, Reach, Target};
use std::path::Path;

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
            Network::Allowlist => {
                return Err(crate::sandbox::firewall::needs_root(&crate::sandbox::firewall::Policy::Allow(Vec::new())))
            }
            Network::Internet => {
                return Err(crate::sandbox::firewall::needs_root(&crate::sandbox::firewall::Policy::Internet))
            }
            _ => {}
        }
    }
    // The image first: found, it says the engine answers too. Only when it is not found is the
    // engine asked whether it is there at all, to say which of the two is wrong.
    let inspect = engine::run(target.command().args(["image", "inspect", "--format", "{{.Id}}", &plan.image]))?;
    let info = match inspect.success() {
        true => None,
        false => Some(engine::run(target.command().args(["version", "--format", "{{.Server.Version}}"]))?),
    };
    if let Some(info) = info.filter(|info| !info.success()) {
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
    crate::sandbox::services::check_images(&target, &plan.services)?;
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
