//! A full disk: the repository lives on a small tmpfs the test mounts (root only; CI runs as
//! root), and the agent fills it after committing. eden reports the real cause (the disk is
//! full: exit 70 with a hint), never a git error, and leaves every file it writes readable: the
//! record is a complete JSON document (its last good version), every line of the log is JSON.

use crate::support::{Run, TestEnv};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let status =
            Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(at).status();
        assert!(status.is_ok_and(|s| s.success()), "mount a tmpfs at {}", at.display());
        Tmpfs(at.to_owned())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_is_said_and_leaves_readable_files() {
    if !nix::unistd::getuid().is_root() {
        crate::support::skip("a_full_disk_is_said_and_leaves_readable_files needs root to mount a tmpfs");
        return;
    }
    let env = TestEnv::new();
    let disk = Tmpfs::mount(&env.root().join("disk"), "3m");
    let repo = disk.0.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    env.git_in(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "small\n").unwrap();
    env.git_in(&repo, &["add", "README.md"]);
    env.git_in(&repo, &["commit", "-qm", "initial"]);
    let agent = env.script(
        "filler.sh",
        "cat >/dev/null\necho work > work.txt && git add work.txt && git commit -qm 'work before the disk filled'\n\
         dd if=/dev/zero of=../../../filler bs=64k count=1000 2>/dev/null; true\necho '<promise>COMPLETE</promise>'",
    );
    let manifest = env.write_manifest(&crate::support::cli_manifest(&agent, "[loop]\nmax_iterations = 1"));
    let mut command = env.eden_command(&["run", manifest.to_str().unwrap()]);
    command.current_dir(&repo).env("PWD", &repo);
    let run = Run::from(command.output().unwrap());
    assert_eq!(run.code, 70, "{}", run.stderr);
    let error = run.error_text();
    assert!(error.contains("No space left on device") || error.contains("disk is full"), "{error}");
    assert!(error.contains("hint: free some space"), "{error}");
    assert!(!error.contains("git_error"), "{error}");
    for entry in std::fs::read_dir(repo.join(".eden/runs")).unwrap() {
        let path = entry.unwrap().path();
        assert!(path.extension().is_some_and(|e| e == "json"), "no temporary left: {}", path.display());
        let text = std::fs::read_to_string(&path).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).expect("the record is whole");
    }
    for entry in std::fs::read_dir(repo.join(".eden/logs")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|_| panic!("a cut line: {line}"));
        }
    }
    // The agent's commit is safe on its branch.
    let branches = env.git_in(&repo, &["branch", "--format=%(refname:short)"]);
    let branch = branches.lines().find(|b| b.starts_with("eden/")).expect("the branch is kept").to_owned();
    assert_eq!(env.git_in(&repo, &["log", "-1", "--format=%s", &branch]), "work before the disk filled");
    drop(disk);
}
