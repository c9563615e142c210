//! A scripted model server on 127.0.0.1 for the real agent CLIs: Anthropic Messages (Claude,
//! pi), OpenAI Responses (Codex) and Chat Completions (opencode, pi, Copilot), streamed as
//! server-sent events. The script is stateless: the step is the number of tool results already
//! in the request — 0: write `hello.txt`, 1: commit it with a shell call, 2: a final text with
//! the completion signal. It adds up the usage it reports so tests can compare.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub const INPUT_TOKENS: u64 = 12;
pub const OUTPUT_TOKENS: u64 = 7;
pub const FINAL_TEXT: &str = "All done: wrote hello.txt. <promise>COMPLETE</promise>";

#[derive(Default)]
pub struct Stats {
    pub requests: AtomicU64,
    pub input_tokens: AtomicU64,
    pub output_tokens: AtomicU64,
    /// Paths of the requests, for debugging a CLI that talks to something unexpected.
    pub paths: Mutex<Vec<String>>,
    /// The credential each request carried (`x-api-key`, else `authorization`), as it came.
    pub keys: Mutex<Vec<String>>,
    /// Answer the next agent turn that carries one tool result (the write done, the commit
    /// next) with a 429 usage limit, once.
    pub rate_limit_once: AtomicBool,
    /// Answer the first Anthropic agent turn with a message that reports `COSTLY_INPUT_TOKENS`
    /// input tokens at its start and asks for a slow shell call (30 s, then `late.txt`).
    pub costly_slow_turn: AtomicBool,
    /// The shell command the commit step asks an Anthropic agent to run, instead of the plain
    /// commit (a payload that tries to send something home in its output, say).
    pub commit_command: Mutex<Option<String>>,
}

pub const COSTLY_INPUT_TOKENS: u64 = 5000;

pub struct ModelServer {
    pub port: u16,
    pub stats: Arc<Stats>,
    stop: Arc<AtomicBool>,
    /// The address it listens on: 127.0.0.1, or one a remote engine's containers reach.
    address: String,
}

impl ModelServer {
    /// `repo` is the test repository: the worktree eden makes is found under it in the request.
    pub fn start(repo: PathBuf, fail_with_401: bool) -> ModelServer {
        Self::start_with(repo, fail_with_401, None)
    }

    /// With `answers`: a conversation whose first prompt contains `answers.trigger` gets
    /// `answers.replies[n]` as the final text of its n-th user turn (the last one repeats), no
    /// tools — for structured output and its retries in a resumed session.
    pub fn start_with(repo: PathBuf, fail_with_401: bool, answers: Option<Answers>) -> ModelServer {
        Self::start_on("127.0.0.1", repo, fail_with_401, answers)
    }

    /// Listening on `address` (the test's own side of the remote engines' network), so a
    /// container on a remote engine reaches it.
    pub fn start_on(address: &str, repo: PathBuf, fail_with_401: bool, answers: Option<Answers>) -> ModelServer {
        let answers = Arc::new(answers);
        let listener = TcpListener::bind((address, 0)).expect("bind the model server");
        let port = listener.local_addr().unwrap().port();
        let stats = Arc::new(Stats::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (thread_stats, thread_stop) = (stats.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if thread_stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (stats, repo, answers) = (thread_stats.clone(), repo.clone(), answers.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &stats, &repo, fail_with_401, &answers);
                });
            }
        });
        ModelServer { port, stats, stop, address: address.to_owned() }
    }

    pub fn url(&self) -> String {
        format!("http://{}:{}", self.address, self.port)
    }

    pub fn usage(&self) -> (u64, u64) {
        (self.stats.input_tokens.load(Ordering::SeqCst), self.stats.output_tokens.load(Ordering::SeqCst))
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect((self.address.as_str(), self.port));
    }
}

struct Request {
    method: String,
    path: String,
    key: Option<String>,
    body: Vec<u8>,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let (mut length, mut chunked, mut key) = (0usize, false, None);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let lower = header.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        } else if lower.starts_with("x-api-key:") || (lower.starts_with("authorization:") && key.is_none()) {
            key = header.split_once(':').map(|(_, value)| value.trim().to_owned());
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
    }
    Ok(Some(Request { method, path, key, body }))
}

