//! opencode: `opencode run --format json ... <prompt>` (prompt on argv). Lines carry a
//! `sessionID` and a `part`: `text`, `tool_use` (with its state), `step_finish` with the step's
//! tokens and cost, and `error`.

use super::stream::*;
use super::{AdapterSettings, Invocation, Parser};
use crate::process::ProcessBuilder;
use serde_json::Value;
use std::borrow::Cow;

pub fn command(settings: &AdapterSettings, invocation: &Invocation<'_>) -> ProcessBuilder {
    // `--auto` approves tool permissions: nobody is there to answer prompts.
    let command = ProcessBuilder::new(&settings.binary).args(["run", "--format", "json", "--auto"]);
    command
        .option("--model", settings.model.as_deref())
        .option("--variant", settings.effort.as_deref())
        .option("--session", invocation.resume.or(settings.resume.as_deref()))
        .args(&settings.extra_args)
        .arg(invocation.prompt)
}

#[derive(Default)]
pub struct OpencodeParser {
    session_reported: bool,
}

impl Parser for OpencodeParser {
    fn parse_line(&mut self, line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>)) {
        let Some(value) = json_object(line) else { return emit(passthrough(line)) };
        if !self.session_reported {
            if let Some(id) = str_at(&value, "/sessionID") {
                self.session_reported = true;
                emit(StreamEvent::SessionId(id.to_owned()));
            }
        }
        let part = value.get("part").unwrap_or(&Value::Null);
        match str_at(&value, "/type").unwrap_or("") {
            "text" => {
                let text = str_at(part, "/text").unwrap_or("");
                emit(StreamEvent::Text { text: Cow::Borrowed(text), continues: false, subagent: false });
            }
            "tool_use" => {
                let name = str_at(part, "/tool").unwrap_or("tool").to_owned();
                let status = str_at(part, "/state/status").unwrap_or("");
                emit(StreamEvent::ToolCall {
                    name: name.clone(),
                    summary: tool_summary(at(part, "/state/input").unwrap_or(&Value::Null)),
                    subagent: false,
                });
                if matches!(status, "completed" | "error") {
                    let reason =
                        (status == "error").then(|| str_at(part, "/state/error").map(failure_reason)).flatten();
                    emit(StreamEvent::ToolResult { name: Some(name), ok: status == "completed", reason });
                }
            }
            "step_finish" => {
                let tokens = part.get("tokens").unwrap_or(&Value::Null);
                emit(StreamEvent::Usage {
                    usage: Usage {
                        input_tokens: u64_at(tokens, "/input"),
                        output_tokens: u64_at(tokens, "/output") + u64_at(tokens, "/reasoning"),
                        cache_read_tokens: u64_at(tokens, "/cache/read"),
                        cache_write_tokens: u64_at(tokens, "/cache/write"),
                        cost_usd: part.get("cost").and_then(Value::as_f64),
                    },
                    mode: UsageMode::Add,
                });
            }
            "error" => {
                let error = value.get("error").unwrap_or(&Value::Null);
                let message = str_at(error, "/data/message").or_else(|| str_at(error, "/name")).unwrap_or("error");
                let status = at(error, "/data/statusCode").and_then(Value::as_u64);
                emit(StreamEvent::Error { message: message.to_owned(), kind: FailureKind::classify(status, message) });
            }
            _ => {}
        }
    }
}
