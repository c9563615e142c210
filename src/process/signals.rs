//! eden owns SIGINT, SIGTERM and SIGHUP: the agent runs in its own process group, so the terminal's
//! Ctrl-C reaches only eden, which forwards it, waits a grace period, then kills. Each signal
//! bumps a counter; a second one means "kill now". SIGUSR1 is a coordinator's request that one
//! of several attempts stop (`STOP_REQUEST`): Ctrl-C until the run's teardown began, nothing
//! after.

use crate::exit::Signal;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// The first signal eden received (0: none yet), and how many: set from the signal handler
/// itself, so code that blocks the async runtime's thread (a helper command, a lock wait) sees
/// a signal at once (`received`, `count`).
static FIRST: AtomicI32 = AtomicI32::new(0);
static COUNT: AtomicU32 = AtomicU32::new(0);

/// A pipe a signal writes a byte to, so a thread asleep in `sleep_unless_stopped` wakes at once
/// (-1 until `note_all` made it): its read and write ends.
static WAKE_READ: AtomicI32 = AtomicI32::new(-1);
static WAKE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// Only atomic operations and a `write(2)`: async-signal-safe.
fn note(signal: i32) {
    let _ = FIRST.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    COUNT.fetch_add(1, Ordering::SeqCst);
    let wake = WAKE_WRITE.load(Ordering::SeqCst);
    if wake >= 0 {
        // SAFETY: one byte from a live buffer to a non-blocking pipe eden keeps open.
        let _ = unsafe { nix::libc::write(wake, [1u8].as_ptr().cast(), 1) };
    }
}

/// The wake-up pipe, made once (non-blocking, closed on exec), before any handler writes to it.
fn make_wake_pipe() {
    use std::os::fd::IntoRawFd;
    if WAKE_READ.load(Ordering::SeqCst) >= 0 {
        return;
    }
    let flags = nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_CLOEXEC;
    if let Ok((read, write)) = nix::unistd::pipe2(flags) {
        WAKE_READ.store(read.into_raw_fd(), Ordering::SeqCst);
        WAKE_WRITE.store(write.into_raw_fd(), Ordering::SeqCst);
    }
}

/// The first SIGINT, SIGTERM or SIGHUP eden received, if any.
pub(crate) fn received() -> Option<Signal> {
    let signal = FIRST.load(Ordering::SeqCst);
    (signal != 0).then_some(Signal(signal))
}

/// How many of them eden has received.
pub(crate) fn count() -> u32 {
    COUNT.load(Ordering::SeqCst)
}

/// Set once a run's teardown began (`rearm`): a request to stop (`STOP_REQUEST`) is then
/// moot, and is not noted.
static FINISHING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The signal with which a coordinator asks one of several attempts to stop because another
/// landed: the run stops as for Ctrl-C while it is working, and is left to finish once it is
/// finishing (a SIGINT would cut its clean-up short).
pub(crate) const STOP_REQUEST: Signal = Signal(nix::sys::signal::Signal::SIGUSR1 as i32);

/// A coordinator's request to stop was honoured (`STOP_REQUEST`).
static STOP_REQUESTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Only atomic operations: async-signal-safe.
fn note_stop_request() {
    if !FINISHING.load(Ordering::SeqCst) {
        STOP_REQUESTED.store(true, Ordering::SeqCst);
        note(libc_signal::SIGINT);
    }
}

/// Did this run stop because a coordinator asked it to (another attempt landed)?
pub(crate) fn stop_requested() -> bool {
    STOP_REQUESTED.load(Ordering::SeqCst)
}

/// How many signals had come when what eden does now began (`rearm`).
static BASELINE: AtomicU32 = AtomicU32::new(0);

/// Is what eden does now to stop? A signal came since it began: at first any signal; after
/// `rearm` (a run's teardown, which Ctrl-C starts) only a further one.
pub(crate) fn stopping() -> bool {
    count() > BASELINE.load(Ordering::SeqCst)
}

