//! `eden interactive`, driven through tmux so a real pseudo-terminal is in play: a `cli` agent
//! `bash` gets the terminal (a pts, the foreground group: Ctrl-C reaches bash, not eden), runs in
//! the worktree, and eden exits with its code; in docker and podman the terminal inside follows
//! the window's size; the terminal's modes come back whatever the agent left. `.ci/run`
//! installs tmux; elsewhere a missing tmux skips these tests with a note.

use crate::containers::{ready, IMAGE};
use crate::support::{TestEnv, EDEN};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// One tmux server of the test's own (its socket in the test's folder), one window.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    /// Start `script` (a shell command line) in a 120x30 window, in `dir`, with the test's
    /// environment.
    fn start(env: &TestEnv, dir: &Path, script: &str) -> Option<Tmux> {
        if which::which("tmux").is_err() {
            crate::support::skip("`tmux` is not installed (apt-get install tmux)");
            return None;
        }
        let tmux = Tmux { socket: env.root().join("tmux.sock") };
        let mut command = tmux.command();
        env.apply_env(&mut command);
        let status = command
            .args(["new-session", "-d", "-x", "120", "-y", "30", "-c"])
            .arg(dir)
            .arg(format!("export PS1='PROMPT$ '; {script}; sleep 600"))
            .env("TERM", "xterm")
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session");
        Some(tmux)
    }

    fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(&self.socket).args(["-f", "/dev/null"]);
        command
    }

    fn keys(&self, keys: &[&str]) {
        let status = self.command().args(["send-keys", "-t", "0"]).args(keys).status().unwrap();
        assert!(status.success());
    }

    /// Type a line and press Enter.
    fn line(&self, text: &str) {
        self.keys(&["-l", text]);
        self.keys(&["Enter"]);
    }

    fn screen(&self) -> String {
        let output = self.command().args(["capture-pane", "-p", "-J", "-S", "-200", "-t", "0"]).output().unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Wait until the screen shows `text` (60 s at most).
    fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {text:?} on the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn resize(&self, columns: u32, rows: u32) {
        let status = self
            .command()
            .args(["resize-window", "-t", "0", "-x", &columns.to_string(), "-y", &rows.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").status();
    }
}

/// `eden interactive` with a `bash` agent, then its exit code into `code.txt`.
fn eden_bash(extra: &str) -> String {
    format!(
        "{EDEN} interactive --agent cli --binary bash --set 'agent.args=[\"--norc\", \"--noprofile\", \"-i\"]' {extra}; \
         echo $? > ../code.txt; echo EDEN-DONE"
    )
}

fn exit_code(env: &TestEnv) -> i32 {
    std::fs::read_to_string(env.root().join("code.txt")).unwrap().trim().parse().unwrap()
}

#[test]
fn a_shell_agent_owns_the_terminal_on_the_host() {
    let env = TestEnv::new();
    // Hooks around the session, in order; the iteration hooks have no iteration to run in.
    let log = env.root().join("hooks.log");
    let manifest = env.root().join("session.toml");
    std::fs::write(
        &manifest,
        format!(
            "[hooks.host]\non_worktree_ready = [\"echo worktree_ready >> {log}\"]\non_close = [\"echo close $EDEN_STATUS >> {log}\"]\n\
             on_iteration_start = [\"echo iteration >> {log}\"]\n[hooks.sandbox]\non_sandbox_ready = [\"echo sandbox_ready >> {log}\"]\n",
            log = log.display()
        ),
    )
    .unwrap();
    let Some(tmux) = Tmux::start(&env, &env.repo, &eden_bash(manifest.to_str().unwrap())) else { return };
    tmux.wait_for("PROMPT$ ");
    // A terminal of its own, in the checkout (`head` is the default here).
    tmux.line("tty; pwd");
    let repo = std::fs::canonicalize(&env.repo).unwrap();
    let screen = tmux.wait_for(&format!("\n{}\n", repo.display()));
    assert!(screen.contains("/dev/pts/"), "{screen}");
    // Ctrl-C reaches bash (its foreground job), not eden.
    tmux.line("sleep 30");
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys(&["C-c"]);
    tmux.line("echo still-here-$((40+2))");
    tmux.wait_for("still-here-42");
    tmux.line("exit 3");
    tmux.wait_for("EDEN-DONE");
    assert_eq!(exit_code(&env), 3);
    let records: Vec<_> = std::fs::read_dir(env.repo.join(".eden/runs")).unwrap().collect();
    assert_eq!(records.len(), 1);
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(records[0].as_ref().unwrap().path()).unwrap()).unwrap();
    assert_eq!((record["kind"].as_str(), record["exit_code"].as_i64()), (Some("interactive"), Some(3)));
    assert_eq!(record["strategy"], "head");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "worktree_ready\nsandbox_ready\nclose agent_failed\n");
}

