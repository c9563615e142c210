//! The edge where eden talks to people and scripts: the `Reporter`s the core's `Event`s go to —
//! the live terminal view (`live`), plain timestamped lines for CI (`plain`), JSON lines on
//! stdout or into the log file (`log_file`) — and the printing of errors, notes and data. Only
//! this module writes to stderr.
#![allow(clippy::print_stderr)]

pub(crate) mod batch;
pub(crate) mod github;
mod live;
mod log_file;
pub(crate) mod otlp;
mod plain;
pub(crate) mod replay;
mod terminal;
pub(crate) mod top;
pub(crate) use crate::redact::plain_line;
mod ticker;

pub(crate) use live::LiveReporter;
pub(crate) use log_file::{JsonLinesReporter, LogFileReporter};
pub(crate) use plain::PlainReporter;
use terminal::neutralize;

use crate::record::RunRecord;
pub(crate) use crate::report::{Event, Reporter};

/// How people see the run on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Display {
    Live,
    Plain,
    Quiet,
}

impl Display {
    /// Live on a terminal, plain lines otherwise (CI, pipes, and `TERM=dumb` terminals, which
    /// cannot move the cursor).
    pub(crate) fn detect(quiet: bool) -> Self {
        if quiet {
            Display::Quiet
        } else if console::Term::stderr().is_term() && !dumb_terminal() {
            Display::Live
        } else {
            Display::Plain
        }
    }

    pub(crate) fn reporter(self) -> Option<Box<dyn Reporter>> {
        match self {
            Display::Live => Some(Box::new(LiveReporter::new())),
            Display::Plain => Some(Box::new(PlainReporter::new())),
            Display::Quiet => None,
        }
    }
}

fn dumb_terminal() -> bool {
    std::env::var_os("TERM").is_some_and(|term| term == "dumb")
}

/// Honour `NO_COLOR` (any non-empty value) and `TERM=dumb` on top of console's own terminal
/// detection.
pub(crate) fn configure_colors() {
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) || dumb_terminal() {
        console::set_colors_enabled(false);
        console::set_colors_enabled_stderr(false);
    }
}

/// Text on its way to people's terminals: secrets redacted, escape sequences neutralized, and
/// in a GitHub Actions job no workflow command (`defuse`).
pub(crate) fn for_terminal(text: &str) -> String {
    let text = crate::redact::apply(text);
    let text = neutralize(&text);
    defuse(&text, false).into_owned()
}

/// Write data to stdout (secrets redacted; in a GitHub Actions job, no workflow command). A
/// reader that went away (`eden run --json | head -1`) is not an error worth a panic: the work
/// itself is over by now.
pub(crate) fn print_data(text: &str) {
    use std::io::Write;
    let text = crate::redact::apply(text);
    let json = text.trim_start().starts_with(['{', '[']);
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{}", defuse(&text, json)).and_then(|()| stdout.flush());
}

/// Are we a step of a GitHub Actions job (`GITHUB_ACTIONS=true`)?
pub(crate) fn in_actions() -> bool {
    static IN_ACTIONS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *IN_ACTIONS.get_or_init(|| std::env::var("GITHUB_ACTIONS").is_ok_and(|value| value == "true"))
}

/// In a GitHub Actions job the runner reads every line a step prints for workflow commands:
/// `::name …::` at a line's start (after whitespace) and the legacy `##[name]` anywhere, which
/// could set outputs, mask or unmask values, or stop command processing. Nothing an agent, a
/// commit or a check printed may form one in eden's output: a zero-width space goes between the
/// colons or hashes. In JSON (`json`) `##[` becomes `#\u0023[`, the same string to a parser
/// (a line of JSON never starts with `::`). Elsewhere the text is as it was.
pub(crate) fn defuse(text: &str, json: bool) -> std::borrow::Cow<'_, str> {
    if !in_actions() {
        return std::borrow::Cow::Borrowed(text);
    }
    defuse_for_actions(text, json)
}

