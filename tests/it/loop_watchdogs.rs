//! The iteration loop and its watchdogs, with real processes: completion signals wherever they
//! appear, idle and step timeouts, hung agents, failures and their output tail.

use crate::support::{cli_manifest, TestEnv};
use std::time::{Duration, Instant};

#[test]
fn the_signal_on_the_last_of_several_lines_completes_the_run() {
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\nfor i in $(seq 200); do echo \"line $i\"; done\necho 'done: <promise>COMPLETE</promise>'",
    );
    let run = env.run_manifest(&cli_manifest(&agent, ""), &[]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["iterations"].as_array().unwrap().len(), 1);
    assert_eq!(record["iterations"][0]["outcome"], "completed");
}

#[test]
fn a_signal_split_across_two_writes_still_counts() {
    let env = TestEnv::new();
    // The two halves arrive in separate reads: the first is flushed, then the agent pauses.
    let agent = env
        .script("agent.sh", "cat >/dev/null\nprintf 'finished <promise>COMP'\nsleep 0.5\nprintf 'LETE</promise>\\n'");
    let run = env.run_manifest(&cli_manifest(&agent, "[loop]\nmax_iterations = 2"), &[]);
    run.assert_code(0);
    assert_eq!(run.record()["iterations"].as_array().unwrap().len(), 1);
    assert_eq!(run.record()["completion_signal"], "<promise>COMPLETE</promise>");
}

#[test]
fn a_signal_straddling_the_cut_of_an_over_long_line_still_counts() {
    let env = TestEnv::new();
    // Lines over 4 MiB (4,194,304 bytes) are read in pieces; the signal starts 14 bytes before
    // the first cut and ends after it, with no newline at all.
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\nhead -c 4194290 /dev/zero | tr '\\0' a\nprintf '<promise>COMPLETE</promise>'",
    );
    let manifest = cli_manifest(&agent, "[loop]\nmax_iterations = 1\nrequire_completion = true");
    let run = env.eden(&["run", env.write_manifest(&manifest).to_str().unwrap(), "--json", "--quiet"]);
    run.assert_code(0);
    assert_eq!(run.record()["completion_signal"], "<promise>COMPLETE</promise>");
}

#[test]
fn custom_signals_and_the_iteration_limit() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null\necho 'still working'");
    let base = "[loop]\nmax_iterations = 3\ncompletion_signal = [\"ALL DONE\", \"NOTHING LEFT\"]";
    // Without the signal, the run ends after max_iterations, unfinished: exit 1, nothing merged.
    let run = env.run_manifest(&cli_manifest(&agent, base), &[]);
    run.assert_code(1);
    insta::assert_snapshot!(run.error_text(), @r"
    error: no completion signal after 3 iteration(s)
    hint: the agent must print one of: `ALL DONE`, `NOTHING LEFT`; raise `loop.max_iterations` or check the prompt (`loop.require_completion = false` accepts a run that ends without it)
    ");
    let record = run.record();
    assert_eq!(record["iterations"].as_array().unwrap().len(), 3);
    assert_eq!(record["exit_reason"], "incomplete");
    // ...unless completion is not required: then it is a success.
    let run = env.run_manifest(&cli_manifest(&agent, &format!("{base}\nrequire_completion = false")), &[]);
    run.assert_code(0);
    assert_eq!(run.record()["exit_reason"], "max_iterations");
    // The second signal of the list works too.
    let agent = env.script("agent2.sh", "cat >/dev/null\necho 'NOTHING LEFT to do'");
    let run = env.run_manifest(&cli_manifest(&agent, base), &[]);
    run.assert_code(0);
    assert_eq!(run.record()["completion_signal"], "NOTHING LEFT");
}

#[test]
fn a_failing_agent_is_exit_3_with_the_tail_of_its_output() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null\nfor i in $(seq 50); do echo \"progress $i\"; done\necho 'fatal: cannot reach the model' >&2\nexit 42");
    let run = env.run_manifest(&cli_manifest(&agent, ""), &[]);
    run.assert_code(3);
    let error = run.error_text();
    assert!(error.starts_with("error: the agent exited with code 42 in iteration 1; its last output:"), "{error}");
    assert!(error.contains("  progress 50\n  stderr:\n  fatal: cannot reach the model\n"), "{error}");
    assert!(!error.contains("progress 1\n"), "only the tail: {error}");
    let record = run.record();
    assert_eq!(record["exit_reason"], "agent_failed");
    assert_eq!(record["iterations"][0]["exit_code"], 42);
    env.assert_pristine();
}

#[test]
fn a_non_zero_exit_after_the_signal_is_still_complete() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null\necho '<promise>COMPLETE</promise>'\nexit 1");
    env.run_manifest(&cli_manifest(&agent, ""), &[]).assert_code(0);
}

#[test]
fn idle_timeout_kills_a_silent_agent_after_warnings() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null\necho 'thinking...'\nsleep 30");
    let started = Instant::now();
    let run =
        env.run_manifest(&cli_manifest(&agent, "[loop]\nidle_timeout = \"3s\"\nidle_warning_interval = \"0.6s\""), &[]);
    run.assert_code(4);
    assert!(started.elapsed() < Duration::from_secs(20), "killed, not waited out");
    insta::assert_snapshot!(run.error_text(), @r"
    error: the agent printed nothing for 3s in iteration 1 and was stopped
    hint: raise `loop.idle_timeout` if the agent is slow to print
    ");
    let warnings = run.stderr.matches("warning: no output from the agent").count();
    assert!(warnings >= 2, "idle warnings repeat every interval:\n{}", run.stderr);
    // None in the last second before the kill (the one due at 2.4s), which would only repeat it.
    assert!(!run.stderr.contains("no output from the agent for 2s"), "{}", run.stderr);
    assert_eq!(run.record()["iterations"][0]["outcome"], "idle_timeout");
    env.assert_pristine();
}

