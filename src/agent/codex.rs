//! Codex: `codex exec --json ... -`, prompt on stdin. Items (`agent_message`,
//! `command_execution`, `file_change`, ...) start and complete; `turn.completed` carries usage
//! (cached tokens are part of the input count); `turn.failed` is the failure.

use super::facts::{dirs, files, jsonl, modified_last, newest_first, Found, NotFound, Store, Ui};
use super::stream::*;
use super::{AdapterSettings, Invocation, Parser};
use crate::process::{ProcessBuilder, Stdin};
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Why eden cannot hold Codex's key: it is logged in (`auth.json`, from `codex login`), which
/// it may use rather than the key, and which the sandbox gets as before; or its `config.toml`
/// chooses a provider or base URL of its own (`model_provider`, `openai_base_url`), so the key
/// would go where eden does not send it.
pub(crate) fn configured_provider(home: &std::path::Path) -> Option<String> {
    if home.join("auth.json").exists() {
        return Some(format!(
            "it is logged in (`{}`, from `codex login`) and may use that rather than a key; eden does not hold that login",
            home.join("auth.json").display()
        ));
    }
    let config = std::fs::read_to_string(home.join("config.toml")).ok()?;
    let set = config
        .lines()
        .map(str::trim_start)
        .take_while(|line| !line.starts_with('['))
        .find_map(|line| ["model_provider", "openai_base_url"].into_iter().find(|key| line.starts_with(key)))?;
    Some(format!(
        "its `{}` sets `{set}`; eden holds keys for its built-in OpenAI provider only",
        home.join("config.toml").display()
    ))
}

pub(crate) fn command(settings: &AdapterSettings, invocation: &Invocation<'_>) -> ProcessBuilder {
    let mut command = ProcessBuilder::new(&settings.binary).arg("exec");
    if let Some(session) = invocation.resume.or(settings.resume.as_deref()) {
        command = command.args(["resume", session]);
    }
    command = command.args(["--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"]);
    command = command.option("-m", settings.model.as_deref());
    if let Some(effort) = &settings.effort {
        command = command.args(["-c", &format!("model_reasoning_effort=\"{effort}\"")]);
    }
    command.args(&settings.extra_args).arg("-").stdin(Stdin::Bytes(invocation.prompt.as_bytes().to_vec()))
}

/// Its own UI (`eden interactive`): a session to resume is a subcommand.
pub(crate) fn interactive(mut command: ProcessBuilder, ui: &Ui<'_>) -> (ProcessBuilder, Option<&'static str>) {
    if let Some(session) = ui.resume {
        command = command.args(["resume", session]);
    }
    command = command.option("--model", ui.model);
    if ui.bypass {
        command = command.arg("--dangerously-bypass-approvals-and-sandbox");
    }
    (command, None)
}

/// Its transcripts: `sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, newest day first, the
/// first line a `session_meta` naming the id. It finds a session by its id anywhere there.
pub(crate) const TRANSCRIPTS: Store =
    Store { locate: locate_transcript, newest: newest_transcript, transfer: Some(transfer_target), resumes_from: None };

fn locate_transcript(state: &Path, session_id: &str, _cwd: &Path) -> Result<Found, NotFound> {
    let sessions = state.join("sessions");
    let suffix = format!("-{session_id}.jsonl");
    let mut days: Vec<PathBuf> = Vec::new();
    for year in newest_first(dirs(&sessions)) {
        for month in newest_first(dirs(&year)) {
            days.extend(newest_first(dirs(&month)));
        }
    }
    days.into_iter()
        .flat_map(files)
        .find(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("rollout-") && name.ends_with(&suffix) && meta_names(path, session_id)
        })
        .map(Found::alone)
        .ok_or_else(|| NotFound { tried: format!("{}/YYYY/MM/DD/rollout-*{suffix}", sessions.display()) })
}

/// The newest rollout of the latest two days, and the id its `session_meta` names.
fn newest_transcript(state: &Path, _cwd: &Path, since: SystemTime) -> Option<(String, PathBuf)> {
    let mut days = Vec::new();
    for year in newest_first(dirs(&state.join("sessions"))).into_iter().take(1) {
        for month in newest_first(dirs(&year)).into_iter().take(1) {
            days.extend(newest_first(dirs(&month)).into_iter().take(2));
        }
    }
    let path = modified_last(days.iter().flat_map(|day| jsonl(day)).collect(), since)?;
    let meta = first_line_json(&path)?;
    let id = meta["payload"]["id"].as_str()?.to_owned();
    Some((id, path))
}

/// A moved session keeps its own file name (a captured copy's is rebuilt), filed under today.
fn transfer_target(state: &Path, session_id: &str, _cwd: &Path, file_name: &str) -> PathBuf {
    let today = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let (date, time) = (&today[..10], today[11..19].replace(':', "-"));
    let file = if file_name.starts_with("rollout-") {
        file_name.to_owned()
    } else {
        format!("rollout-{date}T{time}-{session_id}.jsonl")
    };
    state.join("sessions").join(&date[..4]).join(&date[5..7]).join(&date[8..10]).join(file)
}

/// The first line is `session_meta`; it must name the session (a file name alone could lie).
fn meta_names(path: &Path, session_id: &str) -> bool {
    let Some(meta) = first_line_json(path) else { return false };
    meta["type"] == "session_meta"
        && (meta["payload"]["id"] == session_id || meta["payload"]["session_id"] == session_id)
}

/// A rollout's first line (`session_meta`) as JSON, read no further than 1 MiB into the file.
fn first_line_json(path: &Path) -> Option<Value> {
    use std::io::{BufRead, Read};
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file).take(1 << 20).read_line(&mut first).ok()?;
    serde_json::from_str(&first).ok()
}

