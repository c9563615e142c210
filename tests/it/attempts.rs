//! `--attempts N` / `attempts = N`: several runs of one manifest at once from the same base, the
//! first to pass its checks lands, the others keep their branches (or are stopped).

use crate::support::{Marker, Run, TestEnv};
use std::path::Path;

/// An agent that says which attempt it is (`{{ATTEMPT}}` in its prompt), waits until `want`
/// attempts have started (a barrier in `meeting`, so attempts run one after the other could
/// never pass it), then commits `attempt.txt` and signals completion after `pause` (a shell
/// expression of `$n`, the attempt's number).
fn agent(env: &TestEnv, meeting: &Path, want: usize, pause: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(meeting).unwrap();
    env.script(
        "attempt.sh",
        &format!(
            "read -r prompt; n=${{prompt##* }}; touch '{meeting}'/$n\n\
             for _ in $(seq 600); do [ $(ls '{meeting}' | wc -l) -ge {want} ] && break; sleep 0.05; done\n\
             [ $(ls '{meeting}' | wc -l) -ge {want} ] || {{ echo 'the attempts did not run at once'; exit 1; }}\n\
             sleep {pause}\n\
             echo \"$prompt\" > attempt.txt && git add attempt.txt && git -c user.name=a -c user.email=a@e commit -qm \"$prompt\"\n\
             echo '<promise>COMPLETE</promise>'",
            meeting = meeting.display()
        ),
    )
}

fn manifest(script: &Path, extra: &str, check: &str) -> String {
    format!(
        "name = \"try\"\nprompt = \"attempt {{{{ATTEMPT}}}}\"\n{extra}\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n\
         [loop]\nmax_iterations = 1\nidle_timeout = \"60s\"\n[[check]]\nname = \"wanted\"\ncmd = \"{check}\"\n",
        script.display()
    )
}

fn attempts_of(run: &Run) -> Vec<serde_json::Value> {
    let array = run.json();
    let mut entries = array.as_array().expect("an array of attempts").clone();
    entries.sort_by_key(|entry| entry["attempt"]["number"].as_u64());
    entries
}

/// `--attempts 3`, all three at once (they meet before any commits): only attempt 2 writes what
/// the check wants, and only it lands; the others' branches are kept with their commits; the
/// JSON says which was chosen.
#[test]
fn the_attempt_that_passes_its_checks_lands() {
    let env = TestEnv::new();
    let script = agent(&env, &env.root().join("meeting"), 3, "0");
    let path = env.write_manifest(&manifest(&script, "", "grep -q 'attempt 2' attempt.txt"));
    // As a step of a GitHub Actions job: the outputs name the chosen branch.
    let (summary, output) = (env.root().join("summary.md"), env.root().join("output.txt"));
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--attempts", "3", "--json"]);
    command.env("GITHUB_STEP_SUMMARY", &summary).env("GITHUB_OUTPUT", &output);
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "attempt 2", "{}", run.stderr);
    let attempts = attempts_of(&run);
    assert_eq!(attempts.len(), 3, "{attempts:#?}");
    let chosen: Vec<u64> = attempts
        .iter()
        .filter(|entry| entry["attempt"]["chosen"] == true)
        .map(|entry| entry["attempt"]["number"].as_u64().unwrap())
        .collect();
    assert_eq!(chosen, [2]);
    assert_eq!(attempts[1]["merged_into"], "main");
    let group = attempts[0]["attempt"]["group"].as_str().unwrap();
    for (entry, number) in attempts.iter().zip(1..) {
        assert_eq!(entry["attempt"]["number"], number);
        assert_eq!(entry["attempt"]["of"], 3);
        assert_eq!(entry["attempt"]["group"], group, "one group");
    }
    for lost in [&attempts[0], &attempts[2]] {
        assert_eq!(lost["exit_reason"], "checks_failed", "{lost:#}");
        assert!(lost["merged_into"].is_null());
        let branch = lost["preserved_branch"].as_str().expect("its branch is kept");
        let number = lost["attempt"]["number"].as_u64().unwrap();
        assert_eq!(env.git(&["log", "-1", "--format=%s", branch]).trim(), format!("attempt {number}"));
    }
    assert!(run.stderr.contains("chosen: merged into main"), "the table marks it: {}", run.stderr);
    let outputs = crate::github::read_outputs(&output);
    assert_eq!(outputs["chosen_branch"], attempts[1]["branch"].as_str().unwrap());
    let runs: serde_json::Value = serde_json::from_str(&outputs["runs"]).unwrap();
    assert_eq!(runs.as_array().unwrap().iter().filter(|run| run["chosen"] == true).count(), 1);
    assert!(std::fs::read_to_string(&summary).unwrap().contains("chosen: merged into main"));
    // The kept attempts are runs like any other: their diff by id; the list groups them.
    let loser = attempts[0]["id"].as_str().unwrap();
    let diff = env.eden(&["diff", loser]);
    diff.assert_code(0);
    assert!(diff.stdout.contains("+attempt 1"), "{}", diff.stdout);
    let listed = env.eden(&["sessions", "list"]);
    let names: Vec<&str> = listed.stdout.lines().filter_map(|line| line.split("  ").nth(1)).collect();
    assert!(listed.stdout.contains("try #2 (chosen)"), "{}", listed.stdout);
    assert!(listed.stdout.contains("try #1") && listed.stdout.contains("try #3"), "{names:?}");
    assert_eq!(
        env.worktree_count(),
        1,
        "no worktree left: {}\n{attempts:#?}\n{}",
        env.git(&["worktree", "list"]),
        run.stderr
    );
    assert!(!env
        .repo
        .join(".eden/locks")
        .read_dir()
        .unwrap()
        .any(|entry| { entry.unwrap().file_name().to_string_lossy().starts_with("attempts-") }));
}

