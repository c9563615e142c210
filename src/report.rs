//! What a run tells the world, as it happens: the `Event`s the core emits and the `Reporter`
//! trait that receives them. The core owns both; the implementations (the live terminal view,
//! plain lines, JSON events, the log file) live at the edge, in `ui`, and `commands` hands them
//! in. Every event is delivered with its run's id, so the reports of several runs at once can
//! be told apart.

use crate::agent::{AgentKind, FailureKind, Usage};
use crate::manifest::hooks_plan::{Phase as HookPhase, Side};
use crate::record::{HookOutcome, IterationOutcome, RunRecord, StepStatus};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::Path;

/// Written as a JSON object with its kind under `event` (`--json-events`, the log file) and
/// read back from there (`eden sessions show`, the several-runs coordinator). Strings are
/// borrowed while a run reports and owned when read back.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
// A run's one `RunFinished` carries its record; events are reported one at a time, so the
// size of the largest variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Event<'a> {
    RunStarted {
        /// `run` or `interactive`.
        kind: crate::record::RunKind,
        name: Cow<'a, str>,
        agent: AgentKind,
        strategy: Cow<'a, str>,
        branch: Cow<'a, str>,
        base: Option<Cow<'a, str>>,
        worktree: Cow<'a, Path>,
        max_iterations: u32,
    },
    Info {
        message: Cow<'a, str>,
    },
    /// A request the agent made through eden's key-holding proxy (never its headers or body).
    ProviderRequest {
        iteration: u32,
        at: Cow<'a, str>,
        method: Cow<'a, str>,
        host: Cow<'a, str>,
        path: Cow<'a, str>,
        /// The provider's status, or eden's own (403 refused, 502 unreachable).
        status: Option<u16>,
        bytes_up: u64,
        bytes_down: u64,
        duration_ms: u64,
        /// Why eden refused it or it failed.
        refused: Option<Cow<'a, str>>,
        /// Still in flight when the agent was stopped: no status yet, `duration_ms` so far.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        in_flight: bool,
    },
    /// The run's container or pod is up: where it is, for displays that show it.
    SandboxStarted {
        engine: crate::record::SandboxEngine,
        /// The container's or pod's name.
        name: Cow<'a, str>,
        /// The engine it runs on (not this machine's), or the pod's `CONTEXT/NAMESPACE`.
        host: Option<Cow<'a, str>>,
        /// The node a pod was placed on.
        node: Option<Cow<'a, str>>,
        message: Cow<'a, str>,
    },
    Warning {
        message: Cow<'a, str>,
    },
    IterationStarted {
        iteration: u32,
        max_iterations: u32,
    },
    Prompt {
        iteration: u32,
        text: Cow<'a, str>,
    },
    AgentText {
        iteration: u32,
        text: Cow<'a, str>,
    },
    AgentStderr {
        iteration: u32,
        text: Cow<'a, str>,
    },
    IdleWarning {
        iteration: u32,
        silent_secs: u64,
    },
    ToolCall {
        iteration: u32,
        name: Cow<'a, str>,
        summary: Cow<'a, str>,
        subagent: bool,
    },
    ToolFailed {
        iteration: u32,
        name: Option<Cow<'a, str>>,
        /// Why, as the agent reported it (the output's first lines).
        reason: Option<Cow<'a, str>>,
    },
    /// The iteration's usage so far.
    Usage {
        iteration: u32,
        usage: Usage,
    },
    SessionId {
        iteration: u32,
        session_id: Cow<'a, str>,
    },
    /// The agent's transcript of the iteration's session was copied to `path`.
    Transcript {
        iteration: u32,
        path: Cow<'a, Path>,
        bytes: u64,
    },
    AgentError {
        iteration: u32,
        message: Cow<'a, str>,
        kind: FailureKind,
    },
    Notice {
        iteration: u32,
        message: Cow<'a, str>,
    },
    CompletionSignal {
        iteration: u32,
        signal: Cow<'a, str>,
    },
    Commit {
        iteration: u32,
        sha: Cow<'a, str>,
        subject: Cow<'a, str>,
    },
    /// The agent hit the provider's usage limit: eden waits `wait_secs` (until `until`), then
    /// goes on in the same session.
    UsageLimit {
        iteration: u32,
        message: Cow<'a, str>,
        wait_secs: u64,
        until: Cow<'a, str>,
    },
    IterationFinished {
        iteration: u32,
        outcome: IterationOutcome,
        exit_code: Option<i32>,
        duration_ms: u64,
    },
    /// What the iteration did came back from the sandbox (its commits fetched and checked).
    WorkBack {
        iteration: u32,
        duration_ms: u64,
    },
    /// `[branch] push`, tried once the run's work landed or was kept.
    Pushed {
        remote: Cow<'a, str>,
        branch: Cow<'a, str>,
        pushed: bool,
        duration_ms: u64,
    },
    /// The structured output, once it is valid.
    Output {
        iteration: u32,
        value: Cow<'a, serde_json::Value>,
    },
    StepStarted {
        step: Cow<'a, str>,
        index: usize,
        total: usize,
        agent: AgentKind,
    },
    StepFinished {
        step: Cow<'a, str>,
        status: StepStatus,
        reason: Option<Cow<'a, str>>,
    },
    HookStarted {
        phase: HookPhase,
        side: Side,
        command: Cow<'a, str>,
        iteration: Option<u32>,
    },
    HookOutput {
        text: Cow<'a, str>,
        stderr: bool,
    },
    HookFinished {
        phase: HookPhase,
        side: Side,
        command: Cow<'a, str>,
        outcome: HookOutcome,
        exit_code: Option<i32>,
        duration_ms: u64,
    },
    /// A `[[check]]` starts (its output comes as `HookOutput`).
    CheckStarted {
        name: Cow<'a, str>,
        command: Cow<'a, str>,
        iteration: u32,
    },
    CheckFinished {
        name: Cow<'a, str>,
        iteration: u32,
        outcome: HookOutcome,
        exit_code: Option<i32>,
        duration_ms: u64,
    },
    /// The run's branch landed on its target: how, and what it brought (`message` says the
    /// same for people).
    Merged {
        target: Cow<'a, str>,
        branch: Cow<'a, str>,
        /// The commits that entered the target (the run's, and any the target lacked besides).
        commits: u32,
        kind: crate::record::MergeKind,
        /// The commit the target points at now, and the one it pointed at before.
        merge_commit: Option<Cow<'a, str>>,
        onto: Option<Cow<'a, str>>,
        /// With several runs at once: this merge's place among the invocation's.
        queue_position: Option<u32>,
        message: Cow<'a, str>,
    },
    RunFinished {
        record: Cow<'a, RunRecord>,
    },
}

