//! The one supervised-process primitive, for agents, hooks, prompt commands and the engine
//! clients that run them in containers: start in its own process group, stream stdout and
//! stderr line by line to the handlers, and end it when a watchdog fires — idle (no stdout),
//! step (wall time), overstay (the handlers said the work is done, but it does not exit) and
//! abort (eden got SIGINT/SIGTERM/SIGHUP). Every kill targets the process group, and the
//! command's processes inside a sandbox: first the polite signal, then SIGKILL after a grace.

use super::signals::Abort;
use super::{GroupGuard, LineSplitter, ProcessBuilder, Stdin, Tail};
use nix::sys::signal::Signal;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

/// Agents can print hundreds of MB/s. With the default 64 KiB pipe, writer and reader take
/// turns every 64 KiB; a 1 MiB pipe lets both run at full speed.
const PIPE_SIZE: i32 = 1 << 20;
/// Each of the stdout reader's buffers (`reader.rs`: three go round).
const READ_BUFFER: usize = 128 * 1024;

/// Ask the kernel for a bigger pipe. Best effort: an unprivileged process may be capped by
/// `/proc/sys/fs/pipe-max-size`, and a smaller pipe only costs speed.
fn enlarge_pipe(pipe: &tokio::process::ChildStdout) {
    use std::os::fd::AsRawFd;
    let _ = nix::fcntl::fcntl(pipe.as_raw_fd(), nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
}

#[derive(Debug, Clone)]
pub(crate) struct Watchdogs {
    pub(crate) idle_timeout: Duration,
    pub(crate) idle_warning_interval: Duration,
    pub(crate) step_timeout: Duration,
    pub(crate) stopping: Stopping,
    /// A moment the command must not outlive (a budget's `max_duration`): stopped as by
    /// `Flow::Stop`.
    pub(crate) deadline: Option<Instant>,
    /// `eden steer`: a change ends the command as an interrupt would (SIGINT to its group),
    /// `Outcome::Steered`. What changed before the command started does not count.
    pub(crate) steer: Option<watch::Receiver<u64>>,
}

/// How a command is ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stopping {
    /// Between the polite signal and SIGKILL.
    pub(crate) kill_grace: Duration,
    /// After the leader exits, how long to keep reading pipes that its leftovers still hold
    /// open (containment ends them; this bounds the wait where it cannot).
    pub(crate) drain: Duration,
}

/// What a handler wants once it has seen a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    /// Output that is no progress (a provider retry notice): it does not reset the idle
    /// watchdog, so an agent that only retries is stopped like a silent one.
    Waiting,
    /// The command's work is done (an agent printed its completion signal): it has this long
    /// to exit on its own before it is stopped (`Outcome::Overstayed`).
    FinishWithin(Duration),
    /// Stop the command now, gracefully (a budget was crossed): `Outcome::Stopped`.
    Stop,
}

/// What the supervisor calls as output arrives.
pub(crate) trait Handlers {
    /// One line of stdout, or a piece of an over-long one when `continues` (the rest follows).
    fn stdout_line(&mut self, line: &[u8], continues: bool) -> Flow;
    fn stderr_line(&mut self, line: &[u8]);
    /// No stdout for `silent_for`, repeated every warning interval.
    fn idle_warning(&mut self, silent_for: Duration);
    /// Every `TICK` while the command runs: for what happens beside its output.
    fn tick(&mut self) {}
}

/// How often `Handlers::tick` is called.
const TICK: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The process ended on its own. `code` is 128+n for a child killed by signal n.
    Exited {
        code: i32,
    },
    /// Told to finish (`Flow::FinishWithin`), it did not exit in time and was stopped.
    Overstayed,
    IdleTimeout(Duration),
    StepTimeout(Duration),
    Aborted(crate::exit::Signal),
    /// A handler said `Flow::Stop`, or the deadline came.
    Stopped,
    /// `eden steer` interrupted it: a new prompt follows.
    Steered,
}

/// The last output of each stream, kept apart: their relative order is not knowable.
pub(crate) struct OutputTails {
    pub(crate) stdout: Tail,
    pub(crate) stderr: Tail,
}