fn defuse_for_actions(text: &str, json: bool) -> std::borrow::Cow<'_, str> {
    let starts_command = |line: &str| line.trim_start().starts_with("::");
    if !text.contains("##[") && !text.lines().any(starts_command) {
        return std::borrow::Cow::Borrowed(text);
    }
    let hashes = if json { "#\\u0023[" } else { "#\u{200b}#[" };
    let text = text.replace("##[", hashes);
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| match starts_command(line) {
            true => line.replacen("::", ":\u{200b}:", 1),
            false => line.to_owned(),
        })
        .collect();
    std::borrow::Cow::Owned(lines.join("\n"))
}

/// Bytes as they are on stdout (a completion script): data, written whole; a reader that went
/// away (`| head`) is not an error.
pub(crate) fn print_raw(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written,
    }
}

/// A line for people from a one-shot command (`init`, `image`): stderr, never stdout.
pub(crate) fn print_note(message: &str) {
    eprintln!("{}", for_terminal(message));
}

/// Print an error for people on stderr: `error: ...`, a `caused by: ...` line for each cause
/// below it, and `hint: ...`. Errors quote the agent's output, so they are neutralized like
/// everything else on the terminal.
pub(crate) fn print_error(error: &crate::error::Error) {
    let label = console::style("error:").red().bold();
    eprintln!("{label} {}", for_terminal(&error.message));
    for cause in error.causes() {
        eprintln!("  {} {}", console::style("caused by:").dim(), for_terminal(&cause));
    }
    if let Some(hint) = &error.hint {
        eprintln!("{} {}", console::style("hint:").cyan().bold(), for_terminal(hint));
    }
    for more in &error.also {
        print_error(more);
    }
}

/// The end-of-run summary lines shared by the live and plain displays.
pub(crate) fn summary_lines(record: &RunRecord) -> Vec<String> {
    let mut lines = Vec::new();
    let iterations = record.iterations.len();
    let elapsed = crate::values::format_duration(std::time::Duration::from_millis(record.duration_ms));
    let ran = record.steps.iter().filter(|step| step.status != crate::record::StepStatus::Skipped).count();
    let exit_reason = record.exit_reason.map_or("running", |reason| reason.as_str());
    let head = match (&record.completion_signal, record.exit_code.unwrap_or(-1)) {
        (_, 0) if record.steps.len() > 1 => {
            format!("finished {ran} of {} step(s), {iterations} iteration(s) ({elapsed})", record.steps.len())
        }
        (_, 0) if record.kind == crate::record::RunKind::Interactive => format!("the session ended ({elapsed})"),
        (Some(_), 0) => {
            format!("completed in iteration {iterations}/{} ({elapsed})", record.max_iterations.max(iterations as u32))
        }
        (None, 0) if record.output.is_some() => format!("finished with a valid output ({elapsed})"),
        (None, 0) => {
            format!("finished {iterations} iteration(s) without the completion signal ({elapsed})")
        }
        _ if record.kind == crate::record::RunKind::Interactive => format!("ended: {exit_reason} ({elapsed})"),
        _ => format!("ended: {exit_reason} after {iterations} iteration(s) ({elapsed})"),
    };
    lines.push(head);
    if record.steps.len() > 1 {
        let steps: Vec<String> =
            record.steps.iter().map(|step| format!("{} {}", step.name, step.status.as_str())).collect();
        lines.push(format!("steps: {}", steps.join(" · ")));
    }
    if let Some(output) = &record.output {
        let text = output.to_string();
        let shown: String = text.chars().take(200).collect();
        lines.push(format!("output: {shown}{}", if shown.len() < text.len() { "…" } else { "" }));
    }
    let commits = record.commits.len();
    match (&record.merged_into, commits) {
        (_, 0) => lines.push("no commits".to_owned()),
        (Some(target), n) => {
            let landed = record.merged_commits.map_or(n, |landed| landed as usize);
            lines.push(format!("{landed} commit(s) merged into `{target}`"))
        }
        (None, n) => lines.push(format!("{n} commit(s) on `{}`", record.branch)),
    }
    if let Some(usage) = &record.usage {
        lines.push(usage_line(usage));
    }
    if let Some(branch) = &record.preserved_branch {
        lines.push(format!("branch kept: `{branch}`"));
    }
    if let Some(worktree) = &record.preserved_worktree {
        lines.push(format!("worktree kept (uncommitted changes): {}", worktree.display()));
    }
    if let Some(pull) = &record.pull_request {
        lines.push(format!("pull request #{} ({}, {}): {}", pull.number, pull.action, pull.state, pull.url));
        for (n, round) in pull.rounds.iter().enumerate() {
            let pushed = round
                .pushed
                .as_deref()
                .map_or("nothing pushed".to_owned(), |sha| format!("pushed {}", &sha[..sha.len().min(10)]));
            lines.push(format!("  round {}: {} → run {}, {pushed}", n + 1, round.trigger.join(", "), round.run));
        }
    }
    // What was done with it since: the lines above are as the run ended.
    lines.extend(record.later.iter().map(crate::record::LaterRecord::said));
    if let Some(log) = &record.log {
        lines.push(format!("log: {}", log.display()));
    }
    lines.push(format!("run record: {}", record.record_path.display()));
    lines
}