impl Event<'_> {
    /// Is this the agent's (or a hook's) stream, many a second, rather than one of the run's
    /// milestones? A display or a log may hold these back a moment, to write them together.
    pub(crate) fn is_stream(&self) -> bool {
        matches!(
            self,
            Event::AgentText { .. }
                | Event::AgentStderr { .. }
                | Event::ToolCall { .. }
                | Event::ToolFailed { .. }
                | Event::HookOutput { .. }
                | Event::Usage { .. }
                | Event::Prompt { .. }
                | Event::Notice { .. }
                | Event::SessionId { .. }
        )
    }
}

/// An event as one line of `--json-events` or a log file: when, which run, then the event's
/// own keys. Written by `ui::log_file`; read back with `Logged::parse`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Logged<'a> {
    pub(crate) ts: Cow<'a, str>,
    pub(crate) run_id: Cow<'a, str>,
    #[serde(flatten)]
    pub(crate) event: Cow<'a, Event<'a>>,
}

impl Logged<'static> {
    /// One line read back; `None` for a line that is not an event (or an event of a kind this
    /// version of eden does not know).
    pub(crate) fn parse(line: &str) -> Option<Logged<'static>> {
        serde_json::from_str(line).ok()
    }
}

/// An error as data, for scripts: what `--json` prints (as `{"error": …}`) when a run fails
/// before it has a record, and what the several-runs coordinator reads back.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ErrorReport {
    pub(crate) kind: crate::record::ExitReason,
    pub(crate) message: String,
    pub(crate) hint: Option<String>,
    pub(crate) exit_code: i32,
    /// Further errors found in the same pass.
    #[serde(default)]
    pub(crate) also: Vec<AlsoReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct AlsoReport {
    pub(crate) message: String,
    pub(crate) hint: Option<String>,
}

