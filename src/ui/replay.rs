//! `eden sessions show`: a run told as text — from its log (every event as it happened), or
//! from its record when it has no log. Long prompts, texts and tool summaries are cut unless
//! `full`.

use crate::agent::Usage;
use crate::record::{RunRecord, RunStatus};
use crate::report::{Event, Logged};
use std::fmt::Write as _;

/// Lines of a prompt or a hook's output shown when not `full`.
const PROMPT_LINES: usize = 12;
const SUMMARY_CHARS: usize = 160;
/// The longest line of a prompt, text or output shown when not `full`.
const LINE_CHARS: usize = 2000;

pub(crate) fn from_log(log: &str, record: &RunRecord, full: bool) -> String {
    let mut out = header(record);
    let mut text_open = false;
    // An agent reports its usage many times an iteration (a running total): the last is told,
    // once, where the iteration ends.
    let mut tokens: Option<String> = None;
    for line in log.lines() {
        let Some(logged) = Logged::parse(line) else { continue };
        if logged.run_id != record.id {
            continue;
        }
        let event = logged.event.as_ref();
        if let Event::Usage { usage, .. } = event {
            tokens = Some(format!("  tokens: {}\n", self::usage(usage)));
            continue;
        }
        if !matches!(event, Event::AgentText { .. }) && text_open {
            out.push('\n');
            text_open = false;
        }
        if matches!(event, Event::IterationFinished { .. } | Event::IterationStarted { .. } | Event::StepStarted { .. })
        {
            out.push_str(&tokens.take().unwrap_or_default());
        }
        if let Event::AgentText { text, .. } = event {
            if !text_open {
                out.push_str("agent:\n");
                text_open = true;
            }
            out.push_str(&indented(text, usize::MAX, full));
        } else {
            out.push_str(&told(event, full));
        }
    }
    out.push_str(&tokens.take().unwrap_or_default());
    out.push_str(&footer(record));
    out
}

