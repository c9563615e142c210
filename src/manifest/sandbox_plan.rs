//! Resolving `[sandbox]`: none, or a docker/podman container with its image, network, limits
//! and extra mounts (paths resolved and checked here, before anything runs).

use super::load::{KeyPath, Source};
use super::schema::*;
use crate::error::Error;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(crate) enum SandboxPlan {
    None,
    Container(Box<ContainerPlan>),
    /// A private clone outside the repository, run under bubblewrap.
    Isolated(Box<IsolatedPlan>),
    /// A pod on a Kubernetes cluster, reached with `kubectl`.
    Kubernetes(Box<PodPlan>),
}

/// `sandbox.kind = "isolated"`, resolved.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct IsolatedPlan {
    /// `none` (the default) or `host`.
    pub(crate) network: Network,
    /// Host folders handed over by name (`sandbox.mounts`).
    pub(crate) mounts: Vec<MountPlan>,
    pub(crate) expose_host: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) host_exposures: Vec<String>,
    /// The agent's configuration and transcript folders, writable inside (as in containers).
    pub(crate) agent_state: Vec<AgentStateMount>,
    /// `sandbox.max_return`, in bytes.
    pub(crate) max_return: u64,
}

/// `sandbox.kind = "kubernetes"`, resolved.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PodPlan {
    pub(crate) image: String,
    /// `None`: the context's namespace.
    pub(crate) namespace: Option<String>,
    /// `None`: the kubeconfig's current context.
    pub(crate) context: Option<String>,
    pub(crate) cpus: Option<f64>,
    pub(crate) memory: Option<u64>,
    /// `None`: the cluster's default.
    pub(crate) image_pull_policy: Option<ImagePullPolicy>,
    pub(crate) service_account: Option<String>,
    pub(crate) node_selector: BTreeMap<String, String>,
    pub(crate) tolerations: Vec<Toleration>,
    /// How long the pod may take to be running (pending, pulling its image).
    pub(crate) start_timeout: std::time::Duration,
    /// After this the cluster ends the pod whatever else happens (`activeDeadlineSeconds`).
    pub(crate) deadline: std::time::Duration,
    pub(crate) agent_state: Vec<AgentStateMount>,
    /// `sandbox.max_return`, in bytes.
    pub(crate) max_return: u64,
    /// `sandbox.runtime_class`: the pod's `runtimeClassName`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) runtime_class: Option<String>,
    /// The uid and gid the pod runs as: eden's own, or `POD_USER` when eden runs as root (a pod
    /// never runs as root).
    pub(crate) run_as: (u32, u32),
    /// `internet` (the default), `none` and `allowlist`: rules in the pod's network namespace,
    /// installed by an init container before the agent's starts (`sandbox::pod_rules`), and a
    /// NetworkPolicy. `bridge`: the cluster's own network as it is.
    pub(crate) network: Network,
    /// `network = "allowlist"`: the destinations allowed, as given (names resolved at start).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) allow: Vec<AllowEntry>,
    /// `[[service]]`: containers of the pod's own, beside the agent's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) services: Vec<super::services_plan::ServicePlan>,
}

/// The uid and gid a pod runs as when eden runs as root.
pub(crate) const POD_USER: (u32, u32) = (1000, 1000);

impl SandboxPlan {
    /// `[[service]]`, beside a container or in a pod (none elsewhere).
    pub(crate) fn services(&self) -> &[super::services_plan::ServicePlan] {
        match self {
            SandboxPlan::Container(container) => &container.services,
            SandboxPlan::Kubernetes(pod) => &pod.services,
            _ => &[],
        }
    }

    /// Where the services go: into the container's or the pod's plan.
    pub(crate) fn set_services(&mut self, services: Vec<super::services_plan::ServicePlan>) {
        match self {
            SandboxPlan::Container(container) => container.services = services,
            SandboxPlan::Kubernetes(pod) => pod.services = services,
            _ => {}
        }
    }

    /// The agent's state folders the sandbox gets private copies of (`None` without a sandbox).
    pub(crate) fn agent_state(&self) -> Option<&Vec<AgentStateMount>> {
        match self {
            SandboxPlan::None => None,
            SandboxPlan::Container(container) => Some(&container.agent_state),
            SandboxPlan::Isolated(isolated) => Some(&isolated.agent_state),
            SandboxPlan::Kubernetes(pod) => Some(&pod.agent_state),
        }
    }

