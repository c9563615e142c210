//! Killing a whole process group. Agents spawn shells, test runners and servers; killing only
//! the leader would leave those running with our pipes open, so every kill targets the group.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Kills the process group with SIGKILL when dropped, unless disarmed. Dropping after the
/// leader has exited still reaps stragglers (grandchildren keep the group alive).
#[derive(Debug)]
pub(crate) struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    pub(crate) fn new(pid: u32) -> Self {
        GroupGuard { pgid: i32::try_from(pid).ok().map(Pid::from_raw) }
    }

    /// Send `signal` to every process of the group. A group that no longer exists is fine.
    pub(crate) fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, signal);
        }
    }

    pub(crate) fn kill(&self) {
        self.signal(Signal::SIGKILL);
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
