//! `eden run`: flags and manifest into a `Plan`, then the orchestrator; the record on stdout
//! with `--json`.

use crate::cli::RunArgs;
use crate::error::Error;
use crate::manifest::load::{LoadRequest, Override};
use crate::manifest::plan::DotEnv;
use crate::manifest::{self, plan};
use crate::orchestrator::{self, workspace, RunOptions};
use crate::process::Stopping;
use crate::ui::{print_data, Display, JsonLinesReporter, LogFileReporter, Reporter};
use std::path::PathBuf;

pub fn run(args: RunArgs) -> Result<i32, Error> {
    execute(args, None)
}

/// `eden interactive`'s own settings on top of `eden run`'s.
pub struct InteractiveMode {
    /// A plain attached session without a terminal (`--no-tty`).
    pub no_tty: bool,
    /// A session to continue.
    pub resume: Option<String>,
}

/// A run, or with `interactive` a session in the agent's own UI.
pub fn execute(args: RunArgs, interactive: Option<InteractiveMode>) -> Result<i32, Error> {
    let json = args.json || args.json_events;
    let args_json = args.json && !args.json_events;
    let mut printed = false;
    let several = args.manifests.len() > 1 || !args.matrix.is_empty();
    let manifests: Vec<String> = args.manifests.iter().map(|path| path.display().to_string()).collect();
    let result = match interactive {
        _ if args.json && args.json_events => {
            Err(Error::usage("`--json` and `--json-events` cannot be used together").with_hint(if several {
                "`--json` prints an array of run records at the end; `--json-events` prints every event of every run"
            } else {
                "`--json` prints the run record at the end; `--json-events` prints every event, and the last one carries the record"
            }))
        }
        Some(_) if several || args.jobs.is_some() || args.fail_fast => Err(Error::usage(
            "`eden interactive` runs one session: one manifest, no `--matrix`, `--jobs` or `--fail-fast`",
        )
        .with_hint("run several at once with `eden run A.toml B.toml`")),
        None if several => super::batch::run(args, &mut printed),
        _ => run_inner(args, interactive, &mut printed),
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
            _ => serde_json::json!({ "error": error_json(error) }),
        };
        print_data(&value.to_string());
    }
    result
}

/// An error as data: kind, message, hint, exit code.
fn error_json(error: &Error) -> serde_json::Value {
    serde_json::json!({
        "kind": crate::record::ExitReason::of(&error.kind),
        "message": error.message,
        "hint": error.hint,
        "exit_code": error.kind.exit_code(),
        "also": error.also.iter().map(|more| serde_json::json!({ "message": more.message, "hint": more.hint })).collect::<Vec<_>>(),
    })
}

/// The run; `printed` says whether it put its record (or events) on stdout.
fn run_inner(args: RunArgs, interactive: Option<InteractiveMode>, printed: &mut bool) -> Result<i32, Error> {
    let current_dir = crate::commands::current_dir()?;
    if interactive.is_some() && args.json_events {
        return Err(Error::usage("`--json-events` does not go with `eden interactive`: the agent has stdout")
            .with_hint("use `--json` for the record at the end, or the run's log (`.eden/logs/`)"));
    }
    let loaded = load(&args, args.manifests.first().map(PathBuf::as_path), &[], interactive.is_some(), &current_dir)?;
    for note in &loaded.notes {
        crate::ui::print_note(&format!("warning: {note}"));
    }
    let (plan, repo, given) = (loaded.plan, loaded.repo, loaded.given);
    let attached = match &interactive {
        Some(mode) => Some(check_interactive(&plan, mode, &args)?),
        None => None,
    };
    crate::redact::register(plan.secrets.iter().map(|secret| secret.0.clone()));

    let containment = crate::process::contain::install()?;
    if args.dry_run {
        let usage = if interactive.is_some() { workspace::Use::Session } else { workspace::Use::Run };
        let preview = workspace::preflight(&plan, &repo, "RUN_ID", usage)?;
        let json = serde_json::json!({
            "plan": plan,
            "containment": containment,
            "workspace": {
                "repo": preview.root,
                "strategy": preview.strategy,
                "branch": preview.branch,
                "base_branch": preview.base_branch,
                "base_commit": preview.base_commit,
                "worktree": preview.worktree,
            },
            "agent_commands": agent_commands(&plan, &preview.worktree)?,
        });
        print_data(&serde_json::to_string_pretty(&json).expect("plans serialize"));
        return Ok(0);
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::internal("cannot start the async runtime").with_source(err))?;
    let stopping = Stopping { kill_grace: plan.timeouts.kill_grace.0, drain: plan.timeouts.output_drain.0 };
    let batch = std::env::var(super::batch::BATCH_ENV)
        .ok()
        .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    let options =
        RunOptions { repo, stopping, overrides: given, open_log: LogFileReporter::open, interactive: attached, batch };
    let display = match Display::detect(args.quiet) {
        // The agent draws on the terminal: eden's own lines only before and after, no spinner.
        Display::Live if options.interactive.is_some() => Display::Plain,
        display => display,
    };
    let mut reporters: Vec<Box<dyn Reporter>> = display.reporter().into_iter().collect();
    if args.json_events {
        reporters.push(Box::new(JsonLinesReporter::stdout()));
    }
    let result = runtime.block_on(orchestrator::run(&plan, &options, reporters));
    // The run is over; nothing left on the runtime may hold eden's exit.
    runtime.shutdown_background();
    if let Some(record) = &result.record {
        *printed = true;
        if args.json {
            print_data(&serde_json::to_string_pretty(record).expect("records serialize"));
        }
    }
    match result.error {
        Some(error) => Err(error),
        None => Ok(0),
    }
}

