//! The live terminal view: a spinner line with the iteration, elapsed time and the agent's
//! latest line, with the agent's output streaming above it. The only module that knows
//! indicatif.

use super::{summary_lines, Event, Reporter};
use crate::record::{HookOutcome, StepStatus};
use console::style;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Duration;

pub(crate) struct LiveReporter {
    bar: ProgressBar,
    iteration: String,
}

impl LiveReporter {
    pub(crate) fn new() -> Self {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner:.cyan} {prefix:.bold} {elapsed_precise:.dim} {wide_msg}")
                .expect("valid template")
                .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ "),
        );
        bar.enable_steady_tick(Duration::from_millis(100));
        LiveReporter { bar, iteration: String::new() }
    }
}

impl Default for LiveReporter {
    fn default() -> Self {
        Self::new()
    }
}

impl Reporter for LiveReporter {
    fn report(&mut self, run_id: &str, event: &Event<'_>) {
        let bar = &self.bar;
        match event {
            Event::RunStarted { name, agent, strategy, branch, worktree, .. } => {
                say(
                    bar,
                    format!(
                        "{} {} {}",
                        style("eden").green().bold(),
                        style(name).bold(),
                        style(format!("({run_id})")).dim()
                    ),
                );
                say(bar, format!("  agent {} · strategy {strategy} · branch {}", agent.as_str(), style(branch).cyan()));
                say(bar, format!("  worktree {}", style(worktree.display()).dim()));
                bar.set_prefix("starting");
            }
            Event::Info { message } | Event::SandboxStarted { message, .. } | Event::Merged { message, .. } => {
                say(bar, format!("{} {message}", style("·").dim()))
            }
            Event::Warning { message } => say(bar, format!("{} {message}", style("warning:").yellow().bold())),
            Event::IterationStarted { .. } | Event::UsageLimit { .. } | Event::Usage { .. } => self.iteration(event),
            Event::Prompt { .. }
            | Event::SessionId { .. }
            | Event::Transcript { .. }
            | Event::ProviderRequest { .. }
            | Event::WorkBack { .. }
            | Event::Pushed { .. } => {}
            Event::AgentText { .. }
            | Event::AgentStderr { .. }
            | Event::IdleWarning { .. }
            | Event::ToolCall { .. }
            | Event::ToolFailed { .. }
            | Event::AgentError { .. }
            | Event::Notice { .. }
            | Event::CompletionSignal { .. }
            | Event::Commit { .. }
            | Event::IterationFinished { .. }
            | Event::Output { .. } => agent_line(bar, event),
            Event::StepStarted { .. }
            | Event::StepFinished { .. }
            | Event::HookStarted { .. }
            | Event::HookOutput { .. }
            | Event::HookFinished { .. }
            | Event::CheckStarted { .. }
            | Event::CheckFinished { .. } => step_line(bar, event),
            Event::RunFinished { record } => {
                bar.finish_and_clear();
                let ok = record.exit_code == Some(0);
                for (i, line) in summary_lines(record).into_iter().enumerate() {
                    if i == 0 {
                        let mark = if ok { style("✓").green().bold() } else { style("✗").red().bold() };
                        eprintln!("{mark} {}", super::for_terminal(&line));
                    } else {
                        eprintln!("  {}", super::for_terminal(&line));
                    }
                }
            }
        }
    }
}

impl LiveReporter {
    /// An iteration's start, a usage limit's wait and the tokens so far: the spinner's prefix.
    fn iteration(&mut self, event: &Event<'_>) {
        let bar = &self.bar;
        match event {
            Event::IterationStarted { iteration, max_iterations } => {
                self.iteration = format!("iteration {iteration}/{max_iterations}");
                say(bar, format!("{} {}", style("▶").cyan(), style(&self.iteration).bold()));
                bar.set_prefix(self.iteration.clone());
                hint_line(bar, "");
            }
            Event::UsageLimit { wait_secs, until, .. } => {
                let wait = crate::values::format_duration(Duration::from_secs(*wait_secs));
                say(bar, format!("{} usage limit: waiting {wait} (until {until})", style("⏸").yellow()));
                // The spinner's clock counts the wait.
                bar.reset_elapsed();
                bar.set_prefix(format!("{} · usage limit, resumes at {until}", self.iteration));
            }
            Event::Usage { usage, .. } => {
                bar.set_prefix(format!("{} · {} tokens", self.iteration, super::thousands(usage.total_tokens())));
            }
            _ => {}
        }
    }
}

