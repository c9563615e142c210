//! Lifecycle hooks: shell commands run at the five phases of a run, on the host (in the
//! worktree) or in the sandbox, each under the same supervisor as the agent — own process
//! group, output streamed to the display and log, killed with its whole tree on timeout or abort.

use crate::error::Error;
use crate::manifest::checks_plan::CheckPlan;
use crate::manifest::hooks_plan::{HookPlan, HooksPlan, Phase, Side};
use crate::process::{supervise, Abort, Flow, Handlers, Outcome, OutputTails, ProcessBuilder, Stopping, Watchdogs};
use crate::record::{HookOutcome, HookRecord};
use crate::redact::Secret;
use crate::report::{Event, RunEvents};
use crate::sandbox::{Host, SandboxHandle};
use crate::values::format_duration;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// What every hook of a run shares: the plan and the `EDEN_*` variables it sees.
pub(crate) struct HookRunner<'a> {
    pub(crate) plan: &'a HooksPlan,
    pub(crate) worktree: PathBuf,
    /// `EDEN_RUN_ID`, `EDEN_NAME`, `EDEN_BRANCH`, ...: set for every hook.
    pub(crate) context: Vec<(&'static str, String)>,
    /// `.eden/.env`: for every hook.
    pub(crate) dotenv: &'a BTreeMap<String, Secret>,
    /// `[sandbox] env`: for the sandbox hooks.
    pub(crate) sandbox_env: &'a BTreeMap<String, Secret>,
    /// For a prompt's `` !`command` `` blocks (`timeouts.hook_step`).
    pub(crate) prompt_timeout: Duration,
    pub(crate) stopping: Stopping,
    /// Asked before and after each host hook (set once the worktree is ready, for a sandboxed
    /// run): keeps what the agent changed from running on this machine.
    pub(crate) gate: Option<Box<dyn HostGate>>,
}

/// What decides whether a host hook may run on the worktree as it is now.
pub(crate) trait HostGate: Send + Sync {
    /// Before the host hook `cmd` of `phase`: an error keeps it from running, and is the run's.
    fn before(&self, phase: Phase, cmd: &str) -> Result<(), Error>;
    /// After it ran: what it changed is the person's own doing.
    fn after(&self, phase: Phase, cmd: &str);
}

/// Where a phase's hooks are: which iteration, whether the sandbox is up to run sandbox hooks.
pub(crate) struct PhaseRun<'a> {
    pub(crate) phase: Phase,
    pub(crate) iteration: Option<u32>,
    pub(crate) sandbox: Option<&'a dyn SandboxHandle>,
    /// Extra variables for this phase (`EDEN_STATUS` for `on_close`).
    pub(crate) extra_env: &'a [(&'static str, String)],
}

