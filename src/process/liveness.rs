//! Is the process that wrote a lock or a run record still running? A pid alone cannot say: after
//! a crash the number may be reused by an unrelated process. A pid with the process's start time
//! (`/proc/<pid>/stat`, in clock ticks since boot) names one process for the life of the machine.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ProcessStamp {
    pub(crate) pid: u32,
    /// Start time in clock ticks since boot; 0 when unknown (then the pid alone decides).
    pub(crate) start: u64,
}

impl ProcessStamp {
    /// This process.
    pub(crate) fn current() -> Self {
        let pid = std::process::id();
        ProcessStamp { pid, start: start_time(pid).unwrap_or(0) }
    }

    /// Is that same process still running (not a zombie)?
    pub(crate) fn is_alive(&self) -> bool {
        let Ok(pid) = i32::try_from(self.pid) else { return false };
        if pid <= 0 {
            return false;
        }
        match read_stat(self.pid) {
            Some(stat) => stat.state != 'Z' && (self.start == 0 || stat.start == self.start),
            // No procfs: fall back to asking the kernel whether the pid exists.
            None if !std::path::Path::new("/proc/self/stat").exists() => {
                !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(nix::errno::Errno::ESRCH))
            }
            None => false,
        }
    }

    /// `1234:567890`, as written into lock files.
    pub(crate) fn to_text(self) -> String {
        format!("{}:{}", self.pid, self.start)
    }

    /// The inverse of `to_text`; a bare pid (older lock files) has an unknown start.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (pid, start) = text.split_once(':').unwrap_or((text, "0"));
        Some(ProcessStamp { pid: pid.parse().ok()?, start: start.parse().ok()? })
    }
}

struct Stat {
    state: char,
    start: u64,
}

fn read_stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain anything, spaces included.
    let after_name = &text[text.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 22 overall; `fields` now starts at field 4.
    let start = fields.nth(18)?.parse().ok()?;
    Some(Stat { state, start })
}

fn start_time(pid: u32) -> Option<u64> {
    read_stat(pid).map(|stat| stat.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reused_pid_is_not() {
        let me = ProcessStamp::current();
        assert!(me.start > 0);
        assert!(me.is_alive());
        assert!(!ProcessStamp { start: me.start + 1, ..me }.is_alive(), "same pid, another start: another process");
        assert!(!ProcessStamp { pid: u32::MAX - 1, start: 0 }.is_alive());
    }

    #[test]
    fn text_round_trip_and_bare_pids() {
        let stamp = ProcessStamp { pid: 42, start: 12345 };
        assert_eq!(ProcessStamp::parse(&stamp.to_text()), Some(stamp));
        assert_eq!(ProcessStamp::parse("42\n"), Some(ProcessStamp { pid: 42, start: 0 }));
        assert_eq!(ProcessStamp::parse("x"), None);
    }
}