#[test]
fn the_terminal_is_restored_after_the_agent_is_killed_from_outside() {
    let env = TestEnv::new();
    // The modes after, written before the test is told eden is done (it reads them then).
    let eden =
        eden_bash("--strategy merge-to-head").replace("echo EDEN-DONE", "stty -a > ../after.txt; echo EDEN-DONE");
    let script = format!("stty -a > ../before.txt; {eden}");
    let Some(tmux) = Tmux::start(&env, &env.repo, &script) else { return };
    tmux.wait_for("PROMPT$ ");
    // What a TUI does to the terminal, then it dies without undoing it.
    tmux.line("stty raw -echo; echo RAW-NOW");
    tmux.wait_for("RAW-NOW");
    // The agent, seen from outside: bash working in this test's worktree.
    let worktrees = std::fs::canonicalize(env.repo.join(".eden/worktrees")).unwrap();
    let agent = agent_pid(&worktrees).expect("the agent's bash");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(agent), nix::sys::signal::Signal::SIGKILL).unwrap();
    tmux.wait_for("EDEN-DONE");
    assert_eq!(exit_code(&env), 137);
    let before = std::fs::read_to_string(env.root().join("before.txt")).unwrap();
    let after = std::fs::read_to_string(env.root().join("after.txt")).unwrap();
    assert_eq!(before, after, "the terminal's modes as they were");
    env.assert_pristine();
}

/// The host pid of the `bash --norc ...` agent whose working directory is under `dir`.
fn agent_pid(dir: &Path) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.filter_map(Result::ok).find_map(|entry| {
        let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
        let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
        let program = cmdline.split(|b| *b == 0).next().unwrap_or_default();
        let bash = program == b"bash" || program.ends_with(b"/bash");
        (bash && cmdline.windows(7).any(|w| w == b"\0--norc") && cwd.starts_with(dir)).then_some(pid)
    })
}

#[test]
fn without_a_terminal_it_needs_no_tty() {
    let env = TestEnv::new();
    let refused = env.eden(&["interactive", "--agent", "cli", "--binary", "bash"]);
    refused.assert_code(2);
    assert!(refused.error_text().contains("needs a terminal on stdin"), "{}", refused.stderr);
    let mut command = env.eden_command(&[
        "interactive",
        "--agent",
        "cli",
        "--binary",
        "bash",
        "--no-tty",
        "--strategy",
        "merge-to-head",
        "--json",
    ]);
    command.stdin(std::process::Stdio::piped());
    let mut child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(
                b"echo piped > piped.txt && git add piped.txt && git commit -qm piped && echo '<done>'\nexit 0\n",
            )
            .unwrap();
    }
    let run = crate::support::Run::from(child.wait_with_output().unwrap());
    run.assert_code(0);
    assert!(run.stdout.contains("<done>"), "{}", run.stdout);
    assert_eq!(env.log_subjects("main")[0], "piped");
    let isolated =
        env.eden(&["interactive", "--agent", "cli", "--binary", "bash", "--no-tty", "--sandbox", "isolated"]);
    isolated.assert_code(2);
    assert!(isolated.error_text().contains("cannot attach a terminal to an `isolated` sandbox"), "{}", isolated.stderr);
    let simulated = env.eden(&["interactive", "--agent", "simulated", "--no-tty"]);
    simulated.assert_code(2);
    assert!(simulated.error_text().contains("no interactive mode"), "{}", simulated.stderr);
    env.assert_pristine();
}

