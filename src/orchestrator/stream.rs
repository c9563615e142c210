//! The agent's output as it streams: parsed into events for the display, scanned for the
//! completion signal, its usage checked against the budget, its session, tool calls, model and
//! self-reported failure kept; and what the supervisor should do next (`Flow`).

use super::budget::Budget;
use super::tool_calls::ToolCalls;
use crate::agent::{Agent, CompletionScanner, Parser, StreamEvent, Usage, UsageMode};
use crate::manifest::plan::StepPlan;
use crate::process::{Flow, Handlers};
use crate::record::AgentFailure;
use crate::record::ToolCallRecord;
use crate::report::{Event, RunEvents};
use std::collections::HashMap;
use std::time::Duration;

/// What the agent's stream said, by the time it ended.
#[derive(Default)]
pub(super) struct Said {
    /// When the agent's first line came.
    pub(crate) first_byte: Option<std::time::Instant>,
    pub(crate) signal: Option<String>,
    pub(crate) usage: Option<Usage>,
    pub(crate) session_id: Option<String>,
    pub(crate) tool_calls: ToolCalls,
    /// This iteration's latest running total, remembered once the iteration ends.
    pub(crate) pending_session_total: Option<(String, Usage)>,
    pub(crate) failure: Option<AgentFailure>,
    /// The agent's text, kept when a structured output must be read from it.
    pub(crate) text: Option<String>,
    /// The first budget cap the usage crossed.
    pub(crate) exceeded: Option<crate::error::BudgetExceeded>,
    /// The sandbox branch's tip as the command left it (its wrapper's note), if it said.
    pub(crate) sandbox_tip: Option<String>,
    /// The model the agent said it used, the latest.
    pub(crate) model: Option<String>,
    /// The last notice (a retry) since the last progress: the agent is only waiting.
    pub(crate) retrying: Option<String>,
}

/// Reads the agent's output as it streams: events to the display, the completion signal, the
/// usage, the session, the tool calls, a failure the agent reports itself.
pub(super) struct IterationHandlers<'a> {
    iteration: u32,
    parser: Box<dyn Parser>,
    scanner: CompletionScanner,
    /// How long the agent has to exit once the signal is seen.
    completion_timeout: Duration,
    events: &'a mut RunEvents,
    /// Running totals reported by earlier iterations, per session (for `SessionTotal`).
    session_totals: &'a HashMap<String, Usage>,
    /// The caps to check the usage against, and the first one crossed.
    budget: Budget,
    /// The key-holding proxies, whose requests are told as they are answered.
    holder: Option<&'a crate::proxy::held::Holder>,
    /// The line being read made progress (text, a tool call, usage…), not only a notice.
    progressed: bool,
    /// What the agent said so far.
    said: Said,
}

