//! OpenTelemetry traces of a run, over OTLP/HTTP, when the environment names an endpoint
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`).
//! Without one nothing here runs and nothing is sent.
//!
//! The spans are made from the run's events (`TraceReporter`, one more `Reporter`): the run,
//! each step, each iteration, each tool call, each check and hook, the sandbox's start (its
//! seeding included), bringing each iteration's work back, the merge and the push. They are sent once, when the run finishes, as one request
//! (`http/protobuf`, or `http/json` with `OTEL_EXPORTER_OTLP_PROTOCOL`), on a thread of its own
//! that the run waits for at most `EXPORT_WAIT`: a receiver that is down or hangs costs the run
//! a warning and at most that long. At most `MAX_SPANS` spans are kept (a run of many tool calls
//! drops the rest, and says how many on the run's span).
//!
//! The protobuf is written by hand from the official definitions
//! (`opentelemetry/proto/trace/v1/trace.proto` and `common/v1/common.proto`; the tests decode
//! it with `protoc` and those files): the crates that do it pull in a gRPC stack this 2-core
//! build would pay for on every run of `cargo build`.
//!
//! `TRACEPARENT` (W3C trace context) in eden's environment makes the run's span a child of the
//! caller's (a CI job's); the agent gets `TRACEPARENT` naming its iteration's span
//! (`agent_traceparent`), so its own spans join the trace.

use crate::error::Error;
use crate::report::{Event, Reporter};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most spans one run keeps.
const MAX_SPANS: usize = 10_000;

/// The longest the end of a run waits for its export.
const EXPORT_WAIT: Duration = Duration::from_millis(800);

/// Where and how the traces go, from the standard variables.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The full URL of the traces endpoint.
    pub(crate) endpoint: String,
    /// The metrics endpoint (`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, or the base's
    /// `/v1/metrics`); `None` when only a traces endpoint is named.
    pub(crate) metrics: Option<String>,
    pub(crate) json: bool,
    /// `OTEL_EXPORTER_OTLP_HEADERS` (and `…_TRACES_HEADERS`): `key=value,…`.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`: `key=value,…`.
    pub(crate) resource: Vec<(String, String)>,
}

impl Settings {
    /// From `env` (eden's environment); `None` when no endpoint is set, or `OTEL_SDK_DISABLED`.
    pub(crate) fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<Settings> {
        let set = |name: &str| env(name).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
            return None;
        }
        let base = set("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| base.trim_end_matches('/').to_owned());
        let endpoint = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(endpoint) => endpoint,
            None => format!("{}/v1/traces", base.as_ref()?),
        };
        let metrics = set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
            .or_else(|| base.as_ref().map(|base| format!("{base}/v1/metrics")));
        let protocol = set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL"));
        let mut headers = pairs(&set("OTEL_EXPORTER_OTLP_HEADERS").unwrap_or_default());
        headers.extend(pairs(&set("OTEL_EXPORTER_OTLP_TRACES_HEADERS").unwrap_or_default()));
        // `https://user:password@host/…`: the password goes as HTTP basic authentication, never
        // in the URL eden shows or connects by.
        let (endpoint, login) = without_userinfo(&endpoint);
        let metrics = metrics.map(|metrics| without_userinfo(&metrics).0);
        let has_authorization = headers.iter().any(|(key, _)| key.eq_ignore_ascii_case("authorization"));
        if let Some(login) = login.filter(|_| !has_authorization) {
            headers.push(("Authorization".to_owned(), format!("Basic {}", base64(login.as_bytes()))));
        }
        Some(Settings {
            endpoint,
            metrics,
            json: protocol.as_deref() == Some("http/json"),
            headers,
            service_name: set("OTEL_SERVICE_NAME").unwrap_or_else(|| "eden".to_owned()),
            resource: pairs(&set("OTEL_RESOURCE_ATTRIBUTES").unwrap_or_default()),
        })
    }
}

/// `url` without its `user:password@` (percent-decoded), and that login.
fn without_userinfo(url: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = url.split_once("://") else { return (url.to_owned(), None) };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((userinfo, host)) => {
            let login = match userinfo.split_once(':') {
                Some((user, password)) => format!("{}:{}", percent_decode(user), percent_decode(password)),
                None => format!("{}:", percent_decode(userinfo)),
            };
            (format!("{scheme}://{host}{}", &rest[authority_end..]), Some(login))
        }
        None => (url.to_owned(), None),
    }
}

