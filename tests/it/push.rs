//! `[branch] push`: against a real bare repository served by `git daemon` (receive-pack on) on
//! 127.0.0.1. A merged run's branch (and with `push_base` its base) goes there; a kept one too;
//! a push the remote moved under is refused by the lease and everything stays local.

use crate::support::{cli_manifest, TestEnv};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// `git daemon` serving `root` (bare repositories), writable, on 127.0.0.1.
struct GitDaemon {
    child: Child,
    port: u16,
    root: PathBuf,
}

impl GitDaemon {
    fn start(env: &TestEnv) -> GitDaemon {
        let root = env.root().join("served");
        std::fs::create_dir_all(&root).unwrap();
        for _ in 0..20 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut command = Command::new("git");
            env.apply_env(&mut command);
            command
                .args(["daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", "--listen=127.0.0.1"])
                .arg(format!("--port={port}"))
                .arg(format!("--base-path={}", root.display()))
                .arg(&root)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // A group of its own: `git daemon` runs `git-daemon` as a child, which must go too.
            std::os::unix::process::CommandExt::process_group(&mut command, 0);
            let mut child = command.spawn().expect("git daemon");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while std::time::Instant::now() < deadline {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return GitDaemon { child, port, root };
                }
                if child.try_wait().unwrap().is_some() {
                    break; // the port was taken meanwhile: another one
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
        }
        panic!("git daemon did not start");
    }

    /// A new bare repository `name`, and its URL.
    fn bare(&self, env: &TestEnv, name: &str) -> String {
        env.git_in(self.root.as_path(), &["init", "-q", "--bare", "-b", "main", name]);
        format!("git://127.0.0.1:{}/{name}", self.port)
    }

