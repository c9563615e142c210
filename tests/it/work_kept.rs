//! Every stop keeps what the agent committed, in every sandbox kind: Ctrl-C, SIGTERM and a step
//! timeout after a commit (and nothing else left behind: no dirty file keeps the worktree, so
//! the branch is kept only because it holds the commit) in docker, podman, an isolated copy, a
//! remote engine and a pod. The commit reached the sandbox's repository; the stop must bring it
//! home and keep it on the run's branch, and the record and the summary must say so.

use crate::support::{Run, TestEnv};
use nix::sys::signal::Signal;
use std::path::Path;
use std::time::{Duration, Instant};

/// Commits, says so (the word is made when it runs, so the command line never shows it), then
/// waits to be stopped.
const COMMIT_THEN_WAIT: &str = "echo kept > kept.txt && git add kept.txt && \
    git -c user.name=box -c user.email=box@example.com commit -qm 'kept on stop' && echo committed-$((40+2)); sleep 300";

#[derive(Clone, Copy)]
enum Kind {
    Docker,
    Podman,
    Isolated,
    Remote,
    Pod,
}

#[derive(Clone, Copy)]
enum Stop {
    Signal(Signal),
    /// `timeouts.iteration_step`.
    Timeout,
}

/// A manifest, and what eden needs in its environment and on its command line.
type Setup = (String, Vec<(String, String)>, Vec<String>);

impl Kind {
    /// The manifest and what goes with it; `None` (the test skipped with a note) where this
    /// machine lacks the kind.
    fn setup(self) -> Option<Setup> {
        let quoted = COMMIT_THEN_WAIT.replace('\\', "\\\\").replace('"', "\\\"");
        let agent = format!(
            "name = \"stop\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"cat >/dev/null; {quoted}\"]\n\
             [loop]\nmax_iterations = 1\nidle_timeout = \"10m\"\n"
        );
        let image = crate::containers::IMAGE;
        Some(match self {
            Kind::Docker | Kind::Podman => {
                let engine = if matches!(self, Kind::Docker) { "docker" } else { "podman" };
                if !crate::containers::ready(engine) {
                    return None;
                }
                (format!("{agent}[sandbox]\nkind = \"{engine}\"\nimage = \"{image}\"\n"), Vec::new(), Vec::new())
            }
            Kind::Isolated => {
                if !crate::isolated::bwrap() {
                    return None;
                }
                (format!("{agent}[sandbox]\nkind = \"isolated\"\n"), Vec::new(), Vec::new())
            }
            Kind::Remote => {
                let engines = crate::remote_engines::engines()?;
                let sandbox = format!("[sandbox]\nkind = \"docker\"\nimage = \"{image}\"\nnetwork = \"bridge\"\n");
                (format!("{agent}{sandbox}"), engines.tls_env(), vec!["--host".into(), engines.hosts[0].docker.clone()])
            }
            Kind::Pod => {
                let cluster = crate::kubernetes::cluster()?;
                let sandbox =
                    format!("[sandbox]\nkind = \"kubernetes\"\nimage = \"{image}\"\nimage_pull_policy = \"Never\"\n");
                (format!("{agent}{sandbox}"), cluster.env("admin"), Vec::new())
            }
        })
    }
}

/// Has the agent said `committed-42`? Read from the run's log, the same for every kind.
fn said_committed(repo: &Path) -> bool {
    let Ok(logs) = std::fs::read_dir(repo.join(".eden/logs")) else { return false };
    logs.flatten().any(|log| std::fs::read_to_string(log.path()).is_ok_and(|text| text.contains("committed-42")))
}

