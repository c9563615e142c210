//! The OpenTelemetry exporter: a run's traces and metrics over OTLP/HTTP, when the environment
//! names an endpoint (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or `OTEL_EXPORTER_OTLP_ENDPOINT` +
//! `/v1/traces`). Without one nothing here runs and nothing is sent. One reporter among the
//! others at the edge: the run knows nothing of it but its events (and, from `trace`, the span
//! ids its agent's `TRACEPARENT` names).
//!
//! The spans are made from the run's events (`TraceReporter`): the run, each step, each
//! iteration, each tool call, each check and hook, the sandbox's start (its seeding included),
//! bringing each iteration's work back, the merge and the push. They are sent once, when the
//! run finishes (`http/protobuf`, or `http/json` with `OTEL_EXPORTER_OTLP_PROTOCOL`), through
//! `net::http` on a thread of its own that the run waits for at most `EXPORT_WAIT`: a receiver
//! that is down or hangs costs the run a warning and at most that long. At most `MAX_SPANS`
//! spans are kept (a run of many tool calls drops the rest, and says how many on the run's
//! span).

mod encode;
mod settings;

pub(crate) use settings::Settings;

use crate::error::Error;
use crate::net::http::{Client, HttpError, Method, Request};
use crate::report::{Event, Reporter};
use crate::trace::{hex, iteration_span, run_span, span_id, TraceContext};
use encode::{encode_json, encode_metrics_json, encode_metrics_protobuf, encode_protobuf, Point, Span, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most spans one run keeps.
const MAX_SPANS: usize = 10_000;

/// The longest the end of a run waits for its export.
const EXPORT_WAIT: Duration = Duration::from_millis(800);

fn now_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_nanos() as u64)
}

/// A span begun, not yet ended.
struct Open {
    id: [u8; 8],
    parent: Option<[u8; 8]>,
    name: String,
    start: u64,
    attributes: Vec<(String, Value)>,
}

impl Open {
    fn end(self, end: u64, error: Option<String>) -> Span {
        Span {
            id: self.id,
            parent: self.parent,
            // A name carries what the agent said (a tool's name, a step's): as an attribute
            // would, redacted and with no control character.
            name: plain(&crate::redact::apply(&self.name), MAX_NAME),
            start: self.start,
            end,
            attributes: self.attributes,
            error: error.map(|error| plain(&crate::redact::apply(&error), MAX_TEXT)),
        }
    }
}

/// The most characters of a span's name, and of a text attribute.
const MAX_NAME: usize = 128;
const MAX_TEXT: usize = 4096;

