//! The tools `eden mcp` serves, each with its input's JSON Schema and a structured result, every
//! result bounded in size and the agent's text in it neutralized; and the runs as resources.
//! What a client passes is hostile input: it reaches no shell (runs are started by their
//! manifest's path, a quick run's fields written into a manifest of its own as TOML values), a
//! manifest outside the repository is refused, and a run id is looked up, never used as a path.

use super::runs::{outcome, Seen, Starter};
use super::wire;
use crate::error::Error;
use crate::layout::Layout;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Every tool, in the order they are listed.
pub(crate) const TOOLS: [&str; 8] = ["run", "status", "show", "diff", "steer", "stop", "merge", "discard"];

/// The tools a client may call unless `--allow` says otherwise.
pub(crate) const DEFAULT_ALLOWED: [&str; 6] = ["run", "status", "show", "diff", "steer", "stop"];

/// The most bytes of text a result carries.
const MAX_RESULT: usize = 64 << 10;
/// The most events `show` returns at once, and the most bytes of log it reads.
const MAX_EVENTS: u64 = 500;
const MAX_LOG_READ: u64 = 256 << 10;
/// The longest string kept of an event.
const MAX_STRING: usize = 2000;

/// What the server holds.
pub(crate) struct Server {
    pub(crate) layout: Layout,
    pub(crate) allowed: Vec<String>,
    pub(crate) starter: Starter,
    pub(crate) board: std::sync::Mutex<crate::ui::top::Board>,
}

/// A call under way: its progress token, and whether the client cancelled it.
pub(crate) struct Call {
    pub(crate) progress_token: Option<Value>,
    pub(crate) cancelled: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// A call's end: a result, or nothing to say (it was cancelled).
pub(crate) enum Answer {
    Done(Result<Value, Error>),
    Cancelled,
}

/// The tools as `tools/list` says them: the allowed ones.
pub(crate) fn list(allowed: &[String]) -> Value {
    let tools: Vec<Value> =
        TOOLS.iter().filter(|name| allowed.iter().any(|a| a == *name)).map(|name| describe(name)).collect();
    json!({ "tools": tools })
}

fn describe(name: &str) -> Value {
    let run_id = json!({"type": "string", "description": "A run id, a prefix of one, or `last`"});
    let (description, properties, required): (&str, Value, Vec<&str>) = match name {
        "run" => (
            "Start an eden run in its own worktree and sandbox: a manifest of the repository, or a quick run (a prompt, an agent and a sandbox). Returns the run's id at once; `wait: true` waits for it to end (progress is reported) and returns how it ended.",
            json!({
                "manifest": {"type": "string", "description": "A manifest file in the repository, relative to its root"},
                "prompt": {"type": "string", "description": "A quick run's task"},
                "agent": {"type": "string", "enum": quick_agents(), "description": "A quick run's agent"},
                "model": {"type": "string"},
                "sandbox": {"type": "string", "enum": QUICK_SANDBOXES, "description": "A quick run's sandbox"},
                "image": {"type": "string", "description": "docker, podman, kubernetes: the image"},
                "checks": {"type": "array", "items": {"type": "string"}, "maxItems": 10, "description": "Commands that must pass, run in the sandbox"},
                "attempts": {"type": "integer", "minimum": 1, "maximum": 8},
                "max_iterations": {"type": "integer", "minimum": 1, "maximum": 50},
                "wait": {"type": "boolean", "description": "Wait for the run to end (default false)"}
            }),
            vec![],
        ),
        "status" => (
            "How a run is going or how it ended; without `run`, every live run of the repository.",
            json!({"run": run_id}),
            vec![],
        ),
        "show" => (
            "A run's events from `from` (a byte offset into its log; 0 or absent: its start), at most `max_events`; `next` is where the next call goes on from.",
            json!({"run": run_id, "from": {"type": "integer", "minimum": 0}, "max_events": {"type": "integer", "minimum": 1, "maximum": MAX_EVENTS}}),
            vec!["run"],
        ),
        "diff" => (
            "What a run changed against its base: a stat, and the patch cut to `max_bytes`.",
            json!({"run": run_id, "stat_only": {"type": "boolean"}, "max_bytes": {"type": "integer", "minimum": 1024, "maximum": 1048576}}),
            vec!["run"],
        ),
        "steer" => (
            "Interrupt a live run's agent and start its next iteration with `prompt`.",
            json!({"run": run_id, "prompt": {"type": "string", "minLength": 1}}),
            vec!["run", "prompt"],
        ),
        "stop" => ("Stop a live run as Ctrl-C would: its work is kept on its branch.", json!({"run": run_id}), vec!["run"]),
        "merge" => ("Merge a kept run's branch into its base, as the run's own merge would.", json!({"run": run_id}), vec!["run"]),
        _ => ("Remove a kept run's branch and worktree (its record stays).", json!({"run": run_id}), vec!["run"]),
    };
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required, "additionalProperties": false},
    })
}