impl ErrorReport {
    pub(crate) fn of(error: &crate::error::Error) -> ErrorReport {
        ErrorReport {
            kind: crate::record::ExitReason::of(&error.kind),
            message: error.message.clone(),
            hint: error.hint.clone(),
            exit_code: error.kind.exit_code(),
            also: error
                .also
                .iter()
                .map(|more| AlsoReport { message: more.message.clone(), hint: more.hint.clone() })
                .collect(),
        }
    }
}

/// What a run prints on stdout when it fails before it has a record: `{"error": …}`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Failed {
    pub(crate) error: ErrorReport,
}

/// Receives every event of a run. Implemented at the edge (`ui`).
pub(crate) trait Reporter {
    fn report(&mut self, run_id: &str, event: &Event<'_>);

    /// An event that happened at `at` (RFC 3339, as a log stamps it), told later (`eden
    /// sessions show --follow`): a display that stamps its lines uses that time, not its own.
    fn report_at(&mut self, run_id: &str, event: &Event<'_>, _at: &str) {
        self.report(run_id, event);
    }
}

/// What the core reports through: every event of one run, stamped with its id and handed to
/// each reporter (display, `--json-events`, log file).
pub(crate) struct RunEvents {
    run_id: String,
    reporters: Vec<Box<dyn Reporter>>,
}

impl RunEvents {
    pub(crate) fn new(run_id: &str, reporters: Vec<Box<dyn Reporter>>) -> Self {
        RunEvents { run_id: run_id.to_owned(), reporters }
    }

    pub(crate) fn add(&mut self, reporter: Box<dyn Reporter>) {
        self.reporters.push(reporter);
    }

    pub(crate) fn report(&mut self, event: &Event<'_>) {
        for reporter in &mut self.reporters {
            reporter.report(&self.run_id, event);
        }
    }
}

/// The JSON Schema of the events (`--json-events`, the log's lines), for the book's reference.
pub fn events_json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Event<'static>)).expect("a schema is JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::MergeKind;

