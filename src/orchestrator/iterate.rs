//! The iteration loop of one step: render the prompt, run the agent under the supervisor,
//! watch its text for the completion signal, collect the commits it made, decide whether to go
//! on. Structured output is checked here too, with retries in the agent's own session.

use super::journal::Journal;
use super::workspace::Workspace;
use crate::agent::{Agent, CompletionScanner, Invocation, Parser, StreamEvent, Usage, UsageMode};
use crate::error::{Error, ErrorKind};
use crate::git::Commit;
use crate::hooks::{HookRunner, PhaseRun};
use crate::manifest::hooks_plan::Phase;
use crate::manifest::plan::{Plan, StepPlan};
use crate::manifest::prompt;
use crate::output::Checker;
use crate::process::ProcessBuilder;
use crate::process::{supervise, Abort, Flow, Handlers, Outcome, Stopping, Watchdogs};
use crate::record::{
    now_rfc3339, AgentFailure, HookRecord, IterationOutcome, IterationRecord, ToolCallRecord, TranscriptRecord,
};
use crate::report::{Event, RunEvents};
use crate::sandbox::SandboxHandle;
use crate::sessions::capture;
use crate::values::format_duration;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::time::Duration;
use tokio::sync::watch;

/// What every step of a run shares.
pub(crate) struct Shared<'a> {
    pub plan: &'a Plan,
    pub stopping: Stopping,
    pub workspace: &'a Workspace,
    pub sandbox: &'a dyn SandboxHandle,
    pub hooks: &'a HookRunner<'a>,
    pub run_id: &'a str,
    /// The run record, written after every iteration.
    pub journal: &'a Journal,
    /// When the run began: its `[budget] max_duration` counts from here.
    pub started: std::time::Instant,
}

/// What the loop works with as it goes: events out, the abort channel in, and its progress.
pub(crate) struct Live<'r> {
    pub events: &'r mut RunEvents,
    pub abort: &'r mut watch::Receiver<Option<Abort>>,
    pub progress: &'r mut Progress,
}

/// What the run has done so far, across steps: the records not yet handed to the journal, and
/// what the next iteration must know (commits already reported, session running totals).
#[derive(Default)]
pub(crate) struct Progress {
    /// Iterations and hooks not yet handed to the run record (`Journal`), oldest first.
    pub iterations: Vec<IterationRecord>,
    pub hooks: Vec<HookRecord>,
    /// Every commit of the run so far, oldest first (`None` until an iteration collected them).
    pub commits: Option<Vec<Commit>>,
    seen_commits: HashSet<String>,
    session_totals: HashMap<String, Usage>,
    /// What the run, and the current step, spent in the invocations that ended.
    spent: Usage,
    step_spent: Usage,
    /// The usage limits waited out so far: how many, and how long in all.
    limit_waits: u32,
    limit_waited: Duration,
}

/// How a step ended when it did not fail.
pub(crate) struct StepEnd {
    pub completion_signal: Option<String>,
    pub output: Option<serde_json::Value>,
}