impl HookRunner<'_> {
    /// `sh -c CMD` in `cwd` with the run's context and the environment of `side`: `.eden/.env`
    /// everywhere, `[sandbox] env` in the sandbox.
    fn shell(&self, cmd: &str, cwd: &Path, side: Side, iteration: Option<u32>) -> ProcessBuilder {
        let mut command = ProcessBuilder::new("sh").args(["-c", cmd]).cwd(cwd);
        for (key, value) in &self.context {
            command = command.env(key, value);
        }
        if let Some(iteration) = iteration {
            command = command.env("EDEN_ITERATION", iteration.to_string());
        }
        let sandbox_env = self.sandbox_env.iter().filter(|_| side == Side::Sandbox);
        for (key, value) in self.dotenv.iter().chain(sandbox_env) {
            command = command.env(key, &value.0);
        }
        crate::git::with_config(command, &crate::git::NO_BACKGROUND_WORK)
    }

    pub(crate) fn has(&self, phase: Phase) -> bool {
        !self.plan.get(Side::Host, phase).is_empty() || !self.plan.get(Side::Sandbox, phase).is_empty()
    }

    /// Run a phase's host hooks, then its sandbox hooks, in the order written; stop at the first
    /// that fails. Sandbox hooks are skipped when there is no sandbox to run them in.
    pub(crate) async fn run_phase(
        &self,
        run: &PhaseRun<'_>,
        reporter: &mut RunEvents,
        abort: &mut watch::Receiver<Option<Abort>>,
        records: &mut Vec<HookRecord>,
    ) -> Result<(), Error> {
        for side in [Side::Host, Side::Sandbox] {
            if side == Side::Sandbox && run.sandbox.is_none() {
                continue;
            }
            for hook in self.plan.get(side, run.phase) {
                self.run_hook(hook, side, run, reporter, abort, records).await?;
            }
        }
        Ok(())
    }

    async fn run_hook(
        &self,
        hook: &HookPlan,
        side: Side,
        run: &PhaseRun<'_>,
        reporter: &mut RunEvents,
        abort: &mut watch::Receiver<Option<Abort>>,
        records: &mut Vec<HookRecord>,
    ) -> Result<(), Error> {
        let (phase, iteration) = (run.phase, run.iteration);
        let cwd = match &hook.cwd {
            Some(cwd) => self.worktree.join(cwd),
            None => self.worktree.clone(),
        };
        let mut command = self
            .shell(&hook.cmd, &cwd, side, iteration)
            .env("EDEN_PHASE", phase.as_str())
            .env("EDEN_HOOK_SIDE", side.as_str());
        for (key, value) in run.extra_env {
            command = command.env(key, value);
        }
        for (key, value) in &hook.env {
            command = command.env(key, &value.0);
        }
        let prepared = match (side, run.sandbox) {
            (Side::Sandbox, Some(sandbox)) => sandbox.prepare(command)?,
            _ => Host.prepare(command)?,
        };
        let gate = self.gate.as_deref().filter(|_| side == Side::Host);
        if let Some(gate) = gate {
            gate.before(phase, &hook.cmd)?;
        }

        let where_ = describe(side, phase, iteration);
        reporter.report(&Event::HookStarted { phase, side, command: hook.cmd.as_str().into(), iteration });
        let watchdogs = watchdogs(hook.timeout.0, self.stopping);
        let mut handlers = HookOutput { reporter: &mut *reporter };
        let clock = Instant::now();
        let (outcome, tails) =
            supervise(prepared.command, &watchdogs, &mut handlers, abort, prepared.inside.as_deref()).await.map_err(
                |err| {
                    Error::hook(format!("cannot start the {where_} hook `{}`: {err}", hook.cmd))
                        .with_hint("check that `sh` exists where the hook runs")
                },
            )?;
        let duration_ms = clock.elapsed().as_millis() as u64;
        let what = format!("the {where_} hook `{}`", hook.cmd);
        let (label, exit_code, mut result) = judge(outcome, &tails, &what, hook.timeout.0, HOOK_TIMEOUT_HINT);
        if let (Err(_), Side::Sandbox, Some(sandbox)) = (&result, side, run.sandbox) {
            if let Err(gone) = sandbox.check_alive(exit_code) {
                result = Err(gone);
            }
        }
        reporter.report(&Event::HookFinished {
            phase,
            side,
            command: hook.cmd.as_str().into(),
            outcome: label,
            exit_code,
            duration_ms,
        });
        records.push(HookRecord {
            phase,
            side,
            command: hook.cmd.clone(),
            iteration,
            outcome: label,
            exit_code,
            duration_ms,
        });
        if let Some(gate) = gate {
            gate.after(phase, &hook.cmd);
        }
        result
    }
}

/// How one run of a check went: `Err` only when it could not be run at all, was interrupted,
/// or took the sandbox with it.
pub(crate) struct CheckRun {
    pub(crate) outcome: HookOutcome,
    pub(crate) exit_code: Option<i32>,
    pub(crate) duration_ms: u64,
    /// The end of its output (stdout, then stderr), secrets redacted; empty for one that passed.
    pub(crate) output_tail: String,
}

/// How much of a failing check's output is kept (and shown to the agent).
const CHECK_TAIL_LINES: usize = 40;
const CHECK_TAIL_BYTES: usize = 4096;