fn serve(
    stream: TcpStream,
    stats: &Stats,
    repo: &std::path::Path,
    fail_with_401: bool,
    answers: &Option<Answers>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    while let Some(request) = read_request(&mut reader)? {
        stats.requests.fetch_add(1, Ordering::SeqCst);
        stats.paths.lock().unwrap().push(format!("{} {}", request.method, request.path));
        stats.keys.lock().unwrap().extend(request.key.clone());
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        // Debugging aid: EDEN_TEST_DUMP_REQUESTS=DIR writes every request body there.
        if let Some(dir) = std::env::var_os("EDEN_TEST_DUMP_REQUESTS") {
            let n = stats.requests.load(Ordering::SeqCst);
            let _ = std::fs::write(std::path::Path::new(&dir).join(format!("{n}.json")), &request.body);
        }
        let path = request.path.split('?').next().unwrap_or("");
        if request.method != "POST" {
            respond(&mut writer, 200, "application/json", b"{}")?;
            continue;
        }
        if fail_with_401 {
            let error = if path.ends_with("/messages") {
                json!({"type": "error", "error": {"type": "authentication_error", "message": "mock failure status 401"}})
            } else {
                json!({"error": {"message": "mock failure status 401", "type": "invalid_request_error", "code": "invalid_api_key"}})
            };
            respond(&mut writer, 401, "application/json", error.to_string().as_bytes())?;
            continue;
        }
        let has_tools = body["tools"].as_array().is_some_and(|tools| !tools.is_empty());
        let text = String::from_utf8_lossy(&request.body);
        let tool_results = text.matches("\"tool_result\"").count() + text.matches("\"function_call_output\"").count();
        let agent_turn = path.ends_with("/messages") || path.ends_with("/responses");
        if has_tools && tool_results == 1 && agent_turn && stats.rate_limit_once.swap(false, Ordering::SeqCst) {
            let message = "usage limit reached, try again in 1 seconds";
            let error = match path.ends_with("/messages") {
                true => json!({"type": "error", "error": {"type": "rate_limit_error", "message": message}}),
                false => {
                    json!({"error": {"type": "rate_limit_exceeded", "code": "rate_limit_exceeded", "message": message}})
                }
            };
            respond(&mut writer, 429, "application/json", error.to_string().as_bytes())?;
            continue;
        }
        let workdir = find_workdir(&request.body, repo);
        let stream_wanted = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let events = if path.ends_with("/messages/count_tokens") {
            respond(&mut writer, 200, "application/json", br#"{"input_tokens":12}"#)?;
            continue;
        } else if path.ends_with("/messages") {
            let costly = stats.costly_slow_turn.load(Ordering::SeqCst) && tool_results == 0 && has_tools;
            let commit = stats.commit_command.lock().unwrap().clone();
            anthropic(&body, &workdir, stream_wanted, answers.as_ref(), costly, commit)
        } else if path.ends_with("/responses") {
            responses(&body, &workdir)
        } else if path.ends_with("/chat/completions") {
            chat(&body, &workdir, stream_wanted, answers.as_ref())
        } else if path.ends_with("/models") {
            respond(
                &mut writer,
                200,
                "application/json",
                br#"{"object":"list","data":[{"id":"mock-model","object":"model"}]}"#,
            )?;
            continue;
        } else {
            respond(&mut writer, 404, "application/json", b"{}")?;
            continue;
        };
        // Agent turns carry tools; tool-less requests are the CLI's own chores (opencode names
        // the session), which it does not count as the agent's usage.
        if body["tools"].as_array().is_some_and(|tools| !tools.is_empty()) {
            stats.input_tokens.fetch_add(INPUT_TOKENS, Ordering::SeqCst);
            stats.output_tokens.fetch_add(OUTPUT_TOKENS, Ordering::SeqCst);
        }
        match events {
            Reply::Sse(events) => {
                let mut text = String::new();
                for (name, data) in events {
                    match name {
                        Some(name) => text.push_str(&format!("event: {name}\ndata: {data}\n\n")),
                        None => text.push_str(&format!("data: {data}\n\n")),
                    }
                }
                respond(&mut writer, 200, "text/event-stream", text.as_bytes())?;
            }
            Reply::Json(value) => respond(&mut writer, 200, "application/json", value.to_string().as_bytes())?,
        }
    }
    Ok(())
}

fn respond(writer: &mut TcpStream, status: u16, content_type: &str, body: &[u8]) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        _ => "Not Found",
    };
    write!(
        writer,
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nrequest-id: req_mock\r\n\r\n",
        body.len()
    )?;
    writer.write_all(body)?;
    writer.flush()
}

