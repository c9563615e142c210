//! The run record, `.eden/runs/<id>.json`: what happened, for scripts and for people later. It
//! is written when the run starts (`status = "running"`, with eden's pid and start time), again
//! as the run goes (each phase, each iteration), and finally when it ends. A `running` record
//! whose process is gone belongs to an eden that was killed: an abandoned run.
//!
//! Records read back (`Deserialize`): `eden clean` and the run history load them. Statuses and
//! outcomes are enums, never strings compared by readers; `version` says which shape this is.

use crate::agent::{AgentKind, FailureKind, Usage};
use crate::error::{Error, ErrorKind};
use crate::git::Commit;
use crate::manifest::hooks_plan::{Phase as HookPhase, Side};
use crate::process::contain::Containment;
use crate::process::ProcessStamp;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How much of each iteration's prompt the record keeps: agents may get megabytes of context.
pub(crate) const PROMPT_KEPT: usize = 4096;

/// A prompt as the record keeps it: whole up to `PROMPT_KEPT` bytes, else cut, saying so.
pub(crate) fn kept_prompt(prompt: &str) -> String {
    if prompt.len() <= PROMPT_KEPT {
        return prompt.to_owned();
    }
    let mut cut = PROMPT_KEPT;
    while !prompt.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} more bytes; the run's log has the whole prompt)", &prompt[..cut], prompt.len() - cut)
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// The shape of the records this eden writes; bumped when a field changes meaning.
pub(crate) const RECORD_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunStatus {
    Running,
    Finished,
    /// Written by `eden clean` for a `running` record whose eden process is gone.
    Abandoned,
}

impl RunStatus {
    /// What a record says, corrected for runs whose eden died: `running` with a dead process
    /// is `abandoned`.
    pub(crate) fn observed(self, process: &ProcessStamp) -> RunStatus {
        match self {
            RunStatus::Running if !process.is_alive() => RunStatus::Abandoned,
            status => status,
        }
    }
}

/// Where a run is (or was when it ended or died).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunPhase {
    /// Checked, record written, worktree not made yet.
    Starting,
    /// Worktree made: copies and `on_worktree_ready` hooks.
    Workspace,
    /// Booting the sandbox and `on_sandbox_ready` hooks.
    Sandbox,
    Iterating,
    /// `on_close` hooks and the sandbox's removal.
    Closing,
    /// The merge (or keeping the branch) and cleaning up.
    Finishing,
    Done,
}

/// Why a run ended: how it succeeded, or the kind of its error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ExitReason {
    /// The completion signal was seen.
    Completed,
    /// A structured output was delivered.
    Output,
    /// `max_iterations` ran without the signal, and completion is not required.
    MaxIterations,
    /// An interactive session the person ended (the agent exited 0).
    SessionEnded,
    Incomplete,
    /// Finished, with work the agent left uncommitted (kept in the worktree).
    UncommittedWork,
    Usage,
    AgentFailed,
    Timeout,
    HookFailed,
    SandboxError,
    ForgeError,
    GitError,
    Interrupted,
    Internal,
    /// A `[budget]` cap was crossed.
    BudgetExceeded,
    /// `[[check]]`s still failed when the iterations ran out.
    ChecksFailed,
    /// The run changed files that steer eden (or `branch.protect` names): not merged.
    Protected,
}

