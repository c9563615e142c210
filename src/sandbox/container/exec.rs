//! How eden runs a command in a container: `exec` as the run's user, its environment passed
//! by name; the wrapper that sweeps what a command left; the paths and privileges every
//! container has.

use crate::error::Error;
use crate::manifest::plan::Engine;
use crate::process::ProcessBuilder;
use crate::sandbox::carry;
use crate::sandbox::engine::{self, Target};
use std::path::{Path, PathBuf};

/// Where the host's object stores appear inside, read-only: `/opt/eden/objects/<n>`.
pub(super) const OBJECTS_INSIDE: &str = "/opt/eden/objects";

/// The pid files of running commands, inside the container (made by the start-up exec).
pub(super) const PIDS_INSIDE: &str = "/tmp/.eden-exec";
/// Where a pool member holds the repository made ahead, for a claim to rename into place.
pub(super) const SEED_AHEAD_INSIDE: &str = "/tmp/.eden-seed";

/// With `expose_worktree`: where the container's own repository is (the workspace volume), and
/// what the worktree's `.git` says inside (a read-only file over the host's pointer).
pub(super) const GIT_DIR_INSIDE: &str = "/opt/eden/git";

/// `sh -c WRAPPER PIDFILE PROGRAM ARGS...`: the command run as every sandbox's commands are
/// (`carry::run_and_sweep`), its pid written to PIDFILE; last, unless the command has a
/// terminal, it notes the branch's tip.
pub(super) fn wrapper(keep: &str, note_tip: Option<(&Path, &str)>) -> String {
    let note = note_tip.map_or_else(String::new, |(workspace, branch)| carry::tip_note(workspace, branch));
    carry::run_and_sweep(r#""$0""#, keep, &note)
}

/// Prints the init's one child, the container's keep-alive (an exec's parent is outside the
/// container), so sweeps spare it.
macro_rules! keep_alive_listing {
    () => {
        r#"for stat in /proc/[0-9]*/stat; do read -r pid comm state ppid rest < "$stat"; if [ "$ppid" = 1 ]; then echo "$pid"; fi; done"#
    };
}

/// Where a pool member's keep-alive writes its pid as it starts (as root: no command of a run's
/// can change it).
pub(super) const KEEP_ALIVE_FILE: &str = "/tmp/.eden-keep-alive";

/// A claimed pool member's keep-alive, read by its one set-up exec: the pid it wrote (the
/// listing would also find what the member's earlier commands left to the init), or, in a
/// member made before it wrote one, `keep_alive_listing`.
pub(super) const KEEP_ALIVE_SCRIPT: &str =
    concat!("cat /tmp/.eden-keep-alive 2>/dev/null || { ", keep_alive_listing!(), "; }");

/// Run as root once a container made for the run is up: the workspace (a volume the engine
/// made, owned by root) handed to the run's user, the pid folder made, and the keep-alive
/// printed.
pub(super) const START_SCRIPT: &str = concat!(
    "set -e\n",
    r#"mkdir -p "$2" && chown "$1" "$2" && mkdir -p "$3" && chown "$1" "$3""#,
    "\n",
    keep_alive_listing!()
);

/// Every container runs without capabilities and cannot gain any (setuid programs, file
/// capabilities): nothing inside can change the network rules, forge packets, mount, or load
/// anything into the kernel. `run_args` that would give some back need `expose_host`.
pub(super) const PRIVILEGES: [&str; 4] = ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"];

/// When the run's user is not root, eden's own set-up commands, which run as root in the
/// container before (and between) the agent's (`as_root`: the workspace handed to the user,
/// state folders carried in and out), need these back. The container's own user is root (under
/// no-new-privileges an exec as root holds capabilities only then); every command of the run's
/// is an exec as the run's user, which holds none of them and cannot gain them.
pub(super) const SETUP_CAPABILITIES: [&str; 6] =
    ["--cap-add", "CHOWN", "--cap-add", "DAC_OVERRIDE", "--cap-add", "FOWNER"];

/// The run's user in its container: this machine's `uid:gid`.
pub(super) fn run_user() -> String {
    format!("{}:{}", nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw())
}

/// gVisor's runtime (`runsc`, by name or path).
pub(crate) fn is_gvisor(runtime: &str) -> bool {
    runtime.rsplit('/').next().is_some_and(|name| name.starts_with("runsc"))
}

/// Git inside works on a repository owned by the same uid, but a mount may make it look
/// foreign; allow it per command, never through anyone's global config.
pub(super) const GIT_SAFE_DIRECTORY: [(&str, &str); 1] = [("safe.directory", "*")];

/// `docker|podman exec FLAGS [-u USER] [-w CWD] [-e NAME]… NAME PROGRAM ARGS…`: `command` run in
/// container `name`, git trusting the workspace, its variables (and `defaults` it does not set)
/// passed by name only, their values in the client's environment, never on a command line. The
/// one way eden runs a command in a container, whether its run is going or it is being salvaged.
pub(super) fn exec_in(
    target: &Target,
    name: &str,
    user: Option<&str>,
    command: ProcessBuilder,
    flags: &[&str],
    defaults: &[(&'static str, PathBuf)],
) -> ProcessBuilder {
    let command = crate::git::with_config(command, &GIT_SAFE_DIRECTORY);
    let mut exec = target.command().arg("exec").args(flags);
    if let Some(user) = user {
        exec = exec.args(["-u", user]);
    }
    if let Some(cwd) = command.get_cwd() {
        exec = exec.args(["-w".as_ref(), cwd.as_os_str()]);
    }
    for (key, value) in defaults {
        if !command.get_env().iter().any(|(set, _)| set == key) {
            exec = exec.args(["-e", key]).env(key, value);
        }
    }
    for (key, value) in command.get_env() {
        if let Some(value) = value.as_ref().filter(|_| key != "PWD") {
            exec = exec.arg("-e").arg(key).env(key, value);
        }
    }
    exec.arg(name).arg(command.program()).args(command.get_args())
}

/// Remove a container, running or not. Gone already is fine.
pub(crate) fn remove(target: &Target, name: &str) -> Result<(), Error> {
    let output = engine::run(target.command().args(["rm", "-f", name]).finishing())?;
    if output.success() || output.stderr.to_lowercase().contains("no such container") {
        return Ok(());
    }
    Err(Error::sandbox(format!("cannot remove container `{name}`: {}", output.stderr.trim())))
}

/// Remove a workspace volume. Gone already is fine.
pub(crate) fn remove_volume(target: &Target, name: &str) -> Result<(), Error> {
    let output = engine::run(target.command().args(["volume", "rm", "-f", name]).finishing())?;
    let stderr = output.stderr.to_lowercase();
    if output.success() || stderr.contains("no such volume") || stderr.contains("no volume with name") {
        return Ok(());
    }
    Err(Error::sandbox(format!("cannot remove volume `{name}`: {}", output.stderr.trim())))
}

/// The engines' templates differ: docker's `ps` and `volume ls` have a `Label` function,
/// podman's a `Labels` map.
pub(super) fn label_template(engine: Engine, name: &str) -> String {
    match engine {
        Engine::Docker => format!("{{{{.Label \"{name}\"}}}}"),
        Engine::Podman => format!("{{{{index .Labels \"{name}\"}}}}"),
    }
}

/// `ENGINE ARGS… --format FIELDS` (a `ps` or `volume ls` listing), each line's tab-separated
/// fields; the engine's refusal as an error naming `what` it could not list.
pub(super) fn listing(
    target: &Target,
    args: &[&str],
    fields: &[String],
    what: &str,
) -> Result<Vec<Vec<String>>, Error> {
    let format = fields.join("\t");
    let listing = engine::run(target.command().args(args).args(["--format", &format]))?;
    if !listing.success() {
        let verb: Vec<&str> = args.iter().copied().take_while(|arg| !arg.starts_with('-')).collect();
        return Err(Error::sandbox(format!(
            "`{} {}` cannot list {what} ({}): {}",
            target.binary(),
            verb.join(" "),
            target.describe(),
            carry::first_line(&listing.stderr)
        )));
    }
    Ok(listing.stdout.lines().map(|line| line.split('\t').map(str::to_owned).collect()).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_keep_alive_file_is_the_one_the_idle_script_writes() {
        assert!(super::KEEP_ALIVE_SCRIPT.starts_with(&format!("cat {} ", super::KEEP_ALIVE_FILE)));
    }
}
