//! `eden diff`, `eden merge` and `eden discard`: a run's work reviewed, landed or thrown away
//! after the run, on real git repositories.

use crate::support::{cli_manifest, wait_for, Run, TestEnv};

/// An agent that commits `work.txt` (with `text`) and leaves `extra` (shell) after it, never
/// signalling completion: its run keeps its branch.
fn kept_run(env: &TestEnv, text: &str, extra: &str) -> serde_json::Value {
    let agent = env.script(
        "agent.sh",
        &format!("cat >/dev/null\necho {text} > work.txt && git add work.txt && git commit -qm 'work {text}'\n{extra}"),
    );
    let run = env.run_manifest(&cli_manifest(&agent, "[loop]\nmax_iterations = 1\n"), &[]);
    run.assert_code(1);
    run.record()
}

#[test]
fn diff_shows_what_the_run_changed() {
    let env = TestEnv::new();
    let record = kept_run(&env, "hello", "");
    let run = env.eden(&["diff", "last"]);
    run.assert_code(0);
    assert!(run.stdout.contains("+++ b/work.txt") && run.stdout.contains("+hello"), "{}", run.stdout);
    let id = record["id"].as_str().unwrap();
    // git's own arguments: after `--`, straight after the run, or with the run left out; eden's
    // `--repo` among them is still eden's (run from elsewhere, so the repository is found by it).
    let repo = env.repo.to_str().unwrap();
    for args in [
        vec!["diff", &id[..12], "--", "--stat"],
        vec!["diff", &id[..12], "--stat"],
        vec!["diff", "--stat"],
        vec!["diff", "--", "--stat"],
        vec!["diff", "--stat", "--repo", repo],
    ] {
        let mut command = env.eden_command(&args);
        if args.contains(&"--repo") {
            command.current_dir(env.root()).env("PWD", env.root());
        }
        let stat = Run::from(command.output().unwrap());
        stat.assert_code(0);
        assert!(stat.stdout.contains("work.txt | 1 +") && !stat.stdout.contains("+hello"), "{args:?}: {}", stat.stdout);
    }
    // After `--` everything goes to git as it is, a second `--` (before paths) too.
    let names = env.eden(&["diff", "--name-only", "--", "--", "work.txt", "README.md"]);
    assert_eq!(names.stdout.trim(), "work.txt", "{}", names.stderr);
    let none = env.eden(&["diff", "no-such-run"]);
    none.assert_code(2);
    assert!(none.stderr.contains("no run or session `no-such-run`"), "{}", none.stderr);
}

#[test]
fn merge_lands_a_kept_run_once_and_refuses_a_conflict() {
    let env = TestEnv::new();
    let record = kept_run(&env, "hello", "");
    let branch = record["preserved_branch"].as_str().unwrap().to_owned();
    let run = env.eden(&["merge", "last", "--json"]);
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "work hello");
    let merged = run.json();
    assert_eq!(merged["merged_into"], "main");
    assert!(merged["preserved_branch"].is_null());
    assert!(!env.branches().contains(&branch), "the branch went with the merge");
    let saved = env.last_record();
    assert_eq!(saved["merged_into"], "main", "the record says so");
    let again = env.eden(&["merge", "last"]);
    again.assert_code(2);
    assert!(again.stderr.contains("was merged into `main` already"), "{}", again.stderr);

    // main moves on with a conflicting change while a second run's branch waits.
    let record = kept_run(&env, "theirs", "");
    let branch = record["preserved_branch"].as_str().unwrap().to_owned();
    env.write("work.txt", "mine\n");
    env.git(&["commit", "-qam", "mine"]);
    let main = env.git(&["rev-parse", "main"]);
    let run = env.eden(&["merge", "last"]);
    run.assert_code(7);
    assert!(run.stderr.contains("conflicts with `main` in: work.txt; nothing was merged"), "{}", run.stderr);
    assert_eq!(env.git(&["rev-parse", "main"]), main, "main untouched");
    assert!(env.branches().contains(&branch), "the branch is kept");
    assert_eq!(env.git(&["status", "--porcelain"]), "", "no half-done merge in the checkout");
}

#[test]
fn discard_keeps_uncommitted_work_unless_forced_and_keeps_the_record() {
    let env = TestEnv::new();
    let record = kept_run(&env, "hello", "echo draft > draft.txt");
    let worktree = record["preserved_worktree"].as_str().unwrap().to_owned();
    let branch = record["preserved_branch"].as_str().unwrap().to_owned();
    let run = env.eden(&["discard", "last"]);
    run.assert_code(2);
    assert!(run.stderr.contains("has 1 uncommitted change(s); nothing was removed"), "{}", run.stderr);
    assert!(std::path::Path::new(&worktree).exists() && env.branches().contains(&branch));
    let run = env.eden(&["discard", "last", "--force"]);
    run.assert_code(0);
    assert!(!std::path::Path::new(&worktree).exists());
    assert!(!env.branches().contains(&branch));
    let saved = env.last_record();
    assert_eq!(saved["id"], record["id"], "the record stays");
    assert!(saved["preserved_branch"].is_null() && saved["preserved_worktree"].is_null());
    assert_eq!(env.log_subjects("main"), ["initial commit"], "nothing reached main");
}

