//! Several runs in one invocation (`eden run A.toml B.toml --jobs N`): every run is whole and
//! independent, merges go through the queue, bad input starts nothing, `--fail-fast` and Ctrl-C
//! stop everything cleanly, containers and other sandboxes mix.

use crate::support::{wait_for, Marker, Run, TestEnv};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// An agent that commits the file its prompt names (first line), with the second line as its
/// content. While it works it is counted in `$RUNNING` (a folder), and the most agents seen at
/// once goes into `$RUNNING.max`. With `BARRIER` set, it first waits until `COUNT` agents have
/// started (so every run began from the same base).
fn committing_agent(env: &TestEnv) -> PathBuf {
    env.script(
        "commit.sh",
        r#"{ read -r file; read -r content; }
if [ -n "$BARRIER" ]; then
  mktemp -p "$BARRIER" >/dev/null
  while [ "$(ls "$BARRIER" | wc -l)" -lt "$COUNT" ]; do sleep 0.05; done
fi
me="$RUNNING/$$"; touch "$me"
n=$(ls "$RUNNING" | wc -l); max=$(cat "$RUNNING.max" 2>/dev/null || echo 0)
[ "$n" -gt "$max" ] && echo "$n" > "$RUNNING.max"
sleep 0.3
echo "$content" > "$file" && git add "$file" && git commit -q -m "add $file"
rm -f "$me"
echo '<promise>COMPLETE</promise>'"#,
    )
}

/// A manifest named `name` whose agent commits `file` with `content`; `extra` goes at the end.
fn manifest(env: &TestEnv, agent: &Path, name: &str, file: &str, content: &str, extra: &str) -> PathBuf {
    env.write(
        &format!("{name}.toml"),
        &format!(
            "name = \"{name}\"\nprompt = \"\"\"{file}\n{content}\"\"\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n[loop]\nmax_iterations = 1\n{extra}",
            agent.display()
        ),
    )
}

fn eden_many(env: &TestEnv, manifests: &[PathBuf], flags: &[&str]) -> std::process::Command {
    let mut args = vec!["run"];
    args.extend(manifests.iter().map(|path| path.to_str().unwrap()));
    args.extend(flags);
    let mut command = env.eden_command(&args);
    command.env("RUNNING", running(env));
    command
}

fn running(env: &TestEnv) -> PathBuf {
    let folder = env.root().join("running");
    std::fs::create_dir_all(&folder).unwrap();
    folder
}

fn records_on_disk(env: &TestEnv) -> usize {
    std::fs::read_dir(env.repo.join(".eden/runs")).map_or(0, |dir| {
        dir.filter(|entry| entry.as_ref().unwrap().path().extension().is_some_and(|e| e == "json")).count()
    })
}

fn assert_sound(env: &TestEnv) {
    let fsck = env.git(&["fsck", "--no-progress", "--no-dangling"]);
    assert!(fsck.is_empty(), "git fsck: {fsck}");
    assert_eq!(env.git(&["status", "--porcelain", "--untracked-files=no"]), "", "the checkout is clean");
}

