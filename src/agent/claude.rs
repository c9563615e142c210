//! Claude Code: `claude -p --output-format stream-json --verbose`, prompt on stdin. One
//! `assistant` line per content block, `user` lines with tool results, a final `result` line
//! with the totals (and `is_error` for failures the CLI reports on stdout, exit code 1).

use super::credentials::NotHeld;
use super::facts::{self, dirs, jsonl, modified_last, Found, NotFound, Store, Ui};
use super::stream::*;
use super::{AdapterSettings, Invocation, Parser};
use crate::process::{ProcessBuilder, Stdin};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// How long a login's access token must still be valid for eden to hold it: Claude refreshes
/// one near its end itself, which it cannot do with a placeholder.
const LOGIN_MARGIN_MS: i64 = 30 * 60 * 1000;

/// The access token of the person's `/login` (`.credentials.json`, `claudeAiOauth`), if any.
pub(crate) fn login_token(folder: &std::path::Path) -> Result<Option<String>, NotHeld> {
    let path = folder.join(".credentials.json");
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(None) };
    let value: Value =
        serde_json::from_str(&text).map_err(|err| format!("its `{}` is not JSON: {err}", path.display()))?;
    let Some(oauth) = value.get("claudeAiOauth") else { return Ok(None) };
    let Some(token) = oauth.get("accessToken").and_then(Value::as_str).filter(|token| !token.is_empty()) else {
        return Ok(None);
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    match oauth.get("expiresAt").and_then(Value::as_i64) {
        Some(expires) if expires - now < LOGIN_MARGIN_MS => Err(NotHeld::from(format!(
            "its login in `{}` expires within 30 minutes and only Claude can refresh it: run `claude` once to refresh it",
            path.display()
        ))),
        _ => Ok(Some(token.to_owned())),
    }
}

/// The run's private `.credentials.json` with `placeholder` as its access token and no refresh
/// token: the login works through eden's proxy, and only for as long as its token lasts.
pub(crate) fn hold_login(folder: &std::path::Path, placeholder: &str) -> std::io::Result<()> {
    let path = folder.join(".credentials.json");
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    if let Some(oauth) = value.get_mut("claudeAiOauth").and_then(Value::as_object_mut) {
        oauth.insert("accessToken".into(), Value::String(placeholder.to_owned()));
        oauth.remove("refreshToken");
    }
    let temporary = folder.join(".credentials.json.eden");
    std::fs::write(&temporary, serde_json::to_vec(&value)?)?;
    std::fs::rename(&temporary, &path)
}

pub(crate) fn command(settings: &AdapterSettings, invocation: &Invocation<'_>) -> ProcessBuilder {
    let mut command = ProcessBuilder::new(&settings.binary).args([
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
    ]);
    command = command
        .option("--model", settings.model.as_deref())
        .option("--effort", settings.effort.as_deref())
        .option("--resume", invocation.resume.or(settings.resume.as_deref()))
        .args(&settings.extra_args);
    // As root, Claude refuses to skip permissions unless told it is sandboxed.
    if nix::unistd::geteuid().is_root() {
        command = command.env("IS_SANDBOX", "1");
    }
    command.stdin(Stdin::Bytes(invocation.prompt.as_bytes().to_vec()))
}

/// Its own UI (`eden interactive`): the permission bypass only where a container makes it safe.
pub(crate) fn interactive(command: ProcessBuilder, ui: &Ui<'_>) -> (ProcessBuilder, Option<&'static str>) {
    let mut command = command.option("--model", ui.model).option("--resume", ui.resume);
    if ui.bypass {
        command = command.arg("--dangerously-skip-permissions");
        if nix::unistd::geteuid().is_root() {
            command = command.env("IS_SANDBOX", "1");
        }
    }
    (command, None)
}

/// Its transcripts: `projects/<slug of the working directory>/<id>.jsonl`, with subagents in
/// `<slug>/<id>/subagents/`. A slug over 200 characters is cut and hashed, so when the expected
/// file is missing every project folder is searched for `<id>.jsonl`. It resumes a session from
/// its working directory's project folder only.
pub(crate) const TRANSCRIPTS: Store = Store {
    locate: locate_transcript,
    newest: newest_transcript,
    transfer: Some(|state, session_id, cwd, _| project_file(state, session_id, cwd)),
    resumes_from: Some(project_file),
};

