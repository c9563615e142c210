//! opencode: `opencode run --format json ... <prompt>` (prompt on argv). Lines carry a
//! `sessionID` and a `part`: `text`, `tool_use` (with its state), `step_finish` with the step's
//! tokens and cost, and `error`.

use super::credentials::{ConfigFile, ConfigFront, CredentialHeader, FrontQuery, NotHeld, RELAY_URL_MARK};
use super::facts::Ui;
use super::stream::*;
use super::{AdapterSettings, Invocation, Parser};
use crate::process::ProcessBuilder;
use serde_json::Value;
use std::borrow::Cow;

pub(crate) fn command(settings: &AdapterSettings, invocation: &Invocation<'_>) -> ProcessBuilder {
    // `--auto` approves tool permissions: nobody is there to answer prompts.
    let command = ProcessBuilder::new(&settings.binary).args(["run", "--format", "json", "--auto"]);
    command
        .option("--model", settings.model.as_deref())
        .option("--variant", settings.effort.as_deref())
        .option("--session", invocation.resume.or(settings.resume.as_deref()))
        .args(&settings.extra_args)
        .arg(invocation.prompt)
}

/// Its own UI (`eden interactive`): the first message by `--prompt`.
pub(crate) fn interactive(command: ProcessBuilder, ui: &Ui<'_>) -> (ProcessBuilder, Option<&'static str>) {
    (command.option("--model", ui.model).option("--session", ui.resume), Some("--prompt"))
}

/// opencode's built-in providers whose API eden knows: the variable its key is read from, and
/// its base URL.
const BUILT_IN: &[(&str, &str, &str)] = &[
    ("anthropic", "ANTHROPIC_API_KEY", "https://api.anthropic.com/v1"),
    ("openai", "OPENAI_API_KEY", "https://api.openai.com/v1"),
];

/// The provider opencode will use for the run, and how to hold its key. opencode merges its
/// configuration from its folder, `OPENCODE_CONFIG`, the project's `opencode.json` and
/// `.opencode/`, then `OPENCODE_CONFIG_CONTENT`, the last one winning: eden reads them all for
/// the provider's `baseURL` and `apiKey`, and points it at the relay through
/// `OPENCODE_CONFIG_CONTENT` (the person's own, if any, with the provider's `baseURL` set).
pub(crate) fn front(query: &FrontQuery<'_>) -> Result<ConfigFront, NotHeld> {
    let [data, config_dir] = query.folders else { return Err(NotHeld::from("its folders are unknown")) };
    let mut files: Vec<std::path::PathBuf> =
        ["config.json", "opencode.json", "opencode.jsonc"].iter().map(|name| config_dir.join(name)).collect();
    files.extend((query.env)("OPENCODE_CONFIG").map(std::path::PathBuf::from));
    if let Some(project) = query.project {
        for name in ["opencode.json", "opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc"] {
            files.push(project.join(name));
        }
    }
    let mut layers = Vec::new();
    for path in &files {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                layers.push(parse_jsonc(&text).map_err(|err| format!("cannot read its `{}`: {err}", path.display()))?)
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(NotHeld::from(format!("cannot read its `{}`: {err}", path.display()))),
        }
    }
    let inline = (query.env)("OPENCODE_CONFIG_CONTENT").filter(|text| !text.trim().is_empty());
    let mut content = match &inline {
        Some(text) => parse_jsonc(text).map_err(|err| format!("its `OPENCODE_CONFIG_CONTENT` is not JSON: {err}"))?,
        None => Value::Object(Default::default()),
    };
    layers.push(content.clone());
    let last = |pointer: &str| layers.iter().rev().find_map(|layer| layer.pointer(pointer)).cloned();
    let provider = match query.model.and_then(|model| model.split_once('/')) {
        Some((provider, _)) => provider.to_owned(),
        None => match last("/model").as_ref().and_then(Value::as_str).and_then(|model| model.split_once('/')) {
            Some((provider, _)) => provider.to_owned(),
            None => return Err(NotHeld::from("its provider is not named: set `agent.model = \"provider/model\"`")),
        },
    };
    let auth: Option<Value> =
        std::fs::read_to_string(data.join("auth.json")).ok().and_then(|text| serde_json::from_str(&text).ok());
    if auth.as_ref().and_then(|auth| auth.get(&provider)).is_some() {
        return Err(NotHeld::from(format!(
            "it has a login for `{provider}` in its `{}`, which eden does not hold",
            data.join("auth.json").display()
        )));
    }
    let escaped = provider.replace('~', "~0").replace('/', "~1");
    let option = |name: &str| last(&format!("/provider/{escaped}/options/{name}"));
    let built_in = BUILT_IN.iter().find(|(name, _, _)| *name == provider);
    let mut key_vars: Vec<String> = built_in.map(|(_, var, _)| (*var).to_owned()).into_iter().collect();
    if let Some(key) = option("apiKey") {
        let named = key.as_str().and_then(|key| key.strip_prefix("{env:")).and_then(|key| key.strip_suffix('}'));
        match named {
            Some(var) => key_vars.push(var.to_owned()),
            None => {
                return Err(NotHeld::from(format!(
                    "its configuration gives `{provider}` a key of its own (`apiKey`), not `{{env:VAR}}`"
                )))
            }
        }
    }
    let upstream = option("baseURL").as_ref().and_then(Value::as_str).map(str::to_owned);
    let Some(upstream) = upstream.or_else(|| built_in.map(|(_, _, url)| (*url).to_owned())) else {
        return Err(NotHeld::from(format!(
            "eden knows the API of its `anthropic` and `openai` providers and of those its configuration gives a `baseURL`, not `{provider}`'s"
        )));
    };
    let shaped = content.is_object()
        && content.get("provider").is_none_or(Value::is_object)
        && content.pointer(&format!("/provider/{escaped}")).is_none_or(Value::is_object)
        && content.pointer(&format!("/provider/{escaped}/options")).is_none_or(Value::is_object);
    if !shaped {
        return Err(NotHeld::from("its `OPENCODE_CONFIG_CONTENT` is not shaped as opencode documents it"));
    }
    content["provider"][&provider]["options"]["baseURL"] = Value::String(RELAY_URL_MARK.into());
    Ok(ConfigFront {
        key_vars,
        header: CredentialHeader::Either,
        upstream,
        config: ConfigFile { var: "OPENCODE_CONFIG_CONTENT", file: None, template: content.to_string() },
    })
}