    pub(crate) fn agent_state_mut(&mut self) -> Option<&mut Vec<AgentStateMount>> {
        match self {
            SandboxPlan::None => None,
            SandboxPlan::Container(container) => Some(&mut container.agent_state),
            SandboxPlan::Isolated(isolated) => Some(&mut isolated.agent_state),
            SandboxPlan::Kubernetes(pod) => Some(&mut pod.agent_state),
        }
    }

    /// `sandbox.max_return`: the most one iteration may send back (`None` without a sandbox).
    pub(crate) fn max_return(&self) -> Option<u64> {
        match self {
            SandboxPlan::None => None,
            SandboxPlan::Container(container) => Some(container.max_return),
            SandboxPlan::Isolated(isolated) => Some(isolated.max_return),
            SandboxPlan::Kubernetes(pod) => Some(pod.max_return),
        }
    }

    /// `none`, `docker`, `podman`, `isolated`: as the record and the display name it.
    pub(crate) fn kind(&self) -> SandboxKind {
        match self {
            SandboxPlan::None => SandboxKind::None,
            SandboxPlan::Container(container) => match container.engine {
                Engine::Docker => SandboxKind::Docker,
                Engine::Podman => SandboxKind::Podman,
            },
            SandboxPlan::Isolated(_) => SandboxKind::Isolated,
            SandboxPlan::Kubernetes(_) => SandboxKind::Kubernetes,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Engine {
    Docker,
    Podman,
}

impl Engine {
    pub(crate) fn binary(self) -> &'static str {
        match self {
            Engine::Docker => "docker",
            Engine::Podman => "podman",
        }
    }
}

/// Which engine a container sandbox runs on (`sandbox.host`, `--host`): an address the
/// engine's client takes, or the name of a docker context or podman connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EngineHost {
    /// `unix:///path`, `tcp://host:port`, `ssh://user@host[:port][/socket]`.
    Url(String),
    Named(String),
}

impl EngineHost {
    pub(crate) fn parse(text: &str) -> Result<EngineHost, Error> {
        let text = text.trim();
        if let Some((scheme, rest)) = text.split_once("://") {
            if !["unix", "tcp", "ssh"].contains(&scheme) {
                return Err(Error::usage(format!("`{text}` is not an engine address eden knows (`{scheme}://`)")));
            }
            if rest.is_empty() {
                return Err(Error::usage(format!("`{text}` names no host")));
            }
            return Ok(EngineHost::Url(text.to_owned()));
        }
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
        if text.is_empty() || text.starts_with(['-', '.']) || !text.chars().all(plain) {
            return Err(Error::usage(format!(
                "`{text}` is neither an engine address nor a context or connection name"
            )));
        }
        Ok(EngineHost::Named(text.to_owned()))
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            EngineHost::Url(text) | EngineHost::Named(text) => text,
        }
    }
}

