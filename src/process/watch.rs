//! Waiting for a short helper command (git, an engine's client, eden's own scripts in a
//! sandbox) without giving up the ability to stop: the child is waited for on a thread of its
//! own while this one watches the clock and eden's signals. A signal that reaches eden after the
//! command started (`signals::count`), or the command's deadline, kills its whole process group
//! at once and says which. So eden answers Ctrl-C within a moment in every phase, and nothing an
//! agent made (a FIFO a git reads, an engine that never answers) can hold it for ever.

use std::process::{Child, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How often the watcher looks at the signals while the command runs.
const LOOK: Duration = Duration::from_millis(20);

/// The error of a command stopped by a signal (`ErrorKind::Interrupted`) or its deadline
/// (`ErrorKind::TimedOut`).
pub(crate) fn stopped(kind: std::io::ErrorKind, timeout: Option<Duration>) -> std::io::Error {
    match kind {
        std::io::ErrorKind::TimedOut => std::io::Error::new(
            kind,
            format!(
                "it did not finish within {}, and was stopped",
                humantime::format_duration(timeout.unwrap_or_default())
            ),
        ),
        _ => std::io::Error::new(kind, "eden was interrupted, and stopped it"),
    }
}

/// A spawned command (the leader of its own process group) being watched.
pub(crate) struct Watched {
    group: i32,
    exited: mpsc::Receiver<std::io::Result<Output>>,
    /// A clean-up: the signals there were when it began do not stop it.
    since: Option<u32>,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    /// Other groups that go with it (a pipeline's producer).
    also: Vec<i32>,
}

impl Watched {
    /// Watch `child`; stop it at `timeout`, or when eden is to stop (`signals::stopping`; for
    /// a clean-up, `finishing`, when a signal comes after it began). Its piped stdout and stderr
    /// are read to their end beside it (one thread: the standard library polls both).
    pub(crate) fn new(child: Child, timeout: Option<Duration>, finishing: bool) -> Watched {
        let since = finishing.then(super::signals::count);
        let group = child.id() as i32;
        let (sender, exited) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(child.wait_with_output());
        });
        Watched { group, exited, since, deadline: timeout.map(|t| Instant::now() + t), timeout, also: Vec::new() }
    }

    /// Another process group to kill with this one when it is stopped.
    pub(crate) fn with_group(mut self, group: i32) -> Watched {
        self.also.push(group);
        self
    }

    /// Its exit status and what it printed on the pipes it had; or, when a signal came or the
    /// deadline passed first, its groups killed and an `Interrupted` or `TimedOut` error.
    pub(crate) fn wait(&self) -> std::io::Result<Output> {
        loop {
            match self.exited.recv_timeout(LOOK) {
                Ok(status) => return status,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(std::io::Error::other("lost the command")),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let signalled = match self.since {
                Some(since) => super::signals::count() > since,
                None => super::signals::stopping(),
            };
            let kind = if signalled {
                std::io::ErrorKind::Interrupted
            } else if self.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                std::io::ErrorKind::TimedOut
            } else {
                continue;
            };
            self.kill();
            // Reaped by its waiter; it is dead or dying with its group.
            let _ = self.exited.recv_timeout(Duration::from_secs(2));
            return Err(stopped(kind, self.timeout));
        }
    }

    pub(crate) fn kill(&self) {
        for group in std::iter::once(self.group).chain(self.also.iter().copied()) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_stops_the_whole_group() {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "sleep 30 & sleep 30"]).process_group(0);
        let started = Instant::now();
        let watched = Watched::new(command.spawn().unwrap(), Some(Duration::from_millis(200)), false);
        let err = watched.wait().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(err.to_string().contains("did not finish within 200ms"), "{err}");
    }

    #[test]
    fn a_quick_command_is_waited_for() {
        let child = std::process::Command::new("true").spawn().unwrap();
        assert!(Watched::new(child, Some(Duration::from_secs(5)), false).wait().unwrap().status.success());
    }
}