/// The worktree eden made (`<repo>/.eden/worktrees/<slug>`), as named in the request.
fn find_workdir(body: &[u8], repo: &std::path::Path) -> String {
    let text = String::from_utf8_lossy(body);
    let marker = format!("{}/.eden/worktrees/", repo.display());
    match text.find(&marker) {
        Some(start) => {
            let rest = &text[start + marker.len()..];
            let end =
                rest.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))).unwrap_or(rest.len());
            format!("{marker}{}", &rest[..end])
        }
        None => ".".to_owned(),
    }
}

enum Reply {
    Sse(Vec<(Option<&'static str>, String)>),
    Json(Value),
}

enum Step {
    Write {
        path: String,
    },
    Commit,
    Done,
    /// A request without tools: a title or summary the CLI asks for on the side.
    Chore,
    /// A scripted final answer (`Answers`).
    Answer(String),
    /// A call of a tool by name (an MCP server's).
    Tool {
        name: &'static str,
        input: Value,
    },
}

/// The tool eden's MCP server offers Claude Code for a run, by the name Claude gives it.
pub const EDEN_RUN_TOOL: &str = "mcp__eden__run";

/// A conversation whose prompt asks to run `plans/…toml` with eden, when Claude has eden's MCP
/// tools: call `run` on that manifest and wait; then answer with what the tool said.
fn eden_mcp(body: &Value, tools: &[&str], tool_results: usize) -> Option<Step> {
    if !tools.contains(&EDEN_RUN_TOOL) {
        return None;
    }
    let asked = body["messages"][0].to_string();
    let start = asked.find("plans/")?;
    let manifest: String = asked[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '-' | '_'))
        .collect();
    if tool_results == 0 {
        return Some(Step::Tool { name: EDEN_RUN_TOOL, input: json!({"manifest": manifest, "wait": true}) });
    }
    let result = body["messages"]
        .as_array()?
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "tool_result")
        .map(|block| block["content"].to_string())
        .next_back()?;
    Some(Step::Answer(format!("eden answered: {result}")))
}

pub struct Answers {
    pub trigger: String,
    pub replies: Vec<String>,
}

impl Answers {
    /// The reply for this request, if its conversation is one of ours (Anthropic messages).
    fn reply(&self, body: &Value) -> Option<String> {
        let texts = |message: &Value| -> Vec<String> {
            match &message["content"] {
                Value::String(text) => vec![text.clone()],
                Value::Array(blocks) => blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            }
        };
        let turns: Vec<Vec<String>> = body["messages"]
            .as_array()?
            .iter()
            .filter(|m| m["role"] == "user")
            .map(texts)
            .filter(|texts| texts.iter().any(|t| !t.trim_start().starts_with("<system-reminder>")))
            .collect();
        if !turns.first()?.iter().any(|text| text.contains(&self.trigger)) {
            return None;
        }
        let index = (turns.len() - 1).min(self.replies.len() - 1);
        Some(self.replies[index].clone())
    }
}

/// What to answer: a chore for tool-less requests, a scripted answer for a conversation of
/// `answers`, else the next step of write → commit → done.
fn step(body: &Value, has_tools: bool, tool_results: usize, workdir: &str, answers: Option<&Answers>) -> Step {
    if !has_tools {
        return Step::Chore;
    }
    if let Some(reply) = answers.and_then(|answers| answers.reply(body)) {
        return Step::Answer(reply);
    }
    match tool_results {
        0 => Step::Write { path: format!("{workdir}/hello.txt") },
        1 => Step::Commit,
        _ => Step::Done,
    }
}

const COMMIT: &str = "git add -A && git commit -q -m 'add hello.txt'";
const COMMIT_FIX: &str = "git add -A && git commit -q -m 'fix hello.txt'";

/// The words eden's prompt uses when checks failed (`orchestrator::checks`).
pub const CHECKS_FAILED: &str = "These checks must pass before your work can merge";

/// Whether the conversation asks to fix what failing checks said (Anthropic messages).
fn asked_to_fix(body: &Value) -> bool {
    body["messages"].to_string().contains(CHECKS_FAILED)
}