/// JSON with comments and trailing commas, as opencode reads its configuration.
fn parse_jsonc(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(&strip_jsonc(text))
}

/// `text` without its `//` and `/* */` comments and its trailing commas; strings kept as they are.
fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => while chars.next_if(|&next| next != '\n').is_some() {},
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for next in chars.by_ref() {
                    if last == '*' && next == '/' {
                        break;
                    }
                    last = next;
                }
                out.push(' ');
            }
            (']' | '}', _) => {
                let kept = out.trim_end().len();
                if out[..kept].ends_with(',') {
                    out.truncate(kept - 1);
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

#[derive(Default)]
pub(crate) struct OpencodeParser {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonc_loses_its_comments_and_trailing_commas_but_not_its_strings() {
        let text = "{\n  // a comment\n  \"url\": \"http://x//y\", /* block\n */ \"list\": [1, 2,],\n  \"s\": \"a,]\\\"/*\",\n}";
        let value = parse_jsonc(text).unwrap();
        assert_eq!(value["url"], "http://x//y");
        assert_eq!(value["list"], serde_json::json!([1, 2]));
        assert_eq!(value["s"], "a,]\"/*");
    }

    /// `front` for `model` with `home`'s folders and the agent's environment `vars`.
    fn front_in(
        home: &std::path::Path,
        project: Option<&std::path::Path>,
        model: Option<&str>,
        vars: &[(&str, &str)],
    ) -> Result<ConfigFront, NotHeld> {
        let env = |key: &str| vars.iter().find(|(name, _)| *name == key).map(|(_, value)| (*value).to_owned());
        let folders = [home.join(".local/share/opencode"), home.join(".config/opencode")];
        front(&FrontQuery { model, extra_args: &[], env: &env, folders: &folders, project })
    }

    #[test]
    fn the_last_layer_that_sets_the_base_url_wins_and_the_relay_overrides_it_inline() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let global = home.path().join(".config/opencode");
        std::fs::create_dir_all(&global).unwrap();
        std::fs::write(
            global.join("opencode.jsonc"),
            "{ // mine\n \"provider\": { \"gw\": { \"options\": { \"baseURL\": \"https://global/v1\", \"apiKey\": \"{env:GW_KEY}\" } } } }",
        )
        .unwrap();
        let front = front_in(home.path(), Some(project.path()), Some("gw/m"), &[]).unwrap();
        assert_eq!(
            (front.upstream.as_str(), front.key_vars.as_slice()),
            ("https://global/v1", &["GW_KEY".to_owned()][..])
        );
        std::fs::write(
            project.path().join("opencode.json"),
            r#"{"provider":{"gw":{"options":{"baseURL":"https://project/v1"}}}}"#,
        )
        .unwrap();
        let inline = r#"{"theme":"x","provider":{"gw":{"options":{"timeout":5}}}}"#;
        let front =
            front_in(home.path(), Some(project.path()), Some("gw/m"), &[("OPENCODE_CONFIG_CONTENT", inline)]).unwrap();
        assert_eq!(front.upstream, "https://project/v1");
        assert_eq!(front.config.var, "OPENCODE_CONFIG_CONTENT");
        let content: Value = serde_json::from_str(&front.config.template).unwrap();
        assert_eq!(content["theme"], "x", "the person's inline configuration is kept");
        assert_eq!(content["provider"]["gw"]["options"]["timeout"], 5);
        assert_eq!(content["provider"]["gw"]["options"]["baseURL"], RELAY_URL_MARK);
    }

    #[test]
    fn what_eden_cannot_hold_says_why() {
        let home = tempfile::tempdir().unwrap();
        let why = |model: Option<&str>, vars: &[(&str, &str)]| front_in(home.path(), None, model, vars).unwrap_err().0;
        assert!(why(None, &[]).contains("not named"));
        assert!(why(Some("google/gemini"), &[]).contains("not `google`'s"));
        let inline = r#"{"provider":{"anthropic":{"options":{"apiKey":"sk-literal"}}}}"#;
        assert!(why(Some("anthropic/x"), &[("OPENCODE_CONFIG_CONTENT", inline)]).contains("key of its own"));
        assert!(why(Some("anthropic/x"), &[("OPENCODE_CONFIG_CONTENT", "{")]).contains("not JSON"));
        let data = home.path().join(".local/share/opencode");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("auth.json"), r#"{"anthropic":{"type":"oauth"}}"#).unwrap();
        assert!(why(Some("anthropic/x"), &[]).contains("has a login for `anthropic`"));
        let front = front_in(home.path(), None, Some("openai/gpt"), &[]).unwrap();
        assert_eq!(
            (front.upstream.as_str(), front.key_vars[0].as_str()),
            ("https://api.openai.com/v1", "OPENAI_API_KEY")
        );
    }
}
