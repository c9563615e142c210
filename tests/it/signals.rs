//! Real SIGINT/SIGTERM delivered to a running eden.

use crate::support::{cli_manifest, interrupt, TestEnv};
use nix::sys::signal::Signal;
use std::path::Path;
use std::time::Duration;

#[test]
fn ctrl_c_stops_the_agent_keeps_dirty_work_and_exits_130() {
    let env = TestEnv::new();
    let ready = env.root().join("ready");
    let agent = env.script(
        "agent.sh",
        &format!(
            "cat >/dev/null\necho half > half-done.txt\necho committed > kept.txt && git add kept.txt && git commit -q -m 'first half'\ntouch {}\nsleep 300",
            ready.display()
        ),
    );
    let (run, took) = interrupt(&env, &cli_manifest(&agent, ""), &ready, &[Signal::SIGINT]);
    run.assert_code(130);
    assert!(took < Duration::from_secs(10), "the agent is stopped promptly");
    assert_eq!(run.error_text(), "error: interrupted by SIGINT");
    let record = run.record();
    assert_eq!(record["exit_reason"], "interrupted");
    assert_eq!(record["exit_code"], 130);
    assert_eq!(record["iterations"][0]["outcome"], "interrupted");
    // Not merged; the branch with its commit and the dirty worktree are kept.
    assert_eq!(record["merged_into"], serde_json::Value::Null);
    let branch = record["branch"].as_str().unwrap();
    assert_eq!(record["preserved_branch"], branch);
    let worktree = record["preserved_worktree"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(format!("{worktree}/half-done.txt")).unwrap(), "half\n");
    assert_eq!(env.log_subjects(branch)[0], "first half");
    assert_eq!(env.log_subjects("main"), ["initial commit"]);
    // The lock is released and the record written.
    let locks: Vec<_> = std::fs::read_dir(env.repo.join(".eden/locks"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .filter(|name| name != "repository.lock")
        .collect();
    assert!(locks.is_empty(), "branch lock released: {locks:?}");
    assert!(Path::new(record["record_path"].as_str().unwrap()).exists());
}

#[test]
fn sigterm_exits_143_and_a_clean_worktree_is_removed() {
    let env = TestEnv::new();
    let ready = env.root().join("ready");
    let agent = env.script("agent.sh", &format!("cat >/dev/null\ntouch {}\nsleep 300", ready.display()));
    let (run, _) = interrupt(&env, &cli_manifest(&agent, ""), &ready, &[Signal::SIGTERM]);
    run.assert_code(143);
    assert_eq!(run.error_text(), "error: interrupted by SIGTERM");
    env.assert_pristine();
}

#[test]
fn a_second_ctrl_c_kills_an_agent_that_ignores_the_first() {
    let env = TestEnv::new();
    let ready = env.root().join("ready");
    // The agent ignores SIGINT and SIGTERM: only SIGKILL ends it.
    let agent = env.script(
        "agent.sh",
        &format!("trap '' INT TERM\ncat >/dev/null\ntouch {}\nwhile true; do sleep 0.1; done", ready.display()),
    );
    let (run, took) = interrupt(&env, &cli_manifest(&agent, ""), &ready, &[Signal::SIGINT, Signal::SIGINT]);
    run.assert_code(130);
    // Well under the 5 s grace the first Ctrl-C alone would wait.
    assert!(took < Duration::from_secs(3), "the second Ctrl-C kills at once (took {took:?})");
    env.assert_pristine();
}

#[test]
fn the_agent_does_not_outlive_a_killed_eden() {
    let env = TestEnv::new();
    let pid_file = env.root().join("agent.pid");
    // `exec` makes the agent process itself the group leader eden started.
    let agent = env.script("agent.sh", &format!("cat >/dev/null\necho $$ > '{}'\nexec sleep 300", pid_file.display()));
    let path = env.write_manifest(&cli_manifest(&agent, ""));
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--quiet"]);
    command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let mut child = command.spawn().unwrap();
    crate::support::wait_for(&pid_file);
    std::thread::sleep(Duration::from_millis(200));
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(crate::loop_watchdogs::process_alive(pid));
    // SIGKILL: eden gets no chance to clean up; the kernel takes the agent down with it.
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while crate::loop_watchdogs::process_alive(pid) {
        assert!(std::time::Instant::now() < deadline, "the agent {pid} outlived eden");
        std::thread::sleep(Duration::from_millis(50));
    }
}