impl OutputTails {
    /// Indented lines for an error message: the end of stdout, then the end of stderr.
    pub(crate) fn describe(&self, max_lines: usize) -> String {
        let mut out = String::new();
        for line in self.stdout.lines(max_lines) {
            out.push_str(&format!("\n  {line}"));
        }
        let stderr = self.stderr.lines(max_lines);
        if !stderr.is_empty() {
            out.push_str("\n  stderr:");
            for line in stderr {
                out.push_str(&format!("\n  {line}"));
            }
        }
        out
    }
}

/// Reaches the command's processes inside a sandbox, where the host process group does not:
/// the commands that do it (engine execs), which the supervisor runs without waiting on them.
pub(crate) trait Inside: Send + Sync {
    /// Deliver `signal` to the command's process group inside (`None`: nothing to signal yet).
    fn signal_command(&self, signal: Signal) -> Option<ProcessBuilder>;
    /// End everything the command left running inside. Needed only when the command was
    /// SIGKILLed: otherwise it cleans up after itself as it exits.
    fn sweep_command(&self) -> ProcessBuilder;
    /// A command that ends with success when the sandbox itself has stopped or gone: the
    /// messenger reaching inside (an engine's exec client) does not always notice (under gVisor
    /// it can wait for ever on a removed container), so the supervisor ends it then.
    fn gone_command(&self) -> Option<ProcessBuilder> {
        None
    }
}

/// Why the supervisor is ending the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillReason {
    Overstayed,
    Idle,
    Step,
    Aborted(crate::exit::Signal),
    Stopped,
    Steered,
}

/// The moments the supervisor waits for, besides output and the exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    /// No stdout for `idle_timeout`.
    Idle,
    /// Time to say the command has been silent (`idle_warning_interval`).
    IdleWarning,
    /// `step_timeout` of wall time.
    Step,
    /// Told to finish (`Flow::FinishWithin`), it has not.
    Overstay,
    /// The caller's deadline (a budget's `max_duration`).
    Deadline,
    /// The grace after the polite signal is over.
    Sigkill,
    /// It exited, and what it left behind still holds the pipes open.
    Drain,
}

/// What the supervisor must do when a moment comes or an event arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    Nothing,
    /// Signal the command's process group (and its processes inside a sandbox).
    Signal(Signal),
    /// Tell the handlers it has been silent this long.
    Warn(Duration),
    /// SIGKILL what is left and stop reading.
    GiveUp,
}

/// Everything the supervisor knows about one command, and the decisions that follow from it.
/// No process and no I/O: `supervise` feeds it what happens and carries out what it answers,
/// and the unit tests below drive it with instants of their own.
#[derive(Debug)]
struct Supervision {
    watchdogs: Watchdogs,
    step_deadline: Instant,
    last_output: Instant,
    next_warning: Instant,
    /// Set the first time a handler says the work is done.
    finish_deadline: Option<Instant>,
    /// A handler asked to stop the command (`Flow::Stop`), not acted on yet.
    stop_requested: bool,
    exit_code: Option<i32>,
    drain_deadline: Option<Instant>,
    /// Why it is being ended (the first reason), and when SIGKILL follows.
    kill: Option<(KillReason, Instant)>,
    sigkill_sent: bool,
    stdout_open: bool,
    stderr_open: bool,
}

impl Supervision {
    fn new(watchdogs: &Watchdogs, start: Instant) -> Supervision {
        Supervision {
            watchdogs: watchdogs.clone(),
            step_deadline: start + watchdogs.step_timeout,
            last_output: start,
            next_warning: start + watchdogs.idle_warning_interval,
            finish_deadline: None,
            stop_requested: false,
            exit_code: None,
            drain_deadline: None,
            kill: None,
            sigkill_sent: false,
            stdout_open: true,
            stderr_open: true,
        }
    }

    /// Still running and not being ended: the watchdogs are on.
    fn watching(&self) -> bool {
        self.exit_code.is_none() && self.kill.is_none()
    }

    /// It exited and both pipes are read to their end.
    fn done(&self) -> bool {
        self.exit_code.is_some() && !self.stdout_open && !self.stderr_open
    }

