//! eden owns SIGINT, SIGTERM and SIGHUP: the agent runs in its own process group, so the terminal's
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
    // The terminal went away (an ssh session dropped): stop as for Ctrl-C, exit 129.
    let mut hangup = signal(SignalKind::hangup())?;
    let (sender, receiver) = watch::channel(None);
    tokio::spawn(async move {
        let mut count = 0;
        loop {
            let received = tokio::select! {
                _ = interrupt.recv() => libc_signal::SIGINT,
                _ = terminate.recv() => libc_signal::SIGTERM,
                _ = hangup.recv() => libc_signal::SIGHUP,
            };
            count += 1;
            // The first signal decides the exit code (130, 143 or 129).
            let first = sender.borrow().map_or(received, |abort: Abort| abort.signal);
            sender.send_replace(Some(Abort { signal: first, count }));
        }
    });
    Ok(receiver)
}

mod libc_signal {
    pub const SIGINT: i32 = nix::sys::signal::Signal::SIGINT as i32;
    pub const SIGTERM: i32 = nix::sys::signal::Signal::SIGTERM as i32;
    pub const SIGHUP: i32 = nix::sys::signal::Signal::SIGHUP as i32;
}

/// For commands without an async runtime (`eden clean`): from here on SIGINT and SIGTERM only
/// set a flag, which the command checks between steps. Returns the check: the signal received
/// so far, if any.
pub fn flag() -> fn() -> Option<i32> {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    use std::sync::atomic::{AtomicI32, Ordering};
    static RECEIVED: AtomicI32 = AtomicI32::new(0);
    extern "C" fn record(signal: i32) {
        // Only an atomic store: async-signal-safe.
        let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    }
    let action = SigAction::new(SigHandler::Handler(record), SaFlags::SA_RESTART, SigSet::empty());
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        let _ = unsafe { sigaction(signal, &action) };
    }
    fn check() -> Option<i32> {
        let signal = RECEIVED.load(Ordering::SeqCst);
        (signal != 0).then_some(signal)
    }
    check
}

/// For a coordinator of several eden processes (`eden run A.toml B.toml`): block SIGINT,
/// SIGTERM and SIGHUP in this thread — call it before starting any other, which inherit the
/// mask — and deliver each to `deliver`, from a thread of its own waiting with `sigwait`.
/// Children must unblock them again (`ProcessBuilder::spawn_member` does).
pub fn deliver_to(deliver: impl Fn(i32) + Send + 'static) -> std::io::Result<()> {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        set.add(signal);
    }
    set.thread_block().map_err(std::io::Error::from)?;
    std::thread::Builder::new().name("signals".into()).spawn(move || loop {
        match set.wait() {
            Ok(signal) => deliver(signal as i32),
            Err(_) => return,
        }
    })?;
    Ok(())
}
