//! GitHub Copilot CLI: `copilot -p <prompt> --output-format json --allow-all-tools` (prompt on
//! argv). Lines carry `type` and `data`: complete `assistant.message`s, `tool.execution_*`,
//! `session.error` for failures, and a final `result` with the session id (no token counts).

use super::stream::*;
use super::{AdapterSettings, Invocation, Parser};
use crate::process::ProcessBuilder;
use serde_json::Value;
use std::borrow::Cow;

pub(crate) fn command(settings: &AdapterSettings, invocation: &Invocation<'_>) -> ProcessBuilder {
    let command = ProcessBuilder::new(&settings.binary).args(["-p", invocation.prompt]).args([
        "--output-format",
        "json",
        "--allow-all-tools",
    ]);
    command
        .option("--model", settings.model.as_deref())
        .option("--resume", invocation.resume.or(settings.resume.as_deref()))
        .args(&settings.extra_args)
}

#[derive(Default)]
pub(crate) struct CopilotParser;

impl Parser for CopilotParser {
    fn parse_line(&mut self, line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>)) {
        let Some(value) = json_object(line) else { return emit(passthrough(line)) };
        let data = value.get("data").unwrap_or(&Value::Null);
        match str_at(&value, "/type").unwrap_or("") {
            "assistant.message" => {
                let text = str_at(data, "/content").unwrap_or("");
                if !text.is_empty() {
                    emit(StreamEvent::Text { text: Cow::Borrowed(text), continues: false, subagent: false });
                }
            }
            "tool.execution_start" => emit(StreamEvent::ToolCall {
                name: str_at(data, "/toolName").unwrap_or("tool").to_owned(),
                summary: tool_summary(data.get("arguments").unwrap_or(&Value::Null)),
                subagent: false,
            }),
            "tool.execution_complete" => emit(StreamEvent::ToolResult {
                name: None,
                ok: data.get("success").and_then(Value::as_bool).unwrap_or(false),
                reason: None,
            }),
            "session.error" => {
                let message = str_at(data, "/message").unwrap_or("the session failed");
                let status = data.get("statusCode").and_then(Value::as_u64);
                let kind = match str_at(data, "/errorType") {
                    Some("authentication") => FailureKind::Authentication,
                    Some("rate_limit") => FailureKind::RateLimit,
                    _ => FailureKind::classify(status, message),
                };
                emit(StreamEvent::Error { message: one_line(message, 400), kind });
            }
            "session.info" if str_at(data, "/infoType") == Some("model_retry") => {
                emit(StreamEvent::Notice(str_at(data, "/message").unwrap_or("").to_owned()));
            }
            "result" => {
                if let Some(id) = str_at(&value, "/sessionId") {
                    emit(StreamEvent::SessionId(id.to_owned()));
                }
            }
            _ => {}
        }
    }
}
