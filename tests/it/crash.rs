//! Crash injection: eden SIGKILLed at random points of real runs — before the worktree exists,
//! during hooks, during the agent, during the merge — over and over in one repository. After
//! each kill: the repository is whole (`git fsck`), no commit the agent made is lost, the
//! checkout is clean with no merge in progress, and the next run is not blocked. At the end
//! `eden clean` keeps every unmerged commit, and `--force` leaves nothing behind. The test
//! prints where the kills landed (the phase the run record shows).

use crate::support::{Run, TestEnv};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const KILLS: usize = 60;

/// xorshift: enough randomness for kill times, and a seed to repeat a failure with.
struct Random(u64);

impl Random {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below.max(1)
    }
}

/// The phases a kill is aimed at: wait for the marker the phase leaves (if any), then up to
/// `spread` more.
const TARGETS: [(&str, Option<&str>, u64); 4] = [
    ("before the worktree", None, 40),
    ("hooks", Some("hook"), 150),
    ("agent", Some("agent"), 200),
    ("merge", Some("merge"), 60),
];

/// The repository lock, held by the test until dropped.
fn hold_repository_lock(env: &TestEnv) -> nix::fcntl::Flock<std::fs::File> {
    let locks = env.repo.join(".eden/locks");
    std::fs::create_dir_all(&locks).unwrap();
    let file = std::fs::OpenOptions::new().create(true).append(true).open(locks.join("repository.lock")).unwrap();
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).unwrap()
}

/// The phase of the run whose record is new since `before`, if it has one yet.
fn phase_of(env: &TestEnv, before: &[std::path::PathBuf]) -> Option<String> {
    let path = records(env).into_iter().find(|path| !before.contains(path))?;
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    record["phase"].as_str().map(str::to_owned)
}

