//! Prompt rendering end to end: `[prompt_args]`, `--arg`, built-ins, and `` !`command` ``
//! blocks run in the sandbox; the rendered prompt in the run record.

use crate::support::{cli_manifest, TestEnv};

/// An agent that saves the prompt it was given (stdin) and completes.
fn saving_agent(env: &TestEnv) -> std::path::PathBuf {
    let out = env.root().join("prompts.txt");
    env.script(
        "agent.sh",
        &format!("cat >> '{}'\necho '---' >> '{}'\necho '<promise>COMPLETE</promise>'", out.display(), out.display()),
    )
}

#[test]
fn a_prompt_file_with_args_built_ins_and_command_blocks() {
    let env = TestEnv::new();
    let agent = saving_agent(&env);
    env.write(
        "task.md",
        "Fix #{{ISSUE}} in {{REPO}} on {{BRANCH}} ({{ITERATION}}/{{MAX_ITERATIONS}}).\n\
         Last commit: !`git log -1 --format=%s`\nIteration seen by the command: !`echo $EDEN_ITERATION`\n\
         Args reach commands: !`echo {{ISSUE}}`\n",
    );
    let manifest = cli_manifest(&agent, "").replace(
        "prompt = \"iteration {{ITERATION}}\"",
        "prompt_file = \"repo/task.md\"\n[prompt_args]\nREPO = \"eden\"\nISSUE = \"1\"",
    );
    let run = env.run_manifest(&manifest, &["--arg", "ISSUE=42", "--max-iterations", "1"]);
    run.assert_code(0);
    let record = run.record();
    let branch = record["branch"].as_str().unwrap();
    let expected = format!(
        "Fix #42 in eden on {branch} (1/1).\nLast commit: initial commit\nIteration seen by the command: 1\nArgs reach commands: 42\n"
    );
    assert_eq!(record["iterations"][0]["prompt"], expected.as_str());
    let given = std::fs::read_to_string(env.root().join("prompts.txt")).unwrap();
    assert_eq!(given, format!("{expected}---\n"));
}

#[test]
fn a_failing_command_block_exits_5_before_the_agent_runs() {
    let env = TestEnv::new();
    let agent = saving_agent(&env);
    let manifest = cli_manifest(&agent, "")
        .replace("prompt = \"iteration {{ITERATION}}\"", "prompt = \"Context: !`echo partial; ls /no/such/dir`\"");
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(5);
    let error = run.error_text();
    assert!(
        error.starts_with("error: the prompt command `echo partial; ls /no/such/dir` failed with exit code 2; its last output:\n  partial\n  stderr:\n  ls: cannot access '/no/such/dir'"),
        "{error}"
    );
    assert!(!env.root().join("prompts.txt").exists(), "the agent never ran");
    env.assert_pristine();
}

#[test]
fn a_command_block_over_the_hook_timeout_exits_4() {
    let env = TestEnv::new();
    let agent = saving_agent(&env);
    let manifest = cli_manifest(&agent, "[timeouts]\nhook_step = \"1s\"\n")
        .replace("prompt = \"iteration {{ITERATION}}\"", "prompt = \"Context: !`sleep 30`\"");
    let started = std::time::Instant::now();
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(4);
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    insta::assert_snapshot!(run.error_text(), @r#"
    error: the prompt command `sleep 30` ran longer than 1s and was stopped
    hint: raise `timeouts.hook_step`, which also limits prompt commands
    "#);
    env.assert_pristine();
}

/// The record keeps the first 4 KiB of each iteration's prompt (agents may get megabytes of
/// context); the log has every prompt whole.
#[test]
fn long_prompts_are_cut_in_the_record_and_whole_in_the_log() {
    let env = TestEnv::new();
    let long = "0123456789".repeat(1000);
    let run = env.eden(&["run", "--agent", "simulated", "--prompt", &long, "--json"]);
    run.assert_code(0);
    let record = run.record();
    let kept = record["iterations"][0]["prompt"].as_str().unwrap();
    assert!(kept.starts_with(&long[..4096]));
    assert!(kept.ends_with("… (5904 more bytes; the run's log has the whole prompt)"), "{}", &kept[4000..]);
    let log = std::fs::read_to_string(record["log"].as_str().unwrap()).unwrap();
    assert!(log.contains(&long), "the log has the whole prompt");
}
