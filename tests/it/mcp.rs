//! `eden mcp`: the official MCP SDK's client (`tests/mcp/client.mjs`, `@modelcontextprotocol/sdk`
//! installed by `.ci/run`) drives it over stdio; raw JSON-RPC lines test what a client may get
//! wrong, and what a client may not do.

use crate::support::{Run, TestEnv, EDEN};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where `.ci/run` installs the SDK.
fn sdk() -> Option<std::path::PathBuf> {
    let dir =
        std::env::var_os("EDEN_TEST_MCP_SDK").map_or_else(|| "/opt/eden-test-node".into(), std::path::PathBuf::from);
    if dir.join("node_modules/@modelcontextprotocol/sdk/package.json").is_file() {
        return Some(dir);
    }
    crate::support::skip(
        "the MCP SDK is not installed (`npm install --prefix /opt/eden-test-node @modelcontextprotocol/sdk`)",
    );
    None
}

/// The repository's plans: a run that commits (after a second, so that its progress is told well
/// before its end: the SDK's client runs notification handlers a moment after it reads them, and
/// a progress told together with the answer finds its handler gone), one that waits to be
/// steered, a slow one.
fn plans(env: &TestEnv) {
    env.write(
        "plans/quick.toml",
        "name = \"quick\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\n\
         args = [\"-c\", \"cat >/dev/null; sleep 1; echo hi > quick.txt; git add quick.txt; git -c user.name=a -c user.email=a@b commit -qm quick; echo '<promise>COMPLETE</promise>'\"]\n\
         [loop]\nmax_iterations = 1\n",
    );
    env.write(
        "plans/steer.toml",
        "name = \"steer\"\nprompt = \"the first prompt\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\n\
         args = [\"-c\", \"p=$(cat); case \\\"$p\\\" in *STEERED*) echo \\\"$p\\\" > got.txt; git add got.txt; git -c user.name=a -c user.email=a@b commit -qm steered; echo '<promise>COMPLETE</promise>';; *) echo working; sleep 300;; esac\"]\n\
         [loop]\nmax_iterations = 1\n",
    );
    env.write(
        "plans/slow.toml",
        "name = \"slow\"\nprompt = \"x\"\n[agent]\nkind = \"simulated\"\nline_delay = \"1s\"\nlines = [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\", \"<promise>COMPLETE</promise>\"]\n",
    );
}

/// Until no run of the repository is going.
fn all_ended(env: &TestEnv) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let list = env.eden(&["sessions", "list", "--json"]);
        let live = list.json().as_array().unwrap().iter().filter(|run| run["status"] == "running").count();
        if live == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "runs still going: {}", list.stdout);
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_official_client_runs_waits_reads_steers_is_refused_and_cancels() {
    let Some(sdk) = sdk() else { return };
    let env = TestEnv::new();
    plans(&env);
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.mjs");
    let mut node = Command::new("node");
    node.arg(&script).arg(&sdk).arg(EDEN).arg(&env.repo).current_dir(&env.repo);
    env.apply_env(&mut node);
    let run = Run::from(node.output().unwrap());
    assert_eq!(run.code, 0, "the client failed:\n{}", run.stderr);
    let seen: Value =
        serde_json::from_str(run.stdout.trim()).unwrap_or_else(|_| panic!("{}\n{}", run.stdout, run.stderr));

    assert_eq!(seen["server"]["name"], "eden");
    assert_eq!(
        seen["tools"],
        json!(["run", "status", "show", "diff", "steer", "stop"]),
        "merge and discard need --allow"
    );
    let ran = &seen["ran"];
    assert_eq!(ran["status"], "ended", "{ran}");
    let ended = &ran["ended"][0];
    assert_eq!((ended["exit_code"].as_i64(), ended["merged_into"].as_str()), (Some(0), Some("main")), "{ran}");
    assert!(!seen["progress"].as_array().unwrap().is_empty(), "progress was told: {seen}");
    assert_eq!(seen["listed"], true);
    assert_eq!(seen["record_id"], ran["runs"][0]);
    assert!(seen["shown"]["events"].as_u64().unwrap() <= 5 && seen["shown"]["more"] == true, "{}", seen["shown"]);
    assert!(seen["diff"]["stat"].as_str().unwrap().contains("quick.txt"), "{}", seen["diff"]);
    assert!(env.log_subjects("main").contains(&"quick".to_owned()));

    // Steered: the run's agent got the prompt and committed.
    assert!(seen["steered"]["steered"].is_string(), "{seen}");
    let steered = &seen["steered_end"];
    assert_eq!((steered["exit_code"].as_i64(), steered["commits"].as_u64()), (Some(0), Some(1)), "{steered}");

    let merge = &seen["merge"];
    assert_eq!(merge["isError"], true);
    assert!(merge["text"].as_str().unwrap().contains("`merge` is not allowed"), "{merge}");

    // Cancelled: the client stopped waiting, the server answered on, the run went on.
    assert!(
        seen["cancelled"].as_str().unwrap().contains("enough") || seen["cancelled"].as_str().unwrap().contains("Abort"),
        "{seen}"
    );
    assert!(seen["after_cancel_live"].as_u64().unwrap() >= 1, "{seen}");
    all_ended(&env);
}

