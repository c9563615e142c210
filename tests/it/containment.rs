//! Nothing the agent starts outlives its run: a grandchild that ignores SIGINT and SIGTERM, one
//! in a session of its own (`setsid`), one in a background subshell. After a normal exit,
//! SIGINT, SIGTERM, an idle timeout and a SIGKILL of eden, none of them is alive 2 s later, in
//! every sandbox. Hooks and prompt commands are held to the same rule when they end.
//!
//! The grandchildren are `sleep 300.<nonce><n>`: the host's process table shows processes of
//! every sandbox (containers and bubblewrap are namespaces on this kernel), so `pgrep` on the
//! host finds them wherever they run. The scripts build the number at run time, so no command
//! line but the sleepers' own carries it.

use crate::support::{Marker, Run, TestEnv};
use nix::sys::signal::Signal;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
enum Sandbox {
    /// On the host, with the containment eden chooses (a PID namespace here).
    None,
    /// On the host, with the fallback forced (`EDEN_CONTAINMENT=subreaper`).
    Subreaper,
    Docker,
    Podman,
    Isolated,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum End {
    /// The agent exits by itself after starting the grandchildren.
    Exit,
    Signal(Signal),
    IdleTimeout,
    /// eden is SIGKILLed: it cleans up nothing itself.
    KillEden,
}

impl Sandbox {
    fn available(self) -> bool {
        match self {
            Sandbox::None | Sandbox::Subreaper => true,
            Sandbox::Docker => crate::containers::ready("docker"),
            Sandbox::Podman => crate::containers::ready("podman"),
            Sandbox::Isolated => crate::isolated::bwrap(),
        }
    }

    /// The `[sandbox]` table and the agent's binary and args running `script` with bash.
    fn manifest(self, env: &TestEnv, script: &str, extra: &str) -> String {
        let (sandbox, binary, args) = match self {
            Sandbox::None | Sandbox::Subreaper | Sandbox::Isolated => {
                let path = env.script("agent.sh", script);
                let kind = if matches!(self, Sandbox::Isolated) { "isolated" } else { "none" };
                (format!("kind = \"{kind}\""), path.display().to_string(), String::new())
            }
            Sandbox::Docker | Sandbox::Podman => {
                let engine = if matches!(self, Sandbox::Docker) { "docker" } else { "podman" };
                let quoted = script.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
                (
                    format!("kind = \"{engine}\"\nimage = \"{}\"", crate::containers::IMAGE),
                    "bash".to_owned(),
                    format!("args = [\"-c\", \"{quoted}\"]"),
                )
            }
        };
        format!(
            "name = \"contain\"\nprompt = \"go\"\n{extra}\n[agent]\nkind = \"cli\"\nbinary = \"{binary}\"\n{args}\n\
             [sandbox]\n{sandbox}\n[loop]\nmax_iterations = 1\nidle_timeout = \"2s\"\n"
        )
    }

