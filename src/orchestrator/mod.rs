//! A run, as a sequence of phases over one `Run` context, each returning what the next needs:
//!
//! prepare (checks, no side effects; the `Preflight`) → workspace (record, lock, worktree; the
//! `Workspace`) → start (sessions carried, copies, host hooks; the sandbox booted and its hooks;
//! the steps, or an interactive session) → teardown (`on_close`, the sandbox's removal, merge
//! or keep, the final record).
//!
//! Teardown always runs once the workspace exists, whatever the phases after it returned. The
//! outside world is reached only through `Agent`, `SandboxHandle`, the `Reporter`s handed in,
//! the git runner and the supervisor.

mod agent_command;
mod artifacts;
mod budget;
mod checks;
mod context;
mod copy;
mod finish;
mod glob;
pub(crate) mod host_reads;
mod invoke;
mod iterate;
mod journal;
mod judge;
pub(crate) mod premade;
mod protect;
pub(crate) mod push;
mod session;
mod steps;
mod stream;
mod tool_calls;
mod transcript;
mod usage_limit;
pub(crate) mod workspace;

use crate::agent::{self, Agent};
use crate::error::{Error, ErrorKind};
use crate::git::Discovered;
use crate::hooks::{self, HookRunner, PhaseRun};
use crate::manifest::hooks_plan::Phase;
use crate::manifest::plan::Plan;
use crate::process::{listen_for_signals, Abort, Stopping};
use crate::record::{RunKind, RunPhase, RunRecord, StepRecord};
use crate::report::{Event, Reporter, RunEvents};
use crate::sandbox::{self, Host, RunSite, SandboxHandle};
use iterate::{interrupted, Progress};
use journal::Journal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
pub(crate) use steps::LoopEnd;
use tokio::sync::watch;
use workspace::{Preflight, Workspace};

pub(crate) struct RunOptions {
    /// The repository to work in, as found where eden was started (or `--repo`), or why none.
    pub(crate) repo: Result<Discovered, Error>,
    /// How supervised commands are stopped (kill grace, output drain).
    pub(crate) stopping: Stopping,
    /// `--set`, `--arg` and the flags that stood in for manifest keys, for the record.
    pub(crate) overrides: Vec<String>,
    /// Opens the JSON-lines log at a path (`[logging] file`): the edge's reporter, handed in.
    pub(crate) open_log: fn(&Path) -> std::io::Result<Box<dyn Reporter>>,
    /// `eden interactive`: the agent gets the terminal instead of the iteration loop.
    pub(crate) interactive: Option<Interactive>,
    /// The invocation of several runs this one belongs to (`eden run A.toml B.toml`), whose
    /// merges it numbers.
    pub(crate) batch: Option<String>,
    /// One of several attempts at the same task (`--attempts`): only the first of them to end
    /// well lands (`finish`).
    pub(crate) attempt: Option<crate::record::AttemptRecord>,
    /// `--from RUN[@N]`: the run's branch starts at that run's commit.
    pub(crate) from: Option<crate::record::FromRecord>,
    /// The run's traces are exported (by a reporter at the edge): its agent gets
    /// `TRACEPARENT`, so its own spans join them.
    pub(crate) traced: bool,
    /// `--timings`: say how long each step to the agent's first byte took.
    pub(crate) timings: bool,
}

/// How an interactive session is attached.
#[derive(Debug, Clone)]
pub(crate) struct Interactive {
    /// eden's stdin is a terminal, handed to the agent (else a plain attached session).
    pub(crate) tty: bool,
    /// A session to continue.
    pub(crate) resume: Option<String>,
}

/// The record (when the run got far enough to have one) and the error, if it failed.
pub(crate) struct RunResult {
    pub(crate) record: Option<RunRecord>,
    pub(crate) error: Option<Error>,
}

/// Run a plan from start to end.
pub(crate) async fn run(plan: &Plan, options: &RunOptions, reporters: Vec<Box<dyn Reporter>>) -> RunResult {
    let (mut run, pre) = match Run::prepare(plan, options, reporters) {
        Ok(prepared) => prepared,
        Err(error) => return RunResult { record: None, error: Some(interrupted_instead(error)) },
    };
    let workspace = match run.open_workspace(pre) {
        Ok(workspace) => workspace,
        Err(error) => return run.refused(interrupted_instead(error)),
    };
    let mut sandbox = None;
    let outcome = run.start(&workspace, &mut sandbox).await.map_err(interrupted_instead);
    run.teardown(workspace, sandbox, outcome).await
}

/// An error that follows a signal (a helper command, an engine call, a lock wait eden stopped
/// because of it) is the interruption: exit 130, 143 or 129, whatever the step said.
fn interrupted_instead(error: Error) -> Error {
    match crate::process::signal_received() {
        Some(signal) if !matches!(error.kind, crate::error::ErrorKind::Interrupted { .. }) => {
            Error::interrupted(signal)
        }
        _ => error,
    }
}

