//! pi: `pi -p --mode json ... <prompt>` (prompt on argv). `session` first (the only line with
//! the id); assistant `message_end` lines carry the complete text and per-message usage, and
//! `stopReason: "error"` with `errorMessage` for failures — pi exits 0 even then.

use super::credentials::{ConfigFile, ConfigFront, CredentialHeader, FrontQuery, NotHeld, RELAY_URL_MARK};
use super::facts::{self, dirs, find_by_suffix, jsonl, modified_last, Found, NotFound, Store, Ui};
use super::stream::*;
use super::{AdapterSettings, Invocation, Parser};
use crate::process::ProcessBuilder;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub(crate) fn command(settings: &AdapterSettings, invocation: &Invocation<'_>) -> ProcessBuilder {
    let command = ProcessBuilder::new(&settings.binary).args(["-p", "--mode", "json"]);
    with_model(command, settings.model.as_deref())
        .option("--session", invocation.resume.or(settings.resume.as_deref()))
        .args(&settings.extra_args)
        .arg(invocation.prompt)
}

/// `provider/model` selects both.
fn with_model(command: ProcessBuilder, model: Option<&str>) -> ProcessBuilder {
    match model.map(|model| (model, model.split_once('/'))) {
        None => command,
        Some((_, Some((provider, model)))) => command.args(["--provider", provider, "--model", model]),
        Some((model, None)) => command.args(["--model", model]),
    }
}

/// Its own UI (`eden interactive`).
pub(crate) fn interactive(command: ProcessBuilder, ui: &Ui<'_>) -> (ProcessBuilder, Option<&'static str>) {
    (with_model(command, ui.model).option("--session", ui.resume), None)
}

/// Its transcripts: `sessions/--<cwd>--/<time>_<id>.jsonl`. It finds a session by its id.
pub(crate) const TRANSCRIPTS: Store =
    Store { locate: locate_transcript, newest: newest_transcript, transfer: Some(transfer_target), resumes_from: None };

/// Its session folder for a working directory: `--<path without its leading / , / as ->--`.
pub(crate) fn folder(cwd: &Path) -> String {
    let path = cwd.to_string_lossy();
    format!("--{}--", path.trim_start_matches('/').replace('/', "-"))
}

fn locate_transcript(state: &Path, session_id: &str, _cwd: &Path) -> Result<Found, NotFound> {
    let sessions = state.join("sessions");
    let suffix = format!("_{session_id}.jsonl");
    find_by_suffix(dirs(&sessions), &suffix)
        .map(Found::alone)
        .ok_or_else(|| NotFound { tried: format!("{}/*/*{suffix}", sessions.display()) })
}

fn newest_transcript(state: &Path, cwd: &Path, since: SystemTime) -> Option<(String, PathBuf)> {
    let path = modified_last(jsonl(&state.join("sessions").join(folder(cwd))), since)?;
    let name = facts::stem(&path);
    Some((name.rsplit_once('_').map_or(name.clone(), |(_, id)| id.to_owned()), path))
}

/// A moved session keeps its own file name (a captured copy's is rebuilt), in the folder of
/// its new working directory.
fn transfer_target(state: &Path, session_id: &str, cwd: &Path, file_name: &str) -> PathBuf {
    let file = if file_name.contains(&format!("_{session_id}")) {
        file_name.to_owned()
    } else {
        let now = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        format!("{}_{session_id}.jsonl", now.trim_end_matches('Z').replace([':', '.'], "-"))
    };
    state.join("sessions").join(folder(cwd)).join(file)
}

/// pi's built-in providers whose API eden knows: the variable its key is read from, and its
/// base URL.
const BUILT_IN: &[(&str, &str, &str)] = &[
    ("anthropic", "ANTHROPIC_API_KEY", "https://api.anthropic.com"),
    ("openai", "OPENAI_API_KEY", "https://api.openai.com/v1"),
];