impl HookRunner<'_> {
    /// Run a `[[check]]` in the sandbox, in the worktree (or its `cwd`), with the sandbox hooks'
    /// environment and `extra_env`, under the same supervisor as a hook.
    pub(crate) async fn run_check(
        &self,
        check: &CheckPlan,
        iteration: u32,
        sandbox: &dyn SandboxHandle,
        extra_env: &[(&'static str, String)],
        reporter: &mut RunEvents,
        abort: &mut watch::Receiver<Option<Abort>>,
    ) -> Result<CheckRun, Error> {
        let cwd = check.cwd.as_ref().map_or_else(|| self.worktree.clone(), |cwd| self.worktree.join(cwd));
        let mut command = self.shell(&check.cmd, &cwd, Side::Sandbox, Some(iteration)).env("EDEN_CHECK", &check.name);
        for (key, value) in extra_env {
            command = command.env(key, value);
        }
        let prepared = sandbox.prepare(command)?;
        reporter.report(&Event::CheckStarted {
            name: check.name.as_str().into(),
            command: check.cmd.as_str().into(),
            iteration,
        });
        let mut handlers = HookOutput { reporter: &mut *reporter };
        let clock = Instant::now();
        let watchdogs = watchdogs(check.timeout.0, self.stopping);
        let supervised =
            supervise(prepared.command, &watchdogs, &mut handlers, abort, prepared.inside.as_deref()).await;
        let (outcome, tails) = supervised.map_err(|err| {
            Error::hook(format!("cannot start the check `{}`: {err}", check.name))
                .with_hint("check that `sh` exists where the check runs")
        })?;
        let what = format!("the check `{}`", check.name);
        let hint = "give the check a longer `timeout = \"...\"`, or raise `timeouts.hook_step`";
        let (label, exit_code, result) = judge(outcome, &tails, &what, check.timeout.0, hint);
        if label == HookOutcome::Interrupted {
            result?;
        }
        if label != HookOutcome::Ok {
            sandbox.check_alive(exit_code)?;
        }
        // The wall time, everything after the start included.
        let duration_ms = clock.elapsed().as_millis() as u64;
        reporter.report(&Event::CheckFinished {
            name: check.name.as_str().into(),
            iteration,
            outcome: label,
            exit_code,
            duration_ms,
        });
        let output_tail = if label == HookOutcome::Ok { String::new() } else { check_tail(&tails) };
        Ok(CheckRun { outcome: label, exit_code, duration_ms, output_tail })
    }

    /// Run a prompt's `` !`command` `` in the sandbox (in the worktree, with the sandbox hooks'
    /// environment) and return its standard output, without the final newline.
    pub(crate) async fn prompt_command(
        &self,
        cmd: &str,
        iteration: u32,
        sandbox: &dyn SandboxHandle,
        reporter: &mut RunEvents,
        abort: &mut watch::Receiver<Option<Abort>>,
    ) -> Result<String, Error> {
        let command = self.shell(cmd, &self.worktree, Side::Sandbox, Some(iteration));
        let prepared = sandbox.prepare(command)?;
        let what = format!("the prompt command `{cmd}`");
        let mut handlers = Capture { stdout: Vec::new(), too_long: false, reporter: &mut *reporter };
        let timeout = self.prompt_timeout;
        let (outcome, tails) = supervise(
            prepared.command,
            &watchdogs(timeout, self.stopping),
            &mut handlers,
            abort,
            prepared.inside.as_deref(),
        )
        .await
        .map_err(|err| Error::hook(format!("cannot start {what}: {err}")))?;
        judge(outcome, &tails, &what, timeout, "raise `timeouts.hook_step`, which also limits prompt commands").2?;
        if handlers.too_long {
            return Err(Error::hook(format!("{what} printed more than {} KiB", MAX_CAPTURE / 1024))
                .with_hint("a prompt should quote a summary: trim the command's output (`| head -100`)"));
        }
        let mut text = String::from_utf8_lossy(&handlers.stdout).into_owned();
        while text.ends_with('\n') {
            text.pop();
        }
        Ok(text)
    }
}

/// The end of a check's output: its last lines of stdout, then of stderr, at most
/// `CHECK_TAIL_BYTES`, secrets redacted.
fn check_tail(tails: &OutputTails) -> String {
    let mut lines = tails.stdout.lines(CHECK_TAIL_LINES);
    let stderr = tails.stderr.lines(CHECK_TAIL_LINES);
    if !stderr.is_empty() {
        lines.push("(stderr)".into());
        lines.extend(stderr);
    }
    let text = crate::redact::apply(&lines.join("\n")).into_owned();
    match text.len().checked_sub(CHECK_TAIL_BYTES) {
        Some(cut) if cut > 0 => {
            let start = (cut..text.len()).find(|&at| text.is_char_boundary(at)).unwrap_or(text.len());
            format!("…{}", &text[start..])
        }
        _ => text,
    }
}

const HOOK_TIMEOUT_HINT: &str = "give the hook a longer `timeout = \"...\"`, or raise `timeouts.hook_step`";

/// Most a prompt command may print.
const MAX_CAPTURE: usize = 256 * 1024;

struct Capture<'a> {
    stdout: Vec<u8>,
    too_long: bool,
    reporter: &'a mut RunEvents,
}

