//! The words the kinds' reach descriptions share (`Provider::reach`; a plan's whole reach,
//! services and all, is `registry::reach`).

use crate::manifest::plan::MountPlan;

/// The held key's way out, said once.
pub(crate) const RELAY: &str = "its provider, when eden holds its key, through eden's relay";

pub(crate) fn mounts(mounts: &[MountPlan]) -> impl Iterator<Item = String> + '_ {
    mounts.iter().map(|mount| {
        let mode = if mount.read_only { "read-only" } else { "writable" };
        format!("{} at {} ({mode}, `sandbox.mounts`)", mount.host.display(), mount.sandbox)
    })
}
