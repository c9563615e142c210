//! What the agent can read, connect to and do, in words, from the plan alone: what `--dry-run`
//! (`reach`) and `eden doctor MANIFEST` say of a run.

pub(crate) use super::provider::Reach;
use crate::manifest::plan::{MountPlan, SandboxPlan};

/// The held key's way out, said once.
pub(crate) const RELAY: &str = "its provider, when eden holds its key, through eden's relay";

pub(crate) fn of(plan: &SandboxPlan) -> Reach {
    let mut reach = super::registry::provider(plan).reach();
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

pub(crate) fn mounts(mounts: &[MountPlan]) -> impl Iterator<Item = String> + '_ {
    mounts.iter().map(|mount| {
        let mode = if mount.read_only { "read-only" } else { "writable" };
        format!("{} at {} ({mode}, `sandbox.mounts`)", mount.host.display(), mount.sandbox)
    })
}