#[test]
fn eight_manifests_four_at_a_time_all_land_on_main() {
    let env = TestEnv::new();
    let agent = committing_agent(&env);
    let manifests: Vec<PathBuf> = (0..8)
        .map(|i| manifest(&env, &agent, &format!("job{i}"), &format!("file{i}.txt"), &format!("{i}"), ""))
        .collect();
    let run = Run::from(eden_many(&env, &manifests, &["--jobs", "4", "--json"]).output().unwrap());
    run.assert_code(0);
    let records = run.json();
    let records = records.as_array().expect("--json prints an array");
    assert_eq!(records.len(), 8);
    let mut positions = Vec::new();
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record["name"], format!("job{i}"), "in the order given");
        assert_eq!(record["merged_into"], "main", "{record}");
        let onto = record["merge_onto"].as_str().unwrap();
        env.git(&["merge-base", "--is-ancestor", onto, "main"]);
        positions.push(record["merge_queue_position"].as_u64().unwrap());
        assert!(record["merge_wait_ms"].is_u64(), "the wait in the queue is recorded: {record}");
        assert_eq!(std::fs::read_to_string(env.repo.join(format!("file{i}.txt"))).unwrap(), format!("{i}\n"));
    }
    positions.sort_unstable();
    assert_eq!(positions, (1..=8).collect::<Vec<_>>(), "each merge had its own place in the queue");
    let most = std::fs::read_to_string(running(&env).with_extension("max")).unwrap();
    assert!(most.trim().parse::<u32>().unwrap() <= 4, "never more than --jobs at once: {most}");
    assert_eq!(records_on_disk(&env), 8, "one record each");
    assert_eq!(env.branches(), ["main"]);
    assert_sound(&env);
    // The table on stderr names every run.
    for i in 0..8 {
        assert!(run.stderr.contains(&format!("job{i} ")), "{}", run.stderr);
    }
    assert!(!env
        .repo
        .join(".eden/locks")
        .read_dir()
        .unwrap()
        .any(|entry| { entry.unwrap().file_name().to_string_lossy().starts_with("batch-") }));
}

#[test]
fn two_runs_editing_the_same_line_one_merges_the_other_keeps_its_branch() {
    let env = TestEnv::new();
    env.write("shared.txt", "original\n");
    env.git(&["add", "shared.txt"]);
    env.git(&["commit", "-q", "-m", "shared"]);
    let agent = committing_agent(&env);
    let manifests = [
        manifest(&env, &agent, "left", "shared.txt", "left", ""),
        manifest(&env, &agent, "right", "shared.txt", "right", "[branch]\nrebase = true\n"),
    ];
    let run = Run::from(eden_many(&env, &manifests, &["--json", "--quiet"]).output().unwrap());
    run.assert_code(7);
    let records = run.json();
    let records = records.as_array().unwrap();
    let (merged, kept): (Vec<_>, Vec<_>) = records.iter().partition(|record| record["exit_code"] == 0);
    assert_eq!((merged.len(), kept.len()), (1, 1), "{records:?}");
    let winner = merged[0]["name"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(env.repo.join("shared.txt")).unwrap(), format!("{winner}\n"));
    assert_eq!(
        env.git(&["rev-parse", "main"]),
        merged[0]["merge_commit"].as_str().unwrap(),
        "main as the first merge left it"
    );
    let loser = kept[0];
    assert_eq!(loser["exit_reason"], "git_error");
    let branch = loser["preserved_branch"].as_str().unwrap();
    assert_eq!(env.git(&["show", &format!("{branch}:shared.txt")]), loser["name"].as_str().unwrap());
    assert_sound(&env);
}

#[test]
fn a_moved_target_gets_the_rebased_commits_with_branch_rebase() {
    let env = TestEnv::new();
    let agent = committing_agent(&env);
    let manifests = [
        manifest(&env, &agent, "first", "a.txt", "a", "[branch]\nrebase = true\n"),
        manifest(&env, &agent, "second", "b.txt", "b", "[branch]\nrebase = true\n"),
    ];
    let barrier = env.root().join("barrier");
    std::fs::create_dir(&barrier).unwrap();
    let mut command = eden_many(&env, &manifests, &["--json", "--quiet"]);
    let run = Run::from(command.env("BARRIER", &barrier).env("COUNT", "2").output().unwrap());
    run.assert_code(0);
    let records = run.json();
    let kinds: Vec<&str> = records.as_array().unwrap().iter().map(|r| r["merge_kind"].as_str().unwrap()).collect();
    // Both began from the same base: the first fast-forwards, the second is replayed onto it.
    assert!(kinds.contains(&"fast_forward") && kinds.contains(&"rebase"), "{kinds:?}");
    let merges = env.git(&["rev-list", "--merges", "main"]);
    assert!(merges.is_empty(), "linear history: {merges}");
    for record in records.as_array().unwrap() {
        for commit in record["commits"].as_array().unwrap() {
            env.git(&["merge-base", "--is-ancestor", commit["sha"].as_str().unwrap(), "main"]);
        }
    }
    assert_eq!(env.log_subjects("main")[..2].iter().filter(|s| s.starts_with("add ")).count(), 2);
    assert_sound(&env);
}