/// An event (other than the agent's text) as `eden sessions show` tells it; empty for the
/// events it leaves out.
fn told(event: &Event<'_>, full: bool) -> String {
    let took = |ms: u64| crate::values::format_duration(std::time::Duration::from_millis(ms));
    let prompt_lines = if full { usize::MAX } else { PROMPT_LINES };
    match event {
        Event::StepStarted { step, index, total, agent } => {
            format!("\n═══ step {step} ({}/{total}, {})\n", index + 1, agent.as_str())
        }
        Event::IterationStarted { iteration, max_iterations } => {
            format!("\n── iteration {iteration}/{max_iterations}\n")
        }
        Event::Prompt { text, .. } => format!("prompt:\n{}", indented(text, prompt_lines, full)),
        Event::ToolCall { name, summary, subagent, .. } => {
            let sub = if *subagent { " (subagent)" } else { "" };
            format!("  ▸ {name} {}{sub}\n", cut(summary, full))
        }
        Event::ToolFailed { name, reason, .. } => {
            let why = reason.as_ref().map(|reason| format!(": {}", cut(reason, full))).unwrap_or_default();
            format!("  ✗ {} failed{why}\n", name.as_deref().unwrap_or("tool call"))
        }
        Event::AgentStderr { text, .. } => format!("  stderr: {}\n", cut(text, full)),
        Event::AgentError { message, kind, .. } => format!("  error ({}): {message}\n", kind.as_str()),
        Event::Commit { sha, subject, .. } => format!("  commit {} {subject}\n", sha.get(..10).unwrap_or(sha)),
        Event::CompletionSignal { signal, .. } => format!("  completion signal {signal}\n"),
        Event::Transcript { path, .. } => format!("  transcript {}\n", path.display()),
        Event::SessionId { session_id, .. } => format!("  session {session_id}\n"),
        Event::IterationFinished { iteration, outcome, exit_code, duration_ms } => {
            let code = exit_code.map(|c| format!(", exit {c}")).unwrap_or_default();
            format!("── iteration {iteration} {}{code} ({})\n", outcome.as_str(), took(*duration_ms))
        }
        Event::HookStarted { phase, side, command, .. } => {
            format!("hook {} ({}): {command}\n", phase.as_str(), side.as_str())
        }
        Event::HookOutput { text, .. } => indented(text, prompt_lines, full),
        Event::HookFinished { outcome, duration_ms, .. } => {
            format!("  → {} ({})\n", outcome.as_str(), took(*duration_ms))
        }
        Event::CheckStarted { name, command, .. } => format!("check {name}: {command}\n"),
        Event::CheckFinished { outcome, exit_code, duration_ms, .. } => {
            let code = exit_code.filter(|code| *code != 0).map(|code| format!(", exit {code}")).unwrap_or_default();
            format!("  → {}{code} ({})\n", outcome.as_str(), took(*duration_ms))
        }
        Event::Output { value, .. } => format!("output: {value}\n"),
        Event::Warning { message } => format!("warning: {message}\n"),
        Event::Notice { message, .. }
        | Event::Info { message }
        | Event::SandboxStarted { message, .. }
        | Event::Merged { message, .. } => {
            format!("{message}\n")
        }
        Event::StepFinished { step, status, .. } => format!("═══ step {step}: {}\n", status.as_str()),
        Event::ProviderRequest { method, host, path, duration_ms, in_flight: true, .. } => {
            format!(
                "provider: {method} {host}{path} → no answer yet: the agent was stopped {} in\n",
                took(*duration_ms)
            )
        }
        Event::ProviderRequest { method, host, path, status, bytes_up, bytes_down, duration_ms, refused, .. } => {
            let status = status.map_or("-".to_owned(), |status| status.to_string());
            let why = refused.as_ref().map(|why| format!(" ({why})")).unwrap_or_default();
            format!(
                "provider: {method} {host}{path} → {status}, {bytes_up} B up, {bytes_down} B down, {}{why}\n",
                took(*duration_ms)
            )
        }
        _ => String::new(),
    }
}

/// Without a log: what the record keeps (prompts cut at 4 KiB, tool calls, usage, outcomes).
pub(crate) fn from_record(record: &RunRecord, full: bool) -> String {
    let mut out = header(record);
    out.push_str("(no log for this run: replayed from its record, without the agent's text)\n");
    for iteration in &record.iterations {
        let _ = writeln!(out, "\n── {} iteration {}", iteration.step, iteration.iteration);
        out.push_str("prompt:\n");
        out.push_str(&indented(&iteration.prompt, if full { usize::MAX } else { PROMPT_LINES }, full));
        if iteration.tool_calls_omitted > 0 {
            let _ =
                writeln!(out, "  … {} earlier tool calls (the record keeps the latest)", iteration.tool_calls_omitted);
        }
        for call in &iteration.tool_calls {
            let mark = if call.ok == Some(false) { "✗" } else { "▸" };
            let _ = writeln!(out, "  {mark} {} {}", call.name, cut(&call.summary, full));
        }
        if let Some(usage) = &iteration.usage {
            let _ = writeln!(out, "  tokens: {}", self::usage(usage));
        }
        if let Some(error) = &iteration.agent_error {
            let _ = writeln!(out, "  error: {}", error.message);
        }
        for commit in &iteration.commits {
            let _ = writeln!(out, "  commit {}", commit.get(..10).unwrap_or(commit));
        }
        let code = iteration.exit_code.map(|c| format!(", exit {c}")).unwrap_or_default();
        let _ = writeln!(out, "── iteration {} {}{code}", iteration.iteration, iteration.outcome.as_str());
    }
    for hook in &record.hooks {
        let _ = writeln!(out, "hook {:?} {:?}: {} → {}", hook.phase, hook.side, hook.command, hook.outcome.as_str());
    }
    out.push_str(&footer(record));
    out
}