impl ExitReason {
    pub(crate) fn of(kind: &ErrorKind) -> ExitReason {
        match kind {
            ErrorKind::Incomplete => ExitReason::Incomplete,
            ErrorKind::Uncommitted => ExitReason::UncommittedWork,
            ErrorKind::Usage => ExitReason::Usage,
            ErrorKind::Agent | ErrorKind::Exited { .. } => ExitReason::AgentFailed,
            ErrorKind::Timeout => ExitReason::Timeout,
            ErrorKind::Hook => ExitReason::HookFailed,
            ErrorKind::Sandbox => ExitReason::SandboxError,
            ErrorKind::Forge => ExitReason::ForgeError,
            ErrorKind::Git | ErrorKind::MergeConflict { .. } => ExitReason::GitError,
            ErrorKind::Interrupted { .. } => ExitReason::Interrupted,
            ErrorKind::Internal => ExitReason::Internal,
            ErrorKind::Budget { .. } => ExitReason::BudgetExceeded,
            ErrorKind::ChecksFailed => ExitReason::ChecksFailed,
            ErrorKind::Protected { .. } => ExitReason::Protected,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ExitReason::Completed => "completed",
            ExitReason::Output => "output",
            ExitReason::MaxIterations => "max_iterations",
            ExitReason::SessionEnded => "session_ended",
            ExitReason::Incomplete => "incomplete",
            ExitReason::UncommittedWork => "uncommitted_work",
            ExitReason::Usage => "usage",
            ExitReason::AgentFailed => "agent_failed",
            ExitReason::Timeout => "timeout",
            ExitReason::HookFailed => "hook_failed",
            ExitReason::SandboxError => "sandbox_error",
            ExitReason::ForgeError => "forge_error",
            ExitReason::GitError => "git_error",
            ExitReason::Interrupted => "interrupted",
            ExitReason::Internal => "internal",
            ExitReason::BudgetExceeded => "budget_exceeded",
            ExitReason::ChecksFailed => "checks_failed",
            ExitReason::Protected => "protected",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunRecord {
    /// `RECORD_VERSION` of the eden that wrote it.
    pub(crate) version: u32,
    pub(crate) id: String,
    /// `run` (`eden run`) or `interactive` (`eden interactive`).
    #[serde(default)]
    pub(crate) kind: RunKind,
    pub(crate) status: RunStatus,
    /// The eden process that runs (ran) it, and its version.
    pub(crate) process: ProcessStamp,
    pub(crate) eden_version: String,
    /// How eden keeps the agent's processes from outliving their commands.
    pub(crate) containment: Option<Containment>,
    pub(crate) phase: RunPhase,
    pub(crate) name: String,
    pub(crate) manifest: Option<PathBuf>,
    /// `--set`, `--arg` and the flags that stood in for manifest keys, as given (`key=value`).
    pub(crate) overrides: Vec<String>,
    pub(crate) repo: PathBuf,
    /// `none`, `docker`, `podman` or `isolated`.
    pub(crate) sandbox: crate::manifest::schema::SandboxKind,
    pub(crate) container: Option<ContainerRecord>,
    /// The provider keys eden held outside the sandbox (`sandbox.hold_keys`): never the values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) held_keys: Vec<HeldKeyRecord>,
    /// `[[service]]`: the containers beside the sandbox (never their environment).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) services: Vec<ServiceRecord>,
    /// `--from`: the run this one started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) from: Option<FromRecord>,
    /// `artifacts`: the files kept, in `artifacts_dir`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) artifacts: Vec<ArtifactRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) artifacts_dir: Option<PathBuf>,
    /// `head`, `merge-to-head` or `named`.
    pub(crate) strategy: crate::manifest::schema::Strategy,
    pub(crate) branch: String,
    pub(crate) base_branch: Option<String>,
    pub(crate) base_commit: String,
    pub(crate) worktree: PathBuf,
    /// The JSON-lines log, if one is written.
    pub(crate) log: Option<PathBuf>,
    pub(crate) max_iterations: u32,
    pub(crate) iterations: Vec<IterationRecord>,
    /// Every hook that ran, in order.
    pub(crate) hooks: Vec<HookRecord>,
    /// Every run of a `[[check]]`, in order.
    #[serde(default)]
    pub(crate) checks: Vec<CheckRecord>,
    /// `[branch] push`, once tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) push: Option<PushRecord>,
    /// `[pull_request]`: the pull request the run opened or updated, and its rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pull_request: Option<PullRequestRecord>,
    /// How long each step on the way to the agent's first byte took (`eden run --timings`
    /// prints them): the worktree, the sandbox's claim or start, its environment and seed, the
    /// first exec, the first byte.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) timings: Vec<TimingRecord>,
    /// Each step with its agent: `ok`, `failed` or `skipped`, with its output.
    pub(crate) steps: Vec<StepRecord>,
    /// The structured output (`[output]`; with steps, the last step's that has one).
    pub(crate) output: Option<serde_json::Value>,
    /// The signal that ended the run, if one was seen.
    pub(crate) completion_signal: Option<String>,
    /// Usage summed over the iterations that reported it.
    pub(crate) usage: Option<Usage>,
    /// The last session id the agent reported.
    pub(crate) session_id: Option<String>,
    /// Commits made during the run, oldest first.
    pub(crate) commits: Vec<Commit>,
    pub(crate) merged_into: Option<String>,
    /// How the branch landed: `fast_forward` (the target now points at the branch's tip, which
    /// is `merge_commit`), `merge_commit` (a new commit joins the two), or `up_to_date`.
    pub(crate) merge_kind: Option<MergeKind>,
    /// The commit the target points at after the merge.
    pub(crate) merge_commit: Option<String>,
    /// The target's commit the run's work landed on (its tip just before the merge).
    #[serde(default)]
    pub(crate) merge_onto: Option<String>,
    /// With several runs at once (`eden run A.toml B.toml`): this merge's place in the order of
    /// the invocation's merges into the same target, from 1.
    #[serde(default)]
    pub(crate) merge_queue_position: Option<u32>,
    /// How many commits entered the target with the merge: the run's, and any the target
    /// lacked besides (its tip rewound during the run, say).
    #[serde(default)]
    pub(crate) merged_commits: Option<u32>,
    /// How long the merge waited for the repository lock, in milliseconds: its wait in the
    /// merge queue behind other runs' merges (and worktree changes) in the same repository.
    #[serde(default)]
    pub(crate) merge_wait_ms: Option<u64>,
    /// One of several attempts at the same task (`--attempts`): which, and whether it landed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) attempt: Option<AttemptRecord>,
    /// What was done with the run after it ended (`eden merge`, `eden discard`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) later: Vec<LaterRecord>,
    pub(crate) preserved_branch: Option<String>,
    pub(crate) preserved_worktree: Option<PathBuf>,
    pub(crate) started_at: String,
    /// `None` while the run is going.
    pub(crate) finished_at: Option<String>,
    pub(crate) duration_ms: u64,
    /// `None` while the run is going.
    pub(crate) exit_reason: Option<ExitReason>,
    pub(crate) exit_code: Option<i32>,
    pub(crate) error: Option<ErrorRecord>,
    pub(crate) record_path: PathBuf,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunKind {
    #[default]
    Run,
    Interactive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MergeKind {
    FastForward,
    MergeCommit,
    /// `branch.rebase`: the run's commits replayed onto the target's tip, then fast-forwarded.
    Rebase,
    UpToDate,
}

/// A key the agent got only as a placeholder, and where eden's proxy sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct HeldKeyRecord {
    pub(crate) var: String,
    pub(crate) upstream: String,
}

/// `--from RUN[@N]`: the run this one started from, and the commit its branch started at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct FromRecord {
    pub(crate) run: String,
    /// `@N`: the commit after that run's iteration N (else its branch's tip).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) iteration: Option<u32>,
    pub(crate) commit: String,
    /// The session resumed from it, if the agent could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) session: Option<String>,
}

/// A file kept from the sandbox's workspace (`artifacts`), under `.eden/artifacts/RUN/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ArtifactRecord {
    /// Relative to the workspace (and to the run's artifacts folder).
    pub(crate) path: String,
    pub(crate) bytes: u64,
    pub(crate) sha256: String,
}

/// A `[[service]]` of the run: the name the agent reached it by, and its image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ServiceRecord {
    pub(crate) name: String,
    pub(crate) image: String,
}

/// The run's container.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ContainerRecord {
    pub(crate) engine: SandboxEngine,
    /// The engine's address (`sandbox.host`, or a remote default's as the client resolved it);
    /// absent for an engine on this machine reached by the client's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) host: Option<String>,
    pub(crate) name: String,
    pub(crate) id: String,
    pub(crate) image: String,
    /// The node a pod ran on (`kubernetes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) node: Option<String>,
    /// The NetworkPolicy made for a pod's network rules, where the cluster took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) network_policy: Option<String>,
}

