//! How several runs at once (`eden run A.toml B.toml`) look: on a terminal one live line per
//! run (spinner, iteration, last tool call, tokens) that collapses into a summary line when the
//! run ends; elsewhere each run's own plain lines, prefixed with its name; then one table.

use super::for_terminal;
use crate::record::RunRecord;
use crate::report::{Event, Logged};
use console::style;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::io::Write;
use std::time::{Duration, Instant};

/// A run's line in the table at the end.
#[derive(Debug, Clone, Default)]
pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) agent: String,
    /// The engine it ran on, when not the default one.
    pub(crate) host: Option<String>,
    pub(crate) status: String,
    pub(crate) code: Option<i32>,
    pub(crate) iterations: Option<usize>,
    pub(crate) commits: Option<usize>,
    /// `merged into main`, `kept eden/x`, `no commits`.
    pub(crate) landed: String,
    pub(crate) duration_ms: Option<u64>,
    pub(crate) tokens: Option<u64>,
    pub(crate) cost: Option<f64>,
    /// Its `[[check]]`s as they last ran: how many passed, of how many (`2/3`).
    pub(crate) checks: Option<(usize, usize)>,
}

impl Row {
    /// A run's line from its record: how it ended, where its work went, what it spent.
    pub(crate) fn from_record(name: &str, agent: &str, record: &RunRecord, code: Option<i32>) -> Row {
        let landed = match (&record.merged_into, &record.preserved_branch) {
            (Some(target), _) => format!("merged into {target}"),
            (None, Some(branch)) => format!("kept {branch}"),
            (None, None) if record.commits.is_empty() => "no commits".to_owned(),
            (None, None) => format!("on {}", record.branch),
        };
        // Of several attempts, the one that landed.
        let landed = match record.attempt.as_ref().is_some_and(|attempt| attempt.chosen) {
            true => format!("chosen: {landed}"),
            false => landed,
        };
        // Where it ran: a pod's node, or a container's engine when not the default one.
        let host =
            record.container.as_ref().and_then(|container| container.node.clone().or_else(|| container.host.clone()));
        Row {
            name: name.to_owned(),
            agent: agent.to_owned(),
            host,
            status: record.exit_reason.map_or("ended", |reason| reason.as_str()).to_owned(),
            code,
            iterations: Some(record.iterations.len()),
            commits: Some(record.commits.len()),
            landed,
            duration_ms: Some(record.duration_ms),
            tokens: record.usage.as_ref().map(|usage| usage.total_tokens()),
            cost: record.usage.as_ref().and_then(|usage| usage.cost_usd),
            checks: checks_passed(record),
        }
    }
}

/// How many of a run's checks passed when each last ran, of how many there are.
fn checks_passed(record: &RunRecord) -> Option<(usize, usize)> {
    let last = record.last_checks();
    let passed = last.iter().filter(|check| check.outcome == crate::record::HookOutcome::Ok).count();
    (!last.is_empty()).then_some((passed, last.len()))
}

pub(crate) struct BatchDisplay {
    mode: super::Display,
    names: Vec<String>,
    width: usize,
    live: Option<Live>,
    /// Plain and quiet lines, written in batches.
    out: std::io::BufWriter<std::io::Stderr>,
    flushed: Instant,
}

struct Live {
    multi: MultiProgress,
    bars: Vec<ProgressBar>,
    runs: Vec<LiveRun>,
}

#[derive(Default)]
struct LiveRun {
    iteration: String,
    /// ` on HOST` when it was placed on one.
    host: String,
    /// ` · pod NAME @ NODE` (or the container) once it is up.
    sandbox: String,
    tool: String,
    /// Tokens so far: the finished iterations', and the current one's latest figure.
    tokens_before: u64,
    tokens_now: u64,
}

impl BatchDisplay {
    /// `rows` are each run's name and agent, in order.
    pub(crate) fn new(mode: super::Display, rows: &[(String, String)]) -> Self {
        let names: Vec<String> = rows.iter().map(|(name, _)| name.clone()).collect();
        let width = names.iter().map(|name| name.chars().count()).max().unwrap_or(0).min(32);
        let live = (mode == super::Display::Live).then(|| {
            let multi = MultiProgress::new();
            let style = ProgressStyle::with_template("{spinner:.cyan} {prefix:.bold} {elapsed:>4.dim} {wide_msg}")
                .expect("valid template")
                .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ ");
            let bars = rows
                .iter()
                .map(|(name, agent)| {
                    let bar = multi.add(ProgressBar::new_spinner());
                    bar.set_style(style.clone());
                    bar.set_prefix(format!("{name:<width$}"));
                    bar.set_message(style_dim(&format!("{agent} · waiting")));
                    bar
                })
                .collect();
            Live { multi, bars, runs: rows.iter().map(|_| LiveRun::default()).collect() }
        });
        BatchDisplay {
            mode,
            names,
            width,
            live,
            out: std::io::BufWriter::with_capacity(64 * 1024, std::io::stderr()),
            flushed: Instant::now(),
        }
    }

