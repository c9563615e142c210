//! Many eden processes at once in one repository, as scripts start them: every merge lands,
//! none is lost, and the person's checkout is never left in a state they did not make.

use crate::support::{Run, TestEnv};
use std::process::Stdio;

/// An agent that commits one file, named by the run, with the given content. With `BARRIER`
/// set, it first waits until `COUNT` agents have started (so every run began from the same base).
fn committing_agent(env: &TestEnv) -> std::path::PathBuf {
    env.script(
        "commit-a-file.sh",
        r#"cat >/dev/null
if [ -n "$BARRIER" ]; then
  mktemp -p "$BARRIER" >/dev/null
  while [ "$(ls "$BARRIER" | wc -l)" -lt "$COUNT" ]; do sleep 0.05; done
fi
echo "$CONTENT" > "$FILE" && git add "$FILE" && git commit -q -m "add $FILE"
echo '<promise>COMPLETE</promise>'"#,
    )
}

/// Start `count` runs at once, each committing `file(i)` with `content(i)`; wait for all.
fn run_at_once(
    env: &TestEnv,
    agent: &std::path::Path,
    count: usize,
    file: impl Fn(usize) -> String,
    content: impl Fn(usize) -> String,
    barrier: Option<&std::path::Path>,
) -> Vec<Run> {
    let children: Vec<_> = (0..count)
        .map(|i| {
            let name = format!("c{i}");
            let mut command = env.eden_command(&[
                "run",
                "--quiet",
                "--json",
                "--agent",
                "cli",
                "--binary",
                agent.to_str().unwrap(),
                "--prompt",
                "x",
                "--name",
                &name,
                "--max-iterations",
                "1",
            ]);
            command.env("FILE", file(i)).env("CONTENT", content(i)).stdout(Stdio::piped()).stderr(Stdio::piped());
            if let Some(barrier) = barrier {
                command.env("BARRIER", barrier).env("COUNT", count.to_string());
            }
            command.spawn().unwrap()
        })
        .collect();
    children.into_iter().map(|child| Run::from(child.wait_with_output().unwrap())).collect()
}

/// The repository is whole and the checkout is exactly what the merges made.
fn assert_repository_sound(env: &TestEnv) {
    let fsck = env.git(&["fsck", "--no-progress", "--no-dangling"]);
    assert!(fsck.is_empty(), "git fsck: {fsck}");
    assert_eq!(env.git(&["status", "--porcelain", "--untracked-files=all"]), "", "the checkout is clean");
    assert!(!env.repo.join(".git/MERGE_HEAD").exists(), "no merge left in progress");
    assert_eq!(env.worktree_count(), 1, "no worktree left behind");
}

#[test]
fn concurrent_runs_all_merge_and_lose_nothing() {
    let env = TestEnv::new();
    let agent = committing_agent(&env);
    for (round, count) in [8usize, 16].iter().flat_map(|&count| (0..10).map(move |round| (round, count))) {
        let runs = run_at_once(&env, &agent, count, |i| format!("r{count}-{round}-{i}.txt"), |i| format!("{i}"), None);
        for run in &runs {
            run.assert_code(0);
            let record = run.record();
            assert!(record["merged_into"] == "main", "{record}");
            for commit in record["commits"].as_array().unwrap() {
                let sha = commit["sha"].as_str().unwrap();
                env.git(&["merge-base", "--is-ancestor", sha, "main"]);
            }
            let merge = record["merge_commit"].as_str().unwrap();
            env.git(&["merge-base", "--is-ancestor", merge, "main"]);
        }
        for i in 0..count {
            let file = format!("r{count}-{round}-{i}.txt");
            assert_eq!(std::fs::read_to_string(env.repo.join(&file)).unwrap(), format!("{i}\n"), "{file}");
        }
        assert_repository_sound(&env);
        assert_eq!(env.branches(), ["main"], "merged branches are deleted");
    }
}

#[test]
fn concurrent_runs_whose_merges_conflict_keep_their_branches() {
    let env = TestEnv::new();
    let agent = committing_agent(&env);
    for round in 0..3 {
        // Eight runs write the same file differently: one merge wins, the rest conflict.
        let barrier = env.root().join(format!("barrier-{round}"));
        std::fs::create_dir(&barrier).unwrap();
        let content = |i| format!("round {round} run {i}");
        let runs = run_at_once(&env, &agent, 8, |_| "shared.txt".to_owned(), content, Some(&barrier));
        let merged: Vec<&Run> = runs.iter().filter(|run| run.code == 0).collect();
        assert_eq!(
            merged.len(),
            1,
            "exactly one merge lands first: {:?}",
            runs.iter().map(|r| r.code).collect::<Vec<_>>()
        );
        let winner = merged[0].record();
        assert_eq!(env.git(&["rev-parse", "main"]), winner["merge_commit"].as_str().unwrap());
        let content = std::fs::read_to_string(env.repo.join("shared.txt")).unwrap();
        for run in runs.iter().filter(|run| run.code != 0) {
            run.assert_code(7);
            let record = run.record();
            let branch = record["preserved_branch"].as_str().unwrap();
            assert!(record["error"]["message"].as_str().unwrap().contains("conflicts"), "{record}");
            // The losing branch still has its commit; main and the checkout are the winner's.
            let mine = env.git(&["show", &format!("{branch}:shared.txt")]);
            assert_ne!(format!("{mine}\n"), content);
            env.git(&["branch", "-D", branch]);
        }
        assert_repository_sound(&env);
        assert_eq!(env.branches(), ["main"]);
    }
}
