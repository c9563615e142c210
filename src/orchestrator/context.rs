//! What the steps of a run work with: what they share (`Shared`), what they report to and are
//! stopped by (`Live`), and what the run has done so far (`Progress`).

use super::journal::Journal;
use super::workspace::Workspace;
use crate::agent::Usage;
use crate::git::Commit;
use crate::hooks::HookRunner;
use crate::manifest::plan::Plan;
use crate::process::{Abort, Stopping};
use crate::record::{HookRecord, IterationRecord};
use crate::report::RunEvents;
use crate::sandbox::SandboxHandle;
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use tokio::sync::watch;

/// What every step of a run shares.
pub(crate) struct Shared<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) stopping: Stopping,
    pub(crate) workspace: &'a Workspace,
    pub(crate) sandbox: &'a dyn SandboxHandle,
    pub(crate) hooks: &'a HookRunner<'a>,
    pub(crate) run_id: &'a str,
    /// The run record, written after every iteration.
    pub(crate) journal: &'a Journal,
    /// When the run began: its `[budget] max_duration` counts from here.
    pub(crate) started: std::time::Instant,
    /// The proxies that hold the agents' keys, if any.
    pub(crate) holder: Option<&'a crate::proxy::held::Holder>,
    /// `eden steer`'s requests (`process::listen_for_steering`).
    pub(crate) steer: tokio::sync::watch::Receiver<u64>,
    /// The run's traces are exported: the agent gets `TRACEPARENT`.
    pub(crate) traced: bool,
    /// `--timings`: the steps to the agent's first byte are said once it is known.
    pub(crate) timings: bool,
}

/// What the loop works with as it goes: events out, the abort channel in, and its progress.
pub(crate) struct Live<'r> {
    pub(crate) events: &'r mut RunEvents,
    pub(crate) abort: &'r mut watch::Receiver<Option<Abort>>,
    pub(crate) progress: &'r mut Progress,
}

/// What the run has done so far, across steps: the records not yet handed to the journal, and
/// what the next iteration must know (commits already reported, session running totals).
#[derive(Default)]
pub(crate) struct Progress {
    /// Iterations and hooks not yet handed to the run record (`Journal`), oldest first.
    pub(crate) iterations: Vec<IterationRecord>,
    pub(crate) hooks: Vec<HookRecord>,
    /// The steps to the agent's first byte, as they happen (`time`).
    pub(crate) timings: Vec<crate::record::TimingRecord>,
    /// Every commit of the run so far, oldest first (`None` until an iteration collected them).
    pub(crate) commits: Option<Vec<Commit>>,
    pub(super) seen_commits: HashSet<String>,
    pub(super) session_totals: HashMap<String, Usage>,
    /// What the run, and the current step, spent in the invocations that ended.
    pub(super) spent: Usage,
    pub(super) step_spent: Usage,
    /// The usage limits waited out so far: how many, and how long in all.
    pub(super) limit_waits: u32,
    pub(super) limit_waited: Duration,
    /// Files the checks wrote in the workspace (untracked before, there after): the checks'
    /// own, never the agent's leftovers; set aside before the work comes home.
    pub(crate) check_outputs: std::collections::BTreeSet<String>,
}

/// How a step ended when it did not fail.
pub(crate) struct StepEnd {
    pub(crate) completion_signal: Option<String>,
    pub(crate) output: Option<serde_json::Value>,
}

impl Progress {
    /// A step on the way to the agent's first byte took `took`, ending at `ended`. Each step
    /// once: the first time it is timed.
    pub(crate) fn time(&mut self, step: &str, took: std::time::Duration, ended: std::time::Instant) {
        if self.timings.iter().any(|timing| timing.step == step) {
            return;
        }
        let at = crate::trace::since_process_start().saturating_sub(ended.elapsed());
        self.timings.push(crate::record::TimingRecord {
            step: step.to_owned(),
            ms: took.as_millis() as u64,
            at_ms: at.as_millis() as u64,
        });
    }
}

/// The timings as one line: each step, how long it took, and when the first byte came.
pub(crate) fn timings_line(timings: &[crate::record::TimingRecord]) -> String {
    let steps: Vec<String> = timings.iter().map(|timing| format!("{} {} ms", timing.step, timing.ms)).collect();
    let first = timings.iter().find(|timing| timing.step == "first byte");
    let at = first
        .map(|timing| format!("; the agent's first byte {} ms after `eden run`", timing.at_ms))
        .unwrap_or_default();
    format!("timings: {}{at}", steps.join(" · "))
}
