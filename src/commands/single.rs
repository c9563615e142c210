//! One run carried out: the plan the invocation resolved, to the orchestrator (or, with
//! `--dry-run`, shown), the reporters it gets, and its record said at the end.

use super::invocation::{Markers, Single};
use super::launch::{options, reporters};
use crate::cli::RunArgs;
use crate::error::Error;
use crate::manifest::plan;
use crate::orchestrator::{self, workspace};
use crate::ui::batch::Row;
use crate::ui::github::Summarized;
use crate::ui::print_data;

/// The run; `printed` says whether it put its record (or events) on stdout.
pub(super) fn run(args: &RunArgs, single: Single, markers: Markers, printed: &mut bool) -> Result<i32, Error> {
    let Single { plan, repo, given, from, interactive } = single;
    crate::redact::register(plan.secrets.iter().map(|secret| secret.0.clone()));
    let containment = crate::process::contain::install()?;
    if args.dry_run {
        return dry_run(&plan, &repo, interactive.is_some(), from.as_ref(), containment);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::internal("cannot start the async runtime").with_source(err))?;
    let attached = interactive.map(|(_, attached)| attached);
    let mut options = options(&plan, repo, given, attached, from, markers);
    options.timings = args.timings;
    let reporters = reporters(args, options.interactive.is_some());
    let mut result = runtime.block_on(orchestrator::run(&plan, &options, reporters));
    // The run is over; nothing left on the runtime may hold eden's exit.
    runtime.shutdown_background();
    if let (Some(record), None) = (&mut result.record, &result.error) {
        result.error = super::pr::after_run(args, &plan, record).err();
    }
    if let Some(record) = &result.record {
        *printed = true;
        said(args, &plan, record, result.error.as_ref(), options.interactive.is_none());
    }
    match result.error {
        Some(error) => Err(error),
        None => Ok(0),
    }
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
        "reach": crate::sandbox::registry::reach(&plan.sandbox),
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
        "pull_request": pull_request_preview(plan, &preview)?,
        "telemetry": crate::ui::otlp::Settings::from_env(&|name| std::env::var(name).ok()).map(|settings| {
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

/// `[pull_request]`, for `--dry-run`: what is pushed where, and what is opened on which forge.
fn pull_request_preview(plan: &plan::Plan, preview: &workspace::Preflight) -> Result<Option<serde_json::Value>, Error> {
    let (Some(settings), Some(destination)) =
        (&plan.pull_request, crate::pull_request::destination(plan, &crate::git::Git::new(&preview.root))?)
    else {
        return Ok(None);
    };
    let base = settings.base.clone().or_else(|| preview.base_branch.clone());
    Ok(Some(serde_json::json!({
        "push": { "remote": settings.remote, "url": destination.remote_url, "branch": preview.branch },
        "open": {
            "forge": destination.target.kind.as_str(),
            "api_url": destination.target.api_url.url(),
            "repository": destination.target.repository.to_string(),
            "head": preview.branch,
            "base": base,
            "draft": settings.draft,
        },
        "follow": settings.follow,
    })))
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