#[test]
fn completion_timeout_ends_an_agent_that_hangs_after_the_signal() {
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\necho x > result.txt && git add result.txt && git commit -q -m result\necho '<promise>COMPLETE</promise>'\nsleep 60",
    );
    let started = Instant::now();
    let run = env.run_manifest(&cli_manifest(&agent, "[loop]\ncompletion_timeout = \"1s\"\nmax_iterations = 3"), &[]);
    run.assert_code(0);
    assert!(started.elapsed() < Duration::from_secs(20));
    let record = run.record();
    assert_eq!(record["iterations"].as_array().unwrap().len(), 1);
    assert_eq!(record["iterations"][0]["outcome"], "completion_timeout");
    assert_eq!(record["merged_into"], "main");
    env.assert_pristine();
}

#[test]
fn step_timeout_kills_the_agent_and_its_grandchildren() {
    let env = TestEnv::new();
    let marker = crate::support::Marker::new();
    // The agent keeps printing (so it is never idle) and starts a background grandchild that
    // would outlive it if only the leader were killed.
    let agent = env.script(
        "agent.sh",
        &format!("cat >/dev/null\n{} &\nwhile true; do echo tick; sleep 0.2; done", marker.sleep()),
    );
    let run = env.run_manifest(&cli_manifest(&agent, "[timeouts]\niteration_step = \"2s\""), &[]);
    run.assert_code(4);
    insta::assert_snapshot!(run.error_text(), @r"
    error: iteration 1 ran longer than 2s and was stopped
    hint: raise `timeouts.iteration_step`
    ");
    let left = marker.gone_within(Duration::from_secs(2));
    assert!(left.is_empty(), "the grandchild must be killed with its parent: {left:?}");
}

#[test]
fn grandchildren_left_behind_by_a_finished_agent_are_killed() {
    let env = TestEnv::new();
    let marker = crate::support::Marker::new();
    // A daemon that keeps stdout open: eden must not hang on it, and must not leave it running.
    let agent =
        env.script("agent.sh", &format!("cat >/dev/null\n{} &\necho '<promise>COMPLETE</promise>'", marker.sleep()));
    let started = Instant::now();
    env.run_manifest(&cli_manifest(&agent, ""), &[]).assert_code(0);
    assert!(started.elapsed() < Duration::from_secs(20));
    let left = marker.gone_within(Duration::from_secs(2));
    assert!(left.is_empty(), "the leftover must be killed: {left:?}");
}

/// `timeouts.kill_grace` is how long an agent that ignores SIGTERM is given before SIGKILL (5 s
/// by default), and `timeouts.output_drain` how long eden reads output the agent's leftovers
/// still write after it exits (2 s by default; they matter where the subreaper is the
/// containment).
#[test]
fn kill_grace_and_output_drain_are_settings() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "trap '' TERM\ncat >/dev/null\nwhile true; do sleep 0.1; done");
    let manifest = cli_manifest(&agent, "[loop]\nidle_timeout = \"1s\"\n[timeouts]\nkill_grace = \"200ms\"");
    let started = Instant::now();
    env.run_manifest(&manifest, &[]).assert_code(4);
    assert!(started.elapsed() < Duration::from_secs(4), "the short grace was used: {:?}", started.elapsed());

    // A leftover holding stdout after the agent exits, with the fallback containment (which
    // cannot end it before the drain): a long drain is waited out.
    let marker = crate::support::Marker::new();
    let agent = env.script(
        "leaves.sh",
        &format!("cat >/dev/null\n({} ; echo late) &\necho '<promise>COMPLETE</promise>'", marker.sleep()),
    );
    let manifest = cli_manifest(&agent, "[timeouts]\noutput_drain = \"3s\"");
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.env("EDEN_CONTAINMENT", "subreaper");
    let started = Instant::now();
    crate::support::Run::from(command.output().unwrap()).assert_code(0);
    assert!(started.elapsed() >= Duration::from_secs(3), "the drain was waited out: {:?}", started.elapsed());
    assert!(marker.gone_within(Duration::from_secs(2)).is_empty());
}

/// An agent that only retries (Codex's "Reconnecting…" notices, every half second) makes no
/// progress: the idle watchdog stops it like a silent one, and says it only retried.
#[test]
fn retry_chatter_is_not_progress() {
    let env = TestEnv::new();
    let agent = env.script(
        "codex-like",
        "cat >/dev/null\nn=0\nwhile true; do n=$((n+1)); echo \"{\\\"type\\\":\\\"error\\\",\\\"message\\\":\\\"Reconnecting... $n/5 (stream disconnected)\\\"}\"; sleep 0.5; done",
    );
    let manifest = format!(
        "name = \"chatter\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"codex\"\n\
         [loop]\nmax_iterations = 1\nidle_timeout = \"3s\"\n[timeouts]\niteration_step = \"30s\"\n",
        agent.display()
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(4);
    assert_eq!(run.record()["iterations"][0]["outcome"], "idle_timeout", "{}", run.stderr);
    let error = run.error_text();
    assert!(
        error
            .contains("made no progress for 3s in iteration 1 and was stopped: it only retried (last: Reconnecting..."),
        "{error}"
    );
}
