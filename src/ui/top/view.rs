//! `eden top` drawn: the header with the totals, then the list of runs, a run's timeline and
//! output, or a group's attempts side by side; the question or the last action's word, and the
//! keys. Fits 80×24 (fewer columns) and uses a larger terminal (more of them). Every text from
//! a record or a log was made a plain line when it was read; names and branches are made so here.

use super::model::{Board, Tracked};
use super::screen::{Ask, Line, Screen, View};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line as Text, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;
use std::time::{Duration, SystemTime};

/// Draw the whole screen.
pub(crate) fn draw(frame: &mut Frame<'_>, board: &Board, screen: &Screen, now: SystemTime) {
    let [header, body, status, keys] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(1), Constraint::Length(1)])
            .areas(frame.area());
    frame.render_widget(Paragraph::new(header_line(board, screen)), header);
    match &screen.view {
        View::List => list(frame, body, board, screen, now),
        View::Run { id, follow } => match board.find(id) {
            Some(run) => run_view(frame, body, run, *follow, screen, now),
            None => frame.render_widget(Paragraph::new(format!("run `{id}` is gone")), body),
        },
        View::Attempts { group } => attempts(frame, body, board, group, screen),
    }
    frame.render_widget(Paragraph::new(status_line(screen)), status);
    frame.render_widget(Paragraph::new(Span::styled(keys_line(screen, keys.width), dim(screen))), keys);
}

fn header_line(board: &Board, screen: &Screen) -> Text<'static> {
    let runs: Vec<&Tracked> = board.runs().collect();
    let live = runs.iter().filter(|run| run.live).count();
    let cost: f64 = runs.iter().filter_map(|run| run.cost()).sum();
    let live_cost: f64 = runs.iter().filter(|run| run.live).filter_map(|run| run.cost()).sum();
    let tokens: u64 = runs.iter().map(|run| run.tokens()).sum();
    let place = match board.repos.as_slice() {
        [one] => one.root.file_name().map_or_else(|| one.root.display().to_string(), |n| n.to_string_lossy().into()),
        many => format!("{} repositories", many.len()),
    };
    let mut spans = vec![
        Span::styled("eden top", bold(screen)),
        Span::raw(format!("  {}  ", crate::ui::plain_line(&place))),
        Span::styled(format!("{live} live"), color(screen, Color::Cyan)),
        Span::raw(format!(" · {} runs · {} tokens · {}", runs.len(), count(tokens), crate::values::dollars(cost))),
    ];
    if live > 0 {
        spans.push(Span::raw(format!(" (live {})", crate::values::dollars(live_cost))));
    }
    if !screen.filter.is_empty() {
        spans.push(Span::styled(format!("  filter: {}", screen.filter), color(screen, Color::Yellow)));
    }
    Text::from(spans)
}

fn status_line(screen: &Screen) -> Text<'static> {
    match &screen.ask {
        Some(Ask::Filter(text)) => Text::from(format!("/{text}▏")),
        Some(Ask::Steer { text, .. }) => {
            Text::from(vec![Span::styled("steer: ", bold(screen)), Span::raw(format!("{text}▏"))])
        }
        Some(Ask::Confirm { question, .. }) => Text::from(Span::styled(question.clone(), color(screen, Color::Yellow))),
        None => Text::from(screen.status.clone().unwrap_or_default()),
    }
}

fn keys_line(screen: &Screen, width: u16) -> String {
    let narrow = width < 100;
    match &screen.view {
        View::List if narrow => {
            format!("⏎ open /filter t sort:{} f follow s steer d diff m merge x discard c stop a q", screen.sort.name())
        }
        View::List => format!(
            "↑↓ select  ⏎ open  / filter  t sort ({})  f follow  s steer  d diff  m merge  x discard  c stop  a attempts  q quit",
            screen.sort.name()
        ),
        View::Run { follow: true, .. } => "f timeline  s steer  d diff  c stop  esc back  q quit".into(),
        View::Run { .. } => "f follow  s steer  d diff  m merge  x discard  c stop  esc back  q quit".into(),
        View::Attempts { .. } => "↑↓ select  ⏎ open  d diff  m merge (and discard the others)  esc back  q quit".into(),
    }
}

