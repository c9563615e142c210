//! `eden interactive`'s middle phase: instead of the iteration loop, the agent's own UI on
//! eden's terminal until the person quits it, then the session recorded as the run's one
//! iteration (its id and transcript found in the agent's store).

use super::{agent, Error, ErrorKind, Event, Interactive, LoopEnd, Path, Run, RunPhase, Workspace};
use crate::sandbox::SandboxHandle;

impl Run<'_> {
    /// `eden interactive`: the agent's own UI on eden's terminal until the person quits it.
    pub(super) async fn session(
        &mut self,
        workspace: &Workspace,
        sandbox: &dyn SandboxHandle,
        interactive: &Interactive,
    ) -> Result<LoopEnd, Error> {
        self.journal.phase(RunPhase::Iterating);
        let plan = self.plan;
        let step = &plan.steps[0];
        let prompt = self.first_prompt(step, workspace, sandbox).await?;
        let start = agent::interactive::InteractiveStart {
            prompt: prompt.as_deref(),
            worktree: &workspace.pre.worktree,
            resume: interactive.resume.as_deref(),
            bypass: self.sandbox.interactive().unwrap_or(false),
            tty: interactive.tty,
        };
        let around = super::agent_command::Around {
            plan,
            sandbox,
            holder: self.holder.as_ref(),
            run_id: &self.run_id,
            step,
            // No iteration span: the session's agent joins the run's.
            traced: self.options.traced.then_some(crate::trace::AgentSpan::Run),
        };
        let command = super::agent_command::around(agent::interactive::command(&step.agent, &start)?, &around)?;
        let prepared = sandbox.prepare(command)?;
        self.events.report(&Event::Info {
            message: format!(
                "{} is yours in {} (quit it to end the session)",
                step.agent.kind().as_str(),
                workspace.pre.worktree.display()
            )
            .into(),
        });
        if self.sandbox.sandboxed() {
            self.events.report(&Event::Info {
                message: format!(
                    "it works in the sandbox's own copy of the worktree: when you quit, its commits come back to `{}` and what it left uncommitted is applied to {}",
                    workspace.pre.branch,
                    workspace.pre.worktree.display()
                ).into(),
            });
        }
        let program = prepared.command.to_string();
        let agent_cwd = prepared.command.get_cwd().unwrap_or(&workspace.pre.worktree).to_path_buf();
        let started = std::time::SystemTime::now();
        let started_at = crate::record::now_rfc3339();
        let ended = crate::process::attached::run_attached(
            &prepared.command,
            interactive.tty,
            &mut self.abort,
            self.options.stopping.kill_grace,
            prepared.inside.as_deref(),
        )
        .await
        .map_err(|err| {
            Error::agent(format!("cannot start the agent `{program}`: {err}"))
                .with_hint("check `agent.binary` and that it is executable")
        })?;
        let ran = Ran { cwd: &agent_cwd, started, started_at, code: ended.code, prompt: prompt.as_deref() };
        self.record_session(step, workspace, sandbox, ran);
        if let Some(signal) = ended.aborted {
            return Err(Error::interrupted(signal));
        }
        // The summary says the session ended; an exit other than 0 is the error below.
        if ended.code == 0 {
            return Ok(LoopEnd { completion_signal: None, output: None });
        }
        // A container that went away mid-session is the sandbox's failure, not the agent's.
        sandbox.check_alive(Some(ended.code))?;
        Err(Error::new(ErrorKind::Exited { code: ended.code }, format!("the agent exited with {}", ended.code))
            .with_hint("a session that ends with an error is not merged: its commits stay on its branch"))
    }

    /// The session as the run's one iteration: its id and transcript, found in the agent's store
    /// (its UI reports none), captured like a run's.
    fn record_session(
        &mut self,
        step: &crate::manifest::plan::StepPlan,
        workspace: &Workspace,
        sandbox: &dyn SandboxHandle,
        ran: Ran<'_>,
    ) {
        let Ran { cwd, started, started_at, code, prompt } = ran;
        use crate::record::{IterationOutcome, IterationRecord};
        use crate::sessions::capture;
        let kind = step.agent.transcripts_as();
        let mut transcript = None;
        let mut session_id = None;
        let private = sandbox.state_env();
        let env = |key: &str| {
            private
                .iter()
                .find(|(var, _)| *var == key)
                .map(|(_, value)| value.display().to_string())
                .or_else(|| step.agent.env_var(key))
        };
        if let Some((id, path)) = agent::transcripts::newest_session(kind, cwd, &env, started) {
            let layout = workspace.pre.layout();
            let (dir, confined) = (layout.sessions().join(&self.run_id), layout.agent_state(&self.run_id));
            match capture::keep_file(&path, &[], &dir, &capture::stem(&step.name, 1, &id), &confined) {
                Ok(kept) => {
                    self.events.report(&Event::SessionId { iteration: 1, session_id: id.as_str().into() });
                    self.events.report(&Event::Transcript {
                        iteration: 1,
                        path: kept.path.as_path().into(),
                        bytes: kept.bytes,
                    });
                    transcript = Some(kept);
                }
                Err(err) => {
                    let message = format!("cannot copy the transcript `{}`: {err}", path.display());
                    self.events.report(&Event::Warning { message: message.as_str().into() });
                }
            }
            session_id = Some(id);
        }
        let duration_ms = started.elapsed().map_or(0, |d| d.as_millis() as u64);
        let outcome = if code == 0 { IterationOutcome::Exited } else { IterationOutcome::Failed };
        self.progress.iterations.push(IterationRecord {
            step: step.name.clone(),
            iteration: 1,
            started_at,
            duration_ms,
            outcome,
            exit_code: Some(code),
            completion_signal: None,
            commits: Vec::new(),
            prompt: crate::record::kept_prompt(prompt.unwrap_or_default()),
            session_id,
            usage: None,
            tool_calls: Vec::new(),
            tool_calls_omitted: 0,
            agent_error: None,
            transcript,
            transcript_warning: None,
            model: None,
        });
    }

    /// The first message of an interactive session: the step's prompt rendered, if it has one.
    async fn first_prompt(
        &mut self,
        step: &crate::manifest::plan::StepPlan,
        workspace: &Workspace,
        sandbox: &dyn SandboxHandle,
    ) -> Result<Option<String>, Error> {
        if step.prompt.template.trim().is_empty() {
            return Ok(None);
        }
        let pre = &workspace.pre;
        let mut values = step.prompt.args.clone();
        values.insert("BRANCH".into(), pre.branch.clone());
        values.insert("BASE_BRANCH".into(), pre.base_branch.clone().unwrap_or_default());
        values.insert("RUN_ID".into(), self.run_id.clone());
        values.insert("NAME".into(), self.plan.name.clone());
        values.insert("ITERATION".into(), "1".into());
        values.insert("MAX_ITERATIONS".into(), "1".into());
        values.insert("ATTEMPT".into(), "1".into());
        let mut rendered = String::new();
        for piece in crate::manifest::prompt::pieces(&step.prompt.template) {
            match piece {
                crate::manifest::prompt::Piece::Text(text) => {
                    rendered.push_str(&crate::manifest::prompt::render(text, &values));
                }
                crate::manifest::prompt::Piece::Command(cmd) => {
                    let cmd = crate::manifest::prompt::render(cmd, &values);
                    let output = self.hooks.prompt_command(&cmd, 1, sandbox, &mut self.events, &mut self.abort).await?;
                    rendered.push_str(&output);
                }
            }
        }
        Ok(Some(rendered))
    }
}

/// How the session went, for its record.
struct Ran<'a> {
    /// Where the agent ran (in a sandbox, its copy of the worktree).
    cwd: &'a Path,
    started: std::time::SystemTime,
    started_at: String,
    code: i32,
    prompt: Option<&'a str>,
}