impl Serialize for EngineHost {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ContainerPlan {
    pub(crate) engine: Engine,
    /// `sandbox.host`: the engines to run on, in order (empty: the client's own default). One
    /// run uses the first; several runs of one invocation are spread over them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) hosts: Vec<EngineHost>,
    pub(crate) image: String,
    pub(crate) network: Network,
    pub(crate) cpus: Option<f64>,
    pub(crate) memory: Option<u64>,
    pub(crate) pids_limit: Option<u32>,
    pub(crate) mounts: Vec<MountPlan>,
    pub(crate) run_args: Vec<String>,
    /// `sandbox.runtime`: the OCI runtime (`runsc`: gVisor); `None`: the engine's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) runtime: Option<String>,
    /// `network = "allowlist"`: the destinations allowed, as given (names resolved at start).
    pub(crate) allow: Vec<AllowEntry>,
    /// The agent's configuration and transcript folders: private copies in the container.
    pub(crate) agent_state: Vec<AgentStateMount>,
    /// `expose_worktree = true`: the host worktree bind-mounted instead of a copy of its own.
    pub(crate) expose_worktree: bool,
    /// What that mode gives away, said plainly (for `--dry-run`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) exposure: Option<&'static str>,
    /// `expose_host = true`: `run_args` and `mounts` that hand the container the host (or this
    /// repository) are accepted.
    pub(crate) expose_host: bool,
    /// `sandbox.max_return`, in bytes.
    pub(crate) max_return: u64,
    /// `run_args` and `mounts` that hand the container the host, accepted with
    /// `expose_host = true` (listed for `--dry-run`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) host_exposures: Vec<String>,
    /// `[[service]]`: containers in the sandbox's network namespace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) services: Vec<super::services_plan::ServicePlan>,
}

/// A `run_args` entry that hands the container the host: the flag and what it gives away.
fn run_arg_exposure(arg: &str, next: Option<&str>) -> Option<String> {
    let (flag, value, shown) = match arg.split_once('=') {
        Some((flag, value)) => (flag, Some(value), arg.to_owned()),
        None if arg == "--privileged" => (arg, None, arg.to_owned()),
        None => (arg, next, next.map_or_else(|| arg.to_owned(), |next| format!("{arg} {next}"))),
    };
    let host_namespace = |value: Option<&str>| value == Some("host");
    let what = match flag {
        "--privileged" => "every device and capability of the host",
        "--pid" if host_namespace(value) => "the host's processes",
        "--ipc" if host_namespace(value) => "the host's shared memory",
        "--uts" if host_namespace(value) => "the host's name",
        "--userns" if host_namespace(value) => "the host's users",
        "--network" | "--net" if host_namespace(value) => "the host's network",
        "--cgroupns" if host_namespace(value) => "the host's cgroups",
        "--cap-add" => "capabilities beyond a container's",
        "--device" => "a host device",
        "--security-opt" => "a weaker confinement",
        "-v" | "--volume" | "--mount" => "a mount eden cannot check (use `mounts`)",
        _ => return None,
    };
    Some(format!("`{shown}` in `run_args`: {what}"))
}

/// A mount that hands the container the host: `/`, the home folder or a folder holding it, the
/// container engine's socket (or the folder holding it).
fn mount_exposure(host: &std::path::Path, home: Option<&std::path::Path>) -> Option<String> {
    let shown = host.display();
    if host == std::path::Path::new("/") {
        return Some(format!("mount `{shown}`: the whole host"));
    }
    if home.is_some_and(|home| home.starts_with(host)) {
        return Some(format!("mount `{shown}`: your home folder"));
    }
    let name = host.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let sockets = ["docker.sock", "podman.sock"];
    if sockets.contains(&name.as_str()) || sockets.iter().any(|socket| host.join(socket).exists()) {
        return Some(format!("mount `{shown}`: the container engine, which can start anything on the host"));
    }
    None
}

/// What `expose_worktree = true` gives away.
pub(crate) const EXPOSURE: &str =
    "the agent writes the worktree's files on the host directly (symlinks it makes are real \
there, and git run in the worktree, eden's or yours, reads what it wrote: attributes naming filters you configured \
act on its files); the repository's .git (hooks, config, worktree metadata) stays out of its reach, and eden refuses \
to run git in a worktree where the agent made a repository of its own";

/// One of the agent's state folders, as the sandbox gets it: a private folder of the run's, which
/// `var` points the agent at, seeded with copies of what it needs from the person's own.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AgentStateMount {
    pub(crate) var: &'static str,
    /// The agent's part of the folder `var` names ("" = all of it).
    pub(crate) share: &'static str,
    /// The person's own folder (read, never written): where the seed is copied from.
    pub(crate) source: PathBuf,
    /// What is copied into the private folder, where the person has it.
    pub(crate) seed: Vec<PathBuf>,
}

/// The agent's state folders on the host (`var` if set, else under `$HOME`) and what a
/// sandbox's private copies of them are seeded with.
pub(super) fn agent_state(kind: AgentKind, host_env: &dyn Fn(&str) -> Option<String>) -> Vec<AgentStateMount> {
    kind.spec()
        .state_dirs
        .iter()
        .map(|dir| {
            let value = dir.resolve(host_env);
            let source = if dir.share.is_empty() { value.clone() } else { value.join(dir.share) };
            let seed = dir
                .seed
                .iter()
                .map(|name| {
                    let in_home = *name == dir.home_file && host_env(dir.var).is_none();
                    match (in_home, host_env("HOME")) {
                        (true, Some(home)) => PathBuf::from(home).join(name),
                        _ => source.join(name),
                    }
                })
                .filter(|path| path.exists())
                .collect();
            AgentStateMount { var: dir.var, share: dir.share, source, seed }
        })
        .collect()
}

/// A destination the sandbox may connect to: a name or an address (with a prefix length for a
/// network), and a TCP/UDP port (any port when `None`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub(crate) struct AllowEntry {
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
}

