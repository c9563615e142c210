//! The branch strategies end to end: worktrees, commits collected, merge back or keep.

use crate::support::{cli_manifest, TestEnv};

/// An agent that commits one file per iteration and signals completion on iteration `done_at`.
fn committing_agent(env: &TestEnv, done_at: u32) -> std::path::PathBuf {
    env.script(
        "agent.sh",
        &format!(
            r#"set -e
prompt=$(cat)
n=${{prompt##* }}
echo "working on iteration $n in $(pwd)"
echo "content $n" > "file-$n.txt"
git add "file-$n.txt"
git commit -q -m "agent commit $n"
if [ "$n" -ge {done_at} ]; then echo "all done <promise>COMPLETE</promise>"; fi"#
        ),
    )
}

#[test]
fn merge_to_head_merges_commits_of_every_iteration_and_cleans_up() {
    let env = TestEnv::new();
    let agent = committing_agent(&env, 3);
    let run = env.run_manifest(&cli_manifest(&agent, "[loop]\nmax_iterations = 5"), &[]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["iterations"].as_array().unwrap().len(), 3);
    assert_eq!(record["completion_signal"], "<promise>COMPLETE</promise>");
    assert_eq!(record["exit_reason"], "completed");
    assert_eq!(record["merged_into"], "main");
    assert_eq!(record["merge_kind"], "fast_forward");
    assert_eq!(record["merge_commit"], env.git(&["rev-parse", "main"]).as_str());
    let subjects: Vec<&str> =
        record["commits"].as_array().unwrap().iter().map(|c| c["subject"].as_str().unwrap()).collect();
    assert_eq!(subjects, ["agent commit 1", "agent commit 2", "agent commit 3"]);
    assert_eq!(record["iterations"][1]["commits"].as_array().unwrap().len(), 1);
    assert!(record["branch"].as_str().unwrap().starts_with("eden/t-"));
    // The work is on main, and nothing is left behind.
    for n in 1..=3 {
        assert!(env.repo.join(format!("file-{n}.txt")).exists(), "main's checkout follows the merge");
    }
    assert_eq!(env.log_subjects("main")[..3], ["agent commit 3", "agent commit 2", "agent commit 1"]);
    env.assert_pristine();
    assert!(env.git(&["status", "--porcelain"]).is_empty(), ".eden/ must be excluded from git status");
    // The run record on disk is the one printed.
    let on_disk: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(record["record_path"].as_str().unwrap()).unwrap()).unwrap();
    assert_eq!(on_disk["id"], record["id"]);
}

#[test]
fn merge_to_head_into_a_branch_that_is_not_checked_out() {
    let env = TestEnv::new();
    env.git(&["branch", "release"]);
    // main moves on while release stays behind: the merge must go into release only.
    env.write("main-only.txt", "x");
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "main moves"]);
    let agent = committing_agent(&env, 1);
    let run = env.run_manifest(&cli_manifest(&agent, "[branch]\nbase = \"release\""), &[]);
    run.assert_code(0);
    assert_eq!(run.record()["merged_into"], "release");
    assert_eq!(env.log_subjects("release")[0], "agent commit 1");
    assert_eq!(env.log_subjects("main")[0], "main moves");
    assert!(!env.repo.join("file-1.txt").exists(), "the checkout of main is untouched");
    assert_eq!(env.branches(), ["main", "release"]);
}

#[test]
fn merge_to_head_makes_a_merge_commit_when_the_target_moved() {
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        r#"cat >/dev/null
echo agent > agent.txt && git add agent.txt && git commit -q -m "agent work"
# Meanwhile, someone commits to main in the user's checkout.
(cd "$MAIN_CHECKOUT" && echo user > user.txt && git add user.txt && git commit -q -m "user work")
echo "<promise>COMPLETE</promise>""#,
    );
    let manifest = format!("{}env = {{ MAIN_CHECKOUT = \"{}\" }}\n", cli_manifest(&agent, ""), env.repo.display());
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    let subjects = env.log_subjects("main");
    assert!(subjects[0].starts_with("Merge branch 'eden/t-"), "{subjects:?}");
    assert_eq!(run.record()["merge_kind"], "merge_commit");
    assert!(env.repo.join("agent.txt").exists() && env.repo.join("user.txt").exists());
    env.assert_pristine();
}