/// Its project folder name for a working directory: every character outside `[A-Za-z0-9]`
/// becomes `-`.
pub(crate) fn slug(cwd: &Path) -> String {
    let real = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    real.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

fn project_file(state: &Path, session_id: &str, cwd: &Path) -> PathBuf {
    state.join("projects").join(slug(cwd)).join(format!("{session_id}.jsonl"))
}

fn locate_transcript(state: &Path, session_id: &str, cwd: &Path) -> Result<Found, NotFound> {
    let projects = state.join("projects");
    let expected = project_file(state, session_id, cwd);
    let main = if expected.is_file() {
        Some(expected.clone())
    } else {
        dirs(&projects).into_iter().map(|dir| dir.join(format!("{session_id}.jsonl"))).find(|p| p.is_file())
    };
    let main = main.ok_or_else(|| NotFound {
        tried: format!("{} (and {}/*/{session_id}.jsonl)", expected.display(), projects.display()),
    })?;
    let mut subagents = jsonl(&main.with_extension("").join("subagents"));
    subagents.sort();
    Ok(Found { main, subagents })
}

fn newest_transcript(state: &Path, cwd: &Path, since: SystemTime) -> Option<(String, PathBuf)> {
    let path = modified_last(jsonl(&state.join("projects").join(slug(cwd))), since)?;
    Some((facts::stem(&path), path))
}

/// Reads the stream, and keeps a running total of usage as it goes: every assistant line
/// carries its message's usage (input and cache tokens exact from the message's start, output
/// growing; the same message id repeats across its content blocks), so the total of the latest
/// usage per message is what the invocation has spent so far — reported at once, so budget caps
/// act mid-iteration, and replaced by the `result` line's totals (with the cost) at the end.
#[derive(Default)]
pub(crate) struct ClaudeParser {
    /// The latest messages' ids and latest usage, newest last: a message's blocks come
    /// together (a subagent's may come between), so only the last few can still grow.
    recent: std::collections::VecDeque<Recent>,
    /// The sum of every message's latest usage, kept as each message's usage is replaced: a
    /// long session's thousands of messages are never summed again, nor remembered.
    total: Usage,
}

struct Recent {
    /// A hash of the id, compared before the id itself: a new message is compared with every
    /// recent one, and ids share long prefixes.
    hash: u64,
    id: Box<str>,
    usage: Usage,
}

/// How many messages may still grow. One older than these that shows up again is counted
/// again from its new usage: an agent can only make its total larger that way, never smaller.
const RECENT_MESSAGES: usize = 64;

impl Parser for ClaudeParser {
    fn parse_line(&mut self, line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>)) {
        if !line.trim_ascii_start().starts_with(b"{") {
            return emit(passthrough(line));
        }
        // Validate UTF-8 once for the whole line; `from_str` then skips per-string checks.
        let Ok(text) = std::str::from_utf8(line) else { return emit(passthrough(line)) };
        match serde_json::from_str::<Line<'_>>(text) {
            Ok(mut parsed) => {
                if let Some((id, usage)) = parsed.message_usage() {
                    self.running_total((&id, usage), emit);
                }
                parsed.emit(emit)
            }
            Err(_) => emit(passthrough(line)),
        }
    }
}