/// One step's loop: its agent, its prompt's values, its output checker.
pub(crate) struct StepRun<'a> {
    shared: &'a Shared<'a>,
    step: &'a StepPlan,
    agent: &'a dyn Agent,
    checker: Option<Checker>,
    values: BTreeMap<String, String>,
    step_env: [(&'static str, String); 1],
    /// When the step began: its own `budget.max_duration` counts from here.
    started: std::time::Instant,
}

impl<'a> StepRun<'a> {
    pub fn new(
        shared: &'a Shared<'a>,
        step: &'a StepPlan,
        agent: &'a dyn Agent,
        previous_result: Option<&str>,
    ) -> Result<Self, Error> {
        let checker = match &step.output {
            Some(output) => Some(Checker::new(output).map_err(|err| {
                Error::internal(format!("the output schema, checked when the manifest loaded, cannot be used: {err}"))
            })?),
            None => None,
        };
        let pre = &shared.workspace.pre;
        let mut values: BTreeMap<String, String> = step.prompt.args.clone();
        values.insert("BRANCH".into(), pre.branch.clone());
        values.insert("BASE_BRANCH".into(), pre.base_branch.clone().unwrap_or_default());
        values.insert("MAX_ITERATIONS".into(), step.loop_.max_iterations.to_string());
        values.insert("RUN_ID".into(), shared.run_id.to_owned());
        values.insert("NAME".into(), shared.plan.name.clone());
        if let Some(previous) = previous_result {
            values.insert(prompt::PREVIOUS_STEP_RESULT.into(), previous.to_owned());
        }
        Ok(StepRun {
            shared,
            step,
            agent,
            checker,
            values,
            step_env: [("EDEN_STEP", step.name.clone())],
            started: std::time::Instant::now(),
        })
    }

    /// Iterate until the step completes, fails, or runs out of iterations.
    pub async fn run(mut self, live: &mut Live<'_>) -> Result<StepEnd, Error> {
        live.progress.step_spent = Usage::default();
        for iteration in 1..=self.step.loop_.max_iterations {
            if let Some(error) = super::interrupted(live.abort) {
                return Err(error);
            }
            if let Some(reached) = self.budget(live.progress).reached() {
                return Err(super::budget::error(reached, iteration));
            }
            if let Some(end) = self.iteration(iteration, live).await? {
                return Ok(end);
            }
        }
        if self.step.loop_.require_completion {
            let signals: Vec<String> = self.step.loop_.completion_signal.iter().map(|s| format!("`{s}`")).collect();
            return Err(Error::new(
                ErrorKind::Incomplete,
                format!("no completion signal after {} iteration(s)", self.step.loop_.max_iterations),
            )
            .with_hint(format!(
                "the agent must print one of: {}; raise `loop.max_iterations` or check the prompt (`loop.require_completion = false` accepts a run that ends without it)",
                signals.join(", ")
            )));
        }
        Ok(StepEnd { completion_signal: None, output: None })
    }

    /// One iteration: hooks around the agent, commits collected, recorded. `Some` ends the step.
    async fn iteration(&mut self, iteration: u32, live: &mut Live<'_>) -> Result<Option<StepEnd>, Error> {
        let max_iterations = self.step.loop_.max_iterations;
        live.events.report(&Event::IterationStarted { iteration, max_iterations });
        self.hooks(Phase::OnIterationStart, iteration, live).await?;
        self.values.insert("ITERATION".into(), iteration.to_string());
        let rendered = self.render_prompt(iteration, live).await?;
        let (mut invoked, prompt_text, output) = self.ask(iteration, rendered, live).await?;
        // `on_iteration_end` checks an iteration that went well; a failed one goes to `on_close`.
        if invoked.result.is_ok() && self.shared.hooks.has(Phase::OnIterationEnd) {
            if let Err(error) = self.hooks(Phase::OnIterationEnd, iteration, live).await {
                invoked.result = Err(error);
            }
            sync_into(&mut invoked.result, self.shared.sandbox, None, live.events);
        }
        let new_commits = self.collect_commits(iteration, live)?;
        let outcome = invoked.outcome;
        push_record(live, self.step, iteration, &invoked, &prompt_text, new_commits, outcome);
        // The record takes what is new; an agent's thousands of tool calls are not held twice.
        let progress = &mut *live.progress;
        let _ = self.shared.journal.update(|record| {
            record.iterations.append(&mut progress.iterations);
            record.hooks.append(&mut progress.hooks);
            record.commits = progress.commits.clone().unwrap_or_default();
        });
        match invoked.result {
            Err(error) => Err(error),
            Ok(true) => Ok(Some(StepEnd { completion_signal: invoked.signal, output })),
            Ok(false) if output.is_some() => Ok(Some(StepEnd { completion_signal: None, output })),
            Ok(false) => Ok(None),
        }
    }

    /// The agent stopped at the provider's usage limit: record the invocation, wait until the
    /// limit resets (Ctrl-C ends the wait and the run), and say how to go on: the continuation
    /// prompt in the same session (or, for agents that cannot resume, the prompt again). `None`
    /// when this is no usage limit, or waiting for it would go past `[loop] usage_limit_wait`:
    /// the invocation's failure stands.
    async fn wait_out_usage_limit(
        &self,
        iteration: u32,
        invoked: &Invoked,
        prompt_text: &str,
        live: &mut Live<'_>,
    ) -> Result<Option<(String, Option<String>)>, Error> {
        let limited = invoked.failure.as_ref().filter(|failure| failure.kind == crate::agent::FailureKind::RateLimit);
        let (Some(failure), Err(_)) = (limited, &invoked.result) else { return Ok(None) };
        let now = std::time::SystemTime::now();
        let wait = super::usage_limit::wait_for(&failure.message, now, live.progress.limit_waits);
        let allowed = self.step.loop_.usage_limit_wait.0;
        if live.progress.limit_waited + wait > allowed {
            return Ok(None);
        }
        let until = humantime::format_rfc3339_seconds(now + wait).to_string();
        live.events.report(&Event::UsageLimit {
            iteration,
            message: &failure.message,
            wait_secs: wait.as_secs(),
            until: &until,
        });
        push_record(live, self.step, iteration, invoked, prompt_text, Vec::new(), IterationOutcome::UsageLimit);
        let until_reset = tokio::time::Instant::now() + wait;
        let aborted = tokio::select! {
            () = tokio::time::sleep_until(until_reset) => false,
            seen = live.abort.wait_for(Option::is_some) => seen.is_ok(),
        };
        if !aborted {
            // Nobody can interrupt any more (no signal handling): the wait is still owed.
            tokio::time::sleep_until(until_reset).await;
        } else {
            return Err(super::interrupted(live.abort).unwrap_or_else(|| Error::interrupted(2)));
        }
        live.progress.limit_waits += 1;
        live.progress.limit_waited += wait;
        let resumes = self.step.agent.kind().spec().resume;
        Ok(Some(match invoked.session_id.clone().filter(|_| resumes) {
            Some(session) => (super::usage_limit::CONTINUE_PROMPT.to_owned(), Some(session)),
            None => (prompt_text.to_owned(), None),
        }))
    }

    /// The caps in force now, with what was spent so far.
    fn budget(&self, progress: &Progress) -> super::budget::Budget {
        super::budget::Budget::new(
            (&self.shared.plan.budget, progress.spent, self.shared.started),
            (&self.step.name, &self.step.budget, progress.step_spent, self.started),
        )
    }

    async fn hooks(&self, phase: Phase, iteration: u32, live: &mut Live<'_>) -> Result<(), Error> {
        let run = PhaseRun {
            phase,
            iteration: Some(iteration),
            sandbox: Some(self.shared.sandbox),
            extra_env: &self.step_env,
        };
        self.shared.hooks.run_phase(&run, live.events, live.abort, &mut live.progress.hooks).await
    }

    /// The prompt with its `{{KEY}}`s filled and its `` !`command` ``s run in the sandbox.
    async fn render_prompt(&self, iteration: u32, live: &mut Live<'_>) -> Result<String, Error> {
        let mut rendered = String::new();
        for piece in prompt::pieces(&self.step.prompt.template) {
            match piece {
                prompt::Piece::Text(text) => rendered.push_str(&prompt::render(text, &self.values)),
                prompt::Piece::Command(cmd) => {
                    let cmd = prompt::render(cmd, &self.values);
                    let sandbox = self.shared.sandbox;
                    let output =
                        self.shared.hooks.prompt_command(&cmd, iteration, sandbox, live.events, live.abort).await?;
                    rendered.push_str(&output);
                }
            }
        }
        Ok(rendered)
    }

    /// The agent, and for structured output as many retries in the same session as allowed.
    /// Returns the last invocation, its prompt, and the output if one was delivered.
    async fn ask(
        &self,
        iteration: u32,
        mut prompt_text: String,
        live: &mut Live<'_>,
    ) -> Result<(Invoked, String, Option<serde_json::Value>), Error> {
        let mut resume: Option<String> = None;
        let mut attempt = 0;
        loop {
            attempt += 1;
            live.events.report(&Event::Prompt { iteration, text: &prompt_text });
            let mut invoked = self.invoke(iteration, &prompt_text, resume.as_deref(), live).await?;
            let tip = invoked.sandbox_tip.take();
            sync_into(&mut invoked.result, self.shared.sandbox, tip.as_deref(), live.events);
            if let Some(next) = self.wait_out_usage_limit(iteration, &invoked, &prompt_text, live).await? {
                (prompt_text, resume) = next;
                continue;
            }
            let (Some(checker), Ok(_)) = (&self.checker, &invoked.result) else {
                return Ok((invoked, prompt_text, None));
            };
            let errors = match checker.check(&invoked.text) {
                Ok(value) => {
                    live.events.report(&Event::Output { iteration, value: &value });
                    return Ok((invoked, prompt_text, Some(value)));
                }
                Err(errors) => errors,
            };
            let retries = self.step.output.as_ref().map_or(0, |o| o.max_retries);
            let Some(session) = invoked.session_id.clone().filter(|_| attempt <= retries as usize) else {
                invoked.result = Err(output_error(&errors, &invoked, attempt));
                return Ok((invoked, prompt_text, None));
            };
            // The retry resumes the session: it must be where the agent will look for it.
            if let Some(missing) = &invoked.transcript_warning {
                invoked.result = Err(Error::usage(format!(
                    "the structured output is not usable ({}), and the session cannot be resumed for a retry: {missing}",
                    errors.join("; ")
                ))
                .with_hint("the agent did not keep its session where it resumes sessions from; check its state folder"));
                return Ok((invoked, prompt_text, None));
            }
            let message = format!(
                "the structured output is not usable ({}); asking again in the same session (retry {attempt}/{retries})",
                errors.join("; ")
            );
            live.events.report(&Event::Warning { message: &message });
            push_record(
                live,
                self.step,
                iteration,
                &invoked,
                &prompt_text,
                Vec::new(),
                IterationOutcome::OutputInvalid,
            );
            prompt_text = checker.retry_prompt(&errors);
            resume = Some(session);
        }
    }

    /// Start the agent once and supervise it to the end.
    async fn invoke(
        &self,
        iteration: u32,
        prompt_text: &str,
        resume: Option<&str>,
        live: &mut Live<'_>,
    ) -> Result<Invoked, Error> {
        let (plan, step) = (self.shared.plan, self.step);
        let budget = self.budget(live.progress);
        let watchdogs = Watchdogs {
            idle_timeout: step.loop_.idle_timeout.0,
            idle_warning_interval: step.loop_.idle_warning_interval.0,
            step_timeout: plan.timeouts.iteration_step.0,
            stopping: self.shared.stopping,
            deadline: budget.deadline().map(tokio::time::Instant::from_std),
        };
        let worktree = &self.shared.workspace.pre.worktree;
        let mut command = self.agent.command(&Invocation { prompt: prompt_text, worktree, resume })?;
        // Under the agent's own `env`: `[sandbox] env`, then `.eden/.env`.
        for (key, value) in plan.env.sandbox.iter().chain(&plan.env.dotenv) {
            command = command.env_default(key, &value.0);
        }
        let mut command = crate::git::with_config(command, &crate::git::NO_BACKGROUND_WORK);
        // In a sandbox the agent's state is the run's private folder, and its transcripts are
        // looked for there.
        for (key, value) in self.shared.sandbox.state_env() {
            command = command.env(key, value);
        }
        let agent_env = AgentEnv::of(&command);
        let prepared = self.shared.sandbox.prepare(command)?;
        let agent_cwd = prepared.command.get_cwd().unwrap_or(worktree).to_path_buf();
        let program = prepared.command.to_string();
        let started_at = now_rfc3339();
        let clock = std::time::Instant::now();
        let mut handlers =
            IterationHandlers::new(iteration, self, live.events, &live.progress.session_totals, budget.clone());
        let (outcome, tail) =
            supervise(prepared.command, &watchdogs, &mut handlers, live.abort, prepared.inside.as_deref())
                .await
                .map_err(|err| {
                    Error::agent(format!("cannot start the agent `{program}`: {err}"))
                        .with_hint("check `agent.binary` and that it is executable")
                })?;
        let IterationHandlers {
            signal,
            usage,
            session_id,
            tool_calls,
            mut failure,
            pending_session_total,
            text,
            exceeded,
            sandbox_tip,
            model,
            retrying,
            ..
        } = handlers;
        if let Some(usage) = &usage {
            live.progress.spent.add(usage);
            live.progress.step_spent.add(usage);
        }
        // A cap the usage crossed fails the iteration, even when the same report carried the
        // completion signal (Claude reports its usage at the end): over budget is over budget.
        // Stopped with none crossed: the deadline. Interrupted stays interrupted.
        let exceeded = match outcome {
            Outcome::Aborted(_) => None,
            Outcome::Stopped => exceeded.or_else(|| budget.timed_out()),
            _ => exceeded,
        };
        // Some agents say they cannot log in only on stderr (pi, Copilot) and exit 1.
        if let (None, Outcome::Exited { code }, None) = (&failure, outcome, &signal) {
            if code != 0 {
                failure = failure_on_stderr(&tail.stderr.lines(20));
            }
        }
        if let Some((id, total)) = pending_session_total {
            live.progress.session_totals.insert(id, total);
        }
        let login = self.step.agent.kind().spec().login;
        let stopped_idle = match outcome {
            Outcome::IdleTimeout(after) => Some(after),
            _ => None,
        };
        let (outcome, exit_code, mut result) = match exceeded {
            Some(exceeded) => (IterationOutcome::BudgetExceeded, None, Err(super::budget::error(exceeded, iteration))),
            None => judge(outcome, signal.is_some(), iteration, &tail.describe(15), failure.as_ref(), login),
        };
        // Stopped while it only retried: say so, it was not silent.
        if let (Some(after), Some(notice), Err(error)) = (stopped_idle, &retrying, &mut result) {
            error.message = format!(
                "the agent made no progress for {} in iteration {iteration} and was stopped: it only retried (last: {notice})",
                format_duration(after)
            );
            error.hint = Some(
                "the provider could not be reached or kept failing; check the network and the credentials, or raise `loop.idle_timeout`"
                    .to_owned(),
            );
        }
        if result.as_ref().is_err_and(|error| error.kind == ErrorKind::Agent) {
            if let Err(gone) = self.shared.sandbox.check_alive(exit_code) {
                result = Err(gone);
            }
        }
        let (transcript, transcript_warning) = match &session_id {
            Some(id) => self.capture(iteration, id, &agent_cwd, &agent_env, live).await,
            None => (None, None),
        };
        Ok(Invoked {
            outcome,
            exit_code,
            result,
            signal,
            usage,
            session_id,
            tool_calls,
            failure,
            text: text.unwrap_or_default(),
            started_at,
            clock,
            transcript,
            transcript_warning,
            sandbox_tip,
            model,
        })
    }

    /// Copy the agent's transcript of `session_id` into `.eden/sessions/<run-id>/`. One that
    /// cannot be found or read is a warning, never a failed run.
    async fn capture(
        &self,
        iteration: u32,
        session_id: &str,
        cwd: &Path,
        env: &AgentEnv,
        live: &mut Live<'_>,
    ) -> (Option<TranscriptRecord>, Option<String>) {
        let agent = &self.step.agent;
        let cli_parser = match agent {
            crate::agent::AgentPlan::Cli(cli) => Some(cli.parser.as_str()),
            _ => None,
        };
        let kind = capture::transcript_kind(agent.kind(), cli_parser);
        let dir = self.shared.workspace.pre.layout().sessions().join(self.shared.run_id);
        let stem = capture::stem(&self.step.name, iteration, session_id);
        let lookup = |key: &str| env.get(key);
        let kept = match capture::locate(kind, session_id, cwd, &lookup) {
            Ok(capture::Located::Nothing) => return (None, None),
            Ok(capture::Located::File { main, subagents }) => {
                let confined = self.shared.workspace.pre.layout().agent_state(self.shared.run_id);
                capture::keep_file(&main, &subagents, &dir, &stem, &confined)
                    .map_err(|err| format!("cannot copy the transcript `{}`: {err}", main.display()))
            }
            Ok(capture::Located::Export) => self.export(session_id, env).await.and_then(|(text, source)| {
                capture::keep_export(&text, &dir, &stem, source)
                    .map_err(|err| format!("cannot write the transcript: {err}"))
            }),
            Err(missing) => Err(format!("no transcript of session `{session_id}` found at {}", missing.tried)),
        };
        match kept {
            Ok(record) => {
                live.events.report(&Event::Transcript { iteration, path: &record.path, bytes: record.bytes });
                (Some(record), None)
            }
            Err(message) => {
                live.events.report(&Event::Warning { message: &message });
                (None, Some(message))
            }
        }
    }

    /// opencode keeps its sessions in SQLite: its own `export` is the transcript, run where the
    /// agent ran, with the agent's environment.
    async fn export(&self, session_id: &str, env: &AgentEnv) -> Result<(Vec<u8>, String), String> {
        let binary = self.step.agent.binary().map(Path::to_path_buf).unwrap_or_else(|| "opencode".into());
        let mut command =
            ProcessBuilder::new(&binary).args(["export", session_id]).cwd(&self.shared.workspace.pre.worktree);
        for (key, value) in &env.set {
            command = command.env(key, value);
        }
        let source = format!("{} export {session_id}", binary.display());
        let prepared = self.shared.sandbox.prepare(command).map_err(|err| err.message)?;
        let output = tokio::time::timeout(EXPORT_TIMEOUT, prepared.command.output_async())
            .await
            .map_err(|_| format!("`{source}` did not finish in {}", format_duration(EXPORT_TIMEOUT)))?
            .map_err(|err| format!("cannot run `{source}`: {err}"))?;
        match (output.status.success(), output.stdout.find('{')) {
            (true, Some(start)) => Ok((output.stdout.as_bytes()[start..].to_vec(), source)),
            _ => Err(format!("`{source}` failed: {}", output.stderr.lines().last().unwrap_or("no output"))),
        }
    }

    /// Commits made this iteration (by the agent or its hooks), oldest first, reported.
    fn collect_commits(&self, iteration: u32, live: &mut Live<'_>) -> Result<Vec<String>, Error> {
        let workspace = self.shared.workspace;
        let all = workspace.worktree.commits_between(&workspace.pre.base_commit, "HEAD")?;
        let mut new_commits = Vec::new();
        for commit in &all {
            if live.progress.seen_commits.insert(commit.sha.clone()) {
                live.events.report(&Event::Commit { iteration, sha: &commit.sha, subject: &commit.subject });
                new_commits.push(commit.sha.clone());
            }
        }
        live.progress.commits = Some(all);
        Ok(new_commits)
    }
}

/// Reads the agent's output as it streams: events to the display, the completion signal, the
/// usage, the session, the tool calls, a failure the agent reports itself.
struct IterationHandlers<'a> {
    iteration: u32,
    parser: Box<dyn Parser>,
    scanner: CompletionScanner,
    /// How long the agent has to exit once the signal is seen.
    completion_timeout: Duration,
    events: &'a mut RunEvents,
    signal: Option<String>,
    usage: Option<Usage>,
    session_id: Option<String>,
    tool_calls: Vec<ToolCallRecord>,
    /// Running totals reported by earlier iterations, per session (for `SessionTotal`).
    session_totals: &'a HashMap<String, Usage>,
    /// This iteration's latest running total, remembered once the iteration ends.
    pending_session_total: Option<(String, Usage)>,
    /// Index of the oldest call still waiting for its result: results arrive in order, so
    /// matching never rescans the calls already answered.
    first_pending: usize,
    failure: Option<AgentFailure>,
    /// The agent's text, kept when a structured output must be read from it.
    text: Option<String>,
    /// The caps to check the usage against, and the first one crossed.
    budget: super::budget::Budget,
    exceeded: Option<crate::error::BudgetExceeded>,
    /// The sandbox branch's tip as the command left it (its wrapper's note), if it said.
    sandbox_tip: Option<String>,
    /// The model the agent said it used, the latest.
    model: Option<String>,
    /// The line being read made progress (text, a tool call, usage…), not only a notice.
    progressed: bool,
    /// The last notice (a retry) since the last progress: the agent is only waiting.
    retrying: Option<String>,
}