impl AllowEntry {
    pub(crate) fn parse(text: &str) -> Result<AllowEntry, Error> {
        let text = text.trim();
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => {
                let port = port
                    .parse::<u16>()
                    .ok()
                    .filter(|port| *port > 0)
                    .ok_or_else(|| Error::usage(format!("`{port}` is not a port")))?;
                (host, Some(port))
            }
            None => (text, None),
        };
        let (address, prefix) = match host.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (host, None),
        };
        if let Ok(ip) = address.parse::<std::net::IpAddr>() {
            if ip.is_ipv6() {
                return Err(Error::usage("IPv6 addresses are not supported yet (the sandbox gets no IPv6)"));
            }
            if ip.is_loopback() || ip.is_unspecified() {
                return Err(Error::usage(format!(
                    "`{address}` is the sandbox's own loopback, always open inside it and never the host's; \
                     to reach a service on the host, allow the host's address on the engine's network (docker's \
                     bridge gateway, usually 172.17.0.1) and have the service listen there"
                )));
            }
            if let Some(prefix) = prefix {
                prefix
                    .parse::<u8>()
                    .ok()
                    .filter(|p| *p <= 32)
                    .ok_or_else(|| Error::usage(format!("`/{prefix}` is not a prefix length (0-32)")))?;
            }
        } else {
            let name_ok = !address.is_empty()
                && prefix.is_none()
                && address
                    .split('.')
                    .all(|label| !label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
            if !name_ok {
                return Err(Error::usage(format!("`{host}` is neither a host name nor an IPv4 address or network")));
            }
        }
        Ok(AllowEntry { host: host.to_owned(), port })
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct MountPlan {
    pub(crate) host: PathBuf,
    pub(crate) sandbox: String,
    pub(crate) read_only: bool,
}

/// `sandbox.allow`, for `network = "allowlist"` only, and the `run_args` that would undo it.
fn resolve_allow(section: &SandboxSection, network: Network, source: &Source) -> Result<Vec<AllowEntry>, Error> {
    let path = KeyPath::parse("sandbox");
    if network != Network::Allowlist {
        if section.allow.is_some() {
            return Err(source
                .error_at_key(&path.child("allow"), "`sandbox.allow` needs `network = \"allowlist\"`")
                .with_hint("set `sandbox.network = \"allowlist\"`, or remove `allow`"));
        }
        return Ok(Vec::new());
    }
    let entries = section.allow.clone().unwrap_or_default();
    if entries.is_empty() {
        return Err(source
            .error_at(&path.child("network"), "`network = \"allowlist\"` needs `sandbox.allow`")
            .with_hint("list where the agent may connect, e.g. `allow = [\"api.anthropic.com:443\"]`; for no network at all use `network = \"none\"`"));
    }
    let mut allow = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let parsed = AllowEntry::parse(entry).map_err(|problem| {
            source
                .error_at(&path.child("allow").index(index), format!("`{entry}`: {}", problem.message))
                .with_hint("write `host`, `host:port`, `10.1.2.3`, `10.0.0.0/8` or `10.1.2.3:5432`")
        })?;
        allow.push(parsed);
    }
    let undoing = ["--privileged", "--cap-add", "--network", "--net", "--dns"];
    if let Some(arg) = section.run_args.iter().flatten().find(|arg| undoing.iter().any(|flag| arg.starts_with(flag))) {
        return Err(source
            .error_at_key(&path.child("run_args"), format!("`{arg}` in `run_args` would undo the allowlist"))
            .with_hint("the allowlist is enforced in the container's own network namespace; remove that argument"));
    }
    Ok(allow)
}

