//! Lifecycle hooks on the host (sandbox `none`): order across iterations, failure, timeout,
//! `on_close` after failure and Ctrl-C, output in the log. The container variants are in
//! `containers.rs`.

use crate::support::{cli_manifest, interrupt, TestEnv};
use nix::sys::signal::Signal;
use std::path::Path;

const PHASES: [&str; 5] =
    ["on_worktree_ready", "on_sandbox_ready", "on_iteration_start", "on_iteration_end", "on_close"];

/// `[hooks.host]` and `[hooks.sandbox]` where every phase appends `phase side iteration` to
/// `log`, plus `extra` hooks (TOML array items) for the host's `on_iteration_end`.
fn recording_hooks(log: &Path, extra_host_end: &str) -> String {
    let mut toml = String::new();
    for side in ["host", "sandbox"] {
        toml.push_str(&format!("[hooks.{side}]\n"));
        for phase in PHASES {
            if side == "sandbox" && phase == "on_worktree_ready" {
                continue;
            }
            let extra = if side == "host" && phase == "on_iteration_end" { extra_host_end } else { "" };
            toml.push_str(&format!(
                "{phase} = [\"echo {phase} {side} $EDEN_ITERATION >> '{}'\"{extra}]\n",
                log.display()
            ));
        }
    }
    toml
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(|l| l.trim_end().to_owned()).collect()
}

#[test]
fn hooks_run_in_order_across_iterations_and_their_commits_count() {
    let env = TestEnv::new();
    let log = env.root().join("order.log");
    let agent = env.script("agent.sh", "cat >/dev/null\necho working");
    // A hook that commits: its commit belongs to the run like the agent's.
    let commit =
        ", \"echo $EDEN_ITERATION > it.txt && git add it.txt && git commit -q -m \\\"hook commit $EDEN_ITERATION\\\"\"";
    let manifest = cli_manifest(&agent, "[loop]\nmax_iterations = 2\nrequire_completion = false\n")
        + &recording_hooks(&log, commit);
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    assert_eq!(
        lines(&log),
        [
            "on_worktree_ready host",
            "on_sandbox_ready host",
            "on_sandbox_ready sandbox",
            "on_iteration_start host 1",
            "on_iteration_start sandbox 1",
            "on_iteration_end host 1",
            "on_iteration_end sandbox 1",
            "on_iteration_start host 2",
            "on_iteration_start sandbox 2",
            "on_iteration_end host 2",
            "on_iteration_end sandbox 2",
            "on_close host",
            "on_close sandbox",
        ]
    );
    let record = run.record();
    assert_eq!(record["hooks"].as_array().unwrap().len(), 15);
    assert_eq!(record["hooks"][0]["phase"], "on_worktree_ready");
    assert_eq!(record["hooks"][0]["outcome"], "ok");
    assert_eq!(record["iterations"][1]["commits"].as_array().unwrap().len(), 1);
    assert_eq!(env.log_subjects("main")[..2], ["hook commit 2", "hook commit 1"]);
    env.assert_pristine();
}

#[test]
fn hooks_get_their_cwd_env_and_the_run_context() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.repo.join("sub")).unwrap();
    std::fs::write(env.repo.join("sub/.keep"), "").unwrap();
    env.git(&["add", "-A"]);
    env.git(&["commit", "-q", "-m", "sub"]);
    let out = env.root().join("context.txt");
    let agent = env.script("agent.sh", "cat >/dev/null\necho '<promise>COMPLETE</promise>'");
    let hook = format!(
        "[[hooks.host.on_worktree_ready]]\ncmd = \"echo \\\"$(pwd) $GREETING $EDEN_RUN_ID $EDEN_BRANCH $EDEN_PHASE\\\" > '{}'\"\ncwd = \"sub\"\nenv = {{ GREETING = \"hi-${{EDEN_TEST_GREETING}}\" }}\n",
        out.display()
    );
    let mut command =
        env.eden_command(&["run", env.write_manifest(&(cli_manifest(&agent, "") + &hook)).to_str().unwrap(), "--json"]);
    command.env("EDEN_TEST_GREETING", "there");
    let run = crate::support::Run::from(command.output().unwrap());
    run.assert_code(0);
    let record = run.record();
    let text = std::fs::read_to_string(&out).unwrap();
    let expected = format!(
        "{}/sub hi-there {} {} on_worktree_ready\n",
        record["worktree"].as_str().unwrap(),
        record["id"].as_str().unwrap(),
        record["branch"].as_str().unwrap()
    );
    assert_eq!(text, expected);
}