/// `eden mcp` with its stdin and stdout piped: lines in, lines out.
struct Raw {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Raw {
    fn start(env: &TestEnv, args: &[&str]) -> Raw {
        let mut all = vec!["mcp"];
        all.extend_from_slice(args);
        let mut child =
            env.eden_command(&all).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Raw { child, out }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn answer(&mut self) -> Value {
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line:?}"))
    }

    fn call(&mut self, id: u32, tool: &str, arguments: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}).to_string());
        self.answer()
    }
}

#[test]
fn a_malformed_request_is_an_error_and_the_server_stays_up() {
    let env = TestEnv::new();
    let mut raw = Raw::start(&env, &[]);
    raw.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
    assert_eq!(raw.answer()["result"]["protocolVersion"], "2024-11-05", "an older revision it speaks is kept");
    for (line, code) in [
        ("{this is not json", -32700),
        ("[1, 2, 3]", -32600),
        ("{\"jsonrpc\":\"1.0\",\"id\":2,\"method\":\"ping\"}", -32600),
        ("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"no/such\"}", -32601),
        ("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"status\",\"arguments\":[1]}}", -32602),
        ("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/read\",\"params\":{\"uri\":\"eden://runs/../../etc/passwd\"}}", -32602),
    ] {
        raw.send(line);
        let answer = raw.answer();
        assert_eq!(answer["error"]["code"], code, "{line} → {answer}");
    }
    raw.send(&format!("{{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"pad\":\"{}\"}}", "x".repeat(2 << 20)));
    assert_eq!(raw.answer()["error"]["code"], -32600, "a line over 1 MiB");
    raw.send("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
    assert_eq!(raw.answer(), json!({"jsonrpc": "2.0", "id": 7, "result": {}}));

    // What a client may not do: a manifest outside the repository, a run on this machine, an unknown tool.
    let outside = raw.call(8, "run", json!({"manifest": "../gitconfig"}));
    assert!(
        outside["result"]["content"][0]["text"].as_str().unwrap().contains("not a manifest file inside the repository"),
        "{outside}"
    );
    let host = raw.call(9, "run", json!({"prompt": "rm -rf ~", "agent": "simulated", "sandbox": "none"}));
    assert_eq!(host["result"]["isError"], true, "{host}");
    let unknown = raw.call(10, "format_disk", json!({}));
    assert_eq!(unknown["result"]["isError"], true);
    drop(raw.child.stdin.take());
    assert_eq!(raw.child.wait().unwrap().code(), Some(0), "stdin closed: the server ends");
    env.assert_pristine();
}

#[test]
fn allow_chooses_the_tools_and_a_wrong_one_is_refused() {
    let env = TestEnv::new();
    let bad = env.eden(&["mcp", "--allow", "run,format_disk"]);
    bad.assert_code(2);
    assert!(bad.error_text().contains("`--allow format_disk`: there is no such tool"), "{}", bad.error_text());
    let mut raw = Raw::start(&env, &["--allow", "default,merge"]);
    raw.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    let names: Vec<String> = raw.answer()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["run", "status", "show", "diff", "steer", "stop", "merge"]);
    let mut only = Raw::start(&env, &["--allow", "status"]);
    let refused = only.call(2, "run", json!({"manifest": "x.toml"}));
    assert!(refused["result"]["content"][0]["text"].as_str().unwrap().contains("`run` is not allowed"), "{refused}");
}

