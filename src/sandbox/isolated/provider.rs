//! `isolated` as a provider: bubblewrap on this machine, a private copy outside the repository.

use super::{salvage_and_remove, Owner};
use crate::error::Error;
use crate::manifest::plan::{EngineHost, IsolatedPlan};
use crate::manifest::schema::Network;
use crate::process::ProcessBuilder;
use crate::sandbox::provider::Reach;
use crate::sandbox::provider::{
    self, first_line, Check, Left, Leftover, Leftovers, Removal, Scope, Start, Started, Verdict,
};
use crate::sandbox::reach::{mounts, RELAY};
use std::path::{Path, PathBuf};

pub(crate) struct Provider {
    plan: IsolatedPlan,
}

impl Provider {
    pub(crate) fn new(plan: &IsolatedPlan) -> Provider {
        Provider { plan: plan.clone() }
    }
}

impl provider::Provider for Provider {
    fn name(&self) -> &'static str {
        "isolated"
    }

    fn preflight(&mut self, _holds_keys: bool) -> Result<(), Error> {
        Ok(())
    }

    fn start(&self, start: &Start<'_>) -> Result<Started, Error> {
        super::start(start.site, &self.plan, start.programs).map(Started::quietly)
    }

    fn reach(&self) -> Reach {
        let mut reads = vec![
            "its own copy of the worktree and repository (writable)".into(),
            "its private state folders (copies of your agent's login and settings) and a private /tmp and home (writable)".into(),
            "this machine's program and library folders (/usr, /bin, /lib*), /etc without its secrets, the agent's own program, your repository's objects (read-only)".into(),
        ];
        reads.extend(mounts(&self.plan.mounts));
        let connects = match self.plan.network {
            Network::Host => "everything this machine reaches, its own loopback services and unix sockets in the abstract namespace too (`network = \"host\"`)".to_owned(),
            _ => format!("nothing but its own loopback, and {RELAY}"),
        };
        let mut privileges = "none: every capability dropped, no-new-privileges, no user namespace of its own, its own PID, IPC and UTS namespaces".to_owned();
        for exposure in &self.plan.host_exposures {
            privileges.push_str(&format!("; and, with `expose_host`, {exposure}"));
        }
        Reach { reads, connects, privileges }
    }

    fn agent_cwd(&self, run_id: &str, _worktree: &Path) -> PathBuf {
        crate::layout::isolated_copy(run_id).copy
    }

    fn interactive(&self) -> Result<bool, Error> {
        Err(Error::usage("`eden interactive` cannot attach a terminal to an `isolated` sandbox")
            .with_hint("use `--sandbox docker` or `--sandbox podman` (with `sandbox.image`), or `--sandbox none`"))
    }
}

/// `isolated` without a plan: bubblewrap on this machine, the copies runs left.
pub(crate) struct Isolated;

pub(crate) static KIND: Isolated = Isolated;

impl provider::Kind for Isolated {
    fn machine(&self, _host: Option<&EngineHost>, wanted: bool, _named: &[String]) -> Vec<Check> {
        vec![match first_line(ProcessBuilder::new("bwrap").arg("--version")) {
            Some(version) => Check::ok("bubblewrap", version),
            None => Check::missing(
                "bubblewrap",
                wanted,
                "not installed",
                "needed for `sandbox.kind = \"isolated\"` (Debian: `apt-get install bubblewrap`)",
            ),
        }]
    }

    /// `$TMPDIR/eden-isolated-<run-id>` (the copy), `…-tmp` (its private temporary folder) and
    /// `….json` (whose it is, see `Owner`). A copy of a run that is over is asked, inside
    /// bubblewrap, for what it holds, which is saved under its repository's `.eden/patches/`;
    /// then it goes.
    fn leftovers(&self, scope: &Scope<'_>) -> Leftovers {
        let mut found = Leftovers::default();
        for path in crate::safe_fs::dirs_in(&std::env::temp_dir()) {
            let Some(rest) =
                path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix(crate::layout::ISOLATED_PREFIX))
            else {
                continue;
            };
            if let Some(leftover) = copy(scope, &path, rest) {
                found.found.push(leftover);
            }
        }
        found
    }
}

/// What to do with one copy (or its temporary folder), `None` when it is another repository's.
fn copy(scope: &Scope<'_>, path: &Path, rest: &str) -> Option<Leftover> {
    let (run_id, is_tmp) = match rest.strip_suffix("-tmp") {
        Some(run_id) => (run_id, true),
        None => (rest, false),
    };
    let owner = Owner::read(run_id);
    let ours = match (scope.layout, &owner) {
        (Some(layout), Some(owner)) => {
            crate::git::dunce_canonical(&owner.repo) == crate::git::dunce_canonical(&layout.root)
        }
        (Some(layout), None) => layout.record(run_id).exists(),
        (None, _) => false,
    };
    if !ours && !scope.all_repos {
        return None;
    }
    let name = path.display().to_string();
    let leftover = |verdict, reason: &str, removal| Leftover {
        what: Left::Copy,
        name: name.clone(),
        verdict,
        reason: reason.to_owned(),
        removal,
    };
    let running = scope.live.contains(run_id) || owner.as_ref().is_some_and(|owner| owner.process.is_alive());
    if running {
        return Some(leftover(Verdict::Keep, "its run is still going", None));
    }
    let remove_dir = {
        let path = path.to_owned();
        Removal::new(move || crate::safe_fs::remove_tree(&path).map_err(|err| Error::internal(err.to_string())))
    };
    if is_tmp {
        return Some(leftover(Verdict::Remove, "its run is over", Some(remove_dir)));
    }
    Some(match owner {
        Some(owner) => {
            let (run_id, force) = (run_id.to_owned(), scope.force);
            let salvage = Removal::new(move || salvage_and_remove(&run_id, &owner, force).map(drop));
            leftover(
                Verdict::Remove,
                "its run is over (what it holds is saved under `.eden/patches` first)",
                Some(salvage),
            )
        }
        None => leftover(
            Verdict::Unsafe,
            "a copy whose run eden cannot tell: it may hold work that never came back",
            Some(remove_dir),
        ),
    })
}