const QUICK_SANDBOXES: [&str; 4] = ["docker", "podman", "isolated", "kubernetes"];

fn quick_agents() -> Vec<&'static str> {
    use crate::agent::{AgentKind, Family};
    AgentKind::names()
        .into_iter()
        .filter(|name| AgentKind::from_name(name).is_some_and(|kind| kind.family() != Family::Cli))
        .collect()
}

/// Carry out `tools/call`.
pub(crate) fn call(server: &Server, name: &str, arguments: &Value, call: &Call) -> Answer {
    if !TOOLS.contains(&name) {
        return Answer::Done(Err(
            Error::usage(format!("there is no tool `{name}`")).with_hint(format!("the tools: {}", TOOLS.join(", ")))
        ));
    }
    if !server.allowed.iter().any(|allowed| allowed == name) {
        return Answer::Done(Err(Error::usage(format!("`{name}` is not allowed by this eden mcp"))
            .with_hint(format!("the person who started it may allow it: `eden mcp --allow default,{name}`"))));
    }
    let done = |result| Answer::Done(result);
    match name {
        "run" => run(server, arguments, call),
        "status" => done(status(server, arguments)),
        "show" => done(show(server, arguments)),
        "diff" => done(diff(server, arguments)),
        "steer" => done(
            text(arguments, "run")
                .and_then(|run| Ok((run, text(arguments, "prompt")?)))
                .and_then(|(run, prompt)| super::super::steer::deliver(&server.layout, &run, &prompt))
                .map(|id| json!({"steered": id})),
        ),
        "stop" => done(
            text(arguments, "run")
                .and_then(|run| super::super::steer::stop(&server.layout, &run).map(|()| run))
                .map(|run| json!({"stopping": run})),
        ),
        _ => done(text(arguments, "run").and_then(|run| review(server, name, &run))),
    }
}

fn text(arguments: &Value, key: &str) -> Result<String, Error> {
    match &arguments[key] {
        Value::String(text) if !text.trim().is_empty() => Ok(text.clone()),
        Value::Null => Err(Error::usage(format!("`{key}` is required"))),
        _ => Err(Error::usage(format!("`{key}` must be a string that is not empty"))),
    }
}

fn optional<'a>(arguments: &'a Value, key: &str) -> Option<&'a Value> {
    arguments.get(key).filter(|value| !value.is_null())
}

/// `run`.
fn run(server: &Server, arguments: &Value, call: &Call) -> Answer {
    let manifest = match manifest_for(server, arguments) {
        Ok(manifest) => manifest,
        Err(error) => return Answer::Done(Err(error)),
    };
    // Waiting, the ids come with the end; else every attempt's is said now.
    let wait = optional(arguments, "wait").and_then(Value::as_bool) == Some(true);
    let started = match server.starter.start(&manifest, &server.layout.root, !wait) {
        Ok(started) => started,
        Err(error) => return Answer::Done(Err(error)),
    };
    if !wait {
        let seen = started.seen();
        return Answer::Done(Ok(json!({"runs": seen.ids, "status": "running"})));
    }
    let cancelled = || call.cancelled.load(std::sync::atomic::Ordering::SeqCst);
    let mut progress = |seen: &Seen| {
        if let Some(token) = &call.progress_token {
            wire::notify(
                "notifications/progress",
                json!({"progressToken": token, "progress": seen.progress, "message": seen.message}),
            );
        }
    };
    match started.wait(&cancelled, &mut progress) {
        None => Answer::Cancelled,
        Some(seen) => Answer::Done(Ok(json!({
            "runs": seen.ids,
            "status": "ended",
            "exit_code": seen.exited,
            "ended": seen.records.iter().map(outcome).collect::<Vec<_>>(),
        }))),
    }
}