/// In a container: a terminal inside that follows the window's size, and the session's commit
/// merged when it ends.
fn container_terminal(engine: &str, remote: Option<&crate::remote_engines::RemoteEngines>) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let mut extra = format!("--sandbox {engine} --set sandbox.image={IMAGE} --strategy merge-to-head");
    let mut script = String::new();
    if let Some(engines) = remote {
        let host = &engines.hosts[0];
        extra.push_str(&format!(" --host {} --set sandbox.network=bridge", host.docker));
        for (key, value) in engines.tls_env() {
            script.push_str(&format!("export {key}={value}; "));
        }
    }
    script.push_str(&eden_bash(&extra));
    let Some(tmux) = Tmux::start(&env, &env.repo, &script) else { return };
    tmux.wait_for("# ");
    tmux.line("tty; echo SIZE-$(stty size | tr ' ' x)");
    let screen = tmux.wait_for("SIZE-30x120");
    assert!(screen.contains("/dev/pts/"), "{screen}");
    tmux.resize(90, 20);
    std::thread::sleep(Duration::from_millis(500));
    tmux.line("echo SIZE-$(stty size | tr ' ' x)");
    tmux.wait_for("SIZE-20x90");
    tmux.line("sleep 30");
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys(&["C-c"]);
    tmux.line(
        "echo boxed > boxed.txt && git add boxed.txt && git -c user.name=t -c user.email=t@e commit -qm boxed; exit",
    );
    tmux.wait_for("EDEN-DONE");
    assert_eq!(exit_code(&env), 0, "{}", tmux.screen());
    assert_eq!(env.log_subjects("main")[0], "boxed");
    assert!(crate::containers::containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty());
    if let Some(engines) = remote {
        assert!(engines.hosts[0].containers(engines, &env.repo).is_empty(), "nothing left on the remote engine");
    }
    env.assert_pristine();
}

#[test]
fn docker_gives_a_terminal_that_follows_the_window() {
    container_terminal("docker", None);
}

#[test]
fn podman_gives_a_terminal_that_follows_the_window() {
    container_terminal("podman", None);
}

/// The same on a remote engine: `exec -it` over the engine's channel.
#[test]
fn a_remote_engine_gives_a_terminal_that_follows_the_window() {
    let Some(engines) = crate::remote_engines::engines() else { return };
    container_terminal("docker", Some(engines));
}

