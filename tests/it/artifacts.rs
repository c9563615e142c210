//! `artifacts`: files of the sandbox's workspace kept in `.eden/artifacts/RUN/` after the run
//! (and after a step with its own), as data through the sandbox's channel, in every sandbox
//! kind (a pod's in `kubernetes.rs`).

use crate::containers::{ready, IMAGE};
use crate::support::{Run, TestEnv};

/// The agent leaves, ignored by git: a matching file, one that does not match, a link to a file
/// of this machine's matching by name, and (with a `max_return` of 1 MiB) a 2 MiB file; and
/// commits one that matches.
const SCRIPT: &str = "printf 'out/\\nlink.txt\\nbig.bin\\n' > .gitignore; mkdir -p out kept; echo one > out/a.txt; echo no > out/b.log; \
    ln -s /etc/passwd link.txt; head -c 2097152 /dev/zero > big.bin; echo two > kept/c.txt; \
    git add .gitignore kept && git -c user.name=box -c user.email=box@example.com commit -qm kept && echo '<promise>COMPLETE</promise>'";

const GLOBS: &str = "artifacts = [\"out/*.txt\", \"kept/**\", \"link.txt\", \"big.bin\"]\n";

fn sha256(text: &str) -> String {
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().to_owned()
}

pub fn manifest(sandbox: &str) -> String {
    let script = SCRIPT.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "name = \"art\"\nprompt = \"go\"\n{GLOBS}[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"cat >/dev/null; {script}\"]\n\
         {sandbox}\n[loop]\nmax_iterations = 1\n"
    )
}

/// What every kind must show: the two matching files kept with their sizes and hashes, nothing
/// else; the link and (where `max_return` is small) the big file said and left behind.
pub fn assert_kept(env: &TestEnv, run: &Run, limited: bool) {
    run.assert_code(0);
    let record = run.json();
    let dir = std::path::PathBuf::from(record["artifacts_dir"].as_str().unwrap_or_else(|| panic!("{}", run.stderr)));
    assert!(dir.starts_with(std::fs::canonicalize(&env.repo).unwrap().join(".eden/artifacts")), "{}", dir.display());
    let files = serde_json::json!([
        {"path": "kept/c.txt", "bytes": 4, "sha256": sha256("two\n")},
        {"path": "out/a.txt", "bytes": 4, "sha256": sha256("one\n")},
    ]);
    let mut kept = record["artifacts"].clone();
    if !limited {
        // Without a sandbox the limit is the default: the big file comes too.
        let big = kept.as_array_mut().unwrap().iter().position(|file| file["path"] == "big.bin").expect("big.bin kept");
        kept.as_array_mut().unwrap().remove(big);
    }
    assert_eq!(kept, files, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(dir.join("out/a.txt")).unwrap(), "one\n");
    assert!(!dir.join("out/b.log").exists(), "a file that does not match");
    assert!(std::fs::symlink_metadata(dir.join("link.txt")).is_err(), "the link is not followed, nor made");
    assert!(run.stderr.contains("artifact `link.txt` is a symbolic link: not followed"), "{}", run.stderr);
    if limited {
        assert!(!dir.join("big.bin").exists());
        assert!(run.stderr.contains("artifact `big.bin` is larger than `sandbox.max_return`"), "{}", run.stderr);
    }
    assert!(run.stderr.contains("kept 2 artifact(s) after the run") || !limited, "{}", run.stderr);
    // Never merged: what landed is the commit, not the kept copies.
    assert_eq!(env.git(&["ls-tree", "-r", "--name-only", "main"]).lines().filter(|f| f.starts_with("out/")).count(), 0);
    let shown = env.eden(&["sessions", "show", "last", "--no-pager"]);
    assert!(shown.stdout.contains("artifact(s) after the run"), "{}", shown.stdout);
}

