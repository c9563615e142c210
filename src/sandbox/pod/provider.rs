//! `kubernetes` as a provider: one pod per run on the person's cluster, through their `kubectl`.

use super::pool::Claimed;
use super::{exists, preflight, salvage_and_delete, Kube};
use crate::error::Error;
use crate::manifest::plan::{Plan, PodPlan};
use crate::manifest::schema::Network;
use crate::sandbox::provider::Reach;
use crate::sandbox::provider::{
    self, Announce, Check, Left, Leftover, Leftovers, PoolRequest, PoolUp, Recorded, Removal, Scope, Start, Started,
    Verdict,
};
use crate::sandbox::reach::RELAY;
use std::path::Path;

/// The record's engine for a pod.
const ENGINE: &str = crate::record::SandboxEngine::Kubernetes.as_str();

pub(crate) struct Provider {
    plan: PodPlan,
}

impl Provider {
    pub(crate) fn new(plan: &PodPlan) -> Provider {
        Provider { plan: plan.clone() }
    }
}

impl provider::Provider for Provider {
    fn name(&self) -> &'static str {
        ENGINE
    }

    fn preflight(&mut self, _holds_keys: bool) -> Result<(), Error> {
        preflight(&self.plan)
    }

    /// A pod of the run's own: claimed from a warm pool of the repository, or made.
    fn start(&self, start: &Start<'_>) -> Result<Started, Error> {
        let site = start.site;
        let base = site.base()?;
        let eden =
            std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
        let (handle, origin) = match super::pool::claim(&self.plan, site, &Kube::new(&self.plan), &base, &eden)? {
            Claimed::Member(member) => (super::start_claimed(&self.plan, site, base, member)?, Origin::Warm),
            Claimed::Cold(why) => {
                (super::start(&self.plan, site, base)?, why.map_or(Origin::Cold, Origin::ColdBecause))
            }
        };
        let record = handle.container().unwrap_or_default();
        let node = record.node.unwrap_or_default();
        let (name, image) = (&record.name, &self.plan.image);
        let mut notes = Vec::new();
        let message = match origin {
            Origin::Warm => format!(
                "kubernetes pod `{name}` claimed from the warm pool on node `{node}` (`{image}`), with a repository of its own"
            ),
            Origin::ColdBecause(why) => {
                notes.push(format!("starting cold: {why}"));
                format!("kubernetes pod `{name}` started on node `{node}` from `{image}`, with a repository of its own")
            }
            Origin::Cold => {
                format!("kubernetes pod `{name}` started on node `{node}` from `{image}`, with a repository of its own")
            }
        };
        let announce =
            Announce { engine: record.engine, name: record.name, host: record.host, node: Some(node), message };
        Ok(Started { handle, warnings: Vec::new(), notes, announce: Some(announce) })
    }

    fn pool_up(&self, pool: &PoolRequest<'_>) -> Result<PoolUp, Error> {
        super::pool::up(&self.plan, pool)
    }

    fn reach(&self) -> Reach {
        let pod = &self.plan;
        Reach {
            reads: vec![
                "its own copy of the worktree and repository, in the pod".into(),
                "its private state folders (copies of your agent's login and settings)".into(),
                format!("the image `{}`", pod.image),
            ],
            connects: connects(pod),
            privileges: format!(
                "none: every capability dropped, no privilege escalation, the runtime's seccomp profile, as uid {} (never root), no service links{}{}",
                pod.run_as.0,
                if pod.service_account.is_some() { "" } else { ", no service-account token" },
                pod.runtime_class.as_ref().map(|class| format!(", under the RuntimeClass `{class}`")).unwrap_or_default()
            ) + if pod.network == Network::Bridge { "" } else { "; the network rules' init container, which ends before the agent's starts, alone is root, with `NET_ADMIN` and no other capability" },
        }
    }

    fn doctor(&self, _plan: &Plan, _host: Option<&crate::manifest::plan::EngineHost>) -> Vec<Check> {
        vec![match preflight(&self.plan) {
            Ok(()) => Check::ok("kubernetes", "the cluster answers"),
            Err(err) => Check::missing("kubernetes", true, err.message, err.hint.unwrap_or_default()),
        }]
    }

    fn agents_on_this_machine(&self) -> bool {
        false
    }

    fn interactive(&self) -> Result<bool, Error> {
        Ok(false)
    }
}