impl<'a> IterationHandlers<'a> {
    fn new(
        iteration: u32,
        step: &StepRun<'_>,
        events: &'a mut RunEvents,
        session_totals: &'a HashMap<String, Usage>,
        budget: super::budget::Budget,
    ) -> Self {
        let loop_ = &step.step.loop_;
        IterationHandlers {
            iteration,
            parser: step.agent.parser(),
            scanner: CompletionScanner::new(&loop_.completion_signal),
            completion_timeout: loop_.completion_timeout.0,
            events,
            signal: None,
            usage: None,
            session_id: None,
            tool_calls: Vec::new(),
            session_totals,
            pending_session_total: None,
            first_pending: 0,
            failure: None,
            text: step.step.output.as_ref().map(|_| String::new()),
            budget,
            exceeded: None,
            sandbox_tip: None,
            model: None,
            progressed: false,
            retrying: None,
        }
    }

    fn handle(&mut self, event: StreamEvent<'_>) {
        let iteration = self.iteration;
        if matches!(event, StreamEvent::Notice(_)) {
            if let StreamEvent::Notice(message) = &event {
                self.retrying = Some(message.clone());
            }
        } else {
            self.progressed = true;
            self.retrying = None;
        }
        match event {
            StreamEvent::Text { text, continues, subagent } => self.text(iteration, &text, continues, subagent),
            StreamEvent::ToolCall { name, summary, subagent } => {
                self.events.report(&Event::ToolCall { iteration, name: &name, summary: &summary, subagent });
                self.tool_calls.push(ToolCallRecord { name, summary, ok: None, subagent, error: None });
            }
            StreamEvent::ToolResult { name, ok, reason } => {
                let pending = self.tool_calls[self.first_pending..]
                    .iter()
                    .position(|call| call.ok.is_none() && name.as_deref().is_none_or(|name| name == call.name));
                // A result that does not name its tool is the call it answers.
                let mut called = name;
                if let Some(offset) = pending {
                    let call = &mut self.tool_calls[self.first_pending + offset];
                    call.ok = Some(ok);
                    call.error = reason.clone();
                    called.get_or_insert_with(|| call.name.clone());
                    while self.tool_calls.get(self.first_pending).is_some_and(|call| call.ok.is_some()) {
                        self.first_pending += 1;
                    }
                }
                if !ok {
                    self.events.report(&Event::ToolFailed {
                        iteration,
                        name: called.as_deref(),
                        reason: reason.as_deref(),
                    });
                }
            }
            StreamEvent::Usage { usage, mode } => self.usage(iteration, usage, mode),
            StreamEvent::SessionId(id) => {
                if self.session_id.as_deref() != Some(id.as_str()) {
                    self.events.report(&Event::SessionId { iteration, session_id: &id });
                    self.session_id = Some(id);
                }
            }
            // The agent's final answer as it reports it separately (Claude's `result`): the
            // signal counts there too when its text never showed it.
            StreamEvent::FinalResult(text) => {
                if self.signal.is_none() {
                    if let Some(found) = self.scanner.scan(&text, false) {
                        self.events.report(&Event::CompletionSignal { iteration, signal: found });
                        self.signal = Some(found.to_owned());
                    }
                }
            }
            StreamEvent::Error { message, kind } => {
                self.events.report(&Event::AgentError { iteration, message: &message, kind });
                self.failure = Some(AgentFailure { message, kind });
            }
            StreamEvent::Notice(message) => self.events.report(&Event::Notice { iteration, message: &message }),
            StreamEvent::Model(model) => self.model = Some(model),
        }
    }