/// One run's context, carried through its phases. What a phase makes (the preflight, the
/// workspace, the sandbox) it returns to the next; only what every phase adds to lives here.
pub(crate) struct Run<'p> {
    plan: &'p Plan,
    options: &'p RunOptions,
    run_id: String,
    agents: Vec<Box<dyn Agent>>,
    /// The `[sandbox]` kind's provider, its preflight done.
    sandbox: Box<dyn sandbox::Provider>,
    events: RunEvents,
    abort: watch::Receiver<Option<Abort>>,
    /// `eden steer`'s requests: each ends the agent's invocation; the next has the new prompt.
    steer: watch::Receiver<u64>,
    journal: Journal,
    log: Option<PathBuf>,
    hooks: HookRunner<'p>,
    copied: Arc<Mutex<copy::Copied>>,
    progress: Progress,
    steps: Vec<StepRecord>,
    /// When the run began (its `[budget] max_duration` counts from here).
    started: std::time::Instant,
    /// Sessions to resume that must first be carried where their agent looks.
    sessions: Vec<SessionToCarry>,
    /// The proxies that hold the agents' keys (`sandbox.hold_keys`), once the sandbox starts.
    holder: Option<crate::proxy::held::Holder>,
    /// `[branch] push`: where the remote's branch was when the run began.
    push_lease: Option<push::Lease>,
    /// `[pull_request]`: the forge's token, answering eden's own git for the push remote.
    credential: Option<crate::forge::credential::ForRemote>,
    /// `[notify]`: the run's events told to commands and webhooks.
    notifier: crate::notify::Notifier,
}

impl<'p> Run<'p> {
    /// Check everything that can be checked without a side effect: agents, repository,
    /// branch, worktree path, engine and image, sessions to resume. Nothing is created.
    pub(crate) fn prepare(
        plan: &'p Plan,
        options: &'p RunOptions,
        reporters: Vec<Box<dyn Reporter>>,
    ) -> Result<(Self, Preflight), Error> {
        // From here on Ctrl-C is ours to handle: nothing below may be cut off half-way.
        let abort =
            listen_for_signals().map_err(|err| Error::internal("cannot install signal handlers").with_source(err))?;
        let steer = crate::process::listen_for_steering()
            .map_err(|err| Error::internal("cannot install signal handlers").with_source(err))?;
        let agents = plan.steps.iter().map(|step| agent::from_plan(&step.agent)).collect::<Result<Vec<_>, _>>()?;
        let run_id = crate::record::new_run_id();
        let usage = if options.interactive.is_some() { workspace::Use::Session } else { workspace::Use::Run };
        let mut pre = workspace::preflight(plan, &options.repo, &run_id, usage)?;
        workspace::start_from(&mut pre, options.from.as_ref())?;
        // The engine and image are checked before anything is created.
        let mut provider = sandbox::provider(&plan.sandbox);
        let holds_keys =
            plan.steps.iter().any(|step| matches!(step.held, crate::manifest::held_plan::Held::Keys { .. }));
        provider.preflight(holds_keys)?;
        let sessions = sessions_to_carry(plan, &pre)?;
        let repo = crate::git::Git::new(&pre.root);
        if let Some(destination) = crate::pull_request::destination(plan, &repo)? {
            let base = plan.pull_request.as_ref().and_then(|pr| pr.base.clone()).or_else(|| pre.base_branch.clone());
            crate::pull_request::preflight(&destination, base.as_deref().unwrap_or("main"))?;
        }
        let credential = crate::pull_request::credential(plan, &repo)?;
        let push_lease = plan.branch.push.as_ref().map(|remote| {
            push::take_lease(&repo, (remote, &pre.branch), credential.as_ref(), plan.pull_request.is_some())
        });
        if let Some(interrupted) = interrupted(&abort) {
            return Err(interrupted);
        }
        let layout = pre.layout();
        let branch_slug = crate::git::slug(&pre.branch);
        let log = plan.logging.file.path(&layout.root, &layout.logs(), &plan.name, &branch_slug, &run_id);
        let kind = if options.interactive.is_some() { RunKind::Interactive } else { RunKind::Run };
        let journal = Journal::start(&run_id, kind, plan, &pre, &options.overrides, log.clone());
        journal.note_attempt(options.attempt.clone());
        let _ = journal.update(|record| record.from = options.from.clone());
        let hooks = HookRunner {
            plan: &plan.hooks,
            worktree: pre.worktree.clone(),
            context: hook_context(&run_id, plan, &pre),
            dotenv: &plan.env.dotenv,
            sandbox_env: &plan.env.sandbox,
            prompt_timeout: plan.timeouts.hook_step.0,
            stopping: options.stopping,
            gate: None,
        };
        let mut events = RunEvents::new(&run_id, reporters);
        let notifier = notifier(plan, &run_id, &pre);
        if let Some(reporter) = notifier.reporter() {
            events.add(reporter);
        }
        let run = Run {
            events,
            plan,
            options,
            run_id,
            agents,
            sandbox: provider,
            abort,
            steer,
            journal,
            log,
            hooks,
            copied: Arc::default(),
            progress: Progress::default(),
            steps: Vec::new(),
            started: std::time::Instant::now(),
            sessions,
            holder: None,
            push_lease,
            credential,
            notifier,
        };
        Ok((run, pre))
    }

