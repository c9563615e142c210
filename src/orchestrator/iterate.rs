//! The iteration loop: render the prompt, run the agent under the supervisor, watch its text
//! for the completion signal, collect the commits it made, decide whether to go on.

use super::record::{now_rfc3339, AgentFailure, HookRecord, IterationRecord, ToolCallRecord};
use super::workspace::Workspace;
use super::{interrupted, interrupted_error, LoopEnd, RunOptions};
use crate::agent::{Agent, CompletionScanner, Invocation, Parser, StreamEvent, Usage, UsageMode};
use crate::error::Error;
use crate::git::Commit;
use crate::hooks::{HookRunner, PhaseRun};
use crate::manifest::hooks_plan::Phase;
use crate::manifest::plan::Plan;
use crate::manifest::prompt;
use crate::manifest::values::format_duration;
use crate::process::{supervise, Abort, Handlers, Outcome, Watchdogs};
use crate::sandbox::SandboxHandle;
use crate::ui::{Event, Reporter};
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
}

impl IterationHandlers<'_> {
    fn handle(&mut self, event: StreamEvent<'_>) {
        let iteration = self.iteration;
        match event {
            StreamEvent::Text { text, continues, subagent } => {
                self.reporter.report(&Event::AgentText { iteration, text: &text });
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
    fn stdout_line(&mut self, line: &[u8]) -> bool {
        let mut parser = std::mem::replace(&mut self.parser, Box::new(crate::agent::LinesParser));
        parser.parse_line(line, &mut |event| self.handle(event));
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

#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_loop(
    plan: &Plan,
    options: &RunOptions,
    workspace: &Workspace,
    agent: &dyn Agent,
    sandbox: &dyn SandboxHandle,
    hooks: &HookRunner<'_>,
    run_id: &str,
    reporter: &mut dyn Reporter,
    abort: &mut watch::Receiver<Option<Abort>>,
    records: &mut Vec<IterationRecord>,
    hook_records: &mut Vec<HookRecord>,
    commits: &mut Option<Vec<Commit>>,
) -> Result<LoopEnd, Error> {
    let watchdogs = Watchdogs {
        idle_timeout: plan.loop_.idle_timeout.0,
        idle_warning_interval: plan.loop_.idle_warning_interval.0,
        step_timeout: plan.timeouts.iteration_step.0,
        completion_timeout: plan.loop_.completion_timeout.0,
        kill_grace: options.kill_grace,
    };
    let pre = &workspace.pre;
    let mut values: BTreeMap<String, String> = plan.prompt.args.clone();
    values.insert("BRANCH".into(), pre.branch.clone());
    values.insert("BASE_BRANCH".into(), pre.base_branch.clone().unwrap_or_default());
    values.insert("MAX_ITERATIONS".into(), plan.loop_.max_iterations.to_string());
    values.insert("RUN_ID".into(), run_id.to_owned());
    values.insert("NAME".into(), plan.name.clone());
    let mut seen_commits: HashSet<String> = HashSet::new();
    let mut session_totals: HashMap<String, Usage> = HashMap::new();

    for iteration in 1..=plan.loop_.max_iterations {
        if let Some(error) = interrupted(abort) {
            return Err(error);
        }
        reporter.report(&Event::IterationStarted { iteration, max_iterations: plan.loop_.max_iterations });
        let start = PhaseRun {
            phase: Phase::OnIterationStart,
            iteration: Some(iteration),
            sandbox: Some(sandbox),
            extra_env: &[],
        };
        hooks.run_phase(&start, reporter, abort, hook_records).await?;
        values.insert("ITERATION".into(), iteration.to_string());
        let mut rendered = String::new();
        for piece in prompt::pieces(&plan.prompt.template) {
            match piece {
                prompt::Piece::Text(text) => rendered.push_str(&prompt::render(text, &values)),
                prompt::Piece::Command(cmd) => {
                    let cmd = prompt::render(cmd, &values);
                    rendered.push_str(&hooks.prompt_command(&cmd, iteration, sandbox, reporter, abort).await?);
                }
            }
        }
        reporter.report(&Event::Prompt { iteration, text: &rendered });

        let mut command = agent.command(&Invocation { prompt: &rendered, worktree: &pre.worktree, resume: None })?;
        // Under the agent's own `env`: `[sandbox] env`, then `.eden/.env`.
        for (key, value) in plan.env.sandbox.iter().chain(&plan.env.dotenv) {
            command = command.env_default(key, &value.0);
        }
        let prepared = sandbox.prepare(command)?;
        let program = prepared.command.to_string();
        let started_at = now_rfc3339();
        let clock = std::time::Instant::now();
        let mut handlers = IterationHandlers {
            iteration,
            parser: agent.parser(),
            scanner: CompletionScanner::new(&plan.loop_.completion_signal),
            reporter: &mut *reporter,
            signal: None,
            usage: None,
            session_id: None,
            tool_calls: Vec::new(),
            session_totals: &session_totals,
            pending_session_total: None,
            first_pending: 0,
            failure: None,
        };
        let (outcome, tail) = supervise(prepared.command, &watchdogs, &mut handlers, abort, prepared.inside.as_deref())
            .await
            .map_err(|err| {
                Error::agent(format!("cannot start the agent `{program}`: {err}"))
                    .with_hint("check `agent.binary` and that it is executable")
            })?;
        let IterationHandlers { signal, usage, session_id, tool_calls, failure, pending_session_total, .. } = handlers;
        if let Some((id, total)) = pending_session_total {
            session_totals.insert(id, total);
        }

        // Where the agent worked elsewhere (an isolated copy), its commits come back first.
        let (label, exit_code, mut result) = judge(outcome, iteration, &tail.describe(15), failure.as_ref());
        if let Err(error) = sync(sandbox, reporter) {
            result = result.and(Err(error));
        }
        // `on_iteration_end` checks an iteration that went well; a failed one goes to `on_close`.
        if result.is_ok() && hooks.has(Phase::OnIterationEnd) {
            let end = PhaseRun {
                phase: Phase::OnIterationEnd,
                iteration: Some(iteration),
                sandbox: Some(sandbox),
                extra_env: &[],
            };
            if let Err(error) = hooks.run_phase(&end, reporter, abort, hook_records).await {
                result = Err(error);
            }
            if let Err(error) = sync(sandbox, reporter) {
                result = result.and(Err(error));
            }
        }
        // Commits made this iteration (by the agent or its hooks), oldest first.
        let all = workspace.worktree.commits_between(&pre.base_commit, "HEAD")?;
        let mut new_commits = Vec::new();
        for commit in &all {
            if seen_commits.insert(commit.sha.clone()) {
                reporter.report(&Event::Commit { iteration, sha: &commit.sha, subject: &commit.subject });
                new_commits.push(commit.sha.clone());
            }
        }
        *commits = Some(all);

        let duration_ms = clock.elapsed().as_millis() as u64;
        reporter.report(&Event::IterationFinished { iteration, outcome: label, exit_code, duration_ms });
        records.push(IterationRecord {
            iteration,
            started_at,
            duration_ms,
            outcome: label.to_owned(),
            exit_code,
            completion_signal: signal.clone(),
            commits: new_commits,
            prompt: rendered,
            session_id,
            usage,
            tool_calls,
            agent_error: failure,
        });
        match result {
            Err(error) => return Err(error),
            Ok(true) => return Ok(LoopEnd { completion_signal: signal }),
            Ok(false) => {}
        }
    }
    if plan.loop_.require_completion {
        return Err(Error::new(
            crate::error::ErrorKind::Incomplete,
            format!("no completion signal after {} iteration(s)", plan.loop_.max_iterations),
        )
        .with_hint(format!(
            "the agent must print one of: {}; raise `loop.max_iterations` or check the prompt",
            plan.loop_.completion_signal.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(LoopEnd { completion_signal: None })
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
