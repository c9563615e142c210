//! Plain timestamped lines on stderr, for CI logs and pipes: no cursor movement, no spinner.
//!
//! The agent's stream is buffered and written out by a `Ticked` thread (at most 50 ms late);
//! the run's own milestones and its end are written immediately.

use super::ticker::Ticked;
use super::{summary_lines, Event, Reporter};
use std::io::{BufWriter, Write};

pub(crate) struct PlainReporter {
    out: Ticked<BufWriter<std::io::Stderr>>,
    /// One line's text, reused.
    line: String,
    /// The time of day an event being told later happened (`report_at`), for its lines.
    at: Option<String>,
}

impl PlainReporter {
    pub(crate) fn new() -> Self {
        let out = Ticked::new(BufWriter::with_capacity(64 * 1024, std::io::stderr()), |out| {
            if !out.buffer().is_empty() {
                let _ = out.flush();
            }
        });
        PlainReporter { out, line: String::new(), at: None }
    }

    fn line(&mut self, text: &str) {
        use std::fmt::Write as _;
        self.line.clear();
        let stamp = self.at.clone().unwrap_or_else(clock);
        let _ = writeln!(self.line, "{stamp} {}", super::for_terminal(text));
        let _ = self.out.lock().write_all(self.line.as_bytes());
    }

    fn flush(&mut self) {
        let _ = self.out.lock().flush();
    }
}

