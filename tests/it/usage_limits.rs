//! The provider's usage limit: eden waits until it resets (bounded by `[loop] usage_limit_wait`)
//! and goes on in the same session, instead of failing the run. Scripted Claude streams from a
//! `cli` agent, and the real Claude Code CLI against the scripted server answering 429 once.

use crate::support::{Run, TestEnv};

/// Claude's error result for a 429 whose message says when to try again.
const LIMITED: &str = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429) · usage limit reached, try again in WAIT seconds","session_id":"s-1","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#;
const SAID: &str = r#"{"type":"assistant","message":{"id":"m-2","type":"message","role":"assistant","content":[{"type":"text","text":"done <promise>COMPLETE</promise>"}]},"session_id":"s-1"}"#;
const DONE: &str = r#"{"type":"result","subtype":"success","is_error":false,"result":"done <promise>COMPLETE</promise>","session_id":"s-1","total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":5}}"#;

/// An agent that is limited on its first invocation (after touching `limited`) and completes
/// on the next, keeping each prompt it got in `prompt-N`.
fn agent(env: &TestEnv, wait_secs: u32) -> std::path::PathBuf {
    let root = env.root();
    env.script(
        "limited.sh",
        &format!(
            "n=$(cat {root}/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > {root}/count\ncat > {root}/prompt-$n\n\
             if [ $n = 1 ]; then touch {root}/limited; echo '{limited}'; exit 1; fi\n\
             echo done > done.txt && git add done.txt && git commit -qm done\necho '{SAID}'\necho '{DONE}'\n",
            root = root.display(),
            limited = LIMITED.replace("WAIT", &wait_secs.to_string()),
        ),
    )
}

fn manifest(agent: &std::path::Path, extra: &str) -> String {
    format!(
        "name = \"limited\"\nprompt = \"do the task\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n[loop]\nmax_iterations = 1\n{extra}",
        agent.display()
    )
}

#[test]
fn a_usage_limit_is_waited_out_and_the_run_goes_on() {
    let env = TestEnv::new();
    let agent = agent(&env, 1);
    let path = env.write_manifest(&manifest(&agent, ""));
    let run = Run::from(env.eden_command(&["run", path.to_str().unwrap(), "--json-events"]).output().unwrap());
    run.assert_code(0);
    let events: Vec<serde_json::Value> = run.stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let limit = events.iter().find(|event| event["event"] == "usage_limit").expect("a usage_limit event");
    assert_eq!(limit["wait_secs"], 1);
    assert!(limit["until"].is_string());
    let record = &events.last().unwrap()["record"];
    let outcomes: Vec<&str> =
        record["iterations"].as_array().unwrap().iter().map(|i| i["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["usage_limit", "completed"]);
    assert_eq!(record["merged_into"], "main");
    // A `cli` agent cannot resume a session: it gets its prompt again.
    let second = std::fs::read_to_string(env.root().join("prompt-2")).unwrap();
    assert_eq!(second.trim(), "do the task");
    assert!(run.stderr.contains("usage limit: waiting 1s"), "{}", run.stderr);
}

#[test]
fn without_waiting_a_usage_limit_fails_at_once() {
    let env = TestEnv::new();
    let agent = agent(&env, 1);
    let run = env.run_manifest(&manifest(&agent, "usage_limit_wait = \"0s\"\n"), &[]);
    run.assert_code(3);
    let record = run.record();
    assert_eq!(record["error"]["agent_failure"], "rate_limit");
    assert!(record["error"]["hint"].as_str().unwrap().contains("usage_limit_wait"), "{record}");
    assert!(!env.root().join("prompt-2").exists(), "not run again");
}

#[test]
fn a_wait_longer_than_allowed_fails_and_says_so() {
    let env = TestEnv::new();
    let agent = agent(&env, 7200);
    let run = env.run_manifest(&manifest(&agent, "usage_limit_wait = \"1h\"\n"), &[]);
    run.assert_code(3);
    assert_eq!(run.record()["error"]["agent_failure"], "rate_limit");
}

#[test]
fn ctrl_c_ends_the_wait_and_the_run() {
    let env = TestEnv::new();
    let agent = agent(&env, 300);
    let (run, took) = crate::support::interrupt(
        &env,
        &manifest(&agent, ""),
        &env.root().join("limited"),
        &[nix::sys::signal::Signal::SIGINT],
    );
    run.assert_code(130);
    assert!(took < std::time::Duration::from_secs(60), "the 300 s wait was cut short");
    let record = run.record();
    assert_eq!(record["exit_reason"], "interrupted");
    assert_eq!(record["iterations"][0]["outcome"], "usage_limit");
}

/// A real agent CLI: the server answers its second turn with a 429 (the CLI's own retries off),
/// eden waits the second the message names and resumes the same session, which commits.
fn resumes_its_session_after_a_usage_limit(agent: &crate::real_agents::Agent, extra_env: &[(&str, &str)]) {
    if crate::real_agents::require(agent.binary).is_none() {
        return;
    }
    let env = TestEnv::new();
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    server.stats.rate_limit_once.store(true, std::sync::atomic::Ordering::SeqCst);
    let model = agent.model.map(|m| format!("model = \"{m}\"\n")).unwrap_or_default();
    let path = env.write_manifest(&format!(
        "name = \"real\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"{}\"\n{model}\
         [loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
        agent.kind
    ));
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    for (key, value) in (agent.configure)(&env, &server) {
        command.env(key, value);
    }
    for (key, value) in extra_env {
        command.env(key, value);
    }
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let record = run.record();
    let iterations = record["iterations"].as_array().unwrap();
    let outcomes: Vec<&str> = iterations.iter().map(|i| i["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["usage_limit", "completed"], "{}", run.stderr);
    assert_eq!(iterations[0]["agent_error"]["kind"], "rate_limit");
    assert_eq!(iterations[0]["session_id"], iterations[1]["session_id"], "the same session went on");
    assert!(iterations[1]["prompt"].as_str().unwrap().contains("usage limit"), "the continuation prompt");
    assert_eq!(record["merged_into"], "main");
    assert!(env.repo.join("hello.txt").exists());
}

#[test]
fn claude_code_resumes_its_session_after_a_usage_limit() {
    resumes_its_session_after_a_usage_limit(&crate::real_agents::CLAUDE, &[("CLAUDE_CODE_MAX_RETRIES", "0")]);
}

/// Codex says only "exceeded retry limit, last status: 429": no reset time, so eden waits its
/// first fallback minute.
#[test]
fn codex_resumes_its_session_after_a_usage_limit() {
    resumes_its_session_after_a_usage_limit(&crate::real_agents::CODEX, &[]);
}
