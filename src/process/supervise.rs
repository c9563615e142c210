//! The one supervised-process primitive, for agents, hooks, prompt commands and the engine
//! clients that run them in containers: start in its own process group, stream stdout and
//! stderr line by line to the handlers, and end it when a watchdog fires — idle (no stdout),
//! step (wall time), overstay (the handlers said the work is done, but it does not exit) and
//! abort (eden got SIGINT/SIGTERM/SIGHUP). Every kill targets the process group, and the
//! command's processes inside a sandbox: first the polite signal, then SIGKILL after a grace.

use super::{GroupGuard, LineSplitter, ProcessBuilder, Stdin, Tail};
use nix::sys::signal::Signal;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

/// Agents can print hundreds of MB/s. With the default 64 KiB pipe, writer and reader take
/// turns every 64 KiB; a 1 MiB pipe and read buffer let both run at full speed.
const PIPE_SIZE: i32 = 1 << 20;
const READ_BUFFER: usize = 256 * 1024;

/// Ask the kernel for a bigger pipe. Best effort: an unprivileged process may be capped by
/// `/proc/sys/fs/pipe-max-size`, and a smaller pipe only costs speed.
fn enlarge_pipe(pipe: &tokio::process::ChildStdout) {
    use std::os::fd::AsRawFd;
    let _ = nix::fcntl::fcntl(pipe.as_raw_fd(), nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
}

#[derive(Debug, Clone)]
pub struct Watchdogs {
    pub idle_timeout: Duration,
    pub idle_warning_interval: Duration,
    pub step_timeout: Duration,
    pub stopping: Stopping,
    /// A moment the command must not outlive (a budget's `max_duration`): stopped as by
    /// `Flow::Stop`.
    pub deadline: Option<Instant>,
}

/// How a command is ended.
#[derive(Debug, Clone, Copy)]
pub struct Stopping {
    /// Between the polite signal and SIGKILL.
    pub kill_grace: Duration,
    /// After the leader exits, how long to keep reading pipes that its leftovers still hold
    /// open (containment ends them; this bounds the wait where it cannot).
    pub drain: Duration,
}

/// What a handler wants once it has seen a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
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

/// A request from the signal listener: the signal eden received, and how many so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abort {
    pub signal: i32,
    pub count: u32,
}

/// What the supervisor calls as output arrives.
pub trait Handlers {
    /// One line of stdout, or a piece of an over-long one when `continues` (the rest follows).
    fn stdout_line(&mut self, line: &[u8], continues: bool) -> Flow;
    fn stderr_line(&mut self, line: &[u8]);
    /// No stdout for `silent_for`, repeated every warning interval.
    fn idle_warning(&mut self, silent_for: Duration);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The process ended on its own. `code` is 128+n for a child killed by signal n.
    Exited {
        code: i32,
    },
    /// Told to finish (`Flow::FinishWithin`), it did not exit in time and was stopped.
    Overstayed,
    IdleTimeout(Duration),
    StepTimeout(Duration),
    Aborted(i32),
    /// A handler said `Flow::Stop`, or the deadline came.
    Stopped,
}

/// The last output of each stream, kept apart: their relative order is not knowable.
pub struct OutputTails {
    pub stdout: Tail,
    pub stderr: Tail,
}

