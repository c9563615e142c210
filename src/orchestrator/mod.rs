//! A run, start to finish: preflight (no side effects), workspace, the iteration loop, finish
//! (merge or keep), run record. The outside world is reached only through `Agent`, `Reporter`,
//! the git runner and the process supervisor.

mod copy;
mod finish;
mod iterate;
pub mod record;
pub mod workspace;

use crate::agent;
use crate::error::{Error, ErrorKind};
use crate::hooks::{self, HookRunner, PhaseRun};
use crate::manifest::hooks_plan::Phase;
use crate::manifest::plan::{Plan, SandboxPlan};
use crate::manifest::schema::Network;
use crate::process::{listen_for_signals, Abort};
use crate::sandbox::{self, container::ContainerRequest, isolated::IsolatedRequest, Host, SandboxHandle};
use crate::ui::{Event, Fanout, LogFileReporter, Reporter};
use record::RunRecord;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::watch;

pub struct RunOptions {
    /// The repository to work in, as found where eden was started (or `--repo`), or why none.
    pub repo: Result<crate::git::Discovered, Error>,
    /// Between forwarding a signal (or a timeout's SIGTERM) and SIGKILL.
    pub kill_grace: Duration,
}

/// The record (when the run got far enough to have one) and the error, if it failed.
pub struct RunResult {
    pub record: Option<RunRecord>,
    pub error: Option<Error>,
}

/// How the iteration loop ended when it did not fail.
pub(crate) struct LoopEnd {
    pub completion_signal: Option<String>,
    pub output: Option<serde_json::Value>,
}