    /// Start ending the command with `signal`; the first reason is the one that counts (a step
    /// timeout while an abort is under way is still an abort).
    fn begin_kill(&mut self, reason: KillReason, signal: Signal, now: Instant) -> Act {
        let reason = self.kill.map_or(reason, |(first, _)| first);
        self.kill = Some((reason, now + self.watchdogs.stopping.kill_grace));
        Act::Signal(signal)
    }

    /// What a handler answered for one line of stdout.
    fn flow(&mut self, flow: Flow, now: Instant) {
        match (self.finish_deadline, flow) {
            (None, Flow::FinishWithin(within)) => self.finish_deadline = Some(now + within),
            (_, Flow::Stop) => self.stop_requested = true,
            _ => {}
        }
    }

    /// A stop a handler asked for, carried out between reads.
    fn take_stop(&mut self, now: Instant) -> Act {
        match std::mem::take(&mut self.stop_requested) {
            true if self.watching() => self.begin_kill(KillReason::Stopped, Signal::SIGTERM, now),
            _ => Act::Nothing,
        }
    }

    /// A chunk of stdout that completed `lines` lines, `waiting` of which only waited (a
    /// provider's retry notice): progress, unless every line was only waiting.
    fn stdout_read(&mut self, lines: usize, waiting: usize, now: Instant) {
        if lines == 0 || waiting < lines {
            self.last_output = now;
            self.next_warning = now + self.watchdogs.idle_warning_interval;
        }
    }

    fn exited(&mut self, code: i32, now: Instant) {
        self.exit_code = Some(code);
        self.drain_deadline = Some(now + self.watchdogs.stopping.drain);
    }

    /// eden got a signal: pass it on; a second one (or one before the command started) is
    /// SIGKILL at once.
    fn aborted(&mut self, request: Abort, now: Instant) -> Act {
        let reason = KillReason::Aborted(request.signal);
        if request.count >= 2 {
            self.sigkill_sent = true;
            return self.begin_kill(reason, Signal::SIGKILL, now);
        }
        self.begin_kill(reason, Signal::try_from(request.signal.number()).unwrap_or(Signal::SIGTERM), now)
    }

    /// The next moment to wait for, if any.
    fn next_timer(&self) -> Option<(Instant, Timer)> {
        let idle_at = self.last_output + self.watchdogs.idle_timeout;
        let watching = self.watching();
        let candidates = [
            (watching.then_some(idle_at), Timer::Idle),
            // A warning in the last second before the idle kill says nothing the kill won't.
            (
                (watching && self.next_warning + Duration::from_secs(1) < idle_at).then_some(self.next_warning),
                Timer::IdleWarning,
            ),
            (watching.then_some(self.step_deadline), Timer::Step),
            (self.finish_deadline.filter(|_| watching), Timer::Overstay),
            (self.watchdogs.deadline.filter(|_| watching), Timer::Deadline),
            (self.kill.filter(|_| !self.sigkill_sent).map(|(_, at)| at), Timer::Sigkill),
            (self.drain_deadline, Timer::Drain),
        ];
        candidates.into_iter().filter_map(|(at, timer)| Some((at?, timer))).min_by_key(|(at, _)| *at)
    }

    /// The moment `timer` came.
    fn fire(&mut self, timer: Timer, now: Instant) -> Act {
        match timer {
            Timer::Idle => self.begin_kill(KillReason::Idle, Signal::SIGTERM, now),
            Timer::IdleWarning => {
                self.next_warning += self.watchdogs.idle_warning_interval;
                Act::Warn(now.saturating_duration_since(self.last_output))
            }
            Timer::Step => self.begin_kill(KillReason::Step, Signal::SIGTERM, now),
            Timer::Overstay => self.begin_kill(KillReason::Overstayed, Signal::SIGTERM, now),
            Timer::Deadline => self.begin_kill(KillReason::Stopped, Signal::SIGTERM, now),
            Timer::Sigkill => {
                self.sigkill_sent = true;
                Act::Signal(Signal::SIGKILL)
            }
            Timer::Drain => Act::GiveUp,
        }
    }

