//! A helper process beside a program: forked first, it serves until the program ends (it
//! gets SIGKILL when its parent does: `PR_SET_PDEATHSIG`), while the parent becomes the
//! program itself (`execvp`), keeping its pid, process group, stdio, signals and exit status.
//! For eden's relay inside a sandbox (`proxy::relay`). Must be called while single-threaded.

use nix::sys::signal::Signal;
use nix::unistd::{fork, ForkResult};
use std::ffi::CString;

/// Forks `serve` off and runs `program` with `args` in this process, with `env` added. Returns
/// only when that cannot happen (the error, for the caller to report).
pub(crate) fn exec_beside(serve: impl FnOnce(), program: &str, args: &[String], env: &[(String, String)]) -> String {
    let parent = nix::unistd::getpid();
    // SAFETY: the caller is single-threaded (a hidden subcommand dispatched before anything
    // else starts), so the child may do anything the parent could.
    match unsafe { fork() } {
        Err(err) => return format!("cannot fork: {err}"),
        Ok(ForkResult::Child) => {
            let _ = nix::sys::prctl::set_pdeathsig(Some(Signal::SIGKILL));
            // The parent may have gone before the line above took effect.
            if nix::unistd::getppid() == parent {
                serve();
            }
            std::process::exit(0);
        }
        Ok(ForkResult::Parent { .. }) => {}
    }
    for (key, value) in env {
        std::env::set_var(key, value);
    }
    let argv: Result<Vec<CString>, std::ffi::NulError> =
        std::iter::once(program).chain(args.iter().map(String::as_str)).map(CString::new).collect();
    match argv {
        Ok(argv) => {
            let err = nix::unistd::execvp(&argv[0], &argv).unwrap_err();
            format!(
                "cannot run `{program}`: {}",
                if err == nix::errno::Errno::ENOENT { "not found".into() } else { err.to_string() }
            )
        }
        Err(_) => {
            let bad = std::iter::once(program).chain(args.iter().map(String::as_str)).find(|text| text.contains('\0'));
            format!("`{}` has a NUL byte", bad.unwrap_or_default())
        }
    }
}
