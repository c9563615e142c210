//! `eden sessions show`: a run told as text — from its log (every event as it happened), or
//! from its record when it has no log. Long prompts, texts and tool summaries are cut unless
//! `full`.

use crate::record::{RunRecord, RunStatus};
use serde_json::Value;
use std::fmt::Write as _;

/// Lines of a prompt or a hook's output shown when not `full`.
const PROMPT_LINES: usize = 12;
const SUMMARY_CHARS: usize = 160;
/// The longest line of a prompt, text or output shown when not `full`.
const LINE_CHARS: usize = 2000;

pub fn from_log(log: &str, record: &RunRecord, full: bool) -> String {
    let mut out = header(record);
    let mut text_open = false;
    for line in log.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else { continue };
        if event["run_id"].as_str().is_some_and(|id| id != record.id) {
            continue;
        }
        let kind = event["event"].as_str().unwrap_or("");
        if kind != "agent_text" && text_open {
            out.push('\n');
            text_open = false;
        }
        let s = |key: &str| event[key].as_str().unwrap_or("").to_owned();
        let n = |key: &str| event[key].as_u64().unwrap_or(0);
        match kind {
            "step_started" => {
                let _ = writeln!(out, "\n═══ step {} ({}/{}, {})", s("step"), n("index") + 1, n("total"), s("agent"));
            }
            "iteration_started" => {
                let _ = writeln!(out, "\n── iteration {}/{}", n("iteration"), n("max_iterations"));
            }
            "prompt" => {
                out.push_str("prompt:\n");
                out.push_str(&indented(&s("text"), if full { usize::MAX } else { PROMPT_LINES }, full));
            }
            "agent_text" => {
                if !text_open {
                    out.push_str("agent:\n");
                    text_open = true;
                }
                out.push_str(&indented(&s("text"), usize::MAX, full));
            }
            "tool_call" => {
                let sub = if event["subagent"] == true { " (subagent)" } else { "" };
                let _ = writeln!(out, "  ▸ {} {}{sub}", s("name"), cut(&s("summary"), full));
            }
            "tool_failed" => {
                let why = event["reason"].as_str().map(|reason| format!(": {}", cut(reason, full))).unwrap_or_default();
                let _ = writeln!(out, "  ✗ {} failed{why}", event["name"].as_str().unwrap_or("tool call"));
            }
            "agent_stderr" => {
                let _ = writeln!(out, "  stderr: {}", cut(&s("text"), full));
            }
            "usage" => {
                let _ = writeln!(out, "  tokens: {}", usage(&event["usage"]));
            }
            "agent_error" => {
                let _ = writeln!(out, "  error ({}): {}", s("kind"), s("message"));
            }
            "commit" => {
                let sha = s("sha");
                let _ = writeln!(out, "  commit {} {}", sha.get(..10).unwrap_or(&sha), s("subject"));
            }
            "completion_signal" => {
                let _ = writeln!(out, "  completion signal {}", s("signal"));
            }
            "transcript" => {
                let _ = writeln!(out, "  transcript {}", s("path"));
            }
            "session_id" => {
                let _ = writeln!(out, "  session {}", s("session_id"));
            }
            "iteration_finished" => {
                let took = crate::values::format_duration(std::time::Duration::from_millis(n("duration_ms")));
                let code = event["exit_code"].as_i64().map(|c| format!(", exit {c}")).unwrap_or_default();
                let _ = writeln!(out, "── iteration {} {}{code} ({took})", n("iteration"), s("outcome"));
            }
            "hook_started" => {
                let _ = writeln!(out, "hook {} ({}): {}", s("phase"), s("side"), s("command"));
            }
            "hook_output" => {
                out.push_str(&indented(&s("text"), if full { usize::MAX } else { PROMPT_LINES }, full));
            }
            "hook_finished" => {
                let took = crate::values::format_duration(std::time::Duration::from_millis(n("duration_ms")));
                let _ = writeln!(out, "  → {} ({took})", s("outcome"));
            }
            "output" => {
                let _ = writeln!(out, "output: {}", event["value"]);
            }
            "warning" => {
                let _ = writeln!(out, "warning: {}", s("message"));
            }
            "notice" | "info" | "merged" => {
                let _ = writeln!(out, "{}", s("message"));
            }
            "step_finished" => {
                let _ = writeln!(out, "═══ step {}: {}", s("step"), s("status"));
            }
            _ => {}
        }
    }
    out.push_str(&footer(record));
    out
}

/// Without a log: what the record keeps (prompts cut at 4 KiB, tool calls, usage, outcomes).
pub fn from_record(record: &RunRecord, full: bool) -> String {
    let mut out = header(record);
    out.push_str("(no log for this run: replayed from its record, without the agent's text)\n");
    for iteration in &record.iterations {
        let _ = writeln!(out, "\n── {} iteration {}", iteration.step, iteration.iteration);
        out.push_str("prompt:\n");
        out.push_str(&indented(&iteration.prompt, if full { usize::MAX } else { PROMPT_LINES }, full));
        for call in &iteration.tool_calls {
            let mark = if call.ok == Some(false) { "✗" } else { "▸" };
            let _ = writeln!(out, "  {mark} {} {}", call.name, cut(&call.summary, full));
        }
        if let Some(usage) = &iteration.usage {
            let _ = writeln!(out, "  tokens: {}", self::usage(&serde_json::to_value(usage).unwrap_or_default()));
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
        record.sandbox,
        record.strategy,
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
    if let Some(usage) = &record.usage {
        let _ = writeln!(out, "tokens: {}", self::usage(&serde_json::to_value(usage).unwrap_or_default()));
    }
    out
}

fn usage(usage: &Value) -> String {
    let n = |key: &str| usage[key].as_u64().unwrap_or(0);
    let mut text = format!(
        "{} in · {} out · {} cache read · {} cache write",
        n("input_tokens"),
        n("output_tokens"),
        n("cache_read_tokens"),
        n("cache_write_tokens")
    );
    if let Some(cost) = usage["cost_usd"].as_f64() {
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