    fn text(&mut self, iteration: u32, text: &str, continues: bool, subagent: bool) {
        self.events.report(&Event::AgentText { iteration, text });
        if let (Some(all), false) = (&mut self.text, subagent) {
            all.push_str(text);
            if !continues {
                all.push('\n');
            }
        }
        // Subagents' text is theirs, not the agent's answer: it cannot complete the run.
        if self.signal.is_none() && !subagent {
            if let Some(found) = self.scanner.scan(text, continues) {
                self.events.report(&Event::CompletionSignal { iteration, signal: found });
                self.signal = Some(found.to_owned());
            }
        }
    }

    fn usage(&mut self, iteration: u32, usage: Usage, mode: UsageMode) {
        let current = self.usage.get_or_insert_with(Usage::default);
        match mode {
            UsageMode::Add => current.add(&usage),
            UsageMode::Total => *current = usage,
            UsageMode::SessionTotal => {
                let earlier = self.session_id.as_ref().and_then(|id| self.session_totals.get(id));
                *current = earlier.map_or(usage, |earlier| usage.since(earlier));
                if let Some(id) = &self.session_id {
                    self.pending_session_total = Some((id.clone(), usage));
                }
            }
        }
        self.events.report(&Event::Usage { iteration, usage: current });
        if self.exceeded.is_none() {
            self.exceeded = self.budget.crossed(current);
            if let Some(exceeded) = &self.exceeded {
                let message = format!(
                    "budget: `{}` of {} crossed ({} spent); stopping the agent",
                    exceeded.cap, exceeded.limit, exceeded.used
                );
                self.events.report(&Event::Warning { message: &message });
            }
        }
    }
}

