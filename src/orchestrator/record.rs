//! The run record, `.eden/runs/<id>.json`: what happened, for scripts and for people later.

use crate::agent::{FailureKind, Usage};
use crate::git::Commit;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    pub id: String,
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
    pub finished_at: String,
    pub duration_ms: u64,
    /// `completed`, `max_iterations`, or the error kind (`agent_failed`, `timeout`, ...).
    pub exit_reason: String,
    pub exit_code: i32,
    pub error: Option<ErrorRecord>,
    pub record_path: PathBuf,
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
