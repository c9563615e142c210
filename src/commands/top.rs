//! `eden top [DIR…]`: the live dashboard. The loop reads what changed (at most four times a
//! second), draws only when something did (at most ten times a second, and once a second while
//! a run is live, for its clock), and carries out what a key asks once it was confirmed: steer
//! (the run's eden told, as `eden steer` does), stop (SIGINT to the run's proven eden, as
//! Ctrl-C would), and diff, merge and discard by eden itself (`eden diff|merge|discard`), whose
//! last word is shown.

use crate::cli::TopArgs;
use crate::error::Error;
use crate::layout::Layout;
use crate::ui::top::{draw, Action, Board, Input, Screen, Session, View};
use std::time::{Duration, Instant, SystemTime};

/// How often the runs are read again, and how often the screen may be drawn at most.
const READ_EVERY: Duration = Duration::from_millis(250);
const DRAW_EVERY: Duration = Duration::from_millis(100);

pub(crate) fn top(args: TopArgs) -> Result<i32, Error> {
    use std::io::IsTerminal;
    let layouts = match args.dirs.as_slice() {
        [] => vec![super::layout(None)?],
        dirs => dirs
            .iter()
            .map(|dir| {
                super::layout(Some(dir))
                    .map_err(|error| error.with_hint("name folders of git repositories: `eden top DIR…`"))
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(Error::usage("`eden top` needs a terminal").with_hint(
            "without one: `eden sessions list` lists the runs, `eden sessions show RUN --follow` follows one",
        ));
    }
    crate::process::note_signals().map_err(|err| Error::internal("cannot listen for signals").with_source(err))?;
    let color = std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    let mut board = Board::new(&layouts);
    let mut screen = Screen::new(color);
    let mut session =
        Session::enter().map_err(|err| Error::internal("cannot take the terminal over").with_source(err))?;
    let ended = watch(&mut session, &mut board, &mut screen, &layouts);
    drop(session);
    ended.map_err(|err| Error::internal("the terminal failed").with_source(err))?;
    Ok(0)
}

fn watch(session: &mut Session, board: &mut Board, screen: &mut Screen, layouts: &[Layout]) -> std::io::Result<()> {
    let (mut read_at, mut drawn_at) = (Instant::now() - READ_EVERY, Instant::now() - DRAW_EVERY);
    let (mut dirty, mut drawn_second) = (true, 0);
    loop {
        if crate::process::stopping() {
            return Ok(());
        }
        if read_at.elapsed() >= READ_EVERY {
            let open = match &screen.view {
                View::Run { id, .. } => Some(id.clone()),
                _ => None,
            };
            dirty |= board.refresh(open.as_deref());
            read_at = Instant::now();
        }
        let second = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        dirty |= second != drawn_second && board.runs().any(|run| run.live);
        if dirty && drawn_at.elapsed() >= DRAW_EVERY {
            session.draw(|frame| draw(frame, board, screen, SystemTime::now()))?;
            (dirty, drawn_at, drawn_second) = (false, Instant::now(), second);
        }
        let wait = READ_EVERY.saturating_sub(read_at.elapsed()).max(Duration::from_millis(10));
        match session.input(wait)? {
            Some(Input::Key(key)) => {
                dirty = true;
                let action = screen.key(key, board, SystemTime::now());
                match action {
                    Some(Action::Quit) => return Ok(()),
                    Some(action) => act(action, session, board, screen, layouts)?,
                    None => {}
                }
                // What an action changed shows at once.
                read_at = Instant::now() - READ_EVERY;
            }
            Some(Input::Resized) => dirty = true,
            Some(Input::Gone) => return Ok(()),
            None => {}
        }
    }
}

/// Carry out what a key asked (and confirmed).
fn act(
    action: Action,
    session: &mut Session,
    board: &Board,
    screen: &mut Screen,
    layouts: &[Layout],
) -> std::io::Result<()> {
    let layout_of = |id: &str| {
        let root = board.root_of(id)?;
        layouts.iter().find(|layout| layout.root == root)
    };
    let said = match action {
        Action::Quit => return Ok(()),
        Action::Steer { run, prompt } => {
            match layout_of(&run).map(|layout| super::steer::deliver(layout, &run, &prompt)) {
                Some(Ok(id)) => format!("steered `{id}`: its next iteration starts with your prompt"),
                Some(Err(err)) => err.message,
                None => format!("run `{run}` is gone"),
            }
        }
        Action::Stop(run) => match layout_of(&run).map(|layout| super::steer::stop(layout, &run)) {
            Some(Ok(())) => format!("stopping `{run}`: its work is kept"),
            Some(Err(err)) => err.message,
            None => format!("run `{run}` is gone"),
        },
        Action::Diff(run) => {
            let root = board.root_of(&run).map(|root| root.to_path_buf());
            session.lend(|| diff(&run, root.as_deref()))?.unwrap_or_default()
        }
        Action::Merge(run) => {
            let said = eden(&["merge", &run], board.root_of(&run));
            offer_discarding_the_others(board, screen, &run);
            said
        }
        Action::Discard(run) => eden(&["discard", &run], board.root_of(&run)),
        Action::DiscardOthers(runs) => {
            let words: Vec<String> = runs.iter().map(|run| eden(&["discard", run], board.root_of(run))).collect();
            format!("discarded {} attempt(s): {}", runs.len(), words.last().cloned().unwrap_or_default())
        }
        Action::Measure(runs) => {
            for run in runs {
                if let Some(tracked) = board.find(&run) {
                    let stat = diffstat(&tracked.record, board.root_of(&run));
                    screen.diffstats.insert(run, stat);
                }
            }
            return Ok(());
        }
    };
    screen.status = Some(crate::ui::plain_line(&said));
    Ok(())
}

/// After an attempt was merged: its group's other attempts with work kept are offered for discarding.
fn offer_discarding_the_others(board: &Board, screen: &mut Screen, merged: &str) {
    let Some(group) = board.find(merged).and_then(|run| run.record.attempt.as_ref()).map(|a| a.group.clone()) else {
        return;
    };
    let others: Vec<String> = Screen::attempts(board, &group)
        .iter()
        .filter(|run| run.record.id != merged && run.kept())
        .map(|run| run.record.id.clone())
        .collect();
    if !others.is_empty() {
        let question = format!("discard the {} other attempt(s) of this group? (y/n)", others.len());
        screen.confirm(Action::DiscardOthers(others), question);
    }
}

/// `eden ARGS --repo ROOT`, its output kept: its last word, for the status line.
fn eden(args: &[&str], root: Option<&std::path::Path>) -> String {
    let Some(root) = root else { return "the run is gone".into() };
    let Ok(exe) = std::env::current_exe() else { return "cannot find eden's own executable".into() };
    let command = crate::process::ProcessBuilder::new(exe).args(args).arg("--repo").arg(root).env("NO_COLOR", "1");
    match command.output() {
        Ok(output) => {
            let text = format!("{}\n{}", output.stdout, output.stderr);
            let said = text.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("done").trim().to_owned();
            match output.status.success() {
                true => said,
                false => format!("`eden {}` failed: {said}", args[0]),
            }
        }
        Err(err) => format!("cannot run `eden {}`: {err}", args[0]),
    }
}

/// `eden diff RUN` on the terminal, through the pager (which waits for `q`); what went wrong.
fn diff(run: &str, root: Option<&std::path::Path>) -> Option<String> {
    let Some(root) = root else { return Some("the run is gone".into()) };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => return Some(format!("cannot find eden's own executable: {err}")),
    };
    let command = crate::process::ProcessBuilder::new(exe).args(["diff", run, "--repo"]).arg(root).env("LESS", "R");
    match command.status_inherited() {
        Ok(status) if status.success() => None,
        Ok(_) => Some(format!("`eden diff {run}` failed")),
        Err(err) => Some(format!("cannot run `eden diff`: {err}")),
    }
}

/// What an attempt changed against its base: `3 files +40 -2`.
fn diffstat(record: &crate::record::RunRecord, root: Option<&std::path::Path>) -> String {
    let Some(root) = root else { return "-".into() };
    let branch = record.preserved_branch.as_deref().unwrap_or(&record.branch);
    let base_ok = record.base_commit.len() >= 7 && record.base_commit.bytes().all(|b| b.is_ascii_hexdigit());
    if !base_ok {
        return "-".into();
    }
    let range = format!("{}..refs/heads/{branch}", record.base_commit);
    let git = crate::git::Git::new(root);
    match git.run(["diff", "--shortstat", "--no-ext-diff", "--no-textconv", "--end-of-options", &range]) {
        Ok(text) if text.trim().is_empty() => "no changes".into(),
        Ok(text) => short_stat(&text),
        Err(_) => "-".into(),
    }
}

/// ` 3 files changed, 40 insertions(+), 2 deletions(-)` as `3 files +40 -2`.
fn short_stat(text: &str) -> String {
    let number = |word: &str| {
        text.split(',').find(|part| part.contains(word)).and_then(|part| part.split_whitespace().next()).unwrap_or("0")
    };
    format!("{} files +{} -{}", number("changed"), number("insertion"), number("deletion"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shortstat_is_shortened() {
        assert_eq!(super::short_stat(" 3 files changed, 40 insertions(+), 2 deletions(-)\n"), "3 files +40 -2");
        assert_eq!(super::short_stat(" 1 file changed, 1 deletion(-)\n"), "1 files +0 -1");
    }
}