#[test]
fn one_bad_manifest_starts_nothing() {
    let env = TestEnv::new();
    let agent = committing_agent(&env);
    let good = manifest(&env, &agent, "good", "g.txt", "g", "");
    let bad = manifest(&env, &agent, "bad", "b.txt", "b", "max_iteration = 3\n");
    let run = Run::from(eden_many(&env, &[good.clone(), bad], &[]).output().unwrap());
    run.assert_code(2);
    assert!(run.stderr.contains("bad.toml"), "names the file: {}", run.stderr);
    // Two runs by one name: both sources are named.
    let twin = env.write("twin.toml", &std::fs::read_to_string(&good).unwrap());
    let run = Run::from(eden_many(&env, &[good, twin], &["--json"]).output().unwrap());
    run.assert_code(2);
    // An array, as always with several manifests: each entry carries the error.
    let entries = run.json();
    let message = entries[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("good.toml") && message.contains("twin.toml"), "{message}");
    assert_eq!(records_on_disk(&env), 0);
    env.assert_pristine();
}

#[test]
fn matrix_runs_each_manifest_once_per_value() {
    let env = TestEnv::new();
    let agent = committing_agent(&env);
    let path = env.write(
        "task.toml",
        &format!(
            "name = \"task\"\nprompt = \"\"\"{{{{who}}}}.txt\nby {{{{who}}}}\"\"\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n",
            agent.display()
        ),
    );
    let run = Run::from(
        eden_many(&env, &[path], &["--matrix", "prompt_args.who=ann,bob", "--json", "--quiet"]).output().unwrap(),
    );
    run.assert_code(0);
    let names: Vec<String> =
        run.json().as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(names, ["task-ann", "task-bob"]);
    assert_eq!(std::fs::read_to_string(env.repo.join("bob.txt")).unwrap(), "by bob\n");
    let run = env.eden(&["run", "--matrix", "prompt_args.who", "--agent", "simulated", "--prompt", "x"]);
    run.assert_code(2);
    assert!(run.stderr.contains("KEY=V1,V2"), "{}", run.stderr);
}

#[test]
fn json_events_carry_each_runs_id_and_name() {
    let env = TestEnv::new();
    let agent = committing_agent(&env);
    let manifests = [manifest(&env, &agent, "one", "1.txt", "1", ""), manifest(&env, &agent, "two", "2.txt", "2", "")];
    // A third run whose agent makes a tool call: its event's `name` is the tool's.
    let tooling = env.script(
        "tooling.sh",
        "cat >/dev/null\necho '{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"tool_use\",\"name\":\"Bash\",\"input\":{\"command\":\"ls\"}}]}}'\n\
         echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"<promise>COMPLETE</promise>\"}'",
    );
    let third = env.root().join("three.toml");
    std::fs::write(
        &third,
        format!(
            "name = \"three\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n",
            tooling.display()
        ),
    )
    .unwrap();
    let all = [manifests[0].clone(), manifests[1].clone(), third];
    let run = Run::from(eden_many(&env, &all, &["--json-events", "--quiet"]).output().unwrap());
    run.assert_code(0);
    let mut finished = Vec::new();
    let mut tools = Vec::new();
    for line in run.stdout.lines() {
        assert_eq!(line.matches("\"run_name\":").count(), 1, "one run name per line: {line}");
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(event["run_id"].is_string() && event["run_name"].is_string(), "{line}");
        if event["event"] == "tool_call" {
            tools.push((event["run_name"].as_str().unwrap().to_owned(), event["name"].as_str().unwrap().to_owned()));
        }
        if event["event"] == "run_finished" {
            assert_eq!(event["record"]["name"], event["run_name"]);
            finished.push(event["run_name"].as_str().unwrap().to_owned());
        }
    }
    finished.sort();
    assert_eq!(finished, ["one", "three", "two"]);
    assert_eq!(tools, [("three".to_owned(), "Bash".to_owned())]);
}

