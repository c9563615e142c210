//! Cleanup that must happen even if eden is SIGKILLed: a container outlives the eden that
//! started it unless someone removes it. A guard is a tiny detached process (`eden __eden-guard
//! PROGRAM ARGS...`, in a session of its own so no signal for eden reaches it) that waits on a
//! pipe from eden. When eden is done with the resource it says so and the guard just exits; if
//! the pipe closes without that word — eden died — the guard runs its command (`docker rm -f`).

use super::ProcessBuilder;
use std::ffi::OsString;
use std::io::{Read, Write};

/// The hidden subcommand that runs a guard.
pub(crate) const GUARD_SUBCOMMAND: &str = "__eden-guard";

const DISMISSED: &[u8] = b"dismissed\n";

/// A running guard. Dropping it (eden cleaned up itself) dismisses it.
pub(crate) struct Guard {
    child: std::process::Child,
}

impl Guard {
    /// Start a guard that runs `cleanup` if eden dies before the guard is dropped.
    pub(crate) fn start(cleanup: &ProcessBuilder) -> std::io::Result<Guard> {
        let eden = std::env::current_exe()?;
        let child = ProcessBuilder::new(eden)
            .arg(GUARD_SUBCOMMAND)
            .arg(cleanup.program())
            .args(cleanup.get_args())
            .spawn_detached()?;
        super::contain::exempt(child.id());
        Ok(Guard { child })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.write_all(DISMISSED);
        }
        // It exits at once; reap it if it already has (else it is reaped when eden exits).
        let _ = self.child.try_wait();
    }
}

/// `eden __eden-guard PROGRAM ARGS...`: returns the exit code.
pub(crate) fn run_guard(args: &[OsString]) -> i32 {
    let mut said = Vec::new();
    let _ = std::io::stdin().lock().read_to_end(&mut said);
    if said == DISMISSED {
        return 0;
    }
    let Some((program, rest)) = args.split_first() else { return 2 };
    match ProcessBuilder::new(program).args(rest).output() {
        Ok(output) if output.success() => 0,
        _ => 1,
    }
}