#[test]
fn runs_killed_at_random_points_lose_nothing_and_block_nothing() {
    let env = TestEnv::new();
    let marks = env.root().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    // Each phase is made a little slower, so kills can land inside it: a host hook, the agent,
    // and the finish, held at the repository lock the test takes (eden's own git runs no
    // repository hook that could slow its merge).
    let agent = env.script(
        "agent.sh",
        &format!(
            "cat >/dev/null\ntouch {marks}/agent\necho \"$RUN_N\" > \"file-$RUN_N.txt\" && git add . && git commit -qm \"crash $RUN_N\"\n\
             touch {marks}/committed\nsleep 0.15\necho '<promise>COMPLETE</promise>'",
            marks = marks.display()
        ),
    );
    let manifest = format!(
        "name = \"crash\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n[hooks.host]\non_worktree_ready = [\"touch {}/hook; sleep 0.15\"]\n",
        agent.display(),
        marks.display()
    );
    let manifest = env.write_manifest(&manifest);

    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    eprintln!("crash injection seed {seed}");
    let mut random = Random(seed);
    let mut landed: BTreeMap<String, usize> = BTreeMap::new();
    let mut committed = Vec::new();
    for n in 0..KILLS {
        let (_, marker, spread) = TARGETS[n % TARGETS.len()];
        for entry in std::fs::read_dir(&marks).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        let records_before = records(&env);
        let mut command = env.eden_command(&["run", manifest.to_str().unwrap(), "--quiet"]);
        let mut child =
            command.env("RUN_N", n.to_string()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let started = Instant::now();
        let mut wait_until = |what: &str, reached: &dyn Fn() -> bool| {
            while !reached() && child.try_wait().unwrap().is_none() {
                assert!(started.elapsed() < Duration::from_secs(60), "run {n} never reached {what}");
                std::thread::sleep(Duration::from_millis(2));
            }
        };
        match marker {
            // The finish: the repository lock held until the run waits at it in `finishing`, then
            // let go, and the kill comes while the merge and the clean-up go on.
            Some("merge") => {
                wait_until("`committed`", &|| marks.join("committed").exists());
                let held = hold_repository_lock(&env);
                wait_until("the finish", &|| phase_of(&env, &records_before).as_deref() == Some("finishing"));
                drop(held);
            }
            Some(marker) => wait_until(marker, &|| marks.join(marker).exists()),
            None => {}
        }
        std::thread::sleep(Duration::from_millis(random.next(spread)));
        let _ = child.kill();
        child.wait().unwrap();

        // Where did it land? The record says which phase the run was in.
        let record = records(&env).into_iter().find(|path| !records_before.contains(path));
        let phase = match &record {
            None => "before the run record".to_owned(),
            Some(path) => {
                let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
                record["phase"].as_str().unwrap().to_owned()
            }
        };
        *landed.entry(phase).or_default() += 1;
        if marks.join("committed").exists() {
            committed.push(format!("crash {n}"));
        }
        // git commands eden started (a merge's post-merge hook) finish on their own.
        std::thread::sleep(Duration::from_millis(300));
        // A git lock left by the killed run blocks every later ref update: if one is there, it
        // must be a git still finishing (on a loaded machine, that can take a while). Which kill
        // left one, and which git processes were alive, is what a failure here must say, last,
        // where a truncated CI log still shows it; the report file keeps it too.
        for lock in ["packed-refs.lock", "index.lock", "HEAD.lock", "refs/heads/main.lock"] {
            let path = env.repo.join(".git").join(lock);
            let deadline = Instant::now() + Duration::from_secs(30);
            while path.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            if path.exists() {
                let failure = format!(
                    "live git processes:\n{}\nseed {seed}: `.git/{lock}` left by kill {n} (aimed at {:?}; kills so far landed in {:?})",
                    live_git_processes(),
                    TARGETS[n % TARGETS.len()].0,
                    landed
                );
                let _ = std::fs::write(Path::new(env!("CARGO_TARGET_TMPDIR")).join("crash-injection.txt"), &failure);
                panic!("{failure}");
            }
        }
        assert_sound(&env, &committed, &format!("after kill {n}"));

        // Every fourth kill, a run goes to the end: nothing left behind blocks it.
        if n % 4 == 3 {
            let mut command = env.eden_command(&["run", manifest.to_str().unwrap(), "--json", "--quiet"]);
            let run = Run::from(command.env("RUN_N", format!("{n}-full")).output().unwrap());
            run.assert_code(0);
            assert_eq!(run.record()["merged_into"], "main");
            committed.push(format!("crash {n}-full"));
            assert_sound(&env, &committed, &format!("after the full run after kill {n}"));
        }
    }
    // Shown with `--nocapture`, and kept where `.ci/run` prints it after the suite.
    let report = format!("crash injection (seed {seed}): where {KILLS} kills landed, by the run's phase: {landed:?}");
    eprintln!("{report}");
    let _ = std::fs::write(Path::new(env!("CARGO_TARGET_TMPDIR")).join("crash-injection.txt"), report + "\n");
    // Kills aimed before the worktree land before or just after the record is written, as the
    // machine's load has it; the phases that hold work must each have been hit.
    for phase in ["workspace", "iterating", "finishing"] {
        assert!(landed.get(phase).copied().unwrap_or(0) > 0, "no kill landed in `{phase}`: {landed:?}");
    }
    let early =
        landed.get("starting").copied().unwrap_or(0) + landed.get("before the run record").copied().unwrap_or(0);
    assert!(early > 0, "no kill landed before the workspace: {landed:?}");

    // clean keeps every unmerged commit; --force leaves nothing, and still nothing is corrupt.
    let run = env.eden(&["clean"]);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    assert_sound(&env, &committed, "after eden clean");
    env.eden(&["clean", "--force"]).assert_code(0);
    env.assert_pristine();
    let fsck = env.git(&["fsck", "--no-progress", "--no-dangling"]);
    assert!(fsck.is_empty(), "{fsck}");
}

fn records(env: &TestEnv) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(env.repo.join(".eden/runs"))
        .map(|dir| {
            dir.map(|entry| entry.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect()
        })
        .unwrap_or_default()
}

/// Whole repository, every agent commit on some branch, clean checkout, no merge in progress.
fn assert_sound(env: &TestEnv, committed: &[String], when: &str) {
    let fsck = env.git(&["fsck", "--no-progress", "--no-dangling"]);
    assert!(fsck.is_empty(), "{when}: git fsck: {fsck}");
    let reachable = env.git(&["log", "--branches", "--format=%s"]);
    let reachable: Vec<&str> = reachable.lines().collect();
    for subject in committed {
        assert!(reachable.contains(&subject.as_str()), "{when}: the agent's commit `{subject}` is lost");
    }
    assert_eq!(env.git(&["status", "--porcelain"]), "", "{when}: the checkout is clean");
    assert!(!env.repo.join(".git/MERGE_HEAD").exists(), "{when}: no merge in progress");
}

/// `ps` lines of the git processes still running (zombies left unreaped by a PID 1 that does
/// not reap, as in some CI containers, hold nothing and are left out).
fn live_git_processes() -> String {
    let ps = std::process::Command::new("ps").args(["-eo", "pid,ppid,pgid,stat,etime,args"]).output().unwrap();
    let ps = String::from_utf8_lossy(&ps.stdout);
    let live = ps.lines().filter(|line| {
        line.contains("git") && line.split_whitespace().nth(3).is_some_and(|stat| !stat.starts_with('Z'))
    });
    live.collect::<Vec<_>>().join("\n")
}