/// The manifest a `run` call names (inside the repository), or one written for a quick run.
fn manifest_for(server: &Server, arguments: &Value) -> Result<PathBuf, Error> {
    let root = &server.layout.root;
    if let Some(manifest) = optional(arguments, "manifest") {
        let quick = ["prompt", "agent", "sandbox", "image", "checks", "attempts", "model", "max_iterations"];
        if let Some(key) = quick.iter().find(|key| optional(arguments, key).is_some()) {
            return Err(Error::usage(format!(
                "`{key}` is for a quick run: a run of a manifest takes its settings from it"
            )));
        }
        let written = manifest.as_str().ok_or_else(|| Error::usage("`manifest` must be a string"))?;
        let path = root.join(written);
        let inside = match (path.canonicalize(), root.canonicalize()) {
            (Ok(path), Ok(root)) => path.starts_with(&root) && path.is_file(),
            _ => false,
        };
        if !inside {
            return Err(Error::usage(format!("`{written}` is not a manifest file inside the repository"))
                .with_hint("name a manifest of the repository, relative to its root: `plans/fix.toml`"));
        }
        return Ok(path);
    }
    quick_manifest(server, arguments)
}

/// A quick run's manifest, its values written as TOML values (never spliced as text).
fn quick_manifest(server: &Server, arguments: &Value) -> Result<PathBuf, Error> {
    let prompt = text(arguments, "prompt")
        .map_err(|error| error.with_hint("give `manifest`, or `prompt`, `agent` and `sandbox`"))?;
    let agent = text(arguments, "agent")?;
    if !quick_agents().contains(&agent.as_str()) {
        return Err(Error::usage(format!("`agent = {agent}` is not one of {}", quick_agents().join(", "))));
    }
    let sandbox = text(arguments, "sandbox")?;
    if !QUICK_SANDBOXES.contains(&sandbox.as_str()) {
        return Err(Error::usage(format!(
            "`sandbox = {sandbox}`: a run from eden mcp runs in {}",
            QUICK_SANDBOXES.join(", ")
        ))
        .with_hint("a run on this machine needs a manifest in the repository that says so"));
    }
    let mut table = toml::Table::new();
    table.insert("name".into(), "mcp".into());
    table.insert("prompt".into(), prompt.into());
    let mut agent_table = toml::Table::new();
    agent_table.insert("kind".into(), agent.into());
    if let Some(model) = optional(arguments, "model").and_then(Value::as_str) {
        agent_table.insert("model".into(), model.into());
    }
    table.insert("agent".into(), agent_table.into());
    let mut sandbox_table = toml::Table::new();
    sandbox_table.insert("kind".into(), sandbox.into());
    if let Some(image) = optional(arguments, "image").and_then(Value::as_str) {
        sandbox_table.insert("image".into(), image.into());
    }
    table.insert("sandbox".into(), sandbox_table.into());
    if let Some(checks) = optional(arguments, "checks").and_then(Value::as_array) {
        let checks: Vec<toml::Value> = checks
            .iter()
            .filter_map(Value::as_str)
            .map(|cmd| toml::Value::Table(toml::Table::from_iter([("cmd".to_owned(), toml::Value::from(cmd))])))
            .collect();
        table.insert("check".into(), checks.into());
    }
    if let Some(attempts) = optional(arguments, "attempts").and_then(Value::as_i64) {
        table.insert("attempts".into(), attempts.clamp(1, 8).into());
    }
    if let Some(max) = optional(arguments, "max_iterations").and_then(Value::as_i64) {
        table.insert(
            "loop".into(),
            toml::Table::from_iter([("max_iterations".to_owned(), max.clamp(1, 50).into())]).into(),
        );
    }
    let folder = server.layout.mcp_manifests();
    fs_err::create_dir_all(&folder)
        .map_err(|err| Error::internal("cannot write the run's manifest").with_source(err))?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let path = folder.join(format!("quick-{nanos}.toml"));
    let text =
        toml::to_string(&table).map_err(|err| Error::internal("cannot write the run's manifest").with_source(err))?;
    fs_err::write(&path, text).map_err(|err| Error::internal("cannot write the run's manifest").with_source(err))?;
    Ok(path)
}

