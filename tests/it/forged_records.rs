//! A run record is data: one eden did not write (copied in from another repository, or edited)
//! never makes eden build a path of its choosing, remove or write outside `.eden/`, signal a
//! process that is not that run's eden, or delete, merge, start from or resume a branch eden did
//! not make for that run. Each test forges a record from a real one and proves the person's
//! files, processes and branches are as they were.

use crate::support::{cli_manifest, TestEnv};
use std::path::Path;

/// A real run that kept its branch (one commit, no completion signal), and its record.
fn real_run(env: &TestEnv) -> serde_json::Value {
    let agent = env
        .script("agent.sh", "cat >/dev/null\necho work > work.txt && git add work.txt && git commit -qm 'the run'\n");
    let run = env.run_manifest(&cli_manifest(&agent, "[loop]\nmax_iterations = 1\n"), &[]);
    run.assert_code(1);
    run.record()
}

/// The person's own branch `private`, with a commit on no other branch.
fn private_branch(env: &TestEnv) -> String {
    env.git(&["switch", "-q", "-c", "private"]);
    env.write("secret-plan.txt", "mine\n");
    env.git(&["add", "secret-plan.txt"]);
    env.git(&["commit", "-qm", "only here"]);
    env.git(&["switch", "-q", "main"]);
    env.git(&["rev-parse", "private"])
}

/// `record` with `change` applied, written as `.eden/runs/<file>.json`.
fn forge(env: &TestEnv, record: &serde_json::Value, file: &str, change: impl FnOnce(&mut serde_json::Value)) {
    let mut forged = record.clone();
    change(&mut forged);
    std::fs::write(env.repo.join(format!(".eden/runs/{file}.json")), serde_json::to_string_pretty(&forged).unwrap())
        .unwrap();
}

const FORGED: &str = "20990101-000000-abcdef";

