//! The live terminal view: a spinner line with the iteration, elapsed time and the agent's
//! latest line, with the agent's output streaming above it. The only module that knows
//! indicatif.

use super::{summary_lines, Event, Reporter};
use console::style;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Duration;

pub struct LiveReporter {
    bar: ProgressBar,
    iteration: String,
}

impl LiveReporter {
    pub fn new() -> Self {
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
    fn report(&mut self, event: &Event<'_>) {
        let bar = &self.bar;
        match event {
            Event::RunStarted { run_id, name, agent, strategy, branch, worktree, .. } => {
                bar.println(format!(
                    "{} {} {}",
                    style("eden").green().bold(),
                    style(name).bold(),
                    style(format!("({run_id})")).dim()
                ));
                bar.println(format!("  agent {agent} · strategy {strategy} · branch {}", style(branch).cyan()));
                bar.println(format!("  worktree {}", style(worktree.display()).dim()));
                bar.set_prefix("starting");
            }
            Event::Info { message } => bar.println(format!("{} {message}", style("·").dim())),
            Event::Warning { message } => bar.println(format!("{} {message}", style("warning:").yellow().bold())),
            Event::IterationStarted { iteration, max_iterations } => {
                self.iteration = format!("iteration {iteration}/{max_iterations}");
                bar.println(format!("{} {}", style("▶").cyan(), style(&self.iteration).bold()));
                bar.set_prefix(self.iteration.clone());
                bar.set_message("");
            }
            Event::Prompt { .. } => {}
            Event::AgentText { text, .. } => {
                bar.println(format!("  {text}"));
                bar.set_message(text.to_string());
            }
            Event::AgentStderr { text, .. } => bar.println(format!("  {}", style(text).dim())),
            Event::IdleWarning { silent_secs, .. } => {
                bar.println(format!(
                    "{} no output from the agent for {silent_secs}s",
                    style("warning:").yellow().bold()
                ));
            }
            Event::ToolCall { name, summary, subagent, .. } => {
                let line = format!("  {} {} {summary}", style("⏺").cyan(), style(name).bold());
                bar.println(if *subagent { style(line).dim().to_string() } else { line });
                bar.set_message(format!("{name} {summary}"));
            }
            Event::ToolFailed { name, .. } => {
                bar.println(format!("  {} {} failed", style("✗").red(), name.unwrap_or("tool call")));
            }
            Event::Usage { usage, .. } => {
                bar.set_prefix(format!("{} · {} tokens", self.iteration, super::thousands(usage.total_tokens())));
            }
            Event::SessionId { .. } => {}
            Event::AgentError { message, .. } => {
                bar.println(format!("{} {message}", style("agent error:").red().bold()));
            }
            Event::Notice { message, .. } => bar.println(format!("  {}", style(message).dim())),
            Event::CompletionSignal { signal, .. } => {
                bar.println(format!("{} completion signal {}", style("✓").green(), style(signal).bold()));
            }
            Event::Commit { sha, subject, .. } => {
                bar.println(format!("  {} {} {subject}", style("commit").yellow(), &sha[..sha.len().min(10)]));
            }
            Event::IterationFinished { iteration, outcome, duration_ms, .. } => {
                bar.println(format!(
                    "{} iteration {iteration}: {outcome} {}",
                    style("■").dim(),
                    style(format!("({:.1}s)", *duration_ms as f64 / 1000.0)).dim()
                ));
            }
            Event::HookStarted { phase, side, command, .. } => {
                bar.println(format!(
                    "{} {} {command}",
                    style("hook").magenta(),
                    style(format!("{side} {phase}")).dim()
                ));
                bar.set_message(format!("hook {command}"));
            }
            Event::HookOutput { text, stderr } => {
                let text = if *stderr { style(*text).dim().to_string() } else { text.to_string() };
                bar.println(format!("  {text}"));
            }
            Event::HookFinished { outcome, duration_ms, .. } if *outcome != "ok" => {
                bar.println(format!(
                    "  {} hook {outcome} {}",
                    style("✗").red(),
                    style(format!("({:.1}s)", *duration_ms as f64 / 1000.0)).dim()
                ));
            }
            Event::HookFinished { .. } => {}
            Event::RunFinished { record } => {
                bar.finish_and_clear();
                let ok = record.exit_code == 0;
                for (i, line) in summary_lines(record).into_iter().enumerate() {
                    if i == 0 {
                        let mark = if ok { style("✓").green().bold() } else { style("✗").red().bold() };
                        eprintln!("{mark} {line}");
                    } else {
                        eprintln!("  {line}");
                    }
                }
            }
        }
    }
}

impl Drop for LiveReporter {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