/// `status`.
fn status(server: &Server, arguments: &Value) -> Result<Value, Error> {
    if let Some(run) = optional(arguments, "run") {
        let run = run.as_str().ok_or_else(|| Error::usage("`run` must be a string"))?;
        let (runs, _) = crate::sessions::history::load(&server.layout);
        let light = crate::sessions::history::find(&runs, run)?;
        let record = crate::record::RunRecord::load(&light.record_path)?;
        let mut one = outcome(&serde_json::to_value(&record).unwrap_or(Value::Null));
        one["live"] = json!(light.status.observed(&light.process) == crate::record::RunStatus::Running);
        one["iteration"] = json!(record.iterations.last().map_or(0, |it| it.iteration));
        return Ok(json!({"runs": [one]}));
    }
    let mut board = server.board.lock().unwrap_or_else(|e| e.into_inner());
    board.refresh(None);
    let live: Vec<Value> = board
        .runs()
        .filter(|run| run.live)
        .take(100)
        .map(|run| {
            let (iteration, of) = run.iteration();
            let mut one = outcome(&serde_json::to_value(&run.record).unwrap_or(Value::Null));
            one["live"] = json!(true);
            one["phase"] = json!(format!("{:?}", run.record.phase).to_lowercase());
            one["iteration"] = json!(iteration);
            one["max_iterations"] = json!(of);
            one["last_line"] = json!(run.log.last_line);
            one
        })
        .collect();
    Ok(json!({"runs": live}))
}

/// `show`: events of the run's log from `from`, each string neutralized and cut.
fn show(server: &Server, arguments: &Value) -> Result<Value, Error> {
    use std::io::{BufRead, Read, Seek};
    let record = record_of(server, &text(arguments, "run")?)?;
    let Some(log) = record.log.as_ref() else {
        return Err(Error::usage(format!("run `{}` has no log", record.id)));
    };
    let from = optional(arguments, "from").and_then(Value::as_u64).unwrap_or(0);
    let most = optional(arguments, "max_events").and_then(Value::as_u64).unwrap_or(100).clamp(1, MAX_EVENTS);
    let mut file = crate::safe_fs::open_regular(log)
        .ok_or_else(|| Error::usage(format!("run `{}`'s log cannot be read", record.id)))?;
    file.seek(std::io::SeekFrom::Start(from)).map_err(|err| Error::usage("`from` is past the log").with_source(err))?;
    let mut reader = std::io::BufReader::new(file.take(MAX_LOG_READ));
    let (mut events, mut next, mut bytes) = (Vec::new(), from, 0usize);
    let mut line = String::new();
    while (events.len() as u64) < most {
        line.clear();
        let read = reader.read_line(&mut line).unwrap_or(0);
        if read == 0 || !line.ends_with('\n') {
            break;
        }
        next += read as u64;
        let Ok(mut value) = serde_json::from_str::<Value>(line.trim_end()) else { continue };
        if value["run_id"] != json!(record.id) {
            continue;
        }
        neutralize(&mut value);
        bytes += value.to_string().len();
        events.push(value);
        if bytes > MAX_RESULT {
            break;
        }
    }
    let more =
        crate::safe_fs::open_regular(log).and_then(|file| file.metadata().ok()).is_some_and(|meta| meta.len() > next);
    Ok(json!({"run": record.id, "events": events, "next": next, "more": more}))
}

/// Every string in `value` made plain (line breaks kept) and cut to `MAX_STRING`.
fn neutralize(value: &mut Value) {
    match value {
        Value::String(text) => {
            let lines: Vec<String> = text.split('\n').map(crate::redact::plain_line).collect();
            let mut plain = lines.join("\n");
            if plain.chars().count() > MAX_STRING {
                plain = plain.chars().take(MAX_STRING).collect::<String>() + "…";
            }
            *text = plain;
        }
        Value::Array(items) => items.iter_mut().for_each(neutralize),
        Value::Object(map) => map.values_mut().for_each(neutralize),
        _ => {}
    }
}

/// `diff`: a stat and the patch, cut.
fn diff(server: &Server, arguments: &Value) -> Result<Value, Error> {
    let record = record_of(server, &text(arguments, "run")?)?;
    let git = crate::git::Git::new(&server.layout.root);
    let Some(tip) = super::super::last_commit(&git, &record)? else {
        return Ok(
            json!({"run": record.id, "stat": "", "patch": "", "truncated": false, "note": "the run made no commits"}),
        );
    };
    let range = format!("{}..{tip}", record.base_commit);
    let base = ["diff", "--no-ext-diff", "--no-textconv", "--no-color"];
    let stat = git.run(base.iter().copied().chain(["--stat", "--end-of-options", &range]))?;
    let max = optional(arguments, "max_bytes").and_then(Value::as_u64).unwrap_or(MAX_RESULT as u64).clamp(1024, 1 << 20)
        as usize;
    let (patch, truncated) = match optional(arguments, "stat_only").and_then(Value::as_bool) {
        Some(true) => (String::new(), false),
        _ => {
            let patch = git.run(base.iter().copied().chain(["--end-of-options", &range]))?;
            let cut = patch.len() > max;
            let mut end = patch.len().min(max);
            while !patch.is_char_boundary(end) {
                end -= 1;
            }
            (patch[..end].to_owned(), cut)
        }
    };
    let plain = |text: &str| text.split('\n').map(crate::redact::plain_line).collect::<Vec<_>>().join("\n");
    Ok(json!({"run": record.id, "stat": plain(&stat), "patch": plain(&patch), "truncated": truncated}))
}