/// A run that is still going is neither merged nor discarded under it.
#[test]
fn a_run_still_going_is_left_alone() {
    let env = TestEnv::new();
    let ready = env.root().join("ready");
    let agent = env.script(
        "agent.sh",
        &format!(
            "cat >/dev/null\necho w > w.txt && git add w.txt && git commit -qm w\ntouch '{}'\nsleep 30",
            ready.display()
        ),
    );
    let path = env.write_manifest(&cli_manifest(&agent, "[branch]\nstrategy = \"named\"\nname = \"eden/live\"\n"));
    let mut child =
        env.eden_command(&["run", path.to_str().unwrap()]).stderr(std::process::Stdio::null()).spawn().unwrap();
    wait_for(&ready);
    for command in ["merge", "discard"] {
        let run = env.eden(&[command, "last"]);
        assert!(run.code != 0, "{command}: {}", run.stderr);
        assert!(run.stderr.contains("is still going"), "{command}: {}", run.stderr);
    }
    assert!(env.branches().contains(&"eden/live".to_owned()));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
}

/// A `named` branch that held work before the run is not the run's to throw away: discard keeps
/// it, and says how to delete it by hand.
#[test]
fn discard_keeps_a_branch_that_held_more_than_the_run() {
    let env = TestEnv::new();
    env.git(&["switch", "-q", "-c", "eden/feature"]);
    env.write("before.txt", "mine\n");
    env.git(&["add", "before.txt"]);
    env.git(&["commit", "-qm", "before the run"]);
    env.git(&["switch", "-q", "main"]);
    let agent = env.script("agent.sh", "cat >/dev/null\necho w > w.txt && git add w.txt && git commit -qm 'run work'");
    let branch = "[loop]\nmax_iterations = 1\n[branch]\nstrategy = \"named\"\nname = \"eden/feature\"\n";
    env.run_manifest(&cli_manifest(&agent, branch), &[]).assert_code(1);
    let run = env.eden(&["discard", "last"]);
    run.assert_code(0);
    assert!(run.stderr.contains("kept the branch `eden/feature`: eden did not make it for run"), "{}", run.stderr);
    assert_eq!(env.log_subjects("eden/feature")[..2], ["run work", "before the run"]);
}

/// `eden merge` of a run that went on in a branch that existed before it names no base of its
/// own: refused, with how to merge it by hand.
#[test]
fn merge_refuses_a_run_with_no_base_of_its_own() {
    let env = TestEnv::new();
    env.git(&["branch", "eden/feature"]);
    let agent = env.script("agent.sh", "cat >/dev/null\necho w > w.txt && git add w.txt && git commit -qm 'run work'");
    let branch = "[loop]\nmax_iterations = 1\n[branch]\nstrategy = \"named\"\nname = \"eden/feature\"\n";
    env.run_manifest(&cli_manifest(&agent, branch), &[]).assert_code(1);
    let run = env.eden(&["merge", "last"]);
    run.assert_code(2);
    assert!(run.stderr.contains("which existed before it: it has no base of its own"), "{}", run.stderr);
    assert!(run.stderr.contains("git switch <target> && git merge eden/feature"), "{}", run.stderr);
    assert_eq!(env.log_subjects("main"), ["initial commit"]);
}

/// What was done with a run after it ended is in its record (`later`), and history says it:
/// `sessions list` shows it over how the run ended, `sessions show` after the run's own summary.
#[test]
fn history_says_what_happened_after_a_run() {
    let env = TestEnv::new();
    let merged = kept_run(&env, "hello", "");
    env.eden(&["merge", "last"]).assert_code(0);
    let saved = env.last_record();
    assert_eq!(saved["later"][0]["action"], "merged", "{saved:#}");
    assert_eq!(saved["later"][0]["into"], "main");
    let discarded = kept_run(&env, "other", "");
    env.eden(&["discard", "last"]).assert_code(0);
    let list = env.eden(&["sessions", "list"]);
    list.assert_code(0);
    let line = |id: &serde_json::Value| {
        let id = id.as_str().unwrap();
        list.stdout.lines().find(|line| line.starts_with(id)).unwrap_or_default().to_owned()
    };
    assert!(line(&merged["id"]).contains("merged later"), "{}", list.stdout);
    assert!(line(&discarded["id"]).contains("discarded"), "{}", list.stdout);
    let show = env.eden(&["sessions", "show", merged["id"].as_str().unwrap(), "--no-pager"]);
    show.assert_code(0);
    assert!(show.stdout.contains("merged into `main` later, by `eden merge`"), "{}{}", show.stdout, show.stderr);
    // Discarding the merged run discards nothing of its work, and says so.
    let again = env.eden(&["discard", merged["id"].as_str().unwrap()]);
    again.assert_code(0);
    assert!(
        again.stderr.contains("was merged into `main`: its work is there, and nothing is discarded"),
        "{}",
        again.stderr
    );
    let record = std::fs::read_to_string(env.repo.join(format!(".eden/runs/{}.json", merged["id"].as_str().unwrap())));
    assert!(!record.unwrap().contains("\"discarded\""), "a merged run is not recorded as discarded");
}
