//! `[[check]]`s: run after the completion signal (and after every iteration for those that
//! say so), their failures back to the agent in the next prompt, nothing merged until they
//! pass, exit 9 when the iterations run out. Timeouts, secrets and Ctrl-C as for hooks.

use crate::model_server::{ModelServer, CHECKS_FAILED};
use crate::support::{cli_manifest, interrupt, Run, TestEnv};
use nix::sys::signal::Signal;

/// The prompts the run's log shows, by iteration.
fn prompts(env: &TestEnv) -> Vec<String> {
    let log = std::fs::read_dir(env.repo.join(".eden/logs")).unwrap().flatten().next().unwrap().path();
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["event"] == "prompt")
        .map(|event| event["text"].as_str().unwrap().to_owned())
        .collect()
}

/// The real Claude Code: its first try fails the check; the prompt of the second iteration
/// carries the failure, the scripted server answers it with a fix, and the run merges.
#[test]
fn a_failing_check_goes_back_to_claude_which_fixes_it() {
    let Some(_) = crate::real_agents::require("claude") else { return };
    let env = TestEnv::new();
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let manifest = "name = \"checked\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n\
                    [loop]\nmax_iterations = 3\n[[check]]\nname = \"says-fixed\"\n\
                    cmd = \"grep -q fixed hello.txt || { echo 'hello.txt: expected the word fixed'; exit 1; }\"\n";
    let path = env.write_manifest(manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(crate::real_agents::claude_env(&env, &server));
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[..2], ["fix hello.txt", "add hello.txt"]);
    let record = run.record();
    assert_eq!(record["exit_reason"], "completed");
    let checks = record["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2, "{checks:#?}");
    assert_eq!((checks[0]["iteration"].as_u64(), checks[0]["outcome"].as_str()), (Some(1), Some("failed")));
    assert_eq!(checks[0]["exit_code"], 1);
    assert_eq!(checks[0]["output_tail"], "hello.txt: expected the word fixed");
    assert_eq!((checks[1]["iteration"].as_u64(), checks[1]["outcome"].as_str()), (Some(2), Some("ok")));
    let prompts = prompts(&env);
    assert!(!prompts[0].contains(CHECKS_FAILED));
    assert!(prompts[1].starts_with("create hello.txt and commit it\n\n"), "appended: {}", prompts[1]);
    assert!(prompts[1].contains("### says-fixed: `grep -q fixed hello.txt"), "{}", prompts[1]);
    assert!(prompts[1].contains("hello.txt: expected the word fixed"), "{}", prompts[1]);
    let shown = env.eden(&["sessions", "show", "last"]);
    assert!(shown.stdout.contains("check says-fixed: grep -q fixed"), "{}", shown.stdout);
}

/// An agent that commits and says it is done every time, against a check that never passes.
fn stubborn_agent(env: &TestEnv) -> std::path::PathBuf {
    env.script(
        "agent.sh",
        "cat >/dev/null\necho work >> work.txt && git add work.txt && git commit -qm work\necho '<promise>COMPLETE</promise>'",
    )
}

#[test]
fn checks_that_still_fail_end_the_run_with_9_and_keep_the_branch() {
    let env = TestEnv::new();
    let agent = stubborn_agent(&env);
    let checks = "[loop]\nmax_iterations = 2\n[[check]]\nname = \"lint\"\ncmd = \"echo 'still broken' >&2; exit 2\"\n\
                  [[check]]\nname = \"unit\"\ncmd = \"true\"\n";
    let path = env.write_manifest(&cli_manifest(&agent, checks));
    let run = Run::from(env.eden_command(&["run", path.to_str().unwrap(), "--json-events"]).output().unwrap());
    run.assert_code(9);
    assert!(
        run.stderr.contains("the checks `lint` still failed after 2 iteration(s); nothing was merged"),
        "{}",
        run.stderr
    );
    let events: Vec<serde_json::Value> = run.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let finished: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["event"] == "check_finished")
        .map(|e| (e["name"].as_str().unwrap(), e["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(finished, [("lint", "failed"), ("unit", "ok"), ("lint", "failed"), ("unit", "ok")]);
    assert!(events.iter().any(|e| e["event"] == "check_started" && e["command"] == "true"));
    let record = env.last_record();
    assert_eq!(record["exit_reason"], "checks_failed");
    assert_eq!(record["exit_code"], 9);
    assert_eq!(record["checks"][0]["output_tail"], "(stderr)\nstill broken");
    assert!(record["merged_into"].is_null());
    let kept = record["preserved_branch"].as_str().unwrap();
    assert_eq!(env.log_subjects(kept)[..2], ["work", "work"]);
    // The hint names this run (of several, `last` may be another) and what to do with its branch.
    let id = record["id"].as_str().unwrap();
    for said in [
        format!("`{kept}` is kept"),
        format!("`eden diff {id}`"),
        format!("`eden merge {id}`"),
        format!("`eden discard {id}`"),
    ] {
        assert!(run.stderr.contains(&said), "{said}: {}", run.stderr);
    }
    assert!(!env.log_subjects("main").contains(&"work".to_owned()), "nothing merged");
    // Only the failing check is reported to the agent.
    let prompts = prompts(&env);
    assert!(prompts[1].contains("### lint: `echo 'still broken' >&2; exit 2` (exit code 2)"), "{}", prompts[1]);
    assert!(!prompts[1].contains("### unit"), "{}", prompts[1]);
}

/// `every_iteration` checks run without the completion signal; the prompt places the failures
/// where it says `{{CHECK_FAILURES}}`; with `require_completion = false` every check runs before
/// the run ends and merges.
#[test]
fn every_iteration_checks_and_a_placed_failure_text() {
    let env = TestEnv::new();
    let flag = env.root().join("flag");
    let agent = env.script("agent.sh", "cat >/dev/null\necho working");
    let manifest = format!(
        "name = \"t\"\nprompt = \"BEFORE\\n{{{{CHECK_FAILURES}}}}\\nAFTER\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n\
         [loop]\nmax_iterations = 2\nrequire_completion = false\n\
         [[check]]\nname = \"second-time\"\nevery_iteration = true\ncmd = \"test -f '{}' || {{ touch '{}'; echo first; exit 1; }}\"\n\
         [[check]]\nname = \"at-the-end\"\ncmd = \"echo $EDEN_CHECK $EDEN_ITERATION\"\n",
        agent.display(),
        flag.display(),
        flag.display()
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    let record = run.record();
    let ran: Vec<(String, u64, String)> = record["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["iteration"].as_u64().unwrap(),
                c["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        ran,
        [
            ("second-time".into(), 1, "failed".into()),
            ("second-time".into(), 2, "ok".into()),
            ("at-the-end".into(), 2, "ok".into())
        ]
    );
    let prompts = prompts(&env);
    assert_eq!(prompts[0], "BEFORE\n\nAFTER");
    assert!(prompts[1].starts_with(&format!("BEFORE\n{CHECKS_FAILED}")), "{}", prompts[1]);
    assert!(prompts[1].ends_with("signal completion again.\nAFTER"), "{}", prompts[1]);
    assert!(run.stderr.contains("> at-the-end 2"), "the check sees EDEN_CHECK and EDEN_ITERATION: {}", run.stderr);
}

/// A check over its timeout is stopped and reported as such; what it printed reaches the record
/// and the agent with secrets redacted.
#[test]
fn a_slow_check_times_out_and_its_output_keeps_secrets_out() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.repo.join(".eden")).unwrap();
    std::fs::write(env.repo.join(".eden/.env"), "CHECK_TOKEN=check-secret-4711-value\n").unwrap();
    let agent = stubborn_agent(&env);
    let checks = "[loop]\nmax_iterations = 2\n[[check]]\nname = \"slow\"\ntimeout = \"1s\"\n\
                  cmd = \"echo token is $CHECK_TOKEN; sleep 30\"\n";
    let run = env.run_manifest(&cli_manifest(&agent, checks), &[]);
    run.assert_code(9);
    let record = run.record();
    assert_eq!(record["checks"][0]["outcome"], "timeout");
    assert_eq!(record["checks"][0]["output_tail"], "token is ***");
    let prompts = prompts(&env);
    assert!(
        prompts[1].contains("### slow: `echo token is $CHECK_TOKEN; sleep 30` (stopped after 1s)"),
        "{}",
        prompts[1]
    );
    assert!(!prompts[1].contains("check-secret-4711-value"), "{}", prompts[1]);
    let log = std::fs::read_dir(env.repo.join(".eden/logs")).unwrap().flatten().next().unwrap().path();
    assert!(!std::fs::read_to_string(log).unwrap().contains("check-secret-4711-value"));
    assert!(!run.stdout.contains("check-secret-4711-value") && !run.stderr.contains("check-secret-4711-value"));
}

/// Ctrl-C during a check stops it and the run (130), and leaves none of its processes.
#[test]
fn ctrl_c_stops_a_running_check() {
    let env = TestEnv::new();
    let ready = env.root().join("ready");
    let marker = crate::support::Marker::new();
    let agent = stubborn_agent(&env);
    let checks =
        format!("[[check]]\nname = \"long\"\ncmd = \"touch '{}'; {} & wait\"\n", ready.display(), marker.sleep());
    let (run, _) = interrupt(&env, &cli_manifest(&agent, &checks), &ready, &[Signal::SIGINT]);
    run.assert_code(130);
    let left = marker.gone_within(std::time::Duration::from_secs(5));
    assert!(left.is_empty(), "the check's processes were stopped: {left:?}");
    let record = env.last_record();
    assert_eq!(record["checks"][0]["outcome"].as_str(), None, "an interrupted check ends the run: {record:#}");
}

/// The checks run where the agent does: in the container.
#[test]
fn checks_run_in_the_sandbox() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    // A file of this machine's that the container is not given.
    let here = env.root().join("only-on-the-host");
    std::fs::write(&here, "").unwrap();
    let manifest = format!(
        "name = \"sim\"\nprompt = \"hi\"\n[agent]\nkind = \"simulated\"\n[sandbox]\nkind = \"docker\"\nimage = \"{}\"\n\
         [[check]]\nname = \"inside\"\ncmd = \"test ! -e '{}'\"\n",
        crate::containers::IMAGE,
        here.display()
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    assert_eq!(run.record()["checks"][0]["outcome"], "ok");
    // The same check on the host fails: it proves where it ran.
    let on_host =
        manifest.replace(&format!("[sandbox]\nkind = \"docker\"\nimage = \"{}\"\n", crate::containers::IMAGE), "");
    let host = env.run_manifest(&on_host, &[]);
    host.assert_code(9);
}

#[test]
fn bad_checks_are_refused_at_load() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null");
    for (checks, message) in [
        ("[[check]]\ncmd = \"  \"\n", "a check's `cmd` is empty"),
        (
            "[[check]]\nname = \"a\"\ncmd = \"true\"\n[[check]]\nname = \"a\"\ncmd = \"true\"\n",
            "two checks are named `a`",
        ),
        ("[[check]]\ncmd = \"true\"\ncwd = \"../elsewhere\"\n", "must be inside the worktree"),
        ("[[check]]\ncmd = \"true\"\nname = \"a b\"\n", "invalid check name `a b`"),
        ("[[check]]\ncmd = \"true\"\nevery = true\n", "unknown key `every`"),
        ("[[check]]\nname = \"x\"\n", "missing field `cmd`"),
    ] {
        let run = env.run_manifest(&cli_manifest(&agent, checks), &[]);
        run.assert_code(2);
        assert!(run.stderr.contains(message), "{checks}: {}", run.stderr);
        assert!(run.stderr.contains("plan.toml:"), "the file and line: {}", run.stderr);
        env.assert_pristine();
    }
}

/// A step's own `[[step.check]]`s replace the top-level ones for that step.
#[test]
fn a_steps_own_checks_replace_the_top_level_ones() {
    let env = TestEnv::new();
    let agent = stubborn_agent(&env);
    let manifest = format!(
        "name = \"t\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n[loop]\nmax_iterations = 1\n\
         [[check]]\nname = \"top\"\ncmd = \"false\"\n\
         [[step]]\nname = \"own\"\n[[step.check]]\nname = \"mine\"\ncmd = \"true\"\n\
         [[step]]\nname = \"inherits\"\n",
        agent.display()
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(9);
    let record = run.record();
    let ran: Vec<(&str, &str, &str)> = record["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["step"].as_str().unwrap(), c["name"].as_str().unwrap(), c["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(ran, [("own", "mine", "ok"), ("inherits", "top", "failed")]);
}

/// An interactive session has no loop to feed failures back into: its checks are said not to
/// run, and do not.
#[test]
fn an_interactive_session_says_its_checks_do_not_run() {
    let env = TestEnv::new();
    let path = env.write_manifest(
        "name = \"i\"\nprompt = \"\"\n[agent]\nkind = \"cli\"\nbinary = \"bash\"\n[[check]]\nname = \"never\"\ncmd = \"false\"\n",
    );
    let mut command = env.eden_command(&["interactive", path.to_str().unwrap(), "--no-tty", "--json"]);
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"exit 0\n").unwrap();
    }
    let run = Run::from(child.wait_with_output().unwrap());
    run.assert_code(0);
    assert!(run.stderr.contains("the `[[check]]`s (you decide what merges)"), "{}", run.stderr);
    assert_eq!(run.record()["checks"], serde_json::json!([]));
}

/// A check whose program is missing where it runs (`cargo` in an image without Rust; a name no
/// machine has) stops the run at once with exit 6, naming the program, instead of going back to
/// the agent as a failure it cannot fix: one iteration, one prompt, the branch kept.
#[test]
fn a_check_that_cannot_run_stops_the_run_with_6() {
    let env = TestEnv::new();
    let agent = stubborn_agent(&env);
    let checks = "[loop]\nmax_iterations = 3\n[[check]]\nname = \"build\"\ncmd = \"no-such-tool-eden --all\"\n";
    let path = env.write_manifest(&cli_manifest(&agent, checks));
    let run = Run::from(env.eden_command(&["run", path.to_str().unwrap()]).output().unwrap());
    run.assert_code(6);
    assert!(
        run.stderr.contains("the check `build` cannot run on this machine: `no-such-tool-eden` not found, exit 127"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint: install `no-such-tool-eden` on this machine"), "{}", run.stderr);
    assert_eq!(prompts(&env).len(), 1, "the agent was not sent after it");
    let record = env.last_record();
    assert_eq!(record["checks"][0]["exit_code"], 127);
    assert!(record["preserved_branch"].is_string() && record["merged_into"].is_null());

    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let manifest = format!(
        "name = \"sim\"\nprompt = \"hi\"\n[agent]\nkind = \"simulated\"\n[sandbox]\nkind = \"docker\"\nimage = \"{}\"\n\
         [[check]]\nname = \"test\"\ncmd = \"cargo test\"\n",
        crate::containers::IMAGE,
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(6);
    assert!(
        run.stderr.contains("the check `test` cannot run in the docker sandbox: `cargo` not found"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("add it to the image"), "{}", run.stderr);
    assert_eq!(run.record()["checks"][0]["exit_code"], 127);
}

/// An agent that commits nothing and checks that fail: no branch is kept, and the hint says so
/// instead of pointing at one.
#[test]
fn failed_checks_with_nothing_committed_keep_no_branch_and_say_so() {
    let env = TestEnv::new();
    let agent = env.script("idle.sh", "cat >/dev/null\necho '<promise>COMPLETE</promise>'");
    let checks = "[loop]\nmax_iterations = 1\n[[check]]\nname = \"lint\"\ncmd = \"exit 1\"\n";
    let path = env.write_manifest(&cli_manifest(&agent, checks));
    let run = Run::from(env.eden_command(&["run", path.to_str().unwrap()]).output().unwrap());
    run.assert_code(9);
    let record = env.last_record();
    assert!(record["preserved_branch"].is_null(), "{record:#}");
    let said = format!(
        "the agent committed nothing, so no branch is kept: see the failures with `eden sessions show {}`",
        record["id"].as_str().unwrap()
    );
    assert!(run.stderr.contains(&said), "{}", run.stderr);
}

/// A check that writes reports (`junit.xml`, `report/out.txt` through a redirection) is the
/// check's doing: a good run still merges (no `uncommitted_work`), the reports are not the
/// agent's leftovers nor files that steer eden, `commit_leftovers` commits none of them, and
/// `artifacts` keeps them. Without a sandbox and in docker.
fn what_a_check_writes_is_the_checks(sandbox: &str) {
    let env = TestEnv::new();
    let agent = "echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@e commit -qm work; echo '<promise>COMPLETE</promise>'";
    let check = "mkdir -p report && echo '<testsuite/>' > junit.xml && test -s work.txt > report/out.txt";
    let sandbox_table = match sandbox {
        "none" => String::new(),
        engine => format!("[sandbox]\nkind = \"{engine}\"\nimage = \"{}\"\n", crate::containers::IMAGE),
    };
    for extra in ["", "[branch]\ncommit_leftovers = true\n"] {
        let manifest = format!(
            "name = \"reports\"\nprompt = \"go\"\nartifacts = [\"junit.xml\"]\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\n\
             args = [\"-c\", \"cat >/dev/null; {agent}\"]\n{sandbox_table}{extra}[loop]\nmax_iterations = 1\n\
             [[check]]\nname = \"tests\"\ncmd = \"{check}\"\n"
        );
        let run = env.run_manifest(&manifest, &[]);
        run.assert_code(0);
        let record = run.record();
        assert_eq!(record["merged_into"], "main", "{extra}: {}", run.stderr);
        assert!(record["preserved_worktree"].is_null(), "{}", run.stderr);
        assert_eq!(record["artifacts"][0]["path"], "junit.xml", "{}", run.stderr);
        let landed = env.git(&["ls-tree", "-r", "--name-only", "main"]);
        assert!(!landed.contains("junit.xml") && !landed.contains("report/"), "{extra}: {landed}");
        env.git(&["reset", "-q", "--hard", "HEAD~1"]);
    }
}

#[test]
fn what_a_check_writes_is_the_checks_without_a_sandbox() {
    what_a_check_writes_is_the_checks("none");
}

#[test]
fn what_a_check_writes_is_the_checks_in_docker() {
    if crate::containers::ready("docker") {
        what_a_check_writes_is_the_checks("docker");
    }
}
