//! `eden run`: flags and manifest into a `Plan`, then the orchestrator; the record on stdout
//! with `--json`.

use super::settings::{load, RunSettings};
use crate::cli::RunArgs;
use crate::error::Error;
use crate::manifest::plan;
use crate::orchestrator::{self, workspace, RunOptions};
use crate::process::Stopping;
use crate::ui::batch::Row;
use crate::ui::github::Summarized;
use crate::ui::{print_data, Display, JsonLinesReporter, LogFileReporter, Reporter};
use std::path::PathBuf;

pub(crate) fn run(args: RunArgs) -> Result<i32, Error> {
    execute(args, None)
}

/// `eden interactive`'s own settings on top of `eden run`'s.
pub(crate) struct InteractiveMode {
    /// A plain attached session without a terminal (`--no-tty`).
    pub(crate) no_tty: bool,
    /// A session to continue.
    pub(crate) resume: Option<String>,
}

/// A run, or with `interactive` a session in the agent's own UI.
pub(crate) fn execute(args: RunArgs, interactive: Option<InteractiveMode>) -> Result<i32, Error> {
    let args = with_default_manifest(args)?;
    let json = args.json || args.json_events;
    let args_json = args.json && !args.json_events;
    let mut printed = false;
    // An attempt of several (`--attempts`) is one run: the coordinator made it.
    let an_attempt = std::env::var_os(crate::coordinator::ATTEMPT_ENV).is_some();
    let several = args.manifests.len() > 1
        || !args.matrix.is_empty()
        || (args.attempts.is_some_and(|attempts| attempts > 1) && !an_attempt);
    let manifests: Vec<String> = args.manifests.iter().map(|path| path.display().to_string()).collect();
    let settings = RunSettings::from_args(&args);
    let result = match interactive {
        _ if args.json && args.json_events => {
            Err(Error::usage("`--json` and `--json-events` cannot be used together").with_hint(if several {
                "`--json` prints an array of run records at the end; `--json-events` prints every event of every run"
            } else {
                "`--json` prints the run record at the end; `--json-events` prints every event, and the last one carries the record"
            }))
        }
        Some(_)
            if several
                || args.jobs.is_some()
                || args.jobs_per_host.is_some()
                || args.fail_fast
                || args.attempts.is_some() =>
        {
            Err(Error::usage(
            "`eden interactive` runs one session: one manifest, no `--matrix`, `--attempts`, `--jobs`, `--jobs-per-host` or `--fail-fast`",
        )
        .with_hint("run several at once with `eden run A.toml B.toml`"))
        }
        _ if several && args.from.is_some() => Err(from_with_several()),
        None if several => super::batch::run(&args, &settings, &mut printed),
        _ => run_inner(args, &settings, interactive, &mut printed),
    };
    // Scripts that read stdout get JSON whatever happened: an error before the run began is
    // printed as one (once it began, its record, with the error in it, is what is printed).
    // Several runs keep their one shape, an array: an entry per manifest, none started.
    if let (Err(error), true, false) = (&result, json, printed) {
        let entry = |name: Option<String>| {
            serde_json::json!({
                "name": name,
                "status": "not_started",
                "exit_code": error.kind.exit_code(),
                "error": error_json(error),
            })
        };
        let value = match (several, args_json) {
            (true, true) if manifests.is_empty() => serde_json::json!([entry(None)]),
            (true, true) => serde_json::Value::Array(manifests.iter().map(|path| entry(Some(path.clone()))).collect()),
            _ => serde_json::to_value(crate::report::Failed { error: crate::report::ErrorReport::of(error) })
                .expect("errors serialize"),
        };
        print_data(&value.to_string());
    }
    result
}

fn from_with_several() -> Error {
    Error::usage(
        "`--from` starts one run from another; it does not go with several runs (manifests, `--matrix`, attempts)",
    )
    .with_hint("start one run with `--from RUN`; to try several times from there, run it again with `--from` each time")
}

/// The manifest `eden init` writes, used when none is named (as cargo uses `Cargo.toml`).
pub(crate) const DEFAULT_MANIFEST: &str = "eden.toml";

/// No manifest named: `./eden.toml` when there is one (flags then override its keys), else the
/// run is described by flags alone.
fn with_default_manifest(mut args: RunArgs) -> Result<RunArgs, Error> {
    let default = crate::commands::current_dir()?.join(DEFAULT_MANIFEST);
    if args.manifests.is_empty() && default.is_file() {
        crate::ui::print_note(&format!("note: running `./{DEFAULT_MANIFEST}` (no manifest was named)"));
        args.manifests.push(PathBuf::from(DEFAULT_MANIFEST));
    }
    Ok(args)
}

/// An error as data: kind, message, hint, exit code.
fn error_json(error: &Error) -> serde_json::Value {
    serde_json::to_value(crate::report::ErrorReport::of(error)).expect("errors serialize")
}