    /// The run begins: its log and record, then the branch lock and the worktree.
    pub(crate) fn open_workspace(&mut self, pre: Preflight) -> Result<Workspace, Error> {
        // `.eden/` is ignored before anything is made in it: a run killed a moment later must
        // not leave the checkout showing it as untracked.
        crate::git::Git::exclude_folder(&pre.common_dir, crate::layout::EDEN_DIR)?;
        if let Some(path) = &self.log {
            let log = (self.options.open_log)(path).map_err(|err| {
                Error::usage(format!("cannot open the log file `{}`", path.display()))
                    .with_source(err)
                    .with_hint("check `logging.file` in the manifest")
            })?;
            self.events.add(log);
        }
        if let Err(err) = self.journal.update(|_| {}) {
            self.events.report(&Event::Warning { message: format!("cannot write the run record: {err}").into() });
        }
        let mut notes = Vec::new();
        let clock = std::time::Instant::now();
        let created = workspace::create(pre, &self.run_id, &mut notes);
        self.progress.time("worktree", clock.elapsed(), std::time::Instant::now());
        for note in &notes {
            self.events.report(&Event::Warning { message: note.as_str().into() });
        }
        let workspace = created?;
        self.journal.phase(RunPhase::Workspace);
        let pre = &workspace.pre;
        self.events.report(&Event::RunStarted {
            kind: if self.options.interactive.is_some() { RunKind::Interactive } else { RunKind::Run },
            name: self.plan.name.as_str().into(),
            agent: self.plan.steps[0].agent.kind(),
            strategy: pre.strategy.as_str().into(),
            branch: pre.branch.as_str().into(),
            base: pre.base_branch.as_deref().map(Into::into),
            worktree: pre.worktree.as_path().into(),
            max_iterations: self.plan.steps[0].loop_.max_iterations,
        });
        Ok(workspace)
    }

    /// A run refused before it had a workspace: its record (if it got one) says why.
    pub(crate) fn refused(self, error: Error) -> RunResult {
        if !self.journal.started() {
            // Refused before it began (its log file cannot be opened): nothing was created.
            return RunResult { record: None, error: Some(error) };
        }
        self.end(Some(error), |_| {})
    }

    /// The workspace made ready, the sandbox started and made ready, then the steps (or the
    /// session), stopping at the first that fails. The sandbox, once started, is handed back
    /// through `sandbox` whatever happens after, for the teardown.
    pub(crate) async fn start(
        &mut self,
        workspace: &Workspace,
        sandbox: &mut Option<Box<dyn SandboxHandle>>,
    ) -> Result<LoopEnd, Error> {
        self.workspace_ready(workspace).await?;
        self.journal.phase(RunPhase::Sandbox);
        let clock = std::time::Instant::now();
        let started = self.start_sandbox(&workspace.pre)?;
        let now = std::time::Instant::now();
        for (step, took, ended) in started.timings() {
            self.progress.time(step, took, ended);
        }
        self.progress.time("sandbox", clock.elapsed(), now);
        let sandbox = &**sandbox.insert(started);
        let container = sandbox.container();
        let _ = self.journal.update(|record| record.container = container);
        let ready = PhaseRun { phase: Phase::OnSandboxReady, iteration: None, sandbox: Some(sandbox), extra_env: &[] };
        self.hooks.run_phase(&ready, &mut self.events, &mut self.abort, &mut self.progress.hooks).await?;
        match self.options.interactive.clone() {
            Some(interactive) => self.session(workspace, sandbox, &interactive).await,
            None => self.run_steps(workspace, sandbox).await,
        }
    }

