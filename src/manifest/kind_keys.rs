//! Which manifest keys belong to which agent or sandbox kind: what the resolvers refuse for
//! another kind, and what a flag that changes the kind drops (`load`). A leaf of `manifest`:
//! it imports no resolver.

use super::schema::{AgentKind, SandboxKind};
use crate::agent::Family;

/// The keys of `[agent]` that belong to some kinds only: each with whether `kind` refuses it,
/// and the kinds that use it (for the hint).
pub(super) fn agent_keys(kind: AgentKind) -> [(&'static str, bool, String); 12] {
    let all_but_simulated = "every agent kind but `simulated`";
    let simulated = kind.family() == Family::Simulated;
    let cli = kind.family() == Family::Cli;
    [
        ("binary", simulated, all_but_simulated.to_owned()),
        ("args", !cli, "kind `cli`".to_owned()),
        ("prompt_via", !cli, "kind `cli`".to_owned()),
        ("parser", !cli, "kind `cli`".to_owned()),
        ("lines", !simulated, "kind `simulated`".to_owned()),
        ("line_delay", !simulated, "kind `simulated`".to_owned()),
        ("exit_code", !simulated, "kind `simulated`".to_owned()),
        ("effort", !kind.spec().effort, kinds_where(|spec| spec.effort)),
        ("resume", !kind.spec().resume, kinds_where(|spec| spec.resume)),
        ("model", simulated, all_but_simulated.to_owned()),
        ("extra_args", simulated, all_but_simulated.to_owned()),
        ("env", simulated, all_but_simulated.to_owned()),
    ]
}

/// The `[agent]` keys agent kind `kind` has no use for: what a flag that changes the kind
/// drops from the manifest (with a note) rather than refuses.
pub(crate) fn agent_keys_unused_by(kind: AgentKind) -> Vec<&'static str> {
    agent_keys(kind).into_iter().filter(|(_, refused, _)| *refused).map(|(key, _, _)| key).collect()
}

/// The `[sandbox]` keys sandbox kind `kind` has no use for (the network by its value: a
/// network `isolated` cannot have): what a flag that changes the kind drops from the manifest
/// (with a note) rather than refuses.
pub(crate) fn sandbox_keys_unused_by(kind: SandboxKind, network: Option<&str>) -> Vec<&'static str> {
    const CONTAINER: [&str; 13] = [
        "image",
        "network",
        "allow",
        "cpus",
        "memory",
        "pids_limit",
        "mounts",
        "run_args",
        "mount_agent_config",
        "expose_worktree",
        "expose_host",
        "host",
        "runtime",
    ];
    let mut unused: Vec<&'static str> = match kind {
        SandboxKind::None => CONTAINER.iter().chain(&["max_return"]).copied().collect(),
        SandboxKind::Isolated => {
            let mut keys = vec![
                "image",
                "cpus",
                "memory",
                "pids_limit",
                "run_args",
                "expose_worktree",
                "host",
                "runtime",
                "allow",
            ];
            if network.is_some_and(|network| !matches!(network, "none" | "host")) {
                keys.push("network");
            }
            keys
        }
        SandboxKind::Docker | SandboxKind::Podman => Vec::new(),
        SandboxKind::Kubernetes => {
            vec!["pids_limit", "mounts", "run_args", "runtime", "expose_worktree", "expose_host", "host"]
        }
    };
    if kind != SandboxKind::Kubernetes {
        unused.extend(POD_KEYS);
    }
    unused
}

/// The keys only a pod has.
pub(super) const POD_KEYS: [&str; 9] = [
    "namespace",
    "context",
    "image_pull_policy",
    "service_account",
    "node_selector",
    "tolerations",
    "start_timeout",
    "deadline",
    "runtime_class",
];

/// `kinds `a`, `b` and `c``: the agent kinds whose spec says so.
pub(super) fn kinds_where(has: impl Fn(&crate::agent::AgentSpec) -> bool) -> String {
    let names: Vec<String> =
        crate::agent::spec::SPECS.iter().filter(|spec| has(spec)).map(|spec| format!("`{}`", spec.name)).collect();
    match names.split_last() {
        Some((last, [])) => format!("kind {last}"),
        Some((last, rest)) => format!("kinds {} and {last}", rest.join(", ")),
        None => "no agent kind".to_owned(),
    }
}