/// The run; `printed` says whether it put its record (or events) on stdout.
fn run_inner(
    args: RunArgs,
    settings: &RunSettings,
    interactive: Option<InteractiveMode>,
    printed: &mut bool,
) -> Result<i32, Error> {
    let current_dir = crate::commands::current_dir()?;
    if interactive.is_some() && args.json_events {
        return Err(Error::usage("`--json-events` does not go with `eden interactive`: the agent has stdout")
            .with_hint("use `--json` for the record at the end, or the run's log (`.eden/logs/`)"));
    }
    let purpose =
        if interactive.is_some() { super::settings::Purpose::Interactive } else { super::settings::Purpose::Run };
    let loaded = load(settings, args.manifests.first().map(PathBuf::as_path), &[], purpose, &current_dir)?;
    for note in &loaded.notes {
        crate::ui::print_note(&format!("warning: {note}"));
    }
    let (mut plan, repo, given) = (loaded.plan, loaded.repo, loaded.given);
    let from = from(&args, &mut plan)?;
    // The manifest's `attempts`: several runs of it at once.
    if plan.attempts.count > 1 && interactive.is_none() && std::env::var_os(crate::coordinator::ATTEMPT_ENV).is_none() {
        return super::batch::run(&args, settings, printed);
    }
    let attached = match &interactive {
        Some(mode) => Some(check_interactive(&plan, mode, &args)?),
        None => None,
    };
    crate::redact::register(plan.secrets.iter().map(|secret| secret.0.clone()));

    let containment = crate::process::contain::install()?;
    if args.dry_run {
        return dry_run(&plan, &repo, interactive.is_some(), from.as_ref(), containment);
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::internal("cannot start the async runtime").with_source(err))?;
    let options = options(&plan, repo, given, attached, from);
    let reporters = reporters(&args, options.interactive.is_some());
    let result = runtime.block_on(orchestrator::run(&plan, &options, reporters));
    // The run is over; nothing left on the runtime may hold eden's exit.
    runtime.shutdown_background();
    if let Some(record) = &result.record {
        *printed = true;
        said(&args, &plan, record, result.error.as_ref(), options.interactive.is_none());
    }
    match result.error {
        Some(error) => Err(error),
        None => Ok(0),
    }
}

/// `--from RUN[@N]`, resolved against the plan (its notes said), or `None`.
fn from(args: &RunArgs, plan: &mut plan::Plan) -> Result<Option<crate::record::FromRecord>, Error> {
    Ok(match &args.from {
        Some(_) if plan.attempts.count > 1 && std::env::var_os(crate::coordinator::ATTEMPT_ENV).is_none() => {
            return Err(from_with_several());
        }
        Some(text) => {
            let mut notes = Vec::new();
            let from = super::from::resolve(text, plan, &mut notes)?;
            for note in &notes {
                crate::ui::print_note(&format!("note: {note}"));
            }
            Some(from)
        }
        None => None,
    })
}

/// `--dry-run`: the plan, what the agent reaches, the workspace it would get and its commands,
/// as JSON on stdout; nothing is made.
fn dry_run(
    plan: &plan::Plan,
    repo: &Result<crate::git::Discovered, Error>,
    interactive: bool,
    from: Option<&crate::record::FromRecord>,
    containment: crate::process::contain::Containment,
) -> Result<i32, Error> {
    let usage = if interactive { workspace::Use::Session } else { workspace::Use::Run };
    let mut preview = workspace::preflight(plan, repo, "RUN_ID", usage)?;
    workspace::start_from(&mut preview, from)?;
    let json = serde_json::json!({
        "plan": plan,
        "reach": crate::sandbox::reach::of(&plan.sandbox),
        "host_hooks": crate::orchestrator::host_reads::of(plan, &crate::orchestrator::host_reads::in_checkout(&preview.root)),
        "containment": containment,
        "workspace": {
            "repo": preview.root,
            "strategy": preview.strategy,
            "branch": preview.branch,
            "base_branch": preview.base_branch,
            "base_commit": preview.base_commit,
            "start_commit": preview.start_commit,
            "from": from,
            "worktree": preview.worktree,
        },
        "agent_commands": agent_commands(plan, &preview.worktree)?,
        "telemetry": crate::telemetry::Settings::from_env(&|name| std::env::var(name).ok()).map(|settings| {
            serde_json::json!({
                "traces": settings.endpoint,
                "protocol": if settings.json { "http/json" } else { "http/protobuf" },
                "service_name": settings.service_name,
            })
        }),
    });
    print_data(&serde_json::to_string_pretty(&json).expect("plans serialize"));
    Ok(0)
}

