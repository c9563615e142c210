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
    // This test process holds the lock, as another eden run would.
    let locks = env.repo.join(".eden/locks");
    let (held, _) = eden::lock::BranchLock::acquire(&locks, "eden-locked", "eden/locked", "other-run").unwrap();
    let run = env.run_manifest(&named_manifest(&env), &[]);
    run.assert_code(7);
    let message = env.redact(&run.error_text()).replace(&std::process::id().to_string(), "[PID]");
    insta::assert_snapshot!(message, @r"
    error: branch `eden/locked` is in use by another eden run (pid [PID], run other-run)
    hint: wait for that run to finish, or use another branch
    ");
    assert!(locks.join("eden-locked.lock").exists(), "someone else's lock is not touched");
    env.assert_pristine();
    drop(held);
}

#[test]
fn a_lock_file_whose_process_lives_on_under_another_identity_is_stale() {
    let env = TestEnv::new();
    // The pid is alive (this test), but it does not hold the lock: a crashed run's file whose
    // pid was reused. Only a held lock counts.
    let lock = write_lock(&env, std::process::id());
    env.run_manifest(&named_manifest(&env), &[]).assert_code(0);
    assert!(!lock.exists(), "reclaimed, then released at the end");
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

/// A named branch whose eden worktree a running eden is using: the message says so (not "set
/// `reuse_worktree`"), and nothing is touched.
#[test]
fn a_named_branch_in_use_by_a_running_eden_says_so() {
    let env = TestEnv::new();
    let ready = env.root().join("ready");
    let agent = env.script("slow.sh", &format!("cat >/dev/null\ntouch {}\nsleep 300", ready.display()));
    let named = "[branch]\nstrategy = \"named\"\nname = \"eden/busy\"";
    // The branch exists with an eden worktree, and a run is working in it.
    env.git(&["branch", "eden/busy"]);
    let path = env.write_manifest(&cli_manifest(&agent, named));
    let mut first = env
        .eden_command(&["run", path.to_str().unwrap(), "--quiet"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::support::wait_for(&ready);
    let second = env.script("second.sh", "cat >/dev/null\necho '<promise>COMPLETE</promise>'");
    let other = env.root().join("other.toml");
    std::fs::write(&other, cli_manifest(&second, named)).unwrap();
    let run = env.eden(&["run", other.to_str().unwrap()]);
    run.assert_code(7);
    let message = run.error_text();
    assert!(message.starts_with("error: branch `eden/busy` is in use by another eden run (pid "), "{message}");
    assert!(message.ends_with("hint: wait for that run to finish, or use another branch"), "{message}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    first.wait().unwrap();
}
