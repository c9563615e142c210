//! The iteration loop of one step: render the prompt, ask the agent (`invoke`), bring its
//! work back from the sandbox, run the iteration hooks, collect the commits it made, decide
//! whether to go on. Structured output is checked here too, with retries in the agent's own
//! session, and a provider's usage limit is waited out.

pub(crate) use super::context::{Live, Progress, Shared, StepEnd};
use super::invoke::{invoke, push_record, Ask, Invoked};
use super::judge::{output_error, Verdict};
use crate::agent::{Agent, Usage};
use crate::error::{Error, ErrorKind};
use crate::hooks::PhaseRun;
use crate::manifest::checks_plan::CheckPlan;
use crate::manifest::hooks_plan::Phase;
use crate::manifest::plan::StepPlan;
use crate::manifest::prompt;
use crate::output::Checker;
use crate::record::IterationOutcome;
use crate::report::{Event, RunEvents};
use crate::sandbox::SandboxHandle;
use std::collections::BTreeMap;

/// The interruption error if eden has received SIGINT, SIGTERM or SIGHUP.
pub(crate) fn interrupted(abort: &tokio::sync::watch::Receiver<Option<crate::process::Abort>>) -> Option<Error> {
    abort.borrow().map(|request| Error::interrupted(request.signal))
}

/// How an iteration ended.
enum Ended {
    /// The step is done.
    Step(StepEnd),
    /// The loop goes on.
    GoOn,
    /// `eden steer` interrupted the agent: the next iteration has the new prompt.
    Steered,
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
    /// What the checks that failed last said, for the next prompt (`{{CHECK_FAILURES}}`).
    check_failures: String,
    /// The checks that failed when the agent last signalled completion, until they pass.
    failed_at_completion: Vec<String>,
    /// The session the agent reported last (a steered prompt resumes it).
    session: Option<String>,
}