#[test]
fn a_run_without_commits_leaves_nothing_behind() {
    let env = TestEnv::new();
    let run = env.eden(&["run", "--agent", "simulated", "--prompt", "hi", "--json"]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["commits"].as_array().unwrap().len(), 0);
    assert_eq!(record["merged_into"], serde_json::Value::Null);
    env.assert_pristine();
    assert!(!std::path::Path::new(record["worktree"].as_str().unwrap()).exists());
}

#[test]
fn merge_conflict_leaves_the_target_untouched_and_keeps_the_branch() {
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        r#"cat >/dev/null
echo "agent version" > README.md && git commit -q -am "agent edits README"
(cd "$MAIN_CHECKOUT" && echo "user version" > README.md && git commit -q -am "user edits README")
echo "<promise>COMPLETE</promise>""#,
    );
    let manifest = format!("{}env = {{ MAIN_CHECKOUT = \"{}\" }}\n", cli_manifest(&agent, ""), env.repo.display());
    let before_head = {
        let run = env.run_manifest(&manifest, &[]);
        run.assert_code(7);
        let record = run.record();
        assert_eq!(record["exit_reason"], "git_error");
        let branch = record["branch"].as_str().unwrap().to_owned();
        assert_eq!(record["preserved_branch"], branch.as_str());
        let error = env.redact(&run.error_text()).replace(&branch, "[BRANCH]");
        insta::assert_snapshot!(error, @r"
        error: merging `[BRANCH]` into `main` conflicts; `main` was left untouched and `[BRANCH]` is kept
        conflicting files:
          README.md
        hint: to finish by hand: `git switch main && git merge [BRANCH]`, resolve the conflicts, `git commit`, then `git branch -d [BRANCH]`
        ");
        assert!(env.branches().contains(&branch));
        env.git(&["rev-parse", "main"])
    };
    // main is exactly the user's commit: no merge commit, no half-done merge, clean checkout.
    assert_eq!(env.log_subjects("main")[0], "user edits README");
    assert_eq!(env.git(&["rev-parse", "main"]), before_head);
    assert!(env.git(&["status", "--porcelain"]).is_empty());
    assert!(!env.repo.join(".git/MERGE_HEAD").exists());
    assert_eq!(std::fs::read_to_string(env.repo.join("README.md")).unwrap(), "user version\n");
    assert_eq!(env.worktree_count(), 1, "the clean worktree is removed even when the branch is kept");
}

#[test]
fn a_dirty_worktree_is_kept_and_its_path_reported() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null\necho draft > notes.txt\necho '<promise>COMPLETE</promise>'");
    let run = env.run_manifest(&cli_manifest(&agent, ""), &[]);
    // Never a silent success: the work is on no branch.
    run.assert_code(1);
    let record = run.record();
    assert_eq!(record["exit_reason"], "uncommitted_work");
    let worktree = record["preserved_worktree"].as_str().expect("worktree kept");
    let error = env.redact(&run.error_text());
    assert!(error.contains("the agent finished, but it left 1 uncommitted change(s) in"), "{error}");
    assert!(error.contains("hint: look at them (`git -C"), "{error}");
    assert!(error.contains("`branch.commit_leftovers = true`"), "{error}");
    assert_eq!(std::fs::read_to_string(format!("{worktree}/notes.txt")).unwrap(), "draft\n");
    assert!(run.stderr.contains(worktree), "the kept path is printed");
    assert_eq!(record["preserved_branch"], record["branch"]);
}

