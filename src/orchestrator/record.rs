//! The run record, `.eden/runs/<id>.json`: what happened, for scripts and for people later.
//! It is written when the run starts (`status = "running"`, with eden's pid and start time),
//! again as the run goes (each phase, each iteration), and finally when it ends. A `running`
//! record whose process is gone belongs to an eden that was killed: an abandoned run.

use crate::agent::{FailureKind, Usage};
use crate::git::Commit;
use crate::process::ProcessStamp;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Finished,
    /// Written by `eden clean` for a `running` record whose eden process is gone.
    Abandoned,
}

impl RunStatus {
    /// What a record says, corrected for runs whose eden died: `running` with a dead process
    /// is `abandoned`.
    pub fn observed(self, process: &ProcessStamp) -> RunStatus {
        match self {
            RunStatus::Running if !process.is_alive() => RunStatus::Abandoned,
            status => status,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    pub id: String,
    /// `running`, `finished` or `abandoned`.
    pub status: RunStatus,
    /// The eden process that runs (ran) it.
    pub process: ProcessStamp,
    /// How eden keeps the agent's processes from outliving their commands: `pid-namespace` or
    /// `subreaper` (see `process::contain`).
    pub containment: Option<crate::process::contain::Containment>,
    /// Where the run is (or was when it ended or died): `starting`, `workspace`, `sandbox`,
    /// `iteration`, `finishing`, `done`.
    pub phase: &'static str,
    pub name: String,
    pub manifest: Option<PathBuf>,
    pub repo: PathBuf,
    pub agent: String,
    /// `none`, `docker` or `podman`; the container's name when there was one.
    pub sandbox: String,
    pub container: Option<String>,
    pub strategy: String,
    pub branch: String,
    pub base_branch: Option<String>,
    pub base_commit: String,
    pub worktree: PathBuf,
    pub max_iterations: u32,
    pub iterations: Vec<IterationRecord>,
    /// Every hook that ran, in order.
    pub hooks: Vec<HookRecord>,
    /// Each step: `ok`, `failed` or `skipped`, with its output.
    pub steps: Vec<StepRecord>,
    /// The structured output (`[output]`; with steps, the last step's that has one).
    pub output: Option<serde_json::Value>,
    /// The signal that ended the run, if one was seen.
    pub completion_signal: Option<String>,
    /// Usage summed over the iterations that reported it.
    pub usage: Option<Usage>,
    /// The last session id the agent reported.
    pub session_id: Option<String>,
    /// Commits made during the run, oldest first.
    pub commits: Vec<Commit>,
    pub merged_into: Option<String>,
    pub merge_commit: Option<String>,
    pub preserved_branch: Option<String>,
    pub preserved_worktree: Option<PathBuf>,
    pub started_at: String,
    /// `None` while the run is going.
    pub finished_at: Option<String>,
    pub duration_ms: u64,
    /// `completed`, `max_iterations`, or the error kind (`agent_failed`, `timeout`, ...); `None`
    /// while the run is going.
    pub exit_reason: Option<String>,
    pub exit_code: Option<i32>,
    pub error: Option<ErrorRecord>,
    pub record_path: PathBuf,
}

impl RunRecord {
    /// The record of a run about to start: `running`, owned by this eden process.
    pub(crate) fn starting(
        run_id: &str,
        plan: &crate::manifest::plan::Plan,
        pre: &super::workspace::Preflight,
        agent: String,
        record_path: PathBuf,
    ) -> RunRecord {
        RunRecord {
            id: run_id.to_owned(),
            status: RunStatus::Running,
            process: ProcessStamp::current(),
            containment: crate::process::contain::current(),
            phase: "starting",
            name: plan.name.clone(),
            manifest: plan.manifest.clone(),
            repo: pre.root.clone(),
            agent,
            sandbox: plan.sandbox.kind().to_owned(),
            container: None,
            strategy: pre.strategy.as_str().to_owned(),
            branch: pre.branch.clone(),
            base_branch: pre.base_branch.clone(),
            base_commit: pre.base_commit.clone(),
            worktree: pre.worktree.clone(),
            max_iterations: plan.steps[0].loop_.max_iterations,
            iterations: Vec::new(),
            hooks: Vec::new(),
            steps: Vec::new(),
            output: None,
            completion_signal: None,
            usage: None,
            session_id: None,
            commits: Vec::new(),
            merged_into: None,
            merge_commit: None,
            preserved_branch: None,
            preserved_worktree: None,
            started_at: now_rfc3339(),
            finished_at: None,
            duration_ms: 0,
            exit_reason: None,
            exit_code: None,
            error: None,
            record_path,
        }
    }

    /// Write the record where it belongs, atomically (a temporary file renamed over it), with
    /// secrets redacted.
    pub fn save(&self) -> std::io::Result<()> {
        save_json(&self.record_path, self)
    }
}

/// Write `value` as pretty JSON to `path` atomically, secrets redacted.
pub fn save_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    let json = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    let temporary = path.with_extension(format!("json.{}.tmp", std::process::id()));
    fs_err::write(&temporary, crate::redact::apply(&json).as_bytes())?;
    fs_err::rename(&temporary, path)
}

#[derive(Debug, Clone, Serialize)]
pub struct IterationRecord {
    /// The step it belongs to (`main` without `[[step]]`).
    pub step: String,
    pub iteration: u32,
    pub started_at: String,
    pub duration_ms: u64,
    /// `exited`, `completed`, `completion_timeout`, `failed`, `idle_timeout`, `step_timeout`,
    /// `interrupted`.
    pub outcome: String,
    pub exit_code: Option<i32>,
    pub completion_signal: Option<String>,
    pub commits: Vec<String>,
    pub prompt: String,
    /// The agent's session id, when it reports one.
    pub session_id: Option<String>,
    /// Token usage (and cost when reported) for this iteration.
    pub usage: Option<Usage>,
    pub tool_calls: Vec<ToolCallRecord>,
    /// A failure the agent reported on its own output.
    pub agent_error: Option<AgentFailure>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepRecord {
    pub name: String,
    pub agent: String,
    /// `ok`, `failed`, `skipped`.
    pub status: &'static str,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    /// Why it was skipped (`when`).
    pub reason: Option<String>,
    pub output: Option<serde_json::Value>,
    pub completion_signal: Option<String>,
}

/// One hook that ran, in the order they ran.
#[derive(Debug, Clone, Serialize)]
pub struct HookRecord {
    pub phase: &'static str,
    pub side: &'static str,
    pub command: String,
    pub iteration: Option<u32>,
    /// `ok`, `failed`, `timeout`, `interrupted`.
    pub outcome: &'static str,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolCallRecord {
    pub name: String,
    pub summary: String,
    /// `None` until (unless) the agent reports the result.
    pub ok: Option<bool>,
    pub subagent: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct AgentFailure {
    pub message: String,
    pub kind: FailureKind,
}

#[derive(Debug, Clone, Serialize)]
pub struct ErrorRecord {
    pub kind: String,
    /// For agent failures the agent reported itself: `authentication`, `rate_limit`, `other`.
    pub agent_failure: Option<FailureKind>,
    pub message: String,
    pub hint: Option<String>,
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// `20261122-200523-a1b2c3`: sortable, unique enough for branch names and file names.
pub fn new_run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let digits: String = stamp.chars().filter(char::is_ascii_digit).collect();
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher
        .write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    format!("{}-{}-{:06x}", &digits[..8], &digits[8..14], hasher.finish() & 0xff_ffff)
}

/// The record while the run goes: kept in memory, written out at the start, at every phase and
/// after every iteration, so a run whose eden dies is still on disk, as far as it got.
pub(crate) struct Journal {
    record: std::cell::RefCell<RunRecord>,
    clock: std::time::Instant,
}

impl Journal {
    /// A `running` record, not yet written.
    pub fn new(record: RunRecord) -> Self {
        Journal { record: std::cell::RefCell::new(record), clock: std::time::Instant::now() }
    }

