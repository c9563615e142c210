//! Nothing an agent, hook or prompt command starts may outlive it: not a background job that
//! ignores SIGINT, not a child that moved to its own process group or session, and not when
//! eden itself is SIGKILLed. A process-group kill reaches none of those, so eden uses what the
//! kernel enforces:
//!
//! - **PID namespace** (preferred): every supervised command on the host runs under a tiny init
//!   (`eden __eden-init`, this module) that is process 1 of a fresh PID namespace (inside a user
//!   namespace when eden is not root). When the command exits, the init exits, and the kernel
//!   kills everything left in the namespace. The init dies with its parent (`PR_SET_PDEATHSIG`),
//!   which dies with eden, so a SIGKILLed eden takes the whole namespace down too.
//! - **Subreaper** (fallback, where namespaces are not allowed): eden marks itself a child
//!   subreaper, so orphans of a command are re-parented to eden instead of to PID 1; when the
//!   command ends, eden kills whatever was re-parented to it. This cannot cover eden being
//!   SIGKILLed.
//!
//! The chain is three processes: the outer one (eden's child, leader of the command's process
//! group, which eden signals), the init (PID 1 inside), and the command (PID 2 inside, in the
//! same process group, so eden's group signals reach it directly). Outer and init block the
//! usual termination signals so that a SIGTERM for the group ends the command, not them:
//! they go when the command has gone, carrying its exit status out.

// The init is a process of its own with no reporter: what it has to say goes on the command's
// stderr, which eden shows as the command's.
#![allow(clippy::print_stderr)]

use crate::error::Error;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};
use serde::Serialize;
use std::ffi::OsString;
use std::sync::OnceLock;

/// The hidden subcommand that runs the init (`eden __eden-init PROGRAM ARGS...`).
pub(crate) const INIT_SUBCOMMAND: &str = "__eden-init";

/// Environment variable that chooses the mechanism instead of detecting it: `pid-namespace`,
/// `subreaper` (for testing the fallback, or where namespaces misbehave).
pub(crate) const CONTAINMENT_ENV: &str = "EDEN_CONTAINMENT";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Containment {
    PidNamespace,
    Subreaper,
}

impl Containment {}

static CURRENT: OnceLock<Containment> = OnceLock::new();

/// eden's own long-lived children (guards), which the subreaper's sweep must spare.
static EXEMPT: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Spare `pid`, a child eden started for itself, from `reap_orphans`.
pub(crate) fn exempt(pid: u32) {
    EXEMPT.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
}

/// Decide the mechanism for this eden process (once): `EDEN_CONTAINMENT` if set, else a PID
/// namespace if a probe can make one, else the subreaper. Needs eden's own executable (the
/// init is eden); the subreaper is set up here when it is the choice.
pub(crate) fn install() -> Result<Containment, Error> {
    if let Some(mode) = CURRENT.get() {
        return Ok(*mode);
    }
    let mode = match std::env::var(CONTAINMENT_ENV).ok().as_deref() {
        Some("pid-namespace") => Containment::PidNamespace,
        Some("subreaper") => Containment::Subreaper,
        Some(other) => {
            return Err(Error::usage(format!("`{CONTAINMENT_ENV}={other}` is not a containment mechanism")).with_hint(
                format!("use `pid-namespace` or `subreaper`, or unset `{CONTAINMENT_ENV}` to let eden choose"),
            ))
        }
        None if probe() => Containment::PidNamespace,
        None => Containment::Subreaper,
    };
    if mode == Containment::Subreaper {
        nix::sys::prctl::set_child_subreaper(true).map_err(|err| {
            Error::usage(format!(
                "cannot make eden a child subreaper ({err}), so the agent's processes could outlive it"
            ))
            .with_hint("eden needs Linux 3.4 or newer")
        })?;
    }
    Ok(*CURRENT.get_or_init(|| mode))
}

/// The mechanism in force, if `install` ran (commands run by the library alone are not wrapped).
pub(crate) fn current() -> Option<Containment> {
    CURRENT.get().copied()
}