/// A manifest whose agent touches `ready/<name>` and then sleeps (marked) until stopped.
fn sleeping(env: &TestEnv, name: &str, marker: &Marker) -> PathBuf {
    let ready = env.root().join("ready");
    std::fs::create_dir_all(&ready).unwrap();
    let script = env.script(
        &format!("{name}.sh"),
        &format!("cat >/dev/null\ntouch {}/{name}\n{}\n", ready.display(), marker.sleep()),
    );
    env.write(
        &format!("{name}.toml"),
        &format!("name = \"{name}\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n", script.display()),
    )
}

#[test]
fn fail_fast_stops_the_others_and_exits_with_the_failure() {
    let env = TestEnv::new();
    let marker = Marker::new();
    let failing = env.script("fail.sh", "cat >/dev/null\nsleep 0.5\necho broken >&2\nexit 9");
    let bad = env.write(
        "bad.toml",
        &format!("name = \"bad\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n", failing.display()),
    );
    let slow = [sleeping(&env, "slow1", &marker), sleeping(&env, "slow2", &marker)];
    let waiting = sleeping(&env, "waiting", &marker);
    let manifests = [bad, slow[0].clone(), slow[1].clone(), waiting];
    let run = Run::from(eden_many(&env, &manifests, &["--jobs", "3", "--fail-fast", "--json"]).output().unwrap());
    run.assert_code(3);
    let records = run.json();
    let records = records.as_array().unwrap();
    assert_eq!(records[0]["exit_reason"], "agent_failed");
    for record in &records[1..3] {
        assert_eq!(record["exit_reason"], "interrupted", "stopped as by Ctrl-C: {record}");
    }
    assert_eq!(records[3]["status"], "not_started");
    assert!(run.stderr.contains("--fail-fast"), "{}", run.stderr);
    assert_eq!(marker.gone_within(std::time::Duration::from_secs(10)), Vec::<String>::new());
    assert_eq!(records_on_disk(&env), 3);
}