    /// Whether the runs themselves should print nothing but errors (this display draws them).
    pub(crate) fn children_quiet(&self) -> bool {
        self.mode != super::Display::Plain
    }

    pub(crate) fn started(&mut self, index: usize, host: Option<&str>) {
        let on = host.map(|host| format!(" on {host}")).unwrap_or_default();
        match &mut self.live {
            Some(live) => {
                let bar = &live.bars[index];
                bar.reset_elapsed();
                bar.enable_steady_tick(Duration::from_millis(120));
                bar.set_message(for_terminal(&format!("starting{on}")));
                live.runs[index].host = on;
            }
            None if host.is_some() => self.note(&format!("`{}` goes{on}", self.names[index])),
            None => {}
        }
    }

    /// One of a run's `--json-events` lines: the live line follows the run.
    pub(crate) fn event_line(&mut self, index: usize, line: &str) {
        let Some(live) = &mut self.live else { return };
        let Some(kind) = event_kind(line) else { return };
        if !matches!(kind, "iteration_started" | "tool_call" | "usage" | "warning" | "agent_error" | "sandbox_started")
        {
            return;
        }
        let Some(logged) = Logged::parse(line) else { return };
        let run = &mut live.runs[index];
        match logged.event.as_ref() {
            Event::IterationStarted { iteration, max_iterations } => {
                run.tokens_before += run.tokens_now;
                run.tokens_now = 0;
                run.iteration = format!("iteration {iteration}/{max_iterations}");
                run.tool.clear();
            }
            // Where it runs: a pod and the node the scheduler chose, or a container.
            Event::SandboxStarted { engine, name, node, .. } => {
                let node = node.as_ref().map(|node| format!(" @ {node}")).unwrap_or_default();
                let what = engine.sandbox_noun();
                run.sandbox = format!(" · {what} {name}{node}");
            }
            Event::ToolCall { name, summary, .. } => run.tool = format!("{name} {summary}"),
            Event::Usage { usage, .. } => run.tokens_now = usage.total_tokens(),
            Event::Warning { message } | Event::AgentError { message, .. } => {
                let what =
                    if matches!(logged.event.as_ref(), Event::Warning { .. }) { "warning:" } else { "agent error:" };
                let line = format!("{} {} {message}", style(&self.names[index]).bold(), style(what).yellow().bold());
                live.multi.suspend(|| eprintln!("{}", for_terminal(&line)));
                return;
            }
            _ => return,
        }
        let iteration = if run.iteration.is_empty() { "starting" } else { run.iteration.as_str() };
        let mut message = format!("{iteration}{}{}", run.host, run.sandbox);
        let tokens = run.tokens_before + run.tokens_now;
        if tokens > 0 {
            message.push_str(&format!(" · {} tokens", super::thousands(tokens)));
        }
        if !run.tool.is_empty() {
            message.push_str(&format!(" · {}", run.tool));
        }
        live.bars[index].set_message(for_terminal(&first_line(&message)));
    }

    /// A line a run printed on stderr: its progress (plain), or its errors and warnings.
    pub(crate) fn stderr_line(&mut self, index: usize, line: &str) {
        let text = format!("{:<width$} | {line}", self.names[index], width = self.width);
        match &self.live {
            Some(live) => live.multi.suspend(|| eprintln!("{}", for_terminal(&text))),
            None => {
                let _ = writeln!(self.out, "{}", for_terminal(&text));
            }
        }
    }

    /// A line of the coordinator's own.
    pub(crate) fn note(&mut self, message: &str) {
        let text = format!("{} {message}", style("eden:").bold());
        match &self.live {
            Some(live) => live.multi.suspend(|| eprintln!("{text}")),
            None => {
                let _ = writeln!(self.out, "{text}");
                let _ = self.out.flush();
            }
        }
    }

    pub(crate) fn finished(&mut self, index: usize, row: &Row) {
        let Some(live) = &mut self.live else { return };
        let (mark, status) = match row.code {
            Some(0) => (style("✓").green(), style(row.status.clone()).green()),
            _ => (style("✗").red(), style(row.status.clone()).red()),
        };
        let bar = &live.bars[index];
        bar.set_style(ProgressStyle::with_template("{prefix:.bold} {wide_msg}").expect("valid template"));
        let mut detail = vec![status.to_string()];
        if let Some(iterations) = row.iterations {
            detail.push(format!("{iterations} iteration(s)"));
        }
        if !row.landed.is_empty() {
            detail.push(row.landed.clone());
        }
        if let Some(ms) = row.duration_ms {
            detail.push(super::seconds(ms));
        }
        bar.set_prefix(format!("{mark} {:<width$}", row.name, width = self.width));
        bar.finish_with_message(for_terminal(&detail.join(" · ")));
    }

    /// Called often: writes what is waiting, at most every 50 ms.
    pub(crate) fn tick(&mut self) {
        if self.flushed.elapsed() >= Duration::from_millis(50) {
            let _ = self.out.flush();
            self.flushed = Instant::now();
        }
    }