/// `merge` and `discard`, as `eden merge|discard RUN` do them.
fn review(server: &Server, what: &str, run: &str) -> Result<Value, Error> {
    let record = record_of(server, run)?;
    let exe =
        std::env::current_exe().map_err(|err| Error::internal("cannot find eden's own executable").with_source(err))?;
    let output = crate::process::ProcessBuilder::new(exe)
        .args([what, record.id.as_str(), "--json", "--repo"])
        .arg(&server.layout.root)
        .env("NO_COLOR", "1")
        .output()
        .map_err(|err| Error::internal(format!("cannot run `eden {what}`")).with_source(err))?;
    if !output.success() {
        let said = output.stderr.lines().filter(|line| !line.trim().is_empty()).collect::<Vec<_>>().join(" ");
        return Err(Error::usage(crate::redact::plain_line(&said)));
    }
    let after =
        serde_json::from_str::<Value>(output.stdout.trim()).map(|record| outcome(&record)).unwrap_or(Value::Null);
    Ok(json!({"run": record.id, "done": what, "record": after}))
}

fn record_of(server: &Server, run: &str) -> Result<crate::record::RunRecord, Error> {
    let (runs, _) = crate::sessions::history::load(&server.layout);
    let light = crate::sessions::history::find(&runs, run)?;
    crate::record::RunRecord::load(&light.record_path)
}

/// `resources/list`: the newest runs' records and logs.
pub(crate) fn resources(server: &Server) -> Value {
    let (runs, _) = crate::sessions::history::load(&server.layout);
    let mut listed = Vec::new();
    for run in runs.iter().take(50) {
        let name = crate::redact::plain_line(&run.name);
        listed.push(json!({"uri": format!("eden://runs/{}", run.id), "name": format!("run {} ({name})", run.id), "mimeType": "application/json"}));
        if run.log.is_some() {
            listed.push(json!({"uri": format!("eden://logs/{}", run.id), "name": format!("log of {} ({name})", run.id), "mimeType": "application/x-ndjson"}));
        }
    }
    json!({"resources": listed})
}

/// `resources/read`: a run's record, or the end of its log (the last `MAX_LOG_READ` bytes).
pub(crate) fn read(server: &Server, uri: &str) -> Result<Value, Error> {
    use std::io::{Read, Seek};
    let unknown = || Error::usage(format!("no resource `{}`", crate::redact::plain_line(uri)));
    let (kind, id) = uri.strip_prefix("eden://").and_then(|rest| rest.split_once('/')).ok_or_else(unknown)?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(unknown());
    }
    let (runs, _) = crate::sessions::history::load(&server.layout);
    let run = runs.iter().find(|run| run.id == id).ok_or_else(unknown)?;
    let (path, mime) = match kind {
        "runs" => (run.record_path.clone(), "application/json"),
        "logs" => (run.log.clone().ok_or_else(unknown)?, "application/x-ndjson"),
        _ => return Err(unknown()),
    };
    let mut file = crate::safe_fs::open_regular(&path).ok_or_else(unknown)?;
    let len = file.metadata().map(|meta| meta.len()).unwrap_or(0);
    let from = if kind == "logs" { len.saturating_sub(MAX_LOG_READ) } else { 0 };
    let _ = file.seek(std::io::SeekFrom::Start(from));
    let mut bytes = Vec::new();
    let _ = file.take(4 << 20).read_to_end(&mut bytes);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if from > 0 {
        // Whole lines only.
        text = text.split_once('\n').map_or(String::new(), |(_, rest)| rest.to_owned());
    }
    if kind == "logs" {
        // A record names its log, and a record eden did not write may name any file of this
        // user's: only the lines that are this run's events are served.
        let of_run = |line: &&str| {
            serde_json::from_str::<Value>(line)
                .is_ok_and(|event| event["run_id"] == json!(id) && event["event"].is_string())
        };
        text = text.lines().filter(of_run).map(|line| format!("{line}\n")).collect();
    }
    let text = crate::redact::apply(&text).into_owned();
    Ok(json!({"contents": [{"uri": uri, "mimeType": mime, "text": text}]}))
}
