//! `docker` and `podman`, on this machine or a remote engine, as a provider.

use super::create::{ContainerRequest, Origin};
use super::exec::is_gvisor;
use super::leftovers::{prune_abandoned, pruned_said};
use super::preflight::{preflight, preflight_on, Engaged};
use crate::error::Error;
use crate::manifest::plan::{ContainerPlan, EngineHost, Plan};
use crate::manifest::schema::Network;
use crate::sandbox::engine::Target;
use crate::sandbox::provider::Reach;
use crate::sandbox::provider::{self, Announce, BuiltImage, Check, PoolRequest, PoolUp, Start, Started};
use crate::sandbox::provider::{Leftovers, Recorded, Scope};
use crate::sandbox::reach::{mounts, RELAY};
use std::path::{Path, PathBuf};

pub(crate) struct Provider {
    plan: ContainerPlan,
    /// The engine, as `preflight` found it.
    engaged: Option<Engaged>,
}

impl Provider {
    pub(crate) fn new(plan: &ContainerPlan) -> Provider {
        Provider { plan: plan.clone(), engaged: None }
    }
}

impl provider::Provider for Provider {
    fn name(&self) -> &'static str {
        self.plan.engine.binary()
    }

    fn preflight(&mut self, holds_keys: bool) -> Result<(), Error> {
        let engaged = preflight(&self.plan)?;
        // Held keys under a gVisor that docker registered without `--host-uds=open`: the
        // sandbox could not connect to the proxy's socket.
        if holds_keys && !engaged.remote() && engaged.gvisor_refuses_host_sockets(&self.plan) {
            return Err(Error::sandbox(
                "the agent's key is held by eden's proxy, whose unix socket gVisor does not let the sandbox connect to as docker registered it",
            )
            .with_hint("add `\"--host-uds=open\"` to the runtime's `runtimeArgs` in `/etc/docker/daemon.json` and reload the daemon, or set `sandbox.hold_keys = false`"));
        }
        self.engaged = Some(engaged);
        Ok(())
    }

    fn preflight_everywhere(&mut self) -> Result<(), Error> {
        if self.plan.hosts.is_empty() {
            return self.preflight(false);
        }
        for host in &self.plan.hosts {
            preflight_on(&self.plan, Some(host))?;
        }
        Ok(())
    }

    fn hosts(&self) -> Vec<String> {
        self.plan.hosts.iter().map(|host| host.as_str().to_owned()).collect()
    }

    /// `sandbox.mounts` must not hand the container this repository (its `.git`, the
    /// checkout, other worktrees): that is what the sandbox keeps from it. Only `expose_host`
    /// accepts one.
    fn refuse_repository_mounts(&self, repository: &[PathBuf]) -> Result<(), Error> {
        if self.plan.expose_host {
            return Ok(());
        }
        let common_dir = repository.get(1);
        for mount in &self.plan.mounts {
            let host = crate::git::dunce_canonical(&mount.host);
            // The repository's folders or a folder holding them, or anything inside `.git`.
            if repository.iter().any(|part| part.starts_with(&host))
                || common_dir.is_some_and(|git| host.starts_with(git))
            {
                return Err(Error::usage(format!(
                    "`sandbox.mounts` gives the container `{}`, which holds this repository: its `.git` is what the sandbox keeps from the agent",
                    mount.host.display()
                ))
                .with_hint("mount something outside the repository; the sandbox gets the worktree's files itself"));
            }
        }
        Ok(())
    }

    /// A container of the run's own (claimed from a warm pool, or made), while the containers
    /// earlier runs left behind are salvaged and removed.
    fn start(&self, start: &Start<'_>) -> Result<Started, Error> {
        let engaged = self.engaged.as_ref().ok_or_else(|| Error::internal("the container's engine was not checked"))?;
        let request = ContainerRequest { plan: &self.plan, engaged, site: start.site, programs: start.programs };
        // Containers earlier runs left are salvaged and removed while the run's own starts:
        // neither touches the other (a pruned container's eden is dead; this one's is alive).
        // A claimed member's start is quicker than the engine's listing: its handle waits for
        // the prune at its end instead.
        let (target, repo) = (engaged.target.clone(), start.site.repo_root.clone());
        let mut pruning = Some(std::thread::spawn(move || prune_abandoned(&target, &repo)));
        let started = super::create::start(&request, &mut pruning);
        let pruned = pruning.map(|pruning| pruning.join().unwrap_or_default()).unwrap_or_default();
        let warnings = pruned_said(pruned);
        let (handle, origin) = started?;
        let name = handle.container().map(|container| container.name).unwrap_or_default();
        let host = engaged.target.host.as_ref().map(|host| host.as_str().to_owned());
        let on = host.as_ref().map(|host| format!(" on {host}")).unwrap_or_default();
        let (engine, image) = (self.plan.engine.binary(), &self.plan.image);
        let mut notes = Vec::new();
        let message = match origin {
            Origin::Warm { member } => {
                format!("{engine} container `{name}` claimed{on} from the warm pool (member `{member}`, `{image}`), with a repository of its own")
            }
            Origin::ColdBecause(why) => {
                notes.push(format!("starting cold: {why}"));
                format!("{engine} container `{name}` started{on} from `{image}`, with a repository of its own")
            }
            Origin::Cold => {
                format!("{engine} container `{name}` started{on} from `{image}`, with a repository of its own")
            }
        };
        let announce = Announce { engine: self.plan.engine.into(), name, host, node: None, message };
        Ok(Started { handle, warnings, notes, announce: Some(announce) })
    }

    fn reach(&self) -> Reach {
        let plan = &self.plan;
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
            if is_gvisor(runtime) {
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

    fn doctor(&self, plan: &Plan, host: Option<&EngineHost>) -> Vec<Check> {
        // `--host` is where the run would go: that engine is asked, not the manifest's.
        let mut container = self.plan.clone();
        if let Some(host) = host {
            container.hosts = vec![host.clone()];
        }
        super::doctor::planned(plan, &container)
    }

    fn agents_on_this_machine(&self) -> bool {
        false
    }

    fn interactive(&self) -> Result<bool, Error> {
        Ok(true)
    }

    fn pool_up(&self, pool: &PoolRequest<'_>) -> Result<PoolUp, Error> {
        let engaged = self.engaged.as_ref().ok_or_else(|| Error::internal("the container's engine was not checked"))?;
        if self.plan.expose_worktree {
            return Err(Error::usage("`sandbox.expose_worktree` cannot be pooled: it mounts each run's own worktree")
                .with_hint("remove it from the manifest, or run without a pool"));
        }
        let eden =
            std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
        let shape = super::create::shape(&self.plan, engaged, &pool.layout.common_dir, &eden, false);
        // A member on this machine holds the repository made ahead at the base's tip; a remote
        // engine's would need the whole history streamed in for each.
        let seed = pool.base.clone().filter(|_| !engaged.remote());
        super::pool::up(&engaged.target, &self.plan.image, shape.args, &eden, pool, seed)
    }

    fn built_image(&self) -> Option<BuiltImage> {
        Some(BuiltImage { engine: self.plan.engine.binary(), hosts: self.hosts(), image: self.plan.image.clone() })
    }
}

/// docker and podman without a plan.
pub(crate) struct Containers;

pub(crate) static KIND: Containers = Containers;

impl crate::sandbox::provider::Kind for Containers {
    fn machine(&self, host: Option<&EngineHost>, _wanted: bool, named: &[String]) -> Vec<Check> {
        super::doctor::machine(host, named)
    }

    fn leftovers(&self, scope: &Scope<'_>) -> Leftovers {
        super::leftovers::survey(scope)
    }

    fn remove_of_run(&self, repo: &Path, sandbox: &Recorded) -> Result<Vec<String>, Error> {
        super::leftovers::remove_of_run(repo, sandbox)
    }

    fn pools(&self, layout: &crate::layout::Layout) -> Result<Vec<crate::sandbox::provider::PoolStatus>, Error> {
        super::pool::status(layout)
    }

    fn pool_refill(&self, args: &[std::ffi::OsString]) -> Option<i32> {
        super::pool::run_refill(args)
    }

    fn pool_down(&self, layout: &crate::layout::Layout) -> Result<Vec<String>, Error> {
        super::pool::down(layout)
    }

    /// `eden __eden-salvage ENGINE [HOST] NAME`.
    fn salvage(&self, args: &[std::ffi::OsString]) -> Option<i32> {
        let (name, target) = args.split_last()?;
        let target = Target::from_args(target)?;
        let Some(name) = name.to_str() else { return Some(2) };
        Some(super::leftovers::salvage_and_remove(&target, name).map_or(1, |_| 0))
    }
}
