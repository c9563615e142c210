//! The real agent CLIs from npm, offline against the scripted model server: each writes a file,
//! commits it with a shell tool call and prints the completion signal; and each, against a
//! server that answers 401, fails with exit 3 and its own reason. `.ci/run` installs the CLIs;
//! elsewhere a missing CLI skips its test with a note (in CI it fails).

use crate::model_server::ModelServer;
use crate::support::{Run, TestEnv};

/// The CLI's path, or `None` (and a note) when it is not installed outside CI.
pub(crate) fn require(binary: &str) -> Option<std::path::PathBuf> {
    match which::which(binary) {
        Ok(path) => Some(path),
        Err(_) => {
            crate::support::skip(&format!("`{binary}` is not installed (npm install -g ...; see .ci/run)"));
            None
        }
    }
}

pub(crate) struct Agent {
    pub kind: &'static str,
    pub binary: &'static str,
    pub model: Option<&'static str>,
    /// Environment and config files pointing the CLI at the server.
    pub configure: fn(&TestEnv, &ModelServer) -> Vec<(String, String)>,
}

fn run(agent: &Agent, fail_with_401: bool) -> Option<(TestEnv, ModelServer, Run)> {
    run_with(agent, fail_with_401, "")
}

/// `run`, with `extra` at the end of the manifest.
fn run_with(agent: &Agent, fail_with_401: bool, extra: &str) -> Option<(TestEnv, ModelServer, Run)> {
    require(agent.binary)?;
    let env = TestEnv::new();
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), fail_with_401);
    let model = agent.model.map(|m| format!("model = \"{m}\"\n")).unwrap_or_default();
    let manifest = format!(
        "name = \"real\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"{}\"\n{model}\
         [loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n{extra}",
        agent.kind
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json-events"]);
    for (key, value) in (agent.configure)(&env, &server) {
        command.env(key, value);
    }
    let run = Run::from(command.output().unwrap());
    Some((env, server, run))
}

/// The `--json-events` stream and the run record its last event carries.
fn events(run: &Run) -> (Vec<serde_json::Value>, serde_json::Value) {
    let events: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}\n{}", run.stderr)))
        .collect();
    let last = events.last().unwrap_or_else(|| panic!("no events\n{}", run.stderr));
    assert_eq!(last["event"], "run_finished");
    let record = last["record"].clone();
    (events, record)
}

/// The successful run: merged commit, completion, session id, usage and tool calls.
fn assert_write_and_commit(agent: &Agent) {
    let Some((env, server, run)) = run(agent, false) else { return };
    run.assert_code(0);
    let (events, record) = events(&run);
    assert_eq!(record["completion_signal"], "<promise>COMPLETE</promise>", "{}", run.stderr);
    assert_eq!(
        record["merged_into"],
        "main",
        "{}\n{:#}\n{:?}\nmain: {:?}\nstatus: {}",
        run.stderr,
        record["iterations"][0]["tool_calls"],
        server.stats.paths.lock().unwrap(),
        env.log_subjects("main"),
        env.git(&["status", "--short"])
    );
    assert_eq!(env.log_subjects("main")[0], "add hello.txt");
    assert_eq!(std::fs::read_to_string(env.repo.join("hello.txt")).unwrap(), "hello from mock\n");
    let iteration = &record["iterations"][0];
    assert!(iteration["session_id"].as_str().is_some_and(|s| !s.is_empty()), "session id: {iteration}");
    // Tool calls as the events reported them while the agent ran.
    let calls: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "tool_call")
        .map(|e| format!("{} {}", e["name"].as_str().unwrap(), e["summary"].as_str().unwrap()))
        .collect();
    assert_eq!(iteration["tool_calls"].as_array().unwrap().len(), calls.len(), "the record lists the same calls");
    assert!(calls.iter().any(|c| c.contains("hello.txt")), "a file-writing tool call: {calls:?}");
    assert!(calls.iter().any(|c| c.contains("git add -A && git commit")), "the shell tool call: {calls:?}");
    assert_transcript(&env, &record, 0);
    // The history tells the same: the agent's real text in the replay, its tokens in the list.
    let show = env.eden(&["sessions", "show", "last", "--no-pager"]);
    show.assert_code(0);
    assert!(show.stdout.contains(crate::model_server::FINAL_TEXT), "{}", show.stdout);
    assert!(show.stdout.contains("hello.txt"), "{}", show.stdout);
    let listed = env.eden(&["sessions", "list", "--json"]).json()[0].clone();
    if agent.kind != "copilot" {
        assert_eq!(listed["input_tokens"], record["usage"]["input_tokens"]);
        assert_eq!(listed["output_tokens"], record["usage"]["output_tokens"]);
    }
    env.assert_pristine();
    if agent.kind != "copilot" {
        // Copilot reports no token counts; every other agent's must match what the server sent.
        let (input, output) = server.usage();
        let usage = &record["usage"];
        assert_eq!(
            (
                usage["input_tokens"].as_u64().unwrap() + usage["cache_read_tokens"].as_u64().unwrap(),
                usage["output_tokens"].as_u64().unwrap()
            ),
            (input, output),
            "usage in the record vs the server's: {usage}"
        );
    }
}