/// Standard base64, padded (RFC 4648).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, byte)| n | u32::from(*byte) << (16 - 8 * i));
        for i in 0..4 {
            out.push(match i <= chunk.len() {
                true => ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char,
                false => '=',
            });
        }
    }
    out
}

/// `key=value,key=value`, each part percent-decoded, as the specification writes them.
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(key, value)| (percent_decode(key.trim()), percent_decode(value.trim())))
        .filter(|(key, _)| !key.is_empty())
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|pair| std::str::from_utf8(pair).ok());
        match (bytes[i], hex.and_then(|hex| u8::from_str_radix(hex, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The run's trace: its id, and the caller's span the run's is a child of (`TRACEPARENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TraceContext {
    pub(crate) trace_id: [u8; 16],
    pub(crate) parent: Option<[u8; 8]>,
}

impl TraceContext {
    /// The caller's (`TRACEPARENT`), else a trace of the run's own, its id made from the run's.
    pub(crate) fn of(run_id: &str, traceparent: Option<&str>) -> TraceContext {
        if let Some((trace_id, parent)) = traceparent.and_then(parse_traceparent) {
            return TraceContext { trace_id, parent: Some(parent) };
        }
        let (a, b) = (hash64(&[run_id, "trace"]), hash64(&[run_id, "trace", "2"]));
        let mut trace_id = [0u8; 16];
        trace_id[..8].copy_from_slice(&a.to_be_bytes());
        trace_id[8..].copy_from_slice(&b.to_be_bytes());
        TraceContext { trace_id, parent: None }
    }

    /// The run's context from eden's own environment.
    pub(crate) fn from_env(run_id: &str) -> TraceContext {
        TraceContext::of(run_id, std::env::var("TRACEPARENT").ok().as_deref())
    }
}

/// `00-<32 hex>-<16 hex>-<2 hex>`, neither id all zeros.
fn parse_traceparent(text: &str) -> Option<([u8; 16], [u8; 8])> {
    let parts: Vec<&str> = text.trim().split('-').collect();
    let [version, trace, span, _flags] = parts[..] else { return None };
    if version.len() != 2 || version == "ff" {
        return None;
    }
    let trace: [u8; 16] = hex_bytes(trace)?.try_into().ok()?;
    let span: [u8; 8] = hex_bytes(span)?.try_into().ok()?;
    (trace != [0; 16] && span != [0; 8]).then_some((trace, span))
}

fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || !text.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// FNV-1a over the parts: the same span ids wherever they are computed (the reporter, and the
/// agent's `TRACEPARENT`), never zero.
fn hash64(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0xff]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash.max(1)
}

fn span_id(parts: &[&str]) -> [u8; 8] {
    hash64(parts).to_be_bytes()
}

/// The span id of `step`'s iteration `n` of run `run_id`.
fn iteration_span(run_id: &str, step: &str, n: u32) -> [u8; 8] {
    span_id(&[run_id, "iteration", step, &n.to_string()])
}

/// What the agent of `step`'s iteration `n` gets as `TRACEPARENT`, when traces are exported.
pub(crate) fn agent_traceparent(run_id: &str, step: &str, n: u32) -> Option<String> {
    Settings::from_env(&|name| std::env::var(name).ok())?;
    let context = TraceContext::from_env(run_id);
    Some(format!("00-{}-{}-01", hex(&context.trace_id), hex(&iteration_span(run_id, step, n))))
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Text(String),
    Int(i64),
    Float(f64),
}

/// One finished span.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub(crate) id: [u8; 8],
    pub(crate) parent: Option<[u8; 8]>,
    pub(crate) name: String,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) attributes: Vec<(String, Value)>,
    /// `Some(message)`: the span failed.
    pub(crate) error: Option<String>,
}

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
                let id = span_id(&[run_id, "run"]);
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
/// `EXPORT_WAIT`.
fn export(settings: &Settings, requests: Vec<(String, Vec<u8>)>) -> Result<(), Error> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let settings = settings.clone();
    std::thread::Builder::new()
        .name("otlp".into())
        .spawn(move || {
            let sent = requests.iter().try_for_each(|(endpoint, body)| {
                post(&settings, endpoint, body).map_err(|why| Error::internal(format!("{endpoint}: {}", why.message)))
            });
            let _ = sender.send(sent);
        })
        .map_err(|err| Error::internal(err.to_string()))?;
    match receiver.recv_timeout(EXPORT_WAIT) {
        Ok(result) => result,
        Err(_) => Err(Error::internal(format!("no answer within {} ms", EXPORT_WAIT.as_millis()))),
    }
}