pub(super) fn resolve_sandbox(section: &SandboxSection, source: &Source) -> Result<SandboxPlan, Error> {
    let path = KeyPath::parse("sandbox");
    if section.kind != Some(SandboxKind::Kubernetes) {
        refuse_pod_keys(section, source, &path)?;
    }
    let engine = match section.kind {
        None | Some(SandboxKind::None) => return Ok(SandboxPlan::None),
        Some(SandboxKind::Docker) => Engine::Docker,
        Some(SandboxKind::Podman) => Engine::Podman,
        Some(SandboxKind::Kubernetes) => return resolve_pod(section, source, &path),
        Some(SandboxKind::Isolated) => return resolve_isolated(section, source, &path),
    };
    let Some(image) = section.image.clone().filter(|image| !image.trim().is_empty()) else {
        return Err(source
            .error_at(&path, format!("sandbox kind `{}` needs `sandbox.image`", engine.binary()))
            .with_hint(
                "set `sandbox.image` (or `--set sandbox.image=...`) to a local image; `eden image build` makes one named `eden:<repository folder>`",
            ));
    };
    if let Some(cpus) = section.cpus {
        if !(cpus > 0.0 && cpus.is_finite()) {
            return Err(
                source.error_at(&path.child("cpus"), format!("`sandbox.cpus` must be a positive number, not {cpus}"))
            );
        }
    }
    if section.pids_limit == Some(0) {
        return Err(source.error_at(&path.child("pids_limit"), "`sandbox.pids_limit` must be at least 1"));
    }
    let network = section.network.unwrap_or(Network::Internet);
    let runtime = resolve_runtime(section, source, &path)?;
    let allow = resolve_allow(section, network, source)?;
    let run_args = section.run_args.clone().unwrap_or_default();
    let mut run_arg_exposures = Vec::new();
    for (index, arg) in run_args.iter().enumerate() {
        if let Some(exposure) = run_arg_exposure(arg, run_args.get(index + 1).map(String::as_str)) {
            run_arg_exposures.push((path.child("run_args").index(index), exposure));
        }
    }
    let (mounts, host_exposures) = resolve_mounts(section, source, &path, network, run_arg_exposures)?;
    let hosts = resolve_hosts(section, source, &path)?;
    Ok(SandboxPlan::Container(Box::new(ContainerPlan {
        engine,
        hosts,
        image,
        network,
        cpus: section.cpus,
        memory: section.memory.map(|size| size.0),
        pids_limit: section.pids_limit,
        mounts,
        run_args,
        runtime,
        allow,
        agent_state: Vec::new(),
        expose_worktree: section.expose_worktree == Some(true),
        exposure: (section.expose_worktree == Some(true)).then_some(EXPOSURE),
        expose_host: section.expose_host == Some(true),
        host_exposures,
        max_return: resolve_max_return(section, source, &path)?,
        services: Vec::new(),
    })))
}

/// What one iteration may send back from a sandbox when the manifest does not say
/// (`sandbox.max_return`), and what a killed run's salvage may take.
pub(crate) const DEFAULT_MAX_RETURN: u64 = 2 << 30;

/// `sandbox.max_return`: at least 1 MiB (default `DEFAULT_MAX_RETURN`).
fn resolve_max_return(section: &SandboxSection, source: &Source, path: &KeyPath) -> Result<u64, Error> {
    match section.max_return {
        None => Ok(DEFAULT_MAX_RETURN),
        Some(size) if size.0 >= 1 << 20 => Ok(size.0),
        Some(size) => Err(source
            .error_at(&path.child("max_return"), format!("`sandbox.max_return` is {} bytes, less than 1 MiB", size.0))
            .with_hint(
                "give a size like \"512m\" or \"4g\"; it caps what one iteration may send back from the sandbox",
            )),
    }
}

/// `sandbox.mounts`, resolved and checked: each source exists, each target is absolute, and
/// what hands the sandbox the host (with `exposures`, the `run_args` that do) needs
/// `expose_host = true` — never with an allowlist. Returns the mounts and what they expose.
fn resolve_mounts(
    section: &SandboxSection,
    source: &Source,
    path: &KeyPath,
    network: Network,
    mut exposures: Vec<(KeyPath, String)>,
) -> Result<(Vec<MountPlan>, Vec<String>), Error> {
    let mut mounts = Vec::new();
    for (index, mount) in section.mounts.clone().unwrap_or_default().into_iter().enumerate() {
        let at = path.child("mounts").index(index);
        let host = match mount.host.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(rest),
            None => source.base_dir.join(&mount.host),
        };
        if !host.exists() {
            return Err(source
                .error_at(&at.child("host"), format!("mount source `{}` does not exist", host.display()))
                .with_hint("create it, or fix the path (relative paths resolve against the manifest's folder)"));
        }
        if !mount.sandbox.starts_with('/') {
            return Err(source
                .error_at(&at.child("sandbox"), format!("mount target `{}` must be an absolute path", mount.sandbox)));
        }
        mounts.push(MountPlan { host, sandbox: mount.sandbox, read_only: mount.read_only });
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for (index, mount) in mounts.iter().enumerate() {
        if let Some(exposure) = mount_exposure(&mount.host, home.as_deref()) {
            exposures.push((path.child("mounts").index(index).child("host"), exposure));
        }
    }
    if let Some((at, exposure)) = exposures.first() {
        if network == Network::Allowlist {
            return Err(source
                .error_at(at, format!("{exposure}: it would undo `network = \"allowlist\"`"))
                .with_hint("remove it: the allowlist holds only in a container that does not have the host"));
        }
        if section.expose_host != Some(true) {
            return Err(source
                .error_at(at, format!("{exposure}; an agent with it can reach past the sandbox"))
                .with_hint(
                    "remove it, or set `sandbox.expose_host = true` if you mean to hand the agent your machine",
                ));
        }
    }
    Ok((mounts, exposures.into_iter().map(|(_, exposure)| exposure).collect()))
}

