//! `eden clean` on what real runs left behind when eden was killed: what is safe goes, work
//! stays (unless `--force`), a live run is never touched, and an interrupted clean finishes when
//! run again.

use crate::support::{cli_manifest, Marker, Run, TestEnv};
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// Start a run of `manifest`, wait until `ready` exists, SIGKILL eden: what a crash leaves.
fn killed_run(env: &TestEnv, manifest: &str, ready: &Path, extra_env: &[(&str, &Path)]) -> serde_json::Value {
    let record = killed_run_with(env, manifest, &|| ready.exists(), extra_env, |_| {});
    std::fs::remove_file(ready).unwrap();
    record
}

/// `killed_run`, doing `before_kill` with the run's record (as it is on disk) first.
fn killed_run_with(
    env: &TestEnv,
    manifest: &str,
    ready: &dyn Fn() -> bool,
    extra_env: &[(&str, &Path)],
    before_kill: impl Fn(&serde_json::Value),
) -> serde_json::Value {
    let records = || -> Vec<PathBuf> {
        std::fs::read_dir(env.repo.join(".eden/runs"))
            .map_or_else(|_| Vec::new(), |dir| dir.map(|e| e.unwrap().path()).collect())
    };
    let before = records();
    let path = env.root().join(format!("plan-{}.toml", Marker::new().digits()));
    std::fs::write(&path, manifest).unwrap();
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--quiet"]);
    for (key, value) in extra_env {
        command.env(key, value);
    }
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "the agent never got ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    let new = records().into_iter().find(|path| !before.contains(path)).expect("the run wrote its record");
    let read = || serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&new).unwrap()).unwrap();
    before_kill(&read());
    child.kill().unwrap();
    child.wait().unwrap();
    read()
}

fn clean(env: &TestEnv, args: &[&str]) -> Run {
    let mut all = vec!["clean"];
    all.extend_from_slice(args);
    env.eden(&all)
}

/// `clean --json`'s items as (outcome, kind, name with run ids replaced).
fn items(env: &TestEnv, run: &Run, ids: &[(&str, &str)]) -> Vec<String> {
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let mut line = format!("{} {} {}: {}", item["kind"], item["name"], item["outcome"], item["reason"]);
            for (id, label) in ids {
                line = line.replace(id, label);
            }
            if let Some(at) = line.find("(pid ") {
                let digits = line[at + 5..].chars().take_while(char::is_ascii_digit).count();
                line.replace_range(at + 5..at + 5 + digits, "[PID]");
            }
            env.redact(&line).replace('"', "")
        })
        .collect()
}

