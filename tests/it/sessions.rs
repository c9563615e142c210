//! `eden sessions` and the capture behind it: transcripts found and kept (secrets redacted), a
//! missing one a warning, and the run history listed, replayed and costed from real records.

use crate::support::{Run, TestEnv};

/// A `cli` agent that speaks Claude's stream-json and writes a transcript where Claude Code
/// keeps them (under `$CLAUDE_CONFIG_DIR/projects/`), unless `write` is false.
fn claude_like(env: &TestEnv, write: bool) -> std::path::PathBuf {
    let transcript = if write {
        "dir=\"$CLAUDE_CONFIG_DIR/projects/elsewhere\"; mkdir -p \"$dir\"\n\
         printf '{\"type\":\"user\",\"sessionId\":\"sess-0001\",\"message\":\"the token is %s\"}\\n' \"$MY_TOKEN\" > \"$dir/sess-0001.jsonl\"\n"
    } else {
        ""
    };
    env.script(
        "claude-like.sh",
        &format!(
            "#!/bin/bash\ncat >/dev/null\n{transcript}\
             echo '{{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"sess-0001\"}}'\n\
             echo '{{\"type\":\"assistant\",\"message\":{{\"id\":\"m1\",\"content\":[{{\"type\":\"text\",\"text\":\"all done <promise>COMPLETE</promise>\"}}]}}}}'\n\
             echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done <promise>COMPLETE</promise>\",\"session_id\":\"sess-0001\",\"usage\":{{\"input_tokens\":10,\"output_tokens\":5}},\"total_cost_usd\":0.25}}'\n"
        ),
    )
}

fn run_claude_like(env: &TestEnv, write: bool) -> Run {
    let script = claude_like(env, write);
    let manifest = format!(
        "name = \"cap\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n\
         env = {{ MY_TOKEN = \"${{MY_TOKEN}}\" }}\n[loop]\nmax_iterations = 1\n",
        script.display()
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.env("MY_TOKEN", "s3cr3t-value-42").env("CLAUDE_CONFIG_DIR", env.root().join("claude"));
    Run::from(command.output().unwrap())
}

#[test]
fn transcripts_are_kept_with_secrets_redacted() {
    let env = TestEnv::new();
    let run = run_claude_like(&env, true);
    run.assert_code(0);
    let record = run.json();
    let transcript = &record["iterations"][0]["transcript"];
    let kept = std::fs::read_to_string(transcript["path"].as_str().unwrap()).unwrap();
    assert!(kept.contains("the token is ***"), "{kept}");
    assert!(!kept.contains("s3cr3t-value-42"));
    let source = env.root().join("claude/projects/elsewhere/sess-0001.jsonl");
    assert_eq!(transcript["source"], source.display().to_string());
    assert!(run.stderr.contains("transcript "), "{}", run.stderr);
    env.assert_pristine();
}

#[test]
fn a_missing_transcript_is_a_warning_not_a_failure() {
    let env = TestEnv::new();
    let run = run_claude_like(&env, false);
    run.assert_code(0);
    let record = run.json();
    let iteration = &record["iterations"][0];
    assert!(iteration["transcript"].is_null());
    let warning = iteration["transcript_warning"].as_str().unwrap();
    let expected = env.root().join("claude/projects");
    assert!(warning.contains(&expected.display().to_string()), "the path tried: {warning}");
    assert!(run.stderr.contains(&format!("warning: {warning}")), "{}", run.stderr);
    let log = std::fs::read_to_string(record["log"].as_str().unwrap()).unwrap();
    assert!(log.contains("no transcript of session `sess-0001` found at"), "{log}");
}