/// `sandbox.kind = "isolated"`: no network unless `network = "host"` (there is no network of
/// its own to put rules in), and `mounts` checked as a container's are.
fn resolve_isolated(section: &SandboxSection, source: &Source, path: &KeyPath) -> Result<SandboxPlan, Error> {
    for (key, set) in [
        ("image", section.image.is_some()),
        ("cpus", section.cpus.is_some()),
        ("memory", section.memory.is_some()),
        ("pids_limit", section.pids_limit.is_some()),
        ("run_args", section.run_args.is_some()),
        ("expose_worktree", section.expose_worktree.is_some()),
        ("host", section.host.is_some()),
        ("runtime", section.runtime.is_some()),
    ] {
        if set {
            return Err(source
                .error_at_key(&path.child(key), format!("`sandbox.{key}` applies to docker and podman, not `isolated`"))
                .with_hint("remove it, or use `sandbox.kind = \"docker\"` or `\"podman\"`"));
        }
    }
    let network = match section.network {
        None | Some(Network::None) => Network::None,
        Some(Network::Host) => Network::Host,
        Some(Network::Bridge) => {
            return Err(source
                .error_at(&path.child("network"), "`network = \"bridge\"` in `isolated` would be this machine's own network, every service on its loopback included")
                .with_hint("say `network = \"host\"` if the agent is to reach everything this machine reaches; leave `network` out for none (a held key still reaches its provider)"));
        }
        Some(other @ (Network::Internet | Network::Allowlist)) => {
            return Err(source
                .error_at(
                    &path.child("network"),
                    format!("`isolated` cannot enforce `network = \"{}\"`: it has no network of its own to put rules in", other.as_str()),
                )
                .with_hint("use `sandbox.kind = \"docker\"` or `\"podman\"` for it, or `network = \"none\"` (the default) or `\"host\"`"));
        }
    };
    if section.allow.is_some() {
        return Err(source
            .error_at_key(
                &path.child("allow"),
                "`sandbox.allow` needs `network = \"allowlist\"`, which `isolated` cannot enforce",
            )
            .with_hint("use `sandbox.kind = \"docker\"` or `\"podman\"` for an allowlist, or remove `allow`"));
    }
    let (mounts, host_exposures) = resolve_mounts(section, source, path, network, Vec::new())?;
    Ok(SandboxPlan::Isolated(Box::new(IsolatedPlan {
        network,
        mounts,
        expose_host: section.expose_host == Some(true),
        host_exposures,
        agent_state: Vec::new(),
        max_return: resolve_max_return(section, source, path)?,
    })))
}

/// `sandbox.runtime`: a runtime's name or an absolute path (which only podman takes); never an
/// option in disguise.
fn resolve_runtime(section: &SandboxSection, source: &Source, path: &KeyPath) -> Result<Option<String>, Error> {
    let Some(runtime) = &section.runtime else { return Ok(None) };
    let at = path.child("runtime");
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/');
    if runtime.is_empty() || runtime.starts_with('-') || !runtime.chars().all(plain) {
        return Err(source.error_at(&at, format!("`{runtime}` is not a runtime's name or path")).with_hint(
            "name a runtime the engine knows (`runsc` for gVisor, `runc`, `crun`), or for podman its absolute path",
        ));
    }
    if runtime.contains('/') && (section.kind != Some(SandboxKind::Podman) || !runtime.starts_with('/')) {
        return Err(source
            .error_at(&at, format!("`{runtime}` is a path; only podman takes a runtime by its absolute path"))
            .with_hint("give docker the name the runtime is registered under in `/etc/docker/daemon.json` (`docker info` lists them)"));
    }
    Ok(Some(runtime.clone()))
}