/// One HTTP/1.1 POST; the status must be 2xx.
fn post(settings: &Settings, endpoint: &str, body: &[u8]) -> Result<(), Error> {
    use std::io::{Read, Write};
    let url = crate::values::BaseUrl::parse(endpoint)
        .ok_or_else(|| Error::usage("the endpoint is not an `http://` or `https://` URL"))?;
    let needs_tls = url.tls;
    let tls = crate::proxy::upstream::client_config(needs_tls)?;
    let mut stream = crate::proxy::upstream::connect(&url, &tls).map_err(|err| Error::internal(err.to_string()))?;
    let content_type = if settings.json { "application/json" } else { "application/x-protobuf" };
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\nUser-Agent: eden/{}\r\n",
        if url.prefix.is_empty() { "/" } else { url.prefix.as_str() },
        url.host,
        body.len(),
        env!("CARGO_PKG_VERSION")
    );
    for (key, value) in &settings.headers {
        if key.bytes().all(|b| b.is_ascii_graphic() && b != b':') && !value.contains(['\r', '\n']) {
            head.push_str(&format!("{key}: {value}\r\n"));
        }
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|err| Error::internal(err.to_string()))?;
    let mut answer = [0u8; 64];
    let read = stream.read(&mut answer).map_err(|err| Error::internal(err.to_string()))?;
    let line = String::from_utf8_lossy(&answer[..read]);
    let status = line.split_whitespace().nth(1).unwrap_or("");
    match status.starts_with('2') {
        true => Ok(()),
        false => Err(Error::internal(format!("the receiver answered `{}`", line.lines().next().unwrap_or("").trim()))),
    }
}

/// One number of a run's metrics.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    pub(crate) name: &'static str,
    pub(crate) unit: &'static str,
    pub(crate) value: Value,
    /// A monotonic sum (a count) rather than a gauge.
    pub(crate) sum: bool,
    pub(crate) attributes: Vec<(String, Value)>,
    pub(crate) start: u64,
    pub(crate) end: u64,
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

/// `ExportMetricsServiceRequest` of one `ResourceMetrics`: each point a metric of its own.
pub(crate) fn encode_metrics_protobuf(settings: &Settings, points: &[Point]) -> Vec<u8> {
    let metrics = points.iter().map(|point| {
        let mut data = Vec::new();
        for (key, value) in &point.attributes {
            bytes_field(&mut data, 7, &key_value(key, value));
        }
        fixed64_field(&mut data, 2, point.start);
        fixed64_field(&mut data, 3, point.end.max(point.start));
        match point.value {
            Value::Float(number) => fixed64_field(&mut data, 4, number.to_bits()),
            Value::Int(number) => fixed64_field(&mut data, 6, number as u64),
            _ => {}
        }
        let mut series = Vec::new();
        bytes_field(&mut series, 1, &data);
        if point.sum {
            // Delta, monotonic.
            varint_field(&mut series, 2, 1);
            varint_field(&mut series, 3, 1);
        }
        let mut metric = Vec::new();
        bytes_field(&mut metric, 1, point.name.as_bytes());
        bytes_field(&mut metric, 3, point.unit.as_bytes());
        bytes_field(&mut metric, if point.sum { 7 } else { 5 }, &series);
        metric
    });
    export_request(settings, metrics)
}

/// The OTLP/JSON mapping of the same.
pub(crate) fn encode_metrics_json(settings: &Settings, points: &[Point]) -> String {
    let metrics: Vec<serde_json::Value> = points
        .iter()
        .map(|point| {
            let mut data = serde_json::json!({
                "attributes": json_attributes(&point.attributes),
                "startTimeUnixNano": point.start.to_string(),
                "timeUnixNano": point.end.max(point.start).to_string(),
            });
            match point.value {
                Value::Float(number) => data["asDouble"] = serde_json::json!(number),
                Value::Int(number) => data["asInt"] = serde_json::json!(number.to_string()),
                _ => {}
            }
            let mut metric = serde_json::json!({"name": point.name, "unit": point.unit});
            match point.sum {
                true => {
                    metric["sum"] =
                        serde_json::json!({"dataPoints": [data], "aggregationTemporality": 1, "isMonotonic": true})
                }
                false => metric["gauge"] = serde_json::json!({"dataPoints": [data]}),
            }
            metric
        })
        .collect();
    serde_json::json!({"resourceMetrics": [{
        "resource": {"attributes": json_attributes(&resource_attributes(settings))},
        "scopeMetrics": [{"scope": {"name": "eden", "version": env!("CARGO_PKG_VERSION")}, "metrics": metrics}],
    }]})
    .to_string()
}