/// The real Claude Code TUI against the scripted model server, its first-run questions answered
/// in its config folder: the first message is answered, a file written through a tool call,
/// `/exit` typed, and the session's transcript captured.
#[test]
fn claude_code_tui_answers_writes_and_exits() {
    let Some(_) = crate::real_agents::require("claude") else { return };
    let env = TestEnv::new();
    let repo = std::fs::canonicalize(&env.repo).unwrap();
    let server = crate::model_server::ModelServer::start(repo.clone(), false);
    let config = env.root().join("claude");
    std::fs::create_dir_all(&config).unwrap();
    let state = serde_json::json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "customApiKeyResponses": { "approved": ["dummy"], "rejected": [] },
        "projects": { repo.display().to_string(): { "hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true } },
    });
    std::fs::write(config.join(".claude.json"), state.to_string()).unwrap();
    let vars: Vec<String> = crate::real_agents::claude_env(&env, &server)
        .into_iter()
        .map(|(key, value)| format!("{key}='{value}'"))
        .collect();
    let script = format!(
        "env {} {EDEN} interactive --agent claude-code --prompt 'create hello.txt and commit it' \
         --set 'agent.extra_args=[\"--allowedTools\", \"Write,Bash\"]'; echo $? > ../code.txt; echo EDEN-DONE",
        vars.join(" ")
    );
    let Some(tmux) = Tmux::start(&env, &env.repo, &script) else { return };
    tmux.wait_for(crate::model_server::FINAL_TEXT);
    tmux.line("/exit");
    tmux.wait_for("EDEN-DONE");
    assert_eq!(exit_code(&env), 0, "{}", tmux.screen());
    assert_eq!(std::fs::read_to_string(env.repo.join("hello.txt")).unwrap(), "hello from mock\n");
    assert_eq!(env.log_subjects("main")[0], "add hello.txt");
    // The session, found in Claude's store, is the run's one iteration, its transcript kept.
    let list = env.eden(&["sessions", "list", "--json"]).json();
    assert_eq!(list[0]["exit_reason"], "session_ended");
    let session = list[0]["sessions"][0].as_str().expect("a session id").to_owned();
    let raw = env.eden(&["sessions", "show", "last", "--raw"]);
    raw.assert_code(0);
    assert!(raw.stdout.contains(&session) && raw.stdout.contains("create hello.txt and commit it"), "{}", raw.stdout);
}