    /// Sessions to resume carried where the agent on the host looks, the copied files, the
    /// host's `on_worktree_ready` hooks.
    async fn workspace_ready(&mut self, workspace: &Workspace) -> Result<(), Error> {
        let pre = &workspace.pre;
        for carry in self.sessions.iter().filter(|carry| carry.to_host) {
            let env = |key: &str| self.plan.steps[carry.step].agent.env_var(key);
            let moved = crate::sessions::transfer::transfer(
                carry.kind,
                &carry.session,
                &carry.main,
                &carry.subagents,
                &pre.worktree,
                &env,
                false,
            )?;
            let message = format!(
                "session `{}` was in `{}`; copied to `{}` (Claude Code resumes sessions of its working directory only)",
                carry.session,
                carry.main.display(),
                moved.path.display()
            );
            self.events.report(&Event::Info { message: message.as_str().into() });
        }
        if !self.plan.copy_to_worktree.is_empty() {
            let timeout = self.plan.timeouts.copy_to_worktree.0;
            let count =
                copy::copy_into(&pre.checkout, &pre.worktree, &self.plan.copy_to_worktree, timeout, &self.copied)
                    .await?;
            self.events.report(&Event::Info { message: format!("copied {count} file(s) into the worktree").into() });
        }
        self.guard_host_hooks(workspace)?;
        let host_only = PhaseRun { phase: Phase::OnWorktreeReady, iteration: None, sandbox: None, extra_env: &[] };
        self.hooks.run_phase(&host_only, &mut self.events, &mut self.abort, &mut self.progress.hooks).await?;
        match interrupted(&self.abort) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Host hooks never run what an agent changed: a sandboxed agent's changes in this run, and
    /// what the commits the run starts from (`--from`), not merged yet, change.
    fn guard_host_hooks(&mut self, workspace: &Workspace) -> Result<(), Error> {
        let pre = &workspace.pre;
        let reads = host_reads::of(self.plan, &|path| protect::read_at(&workspace.repo, &pre.base_commit, path));
        for hook in reads.iter().filter(|hook| !hook.unresolved.is_empty()) {
            let message = format!(
                "the host hook `{}` sources {}, which eden cannot name: list what it reads in `hooks.host.reads`",
                hook.cmd,
                hook.unresolved.join(", ")
            );
            self.events.report(&Event::Warning { message: message.into() });
        }
        let mut unmerged = Vec::new();
        if pre.start_commit != pre.base_commit && !reads.is_empty() {
            let range = format!("{}..{}", pre.base_commit, pre.start_commit);
            let changed = workspace.repo.run(["log", "--no-renames", "--name-only", "--format=", "-z", &range])?;
            unmerged = changed.split('\0').filter(|path| !path.is_empty()).map(str::to_owned).collect();
            unmerged.sort();
            unmerged.dedup();
        }
        // Without a sandbox the agent runs on this machine already: nothing to keep out.
        let sandboxed = self.sandbox.sandboxed();
        let guard = host_reads::HostGuard::take(reads, &pre.worktree, sandboxed, unmerged, &self.run_id);
        self.hooks.gate = guard.map(|guard| Box::new(guard) as Box<dyn crate::hooks::HostGate>);
        Ok(())
    }

    /// The steps, each with its iteration loop.
    async fn run_steps(&mut self, workspace: &Workspace, sandbox: &dyn SandboxHandle) -> Result<LoopEnd, Error> {
        self.journal.phase(RunPhase::Iterating);
        let shared = iterate::Shared {
            plan: self.plan,
            stopping: self.options.stopping,
            workspace,
            sandbox,
            hooks: &self.hooks,
            run_id: &self.run_id,
            journal: &self.journal,
            started: self.started,
            holder: self.holder.as_ref(),
            steer: self.steer.clone(),
            traced: self.options.traced,
            timings: self.options.timings,
        };
        let mut live = iterate::Live { events: &mut self.events, abort: &mut self.abort, progress: &mut self.progress };
        steps::run(&shared, &self.agents, &mut live, &mut self.steps).await
    }

    /// The end, whatever happened before: `on_close` hooks, the sandbox removed (an isolated
    /// copy's work brought back), then merge or keep, the lock released, the record finished.
    pub(crate) async fn teardown(
        mut self,
        workspace: Workspace,
        sandbox: Option<Box<dyn SandboxHandle>>,
        outcome: Result<LoopEnd, Error>,
    ) -> RunResult {
        self.journal.phase(RunPhase::Closing);
        // The end is made whatever happened: only a further signal cuts its steps short.
        crate::process::rearm_signals();
        let outcome = self.score_attempt(sandbox.as_deref(), outcome).await;
        let outcome = self.close_hooks(sandbox.as_deref(), outcome).await;
        self.keep_artifacts(sandbox.as_deref(), &workspace, &outcome);
        if let Some(sandbox) = sandbox.as_deref() {
            let outputs = std::mem::take(&mut self.progress.check_outputs);
            checks::set_aside_outputs(sandbox, &workspace.pre.worktree, &outputs);
        }
        let outcome = self.close_sandbox(&workspace, sandbox, outcome);
        self.remove_unchanged_copies(&workspace);
        let outcome = self.commit_leftovers(&workspace, outcome);
        let known_commits = self.record_progress(&outcome);
        let settings = self.merge_settings(&workspace);
        let repo = crate::git::Git::new(&workspace.pre.root);
        let tip = workspace.repo.branch_commit(&workspace.pre.branch).ok().flatten();
        let finished = finish::finish(workspace, outcome, known_commits, settings, &mut self.events);
        let finish::Finished { lock, commits, merged, mut preserved_branch, preserved_worktree, error, chosen } =
            finished;
        let landed = (tip.filter(|_| !commits.is_empty()), merged.as_ref().map(|merged| merged.into.as_str()));
        let (pushed, error) = self.push(&repo, landed, &mut preserved_branch, error);
        // A signal that arrived during the finish still counts.
        let error = error.or_else(|| interrupted(&self.abort));
        let result = self.end(error, |record| {
            record.push = pushed;
            record.commits = commits;
            if let Some(merged) = merged {
                record.merged_into = Some(merged.into);
                record.merge_kind = Some(merged.kind);
                record.merge_commit = merged.commit;
                record.merge_onto = merged.onto;
                record.merge_queue_position = merged.queue_position;
                record.merged_commits = merged.commits;
                record.merge_wait_ms = Some(merged.waited_ms);
            }
            record.preserved_branch = preserved_branch;
            record.preserved_worktree = preserved_worktree;
            if let Some(attempt) = &mut record.attempt {
                attempt.chosen = chosen;
            }
        });
        // Held until the record says how the run ended.
        drop(lock);
        result
    }

    /// The run's `artifacts`, from the sandbox before it goes (not after Ctrl-C: the person
    /// asked to stop).
    fn keep_artifacts(
        &mut self,
        sandbox: Option<&dyn SandboxHandle>,
        workspace: &Workspace,
        outcome: &Result<LoopEnd, Error>,
    ) {
        let interrupted = outcome.as_ref().is_err_and(|error| matches!(error.kind, ErrorKind::Interrupted { .. }));
        let Some(sandbox) = sandbox.filter(|_| !interrupted && !self.plan.artifacts.is_empty()) else { return };
        let keeping = artifacts::Keeping {
            sandbox,
            workspace,
            run_id: &self.run_id,
            limit: self.plan.sandbox.max_return().unwrap_or(sandbox::DEFAULT_MAX_RETURN),
            journal: &self.journal,
        };
        artifacts::keep(&keeping, &self.plan.artifacts, "the run", &mut self.events);
    }

    /// `[branch] push`, once the run's work landed or was kept (`landed`: the branch's tip, if
    /// it has commits, and the target it merged into). A failed push keeps the branch here
    /// (made again if the merge had deleted it) and fails the run unless it failed already.
    fn push(
        &mut self,
        repo: &crate::git::Git,
        landed: (Option<String>, Option<&str>),
        preserved_branch: &mut Option<String>,
        error: Option<Error>,
    ) -> (Option<crate::record::PushRecord>, Option<Error>) {
        let (Some(lease), (Some(tip), merged_into)) = (&self.push_lease, landed) else { return (None, error) };
        // A pull request gets only work that ended well: never a failed or protected run's.
        if self.plan.pull_request.is_some() && error.is_some() {
            return (None, error);
        }
        if lease.expected.is_none() {
            let message = format!("`{}` could not be asked when the run began: pushing without a lease", lease.remote);
            self.events.report(&Event::Warning { message: message.into() });
        }
        let base = merged_into.filter(|_| self.plan.branch.push_base);
        let clock = std::time::Instant::now();
        let record = push::push(repo, lease, &tip, base, self.credential.as_ref());
        self.events.report(&Event::Pushed {
            remote: lease.remote.as_str().into(),
            branch: lease.branch.as_str().into(),
            pushed: record.pushed && record.error.is_none(),
            duration_ms: clock.elapsed().as_millis() as u64,
        });
        if record.pushed && record.error.is_none() {
            let base = base.map(|base| format!(", and `{base}`")).unwrap_or_default();
            let message = format!("pushed `{}` ({}) to `{}`{base}", lease.branch, short_sha(&tip), lease.remote);
            self.events.report(&Event::Info { message: message.into() });
            return (Some(record), error);
        }
        if preserved_branch.is_none() && repo.run(["branch", &lease.branch, &tip]).is_ok() {
            let _ = repo.mark_branch(&lease.branch, &self.run_id);
            *preserved_branch = Some(lease.branch.clone());
        }
        let failed = push::error(&record, preserved_branch.as_deref(), self.plan.pull_request.is_some());
        match error {
            Some(error) => {
                self.events.report(&Event::Warning { message: failed.message.into() });
                (Some(record), Some(error))
            }
            None => (Some(record), Some(failed)),
        }
    }

    /// The iterations, hooks and steps not yet in the record go there, with how the steps
    /// ended. Returns the run's commits as the loop collected them (`None`: ask git).
    fn record_progress(&mut self, outcome: &Result<LoopEnd, Error>) -> Option<Vec<crate::git::Commit>> {
        let completion_signal = outcome.as_ref().ok().and_then(|end| end.completion_signal.clone());
        let output = outcome.as_ref().ok().and_then(|end| end.output.clone());
        let progress = std::mem::take(&mut self.progress);
        let (mut iterations, mut hook_records) = (progress.iterations, progress.hooks);
        let steps = std::mem::take(&mut self.steps);
        let _ = self.journal.update(|record| {
            record.phase = RunPhase::Finishing;
            record.iterations.append(&mut iterations);
            record.hooks.append(&mut hook_records);
            record.steps = steps;
            record.completion_signal = completion_signal;
            record.output = output;
        });
        progress.commits
    }

    fn merge_settings(&self, workspace: &Workspace) -> finish::MergeSettings<'p> {
        use workspace::WorktreeAction;
        let ours = match workspace.pre.action {
            WorktreeAction::CreateWithNewBranch | WorktreeAction::CreateForExistingBranch => true,
            // The checkout was clean when the run began, unless it was allowed not to be.
            WorktreeAction::UseCheckout => !self.plan.branch.allow_dirty,
            WorktreeAction::Reuse => false,
        };
        finish::MergeSettings {
            rebase: self.plan.branch.rebase,
            batch: self.options.batch.as_deref(),
            attempt: self.options.attempt.as_ref(),
            hold: self.plan.attempts.score.is_some(),
            leftovers_fail: ours && self.options.interactive.is_none(),
            protected: protect::Protected::of(self.plan, &workspace.pre.root, &workspace.pre.base_commit),
            pull_request: self.plan.pull_request.is_some(),
        }
    }

