//! `[[service]]` resolved: containers the agent's code needs (a database, a cache), started
//! beside the sandbox for the whole run, each reached by its `name`.

use super::env_plan::resolve_env;
use super::load::{KeyPath, Source};
use super::schema::{Manifest, SandboxKind, ServiceSection};
use crate::error::Error;
use crate::redact::Secret;
use crate::values::Duration;
use serde::Serialize;
use std::collections::BTreeMap;

/// How long a service may take to be ready unless it says.
pub(crate) const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ServicePlan {
    /// The hostname the agent (and the checks) reach it by.
    pub(crate) name: String,
    pub(crate) image: String,
    /// Replaces the image's command (its entrypoint stays); empty: the image's own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) command: Vec<String>,
    pub(crate) env: BTreeMap<String, Secret>,
    /// A shell command run in the service's container until it succeeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ready: Option<String>,
    pub(crate) ready_timeout: Duration,
    /// Its limits: its own, else the sandbox's (a service runs what its client sends, so the
    /// sandbox's limits hold there too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cpus: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) memory: Option<crate::values::Size>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pids_limit: Option<u32>,
}

/// The services of `manifest`, checked: names a host can have and that differ, an image each,
/// a sandbox they can go beside.
pub(super) fn resolve_services(
    manifest: &Manifest,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServicePlan>, Error> {
    let path = KeyPath::parse("service");
    if let Some(first) = manifest.service.first() {
        let at = path.index(0);
        let key = if first.name.is_some() { at.child("name") } else { at };
        refuse_sandbox(manifest, &key, source)?;
    }
    let mut services: Vec<ServicePlan> = Vec::new();
    for (index, section) in manifest.service.iter().enumerate() {
        let service = resolve_service(section, &manifest.sandbox, &path.index(index), source, host_env)?;
        if services.iter().any(|known| known.name == service.name) {
            return Err(source
                .error_at(&path.index(index).child("name"), format!("two services are named `{}`", service.name))
                .with_hint("each service is reached by its name: give each a name of its own"));
        }
        services.push(service);
    }
    Ok(services)
}

/// Services go beside a container or a pod, which they share a network namespace with.
fn refuse_sandbox(manifest: &Manifest, at: &KeyPath, source: &Source) -> Result<(), Error> {
    let kind = manifest.sandbox.kind;
    if !matches!(kind, Some(SandboxKind::Docker | SandboxKind::Podman | SandboxKind::Kubernetes)) {
        let shown = if kind == Some(SandboxKind::Isolated) { "isolated" } else { "none" };
        return Err(source
            .error_at_key(at, format!("`[[service]]` needs a container sandbox, not `{shown}`"))
            .with_hint(
            "set `sandbox.kind` to `docker`, `podman` or `kubernetes`: services run as containers beside the agent's",
        ));
    }
    if manifest.sandbox.network == Some(super::schema::Network::Host) {
        return Err(source.error_at_key(at, "`[[service]]` cannot go with `network = \"host\"`").with_hint(
            "services share the sandbox's own network namespace, which `host` does not have: choose another `network`",
        ));
    }
    Ok(())
}

fn resolve_service(
    section: &ServiceSection,
    sandbox: &super::schema::SandboxSection,
    at: &KeyPath,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServicePlan, Error> {
    let name = section.name.clone().ok_or_else(|| {
        source
            .error_at_key(at, "a service has no `name`")
            .with_hint("give the hostname the agent reaches it by, e.g. `name = \"db\"`")
    })?;
    if let Some(problem) = hostname_problem(&name) {
        return Err(source.error_at(&at.child("name"), format!("invalid service name `{name}`: {problem}")).with_hint(
            "the name is a hostname: lowercase letters, digits and `-`, starting with a letter, e.g. `db`",
        ));
    }
    let image = section.image.clone().filter(|image| !image.trim().is_empty()).ok_or_else(|| {
        let key = if section.image.is_some() { at.child("image") } else { at.child("name") };
        source.error_at_key(&key, format!("service `{name}` has no `image`")).with_hint(
            "give the image it runs, e.g. `image = \"postgres:16\"` (eden never pulls: it must be on the engine)",
        )
    })?;
    let command = section.command.clone().unwrap_or_default();
    if section.command.as_ref().is_some_and(|command| command.is_empty() || command[0].trim().is_empty()) {
        return Err(source
            .error_at(&at.child("command"), format!("service `{name}`'s `command` is empty"))
            .with_hint("give the program and its arguments, e.g. `command = [\"redis-server\", \"--save\", \"\"]`, or remove the key to run the image's own"));
    }
    if section.ready.as_ref().is_some_and(|ready| ready.trim().is_empty()) {
        return Err(source.error_at(&at.child("ready"), format!("service `{name}`'s `ready` is empty")).with_hint(
            "give a command that succeeds once it serves, e.g. `ready = \"pg_isready -q\"`, or remove the key",
        ));
    }
    if section.ready_timeout.is_some() && section.ready.is_none() {
        return Err(source
            .error_at_key(&at.child("ready_timeout"), "`ready_timeout` has no effect without `ready`")
            .with_hint("add `ready = \"...\"`, the command that tells the service is ready, or remove the key"));
    }
    let env = resolve_env(&section.env.clone().unwrap_or_default(), &at.child("env"), source, host_env)?;
    let (cpus, memory, pids_limit) = resolve_limits(section, sandbox, &name, at, source)?;
    Ok(ServicePlan {
        name,
        image,
        command,
        env,
        ready: section.ready.clone(),
        ready_timeout: section.ready_timeout.unwrap_or(DEFAULT_READY_TIMEOUT),
        cpus,
        memory,
        pids_limit,
    })
}

/// A service's `cpus`, `memory` and `pids_limit`.
type Limits = (Option<f64>, Option<crate::values::Size>, Option<u32>);

/// A service's limits: its own, else the sandbox's. A pod's containers take no process limit.
fn resolve_limits(
    section: &ServiceSection,
    sandbox: &super::schema::SandboxSection,
    name: &str,
    at: &KeyPath,
    source: &Source,
) -> Result<Limits, Error> {
    if let Some(cpus) = section.cpus.filter(|cpus| !(*cpus > 0.0 && cpus.is_finite())) {
        return Err(source
            .error_at(&at.child("cpus"), format!("service `{name}`'s `cpus` must be a positive number, not {cpus}"))
            .with_hint("give the share of CPUs it may use, e.g. `cpus = 1.5`, or remove the key for the sandbox's"));
    }
    if section.pids_limit == Some(0) {
        return Err(source
            .error_at(&at.child("pids_limit"), format!("service `{name}`'s `pids_limit` must be at least 1"))
            .with_hint(
                "give the most processes it may run, e.g. `pids_limit = 256`, or remove the key for the sandbox's",
            ));
    }
    let pod = sandbox.kind == Some(SandboxKind::Kubernetes);
    if pod && section.pids_limit.is_some() {
        return Err(source
            .error_at(&at.child("pids_limit"), "a service's `pids_limit` does not apply in a pod")
            .with_hint(
                "Kubernetes limits processes per pod on the node (the kubelet's `podPidsLimit`): remove the key",
            ));
    }
    let pids_limit = section.pids_limit.or(sandbox.pids_limit).filter(|_| !pod);
    Ok((section.cpus.or(sandbox.cpus), section.memory.or(sandbox.memory), pids_limit))
}

/// Why `name` cannot be a service's hostname.
fn hostname_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() || name.len() > 63 {
        return Some("it must be 1 to 63 characters");
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) || name.ends_with('-') {
        return Some("it must start with a lowercase letter and not end with `-`");
    }
    if !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        return Some("only lowercase letters, digits and `-`");
    }
    if name == "localhost" {
        return Some("`localhost` is the sandbox itself");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::hostname_problem;

    #[test]
    fn hostnames() {
        for good in ["db", "redis-1", "a"] {
            assert_eq!(hostname_problem(good), None, "{good}");
        }
        for bad in ["", "Db", "1db", "db-", "d_b", "d.b", "localhost"] {
            assert!(hostname_problem(bad).is_some(), "{bad}");
        }
    }
}
