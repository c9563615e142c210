//! An `eden run` (or `eden interactive`) resolved once, before anything runs: one run, or
//! several (manifests, `--matrix`, attempts: the manifest's `attempts` known only once it is
//! loaded), with what the coordinator told this process read from the environment in one
//! place. Everything after asks the `Invocation`.

use super::settings::{load, Purpose, RunSettings};
use crate::cli::RunArgs;
use crate::error::Error;
use crate::manifest::plan::Plan;
use crate::record::{AttemptRecord, FromRecord};

/// What the coordinator of several runs told this one, through its environment: the
/// invocation it belongs to (`EDEN_BATCH`), and which attempt it is (`EDEN_ATTEMPT`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Markers {
    pub(crate) batch: Option<String>,
    /// Which attempt, for the record: counted only within an invocation.
    pub(crate) attempt: Option<AttemptRecord>,
    /// Started as one attempt of several (by a coordinator, or a several-runs `--dry-run`):
    /// one run, whatever its manifest's `attempts` says. Never several again.
    marked_attempt: bool,
}

impl Markers {
    /// Read once, from eden's environment. An attempt counts only within an invocation.
    pub(crate) fn read() -> Markers {
        let batch = std::env::var(crate::coordinator::BATCH_ENV)
            .ok()
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
        let marked = std::env::var(crate::coordinator::ATTEMPT_ENV).ok();
        let attempt = marked.as_deref().and_then(AttemptRecord::parse).filter(|_| batch.is_some());
        Markers { batch, attempt, marked_attempt: marked.is_some() }
    }

    /// This process is one attempt of several: it is one run, whatever its manifest says.
    pub(crate) fn an_attempt(&self) -> bool {
        self.marked_attempt
    }
}

/// One run (its manifest loaded, checked and made a plan), or several.
pub(crate) enum Invocation {
    Single(Box<Single>),
    Several,
}

/// One run, ready: what the rest of `eden run` needs.
pub(crate) struct Single {
    pub(crate) plan: Plan,
    pub(crate) repo: Result<crate::git::Discovered, Error>,
    /// The overrides given (`--set` and the flags), for the record.
    pub(crate) given: Vec<String>,
    pub(crate) from: Option<FromRecord>,
    /// `eden interactive`: the session's own settings, checked against the plan.
    pub(crate) interactive: Option<(InteractiveMode, crate::orchestrator::Interactive)>,
}

/// Is this several runs by its arguments alone (before any manifest is read)?
fn several_by_args(args: &RunArgs, markers: &Markers) -> bool {
    args.manifests.len() > 1
        || !args.matrix.is_empty()
        || (args.attempts.is_some_and(|attempts| attempts > 1) && !markers.an_attempt())
}

/// Decide what `args` ask for; refuse what cannot go together. Whether the arguments name
/// several runs is said whatever the outcome: an error before any began is reported in their
/// shape.
pub(crate) fn resolve(
    args: &RunArgs,
    settings: &RunSettings,
    interactive: Option<InteractiveMode>,
    markers: &Markers,
) -> (bool, Result<Invocation, Error>) {
    let several = several_by_args(args, markers);
    (several, resolve_as(args, settings, interactive, markers, several))
}

fn resolve_as(
    args: &RunArgs,
    settings: &RunSettings,
    interactive: Option<InteractiveMode>,
    markers: &Markers,
    several: bool,
) -> Result<Invocation, Error> {
    refuse_combinations(args, interactive.as_ref(), several)?;
    if several {
        return Ok(Invocation::Several);
    }
    let current_dir = crate::commands::current_dir()?;
    if interactive.is_some() && args.json_events {
        return Err(Error::usage("`--json-events` does not go with `eden interactive`: the agent has stdout")
            .with_hint("use `--json` for the record at the end, or the run's log (`.eden/logs/`)"));
    }
    let purpose = if interactive.is_some() { Purpose::Interactive } else { Purpose::Run };
    let loaded = load(settings, args.manifests.first().map(std::path::PathBuf::as_path), &[], purpose, &current_dir)?;
    for note in &loaded.notes {
        crate::ui::print_note(&format!("warning: {note}"));
    }
    let (mut plan, repo, given) = (loaded.plan, loaded.repo, loaded.given);
    // The manifest's `attempts`: several runs of it at once (unless this is one of them).
    let attempts = plan.attempts.count > 1 && !markers.an_attempt();
    if attempts && args.from.is_some() {
        return Err(from_with_several());
    }
    if attempts && interactive.is_none() {
        return Ok(Invocation::Several);
    }
    let from = match &args.from {
        Some(text) => {
            let mut notes = Vec::new();
            let from = super::from::resolve(text, &mut plan, &mut notes)?;
            for note in &notes {
                crate::ui::print_note(&format!("note: {note}"));
            }
            Some(from)
        }
        None => None,
    };
    let interactive = match interactive {
        Some(mode) => {
            let attached = check_interactive(&plan, &mode, args)?;
            Some((mode, attached))
        }
        None => None,
    };
    Ok(Invocation::Single(Box::new(Single { plan, repo, given, from, interactive })))
}