/// The provider pi will use for the run, and how to hold its key: pi takes its key from
/// `auth.json`, else the provider's variable, else what `models.json` names; its base URL from
/// `models.json`, else the built-in one. eden points it at the relay through the run's private
/// `models.json` (the person's, with the provider's `baseUrl` replaced).
pub(crate) fn front(query: &FrontQuery<'_>) -> Result<ConfigFront, NotHeld> {
    let Some(dir) = query.folders.first() else { return Err(NotHeld::from("its folder is unknown")) };
    let provider = provider(query, dir)?;
    if query.extra_args.iter().any(|arg| arg == "--api-key" || arg.starts_with("--api-key=")) {
        return Err(NotHeld::from("its key is on its command line (`--api-key` in `agent.args`)"));
    }
    let read = |name: &str| -> Result<Value, NotHeld> {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|err| NotHeld(format!("its `{}` is not JSON eden can read: {err}", dir.join(name).display()))),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Value::Object(Default::default())),
            Err(err) => Err(NotHeld::from(format!("cannot read its `{}`: {err}", dir.join(name).display()))),
        }
    };
    if read("auth.json")?.get(&provider).is_some() {
        return Err(NotHeld::from(format!(
            "it has a login for `{provider}` in its `{}`, which eden does not hold",
            dir.join("auth.json").display()
        )));
    }
    if provider == "anthropic" && (query.env)("ANTHROPIC_OAUTH_TOKEN").is_some_and(|token| !token.is_empty()) {
        return Err(NotHeld::from("it uses `ANTHROPIC_OAUTH_TOKEN`, a login, which eden does not hold"));
    }
    let mut models = read("models.json")?;
    let configured = models.pointer(&format!("/providers/{}", provider.replace('~', "~0").replace('/', "~1")));
    let built_in = BUILT_IN.iter().find(|(name, _, _)| *name == provider);
    let mut key_vars: Vec<String> = built_in.map(|(_, var, _)| (*var).to_owned()).into_iter().collect();
    if let Some(key) = configured.and_then(|entry| entry.get("apiKey")).and_then(Value::as_str) {
        let named = !key.is_empty() && key.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        if !named {
            return Err(NotHeld::from(format!(
                "its `models.json` gives `{provider}` a key of its own (`apiKey`), not a variable's name"
            )));
        }
        key_vars.push(key.to_owned());
    }
    let upstream = configured.and_then(|entry| entry.get("baseUrl")).and_then(Value::as_str).map(str::to_owned);
    let Some(upstream) = upstream.or_else(|| built_in.map(|(_, _, url)| (*url).to_owned())) else {
        return Err(NotHeld::from(format!(
            "eden knows the API of its `anthropic` and `openai` providers and of those its `models.json` gives a `baseUrl`, not `{provider}`'s"
        )));
    };
    let providers = models.get("providers");
    let shaped = models.is_object()
        && providers.is_none_or(Value::is_object)
        && providers.and_then(|all| all.get(&provider)).is_none_or(Value::is_object);
    if !shaped {
        return Err(NotHeld::from("its `models.json` is not shaped as pi documents it (`providers` of objects)"));
    }
    models["providers"][&provider]["baseUrl"] = Value::String(RELAY_URL_MARK.into());
    let template = serde_json::to_string_pretty(&models).unwrap_or_default();
    Ok(ConfigFront {
        key_vars,
        header: CredentialHeader::Either,
        upstream,
        config: ConfigFile { var: "PI_CODING_AGENT_DIR", file: Some("models.json"), template },
    })
}