/// Something done with a run after it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct LaterRecord {
    pub(crate) at: String,
    pub(crate) action: LaterAction,
    /// `merged`: the branch it went into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) into: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LaterAction {
    /// By `eden merge`.
    Merged,
    /// By `eden discard`.
    Discarded,
}

impl LaterRecord {
    /// `merged into main by eden merge (2026-…)`.
    pub(crate) fn said(&self) -> String {
        let when = self.at.get(..16).unwrap_or(&self.at).replace('T', " ");
        match (self.action, &self.into) {
            (LaterAction::Merged, Some(into)) => format!("merged into `{into}` later, by `eden merge` ({when})"),
            (LaterAction::Merged, None) => format!("merged later, by `eden merge` ({when})"),
            (LaterAction::Discarded, _) => format!("discarded later, by `eden discard` ({when})"),
        }
    }
}

/// What a run's sandbox ran on, as the record, the events and a guard's arguments name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SandboxEngine {
    #[default]
    Docker,
    Podman,
    Kubernetes,
}

impl SandboxEngine {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            SandboxEngine::Docker => "docker",
            SandboxEngine::Podman => "podman",
            SandboxEngine::Kubernetes => "kubernetes",
        }
    }

    /// What a sandbox on this engine is called: a `pod` or a `container`.
    pub(crate) const fn sandbox_noun(self) -> &'static str {
        match self {
            SandboxEngine::Docker | SandboxEngine::Podman => "container",
            SandboxEngine::Kubernetes => "pod",
        }
    }

    /// The one place an engine's name is read back: `docker`, `podman` or `kubernetes`.
    pub(crate) fn named(name: &str) -> Option<SandboxEngine> {
        [SandboxEngine::Docker, SandboxEngine::Podman, SandboxEngine::Kubernetes]
            .into_iter()
            .find(|engine| engine.as_str() == name)
    }

    /// The container engine (docker or podman), for a container; `None` for a pod.
    pub(crate) fn container_engine(self) -> Option<crate::manifest::plan::Engine> {
        match self {
            SandboxEngine::Docker => Some(crate::manifest::plan::Engine::Docker),
            SandboxEngine::Podman => Some(crate::manifest::plan::Engine::Podman),
            SandboxEngine::Kubernetes => None,
        }
    }
}

