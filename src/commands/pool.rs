//! `eden pool up|status|down`: warm sandboxes made ahead for a manifest's sandbox settings, which
//! runs of this repository claim instead of starting cold. The sandbox kind makes, lists and
//! removes them (`sandbox::provider`); this file reads the command line and prints.

use crate::cli::{PoolCommand, PoolStatusArgs, PoolUpArgs};
use crate::error::Error;
use crate::ui::{print_data, print_note};

pub(crate) fn pool(command: PoolCommand) -> Result<i32, Error> {
    match command {
        PoolCommand::Up(args) => up(args),
        PoolCommand::Status(args) => status(args),
        PoolCommand::Down(args) => down(args),
    }
}

fn up(args: PoolUpArgs) -> Result<i32, Error> {
    let idle = crate::values::parse_duration(&args.idle)
        .map_err(|why| Error::usage(format!("`--idle`: {why}")).with_hint("give a duration such as `30m` or `2h`"))?;
    let layout = super::layout(args.repo.as_ref())?;
    let current = super::current_dir()?;
    let settings = super::settings::RunSettings::with_sets(args.repo.clone(), args.set.clone());
    let loaded =
        super::settings::load(&settings, args.manifest.as_deref(), &[], super::settings::Purpose::Run, &current)?;
    let mut provider = crate::sandbox::provider(&loaded.plan.sandbox);
    provider.preflight(false)?;
    // Where the manifest's runs start, as a run would find it now: the worktrees and the
    // members' copies of the repository are made there. A run's own checks (a dirty checkout
    // where it would merge) say why not.
    let start = match start_point(&loaded) {
        Ok(start) => start,
        Err(err) => {
            print_note(&format!("no worktrees or repository made ahead: {}", err.message));
            None
        }
    };
    let request = crate::sandbox::provider::PoolRequest {
        layout: &layout,
        size: args.size,
        idle,
        refill: !args.no_refill,
        manifest: args.manifest.as_ref().map(|path| path.display().to_string()),
        base: start.as_ref().map(|(base, _)| base.clone()),
    };
    let mut made = provider.pool_up(&request)?;
    if let Some((base, commit)) = &start {
        let repo = crate::git::Git::new(&layout.root);
        let fresh = crate::orchestrator::premade::up(&layout, &repo, base, commit, args.size, !args.no_refill)?;
        made.worktrees = Some(crate::sandbox::provider::WorktreesAhead {
            base: base.clone(),
            commit: commit.chars().take(10).collect(),
            made: fresh,
            ready: crate::orchestrator::premade::count(&layout),
        });
    }
    if args.json {
        print_data(&serde_json::to_string_pretty(&made).expect("a pool serializes"));
    } else {
        print_note(&format!(
            "warm pool `{}` on {} (`{}`): {} idle, {} started now; each ends after {} unless a run claims it",
            made.pool,
            made.engine,
            made.image,
            made.idle,
            made.made.len(),
            humantime::format_duration(idle)
        ));
        if let Some(worktrees) = &made.worktrees {
            print_note(&format!(
                "{} worktree(s) ready at `{}` ({}), {} made now",
                worktrees.ready, worktrees.base, worktrees.commit, worktrees.made
            ));
        }
    }
    Ok(0)
}

/// The branch and commit the manifest's runs start from, where they make a worktree of their
/// own (`merge-to-head`, or a new `named` branch); `None` where they do not.
fn start_point(loaded: &super::settings::Loaded) -> Result<Option<(String, String)>, Error> {
    use crate::orchestrator::workspace::{preflight, Use, WorktreeAction};
    let pre = preflight(&loaded.plan, &loaded.repo, "RUN_ID", Use::Run)?;
    Ok(match (&pre.action, &pre.base_branch) {
        (WorktreeAction::CreateWithNewBranch, Some(base)) => Some((base.clone(), pre.start_commit.clone())),
        _ => None,
    })
}

fn status(args: PoolStatusArgs) -> Result<i32, Error> {
    let layout = super::layout(args.repo.as_ref())?;
    let mut pools = Vec::new();
    for row in &crate::sandbox::registry::KINDS {
        pools.extend(row.kind.pools(&layout)?);
    }
    if args.json {
        print_data(&serde_json::to_string_pretty(&pools).expect("pools serialize"));
        return Ok(0);
    }
    let worktrees = crate::orchestrator::premade::count(&layout);
    if pools.is_empty() && worktrees == 0 {
        print_note("no warm pool in this repository (`eden pool up MANIFEST --size N` makes one)");
    }
    if worktrees > 0 {
        print_note(&format!("{worktrees} worktree(s) made ahead, in `.eden/pool/worktrees`"));
    }
    for pool in &pools {
        let idle = pool.members.iter().filter(|member| member.state == "idle").count();
        let from = pool.manifest.as_deref().map(|path| format!(", for `{path}`")).unwrap_or_default();
        print_note(&format!(
            "pool `{}` on {} (`{}`{from}): {idle} of {} idle",
            pool.pool, pool.engine, pool.image, pool.size
        ));
        for member in &pool.members {
            let detail = match (&member.run, &member.idle_until) {
                (Some(run), _) => format!("claimed by run {run}"),
                (None, Some(until)) if member.state == "idle" => format!("idle until {until}"),
                _ => member.state.to_owned(),
            };
            print_note(&format!("  {}  {detail}", member.name));
        }
    }
    Ok(0)
}

fn down(args: PoolStatusArgs) -> Result<i32, Error> {
    let layout = super::layout(args.repo.as_ref())?;
    let mut removed = Vec::new();
    for row in &crate::sandbox::registry::KINDS {
        removed.extend(row.kind.pool_down(&layout)?);
    }
    let worktrees = crate::orchestrator::premade::down(&layout)?;
    if worktrees > 0 {
        removed.push(format!("{worktrees} worktree(s) made ahead"));
    }
    if args.json {
        print_data(&serde_json::to_string_pretty(&removed).expect("names serialize"));
    } else if removed.is_empty() {
        print_note("no idle pool member to remove");
    } else {
        for name in &removed {
            print_note(&format!("removed {name}"));
        }
    }
    Ok(0)
}