impl OutputTails {
    /// Indented lines for an error message: the end of stdout, then the end of stderr.
    pub fn describe(&self, max_lines: usize) -> String {
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

#[derive(Clone, Copy)]
enum KillReason {
    Overstayed,
    Idle,
    Step,
    Aborted(i32),
    Stopped,
}

/// Reaches the command's processes inside a sandbox, where the host process group does not:
/// the commands that do it (engine execs), which the supervisor runs without waiting on them.
pub trait Inside: Send + Sync {
    /// Deliver `signal` to the command's process group inside (`None`: nothing to signal yet).
    fn signal_command(&self, signal: Signal) -> Option<ProcessBuilder>;
    /// End everything the command left running inside. Needed only when the command was
    /// SIGKILLed: otherwise it cleans up after itself as it exits.
    fn sweep_command(&self) -> ProcessBuilder;
}

pub async fn supervise(
    mut command: ProcessBuilder,
    watchdogs: &Watchdogs,
    handlers: &mut dyn Handlers,
    abort: &mut watch::Receiver<Option<Abort>>,
    inside: Option<&dyn Inside>,
) -> std::io::Result<(Outcome, OutputTails)> {
    let mut child = command.spawn_group()?;
    let guard = GroupGuard::new(child.id().unwrap_or(0));
    if let (Stdin::Bytes(bytes), Some(mut stdin)) = (command.take_stdin(), child.stdin.take()) {
        // A child that never reads its stdin must not block us: write from a task, ignore EPIPE.
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let mut stdout = child.stdout.take().expect("stdout is piped");
    enlarge_pipe(&stdout);
    let mut stderr = child.stderr.take().expect("stderr is piped");

    let mut tails = OutputTails { stdout: Tail::new(16 * 1024), stderr: Tail::new(8 * 1024) };
    let mut out_buffer = vec![0u8; READ_BUFFER];
    let mut err_buffer = vec![0u8; 8 * 1024];
    let mut out_lines = LineSplitter::default();
    let mut err_lines = LineSplitter::default();
    let (mut stdout_open, mut stderr_open) = (true, true);

    let start = Instant::now();
    let step_deadline = start + watchdogs.step_timeout;
    let mut last_output = start;
    let mut next_warning = start + watchdogs.idle_warning_interval;
    let mut finish_deadline: Option<Instant> = None;
    let mut exit_code: Option<i32> = None;
    let mut drain_deadline: Option<Instant> = None;
    let mut kill: Option<(KillReason, Instant)> = None;
    let mut sigkill_sent = false;
    let mut abort_open = true;

    let signal_all = |signal: Signal| {
        // The engine exec that reaches inside runs beside the loop: it may take a while.
        if let Some(command) = inside.and_then(|inside| inside.signal_command(signal)) {
            tokio::spawn(async move {
                let _ = command.output_async().await;
            });
        }
        guard.signal(signal);
    };
    let begin_kill = |reason: KillReason, signal: Signal, kill: &mut Option<(KillReason, Instant)>| {
        signal_all(signal);
        // Keep the first reason: a step timeout while an abort is under way is still an abort.
        let reason = kill.map_or(reason, |(first, _)| first);
        *kill = Some((reason, Instant::now() + watchdogs.stopping.kill_grace));
    };
    if let Some(request) = *abort.borrow_and_update() {
        begin_kill(KillReason::Aborted(request.signal), Signal::SIGKILL, &mut kill);
    }

    let mut stop_requested = false;
    loop {
        if exit_code.is_some() && !stdout_open && !stderr_open {
            break;
        }
        if std::mem::take(&mut stop_requested) && exit_code.is_none() && kill.is_none() {
            begin_kill(KillReason::Stopped, Signal::SIGTERM, &mut kill);
        }
        let watching = exit_code.is_none() && kill.is_none();
        tokio::select! {
            read = stdout.read(&mut out_buffer), if stdout_open => match read {
                Ok(0) | Err(_) => {
                    stdout_open = false;
                    out_lines.finish(|line, continues| flow(&mut finish_deadline, &mut stop_requested, handlers.stdout_line(line, continues)));
                }
                Ok(n) => {
                    let chunk = &out_buffer[..n];
                    tails.stdout.push(chunk);
                    // Progress unless every line the chunk completed was only waiting.
                    let (mut lines, mut waiting) = (0, 0);
                    out_lines.feed(chunk, |line, continues| {
                        let said = handlers.stdout_line(line, continues);
                        lines += 1;
                        waiting += usize::from(said == Flow::Waiting);
                        flow(&mut finish_deadline, &mut stop_requested, said)
                    });
                    if lines == 0 || waiting < lines {
                        last_output = Instant::now();
                        next_warning = last_output + watchdogs.idle_warning_interval;
                    }
                }
            },
            read = stderr.read(&mut err_buffer), if stderr_open => match read {
                Ok(0) | Err(_) => {
                    stderr_open = false;
                    err_lines.finish(|line, _| handlers.stderr_line(line));
                }
                Ok(n) => {
                    tails.stderr.push(&err_buffer[..n]);
                    err_lines.feed(&err_buffer[..n], |line, _| handlers.stderr_line(line));
                }
            },
            status = child.wait(), if exit_code.is_none() => {
                exit_code = Some(match status {
                    Ok(status) => status_code(status),
                    Err(_) => 1,
                });
                drain_deadline = Some(Instant::now() + watchdogs.stopping.drain);
            },
            () = sleep_until(last_output + watchdogs.idle_timeout), if watching => {
                begin_kill(KillReason::Idle, Signal::SIGTERM, &mut kill);
            },
            // A warning in the last second before the idle kill says nothing the kill won't.
            () = sleep_until(next_warning), if watching
                && next_warning + Duration::from_secs(1) < last_output + watchdogs.idle_timeout => {
                handlers.idle_warning(last_output.elapsed());
                next_warning += watchdogs.idle_warning_interval;
            },
            () = sleep_until(step_deadline), if watching => {
                begin_kill(KillReason::Step, Signal::SIGTERM, &mut kill);
            },
            () = sleep_until(finish_deadline.unwrap_or(step_deadline)), if watching && finish_deadline.is_some() => {
                begin_kill(KillReason::Overstayed, Signal::SIGTERM, &mut kill);
            },
            () = sleep_until(watchdogs.deadline.unwrap_or(step_deadline)), if watching && watchdogs.deadline.is_some() => {
                begin_kill(KillReason::Stopped, Signal::SIGTERM, &mut kill);
            },
            changed = abort.changed(), if exit_code.is_none() && abort_open => {
                match (changed, *abort.borrow_and_update()) {
                    (Ok(()), Some(request)) if request.count >= 2 => {
                        begin_kill(KillReason::Aborted(request.signal), Signal::SIGKILL, &mut kill);
                        sigkill_sent = true;
                    }
                    (Ok(()), Some(request)) => {
                        let signal = Signal::try_from(request.signal).unwrap_or(Signal::SIGTERM);
                        begin_kill(KillReason::Aborted(request.signal), signal, &mut kill);
                    }
                    (Ok(()), None) => {}
                    // The sender is gone: nobody can abort any more; stop polling it.
                    (Err(_), _) => abort_open = false,
                }
            },
            () = sleep_until(kill.map_or(step_deadline, |(_, at)| at)), if kill.is_some() && !sigkill_sent => {
                signal_all(Signal::SIGKILL);
                sigkill_sent = true;
            },
            () = sleep_until(drain_deadline.unwrap_or(step_deadline)), if drain_deadline.is_some() => {
                // Something in the group still holds our pipes: end it and stop reading.
                signal_all(Signal::SIGKILL);
                break;
            },
        }
    }
    drop(guard);
    if let (Some(inside), true) = (inside, sigkill_sent) {
        let _ = inside.sweep_command().output_async().await;
    }
    // Whatever the command left behind (re-parented to eden, where the subreaper is the
    // containment) goes with it.
    super::contain::reap_orphans();

    let outcome = match kill {
        Some((KillReason::Aborted(signal), _)) => Outcome::Aborted(signal),
        Some((KillReason::Idle, _)) => Outcome::IdleTimeout(watchdogs.idle_timeout),
        Some((KillReason::Step, _)) => Outcome::StepTimeout(watchdogs.step_timeout),
        Some((KillReason::Overstayed, _)) => Outcome::Overstayed,
        Some((KillReason::Stopped, _)) => Outcome::Stopped,
        None => Outcome::Exited { code: exit_code.unwrap_or(1) },
    };
    Ok((outcome, tails))
}

/// Arm the finish deadline the first time a handler asks for one; note a request to stop.
fn flow(deadline: &mut Option<Instant>, stop: &mut bool, flow: Flow) {
    match (*deadline, flow) {
        (None, Flow::FinishWithin(within)) => *deadline = Some(Instant::now() + within),
        (_, Flow::Stop) => *stop = true,
        _ => {}
    }
}

fn status_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|n| 128 + n)).unwrap_or(1)
}
