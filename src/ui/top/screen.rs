//! What `eden top` is showing and asking: the view (the list, a run, a group's attempts), the
//! selection, the filter and the sort, and the question on the bottom line. Keys change it
//! (`Screen::key`), which says what to do when a key asks for more than a redraw.

use super::model::{Board, Tracked};
use std::collections::BTreeMap;

/// Which view is up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum View {
    List,
    /// A run: its timeline and its output; `follow`: the output alone, its end in sight.
    Run {
        id: String,
        follow: bool,
    },
    /// A group's attempts side by side.
    Attempts {
        group: String,
    },
}

/// How the list is sorted (after the live runs, which come first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sort {
    Newest,
    Name,
    Cost,
    Longest,
}

impl Sort {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Sort::Newest => "newest",
            Sort::Name => "name",
            Sort::Cost => "cost",
            Sort::Longest => "longest",
        }
    }

    fn next(self) -> Sort {
        match self {
            Sort::Newest => Sort::Name,
            Sort::Name => Sort::Cost,
            Sort::Cost => Sort::Longest,
            Sort::Longest => Sort::Newest,
        }
    }
}

/// A question on the bottom line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ask {
    Filter(String),
    Steer { run: String, text: String },
    Confirm { action: Action, question: String },
}

/// What a key asks the dashboard to do beyond drawing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    Quit,
    Steer {
        run: String,
        prompt: String,
    },
    Diff(String),
    Merge(String),
    Discard(String),
    Stop(String),
    /// After an attempt was merged: the group's others.
    DiscardOthers(Vec<String>),
    /// The attempts view opened: their diffstats are wanted.
    Measure(Vec<String>),
}

/// One line of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    Run { id: String, attempt: bool },
    Group { group: String },
}

pub(crate) struct Screen {
    pub(crate) view: View,
    /// The selected line of the list (or of the attempts).
    pub(crate) selected: usize,
    pub(crate) filter: String,
    pub(crate) sort: Sort,
    pub(crate) ask: Option<Ask>,
    /// What the last action said.
    pub(crate) status: Option<String>,
    /// Colours (off with `NO_COLOR`).
    pub(crate) color: bool,
    /// What each attempt changed, as `git diff --shortstat` says it.
    pub(crate) diffstats: BTreeMap<String, String>,
}

/// A key, as the dashboard reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    Char(char),
    Enter,
    Esc,
    Backspace,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    /// Ctrl-C.
    Interrupt,
}

impl Screen {
    pub(crate) fn new(color: bool) -> Screen {
        Screen {
            view: View::List,
            selected: 0,
            filter: String::new(),
            sort: Sort::Newest,
            ask: None,
            status: None,
            color,
            diffstats: BTreeMap::new(),
        }
    }

    /// The list's lines: live runs first, then the rest; a group's attempts under its line.
    pub(crate) fn lines(&self, board: &Board, now: std::time::SystemTime) -> Vec<Line> {
        let filter = self.filter.to_lowercase();
        let mut runs: Vec<&Tracked> = board.runs().filter(|run| filter.is_empty() || matches(run, &filter)).collect();
        let key = |run: &Tracked| -> (bool, i64, String) {
            let rank = match self.sort {
                Sort::Newest => 0,
                Sort::Name => 0,
                Sort::Cost => -((run.cost().unwrap_or(0.0) * 1e6) as i64),
                Sort::Longest => -(run.elapsed(now).as_millis() as i64),
            };
            let name = if self.sort == Sort::Name { run.record.name.clone() } else { String::new() };
            (!run.live, rank, name)
        };
        // Stable: ties keep the board's newest-first order.
        runs.sort_by_cached_key(|run| key(run));
        let mut lines = Vec::new();
        let mut groups_seen: Vec<&str> = Vec::new();
        for run in &runs {
            let Some(attempt) = &run.record.attempt else {
                lines.push(Line::Run { id: run.record.id.clone(), attempt: false });
                continue;
            };
            if groups_seen.contains(&attempt.group.as_str()) {
                continue;
            }
            groups_seen.push(&attempt.group);
            lines.push(Line::Group { group: attempt.group.clone() });
            let mut members: Vec<&&Tracked> =
                runs.iter().filter(|r| r.record.attempt.as_ref().is_some_and(|a| a.group == attempt.group)).collect();
            members.sort_by_key(|r| r.record.attempt.as_ref().map_or(0, |a| a.number));
            lines.extend(members.into_iter().map(|r| Line::Run { id: r.record.id.clone(), attempt: true }));
        }
        lines
    }