/// A manifest (or the flags alone) resolved into a plan, with where it will run.
pub(crate) struct Loaded {
    pub plan: plan::Plan,
    /// The repository found where eden was started (or `--repo`), or why none.
    pub repo: Result<crate::git::Discovered, Error>,
    /// Warnings from loading (keys dropped by a `--strategy`).
    pub notes: Vec<String>,
    /// The flags and `--set`s that stood in for manifest keys, for the record.
    pub given: Vec<String>,
}

/// Load `file` (or the flags alone) with the run's flags and `extra` `KEY=VALUE`s (a `--matrix`
/// combination) on top, and resolve it into a plan. No side effects.
pub(crate) fn load(
    args: &RunArgs,
    file: Option<&std::path::Path>,
    extra: &[String],
    interactive: bool,
    current_dir: &std::path::Path,
) -> Result<Loaded, Error> {
    let mut overrides = overrides(args, current_dir)?;
    // Only the runs of several (`--matrix` values, and the names made from them) have these.
    for set in extra {
        let mut item = Override::parse_set(set)?;
        item.flag = format!("--matrix {set}");
        overrides.push(item);
    }
    let given: Vec<String> = overrides.iter().map(|item| format!("{}={}", item.path, item.value)).collect();
    if file.is_none() && overrides.is_empty() {
        return Err(Error::usage("no manifest given").with_hint(
            "pass a manifest (`eden run plan.toml`) or describe the run with flags: `eden run --agent simulated --prompt \"...\"`",
        ));
    }
    let (mut manifest, mut source) = manifest::load(LoadRequest { file, overrides, current_dir })?;
    if interactive {
        source.prompt_optional = true;
        // The person expects their writes in their checkout: `head`, unless the manifest or a
        // flag says otherwise.
        manifest.branch.strategy.get_or_insert(crate::manifest::schema::Strategy::Head);
    }
    let repo_dir = match &args.repo {
        Some(dir) => current_dir.join(dir),
        None => current_dir.to_path_buf(),
    };
    // `.eden/.env` of the repository, if eden is in one (outside one, preflight says so later).
    let repo = crate::git::Git::discover(&repo_dir);
    let dotenv = match &repo {
        Ok(found) => DotEnv::load(&found.root)?,
        Err(_) => DotEnv::default(),
    };
    let plan = plan::resolve(manifest, &source, &|name| std::env::var(name).ok(), &dotenv)?;
    check_args_are_used(&args.prompt_args, &plan)?;
    Ok(Loaded { plan, repo, notes: source.notes, given })
}