#[test]
fn leftovers_of_killed_runs_are_found_and_work_is_kept_unless_forced() {
    let env = TestEnv::new();
    let ready = env.root().join("ready");
    // Run A commits, then eden dies: a clean worktree, and a branch with a commit only it has.
    let committer = env.script(
        "commit.sh",
        &format!(
            "cat >/dev/null\necho a > a.txt && git add a.txt && git commit -qm 'work of A'\ntouch {}\nsleep 300",
            ready.display()
        ),
    );
    let a = killed_run(&env, &cli_manifest(&committer, "name = \"a\"").replace("name = \"t\"\n", ""), &ready, &[]);
    // Run B leaves a file uncommitted: a dirty worktree.
    let scribbler = env.script(
        "scribble.sh",
        &format!("cat >/dev/null\necho draft > draft.txt\ntouch {}\nsleep 300", ready.display()),
    );
    let b = killed_run(&env, &cli_manifest(&scribbler, "name = \"b\"").replace("name = \"t\"\n", ""), &ready, &[]);
    // A branch whose commits are all on main, and a worktree whose folder was deleted by hand.
    env.git(&["branch", "eden/merged"]);
    env.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "eden/vanished",
        env.repo.join(".eden/worktrees/vanished").to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(env.repo.join(".eden/worktrees/vanished")).unwrap();

    let (a_id, b_id) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    assert_eq!(
        (a["status"].as_str(), b["status"].as_str()),
        (Some("running"), Some("running")),
        "records of killed runs"
    );
    let ids = [(a_id, "[A]"), (b_id, "[B]")];
    let before = (env.branches(), env.worktree_count(), env.git(&["rev-parse", "main"]));

    // A dry run lists everything and touches nothing.
    let dry = clean(&env, &["--dry-run", "--json"]);
    dry.assert_code(1);
    let mut listed = items(&env, &dry, &ids);
    listed.sort();
    insta::assert_snapshot!(listed.join("\n"), @r"
    branch eden/a-[A] kept: 1 commit(s) on no other branch; `--force` to delete
    branch eden/b-[B] kept: checked out in `.eden/worktrees/eden-b-[B]`
    branch eden/merged would_remove: every commit of it is on another branch
    branch eden/vanished would_remove: every commit of it is on another branch
    lock .eden/locks/eden-a-[A].lock would_remove: nobody holds it
    lock .eden/locks/eden-b-[B].lock would_remove: nobody holds it
    record .eden/runs/[A].json would_mark: run [A] was abandoned: its eden (pid [PID]) is gone
    record .eden/runs/[B].json would_mark: run [B] was abandoned: its eden (pid [PID]) is gone
    worktree .eden/worktrees/eden-a-[A] would_remove: clean, and its run is over
    worktree .eden/worktrees/eden-b-[B] kept: 1 uncommitted change(s); `--force` to delete
    worktree .eden/worktrees/vanished would_remove: its folder is gone
    ");
    assert_eq!((env.branches(), env.worktree_count(), env.git(&["rev-parse", "main"])), before);

    // Without --force: the safe part goes; work stays, and the exit code says so.
    let run = clean(&env, &[]);
    run.assert_code(1);
    let table = env.redact(&run.stdout).replace(a_id, "[A]").replace(b_id, "[B]");
    let table: Vec<&str> = table.lines().collect();
    assert!(table[0].starts_with("ACTION   WHAT      NAME"), "{}", run.stdout);
    assert!(table.iter().any(|l| l.starts_with("removed  worktree  .eden/worktrees/eden-a-[A]")), "{table:?}");
    assert!(run.stderr.contains("removed 6 · marked abandoned 2 · kept 3 (2 only with `--force`)"), "{}", run.stderr);
    assert_eq!(env.branches(), [&format!("eden/a-{a_id}"), &format!("eden/b-{b_id}"), "main"]);
    assert_eq!(env.log_subjects(&format!("eden/a-{a_id}"))[0], "work of A", "A's commit is kept");
    let draft = env.repo.join(format!(".eden/worktrees/eden-b-{b_id}/draft.txt"));
    assert_eq!(std::fs::read_to_string(&draft).unwrap(), "draft\n", "B's uncommitted work is kept");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.repo.join(format!(".eden/runs/{a_id}.json"))).unwrap())
            .unwrap();
    assert_eq!(record["status"], "abandoned");

    // Again: nothing new to do, the same things kept.
    clean(&env, &[]).assert_code(1);
    // --force removes the work too.
    let run = clean(&env, &["--force"]);
    run.assert_code(0);
    assert!(run.stderr.contains("removed 3"), "{}", run.stderr);
    env.assert_pristine();
    let fsck = env.git(&["fsck", "--no-progress", "--no-dangling"]);
    assert!(fsck.is_empty(), "{fsck}");
    // Nothing left at all; history is kept unless asked.
    let run = clean(&env, &[]);
    run.assert_code(0);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("nothing eden left behind"), "{}", run.stderr);
    assert!(run.stderr.contains("kept 4 log(s), run record(s)"), "two records and two logs: {}", run.stderr);
    // A's record is made two days old: `--older-than 1d` removes it, not B's.
    let old = env.repo.join(format!(".eden/runs/{a_id}.json"));
    let touched = std::process::Command::new("touch").args(["-d", "2 days ago"]).arg(&old).status().unwrap();
    assert!(touched.success());
    let run = clean(&env, &["--older-than", "1d"]);
    run.assert_code(0);
    assert!(run.stdout.contains(&format!("removed  record  .eden/runs/{a_id}.json  older than 1d")), "{}", run.stdout);
    assert!(!old.exists());
    assert!(env.repo.join(format!(".eden/runs/{b_id}.json")).exists());
    clean(&env, &["--older-than", "soon"]).assert_code(2);
}