/// `sandbox.host`, checked: each an address or a name, none twice.
fn resolve_hosts(section: &SandboxSection, source: &Source, path: &KeyPath) -> Result<Vec<EngineHost>, Error> {
    let given = match &section.host {
        None => return Ok(Vec::new()),
        Some(HostSetting::One(host)) => vec![host.clone()],
        Some(HostSetting::Many(hosts)) => hosts.clone(),
    };
    let at = path.child("host");
    if given.is_empty() {
        return Err(source
            .error_at(&at, "`sandbox.host` is an empty list")
            .with_hint("name at least one engine, or leave `sandbox.host` out for the client's default"));
    }
    let mut hosts = Vec::new();
    for (index, text) in given.iter().enumerate() {
        let here = if matches!(section.host, Some(HostSetting::Many(_))) { at.index(index) } else { at.clone() };
        let host = EngineHost::parse(text).map_err(|why| {
            source.error_at(&here, why.message).with_hint(
                "give `unix:///path/docker.sock`, `tcp://HOST:2376`, `ssh://USER@HOST`, or a docker context or podman connection name",
            )
        })?;
        if hosts.contains(&host) {
            return Err(source
                .error_at(&here, format!("`{text}` is in `sandbox.host` twice"))
                .with_hint("list each engine once"));
        }
        hosts.push(host);
    }
    Ok(hosts)
}

/// What a container has and a pod cannot, refused with the reason.
fn refuse_container_keys(section: &SandboxSection, source: &Source, path: &KeyPath) -> Result<(), Error> {
    let refused = [
        (
            "pids_limit",
            section.pids_limit.is_some(),
            "a pod's process limit is the node's (the kubelet's `podPidsLimit`), not the pod's",
        ),
        ("mounts", section.mounts.is_some(), "the cluster's nodes cannot see this machine's folders"),
        ("run_args", section.run_args.is_some(), "they are `docker run`'s and `podman run`'s"),
        (
            "runtime",
            section.runtime.is_some(),
            "a pod's runtime is a RuntimeClass of the cluster's: use `sandbox.runtime_class`",
        ),
        ("expose_worktree", section.expose_worktree.is_some(), "a pod cannot see this machine's worktree"),
        ("expose_host", section.expose_host.is_some(), "a pod is given nothing of this machine"),
        ("host", section.host.is_some(), "the cluster is the kubeconfig's (`sandbox.context`)"),
    ];
    for (key, set, why) in refused {
        if set {
            return Err(source
                .error_at_key(&path.child(key), format!("`sandbox.{key}` does not apply to `kubernetes`: {why}"))
                .with_hint("remove it"));
        }
    }
    Ok(())
}