impl From<crate::manifest::plan::Engine> for SandboxEngine {
    fn from(engine: crate::manifest::plan::Engine) -> Self {
        match engine {
            crate::manifest::plan::Engine::Docker => SandboxEngine::Docker,
            crate::manifest::plan::Engine::Podman => SandboxEngine::Podman,
        }
    }
}

impl std::fmt::Display for SandboxEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run's place among the attempts of one invocation (`--attempts N`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct AttemptRecord {
    /// From 1.
    pub(crate) number: u32,
    pub(crate) of: u32,
    /// The invocation's id, shared by its attempts.
    pub(crate) group: String,
    /// This attempt's work landed; the others' are kept on their branches.
    pub(crate) chosen: bool,
    /// `attempts_pick = "best"`: what its `attempts_score` printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) score: Option<f64>,
}

impl AttemptRecord {
    /// `NUMBER/OF/GROUP`, as the coordinator hands it to each attempt (`ATTEMPT_ENV`).
    pub(crate) fn parse(text: &str) -> Option<AttemptRecord> {
        let mut parts = text.splitn(3, '/');
        let number: u32 = parts.next()?.parse().ok()?;
        let of: u32 = parts.next()?.parse().ok()?;
        let group = parts.next()?.to_owned();
        let group_ok = !group.is_empty() && group.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        (number >= 1 && number <= of && group_ok).then_some(AttemptRecord {
            number,
            of,
            group,
            chosen: false,
            score: None,
        })
    }