/// Several runs on a terminal: one live line each while they work, a summary line each when
/// they end, then the table.
#[test]
fn several_runs_on_a_terminal_get_a_live_line_each() {
    let env = TestEnv::new();
    let go = env.root().join("go");
    let agent = env.script(
        "wait.sh",
        &format!(
            "cat >/dev/null\nwhile [ ! -e {go} ]; do sleep 0.05; done\necho \"$$\" > \"f-$$.txt\"; git add . && git commit -qm \"work $$\"\necho '<promise>COMPLETE</promise>'",
            go = go.display()
        ),
    );
    for name in ["alpha", "beta"] {
        env.write(
            &format!("../{name}.toml"),
            &format!("name = \"{name}\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n", agent.display()),
        );
    }
    let script = format!("{EDEN} run ../alpha.toml ../beta.toml; echo $? > ../code.txt; echo EDEN-DONE");
    let Some(tmux) = Tmux::start(&env, &env.repo, &script) else { return };
    let screen = tmux.wait_for("beta");
    let deadline = Instant::now() + Duration::from_secs(60);
    while tmux.screen().matches("iteration 1/").count() < 2 {
        assert!(Instant::now() < deadline, "no live line per run:\n{screen}");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(&go, "").unwrap();
    let screen = tmux.wait_for("EDEN-DONE");
    assert_eq!(exit_code(&env), 0, "{screen}");
    for line in ["✓ alpha", "✓ beta", "RUN", "merged into main"] {
        assert!(screen.contains(line), "{line:?} missing:\n{screen}");
    }
}

/// Straight after `eden init`: a run on the placeholder prompt is refused (exit 2, nothing
/// made), and `eden interactive` in the checkout (strategy `head`) is not refused for the
/// files `init` just wrote — untracked files do not stand in a person's way.
#[test]
fn right_after_init() {
    let env = TestEnv::new();
    env.eden(&["init", "--agent", "claude-code"]).assert_code(0);
    let run = env.eden(&["run", "eden.toml"]);
    run.assert_code(2);
    assert!(run.error_text().contains("it is `eden init`'s placeholder"), "{}", run.stderr);
    // Nothing made by the run: `.eden/` holds only the schema `init` wrote for editors.
    let made: Vec<String> = std::fs::read_dir(env.repo.join(".eden"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(made, ["eden.schema.json"], "nothing made");

    let mut command = env.eden_command(&[
        "interactive",
        "eden.toml",
        "--agent",
        "cli",
        "--binary",
        "bash",
        "--no-tty",
        "--set",
        "prompt=\"\"",
    ]);
    command.stdin(std::process::Stdio::piped());
    let mut child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"echo in-the-checkout\nexit 0\n").unwrap();
    }
    let session = crate::support::Run::from(child.wait_with_output().unwrap());
    session.assert_code(0);
    assert!(session.stdout.contains("in-the-checkout"), "{}", session.stderr);
}

/// In a pod: `kubectl exec -it`, a terminal that follows the window, the session's commit merged.
#[test]
fn a_pod_gives_a_terminal_that_follows_the_window() {
    let Some(cluster) = crate::kubernetes::cluster() else { return };
    let env = TestEnv::new();
    let extra = format!(
        "--sandbox kubernetes --set sandbox.image={IMAGE} --set sandbox.image_pull_policy=Never --strategy merge-to-head"
    );
    let exports: String = cluster.env("admin").iter().map(|(key, value)| format!("export {key}='{value}'; ")).collect();
    let Some(tmux) = Tmux::start(&env, &env.repo, &format!("{exports}{}", eden_bash(&extra))) else { return };
    // A pod never runs as root: the shell's prompt is a user's.
    tmux.wait_for("$ ");
    tmux.line("tty; echo SIZE-$(stty size | tr ' ' x)");
    let screen = tmux.wait_for("SIZE-30x120");
    assert!(screen.contains("/dev/pts/"), "{screen}");
    tmux.resize(90, 20);
    std::thread::sleep(Duration::from_millis(800));
    tmux.line("echo SIZE-$(stty size | tr ' ' x)");
    tmux.wait_for("SIZE-20x90");
    tmux.line(
        "echo podded > podded.txt && git add podded.txt && git -c user.name=t -c user.email=t@e commit -qm podded; exit",
    );
    tmux.wait_for("EDEN-DONE");
    assert_eq!(exit_code(&env), 0, "{}", tmux.screen());
    assert_eq!(env.log_subjects("main")[0], "podded");
    assert!(cluster.pods(&env.repo).is_empty(), "the pod is deleted");
    env.assert_pristine();
}

/// Several runs in pods on a terminal: each live line says which pod it is and which node the
/// cluster's scheduler put it on.
#[test]
fn several_pods_on_a_terminal_show_their_pod_and_node() {
    let Some(cluster) = crate::kubernetes::cluster() else { return };
    let env = TestEnv::new();
    for name in ["alpha", "beta"] {
        let script = format!("sleep 4; echo {name} > {name}.txt && git add {name}.txt && git -c user.name=pod -c user.email=pod@example.com commit -qm {name} && echo '<promise>COMPLETE</promise>'");
        let manifest =
            crate::kubernetes::manifest(&script, "").replace("name = \"pod\"", &format!("name = \"{name}\""));
        env.write(&format!("../{name}.toml"), &manifest);
    }
    let exports: String = cluster.env("admin").iter().map(|(key, value)| format!("export {key}='{value}'; ")).collect();
    let script = format!("{exports}{EDEN} run ../alpha.toml ../beta.toml; echo $? > ../code.txt; echo EDEN-DONE");
    let Some(tmux) = Tmux::start(&env, &env.repo, &script) else { return };
    let deadline = Instant::now() + Duration::from_secs(90);
    while tmux.screen().matches("@ eden-node").count() < 2 {
        assert!(Instant::now() < deadline, "no pod and node in the live lines:\n{}", tmux.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    let screen = tmux.screen();
    assert!(screen.matches("· pod eden-").count() >= 2, "{screen}");
    let screen = tmux.wait_for("EDEN-DONE");
    assert_eq!(exit_code(&env), 0, "{screen}");
    assert!(screen.contains("✓ alpha") && screen.contains("✓ beta"), "{screen}");
    assert!(cluster.pods(&env.repo).is_empty(), "the pods are deleted");
}