/// Can this process make a PID namespace? A forked child tries (a fork is safe while eden is
/// single-threaded, as it is before its runtime starts); otherwise a throw-away init does.
fn probe() -> bool {
    let single_threaded = std::fs::read_dir("/proc/self/task").is_ok_and(|tasks| tasks.count() == 1);
    if single_threaded {
        // SAFETY: no other thread exists; the child only makes syscalls and `_exit`s.
        return match unsafe { fork() } {
            Ok(ForkResult::Child) => exit_now(probe_namespace()),
            Ok(ForkResult::Parent { child }) => wait_for(child) == 0,
            Err(_) => false,
        };
    }
    let Ok(eden) = std::env::current_exe() else { return false };
    // Not through `ProcessBuilder`, which wraps its commands in this very containment.
    std::process::Command::new(eden)
        .args([INIT_SUBCOMMAND, "--probe"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Signals that would end the outer process or the init before the command: blocked in both
/// (the init collects them with `sigwait`), unblocked again for the command.
fn held_signals() -> SigSet {
    let mut set = SigSet::empty();
    for signal in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGALRM,
        Signal::SIGTSTP,
        Signal::SIGTTIN,
        Signal::SIGTTOU,
        Signal::SIGCHLD,
    ] {
        set.add(signal);
    }
    set
}

/// Enter a new PID namespace for our next child: directly as root, through a user namespace
/// (mapping our own uid and gid, so files keep their owner) otherwise. A mount namespace comes
/// with it, so the init can mount a `/proc` that shows the new namespace: without it, `ps`,
/// `pgrep` and `pkill` inside would list the host's pids, which mean nothing there. Mounts are
/// made slaves first, so nothing mounted inside leaks out.
fn unshare_pid_namespace() -> nix::Result<()> {
    use nix::mount::{mount, MsFlags};
    use nix::sched::{unshare, CloneFlags};
    let namespaces = CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWNS;
    if unshare(namespaces).is_err() {
        let uid = nix::unistd::getuid();
        let gid = nix::unistd::getgid();
        unshare(CloneFlags::CLONE_NEWUSER | namespaces)?;
        let write = |path: &str, text: String| std::fs::write(path, text).map_err(|_| nix::errno::Errno::EPERM);
        write("/proc/self/setgroups", "deny".to_owned())?;
        write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    }
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_SLAVE, None::<&str>)
}

/// In the new namespace (as its PID 1): a `/proc` of its own.
fn mount_proc() -> nix::Result<()> {
    use nix::mount::{mount, MsFlags};
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), "/proc", Some("proc"), flags, None::<&str>)
}

/// `eden __eden-init [--probe | PROGRAM ARGS...]`: returns the exit code.
pub(crate) fn run_init(args: &[OsString]) -> i32 {
    if args.first().is_some_and(|arg| arg == "--probe") {
        return probe_namespace();
    }
    let Some((program, rest)) = args.split_first() else {
        eprintln!("eden: {INIT_SUBCOMMAND} needs a program to run");
        return 2;
    };
    let held = held_signals();
    if let Err(err) = held.thread_block() {
        eprintln!("eden: cannot block signals: {err}");
        return 126;
    }
    if let Err(err) = unshare_pid_namespace() {
        // The probe said this works; if it does not now, run the command rather than fail it.
        eprintln!("eden: cannot make a PID namespace ({err}); running `{}` uncontained", program.to_string_lossy());
        return exec(program, rest);
    }
    // Closed by the kernel when this (outer) process ends: the init's way to notice that it was
    // orphaned before its death signal was armed.
    let (alive_read, alive_write) = match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
        Ok(pipe) => pipe,
        Err(err) => {
            eprintln!("eden: cannot make a pipe: {err}");
            return 126;
        }
    };
    // SAFETY: this process is single-threaded (the init runs before any runtime or thread).
    match unsafe { fork() } {
        Err(err) => {
            eprintln!("eden: cannot fork the init: {err}");
            126
        }
        Ok(ForkResult::Child) => {
            drop(alive_write);
            be_init(program, rest, alive_read)
        }
        Ok(ForkResult::Parent { child }) => {
            drop(alive_read);
            let code = wait_for(child);
            drop(alive_write);
            code
        }
    }
}

