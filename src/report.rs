//! What a run tells the world, as it happens: the `Event`s the core emits and the `Reporter`
//! trait that receives them. The core owns both; the implementations (the live terminal view,
//! plain lines, JSON events, the log file) live at the edge, in `ui`, and `commands` hands them
//! in. Every event is delivered with its run's id, so the reports of several runs at once can
//! be told apart.

use crate::agent::{AgentKind, FailureKind, Usage};
use crate::manifest::hooks_plan::{Phase as HookPhase, Side};
use crate::record::{HookOutcome, IterationOutcome, RunRecord, StepStatus};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event<'a> {
    RunStarted {
        /// `run` or `interactive`.
        kind: crate::record::RunKind,
        name: &'a str,
        agent: AgentKind,
        strategy: &'a str,
        branch: &'a str,
        base: Option<&'a str>,
        worktree: &'a Path,
        max_iterations: u32,
    },
    Info {
        message: &'a str,
    },
    Warning {
        message: &'a str,
    },
    IterationStarted {
        iteration: u32,
        max_iterations: u32,
    },
    Prompt {
        iteration: u32,
        text: &'a str,
    },
    AgentText {
        iteration: u32,
        text: &'a str,
    },
    AgentStderr {
        iteration: u32,
        text: &'a str,
    },
    IdleWarning {
        iteration: u32,
        silent_secs: u64,
    },
    ToolCall {
        iteration: u32,
        name: &'a str,
        summary: &'a str,
        subagent: bool,
    },
    ToolFailed {
        iteration: u32,
        name: Option<&'a str>,
        /// Why, as the agent reported it (the output's first lines).
        reason: Option<&'a str>,
    },
    /// The iteration's usage so far.
    Usage {
        iteration: u32,
        usage: &'a Usage,
    },
    SessionId {
        iteration: u32,
        session_id: &'a str,
    },
    /// The agent's transcript of the iteration's session was copied to `path`.
    Transcript {
        iteration: u32,
        path: &'a std::path::Path,
        bytes: u64,
    },
    AgentError {
        iteration: u32,
        message: &'a str,
        kind: FailureKind,
    },
    Notice {
        iteration: u32,
        message: &'a str,
    },
    CompletionSignal {
        iteration: u32,
        signal: &'a str,
    },
    Commit {
        iteration: u32,
        sha: &'a str,
        subject: &'a str,
    },
    /// The agent hit the provider's usage limit: eden waits `wait_secs` (until `until`), then
    /// goes on in the same session.
    UsageLimit {
        iteration: u32,
        message: &'a str,
        wait_secs: u64,
        until: &'a str,
    },
    IterationFinished {
        iteration: u32,
        outcome: IterationOutcome,
        exit_code: Option<i32>,
        duration_ms: u64,
    },
    /// The structured output, once it is valid.
    Output {
        iteration: u32,
        value: &'a serde_json::Value,
    },
    StepStarted {
        step: &'a str,
        index: usize,
        total: usize,
        agent: AgentKind,
    },
    StepFinished {
        step: &'a str,
        status: StepStatus,
        reason: Option<&'a str>,
    },
    HookStarted {
        phase: HookPhase,
        side: Side,
        command: &'a str,
        iteration: Option<u32>,
    },
    HookOutput {
        text: &'a str,
        stderr: bool,
    },
    HookFinished {
        phase: HookPhase,
        side: Side,
        command: &'a str,
        outcome: HookOutcome,
        exit_code: Option<i32>,
        duration_ms: u64,
    },
    /// The run's branch landed on its target: how, and what it brought (`message` says the
    /// same for people).
    Merged {
        target: &'a str,
        branch: &'a str,
        /// The commits that entered the target (the run's, and any the target lacked besides).
        commits: u32,
        kind: crate::record::MergeKind,
        /// The commit the target points at now, and the one it pointed at before.
        merge_commit: Option<&'a str>,
        onto: Option<&'a str>,
        /// With several runs at once: this merge's place among the invocation's.
        queue_position: Option<u32>,
        message: &'a str,
    },
    RunFinished {
        record: &'a RunRecord,
    },
}

/// Receives every event of a run. Implemented at the edge (`ui`).
pub trait Reporter {
    fn report(&mut self, run_id: &str, event: &Event<'_>);
}

/// What the core reports through: every event of one run, stamped with its id and handed to
/// each reporter (display, `--json-events`, log file).
pub struct RunEvents {
    run_id: String,
    reporters: Vec<Box<dyn Reporter>>,
}

impl RunEvents {
    pub fn new(run_id: &str, reporters: Vec<Box<dyn Reporter>>) -> Self {
        RunEvents { run_id: run_id.to_owned(), reporters }
    }

    pub fn add(&mut self, reporter: Box<dyn Reporter>) {
        self.reporters.push(reporter);
    }

    pub fn report(&mut self, event: &Event<'_>) {
        for reporter in &mut self.reporters {
            reporter.report(&self.run_id, event);
        }
    }
}
