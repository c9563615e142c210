//! The terminal `eden top` borrows: raw mode, the alternate screen, the cursor hidden — and
//! given back as it was on every way out: `q`, Ctrl-C, an error, a panic (the hook restores it
//! before the message), SIGTERM (the loop sees it and returns), and `Drop`.

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::Terminal;
use std::io::Stdout;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Is the terminal ours now (for the panic hook)?
static BORROWED: AtomicBool = AtomicBool::new(false);

pub(crate) struct Session {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

/// What came from the terminal.
pub(crate) enum Input {
    Key(super::Key),
    Resized,
    /// The terminal is no more.
    Gone,
}

impl Session {
    /// Take the terminal over.
    pub(crate) fn enter() -> std::io::Result<Session> {
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                give_back();
                previous(info);
            }));
        });
        take()?;
        let terminal = Terminal::new(CrosstermBackend::new(std::io::stdout())).inspect_err(|_| give_back())?;
        Ok(Session { terminal })
    }

    pub(crate) fn draw(&mut self, draw: impl FnOnce(&mut ratatui::Frame<'_>)) -> std::io::Result<()> {
        self.terminal.draw(draw).map(|_| ())
    }

    /// The terminal given back for `run` (a pager), then taken again and drawn anew.
    pub(crate) fn lend<T>(&mut self, run: impl FnOnce() -> T) -> std::io::Result<T> {
        give_back();
        let result = run();
        take()?;
        self.terminal.clear()?;
        Ok(result)
    }

    /// The next key or resize within `wait`, if any. The terminal's own file is waited on here,
    /// not in crossterm: a terminal that went away (its window closed, tmux killed) is said at
    /// once (`Input::Gone`; crossterm would read its end again and again), and a signal ends the
    /// wait early.
    pub(crate) fn input(&self, wait: Duration) -> std::io::Result<Option<Input>> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        if !event::poll(Duration::ZERO)? {
            let stdin = std::io::stdin();
            let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
            let millis = PollTimeout::try_from(wait.as_millis().min(60_000) as i32).unwrap_or(PollTimeout::ZERO);
            match poll(&mut fds, millis) {
                Ok(0) | Err(nix::errno::Errno::EINTR) => return Ok(None),
                Ok(_) => {}
                Err(err) => return Err(err.into()),
            }
            let gone = PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL;
            if fds[0].revents().is_some_and(|events| events.intersects(gone)) {
                return Ok(Some(Input::Gone));
            }
            if !event::poll(Duration::ZERO)? {
                return Ok(None);
            }
        }
        Ok(match event::read()? {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => key_of(key).map(Input::Key),
            TermEvent::Resize(..) => Some(Input::Resized),
            _ => None,
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        give_back();
    }
}

fn take() -> std::io::Result<()> {
    enable_raw_mode()?;
    BORROWED.store(true, Ordering::SeqCst);
    ratatui::crossterm::execute!(std::io::stdout(), EnterAlternateScreen, ratatui::crossterm::cursor::Hide)
}

/// Leave the alternate screen, show the cursor, end raw mode; once.
fn give_back() {
    if BORROWED.swap(false, Ordering::SeqCst) {
        let _ = ratatui::crossterm::execute!(std::io::stdout(), LeaveAlternateScreen, ratatui::crossterm::cursor::Show);
        let _ = disable_raw_mode();
    }
}

fn key_of(key: KeyEvent) -> Option<super::Key> {
    use super::Key;
    Some(match key.code {
        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => Key::Interrupt,
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => Key::Char(c),
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        _ => return None,
    })
}