/// What the agent did: a line above the spinner, and its latest as the spinner's message.
fn agent_line(bar: &ProgressBar, event: &Event<'_>) {
    match event {
        Event::AgentText { text, .. } => {
            say(bar, format!("  {text}"));
            hint_line(bar, text);
        }
        Event::AgentStderr { text, .. } => say(bar, format!("  {}", style(text).dim())),
        Event::IdleWarning { silent_secs, .. } => {
            say(bar, format!("{} no output from the agent for {silent_secs}s", style("warning:").yellow().bold()));
        }
        Event::ToolCall { name, summary, subagent, .. } => {
            let line = format!("  {} {} {summary}", style("⏺").cyan(), style(name).bold());
            say(bar, if *subagent { style(line).dim().to_string() } else { line });
            hint_line(bar, format!("{name} {summary}"));
        }
        Event::ToolFailed { name, reason, .. } => {
            let why = reason.as_ref().map(|reason| format!(": {reason}")).unwrap_or_default();
            say(bar, format!("  {} {} failed{why}", style("✗").red(), name.as_deref().unwrap_or("tool call")));
        }
        Event::AgentError { message, .. } => {
            say(bar, format!("{} {message}", style("agent error:").red().bold()));
        }
        Event::Notice { message, .. } => say(bar, format!("  {}", style(message).dim())),
        Event::CompletionSignal { signal, .. } => {
            say(bar, format!("{} completion signal {}", style("✓").green(), style(signal).bold()));
        }
        Event::Commit { sha, subject, .. } => {
            say(bar, format!("  {} {} {subject}", style("commit").yellow(), &sha[..sha.len().min(10)]));
        }
        Event::IterationFinished { iteration, outcome, duration_ms, .. } => {
            say(
                bar,
                format!(
                    "{} iteration {iteration}: {} {}",
                    style("■").dim(),
                    outcome.as_str(),
                    style(super::seconds(*duration_ms)).dim()
                ),
            );
        }
        Event::Output { value, .. } => say(bar, format!("{} output {value}", style("✓").green())),
        _ => {}
    }
}

/// Steps, hooks and checks.
fn step_line(bar: &ProgressBar, event: &Event<'_>) {
    match event {
        Event::StepStarted { step, index, total, agent } => {
            say(
                bar,
                format!(
                    "{} step {}/{total} {} {}",
                    style("▶▶").cyan(),
                    index + 1,
                    style(step).bold(),
                    style(format!("({})", agent.as_str())).dim()
                ),
            );
        }
        Event::StepFinished { step, status, reason } => {
            let mark = match status {
                StepStatus::Ok => style("✓").green(),
                StepStatus::Skipped => style("–").dim(),
                StepStatus::Failed => style("✗").red(),
            };
            let reason = reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default();
            say(bar, format!("{mark} step {step} {}{reason}", status.as_str()));
        }
        Event::HookStarted { phase, side, command, .. } => {
            let place = format!("{} {}", side.as_str(), phase.as_str());
            say(bar, format!("{} {} {command}", style("hook").magenta(), style(place).dim()));
            hint_line(bar, format!("hook {command}"));
        }
        Event::HookOutput { text, stderr } => {
            let text = if *stderr { style(text).dim().to_string() } else { text.to_string() };
            say(bar, format!("  {text}"));
        }
        Event::HookFinished { outcome, duration_ms, .. } if *outcome != HookOutcome::Ok => {
            let took = style(super::seconds(*duration_ms)).dim();
            say(bar, format!("  {} hook {} {took}", style("✗").red(), outcome.as_str()));
        }
        Event::HookFinished { .. } => {}
        Event::CheckStarted { name, command, .. } => {
            say(bar, format!("{} {name} {}", style("check").magenta(), style(command).dim()));
            hint_line(bar, format!("check {name}"));
        }
        Event::CheckFinished { name, outcome, exit_code, duration_ms, .. } => {
            let took = style(super::seconds(*duration_ms)).dim();
            let code = exit_code.filter(|code| *code != 0).map(|code| format!(" (exit {code})")).unwrap_or_default();
            let mark = if *outcome == HookOutcome::Ok { style("✓").green() } else { style("✗").red() };
            say(bar, format!("  {mark} check {name} {}{code} {took}", outcome.as_str()));
        }
        _ => {}
    }
}

/// A line above the spinner, secrets redacted, escape sequences neutralized.
fn say(bar: &ProgressBar, text: impl AsRef<str>) {
    bar.println(super::for_terminal(text.as_ref()));
}

/// The spinner's message, secrets redacted, escape sequences neutralized.
fn hint_line(bar: &ProgressBar, text: impl AsRef<str>) {
    bar.set_message(super::for_terminal(text.as_ref()));
}

impl Drop for LiveReporter {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