impl Handlers for IterationHandlers<'_> {
    fn stdout_line(&mut self, line: &[u8], continues: bool) -> Flow {
        self.progressed = false;
        let mut parser = std::mem::replace(&mut self.parser, Box::new(crate::agent::LinesParser));
        if continues {
            parser.parse_piece(line, &mut |event| self.handle(event));
        } else {
            parser.parse_line(line, &mut |event| self.handle(event));
        }
        self.parser = parser;
        // Once the signal is seen, the agent has `completion_timeout` to exit on its own.
        match (&self.exceeded, &self.signal) {
            (Some(_), _) => Flow::Stop,
            (None, Some(_)) => Flow::FinishWithin(self.completion_timeout),
            // Only a notice (a provider retry): the idle watchdog keeps counting.
            (None, None) if !self.progressed && self.retrying.is_some() => Flow::Waiting,
            (None, None) => Flow::Continue,
        }
    }

    fn stderr_line(&mut self, line: &[u8]) {
        if let Some(note) = crate::process::sandbox_note(line) {
            // The sandbox's branch tip as the command left it: spares asking again.
            if let Some(tip) = note.strip_prefix(b"tip ") {
                self.sandbox_tip = Some(String::from_utf8_lossy(tip).trim().to_owned());
            }
            return;
        }
        let text = crate::agent::decode(line);
        self.events.report(&Event::AgentStderr { iteration: self.iteration, text: &text });
    }

    fn idle_warning(&mut self, silent_for: Duration) {
        self.events.report(&Event::IdleWarning { iteration: self.iteration, silent_secs: silent_for.as_secs() });
    }
}