pub async fn run(plan: &Plan, options: &RunOptions, reporters: Vec<Box<dyn Reporter>>) -> RunResult {
    let failed = |error: Error| RunResult { record: None, error: Some(error) };
    // From here on Ctrl-C is ours to handle: nothing below may be cut off half-way.
    let mut abort = match listen_for_signals() {
        Ok(receiver) => receiver,
        Err(err) => return failed(Error::usage(format!("cannot install signal handlers: {err}"))),
    };
    let agents = match plan.steps.iter().map(|step| agent::from_plan(&step.agent)).collect::<Result<Vec<_>, _>>() {
        Ok(agents) => agents,
        Err(err) => return failed(err),
    };
    let run_id = record::new_run_id();
    let pre = match workspace::preflight(plan, &options.repo, &run_id) {
        Ok(pre) => pre,
        Err(err) => return failed(err),
    };
    // The engine and image are checked before anything is created.
    if let SandboxPlan::Container(container) = &plan.sandbox {
        if let Err(err) = sandbox::container::preflight(container.engine, &container.image) {
            return failed(err);
        }
    }
    if let Some(interrupted) = interrupted(&abort) {
        return failed(interrupted);
    }

    let mut reporter = Fanout(reporters);
    if let Some(template) = &plan.logging.file {
        let path = pre.root.join(
            template
                .replace("{name}", &plan.name)
                .replace("{branch}", &crate::git::slug(&pre.branch))
                .replace("{run_id}", &run_id),
        );
        match LogFileReporter::create(&path) {
            Ok(log) => reporter.0.push(Box::new(log)),
            Err(err) => {
                return failed(
                    Error::usage(format!("cannot open the log file: {err}"))
                        .with_hint("check `logging.file` in the manifest"),
                )
            }
        }
    }

    let layout = pre.layout();
    let agent_kinds = agents.iter().map(|agent| agent.kind()).collect::<Vec<_>>().join(",");
    let journal = record::Journal::new(RunRecord::starting(&run_id, plan, &pre, agent_kinds, layout.record(&run_id)));
    if let Err(err) = journal.update(|_| {}) {
        reporter.report(&Event::Warning { message: &format!("cannot write the run record: {err}") });
    }
    let mut notes = Vec::new();
    let created = workspace::create(pre, &run_id, &mut notes);
    for note in &notes {
        reporter.report(&Event::Warning { message: note });
    }
    let workspace = match created {
        Ok(workspace) => workspace,
        Err(error) => return end(journal, Some(error), &mut reporter, |_| {}),
    };
    journal.phase("workspace");
    let pre = &workspace.pre;
    reporter.report(&Event::RunStarted {
        run_id: &run_id,
        name: &plan.name,
        agent: agents[0].kind(),
        strategy: pre.strategy.as_str(),
        branch: &pre.branch,
        base: pre.base_branch.as_deref(),
        worktree: &pre.worktree,
        max_iterations: plan.steps[0].loop_.max_iterations,
    });

    let mut progress = iterate::Progress::default();
    let mut step_records = Vec::new();
    let mut sandbox: Box<dyn SandboxHandle> = Box::new(Host);
    let mut sandbox_up = false;
    let hooks = HookRunner {
        plan: &plan.hooks,
        worktree: &pre.worktree,
        context: vec![
            ("EDEN_RUN_ID", run_id.clone()),
            ("EDEN_NAME", plan.name.clone()),
            ("EDEN_BRANCH", pre.branch.clone()),
            ("EDEN_BASE_BRANCH", pre.base_branch.clone().unwrap_or_default()),
            ("EDEN_WORKTREE", pre.worktree.display().to_string()),
            ("EDEN_REPO", pre.root.display().to_string()),
        ],
        dotenv: &plan.env.dotenv,
        sandbox_env: &plan.env.sandbox,
        prompt_timeout: plan.timeouts.hook_step.0,
        kill_grace: options.kill_grace,
    };
    let copied = std::sync::Arc::new(std::sync::Mutex::new(copy::Copied::default()));
    let outcome: Result<LoopEnd, Error> = 'run: {
        if !plan.copy_to_worktree.is_empty() {
            let timeout = plan.timeouts.copy_to_worktree.0;
            match copy::copy_into(&pre.checkout, &pre.worktree, &plan.copy_to_worktree, timeout, &copied).await {
                Ok(count) => {
                    reporter.report(&Event::Info { message: &format!("copied {count} file(s) into the worktree") })
                }
                Err(error) => break 'run Err(error),
            }
        }
        let host_only = PhaseRun { phase: Phase::OnWorktreeReady, iteration: None, sandbox: None, extra_env: &[] };
        if let Err(error) = hooks.run_phase(&host_only, &mut reporter, &mut abort, &mut progress.hooks).await {
            break 'run Err(error);
        }
        if let Some(error) = interrupted(&abort) {
            break 'run Err(error);
        }
        journal.phase("sandbox");
        if let Err(error) = start_sandbox(plan, &run_id, pre, &mut reporter).map(|handle| sandbox = handle) {
            break 'run Err(error);
        }
        sandbox_up = true;
        let container = sandbox.container().map(str::to_owned);
        let _ = journal.update(|record| record.container = container);
        let ready =
            PhaseRun { phase: Phase::OnSandboxReady, iteration: None, sandbox: Some(sandbox.as_ref()), extra_env: &[] };
        if let Err(error) = hooks.run_phase(&ready, &mut reporter, &mut abort, &mut progress.hooks).await {
            break 'run Err(error);
        }
        journal.phase("iterating");
        let shared = iterate::Shared {
            plan,
            options,
            workspace: &workspace,
            sandbox: sandbox.as_ref(),
            hooks: &hooks,
            run_id: &run_id,
            journal: &journal,
        };
        run_steps(&shared, &agents, &mut reporter, &mut abort, &mut progress, &mut step_records).await
    };
    journal.phase("closing");
    // `on_close` runs whatever happened, after Ctrl-C too: only a further signal cuts it short.
    let outcome = if hooks.has(Phase::OnClose) {
        let status = match &outcome {
            Ok(_) => "ok".to_owned(),
            Err(error) => error.kind.as_str().to_owned(),
        };
        let extra_env = [("EDEN_STATUS", status)];
        let close = PhaseRun {
            phase: Phase::OnClose,
            iteration: None,
            sandbox: sandbox_up.then_some(sandbox.as_ref()),
            extra_env: &extra_env,
        };
        let mut later = hooks::later_signals(&abort);
        match (hooks.run_phase(&close, &mut reporter, &mut later, &mut progress.hooks).await, outcome) {
            (Ok(()), outcome) => outcome,
            (Err(error), Ok(_)) => Err(error),
            (Err(error), Err(first)) => {
                reporter.report(&Event::Warning { message: &error.message });
                Err(first)
            }
        }
    } else {
        outcome
    };
    // The sandbox goes first, whatever happened: nothing may be left running, and an isolated
    // copy's uncommitted work must be in the worktree before the finish looks at it.
    let outcome = match (sandbox.close(), outcome) {
        (Ok(note), outcome) => {
            if let Some(note) = note {
                reporter.report(&Event::Info { message: &note });
            }
            outcome
        }
        (Err(err), Ok(_)) => Err(err),
        (Err(err), Err(first)) => {
            reporter.report(&Event::Warning { message: &err.message });
            Err(first)
        }
    };
    // Copies nobody changed go, so they do not keep an otherwise clean worktree alive.
    if workspace.owns_worktree() {
        let copied = copied.lock().unwrap_or_else(|e| e.into_inner());
        let changed = copy::remove_unchanged(&copied);
        if changed > 0 {
            reporter.report(&Event::Warning {
                message: &format!(
                    "{changed} file(s) copied by `copy_to_worktree` were changed during the run and stay"
                ),
            });
        }
    }
    let completion_signal = outcome.as_ref().ok().and_then(|end| end.completion_signal.clone());
    let output = outcome.as_ref().ok().and_then(|end| end.output.clone());
    let iterate::Progress { mut iterations, hooks: mut hook_records, commits, .. } = progress;
    let _ = journal.update(|record| {
        record.phase = "finishing";
        record.iterations.append(&mut iterations);
        record.hooks.append(&mut hook_records);
        record.steps = step_records;
        record.completion_signal = completion_signal;
        record.output = output;
    });
    let finished = finish::finish(workspace, outcome, commits, &mut reporter);

    let finish::Finished { lock, commits, merged_into, merge_commit, preserved_branch, preserved_worktree, mut error } =
        finished;
    // A signal that arrived during the finish still counts.
    if error.is_none() {
        error = interrupted(&abort);
    }
    let result = end(journal, error, &mut reporter, |record| {
        record.commits = commits;
        record.merged_into = merged_into;
        record.merge_commit = merge_commit;
        record.preserved_branch = preserved_branch;
        record.preserved_worktree = preserved_worktree;
    });
    drop(lock);
    result
}

