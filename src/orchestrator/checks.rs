//! `[[check]]`s: run in the sandbox once the agent signals completion (and after every
//! iteration for those that say so), each run recorded; what fails goes back to the agent in
//! the next prompt, and nothing merges until they pass.

use super::context::{Live, Shared};
use crate::error::{Error, ErrorKind};
use crate::hooks::CheckRun;
use crate::manifest::checks_plan::CheckPlan;
use crate::manifest::plan::StepPlan;
use crate::record::{CheckRecord, HookOutcome};
use crate::values::format_duration;

/// A check and how its run went.
pub(super) struct Ran<'a> {
    pub(crate) check: &'a CheckPlan,
    pub(crate) run: CheckRun,
}

impl Ran<'_> {
    pub(crate) fn passed(&self) -> bool {
        self.run.outcome == HookOutcome::Ok
    }
}

/// Run `due` in order, each to its end; recorded in the run's record as they finish.
pub(super) async fn run<'a>(
    shared: &Shared<'_>,
    step: &StepPlan,
    due: &[&'a CheckPlan],
    iteration: u32,
    extra_env: &[(&'static str, String)],
    live: &mut Live<'_>,
) -> Result<Vec<Ran<'a>>, Error> {
    let mut runs = Vec::new();
    let before = untracked(shared);
    for check in due {
        let run = shared.hooks.run_check(check, iteration, shared.sandbox, extra_env, live.events, live.abort).await?;
        let record = CheckRecord {
            step: step.name.clone(),
            name: check.name.clone(),
            command: check.cmd.clone(),
            iteration,
            outcome: run.outcome,
            exit_code: run.exit_code,
            duration_ms: run.duration_ms,
            output_tail: run.output_tail.clone(),
        };
        let _ = shared.journal.update(|run_record| run_record.checks.push(record));
        if let Some(code @ (126 | 127)) = run.exit_code {
            return Err(cannot_run(check, code, &run.output_tail, shared.sandbox.kind()));
        }
        runs.push(Ran { check, run });
    }
    if let (Some(before), Some(after)) = (before, untracked(shared)) {
        live.progress.check_outputs.extend(after.difference(&before).cloned());
    }
    Ok(runs)
}

/// `git ARGS` in the workspace: the sandbox's own repository, or the worktree here.
pub(super) fn workspace_git(
    sandbox: &dyn crate::sandbox::SandboxHandle,
    worktree: &std::path::Path,
    args: &[&str],
) -> Option<crate::process::Output> {
    let output = match sandbox.workspace_git(args) {
        Some(output) => output,
        None => crate::git::Git::new(worktree)
            .command(args)
            .env("GIT_LITERAL_PATHSPECS", "1")
            .output()
            .map_err(|err| Error::git(err.to_string())),
    };
    output.ok().filter(crate::process::Output::success)
}

/// The workspace's untracked files (what git ignores aside), `None` if they cannot be had.
fn untracked(shared: &Shared<'_>) -> Option<std::collections::BTreeSet<String>> {
    let args = ["ls-files", "-z", "--others", "--exclude-standard"];
    let listed = workspace_git(shared.sandbox, &shared.workspace.pre.worktree, &args)?;
    Some(listed.stdout.split('\0').filter(|path| !path.is_empty()).map(str::to_owned).collect())
}

/// What the checks wrote (and nobody added to git since) is removed from the workspace before
/// the work comes home: a check's report is not the agent's work (`artifacts` keeps it).
pub(super) fn set_aside_outputs(
    sandbox: &dyn crate::sandbox::SandboxHandle,
    worktree: &std::path::Path,
    outputs: &std::collections::BTreeSet<String>,
) -> usize {
    if outputs.is_empty() {
        return 0;
    }
    let mut removed = 0;
    let paths: Vec<&String> = outputs.iter().collect();
    for chunk in paths.chunks(256) {
        let mut args = vec!["clean", "-f", "-q", "--"];
        args.extend(chunk.iter().map(|path| path.as_str()));
        if workspace_git(sandbox, worktree, &args).is_some() {
            removed += chunk.len();
        }
    }
    removed
}

/// A check whose program is missing where it runs (126 or 127 from its shell): no agent can
/// fix that, so the run stops (exit 6) instead of handing it to the agent as a failure.
fn cannot_run(check: &CheckPlan, code: i32, output_tail: &str, sandbox: &str) -> Error {
    let program = check.cmd.split_whitespace().next().unwrap_or_default();
    let why = if code == 127 { "not found" } else { "found but cannot be run" };
    let said = output_tail.lines().last().map(|line| format!(" ({})", line.trim())).unwrap_or_default();
    let (place, hint) = match sandbox {
        "none" => (
            "on this machine".to_owned(),
            format!("install `{program}` on this machine, or fix the check's `cmd`"),
        ),
        kind => (
            format!("in the {kind} sandbox"),
            format!(
                "the sandbox lacks `{program}`: add it to the image (see \"Extending the image\" in the book's Containers guide: a `--base` with the toolchain, or a line in `Dockerfile.eden`), or fix the check's `cmd`"
            ),
        ),
    };
    Error::sandbox(format!(
        "the check `{}` cannot run {place}: `{program}` {why}, exit {code}{said}; an agent cannot fix that, so the run stopped",
        check.name
    ))
    .with_hint(hint)
}

/// What the agent is told of the checks that failed (empty when none did).
pub(super) fn failures_text(failed: &[&Ran<'_>]) -> String {
    if failed.is_empty() {
        return String::new();
    }
    let mut text = String::from("These checks must pass before your work can merge, and they failed:\n");
    for ran in failed {
        let how = match (ran.run.outcome, ran.run.exit_code) {
            (HookOutcome::Timeout, _) => format!("stopped after {}", format_duration(ran.check.timeout.0)),
            (_, Some(code)) => format!("exit code {code}"),
            (outcome, None) => outcome.as_str().to_owned(),
        };
        text.push_str(&format!("\n### {}: `{}` ({how})\n", ran.check.name, ran.check.cmd));
        if !ran.run.output_tail.is_empty() {
            text.push_str(&format!("```\n{}\n```\n", ran.run.output_tail.replace("```", "'''")));
        }
    }
    text.push_str("\nFix what they report, commit your work, and signal completion again.");
    text
}

/// The iterations ran out with `failed` still failing since the agent last signalled completion.
pub(super) fn exhausted(failed: &[String], max_iterations: u32) -> Error {
    let names: Vec<String> = failed.iter().map(|name| format!("`{name}`")).collect();
    Error::new(
        ErrorKind::ChecksFailed,
        format!("the checks {} still failed after {max_iterations} iteration(s); nothing was merged", names.join(", ")),
    )
    .with_hint("see the failures with `eden sessions show last`, or raise `loop.max_iterations`")
}