/// Iteration `index` of the record has its transcript captured under `.eden/sessions/<run-id>/`:
/// the agent's own file (opencode: its export), with the session id in it and the task's prompt.
pub(crate) fn assert_transcript(env: &TestEnv, record: &serde_json::Value, index: usize) {
    let iteration = &record["iterations"][index];
    let session = iteration["session_id"].as_str().unwrap();
    assert!(iteration["transcript_warning"].is_null(), "{iteration:#}");
    let transcript = &iteration["transcript"];
    let path = std::path::PathBuf::from(transcript["path"].as_str().unwrap_or_else(|| panic!("{iteration:#}")));
    let sessions = std::fs::canonicalize(env.repo.join(".eden/sessions")).unwrap();
    let run_id = record["id"].as_str().unwrap();
    assert_eq!(path.parent().unwrap(), sessions.join(run_id));
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with(&format!("main-{}-{session}.json", iteration["iteration"])), "{name}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(transcript["bytes"].as_u64().unwrap(), text.len() as u64);
    assert!(text.contains(session), "the session id in {name}");
    assert!(text.contains("create hello.txt and commit it"), "the prompt in {name}");
    assert!(std::path::Path::new(transcript["source"].as_str().unwrap()).is_absolute() || name.ends_with(".json"));
}

/// Against a 401: exit 3, the agent's own reason, recognisable as an authentication failure.
fn assert_401(agent: &Agent, expected_reason: &str) {
    let Some((env, _server, run)) = run(agent, true) else { return };
    run.assert_code(3);
    let error = run.error_text();
    assert!(error.contains(expected_reason), "the agent's reason in: {error}");
    assert!(error.contains("hint: log in once with"), "{error}");
    let (events, record) = events(&run);
    assert_eq!(record["error"]["agent_failure"], "authentication");
    assert!(events.iter().any(|e| e["event"] == "agent_error" && e["kind"] == "authentication"));
    env.assert_pristine();
}

pub(crate) fn claude_env(env: &TestEnv, server: &ModelServer) -> Vec<(String, String)> {
    vec![
        ("ANTHROPIC_BASE_URL".into(), server.url()),
        ("ANTHROPIC_API_KEY".into(), "dummy".into()),
        ("CLAUDE_CONFIG_DIR".into(), env.root().join("claude").display().to_string()),
        ("DISABLE_TELEMETRY".into(), "1".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into()),
        ("CLAUDE_CODE_MAX_RETRIES".into(), "0".into()),
    ]
}

/// `[agent] env` handing a sandboxed Claude Code what `claude_env` gives eden (a sandbox gets
/// only what the manifest names, never eden's environment).
pub(crate) const CLAUDE_AGENT_ENV: &str = "env = { ANTHROPIC_BASE_URL = \"${ANTHROPIC_BASE_URL}\", \
    ANTHROPIC_API_KEY = \"${ANTHROPIC_API_KEY}\", DISABLE_TELEMETRY = \"1\", \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", CLAUDE_CODE_MAX_RETRIES = \"0\" }";

pub(crate) const CLAUDE: Agent = Agent { kind: "claude-code", binary: "claude", model: None, configure: claude_env };

#[test]
fn claude_code_writes_commits_and_completes() {
    assert_write_and_commit(&CLAUDE);
}

#[test]
fn claude_code_401_is_an_agent_failure() {
    assert_401(&CLAUDE, "Failed to authenticate");
}