    fn outcome(&self) -> Outcome {
        match self.kill {
            Some((KillReason::Aborted(signal), _)) => Outcome::Aborted(signal),
            Some((KillReason::Idle, _)) => Outcome::IdleTimeout(self.watchdogs.idle_timeout),
            Some((KillReason::Step, _)) => Outcome::StepTimeout(self.watchdogs.step_timeout),
            Some((KillReason::Overstayed, _)) => Outcome::Overstayed,
            Some((KillReason::Stopped, _)) => Outcome::Stopped,
            Some((KillReason::Steered, _)) => Outcome::Steered,
            None => Outcome::Exited { code: self.exit_code.unwrap_or(1) },
        }
    }
}

/// The command's output pipes, with what reads them into lines.
struct Pipes {
    stdout: super::reader::Reader,
    stderr: tokio::process::ChildStderr,
    err_buffer: Vec<u8>,
    out_lines: LineSplitter,
    err_lines: LineSplitter,
    tails: OutputTails,
}

/// Start `command` in its own process group, its stdin written beside the loop.
fn spawn(command: &mut ProcessBuilder) -> std::io::Result<(tokio::process::Child, Pipes)> {
    let mut child = command.spawn_group()?;
    if let (Stdin::Bytes(bytes), Some(mut stdin)) = (command.take_stdin(), child.stdin.take()) {
        // A child that never reads its stdin must not block us: write from a task, ignore EPIPE.
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("stdout is not piped"))?;
    enlarge_pipe(&stdout);
    let stderr = child.stderr.take().ok_or_else(|| std::io::Error::other("stderr is not piped"))?;
    let pipes = Pipes {
        stdout: super::reader::Reader::start(stdout, READ_BUFFER)?,
        stderr,
        err_buffer: vec![0u8; 8 * 1024],
        out_lines: LineSplitter::default(),
        err_lines: LineSplitter::default(),
        tails: OutputTails { stdout: Tail::new(16 * 1024), stderr: Tail::new(8 * 1024) },
    };
    Ok((child, pipes))
}

pub(crate) async fn supervise(
    mut command: ProcessBuilder,
    watchdogs: &Watchdogs,
    handlers: &mut dyn Handlers,
    abort: &mut watch::Receiver<Option<Abort>>,
    inside: Option<&dyn Inside>,
) -> std::io::Result<(Outcome, OutputTails)> {
    let (mut child, mut pipes) = spawn(&mut command)?;
    let guard = GroupGuard::new(child.id().unwrap_or(0));
    let act = |act: Act| carry_out(act, inside, &guard);
    let mut state = Supervision::new(watchdogs, Instant::now());
    if let Some(request) = *abort.borrow_and_update() {
        // eden was told to stop before the command started: it gets no grace.
        act(state.begin_kill(KillReason::Aborted(request.signal), Signal::SIGKILL, Instant::now()));
    }
    let (mut abort_open, mut gone_open) = (true, true);
    let mut steer = watchdogs.steer.clone().map(seen);
    let gone = sandbox_gone(inside);
    tokio::pin!(gone);
    let mut ticks = ticks();
    while !state.done() {
        act(state.take_stop(Instant::now()));
        let next = state.next_timer();
        tokio::select! {
            read = pipes.stdout.next(), if state.stdout_open => {
                read_stdout(read, &mut pipes, &mut state, handlers);
            },
            read = pipes.stderr.read(&mut pipes.err_buffer), if state.stderr_open => {
                state.stderr_open = read_stderr(read, &mut pipes, handlers);
            },
            status = child.wait(), if state.exit_code.is_none() => {
                state.exited(status.map_or(1, crate::exit::Exit::from_status), Instant::now());
            },
            gone = &mut gone, if state.exit_code.is_none() && gone_open => {
                gone_open = false;
                if gone {
                    guard.signal(Signal::SIGKILL);
                }
            },
            changed = abort.changed(), if state.exit_code.is_none() && abort_open => {
                match changed.map(|()| *abort.borrow_and_update()) {
                    Ok(request) => act(request.map_or(Act::Nothing, |request| interrupt(&mut state, request, inside))),
                    // The sender is gone: nobody can abort any more; stop polling it.
                    Err(_) => abort_open = false,
                }
            },
            changed = steered(&mut steer), if steer.is_some() && state.watching() => match changed {
                true => act(steer_now(&mut state, inside)),
                false => steer = None,
            },
            _ = ticks.tick() => handlers.tick(),
            () = sleep_until(next.map_or_else(Instant::now, |(at, _)| at)), if next.is_some() => {
                let timer = next.map_or(Timer::Drain, |(_, timer)| timer);
                match state.fire(timer, Instant::now()) {
                    Act::Warn(silent_for) => handlers.idle_warning(silent_for),
                    // Something in the group still holds our pipes: end it and stop reading.
                    Act::GiveUp => {
                        act(Act::GiveUp);
                        break;
                    }
                    other => act(other),
                }
            },
        }
    }
    drop(guard);
    if let (Some(inside), true) = (inside, state.sigkill_sent) {
        let _ = inside.sweep_command().output_async().await;
    }
    // What the command left behind (re-parented to eden's containment) goes with it.
    super::contain::reap_orphans();
    Ok((state.outcome(), pipes.tails))
}

