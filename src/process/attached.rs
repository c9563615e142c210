//! A command that gets eden's terminal (`eden interactive`): it reads the keyboard and draws on
//! the screen itself. With a terminal, its process group becomes the foreground group, so Ctrl-C,
//! Ctrl-Z and every key reach it and not eden; when it ends, eden takes the terminal back and
//! restores the terminal's modes as they were, whatever state the command left them in (a
//! crashed TUI in raw mode). A SIGTERM or SIGHUP for eden ends the command as a run's would:
//! the polite signal, the grace period, then SIGKILL.

use super::group::GroupGuard;
use super::{Abort, Inside, ProcessBuilder};
use nix::sys::signal::Signal;
use nix::sys::termios::{tcgetattr, tcsetattr, SetArg, Termios};
use std::time::Duration;
use tokio::sync::watch;

/// How an attached command ended: its exit code, or 128 + the signal that ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ended {
    pub(crate) code: i32,
    /// eden was asked to stop (the signal it received) and stopped the command.
    pub(crate) aborted: Option<crate::exit::Signal>,
}

/// Run `command` attached to eden's terminal (or plain stdin/stdout when `tty` is false).
pub(crate) async fn run_attached(
    command: &ProcessBuilder,
    tty: bool,
    abort: &mut watch::Receiver<Option<Abort>>,
    kill_grace: Duration,
    inside: Option<&dyn Inside>,
) -> std::io::Result<Ended> {
    let saved: Option<Termios> = if tty { tcgetattr(std::io::stdin()).ok() } else { None };
    let spawned = command.spawn_terminal(tty);
    let result = match spawned {
        Ok(mut child) => {
            let pid = child.id().unwrap_or(0);
            let group = GroupGuard::new(pid);
            let mut aborted = None;
            let mut deadline: Option<tokio::time::Instant> = None;
            let mut abort_open = true;
            let status = loop {
                let sleep_until = deadline.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
                tokio::select! {
                    status = child.wait() => break status,
                    changed = abort.changed(), if abort_open && (aborted.is_none() || deadline.is_some()) => {
                        if changed.is_err() {
                            abort_open = false;
                            continue;
                        }
                        let Some(request) = *abort.borrow() else { continue };
                        if aborted.is_none() {
                            aborted = Some(request.signal);
                            signal_all(&group, inside, Signal::SIGTERM).await;
                            deadline = Some(tokio::time::Instant::now() + kill_grace);
                        } else if request.count > 1 {
                            signal_all(&group, inside, Signal::SIGKILL).await;
                        }
                    }
                    () = tokio::time::sleep_until(sleep_until), if deadline.is_some() => {
                        signal_all(&group, inside, Signal::SIGKILL).await;
                        deadline = None;
                    }
                }
            };
            // Whatever the command left in its group goes with it.
            group.kill();
            status.map(|status| Ended { code: crate::exit::Exit::from_status(status), aborted })
        }
        Err(err) => Err(err),
    };
    if tty {
        take_back_terminal(saved.as_ref());
    }
    result
}

async fn signal_all(group: &GroupGuard, inside: Option<&dyn Inside>, signal: Signal) {
    if let Some(command) = inside.and_then(|inside| inside.signal_command(signal)) {
        let _ = command.output_async().await;
    }
    group.signal(signal);
}

/// eden's process group in the foreground again, and the modes as they were.
fn take_back_terminal(saved: Option<&Termios>) {
    use nix::sys::signal::{sigprocmask, SigSet, SigmaskHow};
    // In the background until this call: without blocking SIGTTOU it would stop eden.
    let mut ttou = SigSet::empty();
    ttou.add(Signal::SIGTTOU);
    let _ = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&ttou), None);
    let _ = nix::unistd::tcsetpgrp(std::io::stdin(), nix::unistd::getpgrp());
    if let Some(saved) = saved {
        let _ = tcsetattr(std::io::stdin(), SetArg::TCSADRAIN, saved);
    }
    let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&ttou), None);
}

/// Is eden's stdin a terminal?
pub(crate) fn stdin_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal()
}