pub(crate) fn codex_env(env: &TestEnv, server: &ModelServer) -> Vec<(String, String)> {
    let home = env.root().join("codex");
    std::fs::create_dir_all(&home).unwrap();
    let config = format!(
        "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\n\
         base_url = \"{}/v1\"\nenv_key = \"MOCK_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 0\n\
         stream_max_retries = 0\n",
        server.url()
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
    vec![("CODEX_HOME".into(), home.display().to_string()), ("MOCK_API_KEY".into(), "dummy".into())]
}

pub(crate) const CODEX: Agent = Agent { kind: "codex", binary: "codex", model: Some("gpt-5.5"), configure: codex_env };

#[test]
fn codex_writes_commits_and_completes() {
    assert_write_and_commit(&CODEX);
}

#[test]
fn codex_401_is_an_agent_failure() {
    assert_401(&CODEX, "401 Unauthorized");
}

fn opencode_env(env: &TestEnv, server: &ModelServer) -> Vec<(String, String)> {
    let config = serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "provider": {
            "mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": { "baseURL": format!("{}/v1", server.url()), "apiKey": "dummy" },
                "models": { "mock-model": { "name": "Mock model" } }
            }
        }
    });
    let path = env.root().join("opencode.json");
    std::fs::write(&path, config.to_string()).unwrap();
    vec![("OPENCODE_CONFIG".into(), path.display().to_string()), ("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into())]
}

pub(crate) const OPENCODE: Agent =
    Agent { kind: "opencode", binary: "opencode", model: Some("mock/mock-model"), configure: opencode_env };

#[test]
fn opencode_writes_commits_and_completes() {
    assert_write_and_commit(&OPENCODE);
}

#[test]
fn opencode_401_is_an_agent_failure() {
    assert_401(&OPENCODE, "mock failure status 401");
}

pub(crate) fn pi_env(env: &TestEnv, server: &ModelServer) -> Vec<(String, String)> {
    let dir = env.root().join("pi");
    std::fs::create_dir_all(&dir).unwrap();
    let models = serde_json::json!({
        "providers": {
            "mockant": {
                "baseUrl": server.url(),
                "api": "anthropic-messages",
                "apiKey": "dummy",
                "models": [{ "id": "mock-model", "name": "Mock model" }]
            }
        }
    });
    std::fs::write(dir.join("models.json"), models.to_string()).unwrap();
    vec![("PI_CODING_AGENT_DIR".into(), dir.display().to_string())]
}

pub(crate) const PI: Agent = Agent { kind: "pi", binary: "pi", model: Some("mockant/mock-model"), configure: pi_env };

#[test]
fn pi_writes_commits_and_completes() {
    assert_write_and_commit(&PI);
}

#[test]
fn pi_401_is_an_agent_failure_although_pi_exits_0() {
    assert_401(&PI, "mock failure status 401");
}

fn copilot_env(env: &TestEnv, server: &ModelServer) -> Vec<(String, String)> {
    vec![
        ("COPILOT_PROVIDER_BASE_URL".into(), format!("{}/v1", server.url())),
        ("COPILOT_PROVIDER_TYPE".into(), "openai".into()),
        ("COPILOT_PROVIDER_API_KEY".into(), "dummy".into()),
        ("COPILOT_MODEL".into(), "mock-model".into()),
        ("COPILOT_OFFLINE".into(), "true".into()),
        ("XDG_CONFIG_HOME".into(), env.root().join("xdg").display().to_string()),
    ]
}

pub(crate) const COPILOT: Agent = Agent { kind: "copilot", binary: "copilot", model: None, configure: copilot_env };

#[test]
fn copilot_writes_commits_and_completes() {
    assert_write_and_commit(&COPILOT);
}

#[test]
fn copilot_401_is_an_agent_failure() {
    assert_401(&COPILOT, "Authentication failed");
}

#[test]
fn json_events_stream_the_tool_calls_as_they_happen() {
    let Some(_) = require("claude") else { return };
    let env = TestEnv::new();
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let path = env.write_manifest(
        "name = \"events\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n[loop]\nmax_iterations = 1\n",
    );
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json-events", "--quiet"]);
    for (key, value) in claude_env(&env, &server) {
        command.env(key, value);
    }
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let events: Vec<serde_json::Value> = run.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let tools: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "tool_call")
        .map(|e| format!("{} {}", e["name"].as_str().unwrap(), e["summary"].as_str().unwrap()))
        .collect();
    assert_eq!(tools.len(), 2, "{tools:?}");
    assert!(tools[0].starts_with("Write ") && tools[0].ends_with("/hello.txt"), "{tools:?}");
    assert_eq!(tools[1], "Bash git add -A && git commit -q -m 'add hello.txt'");
    assert!(events.iter().any(|e| e["event"] == "session_id"));
    assert!(events.iter().any(|e| e["event"] == "usage"));
    let last = events.last().unwrap();
    assert_eq!(last["event"], "run_finished");
    assert_eq!(last["record"]["merged_into"], "main");
}