/// What one invocation of the agent produced.
struct Invoked {
    /// The sandbox branch's tip the command reported at its end.
    sandbox_tip: Option<String>,
    /// The model the agent said it used.
    model: Option<String>,
    outcome: IterationOutcome,
    exit_code: Option<i32>,
    /// `Ok(true)` complete, `Ok(false)` go on, `Err` failed.
    result: Result<bool, Error>,
    signal: Option<String>,
    usage: Option<Usage>,
    session_id: Option<String>,
    tool_calls: Vec<ToolCallRecord>,
    failure: Option<AgentFailure>,
    /// The agent's own text (no subagents), for structured output.
    text: String,
    started_at: String,
    clock: std::time::Instant,
    transcript: Option<TranscriptRecord>,
    transcript_warning: Option<String>,
}

/// How long `opencode export` may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(60);

/// The environment an agent runs with: eden's, with the command's own settings on top.
struct AgentEnv {
    set: Vec<(String, String)>,
    removed: Vec<String>,
}

impl AgentEnv {
    fn of(command: &ProcessBuilder) -> AgentEnv {
        let mut env = AgentEnv { set: Vec::new(), removed: Vec::new() };
        for (key, value) in command.get_env() {
            let key = key.to_string_lossy().into_owned();
            match value {
                Some(value) => env.set.push((key, value.to_string_lossy().into_owned())),
                None => env.removed.push(key),
            }
        }
        env
    }