    /// Change the record and write it.
    pub fn update(&self, change: impl FnOnce(&mut RunRecord)) -> std::io::Result<()> {
        let mut record = self.record.borrow_mut();
        change(&mut record);
        record.duration_ms = self.clock.elapsed().as_millis() as u64;
        record.save()
    }

    /// Enter a phase (written, so a crash shows where the run was).
    pub fn phase(&self, phase: &'static str) {
        let _ = self.update(|record| record.phase = phase);
    }

    /// The final record: how it ended, written. The error is the run's, if it failed.
    pub fn finish(
        self,
        error: Option<&crate::error::Error>,
        change: impl FnOnce(&mut RunRecord),
    ) -> (RunRecord, std::io::Result<()>) {
        let written = self.update(|record| {
            change(record);
            record.status = RunStatus::Finished;
            record.finished_at = Some(now_rfc3339());
            record.exit_code = Some(error.map_or(0, |e| e.kind.exit_code()));
            record.exit_reason = Some(match error {
                Some(error) => error.kind.as_str().to_owned(),
                None if record.completion_signal.is_some() => "completed".to_owned(),
                None if record.output.is_some() => "output".to_owned(),
                None => "max_iterations".to_owned(),
            });
            let agent_failure = record.iterations.last().and_then(|i| i.agent_error.as_ref()).map(|f| f.kind);
            record.error = error.map(|e| ErrorRecord {
                kind: e.kind.as_str().to_owned(),
                agent_failure: if e.kind == crate::error::ErrorKind::Agent { agent_failure } else { None },
                message: e.message.clone(),
                hint: e.hint.clone(),
            });
        });
        (self.record.into_inner(), written)
    }
}