pub fn run(env: &TestEnv, manifest: &str, vars: &[(&str, &str)]) -> Run {
    let path = env.write_manifest(manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Run::from(command.output().unwrap())
}

#[test]
fn artifacts_without_a_sandbox() {
    let env = TestEnv::new();
    let github = env.root().join("github-output");
    let run = run(&env, &manifest(""), &[("GITHUB_ACTIONS", "true"), ("GITHUB_OUTPUT", github.to_str().unwrap())]);
    assert_kept(&env, &run, false);
    let outputs = std::fs::read_to_string(&github).unwrap();
    let dir = run.json()["artifacts_dir"].as_str().unwrap().to_owned();
    assert!(outputs.contains("artifacts<<") && outputs.contains(&dir), "{outputs}");
    // `eden discard` takes them with the run's work; the record keeps their list.
    let id = run.json()["id"].as_str().unwrap().to_owned();
    env.eden(&["discard", &id, "--force"]).assert_code(0);
    assert!(!std::path::Path::new(&dir).exists(), "discarded");
}

#[test]
fn artifacts_from_an_isolated_copy() {
    if !crate::isolated::bwrap() {
        return;
    }
    let env = TestEnv::new();
    let run = run(&env, &manifest("[sandbox]\nkind = \"isolated\"\nmax_return = \"1m\""), &[]);
    assert_kept(&env, &run, true);
}

fn artifacts_from_a_container(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let sandbox =
        format!("[sandbox]\nkind = \"{engine}\"\nimage = \"{IMAGE}\"\nnetwork = \"none\"\nmax_return = \"1m\"");
    let run = run(&env, &manifest(&sandbox), &[]);
    assert_kept(&env, &run, true);
}

#[test]
fn artifacts_from_docker() {
    artifacts_from_a_container("docker");
}

#[test]
fn artifacts_from_podman() {
    artifacts_from_a_container("podman");
}

/// A step's own `artifacts` are kept after it, before a later step changes the workspace; the
/// run's after the run.
#[test]
fn a_steps_artifacts_are_kept_after_it() {
    let env = TestEnv::new();
    let agent = |script: &str| {
        format!("[step.agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"cat >/dev/null; {script}; echo '<promise>COMPLETE</promise>'\"]\n")
    };
    let manifest = format!(
        "name = \"steps\"\nartifacts = [\"report.txt\"]\n[loop]\nmax_iterations = 1\n\
         [[step]]\nname = \"first\"\nprompt = \"go\"\nartifacts = [\"report.txt\"]\n{}\
         [[step]]\nname = \"second\"\nprompt = \"go\"\n{}",
        agent("echo first > report.txt"),
        agent("echo second > report.txt")
    );
    let run = run(&env, &manifest, &[]);
    assert!(run.stderr.contains("kept 1 artifact(s) after step `first`"), "{}", run.stderr);
    assert!(run.stderr.contains("kept 1 artifact(s) after the run"), "{}", run.stderr);
    let dir = run.json()["artifacts_dir"].as_str().unwrap().to_owned();
    assert_eq!(std::fs::read_to_string(format!("{dir}/report.txt")).unwrap(), "second\n", "the run's last");
}

#[test]
fn artifact_globs_that_leave_the_workspace_are_refused() {
    let env = TestEnv::new();
    for (glob, said) in [
        ("/etc/passwd", "it must stay inside the workspace"),
        ("../secrets/*", "it must stay inside the workspace"),
        (".git/config", "`.git` and `.eden` are eden's and git's"),
        ("", "it is empty"),
    ] {
        let manifest =
            format!("name = \"a\"\nprompt = \"go\"\nartifacts = [\"{glob}\"]\n[agent]\nkind = \"simulated\"\n");
        let run = env.run_manifest(&manifest, &[]);
        run.assert_code(2);
        assert!(run.stderr.contains(said) && run.stderr.contains("hint:"), "{glob}: {}", run.stderr);
        env.assert_pristine();
    }
}

/// The agent is root in its container (as eden is on a CI runner) and replaces the image's
/// `find` and `tar` with payloads that list a file of this machine through `..` (3,000 times)
/// and mark that they ran; it also leaves `-report.txt`, a name GNU tar's `-T` reads as an
/// option. eden lists and packs with its own executable, so neither payload runs, the host file
/// is never read (its hash is nowhere), and every real file comes back with the hash of its
/// bytes.
fn a_root_agent_s_tools_are_never_asked(engine: &str) {
    if !ready(engine) {
        return;
    }
    if !nix::unistd::getuid().is_root() {
        crate::support::skip("the agent is root in its container only when eden runs as root");
        return;
    }
    let env = TestEnv::new();
    let secret = env.root().join("host-secret.txt");
    std::fs::write(&secret, "this machine's own\n").unwrap();
    let up = "../".repeat(12);
    let tools = env.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        tools.join("payload"),
        format!(
            "#!/bin/sh\necho ran > \"$PWD/out/payload-ran.txt\"\nfor i in $(seq 3000); do printf './out/{up}{}\\0'; done\n",
            secret.display().to_string().trim_start_matches('/')
        ),
    )
    .unwrap();
    let script = "mkdir -p out && echo one > out/a.txt && echo dash > out/-report.txt && \
        cp /tools/payload /usr/bin/find && cp /tools/payload /usr/bin/tar && chmod 755 /usr/bin/find /usr/bin/tar && \
        echo replaced; echo '<promise>COMPLETE</promise>'";
    let script = script.replace('\\', "\\\\").replace('"', "\\\"");
    let manifest = format!(
        "name = \"art\"\nprompt = \"go\"\nartifacts = [\"out/**\"]\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"cat >/dev/null; {script}\"]\n\
         [sandbox]\nkind = \"{engine}\"\nimage = \"{IMAGE}\"\nnetwork = \"none\"\nmounts = [{{ host = \"{}\", sandbox = \"/tools\", read_only = true }}]\n\
         [branch]\ncommit_leftovers = true\n[loop]\nmax_iterations = 1\n",
        tools.display()
    );
    let run = run(&env, &manifest, &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("| replaced"), "the image's tools were replaced: {}", run.stderr);
    let record = run.json();
    let kept = serde_json::json!([
        {"path": "out/-report.txt", "bytes": 5, "sha256": sha256("dash\n")},
        {"path": "out/a.txt", "bytes": 4, "sha256": sha256("one\n")},
    ]);
    assert_eq!(record["artifacts"], kept, "{}", run.stderr);
    assert!(!run.stdout.contains(&sha256("this machine's own\n")), "a host file was read");
    let dir = std::path::PathBuf::from(record["artifacts_dir"].as_str().unwrap());
    assert!(!dir.join("out/payload-ran.txt").exists(), "a payload ran");
    assert_eq!(std::fs::read_to_string(dir.join("out/-report.txt")).unwrap(), "dash\n");
}

#[test]
fn a_root_agent_s_tools_are_never_asked_in_docker() {
    a_root_agent_s_tools_are_never_asked("docker");
}

#[test]
fn a_root_agent_s_tools_are_never_asked_in_podman() {
    a_root_agent_s_tools_are_never_asked("podman");
}