    /// `on_close` runs whatever happened, after Ctrl-C too: only a further signal cuts it
    /// short. Its failure is the run's unless the run had already failed. Its sandbox-side
    /// hooks run only if the sandbox started.
    async fn close_hooks(
        &mut self,
        sandbox: Option<&dyn SandboxHandle>,
        outcome: Result<LoopEnd, Error>,
    ) -> Result<LoopEnd, Error> {
        if !self.hooks.has(Phase::OnClose) {
            return outcome;
        }
        let status = match &outcome {
            Ok(_) => "ok".to_owned(),
            Err(error) => error.kind.as_str().to_owned(),
        };
        let extra_env = [("EDEN_STATUS", status)];
        let close = PhaseRun { phase: Phase::OnClose, iteration: None, sandbox, extra_env: &extra_env };
        let mut later = hooks::later_signals(&self.abort);
        let closed = self.hooks.run_phase(&close, &mut self.events, &mut later, &mut self.progress.hooks).await;
        self.first_error(outcome, closed)
    }

    /// `attempts_pick = "best"`: an attempt that ended well runs `attempts_score` in its
    /// sandbox, and its record keeps the number printed (the last line). A score that cannot
    /// be had fails the attempt (it cannot be compared).
    async fn score_attempt(
        &mut self,
        sandbox: Option<&dyn SandboxHandle>,
        outcome: Result<LoopEnd, Error>,
    ) -> Result<LoopEnd, Error> {
        let (Ok(_), Some(sandbox), Some(score), Some(_)) =
            (&outcome, sandbox, &self.plan.attempts.score, &self.options.attempt)
        else {
            return outcome;
        };
        let iteration = u32::try_from(self.journal.iterations()).unwrap_or(u32::MAX).max(1);
        let printed = self.hooks.prompt_command(score, iteration, sandbox, &mut self.events, &mut self.abort).await;
        let number = printed.and_then(|printed| {
            let last = printed.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("").trim().to_owned();
            last.parse::<f64>().ok().filter(|n| n.is_finite()).ok_or_else(|| {
                Error::hook(format!("`attempts_score` printed `{last}`, not a number"))
                    .with_hint("make its last line of output one number, the lower the better")
            })
        });
        match number {
            Ok(number) => {
                self.events.report(&Event::Info { message: format!("attempts_score: {number}").into() });
                let _ = self.journal.update(|record| {
                    if let Some(attempt) = &mut record.attempt {
                        attempt.score = Some(number);
                    }
                });
                outcome
            }
            Err(error) => Err(error),
        }
    }