    /// The attempts of `group`, by number.
    pub(crate) fn attempts<'b>(board: &'b Board, group: &str) -> Vec<&'b Tracked> {
        let mut members: Vec<&Tracked> =
            board.runs().filter(|run| run.record.attempt.as_ref().is_some_and(|a| a.group == group)).collect();
        members.sort_by_key(|run| run.record.attempt.as_ref().map_or(0, |a| a.number));
        members
    }

    /// The run the selection is on (in the list, or the attempts view), or the run open.
    pub(crate) fn current(&self, board: &Board, now: std::time::SystemTime) -> Option<String> {
        match &self.view {
            View::Run { id, .. } => Some(id.clone()),
            View::Attempts { group } => {
                Screen::attempts(board, group).get(self.selected).map(|run| run.record.id.clone())
            }
            View::List => match self.lines(board, now).get(self.selected) {
                Some(Line::Run { id, .. }) => Some(id.clone()),
                _ => None,
            },
        }
    }

    /// The key `key` pressed: the screen changed, and what to do besides.
    pub(crate) fn key(&mut self, key: Key, board: &Board, now: std::time::SystemTime) -> Option<Action> {
        if key == Key::Interrupt {
            return Some(Action::Quit);
        }
        if let Some(ask) = self.ask.take() {
            return self.answer(ask, key);
        }
        let count = match &self.view {
            View::List => self.lines(board, now).len(),
            View::Attempts { group } => Screen::attempts(board, group).len(),
            View::Run { .. } => 0,
        };
        let current = self.current(board, now);
        let run = current.as_ref().and_then(|id| board.find(id));
        match key {
            Key::Char('q') => return Some(Action::Quit),
            Key::Esc => match &self.view {
                View::List => self.filter.clear(),
                View::Run { id, follow: true } => self.view = View::Run { id: id.clone(), follow: false },
                _ => self.view = View::List,
            },
            Key::Up | Key::Char('k') => self.selected = self.selected.saturating_sub(1),
            Key::Down | Key::Char('j') => self.selected = (self.selected + 1).min(count.saturating_sub(1)),
            Key::PageUp => self.selected = self.selected.saturating_sub(10),
            Key::PageDown => self.selected = (self.selected + 10).min(count.saturating_sub(1)),
            Key::Home => self.selected = 0,
            Key::End => self.selected = count.saturating_sub(1),
            Key::Char('/') if self.view == View::List => {
                self.filter.clear();
                self.ask = Some(Ask::Filter(String::new()));
            }
            Key::Char('t') if self.view == View::List => self.sort = self.sort.next(),
            Key::Enter => return self.open(board, now, current),
            Key::Char('a') => return self.open_attempts(board, now, run),
            Key::Char('f') => match (&self.view, current) {
                (View::Run { id, follow }, _) => self.view = View::Run { id: id.clone(), follow: !follow },
                (_, Some(id)) => self.view = View::Run { id, follow: true },
                _ => {}
            },
            Key::Char('d') => return current.map(Action::Diff),
            Key::Char('s') => match run {
                Some(run) if run.live => {
                    self.ask = Some(Ask::Steer { run: run.record.id.clone(), text: String::new() })
                }
                Some(run) => {
                    self.status = Some(format!("`{}` is not running: there is nothing to steer", run.record.name))
                }
                None => {}
            },
            Key::Char('m') => self.confirm_merge(run),
            Key::Char('x') => match run {
                Some(run) if !run.live => self.confirm(
                    Action::Discard(run.record.id.clone()),
                    format!("discard `{}`: remove its branch and worktree? (y/n)", run.record.name),
                ),
                Some(run) => self.status = Some(format!("`{}` is running: stop it first (c)", run.record.name)),
                None => {}
            },
            Key::Char('c') => match run {
                Some(run) if run.live => self.confirm(
                    Action::Stop(run.record.id.clone()),
                    format!("stop `{}` as Ctrl-C would (its work is kept)? (y/n)", run.record.name),
                ),
                Some(run) => self.status = Some(format!("`{}` is not running", run.record.name)),
                None => {}
            },
            _ => {}
        }
        None
    }

    fn open(&mut self, board: &Board, now: std::time::SystemTime, current: Option<String>) -> Option<Action> {
        if self.view == View::List {
            if let Some(Line::Group { group }) = self.lines(board, now).get(self.selected) {
                return self.enter_attempts(board, group.clone());
            }
        }
        if let Some(id) = current {
            self.view = View::Run { id, follow: false };
        }
        None
    }

    fn open_attempts(&mut self, board: &Board, now: std::time::SystemTime, run: Option<&Tracked>) -> Option<Action> {
        let group = match (self.lines(board, now).get(self.selected), run) {
            (Some(Line::Group { group }), _) if self.view == View::List => group.clone(),
            (_, Some(run)) => run.record.attempt.as_ref()?.group.clone(),
            _ => return None,
        };
        self.enter_attempts(board, group)
    }

    fn enter_attempts(&mut self, board: &Board, group: String) -> Option<Action> {
        let ids: Vec<String> = Screen::attempts(board, &group).iter().map(|run| run.record.id.clone()).collect();
        self.view = View::Attempts { group };
        self.selected = 0;
        Some(Action::Measure(ids))
    }

    fn confirm_merge(&mut self, run: Option<&Tracked>) {
        let Some(run) = run else { return };
        if !run.kept() {
            self.status = Some(format!("`{}` has no kept work to merge ({})", run.record.name, run.state()));
            return;
        }
        let into = run.record.base_branch.as_deref().unwrap_or("its base");
        let mut question = format!("merge `{}` into {into}? (y/n)", run.record.name);
        if let View::Attempts { .. } = self.view {
            question =
                format!("merge attempt #{} into {into}? (y/n)", run.record.attempt.as_ref().map_or(0, |a| a.number));
        }
        self.confirm(Action::Merge(run.record.id.clone()), question);
    }

    pub(crate) fn confirm(&mut self, action: Action, question: String) {
        self.ask = Some(Ask::Confirm { action, question });
    }

    fn answer(&mut self, ask: Ask, key: Key) -> Option<Action> {
        match (ask, key) {
            (Ask::Confirm { action, .. }, Key::Char('y' | 'Y')) => return Some(action),
            (Ask::Confirm { .. }, _) => self.status = Some("nothing done".into()),
            (Ask::Filter(text), Key::Enter) => {
                self.filter = text;
                self.selected = 0;
            }
            (Ask::Filter(_), Key::Esc) => {}
            (Ask::Filter(mut text), key) => {
                edit(&mut text, key);
                self.filter = text.clone();
                self.selected = 0;
                self.ask = Some(Ask::Filter(text));
            }
            (Ask::Steer { run, text }, Key::Enter) if !text.trim().is_empty() => {
                return Some(Action::Steer { run, prompt: text })
            }
            (Ask::Steer { .. }, Key::Esc | Key::Enter) => self.status = Some("not steered".into()),
            (Ask::Steer { run, mut text }, key) => {
                edit(&mut text, key);
                self.ask = Some(Ask::Steer { run, text });
            }
        }
        None
    }
}

fn edit(text: &mut String, key: Key) {
    match key {
        Key::Char(c) if !c.is_control() => text.push(c),
        Key::Backspace => {
            text.pop();
        }
        _ => {}
    }
}

fn matches(run: &Tracked, filter: &str) -> bool {
    let record = &run.record;
    [record.name.as_str(), record.id.as_str(), record.branch.as_str(), run.agent(), &run.state()]
        .iter()
        .any(|field| field.to_lowercase().contains(filter))
}
