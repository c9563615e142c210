//! What the agent can read, connect to and do, in words, from the plan alone: what `--dry-run`
//! (`reach`) and `eden doctor MANIFEST` say of a run.

use crate::manifest::plan::{ContainerPlan, IsolatedPlan, MountPlan, PodPlan, SandboxPlan};
use crate::manifest::schema::Network;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Reach {
    /// What it can read (and write, where it says so).
    pub(crate) reads: Vec<String>,
    /// Where it can connect.
    pub(crate) connects: String,
    /// What privileges it holds.
    pub(crate) privileges: String,
}

/// The held key's way out, said once.
const RELAY: &str = "its provider, when eden holds its key, through eden's relay";

pub(crate) fn of(plan: &SandboxPlan) -> Reach {
    let mut reach = without_services(plan);
    let services = plan.services();
    if !services.is_empty() {
        let names: Vec<String> = services.iter().map(|service| format!("`{}`", service.name)).collect();
        reach.connects = format!(
            "{}; and its services {} at 127.0.0.1, in its network namespace (which they share, rules and all)",
            reach.connects,
            names.join(", ")
        );
    }
    reach
}

fn without_services(plan: &SandboxPlan) -> Reach {
    match plan {
        SandboxPlan::None => Reach {
            reads: vec!["everything you can: it runs as you, on this machine, with your environment".into()],
            connects: "everywhere this machine can".into(),
            privileges: "yours".into(),
        },
        SandboxPlan::Isolated(isolated) => isolated_reach(isolated),
        SandboxPlan::Container(container) => container_reach(container),
        SandboxPlan::Kubernetes(pod) => Reach {
            reads: vec![
                "its own copy of the worktree and repository, in the pod".into(),
                "its private state folders (copies of your agent's login and settings)".into(),
                format!("the image `{}`", pod.image),
            ],
            connects: pod_connects(pod),
            privileges: format!(
                "none: every capability dropped, no privilege escalation, the runtime's seccomp profile, as uid {} (never root), no service links{}{}",
                pod.run_as.0,
                if pod.service_account.is_some() { "" } else { ", no service-account token" },
                pod.runtime_class.as_ref().map(|class| format!(", under the RuntimeClass `{class}`")).unwrap_or_default()
            ) + if pod.network == Network::Bridge { "" } else { "; the network rules' init container, which ends before the agent's starts, alone is root, with `NET_ADMIN` and no other capability" },
        },
    }
}

fn pod_connects(pod: &PodPlan) -> String {
    let rules = "enforced by rules an init container installs in the pod's network namespace before the agent's starts, and a NetworkPolicy";
    match pod.network {
        Network::Bridge => "the cluster's network as it is: its services, its nodes, the API server, and whatever they reach (`network = \"bridge\"`)".into(),
        Network::None => format!("nothing ({rules}), and {RELAY}"),
        Network::Allowlist => {
            let allowed: Vec<&str> = pod.allow.iter().map(|entry| entry.host.as_str()).collect();
            format!("only {} and DNS at its resolver ({rules}); and {RELAY}", allowed.join(", "))
        }
        _ => format!("the internet, but not the node, the API server, the cluster's pods and services, private ranges, link-local addresses or this machine (`network = \"internet\"`, {rules}); and {RELAY}"),
    }
}

fn isolated_reach(plan: &IsolatedPlan) -> Reach {
    let mut reads = vec![
        "its own copy of the worktree and repository (writable)".into(),
        "its private state folders (copies of your agent's login and settings) and a private /tmp and home (writable)".into(),
        "this machine's program and library folders (/usr, /bin, /lib*), /etc without its secrets, the agent's own program, your repository's objects (read-only)".into(),
    ];
    reads.extend(mounts(&plan.mounts));
    let connects = match plan.network {
        Network::Host => "everything this machine reaches, its own loopback services and unix sockets in the abstract namespace too (`network = \"host\"`)".to_owned(),
        _ => format!("nothing but its own loopback, and {RELAY}"),
    };
    let mut privileges = "none: every capability dropped, no-new-privileges, no user namespace of its own, its own PID, IPC and UTS namespaces".to_owned();
    for exposure in &plan.host_exposures {
        privileges.push_str(&format!("; and, with `expose_host`, {exposure}"));
    }
    Reach { reads, connects, privileges }
}

fn container_reach(plan: &ContainerPlan) -> Reach {
    let mut reads = vec![
        match plan.expose_worktree {
            true => "the worktree itself, bind-mounted (`expose_worktree`), and a repository of its own".into(),
            false => "its own copy of the worktree and repository, in a volume".into(),
        },
        "its private state folders (copies of your agent's login and settings)".into(),
        format!("the image `{}`", plan.image),
    ];
    reads.extend(mounts(&plan.mounts));
    let connects = match plan.network {
        Network::Internet => format!("the internet, but not this machine, the bridge's gateway, private ranges or link-local addresses (`network = \"internet\"`, enforced by rules in its network namespace); and {RELAY}"),
        Network::Bridge => "the internet and this machine: every service listening on the bridge's gateway or another of this machine's addresses, private ranges and link-local (cloud metadata) too (`network = \"bridge\"`)".into(),
        Network::Host => "everything this machine reaches, its loopback services too (`network = \"host\"`)".into(),
        Network::None => format!("nothing, and {RELAY}"),
        Network::Allowlist => {
            let allowed: Vec<&str> = plan.allow.iter().map(|entry| entry.host.as_str()).collect();
            format!("only {} and DNS at its resolver; and {RELAY}", allowed.join(", "))
        }
    };
    let mut privileges = "none: every capability dropped, no-new-privileges".to_owned();
    if let Some(runtime) = &plan.runtime {
        if super::container::is_gvisor(runtime) {
            privileges.push_str(&format!(
                "; under gVisor (`runtime = \"{runtime}\"`), its system calls never reach this machine's kernel"
            ));
        } else {
            privileges.push_str(&format!("; under the runtime `{runtime}`"));
        }
    }
    for exposure in &plan.host_exposures {
        privileges.push_str(&format!("; and, with `expose_host`, {exposure}"));
    }
    Reach { reads, connects, privileges }
}

fn mounts(mounts: &[MountPlan]) -> impl Iterator<Item = String> + '_ {
    mounts.iter().map(|mount| {
        let mode = if mount.read_only { "read-only" } else { "writable" };
        format!("{} at {} ({mode}, `sandbox.mounts`)", mount.host.display(), mount.sandbox)
    })
}