impl Drop for PlainReporter {
    fn drop(&mut self) {
        self.flush();
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
    fn report_at(&mut self, run_id: &str, event: &Event<'_>, at: &str) {
        // `2026-11-26T10:18:22.123Z`: its time of day, as `clock` gives it (UTC).
        self.at = at.get(11..19).map(str::to_owned);
        self.report(run_id, event);
        self.at = None;
    }

    fn report(&mut self, run_id: &str, event: &Event<'_>) {
        self.show(run_id, event);
        // The stream's own lines (and what prints nothing) wait for the next tick; the run's
        // milestones are written now.
        if !event.is_stream() {
            self.flush();
        }
    }
}

impl PlainReporter {
    fn show(&mut self, run_id: &str, event: &Event<'_>) {
        let text = match event {
            Event::RunStarted { kind, name, agent, strategy, branch, worktree, .. } => {
                let command = match kind {
                    crate::record::RunKind::Run => "run",
                    crate::record::RunKind::Interactive => "interactive",
                };
                self.line(&format!(
                    "eden {command} `{name}` ({run_id}): agent {}, strategy {strategy}, branch `{branch}`",
                    agent.as_str()
                ));
                Some(format!("worktree {}", worktree.display()))
            }
            Event::RunFinished { record } => {
                for line in summary_lines(record) {
                    self.line(&line);
                }
                None
            }
            Event::Info { message } | Event::SandboxStarted { message, .. } | Event::Merged { message, .. } => {
                Some(message.to_string())
            }
            Event::Warning { message } => Some(format!("warning: {message}")),
            Event::Prompt { .. } | Event::WorkBack { .. } | Event::Pushed { .. } | Event::Usage { .. } => None,
            Event::IterationStarted { .. }
            | Event::IterationFinished { .. }
            | Event::UsageLimit { .. }
            | Event::SessionId { .. }
            | Event::ProviderRequest { .. }
            | Event::Transcript { .. } => iteration_text(event),
            Event::AgentText { .. }
            | Event::AgentStderr { .. }
            | Event::IdleWarning { .. }
            | Event::ToolCall { .. }
            | Event::ToolFailed { .. }
            | Event::AgentError { .. }
            | Event::Notice { .. }
            | Event::CompletionSignal { .. }
            | Event::Commit { .. }
            | Event::Output { .. } => agent_text(event),
            Event::StepStarted { .. }
            | Event::StepFinished { .. }
            | Event::HookStarted { .. }
            | Event::HookOutput { .. }
            | Event::HookFinished { .. }
            | Event::CheckStarted { .. }
            | Event::CheckFinished { .. } => step_text(event),
        };
        if let Some(text) = text {
            self.line(&text);
        }
    }
}

/// An iteration's bounds and what eden saw of it from outside the agent's output.
fn iteration_text(event: &Event<'_>) -> Option<String> {
    Some(match event {
        Event::IterationStarted { iteration, max_iterations } => {
            format!("iteration {iteration}/{max_iterations} started")
        }
        Event::IterationFinished { iteration, outcome, duration_ms, .. } => {
            format!("iteration {iteration} finished: {} {}", outcome.as_str(), super::seconds(*duration_ms))
        }
        Event::UsageLimit { wait_secs, until, .. } => format!(
            "usage limit: waiting {} (until {until}), then going on in the same session",
            crate::values::format_duration(std::time::Duration::from_secs(*wait_secs))
        ),
        Event::SessionId { session_id, .. } => format!("session {session_id}"),
        Event::ProviderRequest { method, host, path, duration_ms, in_flight: true, .. } => {
            format!("provider {method} {host}{path} → no answer yet: the agent was stopped ({duration_ms} ms in)")
        }
        Event::ProviderRequest { method, host, path, status, duration_ms, refused, .. } => {
            let status = status.map_or("-".to_owned(), |status| status.to_string());
            let why = refused.as_ref().map(|why| format!(": {why}")).unwrap_or_default();
            format!("provider {method} {host}{path} → {status} ({duration_ms} ms){why}")
        }
        Event::Transcript { path, bytes, .. } => format!("transcript {} ({bytes} bytes)", path.display()),
        _ => return None,
    })
}

/// What the agent printed and did.
fn agent_text(event: &Event<'_>) -> Option<String> {
    Some(match event {
        Event::AgentText { text, .. } => format!("| {text}"),
        Event::AgentStderr { text, .. } => format!("! {text}"),
        Event::IdleWarning { silent_secs, .. } => format!("warning: no output from the agent for {silent_secs}s"),
        Event::ToolCall { name, summary, subagent, .. } => {
            let who = if *subagent { "subagent tool" } else { "tool" };
            format!("{who} {name} {summary}")
        }
        Event::ToolFailed { name, reason, .. } => {
            let why = reason.as_ref().map(|reason| format!(": {reason}")).unwrap_or_default();
            format!("tool {} failed{why}", name.as_deref().unwrap_or("call"))
        }
        Event::AgentError { message, .. } => format!("agent error: {message}"),
        Event::Notice { message, .. } => format!("agent notice: {message}"),
        Event::CompletionSignal { iteration, signal } => {
            format!("completion signal `{signal}` seen in iteration {iteration}")
        }
        Event::Commit { sha, subject, .. } => format!("commit {} {subject}", &sha[..sha.len().min(10)]),
        Event::Output { value, .. } => format!("output: {value}"),
        _ => return None,
    })
}

/// Steps, hooks and checks.
fn step_text(event: &Event<'_>) -> Option<String> {
    Some(match event {
        Event::StepStarted { step, index, total, agent } => {
            format!("step {}/{total} `{step}` started (agent {})", index + 1, agent.as_str())
        }
        Event::StepFinished { step, status, reason: Some(reason) } => {
            format!("step `{step}` {}: {reason}", status.as_str())
        }
        Event::StepFinished { step, status, reason: None } => format!("step `{step}` {}", status.as_str()),
        Event::HookStarted { phase, side, command, .. } => {
            format!("hook {} {}: {command}", side.as_str(), phase.as_str())
        }
        Event::HookOutput { text, stderr: false } => format!("> {text}"),
        Event::HookOutput { text, stderr: true } => format!("! {text}"),
        Event::HookFinished { phase, outcome, duration_ms, .. } => {
            format!("hook {} finished: {} {}", phase.as_str(), outcome.as_str(), super::seconds(*duration_ms))
        }
        Event::CheckStarted { name, command, iteration } => format!("check {name} (iteration {iteration}): {command}"),
        Event::CheckFinished { name, outcome, exit_code, duration_ms, .. } => {
            let code = exit_code.filter(|code| *code != 0).map(|code| format!(", exit {code}")).unwrap_or_default();
            format!("check {name}: {}{code} {}", outcome.as_str(), super::seconds(*duration_ms))
        }
        _ => return None,
    })
}