#[derive(Default)]
pub(crate) struct CodexParser;

impl Parser for CodexParser {
    fn parse_line(&mut self, line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>)) {
        let Some(value) = json_object(line) else { return emit(passthrough(line)) };
        match str_at(&value, "/type").unwrap_or("") {
            "thread.started" => {
                if let Some(id) = str_at(&value, "/thread_id") {
                    emit(StreamEvent::SessionId(id.to_owned()));
                }
            }
            kind @ ("item.started" | "item.completed") => {
                item(value.get("item").unwrap_or(&Value::Null), kind == "item.completed", emit);
            }
            "turn.completed" => {
                let usage = value.get("usage").unwrap_or(&Value::Null);
                let cached = u64_at(usage, "/cached_input_tokens");
                emit(StreamEvent::Usage {
                    usage: Usage {
                        input_tokens: u64_at(usage, "/input_tokens").saturating_sub(cached),
                        output_tokens: u64_at(usage, "/output_tokens"),
                        cache_read_tokens: cached,
                        cache_write_tokens: u64_at(usage, "/cache_write_input_tokens"),
                        cost_usd: None,
                    },
                    // After `codex exec resume`, these are running totals for the thread.
                    mode: UsageMode::SessionTotal,
                });
            }
            "turn.failed" => {
                let message = str_at(&value, "/error/message").unwrap_or("the turn failed");
                emit(StreamEvent::Error { message: message.to_owned(), kind: FailureKind::classify(None, message) });
            }
            // Retries ("Reconnecting... 1/5") and the like; a real failure ends in turn.failed.
            "error" => emit(StreamEvent::Notice(str_at(&value, "/message").unwrap_or("").to_owned())),
            _ => {}
        }
    }
}

/// An item of a turn, started or completed: the agent's message, a command, a file change, an
/// MCP tool call, a web search, an error.
fn item(item: &Value, completed: bool, emit: &mut dyn FnMut(StreamEvent<'_>)) {
    match (str_at(item, "/type").unwrap_or(""), completed) {
        ("agent_message", true) => {
            let text = str_at(item, "/text").unwrap_or("");
            emit(StreamEvent::Text { text: Cow::Borrowed(text), continues: false, subagent: false });
        }
        ("command_execution", false) => emit(StreamEvent::ToolCall {
            name: "Bash".into(),
            summary: one_line(&unwrap_shell(str_at(item, "/command").unwrap_or("")), 120),
            subagent: false,
        }),
        ("command_execution", true) => {
            let code = item.get("exit_code").and_then(Value::as_i64);
            let reason = (code != Some(0)).then(|| {
                let output = str_at(item, "/aggregated_output").unwrap_or("");
                let exit = code.map_or_else(|| "did not finish".to_owned(), |c| format!("exit {c}"));
                failure_reason(&format!("{exit}: {}", output.trim()))
            });
            emit(StreamEvent::ToolResult { name: Some("Bash".into()), ok: code == Some(0), reason })
        }
        ("file_change", false) => {
            let paths: Vec<&str> = item
                .get("changes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|change| str_at(change, "/path"))
                .collect();
            emit(StreamEvent::ToolCall { name: "Edit".into(), summary: paths.join(", "), subagent: false });
        }
        ("file_change", true) => emit(StreamEvent::ToolResult {
            name: Some("Edit".into()),
            ok: str_at(item, "/status") == Some("completed"),
            reason: None,
        }),
        ("mcp_tool_call", false) => emit(StreamEvent::ToolCall {
            name: str_at(item, "/tool").unwrap_or("mcp").to_owned(),
            summary: tool_summary(item.get("arguments").unwrap_or(&Value::Null)),
            subagent: false,
        }),
        ("web_search", false) => emit(StreamEvent::ToolCall {
            name: "WebSearch".into(),
            summary: one_line(str_at(item, "/query").unwrap_or(""), 120),
            subagent: false,
        }),
        ("error", true) => emit(StreamEvent::Notice(str_at(item, "/message").unwrap_or("").to_owned())),
        _ => {}
    }
}

/// `/bin/bash -lc 'git commit -m x'` → `git commit -m x`.
fn unwrap_shell(command: &str) -> String {
    for prefix in ["/bin/bash -lc ", "bash -lc ", "/bin/sh -c ", "sh -c "] {
        if let Some(rest) = command.strip_prefix(prefix) {
            if let Some(words) = shlex::split(rest) {
                if words.len() == 1 {
                    return words[0].clone();
                }
            }
        }
    }
    command.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_of_its_own_in_config_toml_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(configured_provider(dir.path()), None, "no config.toml");
        std::fs::write(dir.path().join("config.toml"), "model = \"gpt-5.5\"\n[profiles.x]\nmodel_provider = \"y\"\n")
            .unwrap();
        assert_eq!(configured_provider(dir.path()), None, "a profile's own setting is not the top level's");
        std::fs::write(dir.path().join("config.toml"), "model_provider = \"mock\"\n").unwrap();
        assert!(configured_provider(dir.path()).unwrap().contains("sets `model_provider`"));
        std::fs::write(dir.path().join("config.toml"), "openai_base_url = \"https://gw\"\n").unwrap();
        assert!(configured_provider(dir.path()).unwrap().contains("sets `openai_base_url`"));
        std::fs::write(dir.path().join("auth.json"), "{}").unwrap();
        assert!(configured_provider(dir.path()).unwrap().contains("logged in"));
    }
}