/// The run's pull request and its rounds, for the end of a run and `eden sessions show`.
pub(crate) fn pull_request_lines(record: &RunRecord) -> Vec<String> {
    let Some(pull) = &record.pull_request else { return Vec::new() };
    let mut lines = vec![format!("pull request #{} ({}, {}): {}", pull.number, pull.action, pull.state, pull.url)];
    for (n, round) in pull.rounds.iter().enumerate() {
        let pushed = match round.pushed.as_deref() {
            Some(sha) => format!("pushed {}", &sha[..sha.len().min(10)]),
            None => "nothing pushed".to_owned(),
        };
        lines.push(format!("  round {}: {} → run {}, {pushed}", n + 1, round.trigger.join(", "), round.run));
    }
    lines
}

/// `(1.5s)`: a duration in milliseconds as the displays show it.
pub(crate) fn seconds(duration_ms: u64) -> String {
    format!("({:.1}s)", duration_ms as f64 / 1000.0)
}

/// `tokens: 1,234 in · 56 out · 7,890 cache read · 0 cache write · $0.0123`
pub(crate) fn usage_line(usage: &crate::agent::Usage) -> String {
    let mut line = format!(
        "tokens: {} in · {} out · {} cache read · {} cache write",
        thousands(usage.input_tokens),
        thousands(usage.output_tokens),
        thousands(usage.cache_read_tokens),
        thousands(usage.cache_write_tokens)
    );
    if let Some(cost) = usage.cost_usd {
        line.push_str(&format!(" · ${cost:.4}"));
    }
    line
}

pub(crate) use crate::values::thousands;

#[cfg(test)]
mod tests {
    use super::defuse_for_actions;

    #[test]
    fn no_workflow_command_survives() {
        let text =
            "plain\n  ::set-output name=x::y\n::error::boom\nsee ##[error]here and ##[command]x\nnot :: at start";
        let defused = defuse_for_actions(text, false);
        for line in defused.lines() {
            assert!(!line.trim_start().starts_with("::"), "{line}");
            assert!(!line.contains("##["), "{line}");
        }
        assert!(defused.contains("not :: at start"), "the rest is as it was: {defused}");
        assert_eq!(defuse_for_actions("nothing here", false), "nothing here");
    }

    #[test]
    fn json_stays_the_same_json() {
        let json = serde_json::json!({"text": "##[error] and\n::warning::x"}).to_string();
        let defused = defuse_for_actions(&json, true);
        assert!(!defused.contains("##["), "{defused}");
        let back: serde_json::Value = serde_json::from_str(&defused).unwrap();
        assert_eq!(back["text"], "##[error] and\n::warning::x");
    }
}