/// Process 1 of the namespace: start the command, reap everything, leave with the command.
fn be_init(program: &OsString, rest: &[OsString], alive: std::os::fd::OwnedFd) -> i32 {
    if nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_err() || parent_gone(&alive) {
        return 1;
    }
    drop(alive);
    if let Err(err) = mount_proc() {
        eprintln!("eden: cannot mount /proc in the command's PID namespace: {err}");
        return 126;
    }
    scatter_pids();
    // SAFETY: still single-threaded.
    let command = match unsafe { fork() } {
        Err(err) => {
            eprintln!("eden: cannot fork the command: {err}");
            return 126;
        }
        Ok(ForkResult::Child) => return exec(program, rest),
        Ok(ForkResult::Parent { child }) => child,
    };
    let held = held_signals();
    loop {
        // Termination signals are for the command (which got them with its process group);
        // SIGCHLD is our cue to reap.
        if held.wait() != Ok(Signal::SIGCHLD) {
            continue;
        }
        loop {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == command => return code,
                Ok(WaitStatus::Signaled(pid, signal, _)) if pid == command => {
                    return crate::exit::Exit::Interrupted(crate::exit::Signal(signal as i32)).code()
                }
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
}

/// Start the namespace's pids at a random place rather than 2: scripts name shared temporary
/// files after `$$`, and two commands of concurrent runs must not both be process 2. Best
/// effort (it needs a kernel with `ns_last_pid`).
fn scatter_pids() {
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(32768);
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mixed = seed ^ (u64::from(std::process::id()) << 20) ^ u64::from(nix::unistd::getppid().as_raw() as u32);
    // Leave room at both ends: low pids look special, and the namespace needs room to grow.
    let span = max.saturating_sub(2000).max(1);
    let start = 1000 + mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) % span;
    let _ = std::fs::write("/proc/sys/kernel/ns_last_pid", start.to_string());
}

/// Has the outer process (holding the write end) already gone?
fn parent_gone(alive: &std::os::fd::OwnedFd) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(std::os::fd::AsFd::as_fd(alive), PollFlags::POLLIN)];
    // Readable (EOF) or hung up means the writer is gone; nothing is ever written.
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|ready| ready > 0)
}

/// Wait for `child`, returning its exit code (128+n if a signal ended it).
fn wait_for(child: Pid) -> i32 {
    loop {
        match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, code)) => return code,
            Ok(WaitStatus::Signaled(_, signal, _)) => {
                return crate::exit::Exit::Interrupted(crate::exit::Signal(signal as i32)).code()
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return 1,
        }
    }
}

/// Replace this process with the command, which starts with no signal blocked (std's `exec`
/// resets SIGPIPE, not the mask).
fn exec(program: &OsString, rest: &[OsString]) -> i32 {
    use std::os::unix::process::CommandExt;
    let _ = SigSet::empty().thread_set_mask();
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!("eden: cannot run `{}`: {err}", program.to_string_lossy());
    if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    }
}

/// `--probe`: make a namespace and check that a child lands in it as PID 1 and can give it its
/// own `/proc`.
fn probe_namespace() -> i32 {
    if unshare_pid_namespace().is_err() {
        return 1;
    }
    // SAFETY: single-threaded.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => exit_now(i32::from(nix::unistd::getpid().as_raw() != 1 || mount_proc().is_err())),
        Ok(ForkResult::Parent { child }) => wait_for(child),
        Err(_) => 1,
    }
}

/// End a forked child at once, without running the parent's exit handlers or flushing buffers
/// it inherited.
fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit(2)` is always safe to call; it does not return.
    unsafe { nix::libc::_exit(code) }
}

/// With the subreaper: kill and reap every process re-parented to eden since the last call —
/// orphans of the command that just ended (eden has no other children between commands).
/// Repeats until none are left, since killing one may orphan its own children to us.
pub(crate) fn reap_orphans() {
    if current() != Some(Containment::Subreaper) {
        return;
    }
    let exempt = EXEMPT.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for _ in 0..100 {
        let orphans: Vec<i32> =
            children().into_iter().filter(|pid| !exempt.iter().any(|own| *own as i32 == *pid)).collect();
        if orphans.is_empty() {
            return;
        }
        for pid in orphans {
            let pid = Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
            let _ = waitpid(pid, None);
        }
    }
}

/// This process's children, from every thread's `/proc/self/task/*/children`.
fn children() -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|text| text.split_whitespace().filter_map(|pid| pid.parse().ok()).collect::<Vec<i32>>())
        .collect()
}