#[test]
fn a_live_run_is_never_touched_even_with_force() {
    let env = TestEnv::new();
    let ready = env.root().join("ready");
    let agent =
        env.script("agent.sh", &format!("cat >/dev/null\necho wip > wip.txt\ntouch {}\nsleep 300", ready.display()));
    let path = env.write_manifest(&cli_manifest(&agent, ""));
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    let child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    crate::support::wait_for(&ready);
    let run = clean(&env, &["--force", "--json"]);
    run.assert_code(0);
    let listed = items(&env, &run, &[]);
    assert!(listed.iter().all(|line| line.contains(" kept: ")), "{listed:#?}");
    assert!(
        listed.iter().any(|line| line.contains("worktree") && line.ends_with("its run is still going")),
        "{listed:#?}"
    );
    assert!(
        listed.iter().any(|line| line.contains("branch") && line.ends_with("its run is still going")),
        "{listed:#?}"
    );
    assert!(listed.iter().any(|line| line.contains("lock") && line.contains("held by a running eden")), "{listed:#?}");
    // The run goes on undisturbed, and ends as usual.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let run = Run::from(child.wait_with_output().unwrap());
    run.assert_code(130);
    let worktree = run.record()["preserved_worktree"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::read_to_string(Path::new(&worktree).join("wip.txt")).unwrap(), "wip\n");
}

#[test]
fn an_interrupted_clean_is_consistent_and_finishes_when_run_again() {
    let env = TestEnv::new();
    // Many leftovers, so the interruption lands in the middle.
    for n in 0..60 {
        let path = env.repo.join(format!(".eden/worktrees/left-{n}"));
        env.git(&["worktree", "add", "-q", "-b", &format!("eden/left-{n}"), path.to_str().unwrap()]);
    }
    let child = env.eden_command(&["clean"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Interrupt once the first worktree is gone.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while env.worktree_count() == 61 {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(2));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let run = Run::from(child.wait_with_output().unwrap());
    run.assert_code(130);
    insta::assert_snapshot!(run.error_text(), @r"
    error: interrupted by SIGINT before the end
    hint: what was done is complete; run `eden clean` again to finish
    ");
    let left = env.worktree_count() - 1;
    assert!(left > 0 && left < 60, "interrupted in the middle: {left} worktrees left");
    assert!(run.stdout.contains("skipped"), "{}", run.stdout);
    // Every worktree still listed is whole (its folder there); every removed one fully gone.
    for line in env.git(&["worktree", "list", "--porcelain"]).lines() {
        if let Some(path) = line.strip_prefix("worktree ") {
            assert!(Path::new(path).join(".git").exists(), "{path} is whole");
        }
    }
    let run = clean(&env, &[]);
    run.assert_code(0);
    env.assert_pristine();
}

/// What a killed run's sandbox held (a commit and an uncommitted file) is saved under
/// `.eden/patches/` as a bundle and a patch: nothing is lost, and no git ran on the host in
/// what the agent wrote. The bundle fetches with object checks on.
fn assert_salvaged(env: &TestEnv, id: &str, subject: &str, uncommitted: &str) {
    let patches = env.repo.join(".eden/patches");
    let patch = std::fs::read_to_string(patches.join(format!("{id}.salvaged.patch"))).expect("the patch is saved");
    assert!(patch.contains(&format!("b/{uncommitted}")), "{patch}");
    let bundle = patches.join(format!("{id}.salvaged.bundle"));
    let heads = env.git(&["bundle", "list-heads", bundle.to_str().unwrap()]);
    let branch = heads.split_whitespace().nth(1).expect("the bundle names the branch").to_owned();
    let refspec = format!("{branch}:refs/salvaged");
    env.git(&["-c", "transfer.fsckObjects=true", "fetch", "-q", bundle.to_str().unwrap(), &refspec]);
    assert_eq!(env.git(&["log", "-1", "--format=%s", "refs/salvaged"]), subject);
}

#[test]
fn an_isolated_copy_of_a_killed_run_is_salvaged_then_removed() {
    if !crate::isolated::bwrap() {
        return;
    }
    let env = TestEnv::new();
    let tmp = env.tmp();
    // The agent commits in its copy (and can write nowhere else); eden dies before the commit
    // is brought back.
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\necho x > x.txt && git add x.txt && git commit -qm 'in the copy' && touch ready\nsleep 300",
    );
    let manifest = cli_manifest(&agent, "[sandbox]\nkind = \"isolated\"");
    let committed = || std::fs::read_dir(&tmp).unwrap().flatten().any(|entry| entry.path().join("ready").exists());
    let record = killed_run_with(&env, &manifest, &committed, &[], |_| {});
    let id = record["id"].as_str().unwrap();
    let copy = tmp.join(format!("eden-isolated-{id}"));
    assert!(copy.join("x.txt").exists() && tmp.join(format!("eden-isolated-{id}-tmp")).exists());

    let run = clean(&env, &["--json"]);
    run.assert_code(0);
    let listed: Vec<String> =
        items(&env, &run, &[(id, "[ID]")]).into_iter().filter(|line| line.starts_with("isolated")).collect();
    let tmp_shown = env.redact(&tmp.display().to_string());
    assert_eq!(
        listed,
        [
            format!("isolated_copy {tmp_shown}/eden-isolated-[ID] removed: its run is over (what it holds is saved under `.eden/patches` first)"),
            format!("isolated_copy {tmp_shown}/eden-isolated-[ID]-tmp removed: its run is over"),
        ]
    );
    assert!(!copy.exists() && !tmp.join(format!("eden-isolated-{id}.json")).exists());
    assert_salvaged(&env, id, "in the copy", "ready");
}

/// A run in `engine` whose eden and guard both die (as in a power cut) after its agent made a
/// commit and left `half.txt` uncommitted: its container stays behind. Its record.
fn killed_container_run(env: &TestEnv, engine: &str) -> serde_json::Value {
    let shared = env.root().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let script = "cat >/dev/null; echo c > c.txt && git add c.txt && git -c user.name=box -c user.email=box@example.com commit -qm boxed && echo half > half.txt && touch /shared/ready; sleep 300";
    let manifest = format!(
        "name = \"box\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"{script}\"]\n\
         [sandbox]\nkind = \"{engine}\"\nimage = \"{}\"\nmounts = [{{ host = \"{}\", sandbox = \"/shared\" }}]\n",
        crate::containers::IMAGE,
        shared.display()
    );
    let ready = shared.join("ready");
    let record = killed_run_with(env, &manifest, &|| ready.exists(), &[], |record| {
        let container = record["container"]["name"].as_str().unwrap().to_owned();
        let killed =
            std::process::Command::new("pkill").args(["-9", "-f", &format!("__eden-guard .* {container}$")]).status();
        assert!(killed.unwrap().success(), "the guard was running");
    });
    let container = record["container"]["name"].as_str().unwrap();
    let names = crate::containers::containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap());
    assert_eq!(names, [container], "left behind");
    record
}

fn containers_of_killed_runs_are_removed(engine: &str) {
    if !crate::containers::ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let record = killed_container_run(&env, engine);
    let container = record["container"]["name"].as_str().unwrap();
    let names = || crate::containers::containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap());
    let run = clean(&env, &["--json"]);
    let listed = items(&env, &run, &[]);
    let expected = format!(
        "container {container} ({engine}) removed: its run is over (what it holds is saved under `.eden/patches` first)"
    );
    assert!(listed.contains(&expected), "{listed:#?}");
    assert!(names().is_empty(), "removed");
    let volumes = std::process::Command::new(engine).args(["volume", "ls", "-q"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&volumes.stdout).contains(container), "its volume is gone too");
    assert_salvaged(&env, record["id"].as_str().unwrap(), "boxed", "half.txt");
}