    /// The sandbox goes first, whatever happened: nothing may be left running, and an isolated
    /// copy's uncommitted work must be in the worktree before the finish looks at it.
    fn close_sandbox(
        &mut self,
        workspace: &Workspace,
        sandbox: Option<Box<dyn SandboxHandle>>,
        outcome: Result<LoopEnd, Error>,
    ) -> Result<LoopEnd, Error> {
        let closed = match sandbox {
            Some(mut sandbox) => sandbox.close().map(|note| {
                if let Some(note) = note {
                    self.events.report(&Event::Info { message: note.as_str().into() });
                }
            }),
            None => Ok(()),
        };
        // Its transcripts were captured after each invocation; the copies of the person's
        // login in it go now.
        let _ = crate::sandbox::agent_state::remove(&workspace.pre.layout().agent_state(&self.run_id));
        self.first_error(outcome, closed)
    }

    /// The run's outcome after a cleanup step: the first error wins; a later one is a warning.
    fn first_error(&mut self, outcome: Result<LoopEnd, Error>, step: Result<(), Error>) -> Result<LoopEnd, Error> {
        match (outcome, step) {
            (outcome, Ok(())) => outcome,
            (Ok(_), Err(error)) => Err(error),
            (Err(first), Err(error)) => {
                self.events.report(&Event::Warning { message: error.message.as_str().into() });
                Err(first)
            }
        }
    }

    /// `branch.commit_leftovers`: what the agent left uncommitted in a run that ended well is
    /// committed (the copied files aside), so the work lands with the rest.
    fn commit_leftovers(&mut self, workspace: &Workspace, outcome: Result<LoopEnd, Error>) -> Result<LoopEnd, Error> {
        if !self.plan.branch.commit_leftovers || outcome.is_err() || self.options.interactive.is_some() {
            return outcome;
        }
        let committed = copy::commit_leftovers(&workspace.worktree, &self.plan.copy_to_worktree);
        let committed = committed.map(|commit| {
            if let Some((sha, files)) = commit {
                let message = format!("committed {files} file(s) the agent left uncommitted as {}", &sha[..10]);
                self.events.report(&Event::Info { message: message.as_str().into() });
                // The loop's list of commits misses this one: the finish asks git.
                self.progress.commits = None;
            }
        });
        self.first_error(outcome, committed)
    }

    /// Copies nobody changed go, so they do not keep an otherwise clean worktree alive.
    fn remove_unchanged_copies(&mut self, workspace: &Workspace) {
        if !workspace.owns_worktree() {
            return;
        }
        let copied = self.copied.lock().unwrap_or_else(|e| e.into_inner());
        let changed = copy::remove_unchanged(&copied);
        if changed > 0 {
            let message =
                format!("{changed} file(s) copied by `copy_to_worktree` were changed during the run and stay");
            self.events.report(&Event::Warning { message: message.as_str().into() });
        }
    }