/// `branch.commit_leftovers = true`: what the agent left uncommitted is committed (a changed
/// copied file aside) and lands with the rest; the run succeeds.
#[test]
fn leftovers_are_committed_when_asked() {
    let env = TestEnv::new();
    env.write(".env", "SECRET=1\n");
    std::fs::write(env.repo.join(".git/info/exclude"), "").unwrap();
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\necho draft > notes.txt\necho changed >> .env\necho '<promise>COMPLETE</promise>'",
    );
    let manifest = cli_manifest(&agent, "copy_to_worktree = [\".env\"]\n[branch]\ncommit_leftovers = true");
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(1);
    // The changed copy stays (it is never committed), so the worktree is still kept and said so.
    assert_eq!(run.record()["exit_reason"], "uncommitted_work");
    assert_eq!(env.git(&["show", "main:notes.txt"]), "draft");
    assert!(env.git(&["ls-tree", "--name-only", "main"]).lines().all(|name| name != ".env"), ".env never lands");
    assert!(run.stderr.contains("committed 1 file(s) the agent left uncommitted"), "{}", run.stderr);

    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null\necho draft > notes.txt\necho '<promise>COMPLETE</promise>'");
    let run = env.run_manifest(&cli_manifest(&agent, "[branch]\ncommit_leftovers = true"), &[]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["merged_into"], "main");
    assert_eq!(record["commits"].as_array().unwrap().len(), 1, "the commit eden made is the run's");
    assert_eq!(env.git(&["show", "main:notes.txt"]), "draft");
    env.assert_pristine();
}

#[test]
fn head_strategy_commits_in_the_checkout() {
    let env = TestEnv::new();
    let agent = committing_agent(&env, 1);
    let run = env.run_manifest(&cli_manifest(&agent, "[branch]\nstrategy = \"head\""), &[]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["branch"], "main");
    assert_eq!(
        std::fs::canonicalize(record["worktree"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(&env.repo).unwrap()
    );
    assert_eq!(env.log_subjects("main")[0], "agent commit 1");
    assert_eq!(record["commits"].as_array().unwrap().len(), 1);
    env.assert_pristine();
}

#[test]
fn head_strategy_refuses_a_dirty_checkout_unless_allowed() {
    let env = TestEnv::new();
    env.write("README.md", "uncommitted edit\n");
    let agent = committing_agent(&env, 1);
    let run = env.run_manifest(&cli_manifest(&agent, "[branch]\nstrategy = \"head\""), &[]);
    run.assert_code(7);
    insta::assert_snapshot!(env.redact(&run.error_text()), @r"
    error: the checkout `[TMP]/repo` has uncommitted changes:
       M README.md
    hint: strategy `head` works in your checkout: commit or stash first, or set `branch.allow_dirty = true`
    ");
    assert_eq!(env.log_subjects("main"), ["initial commit"], "nothing ran");
    assert_eq!(std::fs::read_to_string(env.repo.join("README.md")).unwrap(), "uncommitted edit\n");

    let run = env.run_manifest(&cli_manifest(&agent, "[branch]\nstrategy = \"head\"\nallow_dirty = true"), &[]);
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "agent commit 1");
    assert_eq!(std::fs::read_to_string(env.repo.join("README.md")).unwrap(), "uncommitted edit\n", "user's edit kept");
}

#[test]
fn named_strategy_keeps_the_branch_and_continues_it_later() {
    let env = TestEnv::new();
    let agent = committing_agent(&env, 1);
    let manifest = cli_manifest(&agent, "[branch]\nstrategy = \"named\"\nname = \"eden/feature\"");
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["preserved_branch"], "eden/feature");
    assert_eq!(record["merged_into"], serde_json::Value::Null);
    assert_eq!(env.branches(), ["eden/feature", "main"]);
    assert_eq!(env.worktree_count(), 1, "a clean worktree is removed");
    assert_eq!(env.log_subjects("main"), ["initial commit"], "named branches are not merged");

    // A second run continues the existing branch; only its own commits are collected.
    let agent = env.script(
        "agent2.sh",
        "cat >/dev/null\necho more > more.txt && git add more.txt && git commit -q -m second\necho '<promise>COMPLETE</promise>'",
    );
    let run = env.run_manifest(&cli_manifest(&agent, "[branch]\nstrategy = \"named\"\nname = \"eden/feature\""), &[]);
    run.assert_code(0);
    let subjects: Vec<String> =
        run.record()["commits"].as_array().unwrap().iter().map(|c| c["subject"].as_str().unwrap().to_owned()).collect();
    assert_eq!(subjects, ["second"]);
    assert_eq!(env.log_subjects("eden/feature")[..2], ["second", "agent commit 1"]);
}

#[test]
fn named_strategy_reuses_an_eden_worktree_only_when_asked() {
    let env = TestEnv::new();
    // The first run leaves a dirty worktree behind.
    let agent = env.script("agent.sh", "cat >/dev/null\necho wip > wip.txt\necho '<promise>COMPLETE</promise>'");
    let named = "[branch]\nstrategy = \"named\"\nname = \"eden/wip\"";
    env.run_manifest(&cli_manifest(&agent, named), &[]).assert_code(1);
    assert_eq!(env.worktree_count(), 2);

    let finisher = env.script(
        "finish.sh",
        "cat >/dev/null\ngit add wip.txt && git commit -q -m 'finish wip'\necho '<promise>COMPLETE</promise>'",
    );
    let run = env.run_manifest(&cli_manifest(&finisher, named), &[]);
    run.assert_code(7);
    assert!(run.stderr.contains("already has an eden worktree"), "{}", run.stderr);

    let run = env.run_manifest(&cli_manifest(&finisher, &format!("{named}\nreuse_worktree = true")), &[]);
    run.assert_code(0);
    assert_eq!(env.log_subjects("eden/wip")[0], "finish wip");
}

/// A worktree folder that disappeared (deleted by hand, or a run killed while making it) is
/// forgotten, not an obstacle: the next run on that branch makes it again.
#[test]
fn a_worktree_whose_folder_is_gone_does_not_block_the_branch() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null\necho wip > wip.txt\necho '<promise>COMPLETE</promise>'");
    let named = "[branch]\nstrategy = \"named\"\nname = \"eden/gone\"";
    let run = env.run_manifest(&cli_manifest(&agent, named), &[]);
    run.assert_code(1);
    let worktree = run.record()["preserved_worktree"].as_str().unwrap().to_owned();
    std::fs::remove_dir_all(&worktree).unwrap();
    let run = env.run_manifest(&cli_manifest(&agent, named), &[]);
    run.assert_code(1);
    assert_eq!(run.record()["preserved_worktree"], worktree.as_str(), "made again at the same place");
}

