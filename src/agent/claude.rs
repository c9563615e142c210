//! Claude Code: `claude -p --output-format stream-json --verbose`, prompt on stdin. One
//! `assistant` line per content block, `user` lines with tool results, a final `result` line
//! with the totals (and `is_error` for failures the CLI reports on stdout, exit code 1).

use super::stream::*;
use super::{AdapterSettings, Invocation, Parser};
use crate::process::{ProcessBuilder, Stdin};
use serde_json::Value;
use std::borrow::Cow;

pub fn command(settings: &AdapterSettings, invocation: &Invocation<'_>) -> ProcessBuilder {
    let mut command = ProcessBuilder::new(&settings.binary).args([
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
    ]);
    if let Some(model) = &settings.model {
        command = command.args(["--model", model]);
    }
    if let Some(effort) = &settings.effort {
        command = command.args(["--effort", effort]);
    }
    if let Some(session) = invocation.resume.or(settings.resume.as_deref()) {
        command = command.args(["--resume", session]);
    }
    command = command.args(&settings.extra_args);
    // As root, Claude refuses to skip permissions unless told it is sandboxed.
    if nix::unistd::geteuid().is_root() {
        command = command.env("IS_SANDBOX", "1");
    }
    command.stdin(Stdin::Bytes(invocation.prompt.as_bytes().to_vec()))
}

#[derive(Default)]
pub struct ClaudeParser;

impl Parser for ClaudeParser {
    fn parse_line(&mut self, line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>)) {
        let Some(value) = json_object(line) else { return emit(passthrough(line)) };
        parse_claude_like(&value, emit);
    }
}

/// Shared with Cursor, whose stream copies Claude's shapes.
pub fn parse_claude_like(value: &Value, emit: &mut dyn FnMut(StreamEvent<'_>)) {
    let subagent = value.get("parent_tool_use_id").is_some_and(|p| !p.is_null());
    match str_at(value, "/type").unwrap_or("") {
        "system" => {
            if let Some(id) = str_at(value, "/session_id") {
                emit(StreamEvent::SessionId(id.to_owned()));
            }
        }
        "assistant" => {
            // A synthetic error message precedes an error `result`; the result carries it.
            if value.get("error").is_some() {
                return;
            }
            for block in value.pointer("/message/content").and_then(Value::as_array).into_iter().flatten() {
                match str_at(block, "/type") {
                    Some("text") => {
                        let text = str_at(block, "/text").unwrap_or("");
                        emit(StreamEvent::Text { text: Cow::Borrowed(text), continues: false, subagent });
                    }
                    Some("tool_use") => emit(StreamEvent::ToolCall {
                        name: str_at(block, "/name").unwrap_or("tool").to_owned(),
                        summary: tool_summary(block.get("input").unwrap_or(&Value::Null)),
                        subagent,
                    }),
                    _ => {}
                }
            }
        }
        "user" => {
            for block in value.pointer("/message/content").and_then(Value::as_array).into_iter().flatten() {
                if str_at(block, "/type") == Some("tool_result") {
                    let failed = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    emit(StreamEvent::ToolResult { name: None, ok: !failed });
                }
            }
        }
        "result" => {
            if let Some(id) = str_at(value, "/session_id") {
                emit(StreamEvent::SessionId(id.to_owned()));
            }
            if let Some(usage) = value.get("usage") {
                emit(StreamEvent::Usage {
                    usage: Usage {
                        input_tokens: u64_at(usage, "/input_tokens"),
                        output_tokens: u64_at(usage, "/output_tokens"),
                        cache_read_tokens: u64_at(usage, "/cache_read_input_tokens"),
                        cache_write_tokens: u64_at(usage, "/cache_creation_input_tokens"),
                        cost_usd: value.get("total_cost_usd").and_then(Value::as_f64),
                    },
                    mode: UsageMode::Total,
                });
            }
            let text = str_at(value, "/result").unwrap_or("");
            if value.get("is_error").and_then(Value::as_bool).unwrap_or(false) {
                let status = value.get("api_error_status").and_then(Value::as_u64);
                let message = if text.is_empty() { str_at(value, "/subtype").unwrap_or("error") } else { text };
                emit(StreamEvent::Error { message: message.to_owned(), kind: FailureKind::classify(status, message) });
            } else if !text.is_empty() {
                emit(StreamEvent::FinalResult(text.to_owned()));
            }
        }
        _ => {}
    }
}
