//! Warm pools (`eden pool up|status|down`) on the real engines: members made ahead, claimed by
//! runs (never twice), set up for each run after the claim, removed with their run; runs that
//! find no matching member start cold and say why; a claimed member of a dead eden is salvaged
//! and removed, never reused; `pool down` leaves nothing.

use crate::containers::{containers_of, manifest, ready};
use crate::support::{Run, TestEnv};
use std::path::Path;

/// The agent commits a file naming the container it ran in (its hostname is the container's
/// id), and completes.
const COMMIT_HOST: &str = "hostname > host-$(date +%s%N).txt && git add . && git -c user.name=box -c user.email=box@example.com commit -qm pooled && echo '<promise>COMPLETE</promise>'";

fn pool(env: &TestEnv, args: &[&str]) -> Run {
    let mut all = vec!["pool"];
    all.extend_from_slice(args);
    env.eden(&all)
}

fn pool_up(env: &TestEnv, manifest_path: &Path, extra: &[&str]) -> Run {
    let path = manifest_path.to_str().unwrap();
    let mut args = vec!["up", path, "--json"];
    args.extend_from_slice(extra);
    let up = pool(env, &args);
    up.assert_code(0);
    up
}

/// The pool's members with their state, from `eden pool status --json`.
fn members(env: &TestEnv) -> Vec<(String, String)> {
    let status = pool(env, &["status", "--json"]);
    status.assert_code(0);
    let pools: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    let mut found = Vec::new();
    for pool in pools.as_array().unwrap() {
        for member in pool["members"].as_array().unwrap() {
            found.push((member["name"].as_str().unwrap().to_owned(), member["state"].as_str().unwrap().to_owned()));
        }
    }
    found
}

fn repo(env: &TestEnv) -> std::path::PathBuf {
    std::fs::canonicalize(&env.repo).unwrap()
}

/// Two idle members, three runs at once: two are claimed (each by one run), the third run
/// starts cold and says why; every run's work lands; the claimed members go with their runs.
fn three_runs_share_two_members(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let path = env.write_manifest(&manifest(engine, COMMIT_HOST, ""));
    pool_up(&env, &path, &["--size", "2", "--no-refill"]);
    let idle: Vec<String> =
        members(&env).into_iter().filter(|(_, state)| state == "idle").map(|(name, _)| name).collect();
    assert_eq!(idle.len(), 2, "{idle:?}");
    let children: Vec<_> = (0..3)
        .map(|_| {
            let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json", "--timings"]);
            command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
            command.spawn().unwrap()
        })
        .collect();
    let runs: Vec<Run> = children.into_iter().map(|child| Run::from(child.wait_with_output().unwrap())).collect();
    let mut claimed = Vec::new();
    let mut cold = 0;
    for run in &runs {
        run.assert_code(0);
        match run.stderr.split("claimed from the warm pool (member `").nth(1) {
            Some(rest) => claimed.push(rest.split('`').next().unwrap().to_owned()),
            None => {
                assert!(run.stderr.contains("starting cold: the warm pool has no idle member left"), "{}", run.stderr);
                cold += 1;
            }
        }
        assert!(run.stderr.contains("timings: worktree"), "{}", run.stderr);
        let timings = run.record()["timings"].as_array().unwrap().clone();
        let steps: Vec<&str> = timings.iter().map(|timing| timing["step"].as_str().unwrap()).collect();
        assert!(steps.contains(&"first byte") && steps.contains(&"seed"), "{steps:?}");
    }
    claimed.sort();
    let mut expected = idle.clone();
    expected.sort();
    assert_eq!(claimed, expected, "each member claimed once");
    assert_eq!(cold, 1);
    // Three commits landed; each names its own container.
    let hosts: std::collections::HashSet<String> = std::fs::read_dir(&env.repo)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("host-"))
        .map(|entry| std::fs::read_to_string(entry.path()).unwrap())
        .collect();
    assert_eq!(hosts.len(), 3, "{hosts:?}");
    assert!(containers_of(engine, &repo(&env)).is_empty(), "every container went with its run");
    assert!(members(&env).is_empty());
    pool(&env, &["down"]).assert_code(0);
    env.assert_pristine();
}

/// A run whose settings differ from the pool's (network, limits) never claims its members: it
/// starts cold and says why. `pool down` then leaves nothing on the engine.
fn different_settings_never_claim(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let path = env.write_manifest(&manifest(engine, COMMIT_HOST, "network = \"none\""));
    pool_up(&env, &path, &["--size", "1"]);
    for set in ["sandbox.network=bridge", "sandbox.pids_limit=300"] {
        let run = env.eden(&["run", path.to_str().unwrap(), "--json", "--set", set]);
        run.assert_code(0);
        assert!(!run.stderr.contains("claimed from the warm pool"), "{}", run.stderr);
        assert!(
            run.stderr.contains("no warm pool of this repository was made with this run's sandbox settings"),
            "{}",
            run.stderr
        );
    }
    assert_eq!(members(&env).iter().filter(|(_, state)| state == "idle").count(), 1);
    let down = pool(&env, &["down"]);
    down.assert_code(0);
    assert!(down.stderr.contains("removed eden-pool-"), "{}", down.stderr);
    assert!(containers_of(engine, &repo(&env)).is_empty(), "nothing left");
    assert!(members(&env).is_empty());
}