    pub(crate) fn to_env(&self) -> String {
        format!("{}/{}/{}", self.number, self.of, self.group)
    }
}

impl RunRecord {
    /// Did the run fail with its work kept for a person to look at, rather than fail outright:
    /// a protected path changed, a conflict, changes left uncommitted? (`[notify]`'s `kept`,
    /// `eden top`'s `kept`.)
    pub(crate) fn failed_for_review(&self) -> bool {
        matches!(self.exit_reason, Some(ExitReason::Protected | ExitReason::UncommittedWork))
            || self.error.as_ref().is_some_and(|error| !error.conflicts.is_empty())
    }

    /// Write the record where it belongs, atomically (a temporary file renamed over it), with
    /// secrets redacted.
    /// Strategy `head`: the run worked on the checkout's own branch, which it leaves as it is.
    pub(crate) fn worked_in_place(&self) -> bool {
        self.strategy == crate::manifest::schema::Strategy::Head
    }

    pub(crate) fn save(&self) -> std::io::Result<()> {
        save_json(&self.record_path, self)
    }

    /// Each `[[check]]`'s last run (per step and name), in the order they first ran.
    pub(crate) fn last_checks(&self) -> Vec<&CheckRecord> {
        let mut last: Vec<&CheckRecord> = Vec::new();
        for check in &self.checks {
            match last.iter_mut().find(|known| known.name == check.name && known.step == check.step) {
                Some(known) => *known = check,
                None => last.push(check),
            }
        }
        last
    }

    /// Read a record back.
    /// The record at `path`, as data: its id must be one eden makes and name its file, and the
    /// path it is saved to again is where it was read, whatever it says.
    pub(crate) fn load(path: &Path) -> Result<RunRecord, Error> {
        let text =
            fs_err::read_to_string(path).map_err(|err| Error::internal("cannot read a run record").with_source(err))?;
        let mut record: RunRecord = serde_json::from_str(&text).map_err(|err| {
            Error::internal(format!("`{}` is not a run record this eden can read", path.display())).with_source(err)
        })?;
        check_own(path, &record.id)?;
        record.record_path = path.to_path_buf();
        Ok(record)
    }
}

/// Write `value` as pretty JSON to `path` atomically, secrets redacted.
pub(crate) fn save_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    let json = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    let temporary = path.with_extension(format!("json.{}.tmp", std::process::id()));
    // Whole or not at all: a write cut short (a full disk) leaves the previous version.
    let written = fs_err::write(&temporary, crate::redact::apply(&json).as_bytes())
        .and_then(|()| fs_err::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// How one invocation of the agent ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IterationOutcome {
    /// Exited 0 without the signal: the loop goes on.
    Exited,
    /// The completion signal was seen.
    Completed,
    /// The signal was seen, but the agent did not exit in time and was stopped.
    CompletionTimeout,
    Failed,
    IdleTimeout,
    StepTimeout,
    Interrupted,
    /// Its structured output was not usable; it was asked again in the same session.
    OutputInvalid,
    /// A `[budget]` cap was crossed and the agent was stopped.
    BudgetExceeded,
    /// The provider's usage limit: eden waited and went on in the same session.
    UsageLimit,
    /// `eden steer` interrupted it; the next iteration has the new prompt.
    Steered,
}