/// The model's provider (`provider/model`), else `--provider`, else `defaultProvider` in its
/// `settings.json`.
fn provider(query: &FrontQuery<'_>, dir: &std::path::Path) -> Result<String, NotHeld> {
    if let Some((provider, _)) = query.model.and_then(|model| model.split_once('/')) {
        return Ok(provider.to_owned());
    }
    let args = query.extra_args;
    if let Some(at) = args.iter().position(|arg| arg == "--provider") {
        if let Some(provider) = args.get(at + 1) {
            return Ok(provider.clone());
        }
    }
    let settings: Option<Value> =
        std::fs::read_to_string(dir.join("settings.json")).ok().and_then(|text| serde_json::from_str(&text).ok());
    settings
        .as_ref()
        .and_then(|settings| settings.get("defaultProvider"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| "its provider is not named: set `agent.model = \"provider/model\"`".into())
}

#[derive(Default)]
pub(crate) struct PiParser;

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

#[cfg(test)]
mod tests {
    use super::*;

    /// `front` for `model` with pi's folder `dir` and the agent's environment `vars`.
    fn front_in(dir: &std::path::Path, model: Option<&str>, vars: &[(&str, &str)]) -> Result<ConfigFront, NotHeld> {
        let env = |key: &str| vars.iter().find(|(name, _)| *name == key).map(|(_, value)| (*value).to_owned());
        front(&FrontQuery { model, extra_args: &[], env: &env, folders: &[dir.to_owned()], project: None })
    }

    #[test]
    fn its_session_folder_is_the_directory_with_dashes() {
        assert_eq!(folder(Path::new("/tmp/a b/c")), "--tmp-a b-c--");
    }

    #[test]
    fn a_built_in_provider_is_pointed_at_the_relay_in_models_json() {
        let dir = tempfile::tempdir().unwrap();
        let front = front_in(dir.path(), Some("anthropic/claude-x"), &[]).unwrap();
        assert_eq!(front.upstream, "https://api.anthropic.com");
        assert_eq!(front.key_vars, ["ANTHROPIC_API_KEY"]);
        let models: Value = serde_json::from_str(&front.config.template).unwrap();
        assert_eq!(models["providers"]["anthropic"]["baseUrl"], RELAY_URL_MARK);
    }

    #[test]
    fn the_persons_models_json_gives_the_upstream_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let models = r#"{"providers":{"gw":{"baseUrl":"https://gw.example/v1","api":"openai-completions","apiKey":"GW_KEY","models":[{"id":"m"}]},"other":{"baseUrl":"http://x"}}}"#;
        std::fs::write(dir.path().join("models.json"), models).unwrap();
        let front = front_in(dir.path(), Some("gw/m"), &[]).unwrap();
        assert_eq!(front.upstream, "https://gw.example/v1");
        assert_eq!(front.key_vars, ["GW_KEY"]);
        let written: Value = serde_json::from_str(&front.config.template).unwrap();
        assert_eq!(written["providers"]["gw"]["baseUrl"], RELAY_URL_MARK);
        assert_eq!(written["providers"]["gw"]["models"][0]["id"], "m");
        assert_eq!(written["providers"]["other"]["baseUrl"], "http://x");
    }

    #[test]
    fn what_eden_cannot_hold_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let why = |model: Option<&str>, vars: &[(&str, &str)]| front_in(dir.path(), model, vars).unwrap_err().0;
        assert!(why(None, &[]).contains("not named"), "{}", why(None, &[]));
        assert!(why(Some("google/gemini"), &[]).contains("not `google`'s"));
        assert!(why(Some("anthropic/x"), &[("ANTHROPIC_OAUTH_TOKEN", "t")]).contains("login"));
        std::fs::write(
            dir.path().join("models.json"),
            r#"{"providers":{"gw":{"baseUrl":"https://gw","apiKey":"sk-literal"}}}"#,
        )
        .unwrap();
        assert!(why(Some("gw/m"), &[]).contains("key of its own"));
        std::fs::write(dir.path().join("models.json"), r#"{"providers":[]}"#).unwrap();
        assert!(why(Some("anthropic/x"), &[]).contains("not shaped"));
        std::fs::write(dir.path().join("models.json"), "{").unwrap();
        assert!(why(Some("anthropic/x"), &[]).contains("not JSON"));
        std::fs::remove_file(dir.path().join("models.json")).unwrap();
        std::fs::write(dir.path().join("auth.json"), r#"{"anthropic":{"type":"oauth"}}"#).unwrap();
        assert!(why(Some("anthropic/x"), &[]).contains("has a login for `anthropic`"));
        std::fs::write(dir.path().join("settings.json"), r#"{"defaultProvider":"openai"}"#).unwrap();
        assert_eq!(front_in(dir.path(), None, &[]).unwrap().upstream, "https://api.openai.com/v1");
    }
}
