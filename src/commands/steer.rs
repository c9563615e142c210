//! `eden steer RUN PROMPT`: the prompt is left in the run's steer file (`Layout::steer`, written
//! whole before it is named, so the run never reads half of it), then the run's eden gets
//! `STEER_REQUEST`: it interrupts the agent's invocation, and the next iteration starts with the
//! prompt (`orchestrator::iterate`).

use crate::cli::SteerArgs;
use crate::error::Error;
use crate::record::RunStatus;
use crate::sessions::history;
use crate::ui::print_note;

pub(crate) fn steer(args: SteerArgs) -> Result<i32, Error> {
    let layout = super::layout(args.repo.as_ref())?;
    let id = deliver(&layout, &args.run, &args.prompt)?;
    print_note(&format!("steered run `{id}`: its agent is interrupted; the next iteration starts with your prompt"));
    Ok(0)
}

/// Leave `prompt` for the run `run` names and tell its eden; the run's id.
pub(crate) fn deliver(layout: &crate::layout::Layout, run: &str, prompt: &str) -> Result<String, Error> {
    if prompt.trim().is_empty() {
        return Err(Error::usage("the prompt is empty").with_hint("say what the agent should do instead"));
    }
    let (runs, _) = history::load(layout);
    let run = history::find(&runs, run)?;
    if run.status.observed(&run.process) != RunStatus::Running {
        return Err(Error::usage(format!("run `{}` is not running, so there is nothing to steer", run.id))
            .with_hint("start from where it ended instead: `eden run MANIFEST --from RUN --prompt \"...\"`"));
    }
    let record = crate::record::RunRecord::load(&run.record_path)?;
    if record.kind == crate::record::RunKind::Interactive {
        return Err(Error::usage(format!("run `{}` is an interactive session: you are steering it already", run.id))
            .with_hint("type into the agent's own UI"));
    }
    let pid = proven_eden(layout, run, &record)?;
    let path = layout.steer(&run.id);
    let folder = path.parent().expect("the steer file has a folder");
    let partial = folder.join(format!(".{}.partial", run.id));
    fs_err::create_dir_all(folder)
        .and_then(|()| fs_err::write(&partial, prompt))
        .and_then(|()| fs_err::rename(&partial, &path))
        .map_err(|err| Error::internal("cannot leave the prompt for the run").with_source(err))?;
    let signal = nix::sys::signal::Signal::try_from(crate::process::STEER_REQUEST.number()).expect("a signal");
    if let Err(err) = nix::sys::signal::kill(pid, signal) {
        let _ = std::fs::remove_file(&path);
        return Err(Error::usage(format!(
            "run `{}` could not be reached (eden pid {}): {err}",
            run.id, run.process.pid
        ))
        .with_hint("it may have just ended: `eden sessions show RUN`"));
    }
    Ok(run.id.clone())
}

/// The run's own eden: the process the kernel says holds the run's branch lock, started when the
/// record says, the lock naming the run. A record that names another process (copied in, or
/// edited) is refused: a signal goes to no one else.
pub(crate) fn proven_eden(
    layout: &crate::layout::Layout,
    run: &history::Light,
    record: &crate::record::RunRecord,
) -> Result<nix::unistd::Pid, Error> {
    let lock = layout.locks().join(format!("{}.lock", crate::git::slug(&record.branch)));
    let holder = crate::lock::BranchLock::holder(&lock);
    let proven = run.process.start != 0
        && crate::lock::BranchLock::held_by(&lock) == Some(run.process.pid)
        && holder.is_some_and(|holder| holder.process == run.process && holder.run_id == run.id);
    if !proven {
        return Err(Error::usage(format!(
            "run `{}` names eden pid {}, which is not that run's eden (it does not hold the run's lock)",
            run.id, run.process.pid
        ))
        .with_hint("nothing was sent; `eden sessions list` shows which runs are going"));
    }
    Ok(nix::unistd::Pid::from_raw(run.process.pid as i32))
}

/// SIGINT to the run's own eden, as Ctrl-C in its terminal would.
pub(crate) fn stop(layout: &crate::layout::Layout, run: &str) -> Result<(), Error> {
    let (runs, _) = crate::sessions::history::load(layout);
    let light = crate::sessions::history::find(&runs, run)?;
    let record = crate::record::RunRecord::load(&light.record_path)?;
    let pid = proven_eden(layout, light, &record)?;
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT)
        .map_err(|err| Error::usage(format!("run `{run}` could not be reached: {err}")))
}
