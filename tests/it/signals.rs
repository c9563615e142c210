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
    let record = run.record();
    let (id, branch) = (record["id"].as_str().unwrap(), record["branch"].as_str().unwrap());
    assert_eq!(
        run.error_text(),
        format!(
            "error: interrupted by SIGINT\nhint: what it committed is kept on `{branch}` (1 commit(s)): \
             `eden diff {id}`, then `eden merge {id}` or `eden discard {id}`"
        )
    );
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
    let marker = crate::support::Marker::new();
    let agent = env.script("agent.sh", &format!("cat >/dev/null\nexec {}", marker.sleep()));
    let path = env.write_manifest(&cli_manifest(&agent, ""));
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--quiet"]);
    command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let mut child = command.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while marker.alive().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the agent never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL: eden gets no chance to clean up; the kernel takes the agent down with it.
    child.kill().unwrap();
    child.wait().unwrap();
    let left = marker.gone_within(Duration::from_secs(2));
    assert!(left.is_empty(), "the agent outlived eden: {left:?}");
}

/// The run record exists from the start (`running`, with eden's pid), is updated as the run
/// goes, and is still there, as far as the run got, when eden is killed outright.
#[test]
fn the_record_is_written_at_the_start_and_survives_a_killed_eden() {
    let env = TestEnv::new();
    let copy = env.root().join("record-during-the-run.json");
    let agent = env.script(
        "agent.sh",
        &format!(
            "cat >/dev/null\necho work > work.txt && git add work.txt && git commit -q -m work\ncp ../../runs/*.json '{}'\nsleep 300",
            copy.display()
        ),
    );
    let path = env.write_manifest(&cli_manifest(&agent, ""));
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--quiet"]);
    let mut child = command.spawn().unwrap();
    crate::support::wait_for(&copy);
    std::thread::sleep(Duration::from_millis(100));
    let during: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&copy).unwrap()).unwrap();
    assert_eq!(during["status"], "running");
    assert_eq!(during["phase"], "iterating");
    assert_eq!(during["process"]["pid"], child.id());
    assert!(during["process"]["start"].as_u64().unwrap() > 0);
    assert_eq!(during["exit_code"], serde_json::Value::Null);
    let record_path = during["record_path"].as_str().unwrap().to_owned();

    child.kill().unwrap();
    child.wait().unwrap();
    let after: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&record_path).unwrap()).unwrap();
    assert_eq!(after["status"], "running", "nobody wrote an end: an abandoned run");
    assert_eq!(after["phase"], "iterating");
    // The agent's commit is safe on its branch.
    assert_eq!(env.log_subjects(after["branch"].as_str().unwrap())[0], "work");
}