    /// Every kind of event (but the record's own, which `tests/it` reads back whole), as a run
    /// would report it.
    fn events() -> Vec<Event<'static>> {
        let usage = Usage {
            input_tokens: 3,
            output_tokens: 4,
            cache_read_tokens: 5,
            cache_write_tokens: 6,
            cost_usd: Some(0.5),
        };
        vec![
            Event::RunStarted {
                kind: crate::record::RunKind::Run,
                name: "fix".into(),
                agent: AgentKind::ClaudeCode,
                strategy: "merge-to-head".into(),
                branch: "eden/fix".into(),
                base: Some("main".into()),
                worktree: Path::new("/tmp/w").into(),
                max_iterations: 3,
            },
            Event::Info { message: "a \"quoted\"\nline".into() },
            Event::ProviderRequest {
                iteration: 1,
                at: "2026-11-24T18:00:00Z".into(),
                method: "POST".into(),
                host: "api.anthropic.com".into(),
                path: "/v1/messages".into(),
                status: Some(200),
                bytes_up: 10,
                bytes_down: 20,
                duration_ms: 30,
                refused: None,
                in_flight: false,
            },
            Event::ProviderRequest {
                iteration: 1,
                at: "2026-11-24T18:00:01Z".into(),
                method: "POST".into(),
                host: "api.anthropic.com".into(),
                path: "/v1/messages".into(),
                status: None,
                bytes_up: 10,
                bytes_down: 0,
                duration_ms: 12_000,
                refused: None,
                in_flight: true,
            },
            Event::SandboxStarted {
                engine: crate::record::SandboxEngine::Kubernetes,
                name: "eden-1".into(),
                host: Some("-/agents".into()),
                node: Some("node-1".into()),
                message: "pod started".into(),
            },
            Event::Warning { message: "careful".into() },
            Event::IterationStarted { iteration: 1, max_iterations: 3 },
            Event::Prompt { iteration: 1, text: "do it".into() },
            Event::AgentText { iteration: 1, text: "done ✓".into() },
            Event::AgentStderr { iteration: 1, text: "oops".into() },
            Event::IdleWarning { iteration: 1, silent_secs: 30 },
            Event::ToolCall { iteration: 1, name: "Bash".into(), summary: "ls".into(), subagent: true },
            Event::ToolFailed { iteration: 1, name: None, reason: Some("exit 1".into()) },
            Event::Usage { iteration: 1, usage },
            Event::SessionId { iteration: 1, session_id: "s-1".into() },
            Event::Transcript { iteration: 1, path: Path::new("/tmp/t.jsonl").into(), bytes: 10 },
            Event::AgentError { iteration: 1, message: "401".into(), kind: FailureKind::Authentication },
            Event::Notice { iteration: 1, message: "retrying".into() },
            Event::CompletionSignal { iteration: 1, signal: "<promise>COMPLETE</promise>".into() },
            Event::Commit { iteration: 1, sha: "abc".into(), subject: "fix".into() },
            Event::UsageLimit { iteration: 1, message: "limit".into(), wait_secs: 60, until: "later".into() },
            Event::IterationFinished {
                iteration: 1,
                outcome: IterationOutcome::Completed,
                exit_code: Some(0),
                duration_ms: 12,
            },
            Event::Output { iteration: 1, value: Cow::Owned(serde_json::json!({"ok": true})) },
            Event::StepStarted { step: "one".into(), index: 0, total: 2, agent: AgentKind::Codex },
            Event::StepFinished { step: "one".into(), status: StepStatus::Ok, reason: None },
            Event::HookStarted { phase: HookPhase::OnClose, side: Side::Host, command: "true".into(), iteration: None },
            Event::HookOutput { text: "out".into(), stderr: false },
            Event::HookFinished {
                phase: HookPhase::OnClose,
                side: Side::Sandbox,
                command: "true".into(),
                outcome: HookOutcome::Ok,
                exit_code: Some(0),
                duration_ms: 1,
            },
            Event::Merged {
                target: "main".into(),
                branch: "eden/fix".into(),
                commits: 1,
                kind: MergeKind::FastForward,
                merge_commit: Some("def".into()),
                onto: None,
                queue_position: Some(2),
                message: "merged".into(),
            },
        ]
    }

    #[test]
    fn every_event_reads_back_as_written() {
        for event in events() {
            let logged = Logged { ts: "now".into(), run_id: "r1".into(), event: Cow::Borrowed(&event) };
            let line = serde_json::to_string(&logged).unwrap();
            let back = Logged::parse(&line).unwrap_or_else(|| panic!("does not read back: {line}"));
            assert_eq!((back.ts.as_ref(), back.run_id.as_ref()), ("now", "r1"));
            assert_eq!(serde_json::to_string(&back).unwrap(), line);
        }
    }

    #[test]
    fn a_line_that_is_not_an_event_is_none() {
        assert!(Logged::parse(r#"{"error":{"kind":"usage"}}"#).is_none());
        assert!(Logged::parse(r#"{"ts":"now","run_id":"r","event":"from_the_future"}"#).is_none());
        assert!(Logged::parse("not json").is_none());
    }
}