    fn get(&self, key: &str) -> Option<String> {
        if let Some((_, value)) = self.set.iter().rev().find(|(k, _)| k == key) {
            return Some(value.clone());
        }
        if self.removed.iter().any(|k| k == key) {
            return None;
        }
        std::env::var(key).ok()
    }
}

fn push_record(
    live: &mut Live<'_>,
    step: &StepPlan,
    iteration: u32,
    invoked: &Invoked,
    prompt_text: &str,
    commits: Vec<String>,
    outcome: IterationOutcome,
) {
    let duration_ms = invoked.clock.elapsed().as_millis() as u64;
    live.events.report(&Event::IterationFinished { iteration, outcome, exit_code: invoked.exit_code, duration_ms });
    live.progress.iterations.push(IterationRecord {
        step: step.name.clone(),
        iteration,
        started_at: invoked.started_at.clone(),
        duration_ms,
        outcome,
        exit_code: invoked.exit_code,
        completion_signal: invoked.signal.clone(),
        commits,
        prompt: crate::record::kept_prompt(prompt_text),
        session_id: invoked.session_id.clone(),
        usage: invoked.usage,
        tool_calls: invoked.tool_calls.clone(),
        agent_error: invoked.failure.clone(),
        transcript: invoked.transcript.clone(),
        transcript_warning: invoked.transcript_warning.clone(),
        model: invoked.model.clone(),
    });
}