#[test]
fn the_agent_runs_in_the_worktree_with_pwd_pointing_there() {
    let env = TestEnv::new();
    // eden itself is started with PWD = the user's checkout; the agent must not inherit it.
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\necho \"pwd=$PWD\"\necho \"cwd=$(/bin/pwd -P)\"\necho '<promise>COMPLETE</promise>'",
    );
    let run = env.run_manifest(&cli_manifest(&agent, ""), &[]);
    run.assert_code(0);
    let worktree = run.record()["worktree"].as_str().unwrap().to_owned();
    assert!(run.stderr.contains(&format!("| pwd={worktree}\n")), "{}", run.stderr);
    let real = std::fs::canonicalize(&env.repo).unwrap().join(".eden/worktrees");
    assert!(run.stderr.contains(&format!("| cwd={}/", real.display())), "{}", run.stderr);
}

/// The person keeps working in their checkout while the agent runs: changes the merge does not
/// touch are carried along as they were (staged stays staged); changes it would touch make eden
/// refuse before touching anything.
#[test]
fn the_merge_keeps_unrelated_uncommitted_work_and_refuses_to_touch_changed_files() {
    let env = TestEnv::new();
    env.write("notes.txt", "notes\n");
    env.write("other.txt", "other\n");
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "more files"]);
    let agent = env.script(
        "agent.sh",
        r#"cat >/dev/null
echo agent > "$TOUCH" && git add "$TOUCH" && git commit -q -m "agent edits $TOUCH"
# Meanwhile, in the person's checkout: a staged edit, an unstaged edit, an untracked file.
(cd "$MAIN_CHECKOUT" && echo staged > notes.txt && git add notes.txt && echo unstaged > other.txt && echo new > scratch.txt)
echo "<promise>COMPLETE</promise>""#,
    );
    // `allow_dirty`: the later runs start from the checkout the first one left dirty; this test
    // is about the check at merge time (the early one has its own test).
    let manifest = |touch: &str| {
        format!(
            "{}env = {{ MAIN_CHECKOUT = \"{}\", TOUCH = \"{touch}\" }}\n",
            cli_manifest(&agent, "[branch]\nallow_dirty = true"),
            env.repo.display()
        )
    };
    let snapshot = |env: &TestEnv| {
        let files: Vec<String> = ["README.md", "notes.txt", "other.txt", "scratch.txt"]
            .iter()
            .map(|f| std::fs::read_to_string(env.repo.join(f)).unwrap_or_default())
            .collect();
        (env.git(&["diff", "--cached"]), env.git(&["diff"]), files)
    };

    // The agent changes README.md, which nobody touched: merged, the person's work as it was.
    let run = env.run_manifest(&manifest("README.md"), &[]);
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "agent edits README.md");
    assert_eq!(std::fs::read_to_string(env.repo.join("README.md")).unwrap(), "agent\n");
    assert_eq!(env.git(&["diff", "--cached", "--name-only"]), "notes.txt", "staged stays staged");
    assert_eq!(env.git(&["diff", "--name-only"]), "other.txt", "unstaged stays unstaged");
    assert_eq!(std::fs::read_to_string(env.repo.join("scratch.txt")).unwrap(), "new\n");
    env.assert_pristine();

    // The agent changes other.txt, which the person has edited: refused, nothing touched.
    let main_before = env.git(&["rev-parse", "main"]);
    let run = env.run_manifest(&manifest("other.txt"), &[]);
    run.assert_code(7);
    let record = run.record();
    let branch = record["preserved_branch"].as_str().unwrap().to_owned();
    let before = snapshot(&env);
    insta::assert_snapshot!(env.redact(&run.error_text()).replace(&branch, "[BRANCH]"), @r"
    error: cannot merge `[BRANCH]` into `main`: uncommitted changes in `[TMP]/repo` touch files the merge changes; `main` and the checkout were left untouched and `[BRANCH]` is kept
    files:
      other.txt
    hint: commit or stash your changes to those files, then `git merge [BRANCH]`; to keep runs off a busy checkout, use strategy `named`
    ");
    assert_eq!(env.git(&["rev-parse", "main"]), main_before);
    assert_eq!(snapshot(&env), before);
    assert_eq!(env.log_subjects(&branch)[0], "agent edits other.txt");
    env.git(&["branch", "-D", &branch]);

    // The agent adds scratch.txt, where the person has an untracked file: refused too.
    let run = env.run_manifest(&manifest("scratch.txt"), &[]);
    run.assert_code(7);
    assert!(run.error_text().contains("files:\n  scratch.txt"), "{}", run.error_text());
    assert_eq!(std::fs::read_to_string(env.repo.join("scratch.txt")).unwrap(), "new\n");
    assert_eq!(env.git(&["rev-parse", "main"]), main_before);
}

