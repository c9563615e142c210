//! The run's container as the orchestrator sees it (`SandboxHandle`): commands as execs, work
//! brought back, removal.

use super::exec::{exec_in, run_user, wrapper, PIDS_INSIDE};
use super::exec::{remove, remove_volume};
use crate::error::Error;
use crate::process::{ProcessBuilder, Stdin};
use crate::sandbox::agent_state::PrivateState;
use crate::sandbox::carry::{self, EDEN_INSIDE};
use crate::sandbox::engine::{self, Target};
use crate::sandbox::ledger::Ledger;
use crate::sandbox::repository::Channel;
use crate::sandbox::{Prepared, SandboxHandle};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) struct Container {
    pub(super) target: Target,
    /// The engine does not see this machine's files: everything crosses its channel.
    pub(super) remote: bool,
    /// Claimed from a warm pool of this repository: its workspace is in the container's own
    /// layer (no volume), and what a run brings is carried in as for a remote engine.
    pub(super) pooled: Option<PathBuf>,
    /// What the record says of the engine's address.
    pub(super) recorded_host: Option<String>,
    pub(super) name: String,
    /// The engine's id for it, and the image it runs.
    pub(super) id: String,
    pub(super) image: String,
    /// The run's worktree, branch and what came back (the worktree's path is also the
    /// workspace volume's place inside).
    pub(super) ledger: Ledger,
    pub(super) next_exec: AtomicU64,
    /// The pid (inside) of the process that keeps the container alive; sweeps spare it.
    pub(super) keep: String,
    /// Programs already found in the image (checked once each, before their first exec).
    pub(super) found: carry::Found,
    /// Set for every exec unless the command sets it itself (the agent's private state folders).
    pub(super) exec_env: Vec<(&'static str, PathBuf)>,
    /// The agent's private state folders (a remote engine gets copies, which come back).
    pub(super) states: Vec<PrivateState>,
    /// eden's executable is inside (a remote engine gets a copy, the first time it is needed).
    pub(super) eden_inside: std::sync::atomic::AtomicBool,
    /// Salvages and removes the container if eden dies without doing it (SIGKILL).
    pub(super) guard: Option<crate::process::guard::Guard>,
    /// Keeps the allowlist following its names' addresses (`network = "allowlist"`).
    pub(super) firewall: Option<crate::sandbox::firewall::Refresher>,
    /// A remote engine's way to the held keys' proxy (`proxy::tunnel`).
    pub(super) tunnel: Option<crate::proxy::tunnel::Tunnel>,
    /// The workspace volume, kept when work could not be brought back from it.
    pub(super) keep_volume: bool,
    /// `expose_worktree`: the host worktree is bind-mounted; only the repository is the
    /// container's own.
    pub(super) exposed: bool,
    /// The containers of its `[[service]]`s made so far (`services`), removed before it.
    pub(super) services: Vec<String>,
    /// A claimed pool member's door (`sandbox::door`): the run's user's commands go through it.
    pub(super) door: Option<crate::sandbox::door::Door>,
    /// A claim at the door renames the member behind it: its name until then, and the rename.
    pub(super) renaming: Option<(String, std::thread::JoinHandle<Result<crate::process::Output, Error>>)>,
    /// The prune of earlier runs' containers, left going by a claim: waited for at the end.
    pub(super) pruning: Option<super::leftovers::Pruning>,
    /// How long each step of its start took (`SandboxHandle::timings`).
    pub(super) steps: Vec<(&'static str, std::time::Duration, std::time::Instant)>,
    pub(super) removed: bool,
}

impl Channel for Container {
    fn inside(&self, command: ProcessBuilder) -> Result<ProcessBuilder, Error> {
        Ok(self.exec(command, &["-i"]))
    }

    fn workspace(&self) -> &Path {
        self.ledger.worktree()
    }
}

impl SandboxHandle for Container {
    fn workspace_git(&self, args: &[&str]) -> Option<Result<crate::process::Output, Error>> {
        Some(crate::sandbox::repository::workspace_git(self, args))
    }

    fn artifacts(
        &self,
        request: &crate::sandbox::artifacts::ArtifactRequest<'_>,
    ) -> Result<crate::sandbox::artifacts::Collected, Error> {
        carry::copy_eden_in(&self.eden_inside, &|command, stdin| self.as_root(command, stdin), "container")?;
        let channel: &dyn Channel = self;
        let inside = crate::sandbox::artifacts::EdenInside {
            inside: &|command| channel.inside(command),
            eden: Path::new(EDEN_INSIDE),
            workspace: channel.workspace(),
        };
        crate::sandbox::artifacts::collect(&inside, request)
    }

    fn kind(&self) -> &'static str {
        self.target.binary()
    }

    fn container(&self) -> Option<crate::record::ContainerRecord> {
        Some(crate::record::ContainerRecord {
            engine: self.target.engine.into(),
            host: self.recorded_host.clone(),
            name: self.name.clone(),
            id: self.id.clone(),
            image: self.image.clone(),
            node: None,
            network_policy: None,
        })
    }

    fn timings(&self) -> Vec<(&'static str, std::time::Duration, std::time::Instant)> {
        self.steps.clone()
    }

    fn state_env(&self) -> Vec<(&'static str, PathBuf)> {
        self.exec_env.clone()
    }

    fn prepare(&self, command: ProcessBuilder) -> Result<Prepared, Error> {
        self.ledger.note_used();
        let mut command = command;
        let stdin = command.take_stdin();
        let program = if carry::runs_eden(&command) {
            carry::copy_eden_in(&self.eden_inside, &|command, stdin| self.as_root(command, stdin), "container")?;
            EDEN_INSIDE.as_ref()
        } else {
            command.program()
        };
        let sandbox = format!("container `{}`", self.name);
        let exec = |command, _| self.exec(command, &[]);
        for program in std::iter::once(program).chain(carry::relayed_program(&command)) {
            carry::check_program(&self.found, &exec, program, &sandbox)?;
        }
        let n = self.next_exec.fetch_add(1, Ordering::SeqCst);
        let pid_file = format!("{PIDS_INSIDE}/{n}.pid");
        let note_tip =
            (!matches!(stdin, Stdin::Terminal { .. })).then_some((self.ledger.worktree(), self.ledger.branch()));
        let flags: &[&str] = match stdin {
            Stdin::Bytes(_) | Stdin::Terminal { tty: false } => &["-i"],
            // A terminal inside, sized and resized by the engine's client from ours.
            Stdin::Terminal { tty: true } => &["-it"],
            Stdin::Null => &[],
        };
        let script = wrapper(&self.keep, note_tip);
        let mut args: Vec<std::ffi::OsString> =
            vec!["-c".into(), script.into(), pid_file.clone().into(), program.to_owned()];
        args.extend(command.get_args().iter().cloned());
        let wrapped = command.with_program("sh", args);
        let exec = self.exec(wrapped, flags).stdin(stdin);
        let (target, name) = (self.target.clone(), self.engine_ref().to_owned());
        let inside = carry::InsideSandbox {
            exec: Box::new(move |argv| target.command().args(["exec", &name]).args(argv)),
            pid_file,
            keep: self.keep.clone(),
            gone: Some(self.target.command().args(["wait", self.engine_ref()])),
        };
        Ok(Prepared { command: exec, inside: Some(Box::new(inside)) })
    }

    fn sync(&self, reported_tip: Option<&str>) -> Result<Option<String>, Error> {
        self.ledger.sync(self, reported_tip, self.exposed).map_err(|err| self.kept_if_over(err))?;
        Ok(None)
    }

    fn bring_state_back(&self) -> Result<(), Error> {
        if self.carried() {
            carry::pull_state(
                &self.states,
                &|command, stdin| self.as_root(command, stdin),
                self.ledger.scratch(),
                "container",
                self.ledger.limit(),
            )?;
        }
        Ok(())
    }

    fn check_alive(&self, exit_code: Option<i32>) -> Result<(), Error> {
        // A container being removed kills the command first (137) and disappears a moment
        // later: after a kill (or the engine's own error, 125), watch it for a while. 126 and
        // 127 are the command's shell saying a program would not run: the container is fine.
        let watch_for = match exit_code {
            Some(code) if code == 125 || code > 128 => std::time::Duration::from_secs(5),
            _ => std::time::Duration::ZERO,
        };
        let deadline = std::time::Instant::now() + watch_for;
        loop {
            if !self.running()? {
                break;
            }
            if std::time::Instant::now() >= deadline {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Err(Error::sandbox(format!(
            "the {} container `{}` stopped or was removed, so the command in it failed",
            self.target.binary(),
            self.name
        ))
        .with_hint(
            "something outside eden stopped or removed it (`docker rm`, a daemon restart, the OOM killer); run again",
        ))
    }

    fn close(&mut self) -> Result<Option<String>, Error> {
        let pruned = self.pruning.take().map(|pruning| pruning.join().unwrap_or_default()).unwrap_or_default();
        let pruned = super::leftovers::pruned_said(pruned);
        let closed = self.close_own();
        match (closed, pruned.is_empty()) {
            (Ok(note), false) => Ok(Some(pruned.into_iter().chain(note).collect::<Vec<_>>().join("\n"))),
            (closed, _) => closed,
        }
    }
}

impl Container {
    /// `close`, for the container itself.
    fn close_own(&mut self) -> Result<Option<String>, Error> {
        if self.removed {
            return Ok(None);
        }
        let _ = self.renamed();
        // Stopped by something else: started again, so what it holds can still come back.
        let alive = self.running().unwrap_or(false)
            || (engine::run(self.target.command().args(["start", &self.name])).is_ok_and(|out| out.success())
                && self.running().unwrap_or(false));
        if !alive && self.pooled.is_some() {
            self.close_quietly()?;
            return Err(Error::sandbox(format!(
                "the {} container `{}` was gone at the end of the run, so its last work could not come back",
                self.target.binary(),
                self.name
            ))
            .with_hint("it was claimed from the warm pool, whose workspace is the container's own: something outside eden removed it (`docker rm`, a daemon restart)"));
        }
        if !alive {
            // Removed under us: its volume still holds the work, and is kept.
            self.keep_volume = true;
            self.close_quietly()?;
            return Err(Error::sandbox(format!(
                "the {} container `{}` was gone at the end of the run, so its last work could not come back",
                self.target.binary(),
                self.name
            ))
            .with_hint(format!(
                "the agent's workspace is kept in the volume `{}`; `eden clean --force` removes it",
                self.name
            )));
        }
        let brought = self.ledger.bring_home(self, self.exposed);
        // Work too big to come back stays in the workspace volume, for the person to look at.
        if self.ledger.over_limit() {
            self.keep_volume = true;
        }
        let brought = brought.map_err(|err| self.kept_if_over(err));
        self.close_quietly()?;
        brought
    }
}

impl Container {
    /// Work too big to come back (`sandbox.max_return`) stays in the workspace volume, which
    /// the container's removal keeps: the error says where.
    fn kept_if_over(&self, err: Error) -> Error {
        if !self.ledger.over_limit() {
            return err;
        }
        let (engine, name) = (self.target.binary(), &self.name);
        if self.pooled.is_some() {
            return err.with_hint(format!(
                "the agent's work is kept in the stopped {engine} container `{name}` (`{engine} start {name} && {engine} exec -it {name} sh` to look; `eden clean --force` removes it); raise `sandbox.max_return` if its work is meant to be that big"
            ));
        }
        err.with_hint(format!(
            "the agent's work is kept in the {engine} volume `{name}` (`{engine} run --rm -it -v {name}:/w IMAGE sh` to look; `eden clean --force` removes it); raise `sandbox.max_return` if its work is meant to be that big"
        ))
    }

    /// `ENGINE exec [flags] -u USER -w CWD -e NAME… NAME PROGRAM ARGS…` for `command`, as the
    /// run's user unless `flags` name one, its environment passed by name only (the values
    /// travel in the client's own environment).
    /// Through the member's door instead when it has one (a claimed pool member on a local
    /// engine), for the run's user without a terminal: the same command, without the engine.
    pub(super) fn exec(&self, command: ProcessBuilder, flags: &[&str]) -> ProcessBuilder {
        let user = (!flags.contains(&"-u")).then(run_user);
        let (cwd, program) = (command.get_cwd().map(Path::to_path_buf), command.program().to_owned());
        let argv: Vec<std::ffi::OsString> =
            std::iter::once(program).chain(command.get_args().iter().cloned()).collect();
        let engine = exec_in(&self.target, self.engine_ref(), user.as_deref(), command, flags, &self.exec_env);
        match (&self.door, user) {
            (Some(door), Some(user)) if flags.iter().all(|flag| *flag == "-i") => {
                let argv: Vec<&std::ffi::OsStr> = argv.iter().map(|word| word.as_os_str()).collect();
                door.call(engine, &user, cwd.as_deref(), &argv, flags.contains(&"-i"))
            }
            _ => engine,
        }
    }

    /// What a run brings (state folders, the held keys' proxy) is carried in through the
    /// channel, not mounted: a remote engine, or a pool member made before the run.
    pub(super) fn carried(&self) -> bool {
        self.remote || self.pooled.is_some()
    }

    fn running(&self) -> Result<bool, Error> {
        let state =
            engine::run(self.target.command().args(["inspect", "--format", "{{.State.Running}}", self.engine_ref()]))?;
        Ok(state.success() && state.stdout.trim() == "true")
    }

    /// `command` inside as root (for what the run's user may not write yet), its stdin open
    /// when `stdin` is set.
    pub(super) fn as_root(&self, command: ProcessBuilder, stdin: bool) -> ProcessBuilder {
        self.exec(command, if stdin { &["-i", "-u", "0"] } else { &["-u", "0"] })
    }

    /// What the engine is asked about the container by: a member claimed at its door by its id
    /// (its rename goes on behind the claim), any other by its name.
    pub(super) fn engine_ref(&self) -> &str {
        match self.door.is_some() && !self.id.is_empty() {
            true => &self.id,
            false => &self.name,
        }
    }

    /// The rename of a member claimed at its door, waited for: the engine knows the container
    /// by its run's name from here on (if it failed, by its name before the claim).
    pub(super) fn renamed(&mut self) -> Result<(), Error> {
        let Some((before, renaming)) = self.renaming.take() else { return Ok(()) };
        let renamed = renaming.join().unwrap_or_else(|_| Err(Error::internal("renaming the pool member panicked")))?;
        if renamed.success() {
            return Ok(());
        }
        let err = Error::sandbox(format!(
            "cannot rename the claimed pool member `{before}` to `{}`: {}",
            self.name,
            carry::first_line(&renamed.stderr)
        ));
        self.name = before;
        Err(err)
    }

    /// Remove the container (and its volume unless kept), bringing nothing back.
    pub(super) fn close_quietly(&mut self) -> Result<(), Error> {
        if self.removed {
            return Ok(());
        }
        let _ = self.renamed();
        self.removed = true;
        self.firewall = None;
        self.tunnel = None;
        let _ = crate::safe_fs::remove_tree(self.ledger.scratch());
        crate::sandbox::services::remove(&self.target, &self.services)?;
        match &self.pooled {
            // A pool member's workspace is its own layer: kept, the container stays (stopped).
            Some(repo) if self.keep_volume => {
                let _ = engine::run(self.target.command().args(["stop", "-t", "1", &self.name]).finishing());
                super::pool::mark_kept(repo, &self.name);
            }
            Some(repo) => {
                remove(&self.target, &self.name)?;
                super::pool::forget_claim(repo, &self.name);
            }
            None => {
                remove(&self.target, &self.name)?;
                if !self.keep_volume {
                    remove_volume(&self.target, &self.name)?;
                }
            }
        }
        // Removed: the guard has nothing left to do.
        self.guard = None;
        Ok(())
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
