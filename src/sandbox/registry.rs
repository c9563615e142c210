//! The one table of sandbox kinds: a `[sandbox] kind` to the provider that owns its
//! lifecycle, and every kind for what has no plan (`eden doctor`'s look at this machine,
//! `eden clean`, `eden discard`, a guard's salvage). The only place outside a kind's folder
//! that names one; a new kind is a folder beside the others and a row here.

use super::provider::{Kind, Provider, Reach};
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

/// What a plan's agent can read, connect to and do, in words, from the plan alone: what
/// `--dry-run` (`reach`) and `eden doctor MANIFEST` say of a run.
pub(crate) fn reach(plan: &SandboxPlan) -> Reach {
    let mut reach = provider(plan).reach();
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

/// `eden __eden-salvage …` (a guard's cleanup after eden died): the kind whose arguments these
/// are saves what its sandbox holds and removes it. Returns the exit code.
pub(crate) fn run_salvage(args: &[std::ffi::OsString]) -> i32 {
    KINDS.iter().find_map(|row| row.kind.salvage(args)).unwrap_or(2)
}

/// `eden __eden-pool-refill REPO KEY` (behind a claim): the warm pool topped up again. Pools
/// are the container kind's.
pub(crate) fn run_pool_refill(args: &[std::ffi::OsString]) -> i32 {
    KINDS.iter().find_map(|row| row.kind.pool_refill(args)).unwrap_or(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::plan::tests::plan_from_text;
    use std::path::{Path, PathBuf};

    fn pool_request(layout: &crate::layout::Layout) -> crate::sandbox::provider::PoolRequest<'_> {
        crate::sandbox::provider::PoolRequest {
            layout,
            size: 1,
            idle: std::time::Duration::from_secs(60),
            refill: true,
            manifest: None,
            base: None,
        }
    }

    fn provider_of(sandbox: &str) -> Box<dyn Provider> {
        provider(
            &plan_from_text(&format!("prompt = \"go\"\n[agent]\nkind = \"simulated\"\n[sandbox]\n{sandbox}\n")).sandbox,
        )
    }

    #[test]
    fn every_kind_answers_to_its_names_once() {
        let names: Vec<SandboxKind> = KINDS.iter().flat_map(|row| row.names.iter().copied()).collect();
        for name in SandboxKind::NAMES {
            let kind = SandboxKind::from_name(name).unwrap();
            assert_eq!(names.iter().filter(|known| **known == kind).count(), 1, "{name}");
        }
    }

    #[test]
    fn none_is_no_boundary() {
        let none = provider_of("kind = \"none\"");
        assert!(!none.sandboxed());
        assert!(none.agents_on_this_machine());
        assert_eq!(none.proxy_inside(Path::new("/run/x")), PathBuf::from("/run/x"));
        assert!(!none.interactive().unwrap());
        assert!(none.built_image().is_none());
        assert_eq!(none.reach().privileges, "yours");
    }

    #[test]
    fn isolated_works_in_its_copy_and_has_no_terminal() {
        let isolated = provider_of("kind = \"isolated\"");
        assert!(isolated.sandboxed());
        assert_eq!(isolated.agent_cwd("RUN", Path::new("/w")), crate::layout::isolated_copy("RUN").copy);
        assert_eq!(isolated.proxy_inside(Path::new("/run/x")), PathBuf::from(crate::sandbox::PROXY_INSIDE));
        assert!(isolated.interactive().unwrap_err().message.contains("isolated"));
        assert!(isolated.reach().connects.starts_with("nothing but its own loopback"));
    }

    #[test]
    fn a_container_runs_its_image_and_keeps_the_repository_out() {
        let container = provider_of(
            "kind = \"docker\"\nimage = \"img:1\"\nmounts = [{ host = \"/usr/sbin\", sandbox = \"/data\" }]",
        );
        assert!(!container.agents_on_this_machine());
        assert!(container.interactive().unwrap());
        let built = container.built_image().unwrap();
        assert_eq!((built.engine, built.image.as_str()), ("docker", "img:1"));
        assert!(container.reach().reads.iter().any(|read| read.contains("/usr/sbin at /data")));
        // A mount holding the repository (or inside its `.git`) is refused; another is not.
        let repository =
            [PathBuf::from("/usr/sbin/repo"), PathBuf::from("/usr/sbin/repo/.git"), PathBuf::from("/usr/sbin/repo")];
        assert!(container.refuse_repository_mounts(&repository).is_err());
        let elsewhere = [PathBuf::from("/home/r"), PathBuf::from("/home/r/.git"), PathBuf::from("/home/r")];
        assert!(container.refuse_repository_mounts(&elsewhere).is_ok());
        // Without a preflight there is no engine to start on: an error, never a guess.
        assert!(container.pool_up(&pool_request(&crate::layout::Layout::new("/r", "/r/.git"))).is_err());
    }

    #[test]
    fn a_pod_asks_the_agent_as_usual_and_pools_without_services() {
        let pod = provider_of("kind = \"kubernetes\"\nimage = \"img:1\"");
        assert!(!pod.agents_on_this_machine());
        assert!(!pod.interactive().unwrap());
        assert!(pod.built_image().is_none());
        assert!(pod.reach().privileges.contains("never root"));
        let served = provider_of(
            "kind = \"kubernetes\"\nimage = \"img:1\"\n[[service]]\nname = \"db\"\nimage = \"postgres:16\"",
        );
        let refused = served.pool_up(&pool_request(&crate::layout::Layout::new("/r", "/r/.git"))).unwrap_err();
        assert_eq!(refused.kind, crate::error::ErrorKind::Usage);
        assert!(refused.message.contains("`[[service]]`"), "{}", refused.message);
    }
}