/// Anthropic Messages, for Claude (`Write`/`Bash`) and pi (`write`/`bash`).
fn anthropic(
    body: &Value,
    workdir: &str,
    stream: bool,
    answers: Option<&Answers>,
    costly: bool,
    commit: Option<String>,
) -> Reply {
    let tool_results = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "tool_result")
        .count();
    let tools: Vec<&str> = body["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    let claude = tools.contains(&"Write");
    let script = match eden_mcp(body, &tools, tool_results) {
        Some(script) => script,
        None => step(body, !tools.is_empty(), tool_results, workdir, answers),
    };
    let (text, tool) = match script {
        Step::Tool { name, input } => ("I'll ask eden.".to_owned(), Some((name, input))),
        Step::Write { path } => {
            // Asked to fix what eden's checks found (`[[check]]`): the file says so, and the
            // commit is a fix.
            // (Claude writes over a file only after reading it: the fix goes through the shell.)
            let fix = asked_to_fix(body);
            let content = if fix { "hello from mock, fixed\n" } else { "hello from mock\n" };
            let input = match (claude, fix) {
                (true, true) => json!({"command": format!("printf 'hello from mock, fixed\\n' > '{path}'")}),
                (true, false) => json!({"file_path": path, "content": content}),
                (false, _) => json!({"path": path, "content": content}),
            };
            let tool = match (claude, fix) {
                (true, true) => "Bash",
                (true, false) => "Write",
                (false, _) => "write",
            };
            ("I'll do that now.".to_owned(), Some((tool, input)))
        }
        Step::Commit => {
            let plain = if asked_to_fix(body) { COMMIT_FIX } else { COMMIT };
            let commit = commit.unwrap_or_else(|| plain.to_owned());
            ("I'll do that now.".to_owned(), Some((if claude { "Bash" } else { "bash" }, json!({"command": commit}))))
        }
        Step::Done => (FINAL_TEXT.to_owned(), None),
        Step::Chore => ("Mock title".to_owned(), None),
        Step::Answer(reply) => (reply, None),
    };
    let (text, tool) = match costly {
        true => (
            "This will take a while.".to_owned(),
            Some(("Bash", json!({"command": format!("sleep 30; touch {workdir}/late.txt"), "timeout": 120000}))),
        ),
        false => (text, tool),
    };
    let input_tokens = if costly { COSTLY_INPUT_TOKENS } else { INPUT_TOKENS };
    let id = format!("msg_mock_{tool_results}");
    let usage = json!({"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let stop = if tool.is_some() { "tool_use" } else { "end_turn" };
    if !stream {
        let mut content = vec![json!({"type": "text", "text": text})];
        if let Some((name, input)) = &tool {
            content.push(
                json!({"type": "tool_use", "id": format!("toolu_mock_{tool_results}"), "name": name, "input": input}),
            );
        }
        return Reply::Json(
            json!({"id": id, "type": "message", "role": "assistant", "model": "mock-model", "content": content, "stop_reason": stop, "usage": usage}),
        );
    }
    let mut events = vec![
        (Some("message_start"), json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": "mock-model", "content": [], "stop_reason": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}).to_string()),
        (Some("content_block_start"), json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}).to_string()),
        (Some("content_block_delta"), json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}).to_string()),
        (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 0}).to_string()),
    ];
    if let Some((name, input)) = &tool {
        events.push((Some("content_block_start"), json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": format!("toolu_mock_{tool_results}"), "name": name, "input": {}}}).to_string()));
        events.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}).to_string()));
        events.push((Some("content_block_stop"), json!({"type": "content_block_stop", "index": 1}).to_string()));
    }
    events.push((Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": OUTPUT_TOKENS}}).to_string()));
    events.push((Some("message_stop"), json!({"type": "message_stop"}).to_string()));
    Reply::Sse(events)
}

/// OpenAI Responses, for Codex (`apply_patch` custom tool, `exec_command` function).
fn responses(body: &Value, workdir: &str) -> Reply {
    let tool_results = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"].as_str().is_some_and(|t| t.ends_with("_output")))
        .count();
    let item = match step(body, true, tool_results, workdir, None) {
        Step::Write { path } => {
            json!({"type": "custom_tool_call", "id": "ctc_mock", "call_id": "call_mock_0", "name": "apply_patch", "status": "completed",
            "input": format!("*** Begin Patch\n*** Add File: {path}\n+hello from mock\n*** End Patch\n")})
        }
        Step::Commit => {
            json!({"type": "function_call", "id": "fc_mock", "call_id": "call_mock_1", "name": "exec_command", "status": "completed",
            "arguments": json!({"cmd": COMMIT, "workdir": workdir}).to_string()})
        }
        Step::Done | Step::Chore | Step::Answer(_) | Step::Tool { .. } => {
            json!({"type": "message", "id": "msg_mock", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}]})
        }
    };
    let response = |status: &str, output: Value, usage: Value| json!({"id": "resp_mock", "object": "response", "created_at": 0, "status": status, "model": "gpt-5.5", "output": output, "usage": usage});
    let usage = json!({"input_tokens": INPUT_TOKENS, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": OUTPUT_TOKENS, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS});
    let mut events = vec![
        (
            Some("response.created"),
            json!({"type": "response.created", "response": response("in_progress", json!([]), Value::Null)})
                .to_string(),
        ),
        (
            Some("response.output_item.added"),
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}).to_string(),
        ),
    ];
    if item["type"] == "message" {
        events.push((Some("response.output_text.delta"), json!({"type": "response.output_text.delta", "item_id": "msg_mock", "output_index": 0, "content_index": 0, "delta": FINAL_TEXT}).to_string()));
    }
    events.push((
        Some("response.output_item.done"),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}).to_string(),
    ));
    events.push((
        Some("response.completed"),
        json!({"type": "response.completed", "response": response("completed", json!([item]), usage)}).to_string(),
    ));
    Reply::Sse(events)
}