fn json_attributes(attributes: &[(String, Value)]) -> Vec<serde_json::Value> {
    attributes
        .iter()
        .map(|(key, value)| {
            let value = match value {
                Value::Text(text) => serde_json::json!({"stringValue": text}),
                Value::Int(number) => serde_json::json!({"intValue": number.to_string()}),
                Value::Float(number) => serde_json::json!({"doubleValue": number}),
            };
            serde_json::json!({"key": key, "value": value})
        })
        .collect()
}

/// Protobuf, by hand: `ExportTraceServiceRequest` of one `ResourceSpans`.
pub(crate) fn encode_protobuf(settings: &Settings, context: &TraceContext, spans: &[Span]) -> Vec<u8> {
    export_request(settings, spans.iter().map(|span| span_bytes(context, span)))
}

/// An `Export…ServiceRequest` (traces and metrics have the same shape): one resource (eden, and
/// `OTEL_RESOURCE_ATTRIBUTES`), one scope (`eden` and its version), and `items` in it (spans or
/// metrics, each field 2 of its scope and already encoded).
fn export_request(settings: &Settings, items: impl Iterator<Item = Vec<u8>>) -> Vec<u8> {
    let mut scope = Vec::new();
    bytes_field(&mut scope, 1, b"eden");
    bytes_field(&mut scope, 2, env!("CARGO_PKG_VERSION").as_bytes());
    let mut in_scope = Vec::new();
    bytes_field(&mut in_scope, 1, &scope);
    for item in items {
        bytes_field(&mut in_scope, 2, &item);
    }
    let mut resource = Vec::new();
    for (key, value) in resource_attributes(settings) {
        bytes_field(&mut resource, 1, &key_value(&key, &value));
    }
    let mut in_resource = Vec::new();
    bytes_field(&mut in_resource, 1, &resource);
    bytes_field(&mut in_resource, 2, &in_scope);
    let mut request = Vec::new();
    bytes_field(&mut request, 1, &in_resource);
    request
}

fn resource_attributes(settings: &Settings) -> Vec<(String, Value)> {
    let mut attributes = vec![("service.name".to_owned(), Value::Text(settings.service_name.clone()))];
    for (key, value) in &settings.resource {
        if key != "service.name" {
            attributes.push((key.clone(), Value::Text(value.clone())));
        }
    }
    attributes.push(("service.version".to_owned(), Value::Text(env!("CARGO_PKG_VERSION").to_owned())));
    attributes
}

fn span_bytes(context: &TraceContext, span: &Span) -> Vec<u8> {
    let mut out = Vec::new();
    bytes_field(&mut out, 1, &context.trace_id);
    bytes_field(&mut out, 2, &span.id);
    if let Some(parent) = span.parent {
        bytes_field(&mut out, 4, &parent);
    }
    bytes_field(&mut out, 5, span.name.as_bytes());
    // SPAN_KIND_INTERNAL
    varint_field(&mut out, 6, 1);
    fixed64_field(&mut out, 7, span.start);
    fixed64_field(&mut out, 8, span.end.max(span.start));
    for (key, value) in &span.attributes {
        bytes_field(&mut out, 9, &key_value(key, value));
    }
    let mut status = Vec::new();
    match &span.error {
        Some(message) => {
            bytes_field(&mut status, 2, message.as_bytes());
            varint_field(&mut status, 3, 2);
        }
        None => varint_field(&mut status, 3, 1),
    }
    bytes_field(&mut out, 15, &status);
    out
}

