//! The iteration loop: render the prompt, run the agent under the supervisor, watch its text
//! for the completion signal, collect the commits it made, decide whether to go on.

use super::record::{now_rfc3339, AgentFailure, HookRecord, IterationRecord, ToolCallRecord};
use super::workspace::Workspace;
use super::{interrupted, interrupted_error, RunOptions};
use crate::agent::{Agent, CompletionScanner, Invocation, Parser, StreamEvent, Usage, UsageMode};
use crate::error::Error;
use crate::git::Commit;
use crate::hooks::{HookRunner, PhaseRun};
use crate::manifest::hooks_plan::Phase;
use crate::manifest::plan::{Plan, StepPlan};
use crate::manifest::prompt;
use crate::process::{supervise, Abort, Handlers, Outcome, Watchdogs};
use crate::sandbox::SandboxHandle;
use crate::ui::{Event, Reporter};
use crate::values::format_duration;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;
use tokio::sync::watch;

struct IterationHandlers<'a> {
    iteration: u32,
    parser: Box<dyn Parser>,
    scanner: CompletionScanner,
    reporter: &'a mut dyn Reporter,
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
}

impl IterationHandlers<'_> {
    fn handle(&mut self, event: StreamEvent<'_>) {
        let iteration = self.iteration;
        match event {
            StreamEvent::Text { text, continues, subagent } => {
                self.reporter.report(&Event::AgentText { iteration, text: &text });
                if let (Some(all), false) = (&mut self.text, subagent) {
                    all.push_str(&text);
                    if !continues {
                        all.push('\n');
                    }
                }
                // Subagents' text is theirs, not the agent's answer: it cannot complete the run.
                if self.signal.is_none() && !subagent {
                    if let Some(found) = self.scanner.scan(&text, continues) {
                        self.reporter.report(&Event::CompletionSignal { iteration, signal: found });
                        self.signal = Some(found.to_owned());
                    }
                }
            }
            StreamEvent::ToolCall { name, summary, subagent } => {
                self.reporter.report(&Event::ToolCall { iteration, name: &name, summary: &summary, subagent });
                self.tool_calls.push(ToolCallRecord { name, summary, ok: None, subagent });
            }
            StreamEvent::ToolResult { name, ok } => {
                let pending = self.tool_calls[self.first_pending..]
                    .iter()
                    .position(|call| call.ok.is_none() && name.as_deref().is_none_or(|name| name == call.name));
                if let Some(offset) = pending {
                    self.tool_calls[self.first_pending + offset].ok = Some(ok);
                    while self.tool_calls.get(self.first_pending).is_some_and(|call| call.ok.is_some()) {
                        self.first_pending += 1;
                    }
                }
                if !ok {
                    self.reporter.report(&Event::ToolFailed { iteration, name: name.as_deref() });
                }
            }
            StreamEvent::Usage { usage, mode } => {
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
                self.reporter.report(&Event::Usage { iteration, usage: current });
            }
            StreamEvent::SessionId(id) => {
                if self.session_id.as_deref() != Some(id.as_str()) {
                    self.reporter.report(&Event::SessionId { iteration, session_id: &id });
                    self.session_id = Some(id);
                }
            }
            StreamEvent::FinalResult(_) => {}
            StreamEvent::Error { message, kind } => {
                self.reporter.report(&Event::AgentError { iteration, message: &message, kind });
                self.failure = Some(AgentFailure { message, kind });
            }
            StreamEvent::Notice(message) => self.reporter.report(&Event::Notice { iteration, message: &message }),
        }
    }
}

impl Handlers for IterationHandlers<'_> {
    fn stdout_line(&mut self, line: &[u8], continues: bool) -> bool {
        let mut parser = std::mem::replace(&mut self.parser, Box::new(crate::agent::LinesParser));
        if continues {
            parser.parse_piece(line, &mut |event| self.handle(event));
        } else {
            parser.parse_line(line, &mut |event| self.handle(event));
        }
        self.parser = parser;
        self.signal.is_some()
    }

    fn stderr_line(&mut self, line: &[u8]) {
        let text = crate::agent::decode(line);
        self.reporter.report(&Event::AgentStderr { iteration: self.iteration, text: &text });
    }

    fn idle_warning(&mut self, silent_for: Duration) {
        self.reporter.report(&Event::IdleWarning { iteration: self.iteration, silent_secs: silent_for.as_secs() });
    }
}

/// What every step of a run shares.
pub(crate) struct Shared<'a> {
    pub plan: &'a Plan,
    pub options: &'a RunOptions,
    pub workspace: &'a Workspace,
    pub sandbox: &'a dyn SandboxHandle,
    pub hooks: &'a HookRunner<'a>,
    pub run_id: &'a str,
    /// The run record, written after every iteration.
    pub journal: &'a super::record::Journal,
}