    /// The runs are over: the table (unless quiet).
    pub(crate) fn finish(&mut self, rows: &[Row]) {
        if let Some(live) = &self.live {
            for bar in &live.bars {
                if !bar.is_finished() {
                    bar.finish();
                }
            }
        }
        if self.mode != super::Display::Quiet {
            let _ = writeln!(self.out, "\n{}", table(rows));
        }
        let _ = self.out.flush();
    }
}

/// The summary table: one line per run, columns aligned.
pub(crate) fn table(rows: &[Row]) -> String {
    let hosts = rows.iter().any(|row| row.host.is_some());
    let mut header = vec!["RUN", "AGENT", "STATUS", "ITER", "COMMITS", "RESULT", "TIME", "TOKENS", "COST"];
    let mut right = vec![false, false, false, true, true, false, true, true, true];
    if hosts {
        header.insert(2, "HOST");
        right.insert(2, false);
    }
    let checks = rows.iter().any(|row| row.checks.is_some());
    if checks {
        let at = header.len() - 4;
        header.insert(at, "CHECKS");
        right.insert(at, true);
    }
    let dash = || "-".to_owned();
    let mut lines: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    for row in rows {
        let host = hosts.then(|| row.host.clone().unwrap_or_else(dash));
        lines.push(vec![
            row.name.clone(),
            row.agent.clone(),
            row.status.clone(),
            row.iterations.map_or_else(dash, |n| n.to_string()),
            row.commits.map_or_else(dash, |n| n.to_string()),
            if row.landed.is_empty() { dash() } else { row.landed.clone() },
            row.duration_ms.map_or_else(dash, |ms| format!("{:.1}s", ms as f64 / 1000.0)),
            row.tokens.map_or_else(dash, super::thousands),
            row.cost.map_or_else(dash, |cost| format!("${cost:.4}")),
        ]);
        if let (Some(host), Some(line)) = (host, lines.last_mut()) {
            line.insert(2, host);
        }
        if let (true, Some(line)) = (checks, lines.last_mut()) {
            let at = line.len() - 4;
            line.insert(at, row.checks.map_or_else(dash, |(passed, all)| format!("{passed}/{all}")));
        }
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|column| lines.iter().map(|line| line[column].chars().count()).max().unwrap_or(0))
        .collect();
    // Counts and figures align right (`right`, above).
    let mut out = String::new();
    for line in &lines {
        let cells: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(column, cell)| match right[column] {
                true => format!("{cell:>width$}", width = widths[column]),
                false => format!("{cell:<width$}", width = widths[column]),
            })
            .collect();
        out.push_str(for_terminal(cells.join("  ").trim_end()).as_str());
        out.push('\n');
    }
    out.pop();
    out
}

/// `"event":"NAME"` of a `--json-events` line, without parsing it.
fn event_kind(line: &str) -> Option<&str> {
    let start = line.find("\"event\":\"")? + "\"event\":\"".len();
    let end = line[start..].find('"')?;
    Some(&line[start..start + end])
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").chars().take(160).collect()
}

fn style_dim(text: &str) -> String {
    style(text).dim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_aligns_its_columns() {
        let rows = [
            Row {
                name: "fix-login".into(),
                agent: "claude-code".into(),
                host: None,
                status: "completed".into(),
                code: Some(0),
                iterations: Some(2),
                commits: Some(3),
                landed: "merged into main".into(),
                duration_ms: Some(61_250),
                tokens: Some(12_345),
                cost: Some(0.25),
                checks: None,
            },
            Row { name: "b".into(), agent: "codex".into(), status: "not started".into(), ..Row::default() },
        ];
        insta::assert_snapshot!(table(&rows), @"
        RUN        AGENT        STATUS       ITER  COMMITS  RESULT             TIME  TOKENS     COST
        fix-login  claude-code  completed       2        3  merged into main  61.2s  12,345  $0.2500
        b          codex        not started     -        -  -                     -       -        -
        ");
        let mut placed = rows.clone();
        placed[0].host = Some("build1".into());
        let mut checked = rows.clone();
        checked[0].checks = Some((1, 2));
        insta::assert_snapshot!(table(&checked), @"
        RUN        AGENT        STATUS       ITER  COMMITS  CHECKS  RESULT             TIME  TOKENS     COST
        fix-login  claude-code  completed       2        3     1/2  merged into main  61.2s  12,345  $0.2500
        b          codex        not started     -        -       -  -                     -       -        -
        ");
        insta::assert_snapshot!(table(&placed), @"
        RUN        AGENT        HOST    STATUS       ITER  COMMITS  RESULT             TIME  TOKENS     COST
        fix-login  claude-code  build1  completed       2        3  merged into main  61.2s  12,345  $0.2500
        b          codex        -       not started     -        -  -                     -       -        -
        ");
    }

    #[test]
    fn the_event_kind_is_found_without_parsing() {
        assert_eq!(event_kind(r#"{"ts":"x","run_id":"r","event":"tool_call","name":"Bash"}"#), Some("tool_call"));
        assert_eq!(event_kind(r#"{"error":{}}"#), None);
    }
}
