//! One run per branch: live locks refuse, stale locks are reclaimed.

use crate::support::{cli_manifest, TestEnv};

fn named_manifest(env: &TestEnv) -> String {
    let agent = env.script("agent.sh", "cat >/dev/null\necho '<promise>COMPLETE</promise>'");
    cli_manifest(&agent, "[branch]\nstrategy = \"named\"\nname = \"eden/locked\"")
}

fn write_lock(env: &TestEnv, pid: u32) -> std::path::PathBuf {
    let locks = env.repo.join(".eden/locks");
    std::fs::create_dir_all(&locks).unwrap();
    let lock = locks.join("eden-locked.lock");
    std::fs::write(&lock, format!("{pid}\nsome-run\n")).unwrap();
    lock
}

#[test]
fn a_live_lock_refuses_the_run_and_changes_nothing() {
    let env = TestEnv::new();
    // This test process is alive: its pid makes a live lock.
    let lock = write_lock(&env, std::process::id());
    let run = env.run_manifest(&named_manifest(&env), &[]);
    run.assert_code(7);
    let message = env.redact(&run.error_text()).replace(&std::process::id().to_string(), "[PID]");
    insta::assert_snapshot!(message, @r"
    error: branch `eden/locked` is in use by another eden run (pid [PID])
    hint: wait for that run to finish; if pid [PID] is not eden, delete `[TMP]/repo/.eden/locks/eden-locked.lock`
    ");
    assert!(lock.exists(), "someone else's lock is not touched");
    env.assert_pristine();
    assert!(run.stdout.is_empty(), "no run record for a run that never started");
}

#[test]
fn a_stale_lock_of_a_dead_process_is_reclaimed() {
    let env = TestEnv::new();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    let lock = write_lock(&env, dead_pid);
    let run = env.run_manifest(&named_manifest(&env), &[]);
    run.assert_code(0);
    assert!(
        run.stderr.contains(&format!("reclaimed a stale lock on `eden/locked` left by pid {dead_pid}")),
        "{}",
        run.stderr
    );
    assert!(!lock.exists(), "the lock is released at the end");
}
