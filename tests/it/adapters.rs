//! Adapters end to end with stand-in executables: Cursor (not on npm) as a fake `agent` that
//! replays recorded lines, `cli` agents reusing a built-in parser, and failure kinds.

use crate::support::{Run, TestEnv};

const CURSOR_LINES: &str = r#"{"type":"system","subtype":"init","session_id":"cursor-session-1","model":"mock"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Writing the file."}]},"session_id":"cursor-session-1"}
{"type":"tool_call","subtype":"started","call_id":"c1","tool_call":{"writeToolCall":{"args":{"path":"hello.txt","fileText":"hello\n"}}}}
{"type":"tool_call","subtype":"completed","call_id":"c1","tool_call":{"writeToolCall":{"args":{"path":"hello.txt"},"result":{"success":{"linesCreated":1}}}}}
{"type":"tool_call","subtype":"started","call_id":"c2","tool_call":{"shellToolCall":{"args":{"command":"git add -A && git commit -q -m 'cursor commit'"}}}}
{"type":"tool_call","subtype":"completed","call_id":"c2","tool_call":{"shellToolCall":{"args":{"command":"git add -A"},"result":{"success":{"exitCode":0}}}}}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done <promise>COMPLETE</promise>"}]},"session_id":"cursor-session-1"}
{"type":"result","subtype":"success","is_error":false,"result":"Done <promise>COMPLETE</promise>","session_id":"cursor-session-1"}"#;

#[test]
fn cursor_through_a_fake_agent_binary() {
    let env = TestEnv::new();
    let lines = env.root().join("cursor.jsonl");
    std::fs::write(&lines, format!("{CURSOR_LINES}\n")).unwrap();
    let args_file = env.root().join("args.txt");
    // The fake does what the recording says: writes, commits, and replays the lines.
    let fake = env.script(
        "agent",
        &format!(
            "printf '%s\\n' \"$@\" > {}\necho hello > hello.txt\ngit add -A && git commit -q -m 'cursor commit'\ncat {}",
            args_file.display(),
            lines.display()
        ),
    );
    let manifest = format!(
        "name = \"cur\"\nprompt = \"make hello\"\n[agent]\nkind = \"cursor\"\nbinary = \"{}\"\nmodel = \"m1\"\n[loop]\nmax_iterations = 1\n",
        fake.display()
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["session_id"], "cursor-session-1");
    assert_eq!(record["merged_into"], "main");
    let calls = &record["iterations"][0]["tool_calls"];
    assert_eq!(calls[0]["name"], "write");
    assert_eq!(calls[0]["summary"], "hello.txt");
    assert_eq!(calls[1]["name"], "shell");
    assert_eq!(calls[1]["ok"], true);
    assert!(run.stderr.contains("tool shell git add -A && git commit -q -m 'cursor commit'"), "{}", run.stderr);
    let args = std::fs::read_to_string(args_file).unwrap();
    assert_eq!(args, "--print\n--output-format\nstream-json\n--force\n--model\nm1\nmake hello\n");
}

/// A wrapper script that prints a recorded Claude stream, read with the Claude parser.
fn claude_replay(env: &TestEnv, fixture_lines: &str) -> Run {
    claude_replay_with(env, fixture_lines, &[])
}

fn claude_replay_with(env: &TestEnv, fixture_lines: &str, args: &[&str]) -> Run {
    let stream = env.root().join("stream.jsonl");
    std::fs::write(&stream, fixture_lines).unwrap();
    let script = env.script("wrapper.sh", &format!("cat >/dev/null\ncat {}\nexit ${{EXIT_CODE:-0}}", stream.display()));
    let manifest = format!(
        "name = \"wrap\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n[loop]\nmax_iterations = 1\n",
        script.display()
    );
    env.run_manifest(&manifest, args)
}