impl Handlers for Capture<'_> {
    fn stdout_line(&mut self, line: &[u8], continues: bool) -> Flow {
        if self.stdout.len() + line.len() + 1 > MAX_CAPTURE {
            self.too_long = true;
        } else {
            self.stdout.extend_from_slice(line);
            if !continues {
                self.stdout.push(b'\n');
            }
        }
        Flow::Continue
    }

    fn stderr_line(&mut self, line: &[u8]) {
        if crate::process::sandbox_note(line).is_some() {
            return;
        }
        let text = crate::agent::decode(line);
        self.reporter.report(&Event::HookOutput { text: text.clone(), stderr: true });
    }

    fn idle_warning(&mut self, _silent_for: Duration) {}
}

/// What a finished command means: its outcome for the record, its exit code, and the error.
fn judge(
    outcome: Outcome,
    tails: &OutputTails,
    what: &str,
    timeout: Duration,
    timeout_hint: &str,
) -> (HookOutcome, Option<i32>, Result<(), Error>) {
    match outcome {
        Outcome::Exited { code: 0 } => (HookOutcome::Ok, Some(0), Ok(())),
        Outcome::Exited { code } => {
            let mut message = format!("{what} failed with exit code {code}");
            let tail = tails.describe(15);
            if !tail.is_empty() {
                message.push_str("; its last output:");
                message.push_str(&tail);
            }
            let error = Error::hook(message).with_hint("the command must exit 0; all of its output is above");
            (HookOutcome::Failed, Some(code), Err(error))
        }
        Outcome::IdleTimeout(_)
        | Outcome::StepTimeout(_)
        | Outcome::Overstayed
        | Outcome::Stopped
        | Outcome::Steered => {
            let error = Error::timeout(format!("{what} ran longer than {} and was stopped", format_duration(timeout)))
                .with_hint(timeout_hint);
            (HookOutcome::Timeout, None, Err(error))
        }
        Outcome::Aborted(signal) => (HookOutcome::Interrupted, None, Err(Error::interrupted(signal))),
    }
}

/// Only silence is allowed to be long: a build or a test run may print nothing for minutes.
fn watchdogs(timeout: Duration, stopping: Stopping) -> Watchdogs {
    Watchdogs {
        idle_timeout: timeout,
        idle_warning_interval: timeout,
        step_timeout: timeout,
        stopping,
        deadline: None,
        steer: None,
    }
}

/// `sandbox on_iteration_end (iteration 2)`
fn describe(side: Side, phase: Phase, iteration: Option<u32>) -> String {
    match iteration {
        Some(n) => format!("{} {} (iteration {n})", side.as_str(), phase.as_str()),
        None => format!("{} {}", side.as_str(), phase.as_str()),
    }
}

struct HookOutput<'a> {
    reporter: &'a mut RunEvents,
}

impl Handlers for HookOutput<'_> {
    fn stdout_line(&mut self, line: &[u8], _continues: bool) -> Flow {
        let text = crate::agent::decode(line);
        self.reporter.report(&Event::HookOutput { text: text.clone(), stderr: false });
        Flow::Continue
    }

    fn stderr_line(&mut self, line: &[u8]) {
        if crate::process::sandbox_note(line).is_some() {
            return;
        }
        let text = crate::agent::decode(line);
        self.reporter.report(&Event::HookOutput { text: text.clone(), stderr: true });
    }

    fn idle_warning(&mut self, _silent_for: Duration) {}
}

/// An abort channel for `on_close`, which runs after eden was interrupted: it fires only for
/// signals that arrive after this call, so the first Ctrl-C does not also cut the cleanup
/// short, while another one still does.
pub(crate) fn later_signals(abort: &watch::Receiver<Option<Abort>>) -> watch::Receiver<Option<Abort>> {
    let seen = abort.borrow().map_or(0, |request| request.count);
    let (sender, receiver) = watch::channel(None);
    let mut source = abort.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                changed = source.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let current = *source.borrow_and_update();
                    if let Some(request) = current.filter(|request| request.count > seen) {
                        sender.send_replace(Some(Abort { signal: request.signal, count: request.count - seen }));
                    }
                }
                () = sender.closed() => break,
            }
        }
    });
    receiver
}
