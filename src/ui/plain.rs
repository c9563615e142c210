//! Plain timestamped lines on stderr, for CI logs and pipes: no cursor movement, no spinner.

use super::{summary_lines, Event, Reporter};
use std::io::Write;

pub struct PlainReporter {
    stderr: std::io::Stderr,
}

impl PlainReporter {
    pub fn new() -> Self {
        PlainReporter { stderr: std::io::stderr() }
    }

    fn line(&mut self, text: &str) {
        let mut out = self.stderr.lock();
        let _ = writeln!(out, "{} {}", clock(), super::for_terminal(text));
    }
}

impl Default for PlainReporter {
    fn default() -> Self {
        Self::new()
    }
}

/// UTC wall clock, `HH:MM:SS`.
pub(crate) fn clock() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("{:02}:{:02}:{:02}", secs / 3600 % 24, secs / 60 % 60, secs % 60)
}

impl Reporter for PlainReporter {
    fn report(&mut self, run_id: &str, event: &Event<'_>) {
        match event {
            Event::RunStarted { kind, name, agent, strategy, branch, worktree, .. } => {
                let command = match kind {
                    crate::record::RunKind::Run => "run",
                    crate::record::RunKind::Interactive => "interactive",
                };
                self.line(&format!(
                    "eden {command} `{name}` ({run_id}): agent {}, strategy {strategy}, branch `{branch}`",
                    agent.as_str()
                ));
                self.line(&format!("worktree {}", worktree.display()));
            }
            Event::Info { message } => self.line(message),
            Event::Warning { message } => self.line(&format!("warning: {message}")),
            Event::IterationStarted { iteration, max_iterations } => {
                self.line(&format!("iteration {iteration}/{max_iterations} started"));
            }
            Event::Prompt { .. } => {}
            Event::AgentText { text, .. } => self.line(&format!("| {text}")),
            Event::AgentStderr { text, .. } => self.line(&format!("! {text}")),
            Event::IdleWarning { silent_secs, .. } => {
                self.line(&format!("warning: no output from the agent for {silent_secs}s"));
            }
            Event::ToolCall { name, summary, subagent, .. } => {
                let who = if *subagent { "subagent tool" } else { "tool" };
                self.line(&format!("{who} {name} {summary}"));
            }
            Event::ToolFailed { name, .. } => self.line(&format!("tool {} failed", name.unwrap_or("call"))),
            Event::Usage { .. } => {}
            Event::SessionId { session_id, .. } => self.line(&format!("session {session_id}")),
            Event::Transcript { path, bytes, .. } => {
                self.line(&format!("transcript {} ({bytes} bytes)", path.display()))
            }
            Event::AgentError { message, .. } => self.line(&format!("agent error: {message}")),
            Event::Notice { message, .. } => self.line(&format!("agent notice: {message}")),
            Event::CompletionSignal { iteration, signal } => {
                self.line(&format!("completion signal `{signal}` seen in iteration {iteration}"));
            }
            Event::Commit { sha, subject, .. } => self.line(&format!("commit {} {subject}", &sha[..sha.len().min(10)])),
            Event::IterationFinished { iteration, outcome, duration_ms, .. } => {
                self.line(&format!(
                    "iteration {iteration} finished: {} {}",
                    outcome.as_str(),
                    super::seconds(*duration_ms)
                ));
            }
            Event::Output { value, .. } => self.line(&format!("output: {value}")),
            Event::StepStarted { step, index, total, agent } => {
                self.line(&format!("step {}/{total} `{step}` started (agent {})", index + 1, agent.as_str()));
            }
            Event::StepFinished { step, status, reason } => match reason {
                Some(reason) => self.line(&format!("step `{step}` {}: {reason}", status.as_str())),
                None => self.line(&format!("step `{step}` {}", status.as_str())),
            },
            Event::HookStarted { phase, side, command, .. } => {
                self.line(&format!("hook {} {}: {command}", side.as_str(), phase.as_str()));
            }
            Event::HookOutput { text, stderr: false } => self.line(&format!("> {text}")),
            Event::HookOutput { text, stderr: true } => self.line(&format!("! {text}")),
            Event::HookFinished { phase, outcome, duration_ms, .. } => {
                self.line(&format!(
                    "hook {} finished: {} {}",
                    phase.as_str(),
                    outcome.as_str(),
                    super::seconds(*duration_ms)
                ));
            }
            Event::RunFinished { record } => {
                for line in summary_lines(record) {
                    self.line(&line);
                }
            }
        }
    }
}