/// `attempts = 2` in the manifest, and no attempt passes: exit 9 as for one run, nothing
/// merged, both branches kept.
#[test]
fn when_no_attempt_passes_every_branch_is_kept() {
    let env = TestEnv::new();
    let script = agent(&env, &env.root().join("meeting"), 2, "0");
    let path = env.write_manifest(&manifest(&script, "attempts = 2", "false"));
    let run = env.eden(&["run", path.to_str().unwrap(), "--json"]);
    run.assert_code(9);
    assert_eq!(env.log_subjects("main"), ["initial commit"], "nothing merged: {}", run.stderr);
    let attempts = attempts_of(&run);
    assert_eq!(attempts.len(), 2);
    for entry in &attempts {
        assert_eq!(entry["attempt"]["chosen"], false);
        assert!(entry["preserved_branch"].is_string(), "{entry:#}");
    }
    assert_eq!(env.branches().len(), 3, "main and both attempts' branches: {:?}", env.branches());
}

/// Every attempt passes: the first to finish lands, and the others, still working, are stopped
/// at once (their processes gone), not merged.
#[test]
fn the_first_to_pass_lands_and_the_others_are_stopped() {
    let env = TestEnv::new();
    let marker = Marker::new();
    let digits = marker.digits();
    let script = agent(&env, &env.root().join("meeting"), 3, &format!("$([ $n = 1 ] && echo 0 || echo 300.{digits})"));
    let path = env.write_manifest(&manifest(&script, "attempts = 3", "true"));
    let run = env.eden(&["run", path.to_str().unwrap(), "--json"]);
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "attempt 1", "{}", run.stderr);
    let attempts = attempts_of(&run);
    assert_eq!(attempts[0]["attempt"]["chosen"], true, "{attempts:#?}");
    for stopped in &attempts[1..] {
        assert_eq!(stopped["attempt"]["chosen"], false);
        assert_eq!(stopped["exit_reason"], "interrupted", "{stopped:#}");
        assert_eq!(stopped["error"]["message"], "stopped: another attempt landed first", "{stopped:#}");
        assert!(stopped["merged_into"].is_null());
    }
    assert!(run.stderr.contains("attempt 1 landed: stopping the other attempts"), "{}", run.stderr);
    assert!(marker.gone_within(std::time::Duration::from_secs(5)).is_empty(), "the others' agents are gone");
    assert_eq!(env.worktree_count(), 1);
}

/// What attempts cannot do is refused before anything starts, with the place and a hint.
#[test]
fn bad_attempts_are_refused_before_anything_starts() {
    let env = TestEnv::new();
    let script = env.script("noop.sh", "echo '<promise>COMPLETE</promise>'");
    for (extra, said) in [
        ("attempts = 0", "`attempts = 0`: give a number from 1 to 16"),
        ("attempts = 17", "`attempts = 17`"),
        ("attempts = 2\n[branch]\nstrategy = \"head\"", "strategy `head` shares one"),
        ("attempts = 2\nattempts_pick = \"best\"", "`attempts_pick = \"best\"` needs `attempts_score`"),
        ("attempts = 2\nattempts_score = \"echo 1\"", "`attempts_score` applies to `attempts_pick = \"best\"` only"),
        ("attempts_pick = \"worst\"", "attempts_pick"),
    ] {
        let path = env.write_manifest(&manifest(&script, extra, "true"));
        let run = env.eden(&["run", path.to_str().unwrap()]);
        run.assert_code(2);
        assert!(run.stderr.contains(said) && run.stderr.contains("hint:"), "{extra}: {}", run.stderr);
        assert!(run.stderr.contains("plan.toml:"), "{extra}: the place: {}", run.stderr);
    }
    let path = env.write_manifest(&manifest(&script, "", "true"));
    let path = path.to_str().unwrap();
    for args in [
        vec!["run", path, "--attempts", "0"],
        vec!["run", path, path, "--attempts", "2"],
        vec!["interactive", path, "--attempts", "2", "--no-tty"],
    ] {
        let run = env.eden(&args);
        run.assert_code(2);
        assert!(run.stderr.contains("attempts"), "{args:?}: {}", run.stderr);
    }
    env.assert_pristine();
}