/// The run is over, however far it got: its record gets the end, is written, and is shown.
fn end(
    journal: record::Journal,
    error: Option<Error>,
    reporter: &mut dyn Reporter,
    change: impl FnOnce(&mut RunRecord),
) -> RunResult {
    let (mut record, written) = journal.finish(error.as_ref(), |record| {
        change(record);
        record.phase = "done";
        record.usage = record.iterations.iter().filter_map(|i| i.usage).reduce(|mut total, usage| {
            total.add(&usage);
            total
        });
        record.session_id = record.iterations.iter().rev().find_map(|i| i.session_id.clone());
    });
    if let Err(err) = written {
        reporter.report(&Event::Warning { message: &format!("cannot write the run record: {err}") });
        record.record_path = PathBuf::new();
    }
    reporter.report(&Event::RunFinished { record: &record });
    RunResult { record: Some(record), error }
}

/// The steps in order. A failing step stops the chain unless it has `continue_on_failure`;
/// later steps then run only with `when = "always"`. The first chain-stopping failure is the
/// run's.
async fn run_steps(
    shared: &iterate::Shared<'_>,
    agents: &[Box<dyn agent::Agent>],
    reporter: &mut dyn Reporter,
    abort: &mut watch::Receiver<Option<crate::process::Abort>>,
    progress: &mut iterate::Progress,
    records: &mut Vec<record::StepRecord>,
) -> Result<LoopEnd, Error> {
    use crate::manifest::schema::When;
    let steps = &shared.plan.steps;
    let many = steps.len() > 1;
    let mut failed: Option<Error> = None;
    let mut end = LoopEnd { completion_signal: None, output: None };
    let mut previous: Option<String> = None;
    for (index, (step, agent)) in steps.iter().zip(agents).enumerate() {
        let made_commits = progress.commits.as_ref().is_some_and(|commits| !commits.is_empty());
        let skip = match step.when {
            When::Always => None,
            When::Success => failed.is_some().then_some("an earlier step failed"),
            When::Commits if failed.is_some() => Some("an earlier step failed"),
            When::Commits => (!made_commits).then_some("no earlier step made commits"),
        };
        let mut step_record = record::StepRecord {
            name: step.name.clone(),
            agent: agent.kind().to_owned(),
            status: "skipped",
            exit_code: None,
            error: None,
            reason: skip.map(str::to_owned),
            output: None,
            completion_signal: None,
        };
        if let Some(reason) = skip {
            reporter.report(&Event::StepFinished { step: &step.name, status: "skipped", reason: Some(reason) });
            records.push(step_record);
            continue;
        }
        if let Some(error) = interrupted(abort) {
            return Err(error);
        }
        if many {
            reporter.report(&Event::StepStarted { step: &step.name, index, total: steps.len(), agent: agent.kind() });
        }
        let result =
            iterate::run_step(shared, step, agent.as_ref(), previous.as_deref(), reporter, abort, progress).await;
        match result {
            Ok(step_end) => {
                step_record.status = "ok";
                step_record.exit_code = Some(0);
                step_record.output = step_end.output.clone();
                step_record.completion_signal = step_end.completion_signal.clone();
                previous = step_end.output.as_ref().map(|value| match value {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                });
                end.completion_signal = step_end.completion_signal;
                if step_end.output.is_some() {
                    end.output = step_end.output;
                }
                if many {
                    reporter.report(&Event::StepFinished { step: &step.name, status: "ok", reason: None });
                }
                records.push(step_record);
            }
            Err(error) => {
                step_record.status = "failed";
                step_record.exit_code = Some(error.kind.exit_code());
                step_record.error = Some(error.message.clone());
                if many {
                    reporter.report(&Event::StepFinished { step: &step.name, status: "failed", reason: None });
                }
                records.push(step_record);
                previous = None;
                if matches!(error.kind, ErrorKind::Interrupted(_)) {
                    return Err(error);
                }
                if step.continue_on_failure {
                    let message = format!("step `{}` failed and the chain goes on: {}", step.name, error.message);
                    reporter.report(&Event::Warning { message: &message });
                } else if failed.is_none() {
                    failed = Some(error);
                }
            }
        }
    }
    match failed {
        Some(error) => Err(error),
        None => Ok(end),
    }
}