impl IterationOutcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            IterationOutcome::Exited => "exited",
            IterationOutcome::Completed => "completed",
            IterationOutcome::CompletionTimeout => "completion_timeout",
            IterationOutcome::Failed => "failed",
            IterationOutcome::IdleTimeout => "idle_timeout",
            IterationOutcome::StepTimeout => "step_timeout",
            IterationOutcome::Interrupted => "interrupted",
            IterationOutcome::OutputInvalid => "output_invalid",
            IterationOutcome::BudgetExceeded => "budget_exceeded",
            IterationOutcome::Steered => "steered",
            IterationOutcome::UsageLimit => "usage_limit",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct IterationRecord {
    /// The step it belongs to (`main` without `[[step]]`).
    pub(crate) step: String,
    pub(crate) iteration: u32,
    pub(crate) started_at: String,
    pub(crate) duration_ms: u64,
    pub(crate) outcome: IterationOutcome,
    pub(crate) exit_code: Option<i32>,
    pub(crate) completion_signal: Option<String>,
    pub(crate) commits: Vec<String>,
    /// The prompt as sent, cut at `PROMPT_KEPT` bytes (every prompt is whole in the run's log).
    pub(crate) prompt: String,
    /// The agent's session id, when it reports one.
    pub(crate) session_id: Option<String>,
    /// Token usage (and cost when reported) for this iteration.
    pub(crate) usage: Option<Usage>,
    /// The iteration's tool calls, the latest `TOOL_CALLS_KEPT` (500) of them.
    pub(crate) tool_calls: Vec<ToolCallRecord>,
    /// How many earlier calls are not kept (the run's log has every one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) tool_calls_omitted: u64,
    /// A failure the agent reported on its own output.
    pub(crate) agent_error: Option<AgentFailure>,
    /// The agent's own transcript of the session, as captured after the iteration.
    #[serde(default)]
    pub(crate) transcript: Option<TranscriptRecord>,
    /// Why the transcript could not be captured (where it was looked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) transcript_warning: Option<String>,
    /// The model the agent said it used (Claude's stream names it), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<String>,
}

/// A captured transcript: the copy under `.eden/sessions/<run-id>/`, where it came from.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct TranscriptRecord {
    pub(crate) path: PathBuf,
    /// The agent's own file, or the command that exported it.
    pub(crate) source: String,
    pub(crate) bytes: u64,
    /// Transcripts of the subagents it started (Claude Code).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) subagents: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StepStatus {
    Ok,
    Failed,
    Skipped,
}

impl StepStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StepStatus::Ok => "ok",
            StepStatus::Failed => "failed",
            StepStatus::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct StepRecord {
    pub(crate) name: String,
    pub(crate) agent: AgentKind,
    /// The executable run (none for `simulated`) and the model asked for.
    pub(crate) binary: Option<PathBuf>,
    pub(crate) model: Option<String>,
    pub(crate) status: StepStatus,
    pub(crate) exit_code: Option<i32>,
    pub(crate) error: Option<String>,
    /// Why it was skipped (`when`).
    pub(crate) reason: Option<String>,
    pub(crate) output: Option<serde_json::Value>,
    pub(crate) completion_signal: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HookOutcome {
    Ok,
    Failed,
    Timeout,
    Interrupted,
}

impl HookOutcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HookOutcome::Ok => "ok",
            HookOutcome::Failed => "failed",
            HookOutcome::Timeout => "timeout",
            HookOutcome::Interrupted => "interrupted",
        }
    }
}

/// One hook that ran, in the order they ran.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct HookRecord {
    pub(crate) phase: HookPhase,
    pub(crate) side: Side,
    pub(crate) command: String,
    pub(crate) iteration: Option<u32>,
    pub(crate) outcome: HookOutcome,
    pub(crate) exit_code: Option<i32>,
    pub(crate) duration_ms: u64,
}

/// `[branch] push`: what was pushed where, and whether it went.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct PushRecord {
    pub(crate) remote: String,
    pub(crate) branch: String,
    pub(crate) commit: String,
    pub(crate) pushed: bool,
    /// `push_base`: the target the run merged into, and whether it went too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) base: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) base_pushed: Option<bool>,
    /// What git said when a push failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// The pull request a run opened (or updated), as eden last saw it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub(crate) struct PullRequestRecord {
    pub(crate) forge: String,
    pub(crate) repository: String,
    pub(crate) number: u64,
    pub(crate) url: String,
    pub(crate) base: String,
    pub(crate) head: String,
    /// The head commit eden pushed last.
    pub(crate) head_sha: String,
    /// `opened` by this run, or `updated` (it was open already: the push added to it).
    pub(crate) action: String,
    /// Where following it stands: `open`, `green`, `merged`, `gave_up`.
    #[serde(default = "open_state")]
    pub(crate) state: String,
    /// The rounds of feedback the agent answered, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) rounds: Vec<RoundRecord>,
}