fn header(record: &RunRecord) -> String {
    let agents: Vec<&str> = record.steps.iter().map(|s| s.agent.as_str()).collect();
    let mut out = format!("run {} · {} · {}\n", record.id, record.name, agents.join(", "));
    let _ = writeln!(
        out,
        "started {} · sandbox {} · strategy {} · branch {}{}",
        record.started_at,
        record.sandbox.as_str(),
        record.strategy.as_str(),
        record.branch,
        record.base_branch.as_ref().map(|b| format!(" (from {b})")).unwrap_or_default()
    );
    out
}

fn footer(record: &RunRecord) -> String {
    let mut out = String::from("\n");
    let status = match (record.status, record.exit_reason) {
        (RunStatus::Finished, Some(reason)) => reason.as_str().to_owned(),
        (status, _) => format!("{:?}", status).to_lowercase(),
    };
    let took = crate::values::format_duration(std::time::Duration::from_millis(record.duration_ms));
    let code = record.exit_code.map(|c| format!(", exit {c}")).unwrap_or_default();
    let _ = writeln!(out, "ended: {status}{code} after {} iteration(s) ({took})", record.iterations.len());
    if let Some(error) = &record.error {
        let _ = writeln!(out, "error: {}", error.message);
        if let Some(hint) = &error.hint {
            let _ = writeln!(out, "hint: {hint}");
        }
    }
    match (&record.merged_into, &record.preserved_branch) {
        (Some(base), _) => {
            let landed = record.merged_commits.map_or(record.commits.len(), |n| n as usize);
            let _ = writeln!(out, "{landed} commit(s) merged into `{base}`");
        }
        (None, Some(branch)) => {
            let _ = writeln!(out, "{} commit(s) kept on branch `{branch}`", record.commits.len());
        }
        (None, None) => {
            let _ = writeln!(out, "{} commit(s)", record.commits.len());
        }
    }
    if let Some(worktree) = &record.preserved_worktree {
        let _ = writeln!(out, "worktree kept: {}", worktree.display());
    }
    for line in super::pull_request_lines(record) {
        let _ = writeln!(out, "{line}");
    }
    // What was done with it since: the error and hint above are as the run ended.
    for later in &record.later {
        let _ = writeln!(out, "{}", later.said());
    }
    if let Some(usage) = &record.usage {
        let _ = writeln!(out, "tokens: {}", self::usage(usage));
    }
    out
}

fn usage(usage: &Usage) -> String {
    let mut text = format!(
        "{} in · {} out · {} cache read · {} cache write",
        usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens
    );
    if let Some(cost) = usage.cost_usd {
        let _ = write!(text, " · ${cost:.4}");
    }
    text
}

/// Each line indented by four spaces, at most `max_lines` of them.
/// `text` indented, at most `max_lines` lines, each cut at `LINE_CHARS` characters unless `full`.
fn indented(text: &str, max_lines: usize, full: bool) -> String {
    let lines: Vec<&str> = text.trim_end_matches('\n').lines().collect();
    let mut out = String::new();
    for line in lines.iter().take(max_lines) {
        let line = super::terminal::neutralize(line);
        match line.char_indices().nth(LINE_CHARS).filter(|_| !full) {
            Some((cut_at, _)) => {
                let more = line[cut_at..].chars().count();
                let _ = writeln!(out, "    {}… ({more} more character(s))", &line[..cut_at]);
            }
            None => {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    if lines.len() > max_lines {
        let _ = writeln!(out, "    … {} more line(s) (`--full` shows all)", lines.len() - max_lines);
    }
    out
}

fn cut(text: &str, full: bool) -> String {
    let text = super::terminal::neutralize(text);
    if full || text.chars().count() <= SUMMARY_CHARS {
        return text.into_owned();
    }
    let kept: String = text.chars().take(SUMMARY_CHARS).collect();
    format!("{kept}…")
}