impl ClaudeParser {
    /// One message's latest usage in, the total of all messages so far out.
    fn running_total(&mut self, (id, usage): (&str, Usage), emit: &mut dyn FnMut(StreamEvent<'_>)) {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(id);
        match self.recent.iter_mut().rev().find(|known| known.hash == hash && *known.id == *id) {
            Some(known) => {
                self.total = self.total.since(&known.usage);
                known.usage = usage;
            }
            None => {
                if self.recent.len() == RECENT_MESSAGES {
                    self.recent.pop_front();
                }
                self.recent.push_back(Recent { hash, id: id.into(), usage });
            }
        }
        self.total.add(&usage);
        emit(StreamEvent::Usage { usage: self.total, mode: UsageMode::Total });
    }
}

// Typed, borrowing views of Claude's lines: strings without escapes are borrowed from the
// input, everything not named here is skipped without being built. Several times faster than
// a `serde_json::Value` per line, which matters for multi-hundred-MB streams.

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(default)]
    parent_tool_use_id: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default, borrow)]
    message: Option<Message<'a>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(default)]
    api_error_status: Option<u64>,
    #[serde(default, borrow)]
    subtype: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    result: Option<Cow<'a, str>>,
    #[serde(default)]
    total_cost_usd: Option<f64>,
    #[serde(default)]
    usage: Option<LineUsage>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    /// A list of blocks, or (in user lines) a plain string, which carries nothing for us.
    #[serde(default, borrow)]
    content: Blocks<'a>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<LineUsage>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
}

#[derive(Default)]
struct Blocks<'a>(Vec<Block<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for Blocks<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlocksVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for BlocksVisitor<'a> {
            type Value = Blocks<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of content blocks or a string")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Blocks<'a>, E> {
                Ok(Blocks::default())
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Blocks<'a>, E> {
                Ok(Blocks::default())
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Blocks<'a>, A::Error> {
                let mut blocks = Vec::new();
                while let Some(block) = seq.next_element::<Block<'a>>()? {
                    blocks.push(block);
                }
                Ok(Blocks(blocks))
            }
        }
        deserializer.deserialize_any(BlocksVisitor(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default)]
    is_error: Option<bool>,
    /// A tool result's output: a string or a list of blocks.
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct LineUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl LineUsage {
    fn usage(&self, cost_usd: Option<f64>) -> Usage {
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0),
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: self.cache_read_input_tokens.unwrap_or(0),
            cache_write_tokens: self.cache_creation_input_tokens.unwrap_or(0),
            cost_usd,
        }
    }
}

impl<'a> Line<'a> {
    /// An assistant line's message id and usage (that message's so far).
    fn message_usage(&mut self) -> Option<(Cow<'a, str>, Usage)> {
        if self.kind != "assistant" {
            return None;
        }
        let message = self.message.as_mut()?;
        let usage = message.usage.take()?;
        Some((message.id.take()?, usage.usage(None)))
    }

    fn blocks(&mut self) -> Vec<Block<'a>> {
        self.message.take().map(|message| message.content.0).unwrap_or_default()
    }

    fn emit(mut self, emit: &mut dyn FnMut(StreamEvent<'_>)) {
        let subagent = self.parent_tool_use_id.is_some();
        match self.kind.as_ref() {
            "system" => {
                if let Some(id) = self.session_id {
                    emit(StreamEvent::SessionId(id.into_owned()));
                }
                if let Some(model) = self.model.filter(|model| !model.is_empty()) {
                    emit(StreamEvent::Model(model.into_owned()));
                }
            }
            // A synthetic error message precedes an error `result`; the result carries it.
            "assistant" if self.error.is_some() => {}
            "assistant" => {
                if let Some(model) = self.message.as_mut().and_then(|message| message.model.take()) {
                    emit(StreamEvent::Model(model.into_owned()));
                }
                for block in self.blocks() {
                    match block.kind.as_ref() {
                        "text" => {
                            emit(StreamEvent::Text { text: block.text.unwrap_or_default(), continues: false, subagent })
                        }
                        "tool_use" => {
                            let input = block.input.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
                            emit(StreamEvent::ToolCall {
                                name: block.name.as_deref().unwrap_or("tool").to_owned(),
                                summary: tool_summary(input.as_ref().unwrap_or(&Value::Null)),
                                subagent,
                            });
                        }
                        _ => {}
                    }
                }
            }
            "user" => {
                for block in self.blocks() {
                    if block.kind == "tool_result" {
                        let failed = block.is_error.unwrap_or(false);
                        let reason = failed.then(|| {
                            let content = block.content.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
                            failure_reason(&result_text(content.as_ref().unwrap_or(&Value::Null)))
                        });
                        emit(StreamEvent::ToolResult { name: None, ok: !failed, reason });
                    }
                }
            }
            "result" => {
                if let Some(id) = &self.session_id {
                    emit(StreamEvent::SessionId(id.to_string()));
                }
                if let Some(usage) = &self.usage {
                    emit(StreamEvent::Usage { usage: usage.usage(self.total_cost_usd), mode: UsageMode::Total });
                }
                let text = self.result.as_deref().unwrap_or("");
                if self.is_error.unwrap_or(false) {
                    let message = if text.is_empty() { self.subtype.as_deref().unwrap_or("error") } else { text };
                    let kind = FailureKind::classify(self.api_error_status, message);
                    emit(StreamEvent::Error { message: message.to_owned(), kind });
                } else if !text.is_empty() {
                    emit(StreamEvent::FinalResult(text.to_owned()));
                }
            }
            _ => {}
        }
    }
}