/// The run's options: how it stops, and what its coordinator (several runs, attempts) says in
/// eden's environment.
fn options(
    plan: &plan::Plan,
    repo: Result<crate::git::Discovered, Error>,
    given: Vec<String>,
    attached: Option<orchestrator::Interactive>,
    from: Option<crate::record::FromRecord>,
) -> RunOptions {
    let stopping = Stopping { kill_grace: plan.timeouts.kill_grace.0, drain: plan.timeouts.output_drain.0 };
    let batch = std::env::var(crate::coordinator::BATCH_ENV)
        .ok()
        .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    let attempt = std::env::var(crate::coordinator::ATTEMPT_ENV)
        .ok()
        .and_then(|text| crate::record::AttemptRecord::parse(&text))
        .filter(|_| batch.is_some());
    RunOptions {
        repo,
        stopping,
        overrides: given,
        open_log: LogFileReporter::open,
        interactive: attached,
        batch,
        attempt,
        from,
    }
}

/// Who hears of the run: the display, `--json-events`, and OpenTelemetry.
fn reporters(args: &RunArgs, interactive: bool) -> Vec<Box<dyn Reporter>> {
    let display = match Display::detect(args.quiet) {
        // The agent draws on the terminal: eden's own lines only before and after, no spinner.
        Display::Live if interactive => Display::Plain,
        display => display,
    };
    let mut reporters: Vec<Box<dyn Reporter>> = display.reporter().into_iter().collect();
    if args.json_events {
        reporters.push(Box::new(JsonLinesReporter::stdout()));
    }
    if let Some(telemetry) = crate::telemetry::Settings::from_env(&|name| std::env::var(name).ok()) {
        reporters.push(Box::new(crate::telemetry::TraceReporter::new(telemetry)));
    }
    reporters
}

/// The record said: `--json` on stdout and, in a GitHub Actions step, the job's summary and
/// the step's outputs (not for an interactive session).
fn said(args: &RunArgs, plan: &plan::Plan, record: &crate::record::RunRecord, error: Option<&Error>, summarize: bool) {
    if args.json {
        print_data(&serde_json::to_string_pretty(record).expect("records serialize"));
    }
    // In a GitHub Actions step: the job's summary and the step's outputs.
    if summarize {
        let code = error.map_or(0, |error| error.kind.exit_code());
        let row = Row::from_record(&plan.name, plan.steps[0].agent.kind().as_str(), record, Some(code));
        crate::ui::github::write(&[Summarized { row, record: Some(record) }], code);
    }
}

/// What an interactive session cannot do, refused; what it does not use, said once.
fn check_interactive(
    plan: &plan::Plan,
    mode: &InteractiveMode,
    args: &RunArgs,
) -> Result<orchestrator::Interactive, Error> {
    use crate::manifest::hooks_plan::{Phase, Side};
    use crate::manifest::plan::SandboxPlan;
    if matches!(plan.sandbox, SandboxPlan::Isolated(_)) {
        return Err(Error::usage("`eden interactive` cannot attach a terminal to an `isolated` sandbox")
            .with_hint("use `--sandbox docker` or `--sandbox podman` (with `sandbox.image`), or `--sandbox none`"));
    }
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
    Ok(orchestrator::Interactive { tty: tty && !mode.no_tty, resume: mode.resume.clone() })
}

/// What each step's agent will be started as, for `--dry-run`: program, arguments (the prompt
/// shown as `<prompt>`: it is rendered per iteration) and the environment eden sets, every
/// secret value shown as `***` and nothing else hidden.
fn agent_commands(plan: &crate::manifest::plan::Plan, worktree: &std::path::Path) -> Result<serde_json::Value, Error> {
    let mut commands = Vec::new();
    for step in &plan.steps {
        let agent = crate::agent::from_plan(&step.agent)?;
        let invocation = crate::agent::Invocation { prompt: "<prompt>", worktree, resume: None };
        let mut command = agent.command(&invocation)?;
        let on_stdin = matches!(command.take_stdin(), crate::process::Stdin::Bytes(_));
        let mut env: serde_json::Map<String, serde_json::Value> = command
            .get_env()
            .iter()
            .filter_map(|(key, value)| {
                let value = value.as_ref()?.to_string_lossy();
                Some((key.to_string_lossy().into_owned(), crate::redact::apply(&value).into_owned().into()))
            })
            .collect();
        // A held key: the agent is pointed at eden's relay, with a placeholder, as the run does.
        if let crate::manifest::held_plan::Held::Keys { upstream, base_url_var, keys, .. } = &step.held {
            if let Some(var) = base_url_var {
                let relay = format!("http://127.0.0.1:<relay port> (eden's relay, to {upstream})");
                env.insert((*var).to_owned(), relay.into());
            }
            for key in keys {
                env.insert(key.var.clone(), "eden-held-<placeholder>".into());
            }
        }
        commands.push(serde_json::json!({
            "step": step.name,
            "program": command.program().to_string_lossy(),
            "args": command.get_args().iter().map(|arg| crate::redact::apply(&arg.to_string_lossy()).into_owned()).collect::<Vec<_>>(),
            "prompt_on_stdin": on_stdin,
            "env": env,
        }));
    }
    Ok(serde_json::Value::Array(commands))
}