#[test]
fn a_record_never_names_a_path_eden_removes_or_writes() {
    let env = TestEnv::new();
    let record = real_run(&env);
    let outside = env.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let victim = outside.join(format!("log-{FORGED}.jsonl"));
    std::fs::write(&victim, "the person's file\n").unwrap();
    // An id that walks out of `.eden/`, in a file of its own: skipped, with a warning.
    forge(&env, &record, "walker", |forged| forged["id"] = "../../outside".into());
    // A well-formed id whose record names paths outside the repository.
    forge(&env, &record, FORGED, |forged| {
        forged["id"] = FORGED.into();
        forged["record_path"] = victim.display().to_string().into();
        forged["log"] = victim.display().to_string().into();
        forged["started_at"] = "2099-01-01T00:00:00.000Z".into();
    });
    let list = env.eden(&["sessions", "list"]);
    assert!(list.stderr.contains("walker.json` is not a run record eden wrote"), "{}", list.stderr);
    let removed = env.eden(&["sessions", "rm", FORGED]);
    removed.assert_code(0);
    assert!(removed.stderr.contains("kept its log"), "{}", removed.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the person's file\n");
    assert!(!env.repo.join(format!(".eden/runs/{FORGED}.json")).exists(), "its own record file went");
    let walker = env.eden(&["sessions", "rm", "../../outside"]);
    walker.assert_code(2);
    assert!(outside.is_dir());
    // `eden merge` saves the record where it read it, never where it says.
    forge(&env, &record, FORGED, |forged| {
        forged["id"] = FORGED.into();
        forged["record_path"] = victim.display().to_string().into();
    });
    let _ = env.eden(&["discard", FORGED]);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the person's file\n");
}

#[test]
fn steer_signals_only_the_run_s_own_eden() {
    let env = TestEnv::new();
    let record = real_run(&env);
    // A process of the person's, named with its real start time.
    let mut bystander = std::process::Command::new("sleep").arg("300").spawn().unwrap();
    let pid = bystander.id();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let start: u64 = stat.rsplit(')').next().unwrap().split_whitespace().nth(19).unwrap().parse().unwrap();
    forge(&env, &record, FORGED, |forged| {
        forged["id"] = FORGED.into();
        forged["status"] = "running".into();
        forged["process"] = serde_json::json!({ "pid": pid, "start": start });
    });
    let steer = env.eden(&["steer", FORGED, "do something else"]);
    steer.assert_code(2);
    assert!(steer.error_text().contains("which is not that run's eden"), "{}", steer.stderr);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(bystander.try_wait().unwrap().is_none(), "the person's process was signalled");
    assert!(!env.repo.join(format!(".eden/steer/{FORGED}")).exists(), "nothing was written");
    bystander.kill().unwrap();
    let _ = bystander.wait();
}

#[test]
fn a_record_never_deletes_merges_or_starts_from_the_person_s_branch() {
    let env = TestEnv::new();
    let record = real_run(&env);
    let private = private_branch(&env);
    let main = env.git(&["rev-parse", "main"]);
    forge(&env, &record, FORGED, |forged| {
        forged["id"] = FORGED.into();
        forged["preserved_branch"] = "private".into();
        forged["branch"] = "private".into();
        forged["commits"] = serde_json::json!([{ "sha": private, "subject": "only here" }]);
        forged["started_at"] = "2099-01-01T00:00:00.000Z".into();
    });
    let discard = env.eden(&["discard", "last"]);
    assert!(discard.stderr.contains("kept the branch `private`: eden did not make it"), "{}", discard.stderr);
    assert_eq!(env.git(&["rev-parse", "private"]), private, "the person's branch is there");
    let merge = env.eden(&["merge", FORGED]);
    merge.assert_code(2);
    assert!(
        merge.error_text().contains("which eden did not make for that run: nothing was merged"),
        "{}",
        merge.stderr
    );
    let agent = env.script("noop.sh", "cat >/dev/null\necho '<promise>COMPLETE</promise>'\n");
    let path = env.write_manifest(&cli_manifest(&agent, ""));
    let from = env.eden(&["run", path.to_str().unwrap(), "--from", FORGED]);
    from.assert_code(2);
    assert!(from.error_text().contains("nothing was started"), "{}", from.stderr);
    assert_eq!(env.git(&["rev-parse", "main"]), main, "nothing of `private` reached main");
    assert!(!Path::new(&env.repo.join("secret-plan.txt")).exists());
    // The real run's own branch carries eden's mark, and is still merged by `eden merge`.
    let id = record["id"].as_str().unwrap();
    env.eden(&["merge", id]).assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "the run");
}

#[test]
fn a_record_never_picks_what_a_resume_runs_or_copies() {
    let env = TestEnv::new();
    let record = real_run(&env);
    let elsewhere = env.root().join("elsewhere.toml");
    std::fs::write(&elsewhere, "prompt = \"x\"\n[hooks.host]\non_worktree_ready = [\"touch /tmp/never\"]\n").unwrap();
    let sessions = env.repo.join(".eden/sessions").join(FORGED);
    std::fs::create_dir_all(&sessions).unwrap();
    let secret = env.root().join("secret.jsonl");
    std::fs::write(&secret, "{}\n").unwrap();
    forge(&env, &record, FORGED, |forged| {
        forged["id"] = FORGED.into();
        forged["manifest"] = elsewhere.display().to_string().into();
        forged["steps"][0]["agent"] = "claude-code".into();
        let iteration = &mut forged["iterations"][0];
        iteration["session_id"] = "1234-forged".into();
        iteration["transcript"] = serde_json::json!({ "path": secret, "source": "x", "bytes": 3 });
    });
    let resume = env.eden(&["sessions", "resume", "1234-forged"]);
    resume.assert_code(2);
    assert!(resume.error_text().contains("outside this repository: eden does not run a manifest on a record's word"));
    let transfer = env.eden(&["sessions", "transfer", "1234-forged", "--to", env.root().to_str().unwrap()]);
    transfer.assert_code(2);
    assert!(transfer.error_text().contains("names a transcript outside eden's copies"), "{}", transfer.stderr);
}