#[test]
fn ctrl_c_stops_four_parallel_runs() {
    let env = TestEnv::new();
    let marker = Marker::new();
    let names = ["p1", "p2", "p3", "p4"];
    let manifests: Vec<PathBuf> = names.iter().map(|name| sleeping(&env, name, &marker)).collect();
    let mut command = eden_many(&env, &manifests, &["--json"]);
    let child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    for name in names {
        wait_for(&env.root().join("ready").join(name));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let run = Run::from(child.wait_with_output().unwrap());
    run.assert_code(130);
    let records = run.json();
    for record in records.as_array().unwrap() {
        assert_eq!(record["exit_reason"], "interrupted", "{record}");
        assert_eq!(record["status"], "finished");
    }
    assert_eq!(records_on_disk(&env), 4);
    assert_eq!(marker.gone_within(std::time::Duration::from_secs(10)), Vec::<String>::new(), "no agent left");
    let edens = std::process::Command::new("pgrep").args(["-f", &env.root().display().to_string()]).output().unwrap();
    assert!(edens.stdout.is_empty(), "no eden left: {}", String::from_utf8_lossy(&edens.stdout));
    assert_eq!(env.worktree_count(), 1, "worktrees without changes are removed");
}

#[test]
fn four_docker_runs_and_a_mix_of_sandboxes_at_once() {
    use crate::containers::{containers_of, ready, IMAGE};
    if !ready("docker") || !ready("podman") || !crate::isolated::bwrap() {
        return;
    }
    let env = TestEnv::new();
    let body = |file: &str| {
        format!(
            "[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"cat >/dev/null; echo {file} > {file} && git add {file} && git -c user.name=box -c user.email=box@example.com commit -qm {file} && echo '<promise>COMPLETE</promise>'\"]\n[loop]\nmax_iterations = 1\n"
        )
    };
    let mut manifests = Vec::new();
    for i in 0..4 {
        let file = format!("docker{i}.txt");
        manifests.push(env.write(
            &format!("d{i}.toml"),
            &format!(
                "name = \"d{i}\"\nprompt = \"x\"\n{}[sandbox]\nkind = \"docker\"\nimage = \"{IMAGE}\"\n",
                body(&file)
            ),
        ));
    }
    manifests.push(env.write(
        "p.toml",
        &format!(
            "name = \"p\"\nprompt = \"x\"\n{}[sandbox]\nkind = \"podman\"\nimage = \"{IMAGE}\"\n",
            body("podman.txt")
        ),
    ));
    manifests.push(env.write(
        "i.toml",
        &format!("name = \"i\"\nprompt = \"x\"\n{}[sandbox]\nkind = \"isolated\"\n", body("isolated.txt")),
    ));
    manifests.push(env.write("h.toml", &format!("name = \"h\"\nprompt = \"x\"\n{}", body("host.txt"))));
    let run = Run::from(
        env.eden_command(&{
            let mut args = vec!["run", "--json", "--quiet"];
            args.extend(manifests.iter().map(|path| path.to_str().unwrap()));
            args
        })
        .output()
        .unwrap(),
    );
    run.assert_code(0);
    for record in run.json().as_array().unwrap() {
        assert_eq!(record["merged_into"], "main", "{record}");
    }
    for file in ["docker0.txt", "docker1.txt", "docker2.txt", "docker3.txt", "podman.txt", "isolated.txt", "host.txt"] {
        assert!(env.repo.join(file).exists(), "{file} landed on main");
    }
    let repo = std::fs::canonicalize(&env.repo).unwrap();
    assert!(containers_of("docker", &repo).is_empty() && containers_of("podman", &repo).is_empty());
    assert_sound(&env);
}

/// One run's secret is redacted in what the others show: the coordinator knows them all.
#[test]
fn every_runs_secret_is_redacted_in_every_runs_display() {
    let env = TestEnv::new();
    let secret = "alpha-secret-5e61c0d2";
    let keeper = env.script("keeper.sh", "cat >/dev/null\necho '<promise>COMPLETE</promise>'");
    let teller =
        env.script("teller.sh", "cat >/dev/null\necho \"I know $ALPHA_VALUE\"\necho '<promise>COMPLETE</promise>'");
    let alpha = env.write(
        "alpha.toml",
        &format!(
            "name = \"alpha\"\nprompt = \"x\"\nredact = [\"TOKEN\"]\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nenv = {{ TOKEN = \"${{ALPHA_VALUE}}\" }}\n",
            keeper.display()
        ),
    );
    let beta = env.write(
        "beta.toml",
        &format!("name = \"beta\"\nprompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\n", teller.display()),
    );
    let mut command = eden_many(&env, &[alpha, beta], &["--json-events"]);
    let run = Run::from(command.env("ALPHA_VALUE", secret).output().unwrap());
    run.assert_code(0);
    assert!(run.stderr.contains("beta") && run.stderr.contains("I know ***"), "{}", run.stderr);
    assert!(!run.stderr.contains(secret), "{}", run.stderr);
    assert!(!run.stdout.contains(secret), "{}", run.stdout);
}

/// `--json` with several manifests is an array whatever happens: one of them bad stops all
/// before anything starts, and each gets an entry saying so (not a lone error object).
#[test]
fn json_is_an_array_even_when_a_manifest_is_bad() {
    let env = TestEnv::new();
    let agent = committing_agent(&env);
    let good = manifest(&env, &agent, "good", "g.txt", "g", "");
    let bad = env.write("bad.toml", "name = \"bad\"\nprompt = \"x\"\n[agent]\nkind = \"simulated\"\nmodle = \"m\"\n");
    let run = Run::from(eden_many(&env, &[good.clone(), bad.clone()], &["--json"]).output().unwrap());
    run.assert_code(2);
    let entries: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).expect("an array");
    assert_eq!(entries.len(), 2);
    for (entry, path) in entries.iter().zip([&good, &bad]) {
        assert_eq!(entry["name"], path.display().to_string());
        assert_eq!(entry["status"], "not_started");
        assert_eq!(entry["exit_code"], 2);
        assert!(entry["error"]["message"].as_str().unwrap().contains("modle"), "{entry}");
    }
    assert_eq!(env.branches(), ["main"], "nothing started");
}
