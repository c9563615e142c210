//! `eden run --from RUN[@N]`: a run that starts where another left off. Its branch starts at
//! that run's branch tip (a kept run's branch, or a merged one's last recorded commit), or with
//! `@N` at the commit after its iteration N; and where its first step's agent is the same kind
//! and resumes sessions, it resumes that run's session (from eden's captured copy in a sandbox,
//! as `agent.resume` does: the person's own store is never written).

use crate::agent::AgentPlan;
use crate::error::Error;
use crate::manifest::Plan;
use crate::record::{FromRecord, RunRecord, RunStatus};

/// `RUN` or `RUN@N`, found and turned into where the new run starts; the plan's first step
/// resumes the session when it can (a note says when it cannot).
pub(crate) fn resolve(text: &str, plan: &mut Plan, notes: &mut Vec<String>) -> Result<FromRecord, Error> {
    let (run, iteration) = match text.rsplit_once('@') {
        Some((run, n)) => {
            let n = n.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                Error::usage(format!("`--from {text}`: `{n}` is not an iteration number"))
                    .with_hint("write `--from RUN@N` with N from 1, e.g. `--from last@2`")
            })?;
            (run, Some(n))
        }
        None => (text, None),
    };
    let layout = super::layout(None)?;
    let (runs, _) = crate::sessions::history::load(&layout);
    let record = RunRecord::load(&crate::sessions::history::find(&runs, run)?.record_path)?;
    let git = crate::git::Git::new(&layout.root);
    if record.status.observed(&record.process) == RunStatus::Running {
        return Err(Error::usage(format!("run `{}` is still going: its branch is still moving", record.id))
            .with_hint("wait for it to end, or start from one of its iterations so far with `--from RUN@N`"));
    }
    let commit = match iteration {
        Some(n) => after_iteration(&record, n)?,
        None => super::last_commit(&git, &record)?.unwrap_or_else(|| record.base_commit.clone()),
    };
    if git.resolve(&format!("{commit}^{{commit}}"))?.is_none() {
        return Err(Error::git(format!(
            "the commit `{}` run `{}` ended at is no longer in the repository",
            &commit[..commit.len().min(10)],
            record.id
        ))
        .with_hint("its branch was deleted and the commit pruned: start from another run, or without `--from`"));
    }
    refuse_unproven(&git, &record, &commit)?;
    let session = resume(&record, iteration, plan, &layout, notes);
    Ok(FromRecord { run: record.id, iteration, commit, session })
}

/// A run starts only from a commit on the branch eden made for that run, or one already in the
/// checkout's history (a merged run's): a record's word never brings a branch of the person's
/// into the new run's merge.
fn refuse_unproven(git: &crate::git::Git, record: &RunRecord, commit: &str) -> Result<(), Error> {
    let branch = record.preserved_branch.as_deref().unwrap_or(&record.branch);
    let on = |tip: &str| git.check(["merge-base", "--is-ancestor", commit, tip]).unwrap_or(false);
    let marked = git.made_for(branch, &record.id) && git.branch_commit(branch)?.is_some_and(|tip| on(&tip));
    if marked || on("HEAD") {
        return Ok(());
    }
    Err(Error::usage(format!(
        "run `{}` names `{}` on `{branch}`, which is neither on a branch eden made for that run nor in your checkout's history: nothing was started",
        record.id,
        &commit[..commit.len().min(10)]
    ))
    .with_hint("start from a run eden made here, or switch to the branch you trust and run without `--from`"))
}

/// The commit after iteration `n`: the last commit of iterations 1..=n, else the run's start.
fn after_iteration(record: &RunRecord, n: u32) -> Result<String, Error> {
    if n as usize > record.iterations.len() {
        return Err(Error::usage(format!(
            "run `{}` has {} iteration(s), so there is no iteration {n} to start after",
            record.id,
            record.iterations.len()
        ))
        .with_hint("`eden sessions show RUN` lists its iterations and their commits"));
    }
    let made = record.iterations[..n as usize].iter().flat_map(|iteration| iteration.commits.iter()).next_back();
    Ok(made.cloned().unwrap_or_else(|| record.base_commit.clone()))
}

/// The session to resume (set on the plan's first step), when its agent can: the same kind,
/// one that resumes, and no `agent.resume` of its own.
pub(super) fn resume(
    record: &RunRecord,
    iteration: Option<u32>,
    plan: &mut Plan,
    layout: &crate::layout::Layout,
    notes: &mut Vec<String>,
) -> Option<String> {
    let last = match iteration {
        Some(n) => record.iterations[..n as usize].iter().rev().find(|it| it.session_id.is_some()),
        None => record.iterations.iter().rev().find(|it| it.session_id.is_some()),
    }?;
    let session = last.session_id.clone()?;
    let kind = record.steps.iter().find(|step| step.name == last.step).map(|step| step.agent)?;
    let in_sandbox = plan.sandbox.agent_state().is_some();
    let AgentPlan::Adapter(settings) = &mut plan.steps.first_mut()?.agent else { return None };
    if settings.resume.is_some() {
        return None;
    }
    let why_not = if settings.kind != kind {
        Some(format!("its agent is `{}`, this run's `{}`", kind.as_str(), settings.kind.as_str()))
    } else if !kind.spec().resume {
        Some(format!("`{}` does not resume sessions", kind.as_str()))
    } else if in_sandbox && crate::sessions::capture::captured(&layout.sessions(), &session).is_none() {
        Some("eden captured no copy of it to carry into the sandbox".to_owned())
    } else {
        None
    };
    if let Some(why) = why_not {
        notes.push(format!("run `{}`'s session `{session}` is not resumed ({why}): a new session starts", record.id));
        return None;
    }
    settings.resume = Some(session.clone());
    Some(session)
}