    /// The record gets the end, is written, and is shown.
    fn end(mut self, error: Option<Error>, change: impl FnOnce(&mut RunRecord)) -> RunResult {
        // One of several attempts, asked to stop because another landed: said so, not as Ctrl-C.
        let error = error.map(|mut error| {
            if matches!(error.kind, crate::error::ErrorKind::Interrupted { .. }) && crate::process::stop_requested() {
                error.message = "stopped: another attempt landed first".to_owned();
                // The finish named the branch that keeps its commits, if it made any.
                error.hint = error.hint.take().or_else(|| Some("it committed nothing: no branch is kept".into()));
            }
            error
        });
        let (mut record, written) = self.journal.finish(error.as_ref(), change);
        let mut error = error;
        if let Err(err) = written {
            let message = format!("cannot write the run record `{}`: {err}", record.record_path.display());
            record.record_path = PathBuf::new();
            // A run that went well but left no record of it did not go well: the machine
            // failed under it (a full disk, most often), and that is what it says.
            if error.is_none() {
                let mut failure = Error::internal(message);
                if err.raw_os_error() == Some(28) {
                    failure = failure.with_hint(crate::git::DISK_FULL_HINT);
                }
                record.exit_code = Some(failure.kind.exit_code());
                record.exit_reason = Some(crate::record::ExitReason::of(&failure.kind));
                error = Some(failure);
            } else {
                self.events.report(&Event::Warning { message: message.as_str().into() });
            }
        }
        // Told before the end is shown, so that a delivery that failed is said with the run.
        for warning in self.notifier.ended(&record) {
            self.events.report(&Event::Warning { message: warning.into() });
        }
        self.events.report(&Event::RunFinished { record: std::borrow::Cow::Borrowed(&record) });
        RunResult { record: Some(record), error }
    }
}

/// `[notify]`'s teller for this run.
fn notifier(plan: &Plan, run_id: &str, pre: &Preflight) -> crate::notify::Notifier {
    let about = crate::notify::About {
        run_id: run_id.to_owned(),
        name: plan.name.clone(),
        repository: pre.root.clone(),
        branch: pre.branch.clone(),
        base_branch: pre.base_branch.clone(),
    };
    crate::notify::Notifier::new(&plan.notify, about)
}

/// The `EDEN_*` variables every hook sees.
fn hook_context(run_id: &str, plan: &Plan, pre: &Preflight) -> Vec<(&'static str, String)> {
    vec![
        ("EDEN_RUN_ID", run_id.to_owned()),
        ("EDEN_NAME", plan.name.clone()),
        ("EDEN_BRANCH", pre.branch.clone()),
        ("EDEN_BASE_BRANCH", pre.base_branch.clone().unwrap_or_default()),
        ("EDEN_WORKTREE", pre.worktree.display().to_string()),
        ("EDEN_REPO", pre.root.display().to_string()),
    ]
}

/// A held login: the run's private copy of its file gets the placeholder in place of the token,
/// before the sandbox starts (the copy is the person's until then, seen by no agent yet).
fn hold_logins(
    held: &[&crate::manifest::held_plan::Held],
    holder: &crate::proxy::held::Holder,
    private: &[sandbox::agent_state::PrivateState],
) -> Result<(), Error> {
    use crate::manifest::held_plan::Held;
    for held in held {
        let Held::Keys { upstream, login: Some(login), .. } = held else { continue };
        let folder = private.iter().find(|state| state.var == login.var).map(|state| &state.folder);
        let placeholder = holder.placeholder(upstream, login.file);
        let (Some(folder), Some(placeholder)) = (folder, placeholder) else { continue };
        (login.hold)(folder, placeholder).map_err(|err| {
            Error::sandbox(format!("cannot hold the agent's login in its private `{}`: {err}", login.file))
                .with_hint("set `sandbox.hold_keys = false` to hand the agent its login as before")
        })?;
    }
    Ok(())
}