/// A checkout in the middle of the person's own merge is left alone: eden never aborts or
/// finishes what it did not start.
#[test]
fn a_checkout_in_the_middle_of_a_merge_is_not_touched() {
    let env = TestEnv::new();
    env.git(&["switch", "-q", "-c", "side"]);
    env.write("README.md", "side\n");
    env.git(&["commit", "-q", "-am", "side edit"]);
    env.git(&["switch", "-q", "main"]);
    env.write("README.md", "main\n");
    env.git(&["commit", "-q", "-am", "main edit"]);
    let agent = env.script(
        "agent.sh",
        r#"cat >/dev/null
echo agent > agent.txt && git add agent.txt && git commit -q -m "agent work"
(cd "$MAIN_CHECKOUT" && git merge -q side >/dev/null 2>&1 || true)
echo "<promise>COMPLETE</promise>""#,
    );
    let manifest = format!("{}env = {{ MAIN_CHECKOUT = \"{}\" }}\n", cli_manifest(&agent, ""), env.repo.display());
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(7);
    let branch = run.record()["preserved_branch"].as_str().unwrap().to_owned();
    insta::assert_snapshot!(env.redact(&run.error_text()), @r"
    error: the checkout `[TMP]/repo` of `main` is in the middle of a merge, so eden does not merge into it
    hint: finish or abort it there; the run's branch is kept, merge it by hand afterwards
    ");
    let merge_head = std::fs::read_to_string(env.repo.join(".git/MERGE_HEAD")).unwrap();
    assert_eq!(merge_head.trim(), env.git(&["rev-parse", "side"]), "the person's merge is still theirs");
    assert_eq!(env.log_subjects("main")[0], "main edit");
    assert_eq!(env.log_subjects(&branch)[0], "agent work");
}

/// git started by an agent or a hook does no automatic maintenance in the background: eden ends
/// what a command leaves behind, and a `gc` killed while packing refs would leave a lock that
/// breaks every later ref update in the repository.
#[test]
fn git_in_agents_and_hooks_does_no_background_maintenance() {
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\necho \"agent gc.auto=$(git config gc.auto) maintenance.auto=$(git config maintenance.auto)\"\necho '<promise>COMPLETE</promise>'",
    );
    let hooks = "[hooks.host]\non_worktree_ready = [\"echo hook gc.auto=$(git config gc.auto)\"]\n";
    let run = env.run_manifest(&(cli_manifest(&agent, "") + hooks), &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("| agent gc.auto=0 maintenance.auto=false"), "{}", run.stderr);
    assert!(run.stderr.contains("> hook gc.auto=0"), "{}", run.stderr);
    let config = std::fs::read_to_string(env.repo.join(".git/config")).unwrap();
    assert!(!config.contains("[gc]") && !config.contains("[maintenance]"), "nothing written to the config: {config}");
}

