//! `eden steer RUN PROMPT`: a live run's agent interrupted, its next iteration given the prompt.

use crate::containers::{ready, IMAGE};
use crate::support::{wait_for, Run, TestEnv};
use std::time::{Duration, Instant};

/// An agent that, given the steered prompt, writes it and commits; otherwise touches `ready`
/// and sleeps.
pub fn manifest(ready: &std::path::Path, sandbox: &str) -> String {
    let ready = ready.display();
    format!(
        "name = \"steer\"\nprompt = \"the first prompt\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\n\
         args = [\"-c\", \"p=$(cat); case \\\"$p\\\" in *STEERED*) echo \\\"$p\\\" > got.txt; git add got.txt; git -c user.name=a -c user.email=a@b commit -qm steered; echo '<promise>COMPLETE</promise>';; *) touch {ready}/ready; echo working; sleep 300;; esac\"]\n\
         {sandbox}\n[loop]\nmax_iterations = 1\n"
    )
}

/// When the last steer was sent (wall clock, to compare with the record's times).
static SENT_AT: std::sync::Mutex<Option<std::time::SystemTime>> = std::sync::Mutex::new(None);

/// Start the run, wait for its agent, steer it; the run's result and how long it took from the
/// steer to its end.
fn steered(env: &TestEnv, manifest: &str, shared: &std::path::Path, which: &str) -> (Run, Duration) {
    let path = env.write_manifest(manifest);
    let child = env
        .eden_command(&["run", path.to_str().unwrap(), "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&shared.join("ready"));
    let sent = Instant::now();
    *SENT_AT.lock().unwrap() = Some(std::time::SystemTime::now());
    let steer = env.eden(&["steer", which, "STEERED: write it down instead"]);
    steer.assert_code(0);
    assert!(steer.stderr.contains("its agent is interrupted"), "{}", steer.stderr);
    let run = Run::from(child.wait_with_output().unwrap());
    (run, sent.elapsed())
}

pub fn assert_steered(env: &TestEnv, run: &Run, took: Duration) {
    run.assert_code(0);
    let record = run.json();
    let iterations = record["iterations"].as_array().unwrap();
    assert_eq!(iterations[0]["outcome"], "steered", "{}", run.stderr);
    // The agent cannot resume its session: the new one gets the task first, then the steer.
    assert_eq!(iterations[1]["prompt"], "the first prompt\n\nSTEERED: write it down instead");
    assert_eq!(iterations[1]["outcome"], "completed");
    // Not the sleep: the agent was interrupted (the bound is loose on purpose).
    assert!(took < Duration::from_secs(60), "{took:?}");
    assert_eq!(
        std::fs::read_to_string(env.repo.join("got.txt")).unwrap(),
        "the first prompt\n\nSTEERED: write it down instead\n"
    );
    assert!(run.stderr.contains("a new one starts with the task and the new prompt after it"), "{}", run.stderr);
    assert!(run.stderr.contains("iteration 1 finished: steered"), "{}", run.stderr);
    let shown = env.eden(&["sessions", "show", "last", "--no-pager"]);
    assert!(shown.stdout.contains("steered"), "{}", shown.stdout);
}

#[test]
fn a_sleeping_agent_is_steered() {
    let env = TestEnv::new();
    let shared = env.root().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let (run, took) = steered(&env, &manifest(&shared, ""), &shared, "last");
    let sent_at = SENT_AT.lock().unwrap().unwrap();
    assert_steered(&env, &run, took);
    // The next iteration began within a second of the steer.
    let started = run.json()["iterations"][1]["started_at"].as_str().unwrap().to_owned();
    let started = humantime::parse_rfc3339(&started).unwrap();
    let after = started.duration_since(sent_at).unwrap_or_default();
    assert!(after < Duration::from_secs(1), "{after:?}");
    // Over: nothing to steer.
    let late = env.eden(&["steer", "last", "more"]);
    late.assert_code(2);
    assert!(late.stderr.contains("is not running, so there is nothing to steer"), "{}", late.stderr);
    let nobody = env.eden(&["steer", "nope", "more"]);
    nobody.assert_code(2);
}

#[test]
fn a_container_agent_is_steered() {
    for engine in ["docker", "podman"] {
        if !ready(engine) {
            return;
        }
        let env = TestEnv::new();
        let shared = env.root().join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        let sandbox = format!(
            "[sandbox]\nkind = \"{engine}\"\nimage = \"{IMAGE}\"\nnetwork = \"none\"\nmounts = [{{ host = \"{}\", sandbox = \"{}\" }}]",
            shared.display(),
            shared.display()
        );
        let (run, took) = steered(&env, &manifest(&shared, &sandbox), &shared, "last");
        assert_steered(&env, &run, took);
    }
}

/// Of two runs at once, the one named is steered; the other goes on as it was.
#[test]
fn one_of_several_runs_is_steered() {
    let env = TestEnv::new();
    let (one, two) = (env.root().join("one"), env.root().join("two"));
    std::fs::create_dir_all(&one).unwrap();
    std::fs::create_dir_all(&two).unwrap();
    let first = env.write("one.toml", &manifest(&one, "").replace("name = \"steer\"", "name = \"one\""));
    let second = env.write(
        "two.toml",
        &manifest(&two, "").replace("name = \"steer\"", "name = \"two\"").replace("sleep 300", "sleep 3"),
    );
    let child = env
        .eden_command(&["run", first.to_str().unwrap(), second.to_str().unwrap(), "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&one.join("ready"));
    wait_for(&two.join("ready"));
    let runs = std::fs::read_dir(env.repo.join(".eden/runs")).unwrap();
    let id_of_one = runs
        .flatten()
        .map(|entry| std::fs::read_to_string(entry.path()).unwrap())
        .filter_map(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .find(|record| record["name"] == "one")
        .map(|record| record["id"].as_str().unwrap().to_owned())
        .unwrap();
    env.eden(&["steer", &id_of_one, "STEERED: write it down instead"]).assert_code(0);
    let run = Run::from(child.wait_with_output().unwrap());
    let records = run.json();
    let by_name = |name: &str| records.as_array().unwrap().iter().find(|r| r["name"] == name).unwrap().clone();
    assert_eq!(by_name("one")["iterations"][0]["outcome"], "steered", "{}", run.stderr);
    assert_eq!(by_name("one")["exit_code"], 0);
    assert_eq!(by_name("two")["iterations"].as_array().unwrap().len(), 1, "two was not steered");
    assert_ne!(by_name("two")["iterations"][0]["outcome"], "steered");
}

/// The real Claude Code, busy in a 30-second shell call, is steered: the next iteration has
/// the new prompt and resumes the same session.
#[test]
fn the_real_claude_code_is_steered_in_its_session() {
    let Some(_) = crate::real_agents::require("claude") else { return };
    let env = TestEnv::new();
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    server.stats.costly_slow_turn.store(true, std::sync::atomic::Ordering::SeqCst);
    let manifest = env.write_manifest(
        "name = \"busy\"\nprompt = \"work\"\n[agent]\nkind = \"claude-code\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"120s\"\n",
    );
    let mut command = env.eden_command(&["run", manifest.to_str().unwrap(), "--json"]);
    command.envs(crate::real_agents::claude_env(&env, &server));
    let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // Its first turn asked for the slow call: it is busy.
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.stats.requests.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "claude never asked");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    server.stats.costly_slow_turn.store(false, std::sync::atomic::Ordering::SeqCst);
    let mut steer = env.eden_command(&["steer", "last", "create hello.txt and commit it"]);
    let steer = Run::from(steer.output().unwrap());
    steer.assert_code(0);
    let run = Run::from(child.wait_with_output().unwrap());
    let record = run.json();
    let iterations = record["iterations"].as_array().unwrap();
    assert_eq!(iterations[0]["outcome"], "steered", "{}", run.stderr);
    assert_eq!(iterations[1]["prompt"], "create hello.txt and commit it");
    let session = iterations[0]["session_id"].as_str().expect("a session");
    assert_eq!(iterations[1]["session_id"], session, "the same session: {}", run.stderr);
    assert!(run.stderr.contains(&format!("in session `{session}`")), "{}", run.stderr);
}

#[test]
fn an_isolated_agent_is_steered() {
    if !crate::isolated::bwrap() {
        return;
    }
    let env = TestEnv::new();
    let shared = env.root().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let sandbox = format!(
        "[sandbox]\nkind = \"isolated\"\nmounts = [{{ host = \"{}\", sandbox = \"{}\" }}]",
        shared.display(),
        shared.display()
    );
    let (run, took) = steered(&env, &manifest(&shared, &sandbox), &shared, "last");
    assert_steered(&env, &run, took);
}