fn open_state() -> String {
    "open".to_owned()
}

/// One round of a pull request: what started it, on which head, and the run that answered.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub(crate) struct RoundRecord {
    /// The head commit and the failures it answered (a round is never started twice for one).
    pub(crate) key: String,
    /// What started it, for people (`check \`test\` failed`, `@alice requested changes`).
    pub(crate) trigger: Vec<String>,
    pub(crate) head: String,
    /// The run that answered it, and the head it pushed (none when it pushed nothing).
    pub(crate) run: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pushed: Option<String>,
}

/// One run of a `[[check]]`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct CheckRecord {
    pub(crate) step: String,
    pub(crate) name: String,
    pub(crate) command: String,
    pub(crate) iteration: u32,
    /// `ok`, `failed`, `timeout` or `interrupted`.
    pub(crate) outcome: HookOutcome,
    pub(crate) exit_code: Option<i32>,
    pub(crate) duration_ms: u64,
    /// The end of what it printed (stdout, then stderr), for one that did not pass.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) output_tail: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ToolCallRecord {
    pub(crate) name: String,
    pub(crate) summary: String,
    /// `None` until (unless) the agent reports the result.
    pub(crate) ok: Option<bool>,
    pub(crate) subagent: bool,
    /// Why it failed, as the agent reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct AgentFailure {
    pub(crate) message: String,
    pub(crate) kind: FailureKind,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ErrorRecord {
    pub(crate) kind: ExitReason,
    /// For agent failures the agent reported itself: `authentication`, `rate_limit`, `other`.
    pub(crate) agent_failure: Option<FailureKind>,
    /// The files of a merge conflict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) conflicts: Vec<String>,
    /// The `[budget]` cap that stopped the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) budget: Option<crate::error::BudgetExceeded>,
    pub(crate) message: String,
    pub(crate) hint: Option<String>,
}

/// One step on the way to the agent's first byte.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct TimingRecord {
    /// `worktree`, `sandbox`, `claim` or `start`, `environment`, `seed`, `rules`, `first exec`,
    /// `first byte`.
    pub(crate) step: String,
    /// How long it took, in milliseconds.
    pub(crate) ms: u64,
    /// When it ended, in milliseconds after eden started.
    pub(crate) at_ms: u64,
}

pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// Is `id` one `new_run_id` makes? Nothing else is ever made into a path.
pub(crate) fn is_run_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    bytes.len() == 22
        && bytes.iter().enumerate().all(|(at, byte)| match at {
            8 | 15 => *byte == b'-',
            0..=14 => byte.is_ascii_digit(),
            _ => byte.is_ascii_digit() || (b'a'..=b'f').contains(byte),
        })
}

/// A record read at `path` is eden's only if its id is one eden makes and names its file: a
/// record copied in or edited never makes eden build a path of its choosing.
pub(crate) fn check_own(path: &Path, id: &str) -> Result<(), Error> {
    let stem = path.file_stem().and_then(|stem| stem.to_str()).unwrap_or_default();
    if is_run_id(id) && stem == id {
        return Ok(());
    }
    Err(Error::internal(format!(
        "`{}` is not a run record eden wrote (its id `{}` is not eden's, or not its file's name); skipped",
        path.display(),
        id.chars().take(40).collect::<String>().escape_debug()
    )))
}

/// `20261122-200523-a1b2c3`: sortable, unique enough for branch names and file names.
pub(crate) fn new_run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let digits: String = stamp.chars().filter(char::is_ascii_digit).collect();
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher
        .write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    format!("{}-{}-{:06x}", &digits[..8], &digits[8..14], hasher.finish() & 0xff_ffff)
}

/// The JSON Schema of a run record (`.eden/runs/<id>.json`, `--json`), for the book's reference.
pub fn record_json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(RunRecord)).expect("a schema is JSON")
}