    /// Where `branch` is in the bare repository `name` (`None`: not there).
    fn tip(&self, env: &TestEnv, name: &str, branch: &str) -> Option<String> {
        let out = env.git_in(
            &self.root.join(name),
            &["for-each-ref", "--format=%(objectname)", &format!("refs/heads/{branch}")],
        );
        Some(out.trim().to_owned()).filter(|tip| !tip.is_empty())
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// The test repository with `origin` at a fresh bare repository that has its `main`.
fn with_origin(env: &TestEnv, daemon: &GitDaemon) {
    let url = daemon.bare(env, "origin.git");
    env.git(&["remote", "add", "origin", &url]);
    env.git(&["push", "-q", "origin", "main"]);
}

fn committing_agent(env: &TestEnv, signal: bool) -> PathBuf {
    let done = if signal { "echo '<promise>COMPLETE</promise>'" } else { "true" };
    env.script(
        "agent.sh",
        &format!("cat >/dev/null\necho work > work.txt && git add work.txt && git commit -qm work\n{done}"),
    )
}

#[test]
fn a_merged_run_pushes_its_branch_and_with_push_base_its_base() {
    let env = TestEnv::new();
    let daemon = GitDaemon::start(&env);
    with_origin(&env, &daemon);
    let agent = committing_agent(&env, true);
    let run = env.run_manifest(&cli_manifest(&agent, "[branch]\npush = \"origin\"\npush_base = true\n"), &[]);
    run.assert_code(0);
    let record = run.record();
    let branch = record["branch"].as_str().unwrap();
    let push = &record["push"];
    assert_eq!((push["pushed"].as_bool(), push["base_pushed"].as_bool()), (Some(true), Some(true)), "{push:#}");
    assert_eq!(daemon.tip(&env, "origin.git", branch).as_deref(), push["commit"].as_str());
    assert_eq!(daemon.tip(&env, "origin.git", "main"), Some(env.git(&["rev-parse", "main"]).trim().to_owned()));
    assert!(run.stderr.contains(&format!("pushed `{branch}`")), "{}", run.stderr);
}

#[test]
fn a_kept_run_is_pushed_and_the_base_is_not_unless_asked() {
    let env = TestEnv::new();
    let daemon = GitDaemon::start(&env);
    with_origin(&env, &daemon);
    let before = daemon.tip(&env, "origin.git", "main");
    let agent = committing_agent(&env, false);
    let run = env.run_manifest(&cli_manifest(&agent, "[loop]\nmax_iterations = 1\n[branch]\npush = \"origin\"\n"), &[]);
    run.assert_code(1);
    let record = run.record();
    let kept = record["preserved_branch"].as_str().unwrap();
    assert_eq!(daemon.tip(&env, "origin.git", kept), Some(env.git(&["rev-parse", kept]).trim().to_owned()));
    assert_eq!(daemon.tip(&env, "origin.git", "main"), before, "the base stays where it was");
    assert!(record["push"]["base"].is_null());
}

/// Someone pushes to the branch while the run works on it: the lease taken at the start
/// refuses eden's push, which would overwrite theirs; the run says so (exit 7) and keeps
/// everything here. A remote that refuses a push outright is a failure too.
#[test]
fn a_push_the_remote_moved_under_is_refused_and_everything_stays_local() {
    let env = TestEnv::new();
    let daemon = GitDaemon::start(&env);
    with_origin(&env, &daemon);
    env.git(&["push", "-q", "origin", "main:refs/heads/eden/feature"]);
    // Someone else's clone, which pushes a commit of theirs during the run.
    let theirs = env.root().join("theirs");
    env.git_in(
        env.root(),
        &["clone", "-q", "-b", "eden/feature", &format!("git://127.0.0.1:{}/origin.git", daemon.port), "theirs"],
    );
    let agent = env.script(
        "agent.sh",
        &format!(
            "cat >/dev/null\n(cd '{}' && echo theirs > theirs.txt && git add theirs.txt && git commit -qm theirs && git push -q origin eden/feature)\n\
             echo mine > mine.txt && git add mine.txt && git commit -qm mine\necho '<promise>COMPLETE</promise>'",
            theirs.display()
        ),
    );
    // `named` on a branch the remote has: a rebase of it would need a force, which the lease guards.
    let branch = "[branch]\nstrategy = \"named\"\nname = \"eden/feature\"\npush = \"origin\"\n";
    env.git(&["branch", "eden/feature", "main"]);
    let run = env.run_manifest(&cli_manifest(&agent, branch), &[]);
    run.assert_code(7);
    assert!(run.stderr.contains("the push of `eden/feature` to `origin` failed"), "{}", run.stderr);
    assert!(run.stderr.contains("git push origin eden/feature"), "the hint says how: {}", run.stderr);
    let record = run.record();
    assert_eq!(record["push"]["pushed"], false);
    assert_eq!(record["exit_reason"], "git_error");
    let remote = daemon.tip(&env, "origin.git", "eden/feature").unwrap();
    assert_eq!(env.git_in(&theirs, &["rev-parse", "HEAD"]).trim(), remote, "their push stands");
    assert_eq!(env.log_subjects("eden/feature")[0], "mine", "the work is kept here");

    // A remote that refuses every push.
    let hook = daemon.root.join("origin.git/hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho 'pushes are closed today' >&2\nexit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let agent = committing_agent(&env, true);
    let run = env.run_manifest(&cli_manifest(&agent, "[branch]\npush = \"origin\"\n"), &[]);
    run.assert_code(7);
    assert!(run.stderr.contains("pushes are closed today"), "{}", run.stderr);
    let record = run.record();
    let branch = record["branch"].as_str().unwrap();
    assert_eq!(record["merged_into"], "main", "the merge here stands");
    assert_eq!(record["preserved_branch"], branch, "the branch is kept to push later");
    assert!(env.branches().contains(&branch.to_owned()));
}

#[test]
fn push_settings_are_checked_before_anything() {
    let env = TestEnv::new();
    let agent = committing_agent(&env, true);
    for (branch, code, said) in [
        (
            "[branch]\npush = \"nowhere\"\n",
            2,
            "`branch.push` names `nowhere`, which is not a remote of this repository",
        ),
        ("[branch]\npush_base = true\n", 2, "`branch.push_base` needs `branch.push`"),
        (
            "[branch]\nstrategy = \"named\"\nname = \"x\"\npush = \"origin\"\npush_base = true\n",
            2,
            "`branch.push_base` does not apply to strategy `named`",
        ),
        ("[branch]\npush = \"--mirror\"\n", 2, "is not a remote's name"),
    ] {
        let run = env.run_manifest(&cli_manifest(&agent, branch), &[]);
        run.assert_code(code);
        assert!(run.stderr.contains(said), "{branch}: {}", run.stderr);
        env.assert_pristine();
    }
}