/// A signal the watchdogs or an abort call for: to the command inside the sandbox, if any, and
/// to the group on this machine.
fn carry_out(act: Act, inside: Option<&dyn Inside>, guard: &GroupGuard) {
    let signal = match act {
        Act::Signal(signal) => signal,
        Act::GiveUp => Signal::SIGKILL,
        Act::Nothing | Act::Warn(_) => return,
    };
    signal_inside(inside, signal);
    guard.signal(signal);
}

/// `Handlers::tick`'s clock: a tick that comes late is skipped, not made up in a burst.
fn ticks() -> tokio::time::Interval {
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks
}

/// eden got a signal: the command's share of it (`Supervision::aborted`). In a sandbox the first,
/// polite one goes to the command inside alone, as a steer's does (`steer_now`): the client
/// that reaches it ends when its wrapper has, sweep and all, so what eden runs there next (the
/// work brought home) cannot meet the sweep.
fn interrupt(state: &mut Supervision, request: Abort, inside: Option<&dyn Inside>) -> Act {
    inside_first(state.aborted(request, Instant::now()), inside)
}

/// A polite signal for a command in a sandbox goes to the command inside alone (`Act::Nothing`
/// for the host's group); SIGKILL, and anything outside a sandbox, as `act` says.
fn inside_first(act: Act, inside: Option<&dyn Inside>) -> Act {
    match (act, inside) {
        (Act::Signal(signal), Some(_)) if signal != Signal::SIGKILL => {
            signal_inside(inside, signal);
            Act::Nothing
        }
        (act, _) => act,
    }
}

/// What changed before the command started does not count.
fn seen(mut steer: watch::Receiver<u64>) -> watch::Receiver<u64> {
    steer.borrow_and_update();
    steer
}

/// `eden steer`: interrupt the command (SIGINT). In a sandbox only the command inside is
/// signalled (the returned `Act` is then nothing): the client that reaches it ends when its
/// wrapper has, sweep and all, so what eden runs there next cannot meet the sweep. SIGKILL
/// follows after the grace, as ever.
fn steer_now(state: &mut Supervision, inside: Option<&dyn Inside>) -> Act {
    inside_first(state.begin_kill(KillReason::Steered, Signal::SIGINT, Instant::now()), inside)
}

/// Deliver `signal` to the command inside its sandbox, if it is in one. The engine exec that
/// reaches inside runs beside the loop: it may take a while.
fn signal_inside(inside: Option<&dyn Inside>, signal: Signal) {
    if let Some(command) = inside.and_then(|inside| inside.signal_command(signal)) {
        tokio::spawn(async move {
            let _ = command.output_async().await;
        });
    }
}