/// Cursor's stream copies Claude's shapes (plus its own `tool_call` lines), without usage on
/// its assistant lines.
pub(crate) fn parse_claude_line(line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>)) {
    let parsed = std::str::from_utf8(line).ok().and_then(|text| serde_json::from_str::<Line<'_>>(text).ok());
    match parsed {
        Some(parsed) if line.trim_ascii_start().starts_with(b"{") => parsed.emit(emit),
        _ => emit(passthrough(line)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The total is each message's latest usage, summed: a message's repeated lines replace its
    /// usage (output growing), a new message adds its own.
    #[test]
    fn slugs_replace_everything_but_letters_and_digits() {
        assert_eq!(slug(Path::new("/nonexistent/My Repo_v1.2")), "-nonexistent-My-Repo-v1-2");
    }

    #[test]
    fn usage_totals_follow_each_messages_latest() {
        let line = |id: &str, input: u64, output: u64| {
            format!(
                r#"{{"type":"assistant","message":{{"id":"{id}","content":[],"usage":{{"input_tokens":{input},"output_tokens":{output},"cache_read_input_tokens":100,"cache_creation_input_tokens":0}}}},"session_id":"s"}}"#
            )
        };
        let mut parser = ClaudeParser::default();
        let mut totals = Vec::new();
        for text in [line("m1", 10, 1), line("m1", 10, 30), line("m2", 5, 2), line("m1", 10, 31), line("m2", 5, 9)] {
            parser.parse_line(text.as_bytes(), &mut |event| {
                if let StreamEvent::Usage { usage, mode: UsageMode::Total } = event {
                    totals.push((usage.input_tokens, usage.output_tokens, usage.cache_read_tokens));
                }
            });
        }
        assert_eq!(totals, [(10, 1, 100), (10, 30, 100), (15, 32, 200), (15, 33, 200), (15, 40, 200)]);
    }

    /// A session of tens of thousands of messages: the total is every message's latest usage,
    /// only the latest few messages are remembered, and one seen again after them is counted
    /// again (larger, never smaller).
    #[test]
    fn a_long_session_is_totalled_without_remembering_it() {
        let line = |n: usize, output: u64| {
            format!(
                r#"{{"type":"assistant","message":{{"id":"msg_{n:024x}","content":[],"usage":{{"input_tokens":1,"output_tokens":{output}}}}}}}"#
            )
        };
        let feed = |parser: &mut ClaudeParser, text: String| {
            let mut total = (0, 0);
            parser.parse_line(text.as_bytes(), &mut |event| {
                if let StreamEvent::Usage { usage, .. } = event {
                    total = (usage.input_tokens, usage.output_tokens);
                }
            });
            total
        };
        let mut parser = ClaudeParser::default();
        let mut total = (0, 0);
        for n in 0..20_000 {
            feed(&mut parser, line(n, 1));
            total = feed(&mut parser, line(n, 5));
        }
        assert_eq!(total, (20_000, 100_000));
        assert_eq!(parser.recent.len(), RECENT_MESSAGES);
        assert_eq!(feed(&mut parser, line(19_999, 7)), (20_000, 100_002), "a recent message grows in place");
        assert_eq!(feed(&mut parser, line(0, 7)), (20_001, 100_009), "an old one is counted again");
    }
}
