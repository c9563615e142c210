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

    /// The next key or resize within `wait`, if any.
    pub(crate) fn input(&self, wait: Duration) -> std::io::Result<Option<Input>> {
        if !event::poll(wait)? {
            return Ok(None);
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