/// What an interactive session cannot do, refused; what it does not use, said once.
fn check_interactive(
    plan: &plan::Plan,
    mode: &InteractiveMode,
    args: &RunArgs,
) -> Result<orchestrator::Interactive, Error> {
    use crate::manifest::hooks_plan::{Phase, Side};
    use crate::manifest::plan::SandboxPlan;
    if matches!(plan.sandbox, SandboxPlan::Isolated { .. }) {
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
    if !unused.is_empty() {
        crate::ui::print_note(&format!(
            "warning: an interactive session has no iteration loop: {} and the `[loop]` settings are not used",
            unused.join(", ")
        ));
    }
    Ok(orchestrator::Interactive { tty: tty && !mode.no_tty, resume: mode.resume.clone() })
}

/// An `--arg` no prompt uses is a typo or a stale script: say which keys the prompts do use.
fn check_args_are_used(pairs: &[String], plan: &plan::Plan) -> Result<(), Error> {
    let used: std::collections::BTreeSet<&str> = plan
        .steps
        .iter()
        .flat_map(|step| crate::manifest::prompt::placeholders(&step.prompt.template))
        .filter(|key| !crate::manifest::prompt::BUILT_INS.contains(key))
        .collect();
    for pair in pairs {
        let key = pair.split_once('=').map_or(pair.as_str(), |(key, _)| key).trim();
        if used.contains(key) {
            continue;
        }
        let known = if used.is_empty() {
            "the prompt uses no `{{KEY}}` placeholders".to_owned()
        } else {
            format!(
                "the prompt uses {}",
                used.iter().map(|key| format!("`{{{{{key}}}}}`")).collect::<Vec<_>>().join(", ")
            )
        };
        let problem = if crate::manifest::prompt::is_key(key) {
            format!("no prompt uses `{{{{{key}}}}}`")
        } else {
            format!("`{key}` is not a placeholder name (letters, digits, `_` and `-`)")
        };
        return Err(Error::usage(format!("`--arg {pair}`: {problem}")).with_hint(known));
    }
    Ok(())
}

/// Keys whose values are paths: given on the command line, a relative one means relative to
/// where eden was started (as with every command-line tool), not to the manifest's folder.
const PATH_KEYS: [&str; 3] = ["binary", "prompt_file", "schema"];

/// Flags first (in a fixed order), then `--set` in the order given: the last word wins.
fn overrides(args: &RunArgs, current_dir: &std::path::Path) -> Result<Vec<Override>, Error> {
    let string = |value: &str| toml::Value::String(value.to_owned());
    let mut list = Vec::new();
    let flags: [(&str, &str, &Option<String>); 9] = [
        ("agent.kind", "--agent", &args.agent),
        ("agent.binary", "--binary", &args.binary),
        ("agent.model", "--model", &args.model),
        ("prompt", "--prompt", &args.prompt),
        ("prompt_file", "--prompt-file", &args.prompt_file),
        ("name", "--name", &args.name),
        ("sandbox.kind", "--sandbox", &args.sandbox),
        ("branch.strategy", "--strategy", &args.strategy),
        ("branch.name", "--branch", &args.branch),
    ];
    for (key, flag, value) in flags {
        if let Some(value) = value {
            list.push(Override::flag(key, flag, string(value)));
        }
    }
    if let Some(base) = &args.base {
        list.push(Override::flag("branch.base", "--base", string(base)));
    }
    if let Some(max) = args.max_iterations {
        list.push(Override::flag("loop.max_iterations", "--max-iterations", toml::Value::Integer(max.into())));
    }
    for pair in &args.prompt_args {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(Error::usage(format!("`--arg {pair}` has no value")).with_hint("write it as `--arg KEY=VALUE`"));
        };
        let mut item = Override::flag("prompt_args", &format!("--arg {pair}"), string(value));
        item.path = item.path.child(key.trim());
        list.push(item);
    }
    for set in &args.set {
        list.push(Override::parse_set(set)?);
    }
    for item in &mut list {
        let is_path = item.path.to_string().rsplit('.').next().is_some_and(|key| PATH_KEYS.contains(&key));
        if let (true, toml::Value::String(value)) = (is_path, &item.value) {
            // A bare name (`--binary claude`) is looked up on PATH, not taken as a file here.
            let names_a_file = value.contains('/') || !item.path.to_string().ends_with("binary");
            if names_a_file && std::path::Path::new(value).is_relative() {
                let path = crate::values::normalize_path(&current_dir.join(value));
                item.value = toml::Value::String(path.display().to_string());
            }
        }
    }
    Ok(list)
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
        let env: serde_json::Map<String, serde_json::Value> = command
            .get_env()
            .iter()
            .filter_map(|(key, value)| {
                let value = value.as_ref()?.to_string_lossy();
                Some((key.to_string_lossy().into_owned(), crate::redact::apply(&value).into_owned().into()))
            })
            .collect();
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