#[test]
fn docker_containers_of_killed_runs_are_removed() {
    containers_of_killed_runs_are_removed("docker");
}

#[test]
fn podman_containers_of_killed_runs_are_removed() {
    containers_of_killed_runs_are_removed("podman");
}

#[test]
fn the_worktree_you_are_in_is_kept() {
    let env = TestEnv::new();
    let here = env.repo.join(".eden/worktrees/here");
    env.git(&["worktree", "add", "-q", "-b", "eden/here", here.to_str().unwrap()]);
    let mut command = env.eden_command(&["clean", "--force", "--json"]);
    let run = Run::from(command.current_dir(&here).env("PWD", &here).output().unwrap());
    run.assert_code(0);
    let listed = items(&env, &run, &[]);
    assert_eq!(
        listed,
        [
            "worktree .eden/worktrees/here kept: you are in it (the current directory)",
            "branch eden/here kept: checked out in `.eden/worktrees/here`"
        ]
    );
    assert!(here.exists());
}

/// A git process killed mid-update (an agent's `git commit` when eden is killed) leaves lock
/// files: the next run on that branch, and `eden clean`, remove them once the run is over.
#[test]
fn git_locks_left_by_a_killed_run_do_not_block_the_branch() {
    let env = TestEnv::new();
    let ready = env.root().join("ready");
    let agent = env.script(
        "agent.sh",
        &format!(
            "cat >/dev/null\necho a >> a.txt && git add a.txt && git commit -qm work\ntouch {}\nsleep 300",
            ready.display()
        ),
    );
    let named = "[branch]\nstrategy = \"named\"\nname = \"eden/locked-up\"";
    let record = killed_run(&env, &cli_manifest(&agent, named), &ready, &[]);
    let worktree = PathBuf::from(record["worktree"].as_str().unwrap());
    // What a git killed while committing leaves.
    let ref_lock = env.repo.join(".git/refs/heads/eden/locked-up.lock");
    std::fs::write(&ref_lock, "").unwrap();
    let git_dir = std::fs::read_to_string(worktree.join(".git")).unwrap();
    let index_lock = PathBuf::from(git_dir.trim().strip_prefix("gitdir: ").unwrap()).join("index.lock");
    std::fs::write(&index_lock, "").unwrap();

    // The next run on the branch reclaims the run's lock, and git's with it.
    let finisher = env.script(
        "finish.sh",
        "cat >/dev/null\necho b >> a.txt && git add a.txt && git commit -qm more\necho '<promise>COMPLETE</promise>'",
    );
    let run = env.run_manifest(&cli_manifest(&finisher, &format!("{named}\nreuse_worktree = true")), &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("left by a git process of that run"), "{}", run.stderr);
    assert_eq!(env.log_subjects("eden/locked-up")[..2], ["more", "work"]);

    // And clean finds them after another killed run.
    killed_run(&env, &cli_manifest(&agent, &format!("{named}\nreuse_worktree = true")), &ready, &[]);
    std::fs::write(&ref_lock, "").unwrap();
    let listed = items(&env, &clean(&env, &["--json", "--force"]), &[]);
    assert!(
        listed.iter().any(|line| line.starts_with("git_lock") && line.contains("locked-up.lock removed")),
        "{listed:#?}"
    );
    assert!(!ref_lock.exists());
    assert_eq!(env.branches(), ["main"], "with the lock gone, --force deletes the branch");
}

