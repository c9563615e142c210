//! The one table of sandbox kinds: a `[sandbox] kind` to the provider that owns its
//! lifecycle, and every kind for what has no plan (`eden doctor`'s look at this machine,
//! `eden clean`, `eden discard`, a guard's salvage). The only place outside a kind's folder
//! that names one; a new kind is a folder beside the others and a row here.

use super::provider::{Kind, Provider};
use super::{container, isolated, none, pod};
use crate::manifest::plan::SandboxPlan;
use crate::manifest::schema::SandboxKind;

/// A kind: the `[sandbox] kind` names it answers to, and what it does without a plan.
pub(crate) struct Row {
    pub(crate) names: &'static [SandboxKind],
    pub(crate) kind: &'static dyn Kind,
}

/// Every kind, in the order `eden doctor` and `eden clean` look at them.
pub(crate) static KINDS: [Row; 4] = [
    Row { names: &[SandboxKind::None], kind: &none::KIND },
    Row { names: &[SandboxKind::Docker, SandboxKind::Podman], kind: &container::KIND },
    Row { names: &[SandboxKind::Isolated], kind: &isolated::KIND },
    Row { names: &[SandboxKind::Kubernetes], kind: &pod::KIND },
];

/// The provider of a run's `[sandbox]` plan.
pub(crate) fn provider(plan: &SandboxPlan) -> Box<dyn Provider> {
    match plan {
        SandboxPlan::None => Box::new(none::Provider),
        SandboxPlan::Container(plan) => Box::new(container::Provider::new(plan)),
        SandboxPlan::Isolated(plan) => Box::new(isolated::Provider::new(plan)),
        SandboxPlan::Kubernetes(plan) => Box::new(pod::Provider::new(plan)),
    }
}

/// `eden __eden-salvage …` (a guard's cleanup after eden died): the kind whose arguments these
/// are saves what its sandbox holds and removes it. Returns the exit code.
pub(crate) fn run_salvage(args: &[std::ffi::OsString]) -> i32 {
    KINDS.iter().find_map(|row| row.kind.salvage(args)).unwrap_or(2)
}

/// `eden __eden-pool-refill REPO KEY` (behind a claim): the warm pool topped up again. Pools
/// are the container kind's.
pub(crate) fn run_pool_refill(args: &[std::ffi::OsString]) -> i32 {
    container::run_refill(args)
}