/// Chat Completions, for opencode (`write{filePath}`), pi (`write{path}`) and Copilot
/// (`create{path,file_text}`), all with `bash{command}`.
fn chat(body: &Value, workdir: &str, stream: bool, answers: Option<&Answers>) -> Reply {
    let tool_results = body["messages"].as_array().into_iter().flatten().filter(|m| m["role"] == "tool").count();
    let tools: Vec<&Value> = body["tools"].as_array().into_iter().flatten().collect();
    let tool_named = |name: &str| tools.iter().find(|t| t["function"]["name"] == name).copied();
    let script = step(body, !tools.is_empty(), tool_results, workdir, answers);
    let (text, call) = match script {
        Step::Chore | Step::Tool { .. } => ("Mock title".to_owned(), None),
        Step::Answer(reply) => (reply, None),
        Step::Write { path } => {
            let call = if tool_named("create").is_some() {
                ("create", json!({"path": path, "file_text": "hello from mock\n"}))
            } else if tool_named("write")
                .is_some_and(|t| t["function"]["parameters"]["properties"].get("filePath").is_some())
            {
                ("write", json!({"filePath": path, "content": "hello from mock\n"}))
            } else {
                ("write", json!({"path": path, "content": "hello from mock\n"}))
            };
            ("I'll do that now.".to_owned(), Some(call))
        }
        Step::Commit => (
            "I'll do that now.".to_owned(),
            Some(("bash", json!({"command": COMMIT, "description": "Commit the file"}))),
        ),
        Step::Done => (FINAL_TEXT.to_owned(), None),
    };
    let usage = json!({"prompt_tokens": INPUT_TOKENS, "completion_tokens": OUTPUT_TOKENS, "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS});
    let finish = if call.is_some() { "tool_calls" } else { "stop" };
    let tool_calls = call.map(|(name, arguments)| {
        json!([{"index": 0, "id": format!("call_mock_{tool_results}"), "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}])
    });
    if !stream {
        let mut message = json!({"role": "assistant", "content": text});
        if let Some(calls) = &tool_calls {
            message["tool_calls"] = calls.clone();
        }
        return Reply::Json(
            json!({"id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": "mock-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}),
        );
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": "mock-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    let mut events = vec![(None, chunk(json!({"role": "assistant", "content": text}), Value::Null))];
    if let Some(calls) = tool_calls {
        events.push((None, chunk(json!({"tool_calls": calls}), Value::Null)));
    }
    events.push((None, chunk(json!({}), json!(finish))));
    events.push((None, json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": "mock-model", "choices": [], "usage": usage}).to_string()));
    events.push((None, "[DONE]".to_owned()));
    Reply::Sse(events)
}