/// eden killed while its run holds a claimed member: the member is never claimed again (the
/// next run finds no idle one and starts cold), and what it held is salvaged before it goes.
fn a_member_claimed_by_a_dead_eden_is_never_reused(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let script = "echo work > work.txt && git add work.txt && git -c user.name=box -c user.email=box@example.com commit -qm 'before the kill' && echo started && sleep 60";
    let path = env.write_manifest(&manifest(engine, script, ""));
    pool_up(&env, &path, &["--size", "1", "--no-refill"]);
    let mut child =
        env.eden_command(&["run", path.to_str().unwrap()]).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tell, told) = std::sync::mpsc::channel();
    let lines = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut seen = String::new();
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("| started") {
                let _ = tell.send(());
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        seen
    });
    told.recv_timeout(std::time::Duration::from_secs(120)).expect("the agent started");
    let claimed = members(&env);
    assert!(claimed.iter().any(|(_, state)| state == "claimed"), "{claimed:?}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    let said = lines.join().unwrap();
    assert!(said.contains("claimed from the warm pool"), "{said}");
    // Its guard salvages and removes it; the next run finds no idle member.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !containers_of(engine, &repo(&env)).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Another manifest with the same sandbox settings: the pool is the sandbox's, not the agent's.
    let next = env.root().join("next.toml");
    std::fs::write(
        &next,
        crate::support::with_test_runtime(&manifest(engine, "echo '<promise>COMPLETE</promise>'", "")),
    )
    .unwrap();
    let next = env.eden(&["run", next.to_str().unwrap(), "--json"]);
    assert!(next.stderr.contains("starting cold: the warm pool has no idle member left"), "{}", next.stderr);
    let saved: Vec<String> = std::fs::read_dir(env.repo.join(".eden/patches"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(saved.iter().any(|name| name.ends_with(".salvaged.bundle")), "what it held was saved: {saved:?}");
    let clean = env.eden(&["clean"]);
    assert!(containers_of(engine, &repo(&env)).is_empty(), "{}", clean.stderr);
    assert!(!env.repo.join(".eden/pool/claims").read_dir().is_ok_and(|mut dir| dir.next().is_some()), "no claim left");
    pool(&env, &["down"]).assert_code(0);
}

/// An idle member ends after `--idle`; `eden clean` keeps an idle one and removes an ended one.
fn idle_members_end_and_clean_knows_them(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let path = env.write_manifest(&manifest(engine, COMMIT_HOST, ""));
    pool_up(&env, &path, &["--size", "1", "--idle", "5s"]);
    let clean = env.eden(&["clean", "--dry-run"]);
    let said = format!("{}{}", clean.stdout, clean.stderr);
    assert!(said.contains("an idle member of this repository's warm pool"), "{said}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !members(&env).iter().any(|(_, state)| state == "ended") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    assert!(members(&env).iter().any(|(_, state)| state == "ended"), "{:?}", members(&env));
    let doctor = env.eden(&["doctor"]);
    let said = format!("{}{}", doctor.stdout, doctor.stderr);
    assert!(said.contains("warm pool: `"), "{said}");
    let clean = env.eden(&["clean"]);
    let said = format!("{}{}", clean.stdout, clean.stderr);
    assert!(said.contains("a warm pool's member whose idle time is up"), "{said}");
    assert!(containers_of(engine, &repo(&env)).is_empty());
    pool(&env, &["down"]).assert_code(0);
}

/// A claimed member's door (`sandbox::door`) serves eden alone: the agent, inside, connects to
/// it and asks for a command, which never runs (a caller inside the sandbox is refused). Then
/// the agent commits and kills the door, which relays its own command: that command fails, and
/// eden brings its commit back through the engine's exec instead.
fn the_door_serves_eden_alone(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let script = r#"u=$(id -u):$(id -g); perl -MIO::Socket::UNIX -e 'my $s = IO::Socket::UNIX->new(Peer => "/opt/eden/door/door") or do { print "no door\n"; exit }; my $r = qq({"user":"$ARGV[0]","cwd":null,"env":[],"argv":["sh","-c","touch /tmp/door-ran"],"stdin":false}); print $s pack("N", length $r) . $r; shutdown($s, 1); local $/; my $got = <$s>; print "the door answered ", length($got // ""), " bytes\n"' "$u"; sleep 1; if [ -e /tmp/door-ran ]; then echo ran > door.txt; else echo refused > door.txt; fi; git add door.txt && git -c user.name=box -c user.email=box@example.com commit -qm door; echo killing the door; d=__eden; for p in /proc/[0-9]*; do c=$(tr '\0' ' ' < $p/cmdline 2>/dev/null); case "$c" in "/opt/eden/bin/eden $d-door "*) kill -9 ${p#/proc/};; esac; done; sleep 5"#;
    let path = env.write_manifest(&manifest(engine, script, ""));
    pool_up(&env, &path, &["--size", "1", "--no-refill"]);
    let run = env.eden(&["run", path.to_str().unwrap(), "--json"]);
    assert!(run.stderr.contains("claimed from the warm pool"), "{}", run.stderr);
    let branch = run.record()["branch"].as_str().unwrap().to_owned();
    if std::env::var("EDEN_TEST_RUNTIME").is_ok_and(|runtime| runtime.contains("runsc")) {
        // gVisor's sockets are its own: its members have no door, and claims go through the engine.
        assert!(run.stderr.contains("no door"), "{}", run.stderr);
        assert_eq!(env.git(&["show", &format!("{branch}:door.txt")]), "refused", "{}", run.stderr);
        pool(&env, &["down"]).assert_code(0);
        return;
    }
    run.assert_code(3);
    // The proof is `door.txt` below (the command asked for never ran). The agent's line saying
    // what the door answered is not asserted: once in about five podman runs it does not reach
    // the display (see the closing note of issue 47).
    assert!(run.stderr.contains("killing the door"), "{}", run.stderr);
    assert_eq!(env.git(&["show", &format!("{branch}:door.txt")]), "refused", "{}", run.stderr);
    assert!(containers_of(engine, &repo(&env)).is_empty());
    pool(&env, &["down"]).assert_code(0);
    let doors = env.repo.join(".eden/pool/doors");
    assert!(!doors.read_dir().is_ok_and(|mut dir| dir.next().is_some()), "no door's folder left");
}

/// A door refuses a caller in its own pid namespace, which is where an agent would call from:
/// here, a door on this machine and a call from this machine. The command never runs.
#[test]
fn a_door_refuses_a_caller_it_can_see() {
    let env = TestEnv::new();
    let socket = env.root().join("door");
    let mut door = std::process::Command::new(crate::support::EDEN)
        .args(["__eden-door", socket.to_str().unwrap()])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !socket.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let proof = env.root().join("ran");
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", door.id())).unwrap();
    let start = stat.rsplit_once(')').unwrap().1.split_whitespace().nth(19).unwrap().to_owned();
    let user = format!("{}:{}", nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
    let call = serde_json::json!({
        "socket": socket, "peer": [door.id(), start.parse::<u64>().unwrap()], "user": user, "cwd": null,
        "env": [], "stdin": false, "argv": ["touch", proof], "fallback": ["false"],
    });
    let called = std::process::Command::new(crate::support::EDEN)
        .args(["__eden-door-call", &call.to_string()])
        .output()
        .unwrap();
    let _ = door.kill();
    let _ = door.wait();
    assert_eq!(called.status.code(), Some(125), "{}", String::from_utf8_lossy(&called.stderr));
    assert!(String::from_utf8_lossy(&called.stderr).contains("the sandbox's door"));
    assert!(!proof.exists(), "the command ran");
}

macro_rules! pool_tests {
    ($engine:ident) => {
        mod $engine {
            #[test]
            fn three_runs_share_two_members() {
                super::three_runs_share_two_members(stringify!($engine));
            }
            #[test]
            fn different_settings_never_claim() {
                super::different_settings_never_claim(stringify!($engine));
            }
            #[test]
            fn a_member_claimed_by_a_dead_eden_is_never_reused() {
                super::a_member_claimed_by_a_dead_eden_is_never_reused(stringify!($engine));
            }
            #[test]
            fn idle_members_end_and_clean_knows_them() {
                super::idle_members_end_and_clean_knows_them(stringify!($engine));
            }
            #[test]
            fn the_door_serves_eden_alone() {
                super::the_door_serves_eden_alone(stringify!($engine));
            }
            #[test]
            fn a_member_and_a_worktree_made_ahead() {
                super::a_member_and_a_worktree_made_ahead(stringify!($engine));
            }
        }
    };
}

pool_tests!(docker);
pool_tests!(podman);

/// A pool on a remote engine: members made there, claimed by a run there, its work back here;
/// `pool down` leaves nothing on it.
#[test]
fn a_pool_on_a_remote_engine() {
    let Some(engines) = crate::remote_engines::engines() else { return };
    let host = &engines.hosts[0];
    let env = TestEnv::new();
    let extra = format!("network = \"bridge\"\nhost = \"{}\"", host.docker);
    let path = env.write_manifest(&manifest("docker", COMMIT_HOST, &extra));
    let with_tls = |args: &[&str]| {
        let mut command = env.eden_command(args);
        command.envs(engines.tls_env());
        Run::from(command.output().unwrap())
    };
    with_tls(&["pool", "up", path.to_str().unwrap(), "--size", "1", "--no-refill"]).assert_code(0);
    assert_eq!(host.containers(engines, &env.repo).len(), 1, "the member is on the remote engine");
    let run = with_tls(&["run", path.to_str().unwrap(), "--json"]);
    run.assert_code(0);
    assert!(run.stderr.contains("claimed on "), "{}", run.stderr);
    assert_eq!(env.log_subjects("main")[0], "pooled");
    assert!(host.containers(engines, &env.repo).is_empty(), "the claimed member went with its run");
    with_tls(&["pool", "up", path.to_str().unwrap(), "--size", "1"]).assert_code(0);
    let down = with_tls(&["pool", "down"]);
    down.assert_code(0);
    assert!(host.containers(engines, &env.repo).is_empty(), "pool down leaves nothing: {}", down.stderr);
}

/// `pool up` also makes the run's worktree ahead, and each member holds the repository made
/// ahead at the base's tip: a run at that commit claims both (the copy renamed into place, only
/// the `.git` of the run's and what git does not track sent in, here a `copy_to_worktree` file),
/// and its work lands. Once the base has moved, neither is used: the run gets a new worktree and
/// a full seed, and sees the new commit.
fn a_member_and_a_worktree_made_ahead(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    std::fs::write(env.repo.join("local.txt"), "from the checkout\n").unwrap();
    let script = "test ! -e /tmp/.eden-seed && cat local.txt > seen.txt && git status --porcelain > status.txt && git add seen.txt status.txt && git -c user.name=box -c user.email=box@example.com commit -qm ahead && echo '<promise>COMPLETE</promise>'";
    let text = format!("copy_to_worktree = [\"local.txt\"]\n{}", manifest(engine, script, ""));
    let path = env.write_manifest(&text);
    let up = pool_up(&env, &path, &["--size", "1", "--no-refill"]);
    let made: serde_json::Value = serde_json::from_str(&up.stdout).unwrap();
    assert_eq!(made["worktrees"]["ready"], 1, "{}", up.stdout);
    let premade = env.repo.join(".eden/pool/worktrees");
    let count = || std::fs::read_dir(&premade).map(|dir| dir.count()).unwrap_or(0);
    assert_eq!(count(), 1);
    let run = env.eden(&["run", path.to_str().unwrap(), "--json"]);
    run.assert_code(0);
    assert!(run.stderr.contains("claimed from the warm pool"), "{}", run.stderr);
    assert_eq!(count(), 0, "the worktree made ahead was the run's: {}", run.stderr);
    assert_eq!(env.log_subjects("main")[0], "ahead");
    assert_eq!(std::fs::read_to_string(env.repo.join("seen.txt")).unwrap(), "from the checkout\n");
    let status = std::fs::read_to_string(env.repo.join("status.txt")).unwrap();
    assert!(status.lines().all(|line| line.starts_with("?? ")) && !status.contains("local.txt"), "{status}");

    pool_up(&env, &path, &["--size", "1", "--no-refill"]);
    assert_eq!(count(), 1);
    std::fs::write(env.repo.join("moved.txt"), "after the pool\n").unwrap();
    env.git(&["add", "moved.txt"]);
    env.git(&["commit", "-qm", "moved"]);
    let script = "cat moved.txt > seen-after.txt && git add seen-after.txt && git -c user.name=box -c user.email=box@example.com commit -qm after && echo '<promise>COMPLETE</promise>'";
    let next = env.root().join("next.toml");
    let text = format!("copy_to_worktree = [\"local.txt\"]\n{}", manifest(engine, script, ""));
    std::fs::write(&next, crate::support::with_test_runtime(&text)).unwrap();
    let run = env.eden(&["run", next.to_str().unwrap(), "--json"]);
    run.assert_code(0);
    assert!(run.stderr.contains("claimed from the warm pool"), "{}", run.stderr);
    assert_eq!(count(), 1, "the worktree made at the old commit was not used");
    assert_eq!(std::fs::read_to_string(env.repo.join("seen-after.txt")).unwrap(), "after the pool\n");
    let down = pool(&env, &["down"]);
    down.assert_code(0);
    assert!(down.stderr.contains("worktree(s) made ahead"), "{}", down.stderr);
    assert_eq!(count(), 0);
    assert!(!env.git(&["worktree", "list"]).contains(".eden/pool"), "{}", env.git(&["worktree", "list"]));
}
