//! `eden top` in a real terminal: tmux runs it (`send-keys`, `capture-pane`) while real runs go
//! on, one of them in docker: the rows appear and advance, `f` follows a run's output, `s`
//! steers a live run, `c` stops one, `m` merges a kept run, and `q` leaves the terminal as it
//! was. Without a terminal it refuses, with a hint.

use crate::support::{with_test_runtime, TestEnv, EDEN};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A tmux server of the test's own, removed with it.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(script: &Path, (width, height): (u16, u16)) -> Tmux {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let tmux = Tmux { socket: format!("eden-top-{}-{n}", std::process::id()) };
        let (width, height) = (width.to_string(), height.to_string());
        let started =
            tmux.command(&["new-session", "-d", "-s", "top", "-x", &width, "-y", &height]).arg(script).status();
        assert!(started.is_ok_and(|status| status.success()), "tmux starts");
        tmux
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket, "-f", "/dev/null"]).args(args);
        command
    }

    fn screen(&self) -> String {
        let output = self.command(&["capture-pane", "-p", "-t", "top"]).output().unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for key in keys {
            assert!(self.command(&["send-keys", "-t", "top", key]).status().unwrap().success());
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    fn type_text(&self, text: &str) {
        assert!(self.command(&["send-keys", "-t", "top", "-l", text]).status().unwrap().success());
        std::thread::sleep(Duration::from_millis(60));
    }

    /// Wait until the screen shows what `shows` looks for; the screen then.
    fn wait(&self, what: &str, shows: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let screen = self.screen();
            if shows(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "waited for {what}; the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn alternate_screen(&self) -> bool {
        let output = self.command(&["display", "-p", "-t", "top", "#{alternate_on}"]).output().unwrap();
        String::from_utf8_lossy(&output.stdout).trim() == "1"
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command(&["kill-server"]).status();
    }
}

/// A script for tmux to run: the test's environment, the terminal's settings before and after,
/// `eden top` between them, and how it exited.
fn top_script(env: &TestEnv) -> PathBuf {
    top_script_with(env, "")
}

/// `top_script` with `more` exported too.
fn top_script_with(env: &TestEnv, more: &str) -> PathBuf {
    let root = env.root().display().to_string();
    let mut exports = String::new();
    let mut probe = Command::new("true");
    env.apply_env(&mut probe);
    for (key, value) in probe.get_envs() {
        let key = key.to_string_lossy();
        match value {
            Some(value) => exports.push_str(&format!("export {key}='{}'\n", value.to_string_lossy())),
            None => exports.push_str(&format!("unset {key}\n")),
        }
    }
    env.script(
        "top.sh",
        &format!(
            "{exports}{more}\ncd '{repo}'\nstty -g > {root}/stty-before\n{EDEN} top\necho \"TOP-EXITED $?\"\nstty -g > {root}/stty-after\nsleep 600\n",
            repo = env.repo.display()
        ),
    )
}

/// A manifest file outside the repository.
fn manifest(env: &TestEnv, name: &str, text: &str) -> PathBuf {
    let path = env.root().join(format!("{name}.toml"));
    std::fs::write(&path, with_test_runtime(text)).unwrap();
    path
}

fn start(env: &TestEnv, manifest: &Path) -> Child {
    env.eden_command(&["run", manifest.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<i32> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        assert!(Instant::now() < deadline, "the run did not end");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn top_watches_follows_steers_stops_and_merges_real_runs_and_gives_the_terminal_back() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let root = env.root().display().to_string();
    // A kept run: it changed a protected path, so its work waits on its branch (exit 10).
    let keeper = manifest(
        &env,
        "keeper",
        "name = \"keeper\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\n\
         args = [\"-c\", \"cat >/dev/null; echo kept > keep.txt; git add keep.txt; git -c user.name=a -c user.email=a@b commit -qm 'kept work'; echo '<promise>COMPLETE</promise>'\"]\n\
         [branch]\nprotect = [\"keep.txt\"]\n[loop]\nmax_iterations = 1\n",
    );
    let kept = env.eden_command(&["run", keeper.to_str().unwrap()]).output().unwrap();
    assert_eq!(kept.status.code(), Some(10), "{}", String::from_utf8_lossy(&kept.stderr));

    let tmux = Tmux::start(&top_script(&env), (120, 30));
    tmux.wait("the kept run", |screen| {
        screen.contains("eden top") && screen.contains("keeper") && screen.contains("kept")
    });

    // A ticking agent that keeps every prompt it gets, and one in docker.
    let ticker = manifest(
        &env,
        "ticker",
        &format!(
            "name = \"ticker\"\nprompt = \"the first prompt\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\n\
             args = [\"-c\", \"p=$(cat); echo \\\"$p\\\" >> {root}/prompts.txt; i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.3; done\"]\n\
             [loop]\nmax_iterations = 3\nidle_timeout = \"60s\"\n"
        ),
    );
    let boxed = manifest(
        &env,
        "box",
        &crate::containers::manifest(
            "docker",
            "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo box line $i; sleep 0.5; done; echo '<promise>COMPLETE</promise>'",
            "",
        ),
    );
    let mut ticking = start(&env, &ticker);
    let mut in_docker = start(&env, &boxed);
    let screen = tmux.wait("both live runs", |screen| {
        screen.contains("2 live") && screen.contains("ticker") && screen.contains("box") && screen.contains("docker")
    });
    assert!(screen.contains("iterating"), "{screen}");
    // The rows advance: the agent's last line moves on.
    tmux.wait("the ticker's line", |screen| screen.contains("tick 3"));
    tmux.wait("the ticker's line to move on", |screen| screen.contains("tick 8"));
    tmux.wait("the box's line", |screen| screen.contains("box line"));

    // `f` follows the ticker's output.
    tmux.keys(&["/"]);
    tmux.type_text("ticker");
    tmux.keys(&["Enter", "f"]);
    let followed = tmux.wait("the output followed", |screen| screen.contains("output (following)"));
    assert!(followed.contains("tick"), "{followed}");

    // `s` steers it: its next iteration starts with the new prompt.
    tmux.keys(&["s"]);
    tmux.type_text("turn left now");
    tmux.wait("the steer line", |screen| screen.contains("steer: turn left now"));
    tmux.keys(&["Enter"]);
    tmux.wait("the steer said", |screen| screen.contains("steered `"));
    let prompts = Path::new(&root).join("prompts.txt");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&prompts).unwrap_or_default().contains("turn left now") {
        assert!(Instant::now() < deadline, "the steered prompt never reached the agent");
        std::thread::sleep(Duration::from_millis(100));
    }

    // `c` asks, then stops it as Ctrl-C would.
    tmux.keys(&["c"]);
    tmux.wait("the stop question", |screen| screen.contains("stop `ticker` as Ctrl-C would"));
    tmux.keys(&["y"]);
    assert_eq!(wait_exit(&mut ticking, Duration::from_secs(60)), Some(130));

    // `m` merges the kept run, after asking.
    tmux.keys(&["Escape", "Escape", "/"]);
    tmux.type_text("keeper");
    tmux.keys(&["Enter", "m"]);
    tmux.wait("the merge question", |screen| screen.contains("merge `keeper` into main? (y/n)"));
    tmux.keys(&["y"]);
    tmux.wait("the merge said", |screen| screen.contains("merged later") || screen.contains("merged"));
    assert!(env.log_subjects("main").contains(&"kept work".to_owned()), "{:?}", env.log_subjects("main"));

    assert_eq!(wait_exit(&mut in_docker, Duration::from_secs(120)), Some(0));
    tmux.keys(&["Escape"]);
    tmux.wait("the box merged", |screen| screen.contains("0 live"));

    // `q`: the terminal as it was.
    tmux.keys(&["q"]);
    tmux.wait("eden top to exit", |screen| screen.contains("TOP-EXITED 0"));
    assert!(!tmux.alternate_screen(), "the alternate screen was left");
    let before = std::fs::read_to_string(Path::new(&root).join("stty-before")).unwrap();
    let after = std::fs::read_to_string(Path::new(&root).join("stty-after")).unwrap();
    assert_eq!(before, after, "the terminal's settings are as they were");
}

#[test]
fn sigterm_and_ctrl_c_give_the_terminal_back() {
    let env = TestEnv::new();
    let tmux = Tmux::start(&top_script(&env), (80, 24));
    tmux.wait("eden top", |screen| screen.contains("no runs yet"));
    tmux.keys(&["C-c"]);
    tmux.wait("eden top to exit", |screen| screen.contains("TOP-EXITED 0"));
    assert!(!tmux.alternate_screen());

    let again = Tmux::start(&top_script(&env), (80, 24));
    again.wait("eden top", |screen| screen.contains("no runs yet"));
    for pid in tops_of(&env) {
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    }
    again.wait("eden top to exit", |screen| screen.contains("TOP-EXITED 0"));
    assert!(!again.alternate_screen());
    let before = std::fs::read_to_string(env.root().join("stty-before")).unwrap();
    let after = std::fs::read_to_string(env.root().join("stty-after")).unwrap();
    assert_eq!(before, after);

    // The terminal itself goes away (its window closed): eden top ends, it does not spin.
    let gone = Tmux::start(&top_script(&env), (80, 24));
    gone.wait("eden top", |screen| screen.contains("no runs yet"));
    drop(gone);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !tops_of(&env).is_empty() {
        assert!(Instant::now() < deadline, "eden top outlived its terminal");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The pids of the `eden top`s this test started (their `HOME` is the test's).
fn tops_of(env: &TestEnv) -> Vec<String> {
    let pids = Command::new("pgrep").args(["-f", &format!("{EDEN} top")]).output().unwrap();
    String::from_utf8_lossy(&pids.stdout)
        .lines()
        .filter(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            String::from_utf8_lossy(&environ).contains(&format!("HOME={}", env.home().display()))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn colours_unless_no_color() {
    let env = TestEnv::new();
    let done = env.run_manifest(
        "name = \"done\"\nprompt = \"x\"\n[agent]\nkind = \"simulated\"\nlines = [\"<promise>COMPLETE</promise>\"]\n",
        &[],
    );
    done.assert_code(0);
    let coloured = |more: &str| {
        let tmux = Tmux::start(&top_script_with(&env, more), (100, 24));
        tmux.wait("the run", |screen| screen.contains("done"));
        let output = tmux.command(&["capture-pane", "-p", "-e", "-t", "top"]).output().unwrap();
        tmux.keys(&["q"]);
        tmux.wait("eden top to exit", |screen| screen.contains("TOP-EXITED 0"));
        let screen = String::from_utf8_lossy(&output.stdout).into_owned();
        // A foreground colour: `ESC [ 3x m` or `ESC [ 38;…`.
        screen.contains("\u{1b}[32m") || screen.contains("\u{1b}[38;")
    };
    assert!(coloured(""), "the finished run's state is green");
    assert!(!coloured("export NO_COLOR=1"), "NO_COLOR: no colour");
}

#[test]
fn without_a_terminal_it_refuses_with_a_hint() {
    let env = TestEnv::new();
    let run = env.eden(&["top"]);
    run.assert_code(2);
    let text = run.error_text();
    assert!(text.contains("`eden top` needs a terminal") && text.contains("eden sessions list"), "{text}");
    // A folder that is no repository is said first.
    let outside = env.eden(&["top", env.home().to_str().unwrap()]);
    outside.assert_code(2);
    assert!(!outside.error_text().contains("needs a terminal"), "{}", outside.error_text());
}
