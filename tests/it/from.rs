//! `eden run --from RUN[@N]`: a run that starts where another left off.

use crate::support::TestEnv;

/// Each iteration commits `step-N.txt`; with `complete`, it prints the signal after.
fn manifest(iterations: u32, complete: bool) -> String {
    let signal = if complete { " && echo '<promise>COMPLETE</promise>'" } else { "" };
    format!(
        "name = \"steps\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\n\
         args = [\"-c\", \"cat >/dev/null; n=$(ls step-*.txt 2>/dev/null | wc -l); n=$((n+1)); echo $n-$$ > step-$n.txt; git add . && git -c user.name=a -c user.email=a@b commit -qm step-$n{signal}\"]\n\
         [loop]\nmax_iterations = {iterations}\n"
    )
}

/// A kept run (two commits, no completion signal): its id.
fn kept_run(env: &TestEnv) -> String {
    let run = env.run_manifest(&manifest(2, false), &[]);
    run.assert_code(1);
    let record = run.json();
    assert!(record["preserved_branch"].is_string(), "{}", run.stderr);
    record["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_kept_runs_commits_land_with_the_new_work() {
    let env = TestEnv::new();
    let first = kept_run(&env);
    let run = env.run_manifest(&manifest(1, true), &["--from", &first]);
    run.assert_code(0);
    let record = run.json();
    assert_eq!(record["from"]["run"], first.as_str());
    assert!(record["from"].get("iteration").is_none());
    // The new run's own commit is its commit; the kept run's two land with it.
    let own: Vec<&str> = record["commits"].as_array().unwrap().iter().map(|c| c["subject"].as_str().unwrap()).collect();
    assert_eq!(own, ["step-3"], "{}", run.stderr);
    assert_eq!(env.log_subjects("main")[..3], ["step-3", "step-2", "step-1"]);
}

/// A run `--from` a kept one that adds nothing of its own still lands what it carries.
#[test]
fn a_run_that_adds_nothing_still_lands_what_it_carries() {
    let env = TestEnv::new();
    let first = kept_run(&env);
    let done = "name = \"review\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\n\
        args = [\"-c\", \"cat >/dev/null; echo '<promise>COMPLETE</promise>'\"]\n[loop]\nmax_iterations = 1\n";
    let run = env.run_manifest(done, &["--from", &first]);
    run.assert_code(0);
    let record = run.json();
    assert_eq!(record["merged_into"], "main", "{}", run.stderr);
    assert_eq!(record["commits"].as_array().unwrap().len(), 0, "none of its own");
    assert_eq!(env.log_subjects("main")[..2], ["step-2", "step-1"]);
}

#[test]
fn from_an_iteration_starts_after_it() {
    let env = TestEnv::new();
    let first = kept_run(&env);
    let run = env.run_manifest(&manifest(1, true), &["--from", &format!("{first}@1")]);
    run.assert_code(0);
    let record = run.json();
    assert_eq!(record["from"]["iteration"], 1);
    // Iteration 1's commit is there, iteration 2's is not: this run made its own step-2.
    let subjects = env.log_subjects("main");
    assert_eq!(subjects[..2], ["step-2", "step-1"], "{}", run.stderr);
    let first_record = std::fs::read_to_string(env.repo.join(format!(".eden/runs/{first}.json"))).unwrap();
    let first_record: serde_json::Value = serde_json::from_str(&first_record).unwrap();
    let first_step2 = first_record["iterations"][1]["commits"][0].as_str().unwrap().to_owned();
    assert!(
        !env.git(&["log", "--format=%H", "main"]).contains(&first_step2),
        "the kept run's iteration 2 did not land"
    );
    // `last` names the newest run, as everywhere.
    let dry = env.run_manifest(&manifest(1, true), &["--from", "last@1", "--dry-run"]);
    dry.assert_code(0);
    let plan: serde_json::Value = serde_json::from_str(&dry.stdout).unwrap();
    assert_eq!(plan["workspace"]["from"]["iteration"], 1, "{}", dry.stdout);
}

#[test]
fn what_cannot_be_started_from_is_refused() {
    let env = TestEnv::new();
    let first = kept_run(&env);
    let branches = env.branches();
    for (args, said) in [
        (vec!["--from", "nope"], "no run or session `nope`"),
        (vec!["--from", &format!("{first}@0")], "is not an iteration number"),
        (vec!["--from", &format!("{first}@7")], "has 2 iteration(s), so there is no iteration 7"),
        (vec!["--from", &first, "--strategy", "head"], "strategy `head` works in your checkout"),
        (vec!["--from", &first, "--attempts", "2"], "does not go with several runs"),
    ] {
        let run = env.run_manifest(&manifest(1, true), &args);
        run.assert_code(2);
        assert!(run.stderr.contains(said) && run.stderr.contains("hint:"), "{said}: {}", run.stderr);
        assert_eq!(env.branches(), branches, "nothing made");
    }
}
