//! eden owns SIGINT and SIGTERM: the agent runs in its own process group, so the terminal's
//! Ctrl-C reaches only eden, which forwards it, waits a grace period, then kills. Each signal
//! bumps a counter; a second one means "kill now".

use super::Abort;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// Start listening. From here on SIGINT/SIGTERM no longer end eden by default: they are
/// requests the run honours at its next safe point.
pub fn listen() -> std::io::Result<watch::Receiver<Option<Abort>>> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (sender, receiver) = watch::channel(None);
    tokio::spawn(async move {
        let mut count = 0;
        loop {
            let received = tokio::select! {
                _ = interrupt.recv() => libc_signal::SIGINT,
                _ = terminate.recv() => libc_signal::SIGTERM,
            };
            count += 1;
            // The first signal decides the exit code (130 or 143).
            let first = sender.borrow().map_or(received, |abort: Abort| abort.signal);
            sender.send_replace(Some(Abort { signal: first, count }));
        }
    });
    Ok(receiver)
}

mod libc_signal {
    pub const SIGINT: i32 = nix::sys::signal::Signal::SIGINT as i32;
    pub const SIGTERM: i32 = nix::sys::signal::Signal::SIGTERM as i32;
}