/// With no credentials at all (an empty `HOME`, no key), the real CLIs fail before any request:
/// Claude Code says "Not logged in" on its stream, pi "No API key found" on stderr. Both are
/// authentication failures, with a hint that says how to log that agent in.
#[test]
fn agents_without_credentials_say_how_to_log_in() {
    for (kind, binary, said, hint) in [
        ("claude-code", "claude", "Not logged in", "hint: log in once with `claude` (then `/login`), or give it a key"),
        ("pi", "pi", "No API key found", "hint: log in once with `pi` (then `/login`)"),
    ] {
        if require(binary).is_none() {
            continue;
        }
        let env = TestEnv::new();
        let manifest =
            format!("name = \"nokey\"\nprompt = \"hi\"\n[agent]\nkind = \"{kind}\"\n[loop]\nmax_iterations = 1\n");
        let path = env.write_manifest(&manifest);
        let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
        for key in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"] {
            command.env_remove(key);
        }
        let run = Run::from(command.output().unwrap());
        run.assert_code(3);
        let error = run.error_text();
        assert!(error.contains(said), "{kind}: {error}");
        assert!(error.contains(hint), "{kind}: {error}");
        assert_eq!(run.record()["error"]["agent_failure"], "authentication", "{kind}");
        env.assert_pristine();
    }
}

/// Claude Code cuts and hashes a project folder name over 200 characters: the transcript is
/// still found (by its session id), for a worktree path well over that.
#[test]
fn claude_transcripts_are_found_behind_long_paths() {
    if require("claude").is_none() {
        return;
    }
    let env = TestEnv::new();
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let branch = format!("feature/{}", "a-branch-with-a-rather-long-name-".repeat(6));
    let manifest = format!(
        "name = \"long\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n\
         [branch]\nstrategy = \"named\"\nname = \"{branch}\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n"
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(claude_env(&env, &server));
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let record = run.json();
    let worktree = record["worktree"].as_str().unwrap();
    assert!(worktree.len() > 200, "{worktree}");
    assert_transcript(&env, &record, 0);
    let source = record["iterations"][0]["transcript"]["source"].as_str().unwrap();
    let folder = std::path::Path::new(source).parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    assert!(folder.len() < worktree.len(), "Claude's own (cut) folder name: {folder}");
}

/// A token cap below what the scripted server's answers add up to: the real CLI is stopped,
/// exit 8, the record says what it spent (the server's own count), the commit is kept.
fn assert_token_cap_stops(agent: &Agent) {
    let cap = crate::model_server::INPUT_TOKENS + crate::model_server::OUTPUT_TOKENS + 1;
    let Some((env, server, run)) = run_with(agent, false, &format!("[budget]\nmax_tokens = {cap}\n")) else { return };
    run.assert_code(8);
    let (_, record) = events(&run);
    assert_eq!(record["exit_reason"], "budget_exceeded", "{}", run.stderr);
    let budget = &record["error"]["budget"];
    assert_eq!(budget["cap"], "max_tokens");
    let usage = &record["usage"];
    let spent = usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap();
    assert!(spent > cap, "{usage}");
    let (served_in, served_out) = server.usage();
    assert!(spent <= served_in + served_out, "no more than the server counted: {usage} vs {served_in}+{served_out}");
    assert!(record["merged_into"].is_null(), "nothing merged");
    let _ = env;
}

#[test]
fn claude_code_is_stopped_by_a_token_cap() {
    assert_token_cap_stops(&CLAUDE);
}

#[test]
fn pi_is_stopped_by_a_token_cap() {
    assert_token_cap_stops(&PI);
}