fn list(frame: &mut Frame<'_>, area: Rect, board: &Board, screen: &Screen, now: SystemTime) {
    let wide = area.width >= 110;
    let mut header = vec!["RUN", "AGENT"];
    if wide {
        header.push("SANDBOX");
    }
    header.extend(["STATE", "ITER", "TIME"]);
    if wide {
        header.push("TOKENS");
    }
    header.extend(["COST", "LAST"]);
    let mut widths = vec![Constraint::Length(if wide { 24 } else { 15 }), Constraint::Length(11)];
    if wide {
        widths.push(Constraint::Length(20));
    }
    widths.extend([Constraint::Length(if wide { 12 } else { 10 }), Constraint::Length(5), Constraint::Length(6)]);
    if wide {
        widths.push(Constraint::Length(7));
    }
    widths.extend([Constraint::Length(7), Constraint::Min(10)]);
    let lines = screen.lines(board, now);
    let rows: Vec<Row> = lines
        .iter()
        .map(|line| match line {
            Line::Group { group } => group_row(board, group, header.len(), screen),
            Line::Run { id, attempt } => match board.find(id) {
                Some(run) => run_row(run, *attempt, wide, screen, now),
                None => Row::new(vec![Cell::from("")]),
            },
        })
        .collect();
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(bold(screen)))
        .row_highlight_style(selected(screen))
        .column_spacing(1);
    let mut state = TableState::default().with_selected((!lines.is_empty()).then_some(screen.selected));
    frame.render_stateful_widget(table, area, &mut state);
    if lines.is_empty() {
        let empty = if screen.filter.is_empty() {
            "no runs yet: `eden run MANIFEST` starts one"
        } else {
            "no run matches the filter"
        };
        let [_, below] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
        frame.render_widget(Paragraph::new(Span::styled(empty, dim(screen))), below);
    }
}

fn group_row(board: &Board, group: &str, columns: usize, screen: &Screen) -> Row<'static> {
    let members = Screen::attempts(board, group);
    let live = members.iter().filter(|run| run.live).count();
    let chosen = members.iter().find(|run| run.record.attempt.as_ref().is_some_and(|a| a.chosen));
    let name = members.first().map_or("", |run| run.record.name.as_str());
    let word = match (chosen, live) {
        (Some(run), _) => format!("#{} chosen", run.record.attempt.as_ref().map_or(0, |a| a.number)),
        (None, 0) => "none chosen".into(),
        (None, live) => format!("{live} going"),
    };
    let cost: f64 = members.iter().filter_map(|run| run.cost()).sum();
    let mut cells = vec![Cell::from(format!("▾ {} ×{}", crate::ui::plain_line(name), members.len()))];
    cells.push(Cell::from("attempts"));
    while cells.len() < columns.saturating_sub(2) {
        cells.push(Cell::from(""));
    }
    cells.push(Cell::from(crate::values::dollars(cost)));
    cells.push(Cell::from(word));
    Row::new(cells).style(bold(screen))
}

fn run_row(run: &Tracked, attempt: bool, wide: bool, screen: &Screen, now: SystemTime) -> Row<'static> {
    let record = &run.record;
    let name = match (&record.attempt, attempt) {
        (Some(a), true) => format!("  #{}{}", a.number, if a.chosen { " ✓" } else { "" }),
        _ => crate::ui::plain_line(&record.name),
    };
    let agent = run.agent().to_owned();
    let (iteration, of) = run.iteration();
    let state = run.state();
    let last = match (&run.log.last_line, run.live) {
        (Some(line), true) => line.clone(),
        _ => end_summary(run),
    };
    let mut cells = vec![Cell::from(name), Cell::from(agent)];
    if wide {
        cells.push(Cell::from(sandbox(run)));
    }
    cells.push(Cell::from(Span::styled(state.clone(), state_style(run, &state, screen))));
    cells.push(Cell::from(format!("{iteration}/{of}")));
    cells.push(Cell::from(short_duration(run.elapsed(now))));
    if wide {
        cells.push(Cell::from(count(run.tokens())));
    }
    cells.push(Cell::from(run.cost().map_or_else(|| "-".into(), crate::values::dollars)));
    cells.push(Cell::from(last));
    Row::new(cells)
}