/// What the run has done so far, across steps: the records, and what the next iteration must
/// know (commits already reported, session running totals).
#[derive(Default)]
pub(crate) struct Progress {
    /// Iterations and hooks not yet handed to the run record (`Journal`), oldest first.
    pub iterations: Vec<IterationRecord>,
    pub hooks: Vec<HookRecord>,
    /// Every commit of the run so far, oldest first (`None` until an iteration collected them).
    pub commits: Option<Vec<Commit>>,
    seen_commits: HashSet<String>,
    session_totals: HashMap<String, Usage>,
}

/// How a step ended when it did not fail.
pub(crate) struct StepEnd {
    pub completion_signal: Option<String>,
    pub output: Option<serde_json::Value>,
}

/// What one invocation of the agent produced.
struct Invoked {
    label: &'static str,
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
}

/// Run one step's iteration loop.
pub(crate) async fn run_step(
    shared: &Shared<'_>,
    step: &StepPlan,
    agent: &dyn Agent,
    previous_result: Option<&str>,
    reporter: &mut dyn Reporter,
    abort: &mut watch::Receiver<Option<Abort>>,
    progress: &mut Progress,
) -> Result<StepEnd, Error> {
    let (plan, sandbox, hooks) = (shared.plan, shared.sandbox, shared.hooks);
    let pre = &shared.workspace.pre;
    let checker = match &step.output {
        Some(output) => Some(
            crate::output::Checker::new(output)
                .map_err(|err| Error::usage(format!("the output schema cannot be used: {err}")))?,
        ),
        None => None,
    };
    let mut values: BTreeMap<String, String> = step.prompt.args.clone();
    values.insert("BRANCH".into(), pre.branch.clone());
    values.insert("BASE_BRANCH".into(), pre.base_branch.clone().unwrap_or_default());
    values.insert("MAX_ITERATIONS".into(), step.loop_.max_iterations.to_string());
    values.insert("RUN_ID".into(), shared.run_id.to_owned());
    values.insert("NAME".into(), plan.name.clone());
    if let Some(previous) = previous_result {
        values.insert(prompt::PREVIOUS_STEP_RESULT.into(), previous.to_owned());
    }
    let step_env = [("EDEN_STEP", step.name.clone())];

    for iteration in 1..=step.loop_.max_iterations {
        if let Some(error) = interrupted(abort) {
            return Err(error);
        }
        reporter.report(&Event::IterationStarted { iteration, max_iterations: step.loop_.max_iterations });
        let start = PhaseRun {
            phase: Phase::OnIterationStart,
            iteration: Some(iteration),
            sandbox: Some(sandbox),
            extra_env: &step_env,
        };
        hooks.run_phase(&start, reporter, abort, &mut progress.hooks).await?;
        values.insert("ITERATION".into(), iteration.to_string());
        let mut rendered = String::new();
        for piece in prompt::pieces(&step.prompt.template) {
            match piece {
                prompt::Piece::Text(text) => rendered.push_str(&prompt::render(text, &values)),
                prompt::Piece::Command(cmd) => {
                    let cmd = prompt::render(cmd, &values);
                    rendered.push_str(&hooks.prompt_command(&cmd, iteration, sandbox, reporter, abort).await?);
                }
            }
        }

        // The agent, and for structured output, as many retries in the same session as allowed.
        let mut prompt_text = rendered;
        let mut resume: Option<String> = None;
        let mut attempt = 0;
        let mut output = None;
        let invoked = loop {
            attempt += 1;
            reporter.report(&Event::Prompt { iteration, text: &prompt_text });
            let mut invoked =
                invoke(shared, step, agent, iteration, &prompt_text, resume.as_deref(), reporter, abort, progress)
                    .await?;
            sync_into(&mut invoked.result, sandbox, reporter);
            let (Some(checker), Ok(_)) = (&checker, &invoked.result) else {
                break (invoked, prompt_text);
            };
            match checker.check(&invoked.text) {
                Ok(value) => {
                    reporter.report(&Event::Output { iteration, value: &value });
                    output = Some(value);
                    break (invoked, prompt_text);
                }
                Err(errors) => {
                    let retries = step.output.as_ref().map_or(0, |o| o.max_retries);
                    let session = invoked.session_id.clone();
                    if attempt <= retries as usize && session.is_some() {
                        let message = format!(
                            "the structured output is not usable ({}); asking again in the same session (retry {attempt}/{retries})",
                            errors.join("; ")
                        );
                        reporter.report(&Event::Warning { message: &message });
                        let next = checker.retry_prompt(&errors);
                        push_record(
                            progress,
                            step,
                            iteration,
                            &invoked,
                            &prompt_text,
                            Vec::new(),
                            reporter,
                            "output_invalid",
                        );
                        prompt_text = next;
                        resume = session;
                        continue;
                    }
                    invoked.result = Err(output_error(&errors, &invoked, attempt));
                    break (invoked, prompt_text);
                }
            }
        };
        let (mut invoked, prompt_text) = invoked;

        // `on_iteration_end` checks an iteration that went well; a failed one goes to `on_close`.
        if invoked.result.is_ok() && hooks.has(Phase::OnIterationEnd) {
            let end = PhaseRun {
                phase: Phase::OnIterationEnd,
                iteration: Some(iteration),
                sandbox: Some(sandbox),
                extra_env: &step_env,
            };
            if let Err(error) = hooks.run_phase(&end, reporter, abort, &mut progress.hooks).await {
                invoked.result = Err(error);
            }
            sync_into(&mut invoked.result, sandbox, reporter);
        }
        // Commits made this iteration (by the agent or its hooks), oldest first.
        let all = shared.workspace.worktree.commits_between(&pre.base_commit, "HEAD")?;
        let mut new_commits = Vec::new();
        for commit in &all {
            if progress.seen_commits.insert(commit.sha.clone()) {
                reporter.report(&Event::Commit { iteration, sha: &commit.sha, subject: &commit.subject });
                new_commits.push(commit.sha.clone());
            }
        }
        progress.commits = Some(all);
        let label = invoked.label;
        push_record(progress, step, iteration, &invoked, &prompt_text, new_commits, reporter, label);
        // The record takes what is new; an agent's thousands of tool calls are not held twice.
        let _ = shared.journal.update(|record| {
            record.iterations.append(&mut progress.iterations);
            record.hooks.append(&mut progress.hooks);
            record.commits = progress.commits.clone().unwrap_or_default();
        });
        match invoked.result {
            Err(error) => return Err(error),
            Ok(true) => return Ok(StepEnd { completion_signal: invoked.signal, output }),
            Ok(false) if output.is_some() => return Ok(StepEnd { completion_signal: None, output }),
            Ok(false) => {}
        }
    }
    if step.loop_.require_completion {
        return Err(Error::new(
            crate::error::ErrorKind::Incomplete,
            format!("no completion signal after {} iteration(s)", step.loop_.max_iterations),
        )
        .with_hint(format!(
            "the agent must print one of: {}; raise `loop.max_iterations` or check the prompt",
            step.loop_.completion_signal.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(StepEnd { completion_signal: None, output: None })
}

/// Start the agent once and supervise it to the end.
#[allow(clippy::too_many_arguments)]
async fn invoke(
    shared: &Shared<'_>,
    step: &StepPlan,
    agent: &dyn Agent,
    iteration: u32,
    prompt_text: &str,
    resume: Option<&str>,
    reporter: &mut dyn Reporter,
    abort: &mut watch::Receiver<Option<Abort>>,
    progress: &mut Progress,
) -> Result<Invoked, Error> {
    let plan = shared.plan;
    let watchdogs = Watchdogs {
        idle_timeout: step.loop_.idle_timeout.0,
        idle_warning_interval: step.loop_.idle_warning_interval.0,
        step_timeout: plan.timeouts.iteration_step.0,
        completion_timeout: step.loop_.completion_timeout.0,
        kill_grace: shared.options.kill_grace,
    };
    let worktree = &shared.workspace.pre.worktree;
    let mut command = agent.command(&Invocation { prompt: prompt_text, worktree, resume })?;
    // Under the agent's own `env`: `[sandbox] env`, then `.eden/.env`.
    for (key, value) in plan.env.sandbox.iter().chain(&plan.env.dotenv) {
        command = command.env_default(key, &value.0);
    }
    let prepared = shared.sandbox.prepare(command)?;
    let program = prepared.command.to_string();
    let started_at = now_rfc3339();
    let clock = std::time::Instant::now();
    let mut handlers = IterationHandlers {
        iteration,
        parser: agent.parser(),
        scanner: CompletionScanner::new(&step.loop_.completion_signal),
        reporter: &mut *reporter,
        signal: None,
        usage: None,
        session_id: None,
        tool_calls: Vec::new(),
        session_totals: &progress.session_totals,
        pending_session_total: None,
        first_pending: 0,
        failure: None,
        text: step.output.as_ref().map(|_| String::new()),
    };
    let (outcome, tail) = supervise(prepared.command, &watchdogs, &mut handlers, abort, prepared.inside.as_deref())
        .await
        .map_err(|err| {
            Error::agent(format!("cannot start the agent `{program}`: {err}"))
                .with_hint("check `agent.binary` and that it is executable")
        })?;
    let IterationHandlers { signal, usage, session_id, tool_calls, failure, pending_session_total, text, .. } =
        handlers;
    if let Some((id, total)) = pending_session_total {
        progress.session_totals.insert(id, total);
    }
    let (label, exit_code, mut result) = judge(outcome, iteration, &tail.describe(15), failure.as_ref());
    if result.as_ref().is_err_and(|error| error.kind == crate::error::ErrorKind::Agent) {
        if let Err(gone) = shared.sandbox.check_alive() {
            result = Err(gone);
        }
    }
    Ok(Invoked {
        label,
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
    })
}

#[allow(clippy::too_many_arguments)]
fn push_record(
    progress: &mut Progress,
    step: &StepPlan,
    iteration: u32,
    invoked: &Invoked,
    prompt_text: &str,
    commits: Vec<String>,
    reporter: &mut dyn Reporter,
    label: &'static str,
) {
    let duration_ms = invoked.clock.elapsed().as_millis() as u64;
    reporter.report(&Event::IterationFinished { iteration, outcome: label, exit_code: invoked.exit_code, duration_ms });
    progress.iterations.push(IterationRecord {
        step: step.name.clone(),
        iteration,
        started_at: invoked.started_at.clone(),
        duration_ms,
        outcome: label.to_owned(),
        exit_code: invoked.exit_code,
        completion_signal: invoked.signal.clone(),
        commits,
        prompt: prompt_text.to_owned(),
        session_id: invoked.session_id.clone(),
        usage: invoked.usage,
        tool_calls: invoked.tool_calls.clone(),
        agent_error: invoked.failure.clone(),
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

/// Bring the agent's work back (isolated copies); a failure to do so fails the iteration.
fn sync_into(result: &mut Result<bool, Error>, sandbox: &dyn SandboxHandle, reporter: &mut dyn Reporter) {
    if let Err(error) = sync(sandbox, reporter) {
        if result.is_ok() {
            *result = Err(error);
        }
    }
}

/// Bring the agent's work into the worktree where it worked elsewhere (an isolated copy).
fn sync(sandbox: &dyn SandboxHandle, reporter: &mut dyn Reporter) -> Result<(), Error> {
    if let Some(note) = sandbox.sync()? {
        reporter.report(&Event::Info { message: &note });
    }
    Ok(())
}

/// What an iteration's outcome means: its label for the record, the exit code, and
/// `Ok(true)` = complete, `Ok(false)` = go on, `Err` = the run fails.
fn judge(
    outcome: Outcome,
    iteration: u32,
    tail: &str,
    failure: Option<&AgentFailure>,
) -> (&'static str, Option<i32>, Result<bool, Error>) {
    // A failure the agent reported on stdout (auth, rate limit, model error) is the reason,
    // whatever its exit code: pi, for one, exits 0 after a failed model call.
    if let (Some(failure), Outcome::Exited { code, signal_seen: false }) = (failure, outcome) {
        let error = Error::agent(format!("the agent reported a failure in iteration {iteration}: {}", failure.message))
            .with_hint(failure.kind.hint());
        return ("failed", Some(code), Err(error));
    }
    match outcome {
        Outcome::Exited { code, signal_seen: true } => ("completed", Some(code), Ok(true)),
        Outcome::CompletionTimeout => ("completion_timeout", None, Ok(true)),
        Outcome::Exited { code: 0, signal_seen: false } => ("exited", Some(0), Ok(false)),
        Outcome::Exited { code, signal_seen: false } => {
            let mut message = format!("the agent exited with code {code} in iteration {iteration}");
            if !tail.is_empty() {
                message.push_str("; its last output:");
                message.push_str(tail);
            }
            let error = Error::agent(message)
                .with_hint("the agent failed before printing the completion signal; see its output above");
            ("failed", Some(code), Err(error))
        }
        Outcome::IdleTimeout(after) => {
            let error = Error::timeout(format!(
                "the agent printed nothing for {} in iteration {iteration} and was stopped",
                format_duration(after)
            ))
            .with_hint("raise `loop.idle_timeout` if the agent is slow to print");
            ("idle_timeout", None, Err(error))
        }
        Outcome::StepTimeout(after) => {
            let error = Error::timeout(format!(
                "iteration {iteration} ran longer than {} and was stopped",
                format_duration(after)
            ))
            .with_hint("raise `timeouts.iteration_step`");
            ("step_timeout", None, Err(error))
        }
        Outcome::Aborted(number) => ("interrupted", None, Err(interrupted_error(number))),
    }
}
