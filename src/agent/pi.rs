//! pi: `pi -p --mode json ... <prompt>` (prompt on argv). `session` first (the only line with
//! the id); assistant `message_end` lines carry the complete text and per-message usage, and
//! `stopReason: "error"` with `errorMessage` for failures — pi exits 0 even then.

use super::stream::*;
use super::{AdapterSettings, Invocation, Parser};
use crate::process::ProcessBuilder;
use serde_json::Value;
use std::borrow::Cow;

pub fn command(settings: &AdapterSettings, invocation: &Invocation<'_>) -> ProcessBuilder {
    let mut command = ProcessBuilder::new(&settings.binary).args(["-p", "--mode", "json"]);
    if let Some(model) = &settings.model {
        // `provider/model` selects both.
        match model.split_once('/') {
            Some((provider, model)) => command = command.args(["--provider", provider, "--model", model]),
            None => command = command.args(["--model", model]),
        }
    }
    command
        .option("--session", invocation.resume.or(settings.resume.as_deref()))
        .args(&settings.extra_args)
        .arg(invocation.prompt)
}

#[derive(Default)]
pub struct PiParser;

impl Parser for PiParser {
    fn parse_line(&mut self, line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>)) {
        let Some(value) = json_object(line) else { return emit(passthrough(line)) };
        match str_at(&value, "/type").unwrap_or("") {
            "session" => {
                if let Some(id) = str_at(&value, "/id") {
                    emit(StreamEvent::SessionId(id.to_owned()));
                }
            }
            "message_end" => {
                let message = value.get("message").unwrap_or(&Value::Null);
                if str_at(message, "/role") != Some("assistant") {
                    return;
                }
                for block in message.get("content").and_then(Value::as_array).into_iter().flatten() {
                    if str_at(block, "/type") == Some("text") {
                        let text = str_at(block, "/text").unwrap_or("");
                        emit(StreamEvent::Text { text: Cow::Borrowed(text), continues: false, subagent: false });
                    }
                }
                if let Some(usage) = message.get("usage") {
                    emit(StreamEvent::Usage {
                        usage: Usage {
                            input_tokens: u64_at(usage, "/input"),
                            output_tokens: u64_at(usage, "/output"),
                            cache_read_tokens: u64_at(usage, "/cacheRead"),
                            cache_write_tokens: u64_at(usage, "/cacheWrite"),
                            cost_usd: at(usage, "/cost/total").and_then(Value::as_f64),
                        },
                        mode: UsageMode::Add,
                    });
                }
                if str_at(message, "/stopReason") == Some("error") {
                    let reason = str_at(message, "/errorMessage").unwrap_or("the model call failed");
                    let message = one_line(reason, 400);
                    emit(StreamEvent::Error { kind: FailureKind::classify(None, &message), message });
                }
            }
            "tool_execution_start" => emit(StreamEvent::ToolCall {
                name: str_at(&value, "/toolName").unwrap_or("tool").to_owned(),
                summary: tool_summary(value.get("args").unwrap_or(&Value::Null)),
                subagent: false,
            }),
            "tool_execution_end" => {
                let failed = value.get("isError").and_then(Value::as_bool).unwrap_or(false);
                let reason = failed.then(|| failure_reason(&result_text(value.get("result").unwrap_or(&Value::Null))));
                emit(StreamEvent::ToolResult {
                    name: str_at(&value, "/toolName").map(str::to_owned),
                    ok: !failed,
                    reason,
                })
            }
            _ => {}
        }
    }
}