/// `eden discard` of a run that was killed with its guard: the container it left has what it
/// holds saved under `.eden/patches`, then goes with the worktree and branch; the record stays.
#[test]
fn discard_removes_a_killed_runs_container() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let record = killed_container_run(&env, "docker");
    let id = record["id"].as_str().unwrap();
    let container = record["container"]["name"].as_str().unwrap();
    let names = || crate::containers::containers_of("docker", &std::fs::canonicalize(&env.repo).unwrap());
    let run = env.eden(&["discard", id, "--force"]);
    run.assert_code(0);
    assert!(run.stderr.contains(&format!("container `{container}`")), "{}", run.stderr);
    assert!(names().is_empty(), "removed");
    assert!(!std::path::Path::new(record["worktree"].as_str().unwrap()).exists(), "the worktree went too");
    assert!(!env.branches().contains(&record["branch"].as_str().unwrap().to_owned()), "and the branch");
    assert_salvaged(&env, id, "boxed", "half.txt");
    assert!(env.repo.join(".eden/runs").join(format!("{id}.json")).exists(), "the record stays");
}

/// A finished run removed its container: the engine its record names (gone since, as remote
/// engines come and go) is not asked, so `eden clean` does not warn about it at every call; a
/// run that may have left one (abandoned) still has its engine asked.
#[test]
fn engines_of_finished_runs_are_not_asked() {
    let env = TestEnv::new();
    let agent = env.script("done.sh", "cat >/dev/null\necho '<promise>COMPLETE</promise>'\n");
    let run = env.run_manifest(&cli_manifest(&agent, ""), &[]);
    run.assert_code(0);
    let id = run.json()["id"].as_str().unwrap().to_owned();
    let path = env.repo.join(format!(".eden/runs/{id}.json"));
    let mut record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record["container"] = serde_json::json!({
        "engine": "docker", "host": "tcp://127.0.0.1:1", "name": "eden-gone", "id": "x", "image": "i"
    });
    std::fs::write(&path, serde_json::to_string_pretty(&record).unwrap()).unwrap();
    let quiet = clean(&env, &["--dry-run"]);
    assert!(!quiet.stderr.contains("127.0.0.1:1"), "{}", quiet.stderr);
    record["status"] = "abandoned".into();
    std::fs::write(&path, serde_json::to_string_pretty(&record).unwrap()).unwrap();
    let asked = clean(&env, &["--dry-run"]);
    assert!(
        asked.stderr.contains("127.0.0.1:1"),
        "the engine of a run that may have left a container: {}",
        asked.stderr
    );
}