/// An agent that commits but never says it is done: by default nothing is merged, the branch
/// keeps its commits, exit 1, and the message says how to land the work anyway.
#[test]
fn unfinished_work_is_not_merged_by_default() {
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\necho $RANDOM >> work.txt && git add work.txt && git commit -qm 'half done'",
    );
    let run = env.run_manifest(&cli_manifest(&agent, "[loop]\nmax_iterations = 2"), &[]);
    run.assert_code(1);
    let record = run.record();
    let branch = record["preserved_branch"].as_str().unwrap().to_owned();
    assert_eq!(record["merged_into"], serde_json::Value::Null);
    assert_eq!(env.log_subjects("main"), ["initial commit"], "main untouched");
    assert_eq!(env.log_subjects(&branch)[..2], ["half done", "half done"]);
    let id = record["id"].as_str().unwrap();
    insta::assert_snapshot!(run.error_text().replace(&branch, "[BRANCH]").replace(id, "[RUN]"), @r"
    error: no completion signal after 2 iteration(s); nothing was merged, and `[BRANCH]` keeps its 2 commit(s)
    hint: to review and merge the work as it is: `eden diff [RUN]`, `eden merge [RUN]`; or the agent must print one of: `<promise>COMPLETE</promise>`; raise `loop.max_iterations` or check the prompt (`loop.require_completion = false` accepts a run that ends without it)
    ");
    // With `require_completion = false` the same run merges.
    let run = env.run_manifest(&cli_manifest(&agent, "[loop]\nmax_iterations = 2\nrequire_completion = false"), &[]);
    run.assert_code(0);
    assert_eq!(run.record()["merged_into"], "main");
}

