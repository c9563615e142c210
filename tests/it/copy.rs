//! `copy_to_worktree`: files git does not have, copied into the worktree before the hooks, and
//! removed again at the end unless the run changed them.

use crate::support::{cli_manifest, TestEnv};

/// A repository with an untracked `.env` and `config/local/` (two files), as users have them.
fn with_local_files(env: &TestEnv) {
    std::fs::write(env.repo.join(".env"), "DB=local\n").unwrap();
    std::fs::create_dir_all(env.repo.join("config/local/deep")).unwrap();
    std::fs::write(env.repo.join("config/local/a.toml"), "a = 1\n").unwrap();
    std::fs::write(env.repo.join("config/local/deep/b.toml"), "b = 2\n").unwrap();
}

const COPIES: &str = "copy_to_worktree = [\".env\", \"./config/local\"]\n";

#[test]
fn files_and_folders_are_there_for_the_hooks_and_gone_afterwards() {
    let env = TestEnv::new();
    with_local_files(&env);
    let seen = env.root().join("seen.txt");
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\ncat .env config/local/deep/b.toml\necho work > work.txt && git add work.txt && git commit -qm work\necho '<promise>COMPLETE</promise>'",
    );
    let hooks = format!(
        "[hooks.host]\non_worktree_ready = [\"cat .env config/local/a.toml config/local/deep/b.toml > '{}'\"]\n",
        seen.display()
    );
    let run = env.run_manifest(&cli_manifest(&agent, COPIES).replace("[agent]", &format!("{hooks}[agent]")), &[]);
    run.assert_code(0);
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "DB=local\na = 1\nb = 2\n");
    assert!(run.stderr.contains("| DB=local"), "the agent saw them too:\n{}", run.stderr);
    assert!(run.stderr.contains("copied 3 file(s) into the worktree"), "{}", run.stderr);
    let record = run.record();
    assert_eq!(record["merged_into"], "main");
    assert_eq!(record["preserved_worktree"], serde_json::Value::Null, "unchanged copies do not keep the worktree");
    // The copies were never committed, and the originals are untouched.
    assert_eq!(env.git(&["ls-tree", "-r", "--name-only", "main"]).trim(), "README.md\nwork.txt");
    assert_eq!(std::fs::read_to_string(env.repo.join(".env")).unwrap(), "DB=local\n");
    env.assert_pristine();
}

#[test]
fn a_copy_the_agent_changed_keeps_the_worktree() {
    let env = TestEnv::new();
    with_local_files(&env);
    let agent = env.script("agent.sh", "cat >/dev/null\necho DB=changed > .env\necho '<promise>COMPLETE</promise>'");
    let run = env.run_manifest(&cli_manifest(&agent, COPIES), &[]);
    run.assert_code(1);
    let worktree = run.record()["preserved_worktree"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::read_to_string(format!("{worktree}/.env")).unwrap(), "DB=changed\n");
    // The unchanged ones were removed; only the changed copy is left.
    assert!(!std::path::Path::new(&format!("{worktree}/config")).exists());
    assert!(run.stderr.contains("1 file(s) copied by `copy_to_worktree` were changed during the run and stay"));
}

#[test]
fn a_missing_source_is_refused_before_anything_is_created() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null");
    let run = env.run_manifest(&cli_manifest(&agent, "copy_to_worktree = [\"nope.env\"]\n"), &[]);
    run.assert_code(2);
    insta::assert_snapshot!(env.redact(&run.error_text()), @r"
    error: `copy_to_worktree` source `[TMP]/repo/nope.env` does not exist
    hint: paths are relative to the checkout eden runs in ([TMP]/repo); create it or remove the entry
    ");
    env.assert_pristine();
    assert!(!env.repo.join(".eden").exists());
}

#[test]
fn a_copy_over_its_timeout_exits_4_and_leaves_nothing() {
    let env = TestEnv::new();
    // Large enough that copying it takes longer than a millisecond.
    std::fs::create_dir_all(env.repo.join("big")).unwrap();
    for i in 0..8 {
        std::fs::write(env.repo.join(format!("big/{i}.bin")), vec![7u8; 16 << 20]).unwrap();
    }
    let agent = env.script("agent.sh", "cat >/dev/null\necho never");
    let extra = "copy_to_worktree = [\"big\"]\n[timeouts]\ncopy_to_worktree = \"1ms\"\n";
    let run = env.run_manifest(&cli_manifest(&agent, extra), &[]);
    run.assert_code(4);
    insta::assert_snapshot!(run.error_text(), @r"
    error: copying `copy_to_worktree` files took longer than 1ms and was stopped
    hint: raise `timeouts.copy_to_worktree`, or copy less (large folders belong in a mount or a hook)
    ");
    assert_eq!(run.record()["iterations"].as_array().unwrap().len(), 0);
    env.assert_pristine();
}