/// A finished run in a few words: its commits, its checks, where its work is.
fn end_summary(run: &Tracked) -> String {
    let record = &run.record;
    let mut parts = Vec::new();
    if let Some(reason) = record.exit_reason.filter(|_| record.exit_code != Some(0)) {
        parts.push(reason.as_str().to_owned());
    }
    parts.push(format!("{} commit(s)", record.commits.len()));
    let failed = record.checks.iter().filter(|check| check.outcome.as_str() != "ok").count();
    if !record.checks.is_empty() {
        parts.push(format!("checks {}/{}", record.checks.len() - failed, record.checks.len()));
    }
    if let Some(into) = &record.merged_into {
        parts.push(format!("into {into}"));
    } else if let Some(branch) = &record.preserved_branch {
        parts.push(format!("on {branch}"));
    }
    if let Some(pull) = &record.pull_request {
        parts.push(format!("PR #{} {}", pull.number, pull.state));
    }
    crate::ui::plain_line(&parts.join(", "))
}

fn sandbox(run: &Tracked) -> String {
    let kind = run.record.sandbox.as_str();
    match run.record.container.as_ref().and_then(|c| c.host.as_deref().or(c.node.as_deref())) {
        Some(host) => {
            let host = host.split_once("://").map_or(host, |(_, rest)| rest);
            crate::ui::plain_line(&format!("{kind}@{host}"))
        }
        None => kind.to_owned(),
    }
}

fn run_view(frame: &mut Frame<'_>, area: Rect, run: &Tracked, follow: bool, screen: &Screen, now: SystemTime) {
    let record = &run.record;
    let [about, rest] = Layout::vertical([Constraint::Length(2), Constraint::Min(2)]).areas(area);
    let (iteration, of) = run.iteration();
    let first = Text::from(vec![
        Span::styled(crate::ui::plain_line(&record.name), bold(screen)),
        Span::raw(format!("  {}  ", record.id)),
        Span::styled(run.state(), state_style(run, &run.state(), screen)),
        Span::raw(format!(
            "  iteration {iteration}/{of}  {}  {} tokens  {}",
            short_duration(run.elapsed(now)),
            count(run.tokens()),
            run.cost().map_or_else(|| "-".into(), crate::values::dollars)
        )),
    ]);
    let agent = run.agent();
    let second = Text::from(crate::ui::plain_line(&format!(
        "{agent} in {}  branch {}{}  {}",
        sandbox(run),
        record.branch,
        record.base_branch.as_ref().map(|base| format!(" from {base}")).unwrap_or_default(),
        if run.live { String::new() } else { end_summary(run) }
    )));
    frame.render_widget(Paragraph::new(vec![first, second]), about);
    let output = Block::default().borders(Borders::TOP).title(if follow { " output (following) " } else { " output " });
    if follow {
        frame.render_widget(tail(&run.log.output, rest.height.saturating_sub(1)).block(output), rest);
        return;
    }
    let [timeline, below] = Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(rest);
    let mut moments: Vec<Text> = run
        .log
        .moments
        .iter()
        .map(|moment| {
            Text::from(vec![
                Span::styled(format!("{} ", moment.at), dim(screen)),
                Span::styled(format!("{:<11} ", moment.what), color(screen, moment_color(moment.what))),
                Span::raw(moment.text.clone()),
            ])
        })
        .collect();
    for artifact in &record.artifacts {
        let kept = format!("artifact    {} ({} bytes)", artifact.path, artifact.bytes);
        moments.push(Text::from(crate::ui::plain_line(&kept)));
    }
    if let Some(pull) = &record.pull_request {
        moments.push(Text::from(crate::ui::plain_line(&format!(
            "pull request #{} {}: {}",
            pull.number, pull.state, pull.url
        ))));
        for (n, round) in pull.rounds.iter().enumerate() {
            moments.push(Text::from(crate::ui::plain_line(&format!(
                "  round {}: {} → run {}",
                n + 1,
                round.trigger.join(", "),
                round.run
            ))));
        }
    }
    let height = timeline.height.saturating_sub(1) as usize;
    let shown: Vec<Text> = moments.split_off(moments.len().saturating_sub(height));
    let block = Block::default().borders(Borders::TOP).title(" timeline ");
    frame.render_widget(Paragraph::new(shown).block(block), timeline);
    frame.render_widget(tail(&run.log.output, below.height.saturating_sub(1)).block(output), below);
}

