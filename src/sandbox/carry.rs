//! What a sandbox that shares no files with this machine (a remote engine's container, a pod)
//! is sent besides its repository, and what it sends back: the agent's private state folders
//! as tar streams (read back as hostile input by `unpack`), eden's own executable (for the
//! simulated agent, the relay and the tunnel), and the held keys' proxy as a tunnel. All of it
//! crosses the sandbox's channel (`exec -i`).

use super::agent_state::PrivateState;
use crate::error::Error;
use crate::process::{ProcessBuilder, Stdin};
use nix::sys::signal::Signal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where eden's executable goes inside (the simulated agent runs it).
pub(crate) const EDEN_INSIDE: &str = "/opt/eden/bin/eden";

/// Runs a command inside, with its stdin open when `stdin` is set, as a user that may write
/// where the command writes (the container's root, or the pod's only user).
pub(crate) type Exec<'a> = &'a dyn Fn(ProcessBuilder, bool) -> ProcessBuilder;

/// A folder's own entries (`./NAME`, sorted), for tar to pack instead of `.` itself: the
/// folder they go into inside (a pod's volume) is not the sandbox user's to change, and tar
/// would try to give it this folder's mode and times. Never an entry named in `leave_out`. An
/// empty folder is `-T /dev/null` (tar refuses to pack nothing unless told so).
pub(crate) fn top_level(folder: &Path, leave_out: &[&str]) -> Result<Vec<std::ffi::OsString>, Error> {
    let entries =
        fs_err::read_dir(folder).map_err(|err| Error::sandbox(format!("cannot read `{}`: {err}", folder.display())))?;
    let mut names: Vec<std::ffi::OsString> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .filter(|name| !leave_out.iter().any(|left| name == left))
        .map(|name| {
            let mut entry = std::ffi::OsString::from("./");
            entry.push(name);
            entry
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Ok(vec!["-T".into(), "/dev/null".into()]);
    }
    Ok(names)
}

/// The agent's private state folders streamed in, at the paths the agent is pointed at, then
/// handed to `owner` (`UID:GID`) when the stream was unpacked as someone else. `place` names
/// the sandbox in messages (`container`, `pod`).
pub(crate) fn push_state(
    states: &[PrivateState],
    exec: Exec<'_>,
    owner: Option<&str>,
    place: &str,
) -> Result<(), Error> {
    let script = match owner {
        Some(_) => r#"mkdir -p "$1" && tar -x -f - -C "$1" && chown -R "$3" "$2""#,
        None => r#"mkdir -p "$1" && tar -x -f - -C "$1""#,
    };
    for state in states {
        let archive = ProcessBuilder::new("tar")
            .args(["-c", "-f", "-", "-C"])
            .arg(&state.folder)
            .args(top_level(&state.folder, &[])?);
        let extract = ProcessBuilder::new("sh")
            .args(["-c", script, "sh"])
            .arg(&state.folder)
            .arg(&state.value)
            .arg(owner.unwrap_or(""));
        let (archived, extracted) = archive
            .pipe_into(&exec(extract, true))
            .map_err(|err| Error::sandbox(format!("cannot copy the agent's state into the {place}: {err}")))?;
        if !archived.success() || !extracted.success() {
            return Err(Error::sandbox(format!(
                "cannot copy the agent's state folder `{}` into the {place}: {}",
                state.folder.display(),
                first_line(if archived.success() { &extracted.stderr } else { &archived.stderr })
            ))
            .with_hint("the image needs `sh`, `tar`, `mkdir` and `chown`"));
        }
    }
    Ok(())
}

/// What the agent wrote in its state folders (its transcripts), streamed back into the private
/// folders on this machine, which only eden writes. The stream is spooled in `scratch` and read
/// as hostile (`unpack`): regular files and folders only, names confined, size capped.
/// The agent's state folders brought back from where nothing is mounted, each a tar stream of
/// at most `limit` bytes (`sandbox.max_return`, counted as it streams, headers and all).
pub(crate) fn pull_state(
    states: &[PrivateState],
    exec: Exec<'_>,
    scratch: &Path,
    place: &str,
    limit: u64,
) -> Result<(), Error> {
    for state in states {
        let archive = exec(ProcessBuilder::new("tar").args(["-c", "-f", "-", "-C"]).arg(&state.folder).arg("."), false);
        fs_err::create_dir_all(scratch).map_err(|err| Error::sandbox(err.to_string()))?;
        let spool = scratch.join("state.tar");
        let file = fs_err::File::create(&spool).map_err(|err| Error::sandbox(err.to_string()))?;
        let capped = archive
            .output_to_file_capped(file.into_parts().0, limit)
            .map_err(|err| Error::sandbox(format!("cannot run `{archive}`: {err}")))?;
        if capped.over {
            let _ = std::fs::remove_file(&spool);
            return Err(Error::sandbox(format!(
                "the agent's state folder `{}` in the {place} is more than `sandbox.max_return` ({}): it was not taken back",
                state.folder.display(),
                crate::values::format_size(limit)
            ))
            .with_hint("raise `sandbox.max_return`, or keep the agent's transcripts smaller"));
        }
        let output = capped.output;
        if !output.success() {
            let _ = std::fs::remove_file(&spool);
            return Err(Error::sandbox(format!(
                "cannot read the agent's state folder `{}` in the {place}: {}",
                state.folder.display(),
                first_line(&output.stderr)
            )));
        }
        let read = std::fs::File::open(&spool)
            .and_then(|file| super::unpack::unpack(std::io::BufReader::new(file), &state.folder, limit));
        let _ = std::fs::remove_file(&spool);
        read.map_err(|err| Error::sandbox(format!("the agent's state from the {place} was not taken back: {err}")))?;
    }
    Ok(())
}

/// eden's executable copied in as `EDEN_INSIDE`, once (`done` remembers), before the first
/// command that runs it (the simulated agent).
pub(crate) fn copy_eden_in(done: &AtomicBool, exec: Exec<'_>, place: &str) -> Result<(), Error> {
    if done.load(Ordering::SeqCst) {
        return Ok(());
    }
    let eden =
        std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
    let script = r#"mkdir -p "${0%/*}" && cat > "$0" && chmod 755 "$0""#;
    let copy = exec(ProcessBuilder::new("sh").args(["-c", script, EDEN_INSIDE]), true);
    let (read, copied) = ProcessBuilder::new("cat")
        .arg(&eden)
        .pipe_into(&copy)
        .map_err(|err| Error::sandbox(format!("cannot copy eden into the {place}: {err}")))?;
    if !read.success() || !copied.success() {
        return Err(Error::sandbox(format!(
            "cannot copy eden into the {place}: {}",
            first_line(if read.success() { &copied.stderr } else { &read.stderr })
        )));
    }
    done.store(true, Ordering::SeqCst);
    Ok(())
}

/// The run's proxy folder (`proxy`, on this machine) carried into a sandbox that cannot be
/// given it (a remote engine's container, a pod): its configuration templates copied to
/// `PROXY_INSIDE`, and a tunnel there (`proxy::tunnel`) listening for each of its sockets, to
/// the proxies here. `exec` runs as the user that owns `PROXY_INSIDE` there; eden is inside.
pub(crate) fn tunnel_proxy(proxy: &Path, exec: Exec<'_>, place: &str) -> Result<crate::proxy::tunnel::Tunnel, Error> {
    use crate::proxy::tunnel::{Tunnel, TUNNEL_SUBCOMMAND};
    let inside = super::PROXY_INSIDE;
    let failed = |why: String| {
        Error::sandbox(format!("cannot carry the held keys' proxy into the {place}: {why}"))
            .with_hint("set `sandbox.hold_keys = false` to hand the agent its keys instead")
    };
    let mut sockets = Vec::new();
    let mut names = Vec::new();
    // Root's and closed to others in a container; a pod's volume is not the pod user's to change.
    let script = r#"mkdir -p "$0" && { chmod 755 "$0" 2>/dev/null || [ -w "$0" ]; }"#;
    let made = exec(ProcessBuilder::new("sh").args(["-c", script, inside]), false)
        .timeout(super::ENGINE_CALL)
        .output()
        .map_err(|err| failed(err.to_string()))?;
    if !made.success() {
        return Err(failed(first_line(&made.stderr).to_owned()));
    }
    let mut entries: Vec<_> = fs_err::read_dir(proxy)
        .map_err(|err| failed(err.to_string()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    entries.sort();
    for path in entries {
        let Some(name) = path.file_name().and_then(|name| name.to_str()).map(str::to_owned) else { continue };
        if name.ends_with(".sock") {
            sockets.push(path);
            names.push(name);
            continue;
        }
        // A template: readable by the agent, written by eden only.
        let bytes = fs_err::read(&path).map_err(|err| failed(err.to_string()))?;
        let script = r#"cat > "$0/$1" && chmod 644 "$0/$1""#;
        let copied = exec(ProcessBuilder::new("sh").args(["-c", script, inside, &name]), true)
            .stdin(Stdin::Bytes(bytes))
            .timeout(super::ENGINE_CALL)
            .output()
            .map_err(|err| failed(err.to_string()))?;
        if !copied.success() {
            return Err(failed(first_line(&copied.stderr).to_owned()));
        }
    }
    let command = exec(ProcessBuilder::new(EDEN_INSIDE).arg(TUNNEL_SUBCOMMAND).arg(inside).args(&names), true);
    let child = command.spawn_channel().map_err(|err| failed(format!("cannot run `{command}`: {err}")))?;
    Tunnel::open(child, sockets, std::time::Duration::from_secs(60)).map_err(|err| failed(err.message))
}

/// Programs already found inside a sandbox (each checked once, before its first run).
pub(crate) type Found = std::sync::Mutex<std::collections::HashSet<std::ffi::OsString>>;

/// Fail clearly, before running anything, when the image does not have `program` (`sandbox`
/// names it in the message: ``container `eden-…` ``).
pub(crate) fn check_program(
    found: &Found,
    exec: Exec<'_>,
    program: &std::ffi::OsStr,
    sandbox: &str,
) -> Result<(), Error> {
    let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
    if found.contains(program) {
        return Ok(());
    }
    let probe = exec(ProcessBuilder::new("sh").args(["-c", "command -v \"$1\" >/dev/null", "sh"]).arg(program), false);
    let probed = probe.output().map_err(|err| Error::sandbox(format!("cannot run `{probe}`: {err}")))?;
    if !probed.success() {
        return Err(Error::sandbox(format!(
            "`{}` was not found in {sandbox}: the image has no such program on its PATH",
            program.to_string_lossy(),
        ))
        .with_hint("install the agent in the image, or set `agent.binary` to its path inside the image"));
    }
    found.insert(program.to_owned());
    Ok(())
}

/// The agent a held key's relay runs once it listens (`eden __eden-relay SOCKET VAR… --
/// PROGRAM ARGS…`): it must be in the sandbox too, and checked as the command's own program is.
pub(crate) fn relayed_program(command: &ProcessBuilder) -> Option<&std::ffi::OsStr> {
    let args = command.get_args();
    if args.first().map(|arg| arg.as_os_str()) != Some(crate::proxy::relay::RELAY_SUBCOMMAND.as_ref()) {
        return None;
    }
    let end = args.iter().position(|arg| arg == "--")?;
    args.get(end + 1).map(|program| program.as_os_str())
}

/// Is `command` eden's own executable (the simulated agent), which runs as `EDEN_INSIDE`?
pub(crate) fn runs_eden(command: &ProcessBuilder) -> bool {
    Some(command.program()) == std::env::current_exe().ok().as_deref().map(Path::as_os_str)
}

/// Kills every process in the sandbox except its first (1: the init, or a pod's keep-alive),
/// `keep` and the shell running it, twice over for processes forked during the first pass.
pub(super) fn sweep_script(keep: &str) -> String {
    format!(
        r#"for pass in 1 2; do for p in /proc/[0-9]*; do p=${{p#/proc/}}; case $p in 1|{keep}|$$) ;; *) kill -9 "$p" 2>/dev/null;; esac; done; done"#
    )
}

/// `ARGV` as the engine's client runs it inside a sandbox.
pub(super) type ExecInside = Box<dyn Fn(&[&str]) -> ProcessBuilder + Send + Sync>;

/// The end of every command's wrapper in a container or a pod: write its pid to `pid_file` (a
/// shell word), run the command in the foreground, sweep what it left (sparing `keep`), note
/// the branch's tip (`note`, `tip_note`; empty when the command has a terminal) and exit with
/// its status. The trap (a handler, so the command starts with default dispositions) makes a
/// signal for the group end the command first; the shell runs the trap, and the sweep, once
/// the command has gone.
pub(super) fn run_and_sweep(pid_file: &str, keep: &str, note: &str) -> String {
    format!(
        r#"trap : INT TERM HUP QUIT; echo $$ > {pid_file}; "$@"; status=$?; {}; {note}exit $status"#,
        sweep_script(keep)
    )
}

/// One command's processes inside a container or a pod, reached through the engine's own exec:
/// the command's group signalled as its wrapper recorded it, what it left swept.
pub(super) struct InsideSandbox {
    /// `ARGV` run inside by the engine's client: `docker exec NAME ARGV`, `kubectl exec POD -c
    /// agent -- ARGV`.
    pub(crate) exec: ExecInside,
    /// Inside the sandbox: what the wrapper wrote is only ever used there.
    pub(crate) pid_file: String,
    /// What sweeps spare besides the first process (the keep-alive, the tunnel).
    pub(crate) keep: String,
    /// Ends when the sandbox has stopped or gone (`Inside::gone_command`).
    pub(crate) gone: Option<ProcessBuilder>,
}

impl crate::process::Inside for InsideSandbox {
    fn signal_command(&self, signal: Signal) -> Option<ProcessBuilder> {
        let script = signal_group_script(signal);
        Some((self.exec)(&["sh", "-c", &script, "sh", &self.pid_file]))
    }

    fn sweep_command(&self) -> ProcessBuilder {
        (self.exec)(&["sh", "-c", &sweep_script(&self.keep)])
    }

    fn gone_command(&self) -> Option<ProcessBuilder> {
        self.gone.clone()
    }
}

/// `sh -c SCRIPT sh PIDFILE`: signals the process group whose leader's pid a command's wrapper
/// wrote in PIDFILE (nothing yet if it has not started); busybox's `kill` has no `--`.
pub(crate) fn signal_group_script(signal: Signal) -> String {
    let name = signal.as_str().trim_start_matches("SIG");
    format!(
        r#"pid=$(cat "$1" 2>/dev/null) || exit 0; case $pid in ''|*[!0-9]*) exit 0;; esac; kill -s {name} -- -$pid 2>/dev/null || kill -{name} -$pid"#
    )
}

/// A wrapper's last words, unless its command has a terminal (whose screen they would reach):
/// the branch's tip on stderr for eden (`process::SANDBOX_NOTE`), so that after an iteration
/// that committed nothing eden need not ask the sandbox again (`SandboxHandle::sync`).
/// Read from the branch's loose ref file, never through git: git would read the agent's config
/// (an `include.path` of a FIFO stalls it). A ref that is not a plain file (packed, a link, a
/// FIFO) gives no note, and eden asks the sandbox as it would without one.
pub(crate) fn tip_note(workspace: &Path, branch: &str) -> String {
    let quote = |text: &str| shlex::try_quote(text).map(|q| q.into_owned()).unwrap_or_else(|_| "/nonexistent".into());
    format!(
        r#"g={}/.git; if [ -f "$g" ] && [ ! -L "$g" ]; then g=$(sed -n 's/^gitdir: //p' "$g" | head -n 1); fi; r="$g"/{}; if [ -f "$r" ] && [ ! -L "$r" ]; then read -r tip < "$r"; case $tip in ''|*[!0-9a-f]*) ;; *) printf '\001eden tip %s\n' "$tip" >&2;; esac; fi; "#,
        quote(&workspace.to_string_lossy()),
        quote(&format!("refs/heads/{branch}")),
    )
}

pub(crate) fn first_line(text: &str) -> &str {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
}
