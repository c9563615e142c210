//! GitHub Copilot CLI: `copilot -p <prompt> --output-format json --allow-all-tools` (prompt on
//! argv). Lines carry `type` and `data`: complete `assistant.message`s, `tool.execution_*`,
//! `session.error` for failures, and a final `result` with the session id (no token counts).

use super::facts::{dirs, modified_last, Found, NotFound, Store, Ui};
use super::stream::*;
use super::{AdapterSettings, Invocation, Parser};
use crate::process::ProcessBuilder;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

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

/// Its own UI (`eden interactive`): the first message by `-i`.
pub(crate) fn interactive(command: ProcessBuilder, ui: &Ui<'_>) -> (ProcessBuilder, Option<&'static str>) {
    let command = command.option("--model", ui.model).option("--resume", ui.resume);
    (if ui.bypass { command.arg("--allow-all-tools") } else { command }, Some("-i"))
}

/// Its transcripts: `session-state/<id>/events.jsonl`. Its sessions are not moved: it keeps
/// more than the transcript in its session state.
pub(crate) const TRANSCRIPTS: Store =
    Store { locate: locate_transcript, newest: newest_transcript, transfer: None, resumes_from: None };

fn locate_transcript(state: &Path, session_id: &str, _cwd: &Path) -> Result<Found, NotFound> {
    let dir = state.join("session-state");
    [dir.join(session_id).join("events.jsonl"), dir.join(format!("{session_id}.jsonl"))]
        .into_iter()
        .find(|path| path.is_file())
        .map(Found::alone)
        .ok_or_else(|| NotFound { tried: dir.join(session_id).join("events.jsonl").display().to_string() })
}

fn newest_transcript(state: &Path, _cwd: &Path, since: SystemTime) -> Option<(String, PathBuf)> {
    let events = dirs(&state.join("session-state")).into_iter().map(|dir| dir.join("events.jsonl"));
    let path = modified_last(events.filter(|p| p.is_file()).collect(), since)?;
    Some((path.parent()?.file_name()?.to_string_lossy().into_owned(), path))
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