fn key_value(key: &str, value: &Value) -> Vec<u8> {
    let mut any = Vec::new();
    match value {
        Value::Text(text) => bytes_field(&mut any, 1, text.as_bytes()),
        Value::Int(number) => varint_field(&mut any, 3, *number as u64),
        Value::Float(number) => {
            varint(&mut any, (4 << 3) | 1);
            any.extend_from_slice(&number.to_le_bytes());
        }
    }
    let mut out = Vec::new();
    bytes_field(&mut out, 1, key.as_bytes());
    bytes_field(&mut out, 2, &any);
    out
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn varint_field(out: &mut Vec<u8>, field: u64, value: u64) {
    varint(out, field << 3);
    varint(out, value);
}

fn bytes_field(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    varint(out, (field << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn fixed64_field(out: &mut Vec<u8>, field: u64, value: u64) {
    varint(out, (field << 3) | 1);
    out.extend_from_slice(&value.to_le_bytes());
}

/// The OTLP/JSON mapping of the same request: ids in hex, 64-bit integers as strings.
pub(crate) fn encode_json(settings: &Settings, context: &TraceContext, spans: &[Span]) -> String {
    let attributes = json_attributes;
    let spans: Vec<serde_json::Value> = spans
        .iter()
        .map(|span| {
            let mut json = serde_json::json!({
                "traceId": hex(&context.trace_id),
                "spanId": hex(&span.id),
                "name": span.name,
                "kind": 1,
                "startTimeUnixNano": span.start.to_string(),
                "endTimeUnixNano": span.end.max(span.start).to_string(),
                "attributes": attributes(&span.attributes),
                "status": match &span.error {
                    Some(message) => serde_json::json!({"code": 2, "message": message}),
                    None => serde_json::json!({"code": 1}),
                },
            });
            if let Some(parent) = span.parent {
                json["parentSpanId"] = serde_json::json!(hex(&parent));
            }
            json
        })
        .collect();
    serde_json::json!({"resourceSpans": [{
        "resource": {"attributes": attributes(&resource_attributes(settings))},
        "scopeSpans": [{"scope": {"name": "eden", "version": env!("CARGO_PKG_VERSION")}, "spans": spans}],
    }]})
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_follow_the_standard_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned())
        };
        assert!(Settings::from_env(&env(&[])).is_none());
        let base = Settings::from_env(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")])).unwrap();
        assert_eq!(base.endpoint, "http://collector:4318/v1/traces");
        let login = Settings::from_env(&|name| {
            (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "https://me:p%40ss@collector:4318".to_owned())
        })
        .unwrap();
        assert_eq!(login.endpoint, "https://collector:4318/v1/traces");
        assert_eq!(login.metrics.as_deref(), Some("https://collector:4318/v1/metrics"));
        assert_eq!(login.headers, [("Authorization".to_owned(), format!("Basic {}", base64(b"me:p@ss")))]);
        assert_eq!(base64(b"me:p@ss"), "bWU6cEBzcw==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(plain("eden.tool Bash\u{1b}[2J\r", 128), "eden.tool Bash\\u{1b}[2J\\u{d}");
        assert!(!base.json);
        let traces = Settings::from_env(&env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4318/custom"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=abc%3D,x=1"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci,team=ml"),
            ("OTEL_SERVICE_NAME", "agents"),
        ]))
        .unwrap();
        assert_eq!(traces.endpoint, "http://b:4318/custom");
        assert!(traces.json);
        assert_eq!(traces.headers, [("api-key".to_owned(), "abc=".to_owned()), ("x".to_owned(), "1".to_owned())]);
        assert_eq!(traces.service_name, "agents");
        assert_eq!(traces.resource[1], ("team".to_owned(), "ml".to_owned()));
        let off =
            Settings::from_env(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"), ("OTEL_SDK_DISABLED", "true")]));
        assert!(off.is_none());
    }

    #[test]
    fn traceparent_is_read_and_checked() {
        let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = TraceContext::of("run", Some(given));
        assert_eq!(hex(&context.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.parent.map(|p| hex(&p)).as_deref(), Some("00f067aa0ba902b7"));
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-XYZ-1-01",
        ] {
            assert_eq!(TraceContext::of("run", Some(bad)).parent, None, "{bad}");
        }
        assert_eq!(TraceContext::of("run", None), TraceContext::of("run", None), "the same run, the same trace");
    }

    #[test]
    fn protobuf_varints_and_fields() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        let mut out = Vec::new();
        bytes_field(&mut out, 5, b"hi");
        assert_eq!(out, [0x2a, 2, b'h', b'i']);
        let mut out = Vec::new();
        varint_field(&mut out, 3, (-1i64) as u64);
        assert_eq!(out.len(), 11, "a negative int64 is ten bytes");
    }
}