/// Start the run's sandbox (nothing for `none`), pruning containers earlier runs left behind.
fn start_sandbox(
    plan: &Plan,
    run_id: &str,
    pre: &workspace::Preflight,
    reporter: &mut dyn Reporter,
) -> Result<Box<dyn SandboxHandle>, Error> {
    match &plan.sandbox {
        SandboxPlan::None => Ok(Box::new(Host)),
        SandboxPlan::Isolated { network } => {
            let request = IsolatedRequest {
                run_id,
                repo_root: &pre.root,
                worktree: &pre.worktree,
                network: *network != Network::None,
                patches: &pre.layout().patches(),
                copied: &plan.copy_to_worktree,
            };
            sandbox::isolated::start(&request)
        }
        SandboxPlan::Container(container) => {
            for name in sandbox::prune_abandoned(container.engine, &pre.root) {
                reporter
                    .report(&Event::Warning { message: &format!("removed container `{name}` left by an earlier run") });
            }
            let request = ContainerRequest {
                plan: container,
                run_id,
                repo_root: &pre.root,
                common_dir: &pre.common_dir,
                exec_dir: &pre.layout().exec_dir(run_id),
                worktree: &pre.worktree,
                branch: &pre.branch,
            };
            let handle = sandbox::start_container(&request)?;
            let message = format!(
                "{} container `{}` started from `{}`",
                container.engine.binary(),
                handle.container().unwrap_or_default(),
                container.image
            );
            reporter.report(&Event::Info { message: &message });
            Ok(handle)
        }
    }
}

/// The interruption error if eden has received SIGINT/SIGTERM.
pub(crate) fn interrupted(abort: &watch::Receiver<Option<Abort>>) -> Option<Error> {
    abort.borrow().map(|request| interrupted_error(request.signal))
}

pub(crate) fn interrupted_error(signal: i32) -> Error {
    let name = if signal == nix::sys::signal::Signal::SIGINT as i32 { "SIGINT" } else { "SIGTERM" };
    Error::new(ErrorKind::Interrupted(signal), format!("interrupted by {name}"))
}