/// The structured output could not be used, retries or not: exit 3 with what is needed to
/// carry on by hand.
fn output_error(errors: &[String], invoked: &Invoked, attempts: usize) -> Error {
    // The end of the answer is what matters: the last 4000 characters at most.
    let text = &invoked.text;
    let raw = &text[text.char_indices().rev().nth(3999).map_or(0, |(at, _)| at)..];
    let session = invoked.session_id.as_deref().unwrap_or("(none reported)");
    let mut message = format!(
        "the agent's structured output is not usable after {attempts} attempt(s):\n{}\nsession id: {session}\nthe agent's last answer:",
        errors.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n")
    );
    for line in raw.lines() {
        message.push_str(&format!("\n  {line}"));
    }
    let hint = match &invoked.session_id {
        Some(id) => {
            format!("fix the prompt or the schema; to continue that conversation, set `agent.resume = \"{id}\"`")
        }
        None => "fix the prompt or the schema; the agent reported no session id to resume".to_owned(),
    };
    Error::agent(message).with_hint(hint)
}

/// A failure the agent reported only on stderr before exiting non-zero, if its words say what
/// kind (no credentials, a rate limit): the first line that says it.
fn failure_on_stderr(lines: &[String]) -> Option<AgentFailure> {
    use crate::agent::FailureKind;
    lines.iter().find_map(|line| match FailureKind::classify(None, line) {
        FailureKind::Other => None,
        kind => Some(AgentFailure { message: line.trim().to_owned(), kind }),
    })
}

/// Bring the agent's work into the worktree where it worked elsewhere (an isolated copy); a
/// failure to do so fails the iteration.
fn sync_into(result: &mut Result<bool, Error>, sandbox: &dyn SandboxHandle, tip: Option<&str>, events: &mut RunEvents) {
    match sandbox.sync(tip) {
        Ok(Some(note)) => events.report(&Event::Info { message: &note }),
        Ok(None) => {}
        Err(error) if result.is_ok() => *result = Err(error),
        Err(_) => {}
    }
}

/// What an iteration's outcome means: its outcome for the record, the exit code, and
/// `Ok(true)` = complete, `Ok(false)` = go on, `Err` = the run fails.
fn judge(
    outcome: Outcome,
    signal_seen: bool,
    iteration: u32,
    tail: &str,
    failure: Option<&AgentFailure>,
    login: &str,
) -> (IterationOutcome, Option<i32>, Result<bool, Error>) {
    // A failure the agent reported on stdout (auth, rate limit, model error) is the reason,
    // whatever its exit code: pi, for one, exits 0 after a failed model call.
    if let (Some(failure), Outcome::Exited { code }, false) = (failure, outcome, signal_seen) {
        let hint = match failure.kind {
            crate::agent::FailureKind::Authentication => login,
            other => other.hint(),
        };
        let error = Error::agent(format!("the agent reported a failure in iteration {iteration}: {}", failure.message))
            .with_hint(hint);
        return (IterationOutcome::Failed, Some(code), Err(error));
    }
    match outcome {
        Outcome::Exited { code } if signal_seen => (IterationOutcome::Completed, Some(code), Ok(true)),
        Outcome::Overstayed => (IterationOutcome::CompletionTimeout, None, Ok(true)),
        Outcome::Exited { code: 0 } => (IterationOutcome::Exited, Some(0), Ok(false)),
        Outcome::Exited { code } => {
            let mut message = format!("the agent exited with code {code} in iteration {iteration}");
            if !tail.is_empty() {
                message.push_str("; its last output:");
                message.push_str(tail);
            }
            let error = Error::agent(message)
                .with_hint("the agent failed before printing the completion signal; see its output above");
            (IterationOutcome::Failed, Some(code), Err(error))
        }
        Outcome::IdleTimeout(after) => {
            let error = Error::timeout(format!(
                "the agent printed nothing for {} in iteration {iteration} and was stopped",
                format_duration(after)
            ))
            .with_hint("raise `loop.idle_timeout` if the agent is slow to print");
            (IterationOutcome::IdleTimeout, None, Err(error))
        }
        Outcome::StepTimeout(after) => {
            let error = Error::timeout(format!(
                "iteration {iteration} ran longer than {} and was stopped",
                format_duration(after)
            ))
            .with_hint("raise `timeouts.iteration_step`");
            (IterationOutcome::StepTimeout, None, Err(error))
        }
        Outcome::Aborted(number) => (IterationOutcome::Interrupted, None, Err(Error::interrupted(number))),
        // Only a budget stops an agent, and the caller judges that.
        Outcome::Stopped => (IterationOutcome::BudgetExceeded, None, Err(Error::internal("the agent was stopped"))),
    }
}