/// `runtime_class`, `namespace` and `service_account` are names Kubernetes accepts.
fn check_pod_names(section: &SandboxSection, source: &Source, path: &KeyPath) -> Result<(), Error> {
    let name_ok = |name: &str| {
        !name.is_empty()
            && name.len() <= 63
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if let Some(class) = section.runtime_class.as_deref() {
        let ok = !class.is_empty()
            && class.len() <= 253
            && class.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
        if !ok {
            return Err(source
                .error_at(&path.child("runtime_class"), format!("`{class}` is not a RuntimeClass's name"))
                .with_hint("lowercase letters, digits, `-` and `.`: the name of a RuntimeClass of the cluster (`kubectl get runtimeclass`)"));
        }
    }
    for (key, value) in [("namespace", &section.namespace), ("service_account", &section.service_account)] {
        if let Some(value) = value.as_deref().filter(|value| !name_ok(value)) {
            return Err(source
                .error_at(&path.child(key), format!("`{value}` is not a Kubernetes name"))
                .with_hint("lowercase letters, digits and `-`, at most 63"));
        }
    }
    Ok(())
}

/// `sandbox.kind = "kubernetes"`: what a pod can be given, and a clear refusal of what it cannot.
fn resolve_pod(section: &SandboxSection, source: &Source, path: &KeyPath) -> Result<SandboxPlan, Error> {
    refuse_container_keys(section, source, path)?;
    // The default, as for a container: the internet but not the cluster, the node or this machine.
    let network = section.network.unwrap_or(Network::Internet);
    if network == Network::Host {
        return Err(source
            .error_at(&path.child("network"), "`network = \"host\"` is not for `kubernetes`: eden never runs a pod in its node's network")
            .with_hint("leave `network` out (the internet, not the cluster), or use `\"none\"`, `\"allowlist\"`, or `\"bridge\"` for the cluster's own network as it is"));
    }
    let allow = resolve_allow(section, network, source)?;
    let Some(image) = section.image.clone().filter(|image| !image.trim().is_empty()) else {
        return Err(source.error_at(path, "sandbox kind `kubernetes` needs `sandbox.image`").with_hint(
            "set `sandbox.image` to an image the cluster's nodes can get (a registry, or one loaded on the node)",
        ));
    };
    if let Some(cpus) = section.cpus {
        if !(cpus > 0.0 && cpus.is_finite()) {
            return Err(
                source.error_at(&path.child("cpus"), format!("`sandbox.cpus` must be a positive number, not {cpus}"))
            );
        }
    }
    check_pod_names(section, source, path)?;
    Ok(SandboxPlan::Kubernetes(Box::new(PodPlan {
        image,
        namespace: section.namespace.clone(),
        context: section.context.clone(),
        cpus: section.cpus,
        memory: section.memory.map(|size| size.0),
        image_pull_policy: section.image_pull_policy,
        service_account: section.service_account.clone(),
        node_selector: section.node_selector.clone().unwrap_or_default(),
        tolerations: section.tolerations.clone().unwrap_or_default(),
        start_timeout: section.start_timeout.map_or(std::time::Duration::from_secs(300), |d| d.0),
        deadline: section.deadline.map_or(std::time::Duration::from_secs(24 * 3600), |d| d.0),
        agent_state: Vec::new(),
        max_return: resolve_max_return(section, source, path)?,
        runtime_class: section.runtime_class.clone(),
        network,
        allow,
        services: Vec::new(),
        run_as: match (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw()) {
            (0, _) => POD_USER,
            ids => ids,
        },
    })))
}

/// The pod's keys, refused for every other kind.
pub(super) fn refuse_pod_keys(section: &SandboxSection, source: &Source, path: &KeyPath) -> Result<(), Error> {
    let set = [
        section.namespace.is_some(),
        section.context.is_some(),
        section.image_pull_policy.is_some(),
        section.service_account.is_some(),
        section.node_selector.is_some(),
        section.tolerations.is_some(),
        section.start_timeout.is_some(),
        section.deadline.is_some(),
        section.runtime_class.is_some(),
    ];
    match super::kind_keys::POD_KEYS.iter().zip(set).find(|(_, set)| *set) {
        Some((key, _)) => Err(source
            .error_at_key(&path.child(key), format!("`sandbox.{key}` applies to `kubernetes` only"))
            .with_hint("remove it, or use `sandbox.kind = \"kubernetes\"`")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(text: &str) -> Result<SandboxPlan, String> {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        resolve_sandbox(&manifest.sandbox, &source).map_err(|err| err.message)
    }

    #[test]
    fn each_kind_with_its_own_keys() {
        assert!(matches!(sandbox(""), Ok(SandboxPlan::None)));
        let Ok(SandboxPlan::Container(container)) = sandbox("[sandbox]\nkind = \"docker\"\nimage = \"eden:x\"\n")
        else {
            panic!("a container")
        };
        assert_eq!((container.engine, container.network), (Engine::Docker, Network::Internet));
        assert_eq!(container.max_return, DEFAULT_MAX_RETURN);
        assert!(sandbox("[sandbox]\nkind = \"docker\"\n").unwrap_err().contains("needs `sandbox.image`"));
        let Ok(SandboxPlan::Isolated(isolated)) = sandbox("[sandbox]\nkind = \"isolated\"\n") else {
            panic!("isolated")
        };
        assert_eq!(isolated.network, Network::None);
        let pod = sandbox("[sandbox]\nkind = \"kubernetes\"\nimage = \"x\"\npids_limit = 10\n").unwrap_err();
        assert!(pod.contains("`sandbox.pids_limit` does not apply to `kubernetes`"), "{pod}");
        let allow =
            sandbox("[sandbox]\nkind = \"docker\"\nimage = \"x\"\nnetwork = \"allowlist\"\nallow = [\"127.0.0.1\"]\n");
        assert!(allow.unwrap_err().contains("the sandbox's own loopback"));
        assert!(sandbox("[sandbox]\nkind = \"docker\"\nimage = \"x\"\nhost = \"ftp://h\"\n")
            .unwrap_err()
            .contains("not an engine address"));
    }
}