impl Run<'_> {
    /// Start the run's sandbox (nothing for `none`). A sandboxed agent gets private state
    /// folders (`.eden/agent-state/<run>`), never the person's own, with the sessions it
    /// resumes carried into them; they go again if the sandbox does not start.
    fn start_sandbox(&mut self, pre: &Preflight) -> Result<Box<dyn SandboxHandle>, Error> {
        let Some(states) = self.plan.sandbox.agent_state() else { return Ok(Box::new(Host)) };
        let state_dir = pre.layout().agent_state(&self.run_id);
        let private = sandbox::agent_state::make(&state_dir, states)?;
        let layout = pre.layout();
        let mut site = RunSite {
            proxy: None,
            run_id: self.run_id.clone(),
            repo_root: pre.root.clone(),
            common_dir: pre.common_dir.clone(),
            worktree: pre.worktree.clone(),
            branch: pre.branch.clone(),
            scratch: layout.scratch(&self.run_id),
            patches: layout.patches(),
            repository_lock: layout.repository_lock(),
            agent_state: private,
            max_return: self.plan.sandbox.max_return().unwrap_or(sandbox::DEFAULT_MAX_RETURN),
        };
        let started = self.carry_sessions_into(pre, &site.agent_state);
        let started = started.and_then(|()| self.hold_keys(&mut site));
        let programs: Vec<std::path::PathBuf> =
            self.plan.steps.iter().filter_map(|step| step.agent.binary()).map(Into::into).collect();
        let started =
            started.and_then(|()| self.sandbox.start(&sandbox::provider::Start { site: &site, programs: &programs }));
        let started = started.map(|started| self.announce(started));
        if started.is_err() {
            let _ = sandbox::agent_state::remove(&state_dir);
        }
        let services = self.plan.sandbox.services();
        if started.is_ok() && !services.is_empty() {
            let named: Vec<String> =
                services.iter().map(|service| format!("`{}` ({})", service.name, service.image)).collect();
            let message = format!("service(s) ready beside the sandbox: {}", named.join(", "));
            self.events.report(&Event::Info { message: message.into() });
        }
        started
    }

    /// The proxies that hold the steps' keys, listening in the run's proxy folder, which the
    /// sandbox is given (`RunSite::proxy`): bound in on this machine, carried through a tunnel
    /// (`proxy::tunnel`) to a remote engine's container or a pod.
    fn hold_keys(&mut self, site: &mut RunSite) -> Result<(), Error> {
        use crate::manifest::held_plan::Held;
        let held: Vec<&Held> = self.plan.steps.iter().map(|step| &step.held).collect();
        if !held.iter().any(|held| matches!(held, Held::Keys { .. })) {
            return Ok(());
        }
        let dir = site.scratch.join("proxy");
        let inside = self.sandbox.proxy_inside(&dir);
        let holder = crate::proxy::held::Holder::start(&held, &dir, &inside)?;
        hold_logins(&held, &holder, &site.agent_state)?;
        self.holder = Some(holder);
        site.proxy = Some(dir);
        Ok(())
    }

    /// The sessions a sandboxed step resumes, copied into its private state folders, where
    /// the agent in the sandbox looks (and with its working directory there).
    fn carry_sessions_into(
        &self,
        pre: &Preflight,
        private: &[sandbox::agent_state::PrivateState],
    ) -> Result<(), Error> {
        let cwd = self.sandbox.agent_cwd(&self.run_id, &pre.worktree);
        let env =
            |key: &str| private.iter().find(|state| state.var == key).map(|state| state.value.display().to_string());
        for carry in self.sessions.iter().filter(|carry| !carry.to_host) {
            let (kind, session) = (carry.kind, &carry.session);
            crate::sessions::transfer::transfer(kind, session, &carry.main, &carry.subagents, &cwd, &env, true)?;
        }
        Ok(())
    }

    /// What the sandbox's start says: what it found left behind, and that it started.
    fn announce(&mut self, started: sandbox::provider::Started) -> Box<dyn SandboxHandle> {
        for warning in &started.warnings {
            self.events.report(&Event::Warning { message: warning.as_str().into() });
        }
        for note in &started.notes {
            self.events.report(&Event::Info { message: note.as_str().into() });
        }
        if let Some(announce) = started.announce {
            self.events.report(&Event::SandboxStarted {
                engine: announce.engine,
                name: announce.name.into(),
                host: announce.host.map(Into::into),
                node: announce.node.map(Into::into),
                message: announce.message.into(),
            });
        }
        started.handle
    }
}

/// A session a step resumes (`agent.resume`) that is not yet where its agent will look for it:
/// in the person's own store under another directory (Claude Code resumes sessions of its
/// working directory only), or, in a sandbox, anywhere but the run's private state folder.
struct SessionToCarry {
    /// The step that resumes it (whose agent's environment says where its store is).
    step: usize,
    kind: agent::AgentKind,
    session: String,
    main: PathBuf,
    subagents: Vec<PathBuf>,
    /// Into the person's own store, for an agent on the host (else into the sandbox's).
    to_host: bool,
}

/// Every step that resumes a session: the session must be found, and carried (when the
/// workspace or the sandbox is made) where its agent will look for it. Without a sandbox that
/// is the person's own store; in a sandbox the run's private state folder, with eden's captured
/// copy or else the person's. One found nowhere stops the run before anything is created.
fn sessions_to_carry(plan: &Plan, pre: &workspace::Preflight) -> Result<Vec<SessionToCarry>, Error> {
    let mut carry = Vec::new();
    for (step, plan_step) in plan.steps.iter().enumerate() {
        let agent::AgentPlan::Adapter(settings) = &plan_step.agent else { continue };
        let Some(session) = &settings.resume else { continue };
        let env = |key: &str| plan_step.agent.env_var(key);
        let kind = settings.kind;
        let private = plan.sandbox.agent_state();
        let Some(private) = private else {
            let found = crate::sessions::transfer::find_resumable(kind, session, &pre.worktree, &env)?;
            if let Some(agent::transcripts::Found { main, subagents }) = found {
                carry.push(SessionToCarry { step, kind, session: session.clone(), main, subagents, to_host: true });
            }
            continue;
        };
        if !agent::transcripts::transferable(kind) || private.is_empty() {
            return Err(Error::usage(format!(
                "a `{}` session cannot be resumed in a sandbox: the agent there has a private state folder, and eden can carry only {} sessions into it",
                kind.as_str(),
                crate::sessions::transfer::transferable_kinds()
            ))
            .with_hint("resume it with `sandbox.kind = \"none\"`, or start a new session (remove `agent.resume`)"));
        }
        let found = crate::sessions::capture::captured(&pre.layout().sessions(), session).or_else(|| {
            match agent::transcripts::locate(kind, session, &pre.worktree, &env) {
                Ok(agent::transcripts::Located::File(found)) => Some(found),
                _ => None,
            }
        });
        let Some(agent::transcripts::Found { main, subagents }) = found else {
            return Err(Error::usage(format!(
                "session `{session}` to resume was captured by no earlier run and is not in {}'s own store",
                kind.as_str()
            ))
            .with_hint(
                "check the id (`eden sessions list --json` shows each run's `sessions`), or remove `agent.resume`",
            ));
        };
        carry.push(SessionToCarry { step, kind, session: session.clone(), main, subagents, to_host: false });
    }
    Ok(carry)
}

fn short_sha(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}