    fn command(self, env: &TestEnv, args: &[&str]) -> std::process::Command {
        let mut command = env.eden_command(args);
        if matches!(self, Sandbox::Subreaper) {
            command.env("EDEN_CONTAINMENT", "subreaper");
        }
        command
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool, within: Duration) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// bash: start the three kinds of grandchild, then either finish or wait.
fn agent_script(nonce: &str, end: End) -> String {
    let rest = match end {
        End::Exit => "sleep 0.5; echo '<promise>COMPLETE</promise>'",
        // Silent, so the idle watchdog fires; ignores nothing itself.
        End::IdleTimeout | End::Signal(_) | End::KillEden => "sleep \"$A${N}4\"",
    };
    format!(
        r#"cat >/dev/null
A=300. N={nonce}
( trap '' INT TERM; exec sleep "$A${{N}}1" ) >/dev/null 2>&1 &
setsid sleep "$A${{N}}2" >/dev/null 2>&1 &
( sleep "$A${{N}}3"; true ) >/dev/null 2>&1 &
echo started
{rest}"#
    )
}

fn nothing_outlives_the_run(sandbox: Sandbox, end: End) {
    if !sandbox.available() {
        return;
    }
    let env = TestEnv::new();
    let marker = Marker::new();
    let manifest = env.write_manifest(&sandbox.manifest(&env, &agent_script(marker.digits(), end), ""));
    let mut command = sandbox.command(&env, &["run", manifest.to_str().unwrap(), "--json"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    if end != End::Exit {
        wait_until("the grandchildren start", || marker.alive().len() >= 4, Duration::from_secs(60));
    }
    match end {
        End::Signal(signal) => {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
        }
        End::KillEden => child.kill().unwrap(),
        End::Exit | End::IdleTimeout => {}
    }
    let output = child.wait_with_output().unwrap();
    let ended = Instant::now();
    let run = Run::from(output);
    let expected = match end {
        End::Exit => 0,
        End::Signal(signal) => 128 + signal as i32,
        End::IdleTimeout => 4,
        End::KillEden => 137,
    };
    run.assert_code(expected);
    if end == End::Exit {
        assert!(run.stderr.contains("| started"), "the agent ran: {}", run.stderr);
    }
    // Give the processes the promised 2 s to go (a killed eden's container takes a moment).
    let left = marker.gone_within(Duration::from_secs(2).saturating_sub(ended.elapsed()));
    assert!(left.is_empty(), "{sandbox:?}/{end:?}: still alive 2 s after eden ended:\n{}", left.join("\n"));
}

/// A sandbox hook and a prompt command each leave grandchildren (with a script committed to the
/// repository, so every sandbox has it). Host hooks that run after them ask the test, which
/// looks at the host's whole process table (the hooks' own view is their namespace), and fail
/// the run if anything is still there.
fn hooks_and_prompt_commands_leave_nothing(sandbox: Sandbox) {
    if !sandbox.available() {
        return;
    }
    let env = TestEnv::new();
    let marker = Marker::new();
    let nonce = marker.digits();
    env.write(
        "leave.sh",
        &format!(
            "A=300.; N={nonce}\nsetsid sleep $A$N$1 >/dev/null 2>&1 &\n(trap '' INT TERM; sleep $A$N$(($1 + 1)) >/dev/null 2>&1 &)\necho left\n"
        ),
    );
    env.git(&["add", "leave.sh"]);
    env.git(&["commit", "-q", "-m", "leave.sh"]);
    let questions = env.root().join("questions");
    std::fs::create_dir(&questions).unwrap();
    // Ask the test and wait for its answer: `clean`, or the processes it found.
    let check = env.script(
        "check.sh",
        &format!(
            "q={questions}/$1\ntouch \"$q.asked\"\nwhile [ ! -f \"$q.answer\" ]; do sleep 0.02; done\n\
             if [ \"$(cat \"$q.answer\")\" != clean ]; then echo \"after the $1:\"; cat \"$q.answer\"; exit 1; fi",
            questions = questions.display()
        ),
    );
    let extra = format!(
        "prompt = \"go !`sh leave.sh 5`\"\n\
         [hooks.sandbox]\non_sandbox_ready = [\"sh leave.sh 7\"]\n\
         [hooks.host]\non_iteration_start = [\"{check} hook\"]\non_iteration_end = [\"{check} prompt-command\"]\n",
        check = check.display()
    );
    let script = "cat >/dev/null; echo '<promise>COMPLETE</promise>'";
    let manifest = sandbox.manifest(&env, script, "").replace("prompt = \"go\"\n", &extra);
    let path = env.write_manifest(&manifest);
    let mut command = sandbox.command(&env, &["run", path.to_str().unwrap(), "--json"]);
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut answered = 0;
    while child.try_wait().unwrap().is_none() {
        for question in ["hook", "prompt-command"] {
            let asked = questions.join(format!("{question}.asked"));
            let answer = questions.join(format!("{question}.answer"));
            if asked.exists() && !answer.exists() {
                let left = marker.alive();
                std::fs::write(&answer, if left.is_empty() { "clean".to_owned() } else { left.join("\n") }).unwrap();
                answered += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let run = Run::from(child.wait_with_output().unwrap());
    run.assert_code(0);
    assert_eq!(answered, 2, "both checks ran");
    assert_eq!(run.stderr.matches("> left").count(), 1, "the hook ran: {}", run.stderr);
    assert!(marker.alive().is_empty());
}

/// Inside its PID namespace the agent sees its own processes: `pgrep` and `pkill` work on them.
/// (The sleeper is looked for until it has exec'd: a moment after `&` it is still a copy of
/// the shell.)
#[test]
fn process_tools_work_inside_the_namespace() {
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\nsleep 1000 &\nsleeper=$!\n\
         for _ in $(seq 200); do found=$(pgrep -f 'sleep 1000') && break; sleep 0.02; done\n\
         echo \"found $found of $sleeper, pid $$\"\n\
         grep SigBlk /proc/$sleeper/status\n\
         pkill -f 'sleep 1000' && wait $sleeper; echo \"pkill: $?\"\necho '<promise>COMPLETE</promise>'",
    );
    let run = env.run_manifest(&crate::support::cli_manifest(&agent, ""), &[]);
    run.assert_code(0);
    let found = run.stderr.lines().find_map(|line| line.split("| found ").nth(1)).unwrap().to_owned();
    let (listed, rest) = found.split_once(" of ").unwrap();
    let (started, pid) = rest.split_once(", pid ").unwrap();
    assert_eq!(listed, started, "pgrep finds the sleeper by the pid the shell knows");
    assert!(pid.parse::<u32>().unwrap() > 2, "pids start at a random place, so `$$` differs between runs: {pid}");
    assert!(
        run.stderr.contains("| SigBlk:\t0000000000000000"),
        "programs start with no signal blocked: {}",
        run.stderr
    );
    assert!(run.stderr.contains("| pkill: 143"), "pkill ended it: {}", run.stderr);
}

macro_rules! containment_tests {
    ($name:ident, $sandbox:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn after_a_normal_exit() {
                nothing_outlives_the_run($sandbox, End::Exit);
            }
            #[test]
            fn after_sigint() {
                nothing_outlives_the_run($sandbox, End::Signal(Signal::SIGINT));
            }
            #[test]
            fn after_sigterm() {
                nothing_outlives_the_run($sandbox, End::Signal(Signal::SIGTERM));
            }
            #[test]
            fn after_an_idle_timeout() {
                nothing_outlives_the_run($sandbox, End::IdleTimeout);
            }
            #[test]
            fn hooks_and_prompt_commands() {
                hooks_and_prompt_commands_leave_nothing($sandbox);
            }
        }
    };
}

containment_tests!(none, Sandbox::None);
containment_tests!(subreaper, Sandbox::Subreaper);
containment_tests!(docker, Sandbox::Docker);
containment_tests!(podman, Sandbox::Podman);
containment_tests!(isolated, Sandbox::Isolated);

// A SIGKILLed eden can clean up nothing itself: the kernel (PID namespace, bubblewrap) or the
// container's guard must. The subreaper fallback cannot, which is why it is the fallback.
#[test]
fn none_after_eden_is_killed() {
    nothing_outlives_the_run(Sandbox::None, End::KillEden);
}
#[test]
fn docker_after_eden_is_killed() {
    nothing_outlives_the_run(Sandbox::Docker, End::KillEden);
}
#[test]
fn podman_after_eden_is_killed() {
    nothing_outlives_the_run(Sandbox::Podman, End::KillEden);
}
#[test]
fn isolated_after_eden_is_killed() {
    nothing_outlives_the_run(Sandbox::Isolated, End::KillEden);
}

#[test]
fn the_mechanism_is_in_the_dry_run_and_the_record() {
    let env = TestEnv::new();
    let run = env.eden(&["run", "--agent", "simulated", "--prompt", "hi", "--dry-run"]);
    run.assert_code(0);
    let plan: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(plan["containment"], "pid-namespace");
    let run = env.eden(&["run", "--agent", "simulated", "--prompt", "hi", "--json"]);
    assert_eq!(run.record()["containment"], "pid-namespace");
    let mut forced = env.eden_command(&["run", "--agent", "simulated", "--prompt", "hi", "--json"]);
    forced.env("EDEN_CONTAINMENT", "subreaper");
    assert_eq!(Run::from(forced.output().unwrap()).record()["containment"], "subreaper");
    let mut wrong = env.eden_command(&["run", "--agent", "simulated", "--prompt", "hi"]);
    wrong.env("EDEN_CONTAINMENT", "cgroups");
    let run = Run::from(wrong.output().unwrap());
    run.assert_code(2);
    insta::assert_snapshot!(run.error_text(), @r"
    error: `EDEN_CONTAINMENT=cgroups` is not a containment mechanism
    hint: use `pid-namespace` or `subreaper`, or unset `EDEN_CONTAINMENT` to let eden choose
    ");
}

/// Without root, eden's init makes its PID namespace inside a user namespace that maps the
/// user's own uid: same guarantee, same uid for the files the agent writes.
#[test]
fn an_unprivileged_user_gets_a_namespace_too() {
    if !nix::unistd::getuid().is_root() {
        crate::support::skip("switching to an unprivileged user needs root");
        return;
    }
    let marker = Marker::new();
    let script = format!(
        "A=300.; setsid sleep $A{} >/dev/null 2>&1 & echo \"uid $(id -u), pid $$, $(ls /proc | grep -c '^[0-9]') processes\"",
        marker.digits()
    );
    let output = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", crate::support::EDEN, "__eden-init", "sh", "-c"])
        .arg(&script)
        .current_dir("/")
        .output()
        .expect("setpriv (util-linux) runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(said.starts_with("uid 65534, pid "), "{said}");
    let processes: usize = said.trim_end().rsplit(", ").next().unwrap().trim_end_matches(" processes").parse().unwrap();
    assert!(processes <= 8, "its own /proc shows only the namespace (init, shell, sleeper, `ls`, ...): {said}");
    let left = marker.gone_within(Duration::from_secs(2));
    assert!(left.is_empty(), "the sleeper outlived the command: {left:?}");
}