/// With `merge-to-head`, uncommitted changes in the checkout of the base are found before the
/// agent runs: refused, nothing created.
#[test]
fn a_dirty_base_checkout_is_refused_before_the_agent_starts() {
    let env = TestEnv::new();
    let started = env.root().join("started");
    let agent = env.script(
        "agent.sh",
        &format!("cat >/dev/null\ntouch {}\necho '<promise>COMPLETE</promise>'", started.display()),
    );
    env.write("README.md", "edited, not committed\n");
    env.write("untracked.txt", "untracked files do not count\n");
    let run = env.run_manifest(&cli_manifest(&agent, ""), &[]);
    run.assert_code(7);
    insta::assert_snapshot!(env.redact(&run.error_text()), @r"
    error: `main` is checked out at `[TMP]/repo` with uncommitted changes, where the run's merge would land:
      M README.md
    hint: commit or stash them first (nothing was started), or use strategy `named` to keep the work on a branch; `branch.allow_dirty = true` runs anyway
    ");
    assert!(!started.exists(), "the agent never started");
    env.assert_pristine();
    assert!(!env.repo.join(".eden/runs").exists(), "no run record: the run never began");
    // Only untracked files: fine.
    env.git(&["checkout", "README.md"]);
    env.run_manifest(&cli_manifest(&agent, ""), &[]).assert_code(0);
    assert!(started.exists());
}

/// The base's ref is locked by another git when eden fast-forwards it in the checkout: git
/// moves the index and files before failing on the ref. eden puts them back, so "left
/// untouched" is true: the checkout's index and files are as they were, the branch is kept.
#[test]
fn a_locked_base_ref_leaves_the_checkout_as_it_was() {
    let env = TestEnv::new();
    let agent = committing_agent(&env, 1);
    env.write("local.txt", "mine\n");
    let lock = env.repo.join(".git/refs/heads/main.lock");
    let hook = format!("[hooks.host]\non_iteration_end = [\"touch {}\"]", lock.display());
    let run = env.run_manifest(&cli_manifest(&agent, &hook), &[]);
    run.assert_code(7);
    assert!(run.error_text().contains("`main` was left untouched"), "{}", run.stderr);
    std::fs::remove_file(&lock).unwrap();
    assert_eq!(env.git(&["status", "--porcelain"]), "?? local.txt", "index and files as they were");
    assert!(!env.repo.join("file-1.txt").exists());
    assert_eq!(env.log_subjects("main"), ["initial commit"]);
    let branch = run.record()["preserved_branch"].as_str().expect("kept").to_owned();
    assert_eq!(env.log_subjects(&branch)[0], "agent commit 1");
}

/// The base was rewound while the run went: its tip commit is no longer on it, the run's branch
/// still has it, so the merge brings three commits, not the run's two. The summary and the
/// record count what landed.
#[test]
fn the_summary_counts_what_landed() {
    let env = TestEnv::new();
    env.write("extra.txt", "extra\n");
    env.git(&["add", "extra.txt"]);
    env.git(&["commit", "-qm", "extra"]);
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\nfor n in 1 2; do echo $n > f$n.txt && git add f$n.txt && git commit -qm c$n; done\necho '<promise>COMPLETE</promise>'",
    );
    let hook = "[hooks.host]\non_iteration_end = [\"git -C \\\"$EDEN_REPO\\\" reset -q --hard HEAD~1\"]";
    let run = env.run_manifest(&cli_manifest(&agent, hook), &[]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["commits"].as_array().unwrap().len(), 2, "the run's own");
    assert_eq!(record["merged_commits"], 3);
    assert!(run.stderr.contains("merged 3 commit(s) from"), "{}", run.stderr);
    assert!(run.stderr.contains("3 commit(s) merged into `main`"), "{}", run.stderr);
    assert_eq!(env.log_subjects("main")[..3], ["c2", "c1", "extra"]);
}

/// A merge is an event of its own in `--json-events` (and the log): target, branch, how many
/// commits landed, the kind, the commits before and after.
#[test]
fn a_merge_is_a_typed_event() {
    let env = TestEnv::new();
    let agent = committing_agent(&env, 1);
    let path = env.write_manifest(&cli_manifest(&agent, ""));
    let run = env.eden(&["run", path.to_str().unwrap(), "--json-events"]);
    run.assert_code(0);
    let merged: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["event"] == "merged")
        .collect();
    assert_eq!(merged.len(), 1, "{}", run.stdout);
    let event = &merged[0];
    assert_eq!(event["target"], "main");
    assert_eq!(event["commits"], 1);
    assert_eq!(event["kind"], "fast_forward");
    assert_eq!(event["merge_commit"].as_str().unwrap(), env.git(&["rev-parse", "main"]));
    assert_eq!(event["onto"].as_str().unwrap(), env.git(&["rev-parse", "main~1"]));
    assert!(event["message"].as_str().unwrap().starts_with("merged 1 commit(s) from `eden/"));
}