/// `--dry-run` says how the attempt that lands is chosen: with no `[[check]]`, by the
/// completion signal alone.
#[test]
fn the_dry_run_says_how_an_attempt_is_chosen() {
    let env = TestEnv::new();
    let script = env.script("noop.sh", "echo '<promise>COMPLETE</promise>'");
    let manifest = format!(
        "name = \"try\"\nprompt = \"go\"\nattempts = 2\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n",
        script.display()
    );
    let path = env.write_manifest(&manifest);
    let run = env.eden(&["run", path.to_str().unwrap(), "--dry-run"]);
    run.assert_code(0);
    let plans = run.json();
    let plans = plans.as_array().expect("a plan per attempt");
    assert_eq!(plans.len(), 2);
    let attempts = &plans[0]["plan"]["attempts"];
    assert_eq!(attempts["count"], 2, "{attempts:#}");
    assert!(attempts["chosen_by"].as_str().unwrap().contains("the signal alone"), "{attempts:#}");
    env.assert_pristine();
}

/// Ctrl-C stops every attempt in docker and removes every container.
#[test]
fn ctrl_c_stops_every_attempt_in_docker() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    // The attempts cannot see this machine's folders: each says it started on its stdout.
    let script = "read -r prompt; echo \"started $prompt\"; sleep 300";
    let manifest = crate::containers::manifest("docker", script, "")
        .replace("prompt = \"go\"", "prompt = \"attempt {{ATTEMPT}}\"\nattempts = 2")
        .replace("cat >/dev/null; ", "");
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json-events"]);
    command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let mut started = std::collections::BTreeSet::new();
    let mut events = Vec::new();
    while started.len() < 2 {
        let line = receiver.recv_timeout(std::time::Duration::from_secs(120)).expect("both attempts start");
        if line.contains("started attempt") {
            let event: serde_json::Value = serde_json::from_str(&line).unwrap();
            started.insert(event["attempt"].as_u64().expect("the event says which attempt"));
        }
        events.push(line);
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{events:#?}");
    let repo = std::fs::canonicalize(&env.repo).unwrap();
    assert!(crate::containers::containers_of("docker", &repo).is_empty(), "no container left");
    assert_eq!(env.log_subjects("main"), ["initial commit"]);
}

/// `[budget]` counts every attempt together: two attempts that each spend 400 tokens an
/// iteration cross `max_tokens = 1000` in their second iteration (800 alone would not), and
/// the record says what all of them spent.
#[test]
fn the_budget_counts_every_attempt_together() {
    let env = TestEnv::new();
    let meeting = env.root().join("meeting");
    std::fs::create_dir_all(&meeting).unwrap();
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"working","session_id":"s-1","total_cost_usd":0,"usage":{"input_tokens":400,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}"#;
    // Both attempts are in the same iteration before either reports: each has noted what it
    // spent before it (`{{ITERATION}} {{ATTEMPT}}` in the prompt).
    let script = env.script(
        "spend.sh",
        &format!(
            "read -r it n; touch '{m}'/$it-$n\n\
             for _ in $(seq 600); do [ $(ls '{m}' | grep -c \"^$it-\") -ge 2 ] && break; sleep 0.05; done\n\
             echo '{result}'\nsleep 1\n",
            m = meeting.display()
        ),
    );
    let manifest = format!(
        "name = \"spend\"\nprompt = \"{{{{ITERATION}}}} {{{{ATTEMPT}}}}\"\nattempts = 2\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n\
         [loop]\nmax_iterations = 2\nidle_timeout = \"60s\"\n[budget]\nmax_tokens = 1000\n",
        script.display()
    );
    let path = env.write_manifest(&manifest);
    let run = env.eden(&["run", path.to_str().unwrap(), "--json"]);
    run.assert_code(8);
    for entry in attempts_of(&run) {
        assert_eq!(entry["exit_reason"], "budget_exceeded", "{entry:#}");
        // Its own 800 and the other's 400 or 800, as the other last noted it.
        let used = entry["error"]["budget"]["used"].as_str().unwrap();
        assert!(["1,200 tokens", "1,600 tokens"].contains(&used), "{entry:#}");
        assert_eq!(entry["iterations"].as_array().unwrap().len(), 2);
    }
    let left: Vec<_> = std::fs::read_dir(env.repo.join(".eden/locks"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("attempts-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `attempts_pick = "best"`: every attempt finishes, none merges by itself, and of those whose
/// checks pass the lowest `attempts_score` (run in each attempt's sandbox) lands; the others
/// keep their branches, each record has its score.
#[test]
fn the_best_score_lands() {
    let env = TestEnv::new();
    // Attempt n writes (2n mod 5) + 1 lines: 3, 5, 2; the score counts them.
    let script = env.script(
        "lines.sh",
        "read -r prompt; n=${prompt##* }; seq $(( (n * 2) % 5 + 1 )) > lines.txt\n\
         git add lines.txt && git -c user.name=a -c user.email=a@e commit -qm \"$prompt\"\necho '<promise>COMPLETE</promise>'",
    );
    let extra = "attempts = 3\nattempts_pick = \"best\"\nattempts_score = \"echo scoring; wc -l < lines.txt\"";
    let path = env.write_manifest(&manifest(&script, extra, "test -s lines.txt"));
    let run = env.eden(&["run", path.to_str().unwrap(), "--json"]);
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "attempt 3", "{}", run.stderr);
    let attempts = attempts_of(&run);
    let scores: Vec<f64> = attempts.iter().map(|entry| entry["attempt"]["score"].as_f64().unwrap()).collect();
    assert_eq!(scores, [3.0, 5.0, 2.0]);
    let chosen: Vec<bool> = attempts.iter().map(|entry| entry["attempt"]["chosen"] == true).collect();
    assert_eq!(chosen, [false, false, true]);
    assert_eq!(attempts[2]["merged_into"], "main");
    for kept in &attempts[..2] {
        assert!(kept["merged_into"].is_null() && kept["preserved_branch"].is_string(), "{kept:#}");
        assert_eq!(kept["exit_code"], 0);
    }
    assert!(run.stderr.contains("attempt 3 has the best score (2)"), "{}", run.stderr);
}

/// Equal scores: the attempt that changed fewer lines lands.
#[test]
fn a_tied_score_goes_to_fewer_changed_lines() {
    let env = TestEnv::new();
    let script = env.script(
        "lines.sh",
        "read -r prompt; n=${prompt##* }; seq $(( n == 1 ? 10 : 2 )) > lines.txt\n\
         git add lines.txt && git -c user.name=a -c user.email=a@e commit -qm \"$prompt\"\necho '<promise>COMPLETE</promise>'",
    );
    let extra = "attempts = 2\nattempts_pick = \"best\"\nattempts_score = \"echo 1\"";
    let path = env.write_manifest(&manifest(&script, extra, "true"));
    let run = env.eden(&["run", path.to_str().unwrap(), "--json"]);
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "attempt 2", "{}", run.stderr);
    let attempts = attempts_of(&run);
    assert_eq!(attempts[1]["attempt"]["chosen"], true, "{attempts:#?}");
}

/// The real Claude Code in docker, two attempts at once against the scripted model server,
/// each with its key held: one lands, the work is merged once.
#[test]
fn claude_code_attempts_in_docker() {
    const KEY: &str = "sk-ant-attempts-4711";
    let Some(claude) = crate::real_agents::require("claude") else { return };
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let claude = std::fs::canonicalize(claude).unwrap();
    let manifest = format!(
        "name = \"claude\"\nprompt = \"create hello.txt and commit it\"\nattempts = 2\n[agent]\nkind = \"claude-code\"\nbinary = \"/opt/claude\"\n\
         env = {{ ANTHROPIC_BASE_URL = \"${{ANTHROPIC_BASE_URL}}\", ANTHROPIC_API_KEY = \"{KEY}\", DISABLE_TELEMETRY = \"1\", \
         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", CLAUDE_CODE_MAX_RETRIES = \"0\" }}\n\
         [sandbox]\nkind = \"docker\"\nimage = \"{}\"\nnetwork = \"none\"\n\
         mounts = [{{ host = \"{}\", sandbox = \"/opt/claude\", read_only = true }}]\n\
         [loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n[[check]]\nname = \"hello\"\ncmd = \"test -f hello.txt\"\n",
        crate::containers::IMAGE,
        claude.display()
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(crate::real_agents::claude_env(&env, &server));
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "add hello.txt", "{}", run.stderr);
    let attempts = attempts_of(&run);
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts.iter().filter(|entry| entry["attempt"]["chosen"] == true).count(), 1, "{attempts:#?}");
    let keys = server.stats.keys.lock().unwrap().clone();
    assert!(!keys.is_empty() && keys.iter().all(|key| key == KEY), "the server got {keys:?}");
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
    let repo = std::fs::canonicalize(&env.repo).unwrap();
    assert!(crate::containers::containers_of("docker", &repo).is_empty(), "no container left");
}