/// What no invocation may combine, refused before anything is read.
fn refuse_combinations(args: &RunArgs, interactive: Option<&InteractiveMode>, several: bool) -> Result<(), Error> {
    if args.json && args.json_events {
        return Err(Error::usage("`--json` and `--json-events` cannot be used together").with_hint(if several {
            "`--json` prints an array of run records at the end; `--json-events` prints every event of every run"
        } else {
            "`--json` prints the run record at the end; `--json-events` prints every event, and the last one carries the record"
        }));
    }
    let batch_flags =
        several || args.jobs.is_some() || args.jobs_per_host.is_some() || args.fail_fast || args.attempts.is_some();
    if interactive.is_some() && batch_flags {
        return Err(Error::usage(
            "`eden interactive` runs one session: one manifest, no `--matrix`, `--attempts`, `--jobs`, `--jobs-per-host` or `--fail-fast`",
        )
        .with_hint("run several at once with `eden run A.toml B.toml`"));
    }
    if several && args.from.is_some() {
        return Err(from_with_several());
    }
    Ok(())
}

fn from_with_several() -> Error {
    Error::usage(
        "`--from` starts one run from another; it does not go with several runs (manifests, `--matrix`, attempts)",
    )
    .with_hint("start one run with `--from RUN`; to try several times from there, run it again with `--from` each time")
}

/// `eden interactive`'s own settings on top of `eden run`'s.
pub(crate) struct InteractiveMode {
    /// A plain attached session without a terminal (`--no-tty`).
    pub(crate) no_tty: bool,
    /// A session to continue.
    pub(crate) resume: Option<String>,
}

/// What an interactive session cannot do, refused; what it does not use, said once.
fn check_interactive(
    plan: &Plan,
    mode: &InteractiveMode,
    args: &RunArgs,
) -> Result<crate::orchestrator::Interactive, Error> {
    use crate::manifest::hooks_plan::{Phase, Side};
    crate::sandbox::provider(&plan.sandbox).interactive()?;
    if plan.steps.len() > 1 {
        return Err(Error::usage(format!(
            "the manifest has {} steps; an interactive session runs one agent",
            plan.steps.len()
        ))
        .with_hint("give the agent with flags (`--agent`, `--model`) and a manifest without `[[step]]`"));
    }
    let tty = crate::process::attached::stdin_is_terminal();
    if !tty && !mode.no_tty {
        return Err(Error::usage("`eden interactive` needs a terminal on stdin").with_hint(
            "run it from a terminal, or pass `--no-tty` for a plain attached session (a script piping into the agent)",
        ));
    }
    let iteration_hooks = [Phase::OnIterationStart, Phase::OnIterationEnd]
        .iter()
        .any(|phase| [Side::Host, Side::Sandbox].iter().any(|side| !plan.hooks.get(*side, *phase).is_empty()));
    let mut unused = Vec::new();
    if args.max_iterations.is_some() {
        unused.push("`--max-iterations`");
    }
    if plan.steps[0].output.is_some() {
        unused.push("`[output]`");
    }
    if iteration_hooks {
        unused.push("the `on_iteration_start`/`on_iteration_end` hooks");
    }
    if !plan.steps[0].checks.is_empty() {
        unused.push("the `[[check]]`s (you decide what merges)");
    }
    if !unused.is_empty() {
        crate::ui::print_note(&format!(
            "warning: an interactive session has no iteration loop: {} and the `[loop]` settings are not used",
            unused.join(", ")
        ));
    }
    Ok(crate::orchestrator::Interactive { tty: tty && !mode.no_tty, resume: mode.resume.clone() })
}