#[test]
fn a_cli_wrapper_can_reuse_the_claude_parser() {
    let env = TestEnv::new();
    let fixture = std::fs::read_to_string(format!(
        "{}/tests/fixtures/agent-streams/claude-text.jsonl",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let run = claude_replay(&env, &fixture);
    let record = run.record();
    assert!(record["session_id"].as_str().is_some_and(|s| !s.is_empty()), "{record}");
    assert!(record["usage"]["input_tokens"].as_u64().is_some(), "{record}");
    // Text blocks are shown, not the raw JSON.
    assert!(!run.stderr.contains("\"type\":\"assistant\""), "{}", run.stderr);
}

#[test]
/// Not waited out (`usage_limit_wait = 0`; `usage_limits.rs` has the waiting), a rate limit
/// fails the run at once, recognisably.
fn a_rate_limit_is_recognisable_in_the_record() {
    let env = TestEnv::new();
    let lines = r#"{"type":"system","subtype":"init","session_id":"s-429"}
{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: 429 Rate limit reached for requests","session_id":"s-429","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}
"#;
    let run = claude_replay_with(&env, lines, &["--set", "loop.usage_limit_wait=0"]);
    run.assert_code(3);
    insta::assert_snapshot!(run.error_text(), @"
    error: the agent reported a failure in iteration 1: API Error: 429 Rate limit reached for requests
    hint: the model provider's usage limit: eden waits for it to reset within `[loop] usage_limit_wait` (default 6h); raise that, or run again later, or use another key or model
    ");
    let record = run.record();
    assert_eq!(record["error"]["agent_failure"], "rate_limit");
    assert_eq!(record["iterations"][0]["agent_error"]["kind"], "rate_limit");
    assert_eq!(record["session_id"], "s-429");
}

#[test]
fn a_signal_in_subagent_text_does_not_complete_the_run() {
    let env = TestEnv::new();
    let lines = r#"{"type":"assistant","parent_tool_use_id":"toolu_1","message":{"content":[{"type":"text","text":"sub: <promise>COMPLETE</promise>"}]}}
{"type":"result","subtype":"success","is_error":false,"result":"main agent still working","session_id":"s1","usage":{"input_tokens":1,"output_tokens":1}}
"#;
    let run = claude_replay(&env, lines);
    run.assert_code(1);
    assert_eq!(run.record()["completion_signal"], serde_json::Value::Null);
    assert_eq!(run.record()["exit_reason"], "incomplete");
}

#[test]
fn codex_running_totals_after_a_resume_are_not_counted_twice() {
    let env = TestEnv::new();
    // Two iterations on the same Codex thread: the second reports the thread's running totals.
    let script = env.script(
        "codex-like.sh",
        r#"prompt=$(cat)
n=${prompt##* }
echo '{"type":"thread.started","thread_id":"thread-1"}'
echo "{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"turn $n\"}}"
echo "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":$((n * 30)),\"cached_input_tokens\":$((n * 10)),\"output_tokens\":$((n * 7))}}""#,
    );
    let manifest = format!(
        "name = \"cx\"\nprompt = \"iteration {{{{ITERATION}}}}\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"codex\"\n[loop]\nmax_iterations = 2\nrequire_completion = false\n",
        script.display()
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    let record = run.record();
    let per_iteration: Vec<(u64, u64, u64)> = record["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let u = &i["usage"];
            (
                u["input_tokens"].as_u64().unwrap(),
                u["cache_read_tokens"].as_u64().unwrap(),
                u["output_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(per_iteration, [(20, 10, 7), (20, 10, 7)]);
    assert_eq!(record["usage"]["input_tokens"], 40);
    assert_eq!(record["usage"]["output_tokens"], 14);
}

/// A completion signal that appears only in Claude's final `result` line (not in any text
/// block) still completes the run.
#[test]
fn a_signal_only_in_claude_s_result_line_completes() {
    let env = TestEnv::new();
    let agent = env.script(
        "claude-like",
        "cat >/dev/null\necho '{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"working\"}]}}'\n\
         echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"all done <promise>COMPLETE</promise>\",\"session_id\":\"s\"}'",
    );
    let manifest = format!(
        "name = \"r\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n[loop]\nmax_iterations = 1\n",
        agent.display()
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    assert_eq!(run.record()["completion_signal"], "<promise>COMPLETE</promise>");
}

/// A failed tool call names the tool and why, live, in the record and in `sessions show`.
#[test]
fn a_failed_tool_call_says_which_and_why() {
    let env = TestEnv::new();
    let agent = env.script(
        "claude-like",
        "cat >/dev/null\n\
         echo '{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{\"command\":\"touch /nope/x\"}}]}}'\n\
         echo '{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"is_error\":true,\"content\":\"Exit code 1\\ntouch: cannot touch /nope/x: No such file or directory\"}]}}'\n\
         echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"<promise>COMPLETE</promise>\"}'",
    );
    let manifest = format!(
        "name = \"t\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n[loop]\nmax_iterations = 1\n",
        agent.display()
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    let reason = "Exit code 1 · touch: cannot touch /nope/x: No such file or directory";
    assert!(run.stderr.contains(&format!("tool Bash failed: {reason}")), "{}", run.stderr);
    let call = &run.record()["iterations"][0]["tool_calls"][0];
    assert_eq!(
        (call["name"].as_str(), call["ok"].as_bool(), call["error"].as_str()),
        (Some("Bash"), Some(false), Some(reason))
    );
    let shown = env.eden(&["sessions", "show", "last", "--full"]);
    assert!(shown.stdout.contains(&format!("✗ Bash failed: {reason}")), "{}", shown.stdout);
}