/// The last `height` lines of `lines`.
fn tail(lines: &std::collections::VecDeque<String>, height: u16) -> Paragraph<'static> {
    let skip = lines.len().saturating_sub(height as usize);
    Paragraph::new(lines.iter().skip(skip).map(|line| Text::from(line.clone())).collect::<Vec<_>>())
}

fn attempts(frame: &mut Frame<'_>, area: Rect, board: &Board, group: &str, screen: &Screen) {
    let members = Screen::attempts(board, group);
    let rows: Vec<Row> = members
        .iter()
        .map(|run| {
            let record = &run.record;
            let attempt = record.attempt.as_ref();
            let failed = record.checks.iter().filter(|check| check.outcome.as_str() != "ok").count();
            let checks = match record.checks.len() {
                0 => "-".to_owned(),
                all => format!("{}/{all} pass", all - failed),
            };
            let state = run.state();
            Row::new(vec![
                Cell::from(format!(
                    "#{}{}",
                    attempt.map_or(0, |a| a.number),
                    if attempt.is_some_and(|a| a.chosen) { " ✓" } else { "" }
                )),
                Cell::from(Span::styled(state.clone(), state_style(run, &state, screen))),
                Cell::from(screen.diffstats.get(&record.id).cloned().unwrap_or_else(|| "…".into())),
                Cell::from(checks),
                Cell::from(attempt.and_then(|a| a.score).map_or_else(|| "-".into(), |score| format!("{score}"))),
                Cell::from(run.cost().map_or_else(|| "-".into(), crate::values::dollars)),
                Cell::from(crate::ui::plain_line(record.preserved_branch.as_deref().unwrap_or(&record.branch))),
            ])
        })
        .collect();
    let widths = [
        Constraint::Length(5),
        Constraint::Length(14),
        Constraint::Min(20),
        Constraint::Length(11),
        Constraint::Length(7),
        Constraint::Length(8),
        Constraint::Min(10),
    ];
    let name = members.first().map_or(String::new(), |run| crate::ui::plain_line(&run.record.name));
    let table = Table::new(rows, widths)
        .header(Row::new(["#", "STATE", "CHANGES", "CHECKS", "SCORE", "COST", "BRANCH"]).style(bold(screen)))
        .block(Block::default().borders(Borders::TOP).title(format!(" attempts of `{name}` ")))
        .row_highlight_style(selected(screen));
    let mut state = TableState::default().with_selected((!members.is_empty()).then_some(screen.selected));
    frame.render_stateful_widget(table, area, &mut state);
}

fn state_style(run: &Tracked, state: &str, screen: &Screen) -> Style {
    let hue = match state {
        _ if run.live => Color::Cyan,
        "merged" | "merged later" | "done" => Color::Green,
        _ if state.starts_with("kept") => Color::Yellow,
        "discarded" => Color::DarkGray,
        _ => Color::Red,
    };
    color(screen, hue)
}

fn moment_color(what: &str) -> Color {
    match what {
        "commit" | "merged" => Color::Green,
        "warning" | "usage limit" | "tool failed" => Color::Yellow,
        "agent error" => Color::Red,
        "iteration" | "step" => Color::Cyan,
        _ => Color::Reset,
    }
}

fn color(screen: &Screen, hue: Color) -> Style {
    if screen.color {
        Style::default().fg(hue)
    } else {
        Style::default()
    }
}

fn bold(screen: &Screen) -> Style {
    if screen.color {
        Style::default().add_modifier(Modifier::BOLD)
    } else {
        Style::default()
    }
}

fn dim(screen: &Screen) -> Style {
    if screen.color {
        Style::default().add_modifier(Modifier::DIM)
    } else {
        Style::default()
    }
}

/// The selected line: reversed, which shows without colour too.
fn selected(_screen: &Screen) -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}

/// `1h02m`, `3m05s`, `42s`.
pub(crate) fn short_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

fn count(tokens: u64) -> String {
    match tokens {
        0..=999 => tokens.to_string(),
        1_000..=999_999 => format!("{:.1}k", tokens as f64 / 1e3),
        _ => format!("{:.1}M", tokens as f64 / 1e6),
    }
}
