//! Cursor's `agent --print --output-format stream-json`: Claude's line shapes plus `tool_call`
//! lines (`started`/`completed`, the call keyed by its kind, e.g. `shellToolCall`). Not on npm;
//! tested with recorded lines and a fake binary.

use super::claude::parse_claude_line;
use super::facts::Ui;
use super::stream::*;
use super::{AdapterSettings, Invocation, Parser};
use crate::process::ProcessBuilder;
use serde_json::Value;

pub(crate) fn command(settings: &AdapterSettings, invocation: &Invocation<'_>) -> ProcessBuilder {
    let command = ProcessBuilder::new(&settings.binary).args(["--print", "--output-format", "stream-json", "--force"]);
    command
        .option("--model", settings.model.as_deref())
        .option("--resume", invocation.resume.or(settings.resume.as_deref()))
        .args(&settings.extra_args)
        .arg(invocation.prompt)
}

/// Its own UI (`eden interactive`).
pub(crate) fn interactive(command: ProcessBuilder, ui: &Ui<'_>) -> (ProcessBuilder, Option<&'static str>) {
    let command = command.option("--model", ui.model).option("--resume", ui.resume);
    (if ui.bypass { command.arg("--force") } else { command }, None)
}

#[derive(Default)]
pub(crate) struct CursorParser;

impl Parser for CursorParser {
    fn parse_line(&mut self, line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>)) {
        if memchr::memmem::find(line, b"\"tool_call\"").is_none() {
            return parse_claude_line(line, emit);
        }
        let Some(value) = json_object(line) else { return emit(passthrough(line)) };
        if str_at(&value, "/type") != Some("tool_call") {
            return parse_claude_line(line, emit);
        }
        // { "shellToolCall": { "args": {...}, "result": {...} } }
        let Some((kind, call)) = value.get("tool_call").and_then(Value::as_object).and_then(|o| o.iter().next()) else {
            return;
        };
        let name = kind.strip_suffix("ToolCall").unwrap_or(kind).to_owned();
        match str_at(&value, "/subtype") {
            Some("started") => emit(StreamEvent::ToolCall {
                name,
                summary: tool_summary(call.get("args").unwrap_or(&Value::Null)),
                subagent: false,
            }),
            Some("completed") => {
                let failed = at(call, "/result/error").is_some()
                    || at(call, "/result/success").and_then(Value::as_bool) == Some(false);
                emit(StreamEvent::ToolResult { name: Some(name), ok: !failed, reason: None });
            }
            _ => {}
        }
    }
}