fn connects(pod: &PodPlan) -> String {
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

/// How the run's pod came.
enum Origin {
    /// Made for the run (no warm pool of pods in this repository).
    Cold,
    /// Made for the run, with the reason no pool member was claimed.
    ColdBecause(String),
    /// Claimed from the warm pool (a pod keeps its name).
    Warm,
}

/// `kubernetes` without a plan: the pods records name, a killed run's pod, a guard's salvage.
pub(crate) struct Pods;

pub(crate) static KIND: Pods = Pods;

impl provider::Kind for Pods {
    /// Pods are found through the records that name them (never by label: a pod's labels and
    /// annotations can be changed from inside it when it has a service account); one whose
    /// run is over is salvaged into this repository and deleted.
    fn leftovers(&self, scope: &Scope<'_>) -> Leftovers {
        let mut found = Leftovers::default();
        let Some(layout) = scope.layout else { return found };
        if which::which("kubectl").is_ok() {
            let pooled = super::pool::leftovers(layout);
            found.found.extend(pooled.found);
            found.warnings.extend(pooled.warnings);
        }
        let pods = scope.recorded.iter().filter(|sandbox| sandbox.engine == ENGINE);
        let pods: Vec<&Recorded> = pods.collect();
        if pods.is_empty() || which::which("kubectl").is_err() {
            return found;
        }
        for recorded in pods {
            let (Some(cluster), Some(pod)) = (&recorded.host, &recorded.name) else { continue };
            let Some(kube) = Kube::from_described(cluster) else { continue };
            match exists(&kube, pod) {
                Ok(false) => continue,
                Ok(true) => {}
                Err(err) => {
                    found.warnings.push(err.message);
                    continue;
                }
            }
            let name = format!("{pod} (kubernetes {cluster})");
            let leftover = if scope.live.contains(&recorded.run_id) {
                Leftover {
                    what: Left::Sandbox,
                    name,
                    verdict: Verdict::Keep,
                    reason: "its run is still going".into(),
                    removal: None,
                }
            } else {
                let (pod, repo, run_id) = (pod.clone(), layout.root.clone(), recorded.run_id.clone());
                let removal = Removal::new(move || salvage_and_delete(&kube, &pod, &repo, &run_id).map(drop));
                Leftover {
                    what: Left::Sandbox,
                    name,
                    verdict: Verdict::Remove,
                    reason: "its run is over (what it holds is saved under `.eden/patches` first)".into(),
                    removal: Some(removal),
                }
            };
            found.found.push(leftover);
        }
        found
    }

    fn pools(&self, layout: &crate::layout::Layout) -> Result<Vec<provider::PoolStatus>, Error> {
        super::pool::status(layout)
    }

    fn pool_down(&self, layout: &crate::layout::Layout) -> Result<Vec<String>, Error> {
        super::pool::down(layout)
    }

    fn pool_refill(&self, args: &[std::ffi::OsString]) -> Option<i32> {
        super::pool::run_refill(args)
    }

    /// A pod the run left (it was killed): what it holds saved under `.eden/patches`, then
    /// deleted, as `eden clean` does.
    fn remove_of_run(&self, repo: &Path, sandbox: &Recorded) -> Result<Vec<String>, Error> {
        if sandbox.engine != ENGINE {
            return Ok(Vec::new());
        }
        let Some(name) = &sandbox.name else { return Ok(Vec::new()) };
        let kube = sandbox.host.as_deref().and_then(Kube::from_described);
        let Some(kube) = kube.filter(|_| which::which("kubectl").is_ok()) else { return Ok(Vec::new()) };
        if !exists(&kube, name)? {
            return Ok(Vec::new());
        }
        salvage_and_delete(&kube, name, repo, &sandbox.run_id)?;
        Ok(vec![format!("pod `{name}`")])
    }

    /// `eden __eden-salvage kubernetes CONTEXT NAMESPACE REPO RUN NAME`.
    fn salvage(&self, args: &[std::ffi::OsString]) -> Option<i32> {
        let (name, target) = args.split_last()?;
        let kube = Kube::from_args(target)?;
        let Some(name) = name.to_str() else { return Some(2) };
        let (Some(repo), Some(run_id)) = (target.get(3), target.get(4).and_then(|id| id.to_str())) else {
            return Some(2);
        };
        Some(salvage_and_delete(&kube, name, Path::new(repo), run_id).map_or(1, |_| 0))
    }
}
