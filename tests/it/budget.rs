//! `[budget]` and a step's `budget`: the agent is stopped as soon as a cap is crossed, the work
//! is kept, the exit code is 8 and the record says which cap and what was spent. The agents are
//! `cli` scripts printing Claude's stream-json (`parser = "claude-code"`) with known usage.

use crate::support::{Run, TestEnv};

/// A Claude `result` line reporting `tokens` input tokens and `cost` dollars in total so far.
fn result(tokens: u64, cost: f64) -> String {
    format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"result":"working","session_id":"s-1","total_cost_usd":{cost},"usage":{{"input_tokens":{tokens},"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}}"#
    )
}

/// An agent that commits, reports `first` then `second` (tokens, cost), and then would work on
/// (for a minute) and leave `after` behind if nobody stopped it.
fn spending_agent(env: &TestEnv, first: (u64, f64), second: (u64, f64)) -> std::path::PathBuf {
    let after = env.root().join("after");
    env.script(
        "spend.sh",
        &format!(
            "cat >/dev/null\necho work > work.txt && git add work.txt && git commit -qm 'work so far'\n\
             echo '{}'\nsleep 0.1\necho '{}'\nsleep 60\ntouch {}\n",
            result(first.0, first.1),
            result(second.0, second.1),
            after.display()
        ),
    )
}

fn manifest(agent: &std::path::Path, extra: &str) -> String {
    format!(
        "name = \"spend\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n[loop]\nidle_timeout = \"120s\"\n{extra}",
        agent.display()
    )
}

#[test]
fn a_token_cap_stops_the_agent_at_once_and_keeps_the_work() {
    let env = TestEnv::new();
    let agent = spending_agent(&env, (400, 0.001), (1500, 0.002));
    let run = env.run_manifest(&manifest(&agent, "[budget]\nmax_tokens = 1000\n"), &[]);
    run.assert_code(8);
    let record = run.record();
    assert_eq!(record["exit_reason"], "budget_exceeded");
    let budget = &record["error"]["budget"];
    assert_eq!(budget["scope"], "run");
    assert_eq!(budget["cap"], "max_tokens");
    assert_eq!(budget["limit"], "1,000 tokens");
    assert_eq!(budget["used"], "1,500 tokens");
    assert_eq!(record["iterations"][0]["outcome"], "budget_exceeded");
    assert_eq!(record["usage"]["input_tokens"], 1500);
    assert!(!env.root().join("after").exists(), "the agent was stopped, not left to finish");
    let branch = record["preserved_branch"].as_str().expect("the branch is kept");
    assert_eq!(env.git(&["log", "-1", "--format=%s", branch]), "work so far");
    assert!(record["merged_into"].is_null(), "nothing merged");
    assert!(run.stderr.contains("max_tokens"), "{}", run.stderr);
}

#[test]
fn a_steps_cost_cap_counts_the_step_alone() {
    let env = TestEnv::new();
    let agent = spending_agent(&env, (10, 0.004), (20, 0.02));
    let steps = format!(
        "[[step]]\nname = \"first\"\nprompt = \"x\"\nmax_iterations = 1\n[step.agent]\nkind = \"simulated\"\n\
         [[step]]\nname = \"costly\"\nprompt = \"x\"\nbudget = {{ max_cost_usd = 0.01 }}\n[step.agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n",
        agent.display()
    );
    let manifest = format!("name = \"spend\"\n[loop]\nrequire_completion = false\n{steps}");
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(8);
    let budget = &run.record()["error"]["budget"];
    assert_eq!((budget["scope"].as_str(), budget["step"].as_str()), (Some("step"), Some("costly")), "{budget}");
    assert_eq!(budget["cap"], "max_cost_usd");
    assert_eq!(budget["used"], "$0.0200");
}

#[test]
fn a_duration_cap_stops_a_silent_agent() {
    let env = TestEnv::new();
    let agent = env.script("silent.sh", "cat >/dev/null\nsleep 60\n");
    let run = env.run_manifest(&manifest(&agent, "[budget]\nmax_duration = \"1s\"\n"), &[]);
    run.assert_code(8);
    let record = run.record();
    assert_eq!(record["error"]["budget"]["cap"], "max_duration");
    assert_eq!(record["error"]["budget"]["limit"], "1s");
}

#[test]
fn caps_an_agent_cannot_report_are_refused_at_load() {
    let env = TestEnv::new();
    let run =
        env.run_manifest("name = \"x\"\nprompt = \"x\"\n[agent]\nkind = \"copilot\"\n[budget]\nmax_tokens = 10\n", &[]);
    run.assert_code(2);
    assert!(run.stderr.contains("`copilot` reports no tokens"), "{}", run.stderr);
    assert!(run.stderr.contains(":6:1"), "names the line: {}", run.stderr);
    let run = env
        .run_manifest("name = \"x\"\nprompt = \"x\"\n[agent]\nkind = \"codex\"\n[budget]\nmax_cost_usd = 1.0\n", &[]);
    run.assert_code(2);
    assert!(run.stderr.contains("`codex` reports no cost"), "{}", run.stderr);
    let run = env.run_manifest(
        "name = \"x\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"true\"\n[budget]\nmax_tokens = 10\n",
        &[],
    );
    run.assert_code(2);
    assert!(run.stderr.contains("parser `lines` reports no tokens"), "{}", run.stderr);
    let run = env.run_manifest(
        "name = \"x\"\nprompt = \"x\"\n[agent]\nkind = \"simulated\"\n[budget]\nmax_duration = \"0s\"\n",
        &[],
    );
    run.assert_code(2);
    env.assert_pristine();
}

#[test]
fn dry_run_shows_the_caps_in_force() {
    let env = TestEnv::new();
    let agent = spending_agent(&env, (1, 0.0), (2, 0.0));
    let run =
        env.run_manifest(&manifest(&agent, "[budget]\nmax_tokens = 5000\nmax_duration = \"2h\"\n"), &["--dry-run"]);
    run.assert_code(0);
    let plan = Run::json(&run);
    assert_eq!(plan["plan"]["budget"]["max_tokens"], 5000);
    assert_eq!(plan["plan"]["budget"]["max_duration"], "2h");
}

/// Claude Code reports its usage on every assistant message, long before its final `result`:
/// a message whose usage crosses the cap stops the agent at once, while it would go on working
/// (here for a minute, then leave `after` behind).
#[test]
fn a_claude_message_s_usage_stops_the_agent_mid_iteration() {
    let env = TestEnv::new();
    let after = env.root().join("after");
    let message = |id: &str, input: u64, output: u64| {
        format!(
            r#"{{"type":"assistant","message":{{"id":"{id}","role":"assistant","content":[{{"type":"text","text":"working"}}],"usage":{{"input_tokens":{input},"output_tokens":{output},"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}},"parent_tool_use_id":null,"session_id":"s-1"}}"#
        )
    };
    // The same message repeats across its blocks: counted once, at its latest.
    let agent = env.script(
        "spend.sh",
        &format!(
            "cat >/dev/null\necho '{}'\necho '{}'\necho '{}'\nsleep 60\ntouch {}\n",
            message("m1", 300, 1),
            message("m1", 300, 400),
            message("m2", 700, 1),
            after.display()
        ),
    );
    let run = env.run_manifest(&manifest(&agent, "[budget]\nmax_tokens = 1000\n"), &[]);
    run.assert_code(8);
    let record = run.record();
    assert_eq!(record["error"]["budget"]["used"], "1,401 tokens", "{}", run.stderr);
    assert!(!after.exists(), "stopped mid-iteration, not after the agent's own end");
}

/// The same with the real Claude Code against the scripted server: its first message reports
/// 5,000 input tokens and asks for a 30-second shell call; the cap of 1,000 stops it before the
/// call ends (`late.txt` is never written).
#[test]
fn the_real_claude_code_is_stopped_mid_iteration() {
    let Some(_) = crate::real_agents::require("claude") else { return };
    let env = TestEnv::new();
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    server.stats.costly_slow_turn.store(true, std::sync::atomic::Ordering::SeqCst);
    let manifest = env.write_manifest(
        "name = \"costly\"\nprompt = \"work\"\n[agent]\nkind = \"claude-code\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"120s\"\n\
         [budget]\nmax_tokens = 1000\n",
    );
    let mut command = env.eden_command(&["run", manifest.to_str().unwrap(), "--json"]);
    command.envs(crate::real_agents::claude_env(&env, &server));
    let run = Run::from(command.output().unwrap());
    run.assert_code(8);
    let record = run.json();
    assert_eq!(record["error"]["budget"]["cap"], "max_tokens", "{}", run.stderr);
    // Stopped in the slow call: the agent never got to its next turns (the commit).
    let branch = record["preserved_branch"].as_str().map(str::to_owned);
    let worktree = std::path::PathBuf::from(record["worktree"].as_str().unwrap());
    assert!(!worktree.join("late.txt").exists(), "stopped before the slow call ended");
    if let Some(branch) = branch {
        assert!(!env.git(&["log", "--format=%s", &branch]).contains("add hello.txt"), "{}", run.stderr);
    }
    assert!(record["iterations"][0]["commits"].as_array().unwrap().is_empty(), "{}", run.stderr);
    let used = record["iterations"][0]["usage"]["input_tokens"].as_u64().unwrap();
    assert!(used >= crate::model_server::COSTLY_INPUT_TOKENS, "{used}");
}

/// A step named `run` that crosses its own cap is that step's, not the run's `[budget]`.
#[test]
fn a_step_named_run_is_still_a_step() {
    let env = TestEnv::new();
    let agent = spending_agent(&env, (10, 0.004), (20, 0.02));
    let manifest = format!(
        "name = \"spend\"\n[loop]\nrequire_completion = false\n[[step]]\nname = \"run\"\nprompt = \"x\"\nbudget = {{ max_cost_usd = 0.01 }}\n\
         [step.agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n",
        agent.display()
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(8);
    let budget = &run.record()["error"]["budget"];
    assert_eq!((budget["scope"].as_str(), budget["step"].as_str()), (Some("step"), Some("run")), "{budget}");
    assert!(run.error_text().contains("step `run`'s `budget`"), "{}", run.stderr);
}