impl<'a> StepRun<'a> {
    pub(crate) fn new(
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
        values.insert("ATTEMPT".into(), shared.journal.attempt_number().to_string());
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
            check_failures: String::new(),
            failed_at_completion: Vec::new(),
            session: None,
        })
    }

    /// Iterate until the step completes, fails, or runs out of iterations.
    pub(crate) async fn run(mut self, live: &mut Live<'_>) -> Result<StepEnd, Error> {
        live.progress.step_spent = Usage::default();
        // A steered last iteration still gets the prompt it was steered to: one more.
        let (mut iteration, mut last) = (1, self.step.loop_.max_iterations);
        while iteration <= last {
            if let Some(error) = interrupted(live.abort) {
                return Err(error);
            }
            if let Some(reached) = self.budget(live.progress).reached() {
                return Err(super::budget::error(reached, iteration));
            }
            match self.iteration(iteration, live).await? {
                Ended::Step(end) => return Ok(end),
                Ended::Steered if iteration == last => last += 1,
                _ => {}
            }
            iteration += 1;
        }
        if !self.failed_at_completion.is_empty() {
            return Err(super::checks::exhausted(&self.failed_at_completion, self.step.loop_.max_iterations));
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

    /// One iteration: hooks around the agent, commits collected, recorded.
    async fn iteration(&mut self, iteration: u32, live: &mut Live<'_>) -> Result<Ended, Error> {
        // Past the limit only after a steer, which gave it one more.
        let max_iterations = self.step.loop_.max_iterations.max(iteration);
        live.events.report(&Event::IterationStarted { iteration, max_iterations });
        self.hooks(Phase::OnIterationStart, iteration, live).await?;
        self.values.insert("ITERATION".into(), iteration.to_string());
        let (rendered, resume) = match self.take_steer(live) {
            Some((steer, Some(session))) => (steer, Some(session)),
            // A session of its own: the task (with its completion signal) first, then the steer.
            Some((steer, None)) => (format!("{}\n\n{steer}", self.render_prompt(iteration, live).await?), None),
            None => (self.render_prompt(iteration, live).await?, None),
        };
        let (mut invoked, prompt_text, output) = self.ask(iteration, rendered, resume, live).await?;
        self.session = invoked.session_id.clone().or(self.session.take());
        // `on_iteration_end` checks an iteration that went well; a failed one goes to `on_close`.
        if !invoked.verdict.failed() && self.shared.hooks.has(Phase::OnIterationEnd) {
            if let Err(error) = self.hooks(Phase::OnIterationEnd, iteration, live).await {
                invoked.verdict.fail(error);
            }
            sync_into((&mut invoked.verdict, iteration), self.shared.sandbox, None, live.events);
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
        let completed = match invoked.verdict {
            Verdict::Failed(error) => return Err(error),
            _ if outcome == IterationOutcome::Steered => return Ok(Ended::Steered),
            Verdict::Complete => true,
            Verdict::GoOn => output.is_some(),
        };
        // The checks that are due: all of them once the agent says it is done, or before a run
        // that needs no completion signal ends; else those that run after every iteration.
        let loop_ = &self.step.loop_;
        let finishing = completed || (iteration == loop_.max_iterations && !loop_.require_completion);
        let due: Vec<&CheckPlan> = self.step.checks.iter().filter(|check| finishing || check.every_iteration).collect();
        if !due.is_empty() && !self.checks(&due, iteration, finishing, live).await? {
            return Ok(Ended::GoOn);
        }
        Ok(match completed {
            true => Ended::Step(StepEnd { completion_signal: invoked.signal, output }),
            false => Ended::GoOn,
        })
    }

    /// The prompt `eden steer` left for this run, if any (taken: it is used once), and the
    /// session to resume with it, where the agent can.
    fn take_steer(&self, live: &mut Live<'_>) -> Option<(String, Option<String>)> {
        let path = self.shared.workspace.pre.layout().steer(self.shared.run_id);
        let prompt = std::fs::read_to_string(&path).ok()?;
        let _ = std::fs::remove_file(&path);
        let resumes = self.step.agent.kind().spec().resume;
        let session = self.session.clone().filter(|_| resumes);
        let message = match &session {
            Some(session) => format!("steered: the new prompt goes to the agent in session `{session}`"),
            None if resumes => {
                "steered: the agent's first session starts with the task and the new prompt after it".to_owned()
            }
            None => format!(
                "steered: `{}` cannot resume a session, so a new one starts with the task and the new prompt after it",
                self.step.agent.kind().as_str()
            ),
        };
        live.events.report(&Event::Info { message: message.into() });
        Some((prompt, session))
    }

    /// Run the checks that are due (all of them, so the agent hears of every failure at once);
    /// `true` when all passed. What failed goes into the next prompt.
    async fn checks(
        &mut self,
        due: &[&CheckPlan],
        iteration: u32,
        finishing: bool,
        live: &mut Live<'_>,
    ) -> Result<bool, Error> {
        let runs = super::checks::run(self.shared, self.step, due, iteration, &self.step_env, live).await?;
        let failed: Vec<&super::checks::Ran> = runs.iter().filter(|ran| !ran.passed()).collect();
        self.check_failures = super::checks::failures_text(&failed);
        if finishing {
            self.failed_at_completion = failed.iter().map(|ran| ran.check.name.clone()).collect();
        }
        Ok(failed.is_empty())
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
        let (Some(failure), true) = (limited, invoked.verdict.failed()) else { return Ok(None) };
        let now = std::time::SystemTime::now();
        let wait = super::usage_limit::wait_for(&failure.message, now, live.progress.limit_waits);
        let allowed = self.step.loop_.usage_limit_wait.0;
        if live.progress.limit_waited + wait > allowed {
            return Ok(None);
        }
        let until = humantime::format_rfc3339_seconds(now + wait).to_string();
        live.events.report(&Event::UsageLimit {
            iteration,
            message: failure.message.as_str().into(),
            wait_secs: wait.as_secs(),
            until: until.as_str().into(),
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
            return Err(interrupted(live.abort).unwrap_or_else(|| Error::interrupted(crate::exit::Signal::INT)));
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
        .counting_attempts(self.shared.workspace.pre.layout(), self.shared.journal.attempt())
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

    /// The prompt with its `{{KEY}}`s filled and its `` !`command` ``s run in the sandbox; what
    /// the checks said last, after it when it does not say where (`{{CHECK_FAILURES}}`).
    async fn render_prompt(&mut self, iteration: u32, live: &mut Live<'_>) -> Result<String, Error> {
        self.values.insert(prompt::CHECK_FAILURES.into(), self.check_failures.clone());
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
        let placed = prompt::placeholders(&self.step.prompt.template).contains(&prompt::CHECK_FAILURES);
        if !placed && !self.check_failures.is_empty() {
            rendered.push_str("\n\n");
            rendered.push_str(&self.check_failures);
        }
        Ok(rendered)
    }

    /// The agent, and for structured output as many retries in the same session as allowed.
    /// Returns the last invocation, its prompt, and the output if one was delivered.
    async fn ask(
        &self,
        iteration: u32,
        mut prompt_text: String,
        mut resume: Option<String>,
        live: &mut Live<'_>,
    ) -> Result<(Invoked, String, Option<serde_json::Value>), Error> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            live.events.report(&Event::Prompt { iteration, text: prompt_text.as_str().into() });
            let ask = Ask {
                step: self.step,
                agent: self.agent,
                iteration,
                prompt: &prompt_text,
                resume: resume.as_deref(),
                budget: self.budget(live.progress),
            };
            let mut invoked = invoke(self.shared, &ask, live).await?;
            let tip = invoked.sandbox_tip.take();
            sync_into((&mut invoked.verdict, iteration), self.shared.sandbox, tip.as_deref(), live.events);
            if let Some(next) = self.wait_out_usage_limit(iteration, &invoked, &prompt_text, live).await? {
                (prompt_text, resume) = next;
                continue;
            }
            let (Some(checker), false) = (&self.checker, invoked.verdict.failed()) else {
                return Ok((invoked, prompt_text, None));
            };
            let errors = match checker.check(&invoked.text) {
                Ok(value) => {
                    live.events.report(&Event::Output { iteration, value: std::borrow::Cow::Borrowed(&value) });
                    return Ok((invoked, prompt_text, Some(value)));
                }
                Err(errors) => errors,
            };
            let retries = self.step.output.as_ref().map_or(0, |o| o.max_retries);
            let Some(session) = invoked.session_id.clone().filter(|_| attempt <= retries as usize) else {
                invoked.verdict =
                    Verdict::Failed(output_error(&errors, &invoked.text, invoked.session_id.as_deref(), attempt));
                return Ok((invoked, prompt_text, None));
            };
            // The retry resumes the session: it must be where the agent will look for it.
            if let Some(missing) = &invoked.transcript_warning {
                invoked.verdict = Verdict::Failed(Error::usage(format!(
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
            live.events.report(&Event::Warning { message: message.as_str().into() });
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

    /// Commits made this iteration (by the agent or its hooks), oldest first, reported.
    fn collect_commits(&self, iteration: u32, live: &mut Live<'_>) -> Result<Vec<String>, Error> {
        let workspace = self.shared.workspace;
        let all = workspace.worktree.commits_between(&workspace.pre.start_commit, "HEAD")?;
        let mut new_commits = Vec::new();
        for commit in &all {
            if live.progress.seen_commits.insert(commit.sha.clone()) {
                live.events.report(&Event::Commit {
                    iteration,
                    sha: commit.sha.as_str().into(),
                    subject: commit.subject.as_str().into(),
                });
                new_commits.push(commit.sha.clone());
            }
        }
        live.progress.commits = Some(all);
        Ok(new_commits)
    }
}

/// Bring the agent's work into the worktree where it worked elsewhere (an isolated copy); a
/// failure to do so fails the iteration.
fn sync_into(
    (verdict, iteration): (&mut Verdict, u32),
    sandbox: &dyn SandboxHandle,
    tip: Option<&str>,
    events: &mut RunEvents,
) {
    let clock = std::time::Instant::now();
    let synced = sandbox.sync(tip);
    if sandbox.kind() != "none" {
        events.report(&Event::WorkBack { iteration, duration_ms: clock.elapsed().as_millis() as u64 });
    }
    match synced {
        Ok(Some(note)) => events.report(&Event::Info { message: note.as_str().into() }),
        Ok(None) => {}
        Err(error) => verdict.fail(error),
    }
}
