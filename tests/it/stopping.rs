//! eden answers a signal in every phase, and nothing an agent made can hold it for ever: a
//! FIFO the sandbox repository's config includes, a wait on the repository lock, an engine
//! whose client never answers, seeding a big sandbox. Each stops within a moment with 143, and
//! leaves nothing running.

use crate::support::{Run, TestEnv};
use nix::sys::signal::Signal;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// eden started on `manifest` (with `vars`); once `ready()` says so, SIGTERM; the run and how
/// long it took to end after the signal.
fn stopped_when(env: &TestEnv, manifest: &str, vars: &[(&str, &str)], ready: &dyn Fn() -> bool) -> (Run, Duration) {
    let path = env.write_manifest(manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(vars.iter().copied()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ready() {
        assert!(Instant::now() < deadline, "the phase to interrupt never came");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let output = child.wait_with_output().unwrap();
    (Run::from(output), sent.elapsed())
}

/// Both cores kept busy while it lives (two spinning shells, killed on drop).
struct Busy(Vec<std::process::Child>);

impl Busy {
    fn both_cores() -> Busy {
        let spin = || std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        Busy(vec![spin(), spin()])
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The newest run record's phase, if there is one yet.
fn phase(env: &TestEnv) -> Option<String> {
    let runs = std::fs::read_dir(env.repo.join(".eden/runs")).ok()?;
    let newest =
        runs.flatten().map(|entry| entry.path()).filter(|p| p.extension().is_some_and(|e| e == "json")).max()?;
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(newest).ok()?).ok()?;
    record["phase"].as_str().map(str::to_owned)
}

/// An agent in `isolated` plants a FIFO as an include of its repository's config, which any
/// git reading that config would block on: eden's own git after the iteration reads a config of
/// its own, so the run ends as usual, and `eden clean` does too.
#[test]
fn a_fifo_in_the_sandbox_config_does_not_hang_eden() {
    if !crate::isolated::bwrap() {
        return;
    }
    let env = TestEnv::new();
    let script = "cat >/dev/null; mkfifo /tmp/fifo && git config include.path /tmp/fifo && echo x > loose.txt; echo '<promise>COMPLETE</promise>'";
    let manifest = format!(
        "name = \"fifo\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"{script}\"]\n\
         [sandbox]\nkind = \"isolated\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"60s\"\n"
    );
    let started = Instant::now();
    let run = env.run_manifest(&manifest, &[]);
    assert!(started.elapsed() < Duration::from_secs(60), "eden hung: {}", run.stderr);
    run.assert_code(1);
    assert!(run.stderr.contains("the agent left 1 file(s) uncommitted"), "its work came back: {}", run.stderr);
    let started = Instant::now();
    env.eden(&["clean", "--force"]);
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// The same in a container, whose every command's wrapper notes the branch's tip: a FIFO the
/// agent includes in its git config stalls neither that note nor bringing the work back.
#[test]
fn a_fifo_in_a_container_s_git_config_does_not_hang_eden() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let script = "echo c > c.txt && git add c.txt && git -c user.name=a -c user.email=a@e commit -qm fifo && \
        mkfifo /tmp/fifo && git config include.path /tmp/fifo && echo x > loose.txt; echo '<promise>COMPLETE</promise>'";
    let manifest =
        crate::containers::manifest("docker", script, "").replace("[loop]", "[loop]\ncompletion_timeout = \"60s\"");
    let started = Instant::now();
    let run = env.run_manifest(&manifest, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "eden waited on the FIFO: {:?}\n{}",
        started.elapsed(),
        run.stderr
    );
    run.assert_code(1);
    assert_eq!(env.log_subjects("main")[0], "fifo", "{}", run.stderr);
    assert!(run.stderr.contains("the agent left 1 file(s) uncommitted"), "its work came back: {}", run.stderr);
}

/// SIGTERM while eden waits for the repository lock another eden holds: it stops at once.
#[test]
fn sigterm_stops_a_wait_for_the_repository_lock() {
    let env = TestEnv::new();
    let locks = env.repo.join(".eden/locks");
    std::fs::create_dir_all(&locks).unwrap();
    let file = std::fs::OpenOptions::new().create(true).append(true).open(locks.join("repository.lock")).unwrap();
    let _held = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).unwrap();
    let manifest = "name = \"l\"\nprompt = \"x\"\n[agent]\nkind = \"simulated\"\n";
    // The record is written before the worktree is made, under the lock: a moment after it,
    // eden is waiting.
    let seen = std::cell::Cell::new(None::<Instant>);
    let (run, took) = stopped_when(&env, manifest, &[], &|| {
        if phase(&env).is_some() && seen.get().is_none() {
            seen.set(Some(Instant::now()));
        }
        seen.get().is_some_and(|at| at.elapsed() > Duration::from_millis(700))
    });
    run.assert_code(143);
    assert!(took < Duration::from_secs(3), "eden took {took:?} to stop:\n{}", run.stderr);
    assert_eq!(run.record()["exit_reason"], "interrupted");
}

/// An engine whose client never answers (a remote engine gone quiet): SIGTERM ends eden at
/// once, and nothing of the client is left.
#[test]
fn sigterm_stops_a_hanging_engine_call() {
    let env = TestEnv::new();
    let bin = env.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = crate::support::Marker::new();
    std::fs::write(
        bin.join("docker"),
        format!("#!/bin/sh\ntouch {}/called\nexec {}\n", env.root().display(), marker.sleep()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("docker"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let manifest = format!(
        "name = \"e\"\nprompt = \"x\"\n[agent]\nkind = \"simulated\"\n[sandbox]\nkind = \"docker\"\nimage = \"{}\"\nnetwork = \"none\"\n",
        crate::containers::IMAGE
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let called = env.root().join("called");
    let (run, took) = stopped_when(&env, &manifest, &[("PATH", &path)], &|| called.exists());
    run.assert_code(143);
    assert!(took < Duration::from_secs(3), "eden took {took:?} to stop:\n{}", run.stderr);
    let left = marker.gone_within(Duration::from_secs(2));
    assert!(left.is_empty(), "the engine's client outlived eden: {left:?}");
}

/// SIGTERM while a docker sandbox of 20,000 files is being seeded: the seeding stops at once,
/// the container is removed, nothing is merged.
#[test]
fn sigterm_stops_seeding_a_big_sandbox() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    for dir in 0..40 {
        let folder = env.repo.join(format!("d{dir}"));
        std::fs::create_dir_all(&folder).unwrap();
        for file in 0..500 {
            std::fs::write(folder.join(format!("f{file}.txt")), format!("{dir} {file}\n")).unwrap();
        }
    }
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "20,000 files"]);
    let manifest = crate::containers::manifest("docker", "echo '<promise>COMPLETE</promise>'", "network = \"none\"");
    // Both cores busy, as on a CI runner running the suite: the bound must hold there too.
    let busy = Busy::both_cores();
    let (run, took) = stopped_when(&env, &manifest, &[], &|| phase(&env).as_deref() == Some("sandbox"));
    drop(busy);
    run.assert_code(143);
    // The seeding was cut short (no iteration began); what remains is removing the container
    // and the 20,000-file worktree (its files deleted after eden answered).
    assert_eq!(run.record()["iterations"].as_array().map(Vec::len), Some(0), "{}", run.stderr);
    assert!(took < Duration::from_secs(4), "eden took {took:?} to stop:\n{}", run.stderr);
    let worktree = run.record()["worktree"].as_str().unwrap().to_owned();
    assert!(!std::path::Path::new(&worktree).exists(), "the worktree is gone from its place: {}", run.stderr);
    assert!(!env.git(&["worktree", "list"]).contains(&worktree));
    let repo = std::fs::canonicalize(&env.repo).unwrap();
    assert!(crate::containers::containers_of("docker", &repo).is_empty(), "the container is removed");
    assert_eq!(env.branches(), ["main"]);
}