/// A steer came (`true`), or nobody can steer any more (`false`).
async fn steered(steer: &mut Option<watch::Receiver<u64>>) -> bool {
    match steer {
        Some(steer) => steer.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// Ends when the sandbox the command runs in has gone (`true`): what still waits on it here is
/// then ended, and the caller asks the sandbox why the command failed. A sentinel that failed
/// itself (`false`) only stops the watching; without one it never ends.
async fn sandbox_gone(inside: Option<&dyn Inside>) -> bool {
    match inside.and_then(Inside::gone_command) {
        Some(command) => command.output_async().await.is_ok_and(|output| output.success()),
        None => std::future::pending().await,
    }
}

/// A read of stderr: its lines to the handlers. Returns whether stderr is still open.
fn read_stderr(read: std::io::Result<usize>, pipes: &mut Pipes, handlers: &mut dyn Handlers) -> bool {
    match read {
        Ok(0) | Err(_) => {
            pipes.err_lines.finish(|line, _| handlers.stderr_line(line));
            false
        }
        Ok(n) => {
            pipes.tails.stderr.push(&pipes.err_buffer[..n]);
            pipes.err_lines.feed(&pipes.err_buffer[..n], |line, _| handlers.stderr_line(line));
            true
        }
    }
}

/// A read of stdout: its lines to the handlers, what they answer to the state.
fn read_stdout(read: super::reader::Chunk, pipes: &mut Pipes, state: &mut Supervision, handlers: &mut dyn Handlers) {
    let (buffer, n) = match read {
        Ok((buffer, n)) if n > 0 => (buffer, n),
        Ok(_) | Err(_) => {
            state.stdout_open = false;
            pipes.out_lines.finish(|line, continues| state.flow(handlers.stdout_line(line, continues), Instant::now()));
            return;
        }
    };
    let chunk = &buffer[..n];
    pipes.tails.stdout.push(chunk);
    let (mut lines, mut waiting) = (0, 0);
    let now = Instant::now();
    pipes.out_lines.feed(chunk, |line, continues| {
        let said = handlers.stdout_line(line, continues);
        lines += 1;
        waiting += usize::from(said == Flow::Waiting);
        state.flow(said, now);
    });
    state.stdout_read(lines, waiting, now);
    pipes.stdout.give_back(buffer);
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn watchdogs() -> Watchdogs {
        Watchdogs {
            idle_timeout: 60 * SECOND,
            idle_warning_interval: 20 * SECOND,
            step_timeout: 600 * SECOND,
            stopping: Stopping { kill_grace: 5 * SECOND, drain: 2 * SECOND },
            deadline: None,
            steer: None,
        }
    }

    /// Let time pass to the next timer and fire it, as the loop does.
    fn tick(state: &mut Supervision) -> (Instant, Timer, Act) {
        let (at, timer) = state.next_timer().expect("a timer");
        (at, timer, state.fire(timer, at))
    }

    #[test]
    fn silence_warns_then_stops_politely_then_kills() {
        let start = Instant::now();
        let mut state = Supervision::new(&watchdogs(), start);
        assert_eq!(tick(&mut state), (start + 20 * SECOND, Timer::IdleWarning, Act::Warn(20 * SECOND)));
        assert_eq!(tick(&mut state), (start + 40 * SECOND, Timer::IdleWarning, Act::Warn(40 * SECOND)));
        // No warning in the last second before the kill: the kill says it.
        assert_eq!(tick(&mut state), (start + 60 * SECOND, Timer::Idle, Act::Signal(Signal::SIGTERM)));
        assert!(!state.watching());
        assert_eq!(tick(&mut state), (start + 65 * SECOND, Timer::Sigkill, Act::Signal(Signal::SIGKILL)));
        state.exited(137, start + 66 * SECOND);
        assert_eq!(state.next_timer(), Some((start + 68 * SECOND, Timer::Drain)));
        assert_eq!(state.outcome(), Outcome::IdleTimeout(60 * SECOND));
    }

    #[test]
    fn output_resets_the_idle_clock_unless_it_only_waits() {
        let start = Instant::now();
        let mut state = Supervision::new(&watchdogs(), start);
        state.stdout_read(3, 0, start + 30 * SECOND);
        assert_eq!(state.next_timer(), Some((start + 50 * SECOND, Timer::IdleWarning)));
        // Two retry notices and nothing else: still idle since 30 s.
        state.stdout_read(2, 2, start + 45 * SECOND);
        assert_eq!(state.next_timer(), Some((start + 50 * SECOND, Timer::IdleWarning)));
        // A piece of a long line completes no line: bytes are progress.
        state.stdout_read(0, 0, start + 46 * SECOND);
        assert_eq!(state.next_timer(), Some((start + 66 * SECOND, Timer::IdleWarning)));
    }

    #[test]
    fn the_completion_signal_gives_it_time_to_exit_then_it_overstayed() {
        let start = Instant::now();
        let mut state = Supervision::new(&watchdogs(), start);
        state.flow(Flow::FinishWithin(3 * SECOND), start + SECOND);
        // A second signal does not move the deadline.
        state.flow(Flow::FinishWithin(30 * SECOND), start + 2 * SECOND);
        assert_eq!(tick(&mut state), (start + 4 * SECOND, Timer::Overstay, Act::Signal(Signal::SIGTERM)));
        assert_eq!(state.outcome(), Outcome::Overstayed);
    }

    #[test]
    fn an_exit_with_the_pipes_read_is_done_and_its_code_the_outcome() {
        let start = Instant::now();
        let mut state = Supervision::new(&watchdogs(), start);
        state.exited(3, start + SECOND);
        assert!(!state.done(), "the pipes are still open");
        assert_eq!(state.next_timer(), Some((start + 3 * SECOND, Timer::Drain)), "only the drain is watched");
        state.stdout_open = false;
        state.stderr_open = false;
        assert!(state.done());
        assert_eq!(state.outcome(), Outcome::Exited { code: 3 });
        assert_eq!(tick(&mut state).2, Act::GiveUp);
    }

    #[test]
    fn a_stop_is_carried_out_once_and_only_while_it_runs() {
        let start = Instant::now();
        let mut state = Supervision::new(&watchdogs(), start);
        state.flow(Flow::Stop, start + SECOND);
        assert_eq!(state.take_stop(start + SECOND), Act::Signal(Signal::SIGTERM));
        assert_eq!(state.take_stop(start + SECOND), Act::Nothing);
        assert_eq!(state.outcome(), Outcome::Stopped);
        let mut exited = Supervision::new(&watchdogs(), start);
        exited.exited(0, start);
        exited.flow(Flow::Stop, start);
        assert_eq!(exited.take_stop(start), Act::Nothing);
    }

    #[test]
    fn the_first_reason_counts_and_a_second_signal_kills_at_once() {
        let start = Instant::now();
        let mut state = Supervision::new(&watchdogs(), start);
        let first = Abort { signal: crate::exit::Signal::INT, count: 1 };
        assert_eq!(state.aborted(first, start + SECOND), Act::Signal(Signal::SIGINT));
        assert_eq!(state.next_timer(), Some((start + 6 * SECOND, Timer::Sigkill)));
        let second = Abort { signal: crate::exit::Signal(15), count: 2 };
        assert_eq!(state.aborted(second, start + 2 * SECOND), Act::Signal(Signal::SIGKILL));
        assert_eq!(state.next_timer(), None, "killed: nothing more to wait for but the exit");
        assert_eq!(state.outcome(), Outcome::Aborted(crate::exit::Signal::INT));
    }

    #[test]
    fn the_deadline_and_the_step_timeout() {
        let start = Instant::now();
        let mut budgeted = watchdogs();
        budgeted.deadline = Some(start + 10 * SECOND);
        let mut state = Supervision::new(&budgeted, start);
        state.stdout_read(1, 0, start + 9 * SECOND);
        assert_eq!(tick(&mut state), (start + 10 * SECOND, Timer::Deadline, Act::Signal(Signal::SIGTERM)));
        assert_eq!(state.outcome(), Outcome::Stopped);
        let mut short = watchdogs();
        short.step_timeout = 30 * SECOND;
        let mut state = Supervision::new(&short, start);
        state.stdout_read(1, 0, start + 25 * SECOND);
        assert_eq!(tick(&mut state), (start + 30 * SECOND, Timer::Step, Act::Signal(Signal::SIGTERM)));
        assert_eq!(state.outcome(), Outcome::StepTimeout(30 * SECOND));
    }
}