fn stop_keeps_the_commit(kind: Kind, stop: Stop) {
    let Some((manifest, vars, args)) = kind.setup() else { return };
    let env = TestEnv::new();
    let manifest = match stop {
        Stop::Timeout => manifest.replace("[loop]", "[timeouts]\niteration_step = \"8s\"\n[loop]"),
        Stop::Signal(_) => manifest,
    };
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.args(&args).envs(vars).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let child = command.spawn().unwrap();
    if let Stop::Signal(signal) = stop {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !said_committed(&env.repo) {
            assert!(Instant::now() < deadline, "the agent never committed");
            std::thread::sleep(Duration::from_millis(50));
        }
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    }
    let run = Run::from(child.wait_with_output().unwrap());
    run.assert_code(match stop {
        Stop::Signal(signal) => 128 + signal as i32,
        Stop::Timeout => 4,
    });
    let record = run.record();
    let branch = record["branch"].as_str().unwrap();
    assert_eq!(record["preserved_branch"], branch, "{}", run.stderr);
    assert_eq!(env.log_subjects(branch)[0], "kept on stop", "{}", run.stderr);
    assert_eq!(record["commits"][0]["subject"], "kept on stop", "{record:#}");
    assert!(record["preserved_worktree"].is_null(), "nothing was left uncommitted: {}", run.stderr);
    assert_eq!(env.log_subjects("main"), ["initial commit"], "a stopped run is not merged");
    // The summary and the hint say where the work is.
    assert!(run.stderr.contains(&format!("1 commit(s) on `{branch}`")), "{}", run.stderr);
    assert!(
        run.error_text().contains(&format!("what it committed is kept on `{branch}` (1 commit(s))")),
        "{}",
        run.error_text()
    );
}

macro_rules! stops {
    ($($name:ident: $kind:expr;)*) => {
        $(
            mod $name {
                use super::{stop_keeps_the_commit, Kind, Stop};
                use nix::sys::signal::Signal;

                #[test]
                fn ctrl_c_keeps_the_commit() {
                    stop_keeps_the_commit($kind, Stop::Signal(Signal::SIGINT));
                }

                #[test]
                fn sigterm_keeps_the_commit() {
                    stop_keeps_the_commit($kind, Stop::Signal(Signal::SIGTERM));
                }

                #[test]
                fn a_timeout_keeps_the_commit() {
                    stop_keeps_the_commit($kind, Stop::Timeout);
                }
            }
        )*
    };
}

stops! {
    docker: Kind::Docker;
    podman: Kind::Podman;
    isolated: Kind::Isolated;
    remote: Kind::Remote;
    pod: Kind::Pod;
}

/// Of two attempts in docker, the second commits and waits; the first lands a few seconds
/// later and the second is stopped: its commit is kept on its branch, and it says so.
#[test]
fn an_attempt_stopped_by_another_keeps_its_commit() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let script = "read -r prompt; n=${prompt##* }; [ $n = 1 ] && sleep 4; echo $n > attempt.txt && git add attempt.txt && \
        git -c user.name=a -c user.email=a@e commit -qm \\\"attempt $n\\\"; [ $n = 1 ] && echo '<promise>COMPLETE</promise>'; [ $n = 1 ] || sleep 300";
    let manifest = format!(
        "name = \"try\"\nprompt = \"attempt {{{{ATTEMPT}}}}\"\nattempts = 2\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"{script}\"]\n\
         [sandbox]\nkind = \"docker\"\nimage = \"{}\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"10m\"\n",
        crate::containers::IMAGE
    );
    let path = env.write_manifest(&manifest);
    let run = env.eden(&["run", path.to_str().unwrap(), "--json"]);
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "attempt 1", "{}", run.stderr);
    let mut attempts = run.json().as_array().unwrap().clone();
    attempts.sort_by_key(|entry| entry["attempt"]["number"].as_u64());
    let stopped = &attempts[1];
    assert_eq!(stopped["error"]["message"], "stopped: another attempt landed first", "{stopped:#}");
    let branch = stopped["preserved_branch"].as_str().unwrap_or_else(|| panic!("{stopped:#}\n{}", run.stderr));
    assert_eq!(env.log_subjects(branch)[0], "attempt 2");
    assert_eq!(stopped["commits"][0]["subject"], "attempt 2");
    let hint = stopped["error"]["hint"].as_str().unwrap();
    assert!(hint.contains(&format!("what it committed is kept on `{branch}`")), "{hint}");
}