#[test]
fn a_failing_hook_exits_5_with_its_output_and_on_close_still_runs() {
    let env = TestEnv::new();
    let log = env.root().join("close.log");
    let agent = env.script("agent.sh", "cat >/dev/null\necho '<promise>COMPLETE</promise>'");
    let hooks = format!(
        "[hooks.host]\non_iteration_end = [\"echo checking; echo 'test failed: 1 of 3' >&2; exit 3\"]\non_close = [\"echo $EDEN_STATUS > '{}'\"]\n",
        log.display()
    );
    let run = env.run_manifest(&(cli_manifest(&agent, "") + &hooks), &[]);
    run.assert_code(5);
    insta::assert_snapshot!(env.redact(&run.error_text()), @r"
    error: the host on_iteration_end (iteration 1) hook `echo checking; echo 'test failed: 1 of 3' >&2; exit 3` failed with exit code 3; its last output:
      checking
      stderr:
      test failed: 1 of 3
    hint: the command must exit 0; all of its output is above
    ");
    assert_eq!(lines(&log), ["hook_failed"]);
    let record = run.record();
    assert_eq!(record["exit_reason"], "hook_failed");
    assert_eq!(record["hooks"][0]["exit_code"], 3);
    assert_eq!(record["hooks"][1]["phase"], "on_close");
    env.assert_pristine();
}

#[test]
fn a_hook_over_its_timeout_is_killed_with_its_children_and_exits_4() {
    let env = TestEnv::new();
    let marker = crate::support::Marker::new();
    let agent = env.script("agent.sh", "cat >/dev/null\necho never");
    let hooks = format!(
        "[hooks.host]\non_worktree_ready = [{{ cmd = \"A=300.; {} & wait\", timeout = \"1s\" }}]\n",
        marker.sleep().replace("300.", "${A}")
    );
    let run = env.run_manifest(&(cli_manifest(&agent, "") + &hooks), &[]);
    run.assert_code(4);
    let error = run.error_text().replace(marker.digits(), "[N]");
    insta::assert_snapshot!(error, @r#"
    error: the host on_worktree_ready hook `A=300.; sleep ${A}[N] & wait` ran longer than 1s and was stopped
    hint: give the hook a longer `timeout = "..."`, or raise `timeouts.hook_step`
    "#);
    let record = run.record();
    assert_eq!(record["iterations"].as_array().unwrap().len(), 0, "the agent never ran");
    assert_eq!(record["hooks"][0]["outcome"], "timeout");
    let left = marker.gone_within(std::time::Duration::from_secs(2));
    assert!(left.is_empty(), "the hook's background child was killed: {left:?}");
    env.assert_pristine();
}

#[test]
fn on_close_runs_after_ctrl_c() {
    let env = TestEnv::new();
    let ready = env.root().join("ready");
    let log = env.root().join("close.log");
    let agent = env.script("agent.sh", &format!("cat >/dev/null\ntouch '{}'\nsleep 300", ready.display()));
    let hooks = format!("[hooks.host]\non_close = [\"sleep 0.5; echo $EDEN_STATUS > '{}'\"]\n", log.display());
    let (run, _) = interrupt(&env, &(cli_manifest(&agent, "") + &hooks), &ready, &[Signal::SIGINT]);
    run.assert_code(130);
    assert_eq!(lines(&log), ["interrupted"]);
    assert_eq!(run.record()["hooks"][0]["outcome"], "ok");
    env.assert_pristine();
}

#[test]
fn hook_output_goes_to_the_display_and_the_log_file() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null\necho '<promise>COMPLETE</promise>'");
    let extra = "[logging]\nfile = \".eden/logs/run.log\"\n[hooks.host]\non_worktree_ready = [\"echo installing deps; echo warn-line >&2\"]\n";
    let run = env.run_manifest(&cli_manifest(&agent, extra), &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("hook host on_worktree_ready: echo installing deps"), "{}", run.stderr);
    assert!(run.stderr.contains("> installing deps"), "{}", run.stderr);
    assert!(run.stderr.contains("! warn-line"), "{}", run.stderr);
    let log = std::fs::read_to_string(env.repo.join(".eden/logs/run.log")).unwrap();
    let events: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let hook_events: Vec<_> = events.iter().filter(|e| e["event"].as_str().unwrap().starts_with("hook_")).collect();
    assert_eq!(hook_events[0]["event"], "hook_started");
    // stdout and stderr are two pipes: their relative order is not knowable.
    let mut output: Vec<(&str, bool)> =
        hook_events[1..3].iter().map(|e| (e["text"].as_str().unwrap(), e["stderr"].as_bool().unwrap())).collect();
    output.sort();
    assert_eq!(output, [("installing deps", false), ("warn-line", true)]);
    assert_eq!(hook_events[3]["event"], "hook_finished");
    assert_eq!(hook_events[3]["outcome"], "ok");
}
