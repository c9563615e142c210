//! A run, start to finish: preflight (no side effects), workspace, the iteration loop, finish
//! (merge or keep), run record. The outside world is reached only through `Agent`, `Reporter`,
//! the git runner and the process supervisor.

mod copy;
mod finish;
mod iterate;
pub mod lock;
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
use record::{now_rfc3339, ErrorRecord, RunRecord};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::sync::watch;

pub struct RunOptions {
    /// Where eden was started (or `--repo`): the repository to work in.
    pub repo_dir: PathBuf,
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
}

pub async fn run(plan: &Plan, options: &RunOptions, reporters: Vec<Box<dyn Reporter>>) -> RunResult {
    let failed = |error: Error| RunResult { record: None, error: Some(error) };
    // From here on Ctrl-C is ours to handle: nothing below may be cut off half-way.
    let mut abort = match listen_for_signals() {
        Ok(receiver) => receiver,
        Err(err) => return failed(Error::usage(format!("cannot install signal handlers: {err}"))),
    };
    let agent = match agent::from_plan(&plan.agent) {
        Ok(agent) => agent,
        Err(err) => return failed(err),
    };
    let run_id = record::new_run_id();
    let pre = match workspace::preflight(plan, &options.repo_dir, &run_id) {
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

    let started_at = now_rfc3339();
    let clock = Instant::now();
    let mut notes = Vec::new();
    let workspace = match workspace::create(pre, &run_id, &mut notes) {
        Ok(workspace) => workspace,
        Err(err) => return failed(err),
    };
    for note in &notes {
        reporter.report(&Event::Warning { message: note });
    }
    let pre = &workspace.pre;
    reporter.report(&Event::RunStarted {
        run_id: &run_id,
        name: &plan.name,
        agent: agent.kind(),
        strategy: pre.strategy.as_str(),
        branch: &pre.branch,
        base: pre.base_branch.as_deref(),
        worktree: &pre.worktree,
        max_iterations: plan.loop_.max_iterations,
    });

    let mut iterations = Vec::new();
    let mut hook_records = Vec::new();
    let mut commits = None;
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
        dotenv: &env_pairs(&plan.env.dotenv),
        sandbox_env: &env_pairs(&plan.env.sandbox),
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
        if let Err(error) = hooks.run_phase(&host_only, &mut reporter, &mut abort, &mut hook_records).await {
            break 'run Err(error);
        }
        if let Some(error) = interrupted(&abort) {
            break 'run Err(error);
        }
        if let Err(error) = start_sandbox(plan, &run_id, pre, &mut reporter).map(|handle| sandbox = handle) {
            break 'run Err(error);
        }
        sandbox_up = true;
        let ready =
            PhaseRun { phase: Phase::OnSandboxReady, iteration: None, sandbox: Some(sandbox.as_ref()), extra_env: &[] };
        if let Err(error) = hooks.run_phase(&ready, &mut reporter, &mut abort, &mut hook_records).await {
            break 'run Err(error);
        }
        iterate::run_loop(
            plan,
            options,
            &workspace,
            agent.as_ref(),
            sandbox.as_ref(),
            &hooks,
            &run_id,
            &mut reporter,
            &mut abort,
            &mut iterations,
            &mut hook_records,
            &mut commits,
        )
        .await
    };
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
        match (hooks.run_phase(&close, &mut reporter, &mut later, &mut hook_records).await, outcome) {
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
    let container = sandbox.container().map(str::to_owned);
    let sandbox_kind = sandbox.kind();
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
    let finished = finish::finish(workspace, outcome, commits, &mut reporter);

    let mut error = finished.error;
    // A signal that arrived during the finish still counts.
    if error.is_none() {
        error = interrupted(&abort);
    }
    let exit_code = error.as_ref().map_or(0, |e| e.kind.exit_code());
    let exit_reason = match (&error, &completion_signal) {
        (Some(error), _) => error.kind.as_str().to_owned(),
        (None, Some(_)) => "completed".to_owned(),
        (None, None) => "max_iterations".to_owned(),
    };
    let runs_dir = finished.root.join(".eden").join("runs");
    let usage = iterations.iter().filter_map(|i| i.usage).reduce(|mut total, usage| {
        total.add(&usage);
        total
    });
    let session_id = iterations.iter().rev().find_map(|i| i.session_id.clone());
    let agent_failure = iterations.last().and_then(|i| i.agent_error.as_ref()).map(|f| f.kind);
    let mut record = RunRecord {
        id: run_id.clone(),
        name: plan.name.clone(),
        manifest: plan.manifest.clone(),
        repo: finished.root.clone(),
        agent: agent.kind().to_owned(),
        sandbox: sandbox_kind.to_owned(),
        container,
        strategy: finished.strategy.as_str().to_owned(),
        branch: finished.branch,
        base_branch: finished.base_branch,
        base_commit: finished.base_commit,
        worktree: finished.worktree,
        max_iterations: plan.loop_.max_iterations,
        iterations,
        hooks: hook_records,
        completion_signal,
        usage,
        session_id,
        commits: finished.commits,
        merged_into: finished.merged_into,
        merge_commit: finished.merge_commit,
        preserved_branch: finished.preserved_branch,
        preserved_worktree: finished.preserved_worktree,
        started_at,
        finished_at: now_rfc3339(),
        duration_ms: clock.elapsed().as_millis() as u64,
        exit_reason,
        exit_code,
        error: error.as_ref().map(|e| ErrorRecord {
            kind: e.kind.as_str().to_owned(),
            agent_failure: if e.kind == ErrorKind::Agent { agent_failure } else { None },
            message: e.message.clone(),
            hint: e.hint.clone(),
        }),
        record_path: runs_dir.join(format!("{run_id}.json")),
    };
    if let Err(err) = write_record(&record) {
        reporter.report(&Event::Warning { message: &format!("cannot write the run record: {err}") });
        record.record_path = PathBuf::new();
    }
    reporter.report(&Event::RunFinished { record: &record });
    RunResult { record: Some(record), error }
}

fn env_pairs(env: &std::collections::BTreeMap<String, crate::manifest::plan::Secret>) -> Vec<(String, String)> {
    env.iter().map(|(key, value)| (key.clone(), value.0.clone())).collect()
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

fn write_record(record: &RunRecord) -> std::io::Result<()> {
    if let Some(dir) = record.record_path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    let json = serde_json::to_string_pretty(record).map_err(std::io::Error::other)?;
    let temporary = record.record_path.with_extension("json.tmp");
    fs_err::write(&temporary, crate::redact::apply(&json).as_bytes())?;
    fs_err::rename(&temporary, &record.record_path)
}

/// The interruption error if eden has received SIGINT/SIGTERM.
pub(crate) fn interrupted(abort: &watch::Receiver<Option<Abort>>) -> Option<Error> {
    abort.borrow().map(|request| interrupted_error(request.signal))
}

pub(crate) fn interrupted_error(signal: i32) -> Error {
    let name = if signal == nix::sys::signal::Signal::SIGINT as i32 { "SIGINT" } else { "SIGTERM" };
    Error::new(ErrorKind::Interrupted(signal), format!("interrupted by {name}"))
}