/// Sleep `wait`, or less when eden is to stop (then the `Interrupted` error of the signal).
pub(crate) fn sleep_unless_stopped(wait: std::time::Duration) -> Result<(), crate::error::Error> {
    let until = std::time::Instant::now() + wait;
    loop {
        if stopping() {
            return Err(crate::error::Error::interrupted(received().unwrap_or(crate::exit::Signal::INT)));
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        wait_for_a_signal(left);
    }
}

/// Sleep at most `left` (and at most a second, for a sleeper whose wake-up another took), or
/// until a signal writes to the wake-up pipe; the bytes read are signals `stopping` counts.
fn wait_for_a_signal(left: std::time::Duration) {
    let read = WAKE_READ.load(Ordering::SeqCst);
    if read < 0 {
        std::thread::sleep(left.min(std::time::Duration::from_millis(100)));
        return;
    }
    let millis = i32::try_from(left.as_millis().clamp(1, 1000)).unwrap_or(1000);
    let mut wake = nix::libc::pollfd { fd: read, events: nix::libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd that lives for the call, on a descriptor eden keeps open.
    let ready = unsafe { nix::libc::poll(&mut wake, 1, millis) };
    if ready > 0 {
        let mut drained = [0u8; 64];
        // SAFETY: a non-blocking read into a live buffer of its length.
        while unsafe { nix::libc::read(read, drained.as_mut_ptr().cast(), drained.len()) } > 0 {}
    }
}

/// From here on only a signal that comes from now stops what eden does (`stopping`).
pub(crate) fn rearm() {
    FINISHING.store(true, Ordering::SeqCst);
    BASELINE.store(count(), Ordering::SeqCst);
}

/// Note every SIGINT, SIGTERM and SIGHUP in `FIRST` and `COUNT`, beside whatever else handles
/// them: once per process (a pull request's rounds are runs of their own in it, and a signal
/// counted twice would read as "kill now"). From then on they no longer end eden by default.
pub(crate) fn note_all() -> std::io::Result<()> {
    static NOTED: std::sync::OnceLock<Result<(), std::io::ErrorKind>> = std::sync::OnceLock::new();
    NOTED.get_or_init(|| register_notes().map_err(|err| err.kind())).map_err(std::io::Error::from)
}

fn register_notes() -> std::io::Result<()> {
    make_wake_pipe();
    for signal in [libc_signal::SIGINT, libc_signal::SIGTERM, libc_signal::SIGHUP] {
        // SAFETY: `note` only does atomic operations and a `write`, which are async-signal-safe.
        unsafe { signal_hook_registry::register(signal, move || note(signal)) }?;
    }
    // SAFETY: `note_stop_request` only does atomic operations, which are async-signal-safe.
    unsafe { signal_hook_registry::register(STOP_REQUEST.number(), note_stop_request) }?;
    Ok(())
}

/// A request from the signal listener: the signal eden received, and how many so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Abort {
    pub(crate) signal: Signal,
    pub(crate) count: u32,
}

/// Start listening. From here on SIGINT/SIGTERM no longer end eden by default: they are
/// requests the run honours at its next safe point.
pub(crate) fn listen() -> std::io::Result<watch::Receiver<Option<Abort>>> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    // The terminal went away (an ssh session dropped): stop as for Ctrl-C, exit 129.
    let mut hangup = signal(SignalKind::hangup())?;
    let mut stop_request = signal(SignalKind::user_defined1())?;
    note_all()?;
    let (sender, receiver) = watch::channel(None);
    tokio::spawn(async move {
        let mut count = 0;
        loop {
            let received = tokio::select! {
                _ = interrupt.recv() => libc_signal::SIGINT,
                _ = terminate.recv() => libc_signal::SIGTERM,
                _ = hangup.recv() => libc_signal::SIGHUP,
                // Another attempt landed: as Ctrl-C, unless the run is finishing already.
                _ = stop_request.recv() => match FINISHING.load(Ordering::SeqCst) {
                    true => continue,
                    false => libc_signal::SIGINT,
                },
            };
            count += 1;
            // The first signal decides the exit code (130, 143 or 129).
            let first = sender.borrow().map_or(Signal(received), |abort: Abort| abort.signal);
            sender.send_replace(Some(Abort { signal: first, count }));
        }
    });
    Ok(receiver)
}

/// The signal `eden steer` sends a run's eden: interrupt the agent's invocation; the new prompt
/// waits in the run's steer file (`Layout::steer`).
pub(crate) const STEER_REQUEST: Signal = Signal(nix::sys::signal::Signal::SIGUSR2 as i32);

/// Count every `STEER_REQUEST`: a supervisor ends the agent when the count changes
/// (`Watchdogs::steer`).
pub(crate) fn listen_for_steering() -> std::io::Result<watch::Receiver<u64>> {
    let mut steer = signal(SignalKind::user_defined2())?;
    let (sender, receiver) = watch::channel(0u64);
    tokio::spawn(async move {
        let mut count = 0u64;
        while steer.recv().await.is_some() {
            count += 1;
            sender.send_replace(count);
        }
    });
    Ok(receiver)
}

mod libc_signal {
    pub(crate) const SIGINT: i32 = nix::sys::signal::Signal::SIGINT as i32;
    pub(crate) const SIGTERM: i32 = nix::sys::signal::Signal::SIGTERM as i32;
    pub(crate) const SIGHUP: i32 = nix::sys::signal::Signal::SIGHUP as i32;
}

/// For commands without an async runtime (`eden clean`): from here on SIGINT and SIGTERM only
/// set a flag, which the command checks between steps. Returns the check: the signal received
/// so far, if any.
pub(crate) fn flag() -> fn() -> Option<Signal> {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    make_wake_pipe();
    extern "C" fn record(signal: i32) {
        note(signal);
    }
    let action = SigAction::new(SigHandler::Handler(record), SaFlags::SA_RESTART, SigSet::empty());
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        let _ = unsafe { sigaction(signal, &action) };
    }
    received
}

/// For a coordinator of several eden processes (`eden run A.toml B.toml`): block SIGINT,
/// SIGTERM and SIGHUP in this thread — call it before starting any other, which inherit the
/// mask — and deliver each to `deliver`, from a thread of its own waiting with `sigwait`.
/// Children must unblock them again (`ProcessBuilder::spawn_member` does).
pub(crate) fn deliver_to(deliver: impl Fn(Signal) + Send + 'static) -> std::io::Result<()> {
    use nix::sys::signal::SigSet;
    use nix::sys::signal::Signal as Number;
    let mut set = SigSet::empty();
    for signal in [Number::SIGINT, Number::SIGTERM, Number::SIGHUP] {
        set.add(signal);
    }
    set.thread_block().map_err(std::io::Error::from)?;
    std::thread::Builder::new().name("signals".into()).spawn(move || loop {
        match set.wait() {
            Ok(signal) => deliver(Signal(signal as i32)),
            Err(_) => return,
        }
    })?;
    Ok(())
}