/// `text` with every control character but a newline or a tab as `\u{..}`, at most `max`
/// characters: what an agent prints reaches a collector's screens as data.
fn plain(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for (count, c) in text.chars().enumerate() {
        if count == max {
            out.push('…');
            break;
        }
        match c {
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// Turns a run's events into spans and, when the run finishes, exports them.
pub(crate) struct TraceReporter {
    settings: Settings,
    context: Option<TraceContext>,
    run_id: String,
    run: Option<Open>,
    step: Option<(String, Open)>,
    iteration: Option<Open>,
    tool: Option<Open>,
    /// Checks and hooks (one at a time).
    command: Option<Open>,
    /// When the last event came: the start of what the next ends (the sandbox's start, the merge).
    last_event: u64,
    tools: u32,
    /// When the run began (its metrics' start).
    run_started: Option<u64>,
    done: Vec<Span>,
    dropped: usize,
}

impl TraceReporter {
    pub(crate) fn new(settings: Settings) -> TraceReporter {
        TraceReporter {
            settings,
            context: None,
            run_id: String::new(),
            run: None,
            step: None,
            iteration: None,
            tool: None,
            command: None,
            last_event: now_nanos(),
            tools: 0,
            run_started: None,
            done: Vec::new(),
            dropped: 0,
        }
    }

    fn keep(&mut self, span: Span) {
        match self.done.len() < MAX_SPANS {
            true => self.done.push(span),
            false => self.dropped += 1,
        }
    }

    /// The innermost open span a new one is a child of.
    fn parent(&self) -> Option<[u8; 8]> {
        self.iteration
            .as_ref()
            .map(|open| open.id)
            .or_else(|| self.step.as_ref().map(|(_, open)| open.id))
            .or_else(|| self.run.as_ref().map(|open| open.id))
    }

    fn open(&self, name: String, id: [u8; 8], attributes: Vec<(String, Value)>) -> Open {
        Open { id, parent: self.parent(), name, start: now_nanos(), attributes }
    }

    fn end_tool(&mut self, now: u64) {
        if let Some(tool) = self.tool.take() {
            self.keep(tool.end(now, None));
        }
    }

    fn step_name(&self) -> String {
        self.step.as_ref().map_or_else(|| "main".to_owned(), |(name, _)| name.clone())
    }
}

fn text(value: impl Into<String>) -> Value {
    Value::Text(plain(&crate::redact::apply(&value.into()), MAX_TEXT))
}

impl Reporter for TraceReporter {
    fn report(&mut self, run_id: &str, event: &Event<'_>) {
        let now = now_nanos();
        self.event(run_id, event, now);
        self.last_event = now;
    }
}

impl TraceReporter {
    fn event(&mut self, run_id: &str, event: &Event<'_>, now: u64) {
        match event {
            Event::RunStarted { name, agent, strategy, branch, base, .. } => {
                self.run_id = run_id.to_owned();
                let context = TraceContext::from_env(run_id);
                self.context = Some(context);
                let mut attributes = vec![
                    ("eden.run.id".to_owned(), text(run_id)),
                    ("eden.run.name".to_owned(), text(name.as_ref())),
                    ("gen_ai.agent.name".to_owned(), text(agent.as_str())),
                    ("eden.strategy".to_owned(), text(strategy.as_ref())),
                    ("eden.branch".to_owned(), text(branch.as_ref())),
                ];
                attributes.extend(base.as_ref().map(|base| ("eden.base_branch".to_owned(), text(base.as_ref()))));
                let id = run_span(run_id);
                self.run_started = Some(now);
                self.run = Some(Open { id, parent: context.parent, name: "eden.run".into(), start: now, attributes });
            }
            Event::SandboxStarted { engine, name, host, node, .. } => {
                let mut attributes = vec![
                    ("eden.sandbox.kind".to_owned(), text(engine.as_str())),
                    ("eden.sandbox.name".to_owned(), text(name.as_ref())),
                ];
                attributes.extend(host.as_ref().map(|host| ("eden.sandbox.host".to_owned(), text(host.as_ref()))));
                attributes.extend(node.as_ref().map(|node| ("eden.sandbox.node".to_owned(), text(node.as_ref()))));
                if let Some(run) = &mut self.run {
                    run.attributes.extend(attributes.iter().cloned());
                }
                let mut span = self.open("eden.sandbox.start".into(), span_id(&[run_id, "sandbox"]), attributes);
                span.start = self.last_event;
                self.keep(span.end(now, None));
            }
            Event::StepStarted { step, index, .. } => {
                let id = span_id(&[run_id, "step", step]);
                let attributes = vec![
                    ("eden.step".to_owned(), text(step.as_ref())),
                    ("eden.step.index".to_owned(), Value::Int(*index as i64)),
                ];
                let open = Open {
                    id,
                    parent: self.run.as_ref().map(|run| run.id),
                    name: format!("eden.step {step}"),
                    start: now,
                    attributes,
                };
                self.step = Some((step.to_string(), open));
            }
            Event::StepFinished { status, .. } => {
                if let Some((_, mut open)) = self.step.take() {
                    open.attributes.push(("eden.step.status".into(), text(status.as_str())));
                    self.keep(open.end(now, None));
                }
            }
            _ => self.iteration_event(run_id, event, now),
        }
    }

    fn iteration_event(&mut self, run_id: &str, event: &Event<'_>, now: u64) {
        match event {
            Event::IterationStarted { iteration, .. } => {
                let id = iteration_span(run_id, &self.step_name(), *iteration);
                let attributes = vec![
                    ("eden.iteration".to_owned(), Value::Int(i64::from(*iteration))),
                    ("eden.step".to_owned(), text(self.step_name())),
                ];
                self.iteration = Some(self.open(format!("eden.iteration {iteration}"), id, attributes));
                self.tools = 0;
            }
            Event::ToolCall { name, summary, .. } => {
                self.end_tool(now);
                self.tools += 1;
                let iteration = self.iteration.as_ref().map_or(0, |open| open.id[0] as u32);
                let id = span_id(&[
                    run_id,
                    "tool",
                    &hex(&self.parent().unwrap_or_default()),
                    &self.tools.to_string(),
                    &iteration.to_string(),
                ]);
                let attributes = vec![
                    ("gen_ai.operation.name".to_owned(), text("execute_tool")),
                    ("gen_ai.tool.name".to_owned(), text(name.as_ref())),
                    ("eden.tool.summary".to_owned(), text(summary.as_ref())),
                ];
                self.tool = Some(self.open(format!("eden.tool {name}"), id, attributes));
            }
            Event::Usage { usage, .. } => {
                if let Some(open) = &mut self.iteration {
                    open.attributes.retain(|(key, _)| !key.starts_with("gen_ai.usage.") && key != "eden.cost_usd");
                    open.attributes.extend(usage_attributes(usage));
                }
            }
            Event::SessionId { session_id, .. } => {
                if let Some(open) = &mut self.iteration {
                    open.attributes.retain(|(key, _)| key != "gen_ai.conversation.id");
                    open.attributes.push(("gen_ai.conversation.id".into(), text(session_id.as_ref())));
                }
            }
            Event::IterationFinished { outcome, exit_code, .. } => {
                self.end_tool(now);
                if let Some(mut open) = self.iteration.take() {
                    open.attributes.push(("eden.outcome".into(), text(outcome.as_str())));
                    open.attributes
                        .extend(exit_code.map(|code| ("eden.exit_code".to_owned(), Value::Int(i64::from(code)))));
                    let failed = matches!(outcome.as_str(), "failed" | "idle_timeout" | "step_timeout");
                    self.keep(open.end(now, failed.then(|| outcome.as_str().to_owned())));
                }
            }
            _ => self.command_event(run_id, event, now),
        }
    }

    fn command_event(&mut self, run_id: &str, event: &Event<'_>, now: u64) {
        match event {
            Event::CheckStarted { name, command, iteration } => {
                let id = span_id(&[run_id, "check", name, &iteration.to_string()]);
                let attributes = vec![
                    ("eden.check".to_owned(), text(name.as_ref())),
                    ("eden.command".to_owned(), text(command.as_ref())),
                ];
                self.command = Some(self.open(format!("eden.check {name}"), id, attributes));
            }
            Event::HookStarted { phase, command, iteration, .. } => {
                let id = span_id(&[
                    run_id,
                    "hook",
                    phase.as_str(),
                    command,
                    &iteration.unwrap_or(0).to_string(),
                    &now.to_string(),
                ]);
                let attributes = vec![
                    ("eden.hook.phase".to_owned(), text(phase.as_str())),
                    ("eden.command".to_owned(), text(command.as_ref())),
                ];
                self.command = Some(self.open(format!("eden.hook {}", phase.as_str()), id, attributes));
            }
            Event::CheckFinished { outcome, exit_code, .. } | Event::HookFinished { outcome, exit_code, .. } => {
                if let Some(mut open) = self.command.take() {
                    open.attributes.push(("eden.outcome".into(), text(outcome.as_str())));
                    open.attributes
                        .extend(exit_code.map(|code| ("eden.exit_code".to_owned(), Value::Int(i64::from(code)))));
                    let failed = outcome.as_str() != "ok";
                    self.keep(open.end(now, failed.then(|| outcome.as_str().to_owned())));
                }
            }
            Event::Merged { target, commits, kind, .. } => {
                let attributes = vec![
                    ("eden.merge.target".to_owned(), text(target.as_ref())),
                    ("eden.merge.commits".to_owned(), Value::Int(i64::from(*commits))),
                    (
                        "eden.merge.kind".to_owned(),
                        text(
                            serde_json::to_value(kind)
                                .ok()
                                .and_then(|v| v.as_str().map(str::to_owned))
                                .unwrap_or_default(),
                        ),
                    ),
                ];
                let mut span = self.open("eden.merge".into(), span_id(&[run_id, "merge"]), attributes);
                span.parent = self.run.as_ref().map(|run| run.id);
                span.start = self.last_event;
                self.keep(span.end(now, None));
            }
            Event::WorkBack { iteration, duration_ms } => {
                let attributes = vec![("eden.iteration".to_owned(), Value::Int(i64::from(*iteration)))];
                let id = span_id(&[run_id, "back", &self.step_name(), &iteration.to_string(), &now.to_string()]);
                let mut span = self.open("eden.work_back".into(), id, attributes);
                span.start = now.saturating_sub(duration_ms * 1_000_000);
                self.keep(span.end(now, None));
            }
            Event::Pushed { remote, branch, pushed, duration_ms } => {
                let attributes = vec![
                    ("eden.push.remote".to_owned(), text(remote.as_ref())),
                    ("eden.push.branch".to_owned(), text(branch.as_ref())),
                ];
                let mut span = self.open("eden.push".into(), span_id(&[run_id, "push"]), attributes);
                span.parent = self.run.as_ref().map(|run| run.id);
                span.start = now.saturating_sub(duration_ms * 1_000_000);
                self.keep(span.end(now, (!pushed).then(|| "the push failed".to_owned())));
            }
            Event::RunFinished { record } => self.finish(record, now),
            _ => {}
        }
    }

    /// The run's span ended with what its record says, and everything sent.
    fn finish(&mut self, record: &crate::record::RunRecord, now: u64) {
        self.end_tool(now);
        let Some(mut run) = self.run.take() else { return };
        run.attributes.push(("eden.sandbox.kind".into(), text(format!("{:?}", record.sandbox).to_lowercase())));
        run.attributes.dedup_by(|a, b| a.0 == b.0);
        if let Some(reason) = record.exit_reason {
            run.attributes.push(("eden.exit_reason".into(), text(reason.as_str())));
        }
        run.attributes.extend(record.exit_code.map(|code| ("eden.exit_code".to_owned(), Value::Int(i64::from(code)))));
        run.attributes.push(("eden.iterations".into(), Value::Int(record.iterations.len() as i64)));
        if let Some(usage) = &record.usage {
            run.attributes.extend(usage_attributes(usage));
        }
        if self.dropped > 0 {
            run.attributes.push(("eden.dropped_spans".into(), Value::Int(self.dropped as i64)));
        }
        let error = record.error.as_ref().map(|error| crate::redact::apply(&error.message).into_owned());
        let span = run.end(now, error);
        self.done.push(span);
        let context = self.context.unwrap_or_else(|| TraceContext::from_env(&self.run_id));
        let traces = match self.settings.json {
            true => encode_json(&self.settings, &context, &self.done).into_bytes(),
            false => encode_protobuf(&self.settings, &context, &self.done),
        };
        let mut requests = vec![(self.settings.endpoint.clone(), traces)];
        if let Some(endpoint) = &self.settings.metrics {
            let points = metric_points(record, self.run_started.unwrap_or(now), now);
            let body = match self.settings.json {
                true => encode_metrics_json(&self.settings, &points).into_bytes(),
                false => encode_metrics_protobuf(&self.settings, &points),
            };
            requests.push((endpoint.clone(), body));
        }
        if let Err(why) = export(&self.settings, requests) {
            crate::ui::print_note(&format!("warning: the run's telemetry was not exported: {why}"));
        }
    }
}

fn usage_attributes(usage: &crate::agent::Usage) -> Vec<(String, Value)> {
    let mut attributes = vec![
        ("gen_ai.usage.input_tokens".to_owned(), Value::Int(usage.input_tokens as i64)),
        ("gen_ai.usage.output_tokens".to_owned(), Value::Int(usage.output_tokens as i64)),
        ("gen_ai.usage.cache_read.input_tokens".to_owned(), Value::Int(usage.cache_read_tokens as i64)),
        ("gen_ai.usage.cache_creation.input_tokens".to_owned(), Value::Int(usage.cache_write_tokens as i64)),
    ];
    // To a millionth of a dollar: a sum of prices has float noise past it.
    let cost = usage.cost_usd.map(|cost| (cost * 1e6).round() / 1e6);
    attributes.extend(cost.map(|cost| ("eden.cost_usd".to_owned(), Value::Float(cost))));
    attributes
}

/// POST each `(endpoint, body)` on a thread of its own, waiting for them all at most
/// `EXPORT_WAIT` (the requests themselves get no longer).
fn export(settings: &Settings, requests: Vec<(String, Vec<u8>)>) -> Result<(), Error> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let settings = settings.clone();
    std::thread::Builder::new()
        .name("otlp".into())
        .spawn(move || {
            let sent = requests.iter().try_for_each(|(endpoint, body)| {
                post(&settings, endpoint, body).map_err(|why| Error::internal(format!("{endpoint}: {why}")))
            });
            let _ = sender.send(sent);
        })
        .map_err(|err| Error::internal(err.to_string()))?;
    match receiver.recv_timeout(EXPORT_WAIT) {
        Ok(result) => result,
        Err(_) => Err(Error::internal(format!("no answer within {} ms", EXPORT_WAIT.as_millis()))),
    }
}

/// One POST; the status must be 2xx.
fn post(settings: &Settings, endpoint: &str, body: &[u8]) -> Result<(), HttpError> {
    let tls = crate::net::connect::client_config(endpoint.starts_with("https://"))
        .map_err(|err| HttpError::Io(std::io::Error::other(err.message)))?;
    let content_type = if settings.json { "application/json" } else { "application/x-protobuf" };
    let mut headers = vec![("Content-Type".to_owned(), content_type.to_owned())];
    headers.extend(settings.headers.iter().cloned());
    let request = Request { method: Method::Post, url: endpoint, headers, body };
    Client::new(tls, EXPORT_WAIT).max_body(64 * 1024).send(&request).map(|_| ())
}

/// What a run adds to the counts, as delta sums (and its duration as a gauge): runs,
/// iterations, tokens by type, cost.
fn metric_points(record: &crate::record::RunRecord, start: u64, end: u64) -> Vec<Point> {
    let agent = record.steps.first().map_or("unknown", |step| step.agent.as_str());
    let base = vec![
        ("eden.run.name".to_owned(), text(record.name.clone())),
        ("gen_ai.agent.name".to_owned(), text(agent)),
        ("eden.exit_reason".to_owned(), text(record.exit_reason.map_or("none", |reason| reason.as_str()))),
    ];
    let point = |name, unit, value, sum, extra: Option<(&str, &str)>| {
        let mut attributes = base.clone();
        attributes.extend(extra.map(|(key, value)| (key.to_owned(), text(value))));
        Point { name, unit, value, sum, attributes, start, end }
    };
    let mut points = vec![
        point("eden.runs", "{run}", Value::Int(1), true, None),
        point("eden.iterations", "{iteration}", Value::Int(record.iterations.len() as i64), true, None),
        point("eden.run.duration", "s", Value::Float(record.duration_ms as f64 / 1000.0), false, None),
    ];
    if let Some(usage) = &record.usage {
        for (kind, tokens) in [("input", usage.input_tokens), ("output", usage.output_tokens)] {
            points.push(point(
                "eden.tokens",
                "{token}",
                Value::Int(tokens as i64),
                true,
                Some(("gen_ai.token.type", kind)),
            ));
        }
        if let Some(cost) = usage.cost_usd {
            points.push(point("eden.cost", "USD", Value::Float(cost), true, None));
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_texts_are_plain() {
        assert_eq!(plain("eden.tool Bash\u{1b}[2J\r", 128), "eden.tool Bash\\u{1b}[2J\\u{d}");
    }
}