impl<'a> IterationHandlers<'a> {
    pub(super) fn new(
        iteration: u32,
        (step, agent): (&StepPlan, &dyn Agent),
        events: &'a mut RunEvents,
        session_totals: &'a HashMap<String, Usage>,
        (budget, holder): (Budget, Option<&'a crate::proxy::held::Holder>),
    ) -> Self {
        let loop_ = &step.loop_;
        IterationHandlers {
            iteration,
            parser: agent.parser(),
            scanner: CompletionScanner::new(&loop_.completion_signal),
            completion_timeout: loop_.completion_timeout.0,
            events,
            session_totals,
            budget,
            holder,
            progressed: false,
            said: Said { text: step.output.as_ref().map(|_| String::new()), ..Said::default() },
        }
    }

    /// What the agent said, once its stream ended.
    pub(super) fn said(self) -> Said {
        self.said
    }

    fn handle(&mut self, event: StreamEvent<'_>) {
        let iteration = self.iteration;
        if matches!(event, StreamEvent::Notice(_)) {
            if let StreamEvent::Notice(message) = &event {
                self.said.retrying = Some(message.clone());
            }
        } else {
            self.progressed = true;
            self.said.retrying = None;
        }
        match event {
            StreamEvent::Text { text, continues, subagent } => self.text(iteration, &text, continues, subagent),
            StreamEvent::ToolCall { name, summary, subagent } => {
                self.events.report(&Event::ToolCall {
                    iteration,
                    name: name.as_str().into(),
                    summary: summary.as_str().into(),
                    subagent,
                });
                self.said.tool_calls.call(ToolCallRecord { name, summary, ok: None, subagent, error: None });
            }
            StreamEvent::ToolResult { name, ok, reason } => {
                // A result that does not name its tool is the call it answers.
                let called = self.said.tool_calls.result(name.as_deref(), ok, reason.clone()).or(name);
                if !ok {
                    self.events.report(&Event::ToolFailed {
                        iteration,
                        name: called.as_deref().map(Into::into),
                        reason: reason.as_deref().map(Into::into),
                    });
                }
            }
            StreamEvent::Usage { usage, mode } => self.usage(iteration, usage, mode),
            StreamEvent::SessionId(id) => {
                if self.said.session_id.as_deref() != Some(id.as_str()) {
                    self.events.report(&Event::SessionId { iteration, session_id: id.as_str().into() });
                    self.said.session_id = Some(id);
                }
            }
            // The agent's final answer as it reports it separately (Claude's `result`): the
            // signal counts there too when its text never showed it.
            StreamEvent::FinalResult(text) => {
                if self.said.signal.is_none() {
                    if let Some(found) = self.scanner.scan(&text, false) {
                        self.events.report(&Event::CompletionSignal { iteration, signal: found.into() });
                        self.said.signal = Some(found.to_owned());
                    }
                }
            }
            StreamEvent::Error { message, kind } => {
                self.events.report(&Event::AgentError { iteration, message: message.as_str().into(), kind });
                self.said.failure = Some(AgentFailure { message, kind });
            }
            StreamEvent::Notice(message) => {
                self.events.report(&Event::Notice { iteration, message: message.as_str().into() })
            }
            StreamEvent::Model(model) => self.said.model = Some(model),
        }
    }

    fn text(&mut self, iteration: u32, text: &str, continues: bool, subagent: bool) {
        self.events.report(&Event::AgentText { iteration, text: text.into() });
        if let (Some(all), false) = (&mut self.said.text, subagent) {
            all.push_str(text);
            if !continues {
                all.push('\n');
            }
        }
        // Subagents' text is theirs, not the agent's answer: it cannot complete the run.
        if self.said.signal.is_none() && !subagent {
            if let Some(found) = self.scanner.scan(text, continues) {
                self.events.report(&Event::CompletionSignal { iteration, signal: found.into() });
                self.said.signal = Some(found.to_owned());
            }
        }
    }

    fn usage(&mut self, iteration: u32, usage: Usage, mode: UsageMode) {
        let current = self.said.usage.get_or_insert_with(Usage::default);
        match mode {
            UsageMode::Add => current.add(&usage),
            UsageMode::Total => *current = usage,
            UsageMode::SessionTotal => {
                let earlier = self.said.session_id.as_ref().and_then(|id| self.session_totals.get(id));
                *current = earlier.map_or(usage, |earlier| usage.since(earlier));
                if let Some(id) = &self.said.session_id {
                    self.said.pending_session_total = Some((id.clone(), usage));
                }
            }
        }
        self.events.report(&Event::Usage { iteration, usage: *current });
        if self.said.exceeded.is_none() {
            self.said.exceeded = self.budget.crossed(current);
            if let Some(exceeded) = &self.said.exceeded {
                let message = format!(
                    "budget: `{}` of {} crossed ({} spent); stopping the agent",
                    exceeded.cap.key(),
                    exceeded.limit,
                    exceeded.used
                );
                self.events.report(&Event::Warning { message: message.as_str().into() });
            }
        }
    }
}

impl Handlers for IterationHandlers<'_> {
    fn stdout_line(&mut self, line: &[u8], continues: bool) -> Flow {
        self.said.first_byte.get_or_insert_with(std::time::Instant::now);
        self.progressed = false;
        let mut parser = std::mem::replace(&mut self.parser, Box::new(crate::agent::LinesParser));
        if continues {
            parser.parse_piece(line, &mut |event| self.handle(event));
        } else {
            parser.parse_line(line, &mut |event| self.handle(event));
        }
        self.parser = parser;
        // Once the signal is seen, the agent has `completion_timeout` to exit on its own.
        match (&self.said.exceeded, &self.said.signal) {
            (Some(_), _) => Flow::Stop,
            (None, Some(_)) => Flow::FinishWithin(self.completion_timeout),
            // Only a notice (a provider retry): the idle watchdog keeps counting.
            (None, None) if !self.progressed && self.said.retrying.is_some() => Flow::Waiting,
            (None, None) => Flow::Continue,
        }
    }

    fn stderr_line(&mut self, line: &[u8]) {
        if let Some(note) = crate::process::sandbox_note(line) {
            // The sandbox's branch tip as the command left it: spares asking again.
            if let Some(tip) = note.strip_prefix(b"tip ") {
                self.said.sandbox_tip = Some(String::from_utf8_lossy(tip).trim().to_owned());
            }
            return;
        }
        let text = crate::agent::decode(line);
        self.events.report(&Event::AgentStderr { iteration: self.iteration, text: text.clone() });
    }

    fn tick(&mut self) {
        if let Some(holder) = self.holder {
            for audit in holder.drain() {
                report_request(self.events, self.iteration, audit);
            }
        }
    }

    fn idle_warning(&mut self, silent_for: Duration) {
        self.events.report(&Event::IdleWarning { iteration: self.iteration, silent_secs: silent_for.as_secs() });
    }
}

/// One request the proxy served, as an event.
pub(super) fn report_request(events: &mut RunEvents, iteration: u32, audit: crate::proxy::Audit) {
    events.report(&Event::ProviderRequest {
        iteration,
        at: audit.at.into(),
        method: audit.method.into(),
        host: audit.host.into(),
        path: audit.path.into(),
        status: audit.status,
        bytes_up: audit.bytes_up,
        bytes_down: audit.bytes_down,
        duration_ms: audit.duration_ms,
        refused: audit.refused.map(Into::into),
        in_flight: audit.in_flight,
    });
}
