//! `eden mcp`: eden as a Model Context Protocol server over stdio, for a parent agent (Claude
//! Code, Codex, opencode) or an orchestrator to start runs in eden's boundary, watch, steer and
//! review them. `wire.rs` is the protocol's framing, `tools.rs` the tools and resources,
//! `runs.rs` the runs it starts. Each request is answered on a thread of its own, so a `run`
//! that waits does not hold a `status` up; a cancelled request is answered by nothing.

mod runs;
mod tools;
mod wire;

use crate::cli::McpArgs;
use crate::error::Error;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tools::{Answer, Call, Server};
use wire::Incoming;

pub(crate) fn mcp(args: McpArgs) -> Result<i32, Error> {
    let layout = super::layout(args.repo.as_ref())?;
    let allowed = allowed(args.allow.as_deref())?;
    let board = crate::ui::top::Board::new(std::slice::from_ref(&layout));
    let server = Arc::new(Server { layout, allowed, starter: runs::Starter::new(), board: Mutex::new(board) });
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        crate::ui::print_note(
            "eden mcp speaks the Model Context Protocol on stdin and stdout, for an agent to start: \
             `claude mcp add eden -- eden mcp` (Ctrl-D ends it)",
        );
    }
    let calls: Arc<Mutex<HashMap<String, Arc<AtomicBool>>>> = Arc::default();
    let mut input = std::io::BufReader::new(std::io::stdin().lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = input.by_ref().take(wire::MAX_LINE as u64 + 1).read_until(b'\n', &mut line);
        match read {
            Ok(0) | Err(_) => return Ok(0),
            Ok(_) if line.len() > wire::MAX_LINE && !line.ends_with(b"\n") => {
                // Too long: refused, and the rest of it read past.
                let mut rest = Vec::new();
                while input.by_ref().take(wire::MAX_LINE as u64).read_until(b'\n', &mut rest).is_ok_and(|n| n > 0) {
                    if rest.ends_with(b"\n") {
                        break;
                    }
                    rest.clear();
                }
                wire::fail(&Value::Null, wire::INVALID_REQUEST, "Invalid Request: longer than 1 MiB");
                continue;
            }
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        match wire::parse(text.trim_end()) {
            Incoming::Bad { id, code, message } => wire::fail(&id, code, &message),
            Incoming::Response => {}
            Incoming::Notification { method, params } => {
                if method == "notifications/cancelled" {
                    let key = params["requestId"].to_string();
                    if let Some(flag) = calls.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
                        flag.store(true, Ordering::SeqCst);
                    }
                }
            }
            Incoming::Request { id, method, params } => request(&server, &calls, id, &method, params),
        }
    }
}

/// `--allow`: tool names, `default` (all but `merge` and `discard`) or `all`.
fn allowed(given: Option<&str>) -> Result<Vec<String>, Error> {
    let Some(given) = given else { return Ok(tools::DEFAULT_ALLOWED.iter().map(|name| (*name).to_owned()).collect()) };
    let mut allowed = Vec::new();
    for word in given.split(',').map(str::trim).filter(|word| !word.is_empty()) {
        let names: Vec<&str> = match word {
            "all" => tools::TOOLS.to_vec(),
            "default" => tools::DEFAULT_ALLOWED.to_vec(),
            name if tools::TOOLS.contains(&name) => vec![name],
            other => {
                return Err(Error::usage(format!("`--allow {other}`: there is no such tool"))
                    .with_hint(format!("allow some of: {}; or `default`, `all`", tools::TOOLS.join(", "))))
            }
        };
        for name in names {
            if !allowed.iter().any(|known| known == name) {
                allowed.push(name.to_owned());
            }
        }
    }
    Ok(allowed)
}

/// Answer a request; `tools/call` on a thread of its own.
fn request(
    server: &Arc<Server>,
    calls: &Arc<Mutex<HashMap<String, Arc<AtomicBool>>>>,
    id: Value,
    method: &str,
    params: Value,
) {
    match method {
        "initialize" => {
            let revision = wire::revision(params["protocolVersion"].as_str());
            wire::respond(
                &id,
                json!({
                    "protocolVersion": revision,
                    "capabilities": {"tools": {"listChanged": false}, "resources": {"subscribe": false, "listChanged": false}},
                    "serverInfo": {"name": "eden", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": "eden runs coding agents in a sandbox of their own, each in a worktree and branch of its own. `run` starts one (a manifest of the repository, or a prompt, an agent and a sandbox) and returns its id; `status`, `show` and `diff` say how it goes and what it changed; `steer` and `stop` act on a live run.",
                }),
            );
        }
        "ping" => wire::respond(&id, json!({})),
        "tools/list" => wire::respond(&id, tools::list(&server.allowed)),
        "resources/list" => wire::respond(&id, tools::resources(server)),
        "resources/templates/list" => wire::respond(
            &id,
            json!({"resourceTemplates": [
                {"uriTemplate": "eden://runs/{id}", "name": "a run's record", "mimeType": "application/json"},
                {"uriTemplate": "eden://logs/{id}", "name": "a run's log (its last 256 KiB)", "mimeType": "application/x-ndjson"},
            ]}),
        ),
        "resources/read" => match params["uri"].as_str().map(|uri| tools::read(server, uri)) {
            Some(Ok(result)) => wire::respond(&id, result),
            Some(Err(error)) => wire::fail(&id, wire::INVALID_PARAMS, &error.message),
            None => wire::fail(&id, wire::INVALID_PARAMS, "`uri` is required"),
        },
        "tools/call" => {
            let Some(name) = params["name"].as_str().map(str::to_owned) else {
                return wire::fail(&id, wire::INVALID_PARAMS, "`name` is required");
            };
            let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
            if !arguments.is_object() {
                return wire::fail(&id, wire::INVALID_PARAMS, "`arguments` must be an object");
            }
            let cancelled = Arc::new(AtomicBool::new(false));
            calls.lock().unwrap_or_else(|e| e.into_inner()).insert(id.to_string(), Arc::clone(&cancelled));
            let call = Call { progress_token: params["_meta"].get("progressToken").cloned(), cancelled };
            let (server, calls) = (Arc::clone(server), Arc::clone(calls));
            std::thread::spawn(move || {
                let answer = tools::call(&server, &name, &arguments, &call);
                calls.lock().unwrap_or_else(|e| e.into_inner()).remove(&id.to_string());
                if let Answer::Done(result) = answer {
                    wire::respond(&id, tool_result(result));
                }
            });
        }
        other => wire::fail(
            &id,
            wire::METHOD_NOT_FOUND,
            &format!("Method not found: `{}`", crate::redact::plain_line(other)),
        ),
    }
}

/// A tool's result as MCP has it: the structured value, and the same as text; an error as a
/// result the model reads (`isError`), with its hint.
fn tool_result(result: Result<Value, Error>) -> Value {
    match result {
        Ok(value) => json!({
            "content": [{"type": "text", "text": serde_json::to_string_pretty(&value).unwrap_or_default()}],
            "structuredContent": value,
            "isError": false,
        }),
        Err(error) => {
            let hint = error.hint.map(|hint| format!("\nhint: {hint}")).unwrap_or_default();
            json!({"content": [{"type": "text", "text": format!("{}{hint}", error.message)}], "isError": true})
        }
    }
}