#[test]
fn claude_code_runs_a_task_in_docker_through_eden_mcp() {
    use crate::model_server::ModelServer;
    if crate::real_agents::require("claude").is_none() || !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    env.write(
        "plans/box.toml",
        &crate::support::with_test_runtime(&crate::containers::manifest("docker", crate::containers::COMMIT, "")),
    );
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let config = env.root().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"eden": {"type": "stdio", "command": EDEN, "args": ["mcp"]}}}).to_string(),
    )
    .unwrap();
    let mut claude = Command::new("claude");
    claude
        .args(["-p", "Run plans/box.toml with eden and tell me how it ended.", "--output-format", "text"])
        .arg("--mcp-config")
        .arg(&config)
        .args(["--strict-mcp-config", "--allowedTools", crate::model_server::EDEN_RUN_TOOL])
        .current_dir(&env.repo)
        .stdin(Stdio::null());
    env.apply_env(&mut claude);
    for (key, value) in crate::real_agents::claude_env(&env, &server) {
        claude.env(key, value);
    }
    let run = Run::from(claude.output().unwrap());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // The run landed, in docker, and Claude got its result.
    assert!(
        env.log_subjects("main").contains(&"from the box".to_owned()),
        "{:?}\n{}",
        env.log_subjects("main"),
        run.stdout
    );
    let record = env.last_record();
    assert_eq!((record["sandbox"].as_str(), record["merged_into"].as_str()), (Some("docker"), Some("main")));
    assert!(
        run.stdout.contains("eden answered") && run.stdout.contains(record["id"].as_str().unwrap()),
        "{}",
        run.stdout
    );
}

#[test]
fn a_quick_run_goes_in_a_sandbox_with_its_fields_as_values() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let mut raw = Raw::start(&env, &[]);
    // A prompt that would break a manifest written as text, and a check.
    let prompt = "say \"hi\"\n[sandbox]\nkind = \"none\"\n<promise>COMPLETE</promise>";
    let ran = raw.call(
        1,
        "run",
        json!({"prompt": prompt, "agent": "simulated", "sandbox": "docker", "image": crate::containers::IMAGE,
               "checks": ["test -f README.md"], "max_iterations": 2, "wait": true}),
    );
    let result = &ran["result"]["structuredContent"];
    assert_eq!(result["status"], "ended", "{ran}");
    let record = env.last_record();
    assert_eq!(record["sandbox"], "docker", "the prompt's text did not become a key");
    assert_eq!(record["iterations"][0]["prompt"].as_str().unwrap().trim_end(), prompt);
    assert_eq!(record["checks"][0]["outcome"], "ok", "{record}");
    assert_eq!(record["exit_code"], 0);
}

#[test]
fn a_run_of_several_attempts_returns_each_id() {
    let env = TestEnv::new();
    env.write(
        "plans/twice.toml",
        "name = \"twice\"\nprompt = \"x\"\nattempts = 2\n[agent]\nkind = \"simulated\"\nline_delay = \"200ms\"\nlines = [\"a\", \"<promise>COMPLETE</promise>\"]\n",
    );
    env.git(&["add", "plans"]);
    env.git(&["commit", "-qm", "plans"]);
    let mut raw = Raw::start(&env, &[]);
    let started = raw.call(1, "run", json!({"manifest": "plans/twice.toml"}));
    let runs = started["result"]["structuredContent"]["runs"].as_array().unwrap_or_else(|| panic!("{started}")).clone();
    assert_eq!(runs.len(), 2, "{started}");
    let waited = raw.call(2, "run", json!({"manifest": "plans/twice.toml", "wait": true}));
    let ended = waited["result"]["structuredContent"]["ended"].as_array().unwrap_or_else(|| panic!("{waited}")).clone();
    assert_eq!(ended.len(), 2, "{waited}");
    assert!(ended.iter().all(|run| run["exit_code"] == 0 && run["attempt"]["of"] == 2), "{waited}");
    all_ended(&env);
}

#[test]
fn a_planted_record_naming_another_file_as_its_log_serves_none_of_it() {
    let env = TestEnv::new();
    let secret = env.root().join("id_rsa");
    std::fs::write(&secret, "-----BEGIN OPENSSH PRIVATE KEY-----\nplanted-secret-bytes\n").unwrap();
    let id = "20261128-090000-abcdef";
    let mut record: Value = serde_json::from_str(include_str!("../fixtures/top/record.json")).unwrap();
    record["id"] = json!(id);
    record["log"] = json!(secret);
    let runs = env.repo.join(".eden/runs");
    std::fs::create_dir_all(&runs).unwrap();
    std::fs::write(runs.join(format!("{id}.json")), record.to_string()).unwrap();
    let mut raw = Raw::start(&env, &[]);
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": format!("eden://logs/{id}")}})
            .to_string(),
    );
    let answer = raw.answer();
    assert_eq!(answer["result"]["contents"][0]["text"], "", "{answer}");
    let shown = raw.call(2, "show", json!({"run": id}));
    assert!(!shown.to_string().contains("planted-secret-bytes"), "{shown}");
}
