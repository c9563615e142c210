//! `eden sessions` and the capture behind it: transcripts found and kept (secrets redacted), a
//! missing one a warning, and the run history listed, replayed and costed from real records.

use crate::support::{Run, TestEnv};

/// A `cli` agent that speaks Claude's stream-json and writes a transcript where Claude Code
/// keeps them (under `$CLAUDE_CONFIG_DIR/projects/`), unless `write` is false.
fn claude_like(env: &TestEnv, write: bool) -> std::path::PathBuf {
    let transcript = if write {
        "dir=\"$CLAUDE_CONFIG_DIR/projects/elsewhere\"; mkdir -p \"$dir\"\n\
         printf '{\"type\":\"user\",\"sessionId\":\"sess-0001\",\"message\":\"the token is %s\"}\\n' \"$MY_TOKEN\" > \"$dir/sess-0001.jsonl\"\n"
    } else {
        ""
    };
    env.script(
        "claude-like.sh",
        &format!(
            "#!/bin/bash\ncat >/dev/null\n{transcript}\
             echo '{{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"sess-0001\"}}'\n\
             echo '{{\"type\":\"assistant\",\"message\":{{\"id\":\"m1\",\"content\":[{{\"type\":\"text\",\"text\":\"all done <promise>COMPLETE</promise>\"}}]}}}}'\n\
             echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done <promise>COMPLETE</promise>\",\"session_id\":\"sess-0001\",\"usage\":{{\"input_tokens\":10,\"output_tokens\":5}},\"total_cost_usd\":0.25}}'\n"
        ),
    )
}

fn run_claude_like(env: &TestEnv, write: bool) -> Run {
    let script = claude_like(env, write);
    let manifest = format!(
        "name = \"cap\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"claude-code\"\n\
         env = {{ MY_TOKEN = \"${{MY_TOKEN}}\" }}\n[loop]\nmax_iterations = 1\n",
        script.display()
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.env("MY_TOKEN", "s3cr3t-value-42").env("CLAUDE_CONFIG_DIR", env.root().join("claude"));
    Run::from(command.output().unwrap())
}

#[test]
fn transcripts_are_kept_with_secrets_redacted() {
    let env = TestEnv::new();
    let run = run_claude_like(&env, true);
    run.assert_code(0);
    let record = run.json();
    let transcript = &record["iterations"][0]["transcript"];
    let kept = std::fs::read_to_string(transcript["path"].as_str().unwrap()).unwrap();
    assert!(kept.contains("the token is ***"), "{kept}");
    assert!(!kept.contains("s3cr3t-value-42"));
    let source = env.root().join("claude/projects/elsewhere/sess-0001.jsonl");
    assert_eq!(transcript["source"], source.display().to_string());
    assert!(run.stderr.contains("transcript "), "{}", run.stderr);
    env.assert_pristine();
}

#[test]
fn a_missing_transcript_is_a_warning_not_a_failure() {
    let env = TestEnv::new();
    let run = run_claude_like(&env, false);
    run.assert_code(0);
    let record = run.json();
    let iteration = &record["iterations"][0];
    assert!(iteration["transcript"].is_null());
    let warning = iteration["transcript_warning"].as_str().unwrap();
    let expected = env.root().join("claude/projects");
    assert!(warning.contains(&expected.display().to_string()), "the path tried: {warning}");
    assert!(run.stderr.contains(&format!("warning: {warning}")), "{}", run.stderr);
    let log = std::fs::read_to_string(record["log"].as_str().unwrap()).unwrap();
    assert!(log.contains("no transcript of session `sess-0001` found at"), "{log}");
}

/// A run of the simulated agent, named `name`, that completes.
fn simulated_run(env: &TestEnv, name: &str) -> serde_json::Value {
    let manifest = format!(
        "name = \"{name}\"\nprompt = \"say hello\"\n[agent]\nkind = \"simulated\"\n\
         lines = [\"hello from {name}\", \"<promise>COMPLETE</promise>\"]\n[loop]\nmax_iterations = 1\n"
    );
    let path = env.write(&format!("{name}.toml"), &manifest);
    let run = env.eden(&["run", path.to_str().unwrap(), "--json"]);
    run.assert_code(0);
    run.json()
}

#[test]
fn list_show_and_cost_tell_the_history() {
    let env = TestEnv::new();
    let first = simulated_run(&env, "first");
    let capped = run_claude_like(&env, true).json();
    let capped_id = capped["id"].as_str().unwrap();

    // Newest first, as JSON for scripts.
    let list = env.eden(&["sessions", "list", "--json"]);
    list.assert_code(0);
    let runs = list.json();
    let ids: Vec<&str> = runs.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [capped_id, first["id"].as_str().unwrap()]);
    let claude = &runs[0];
    assert_eq!(claude["agents"], serde_json::json!(["cli"]));
    assert_eq!((claude["input_tokens"].as_u64(), claude["output_tokens"].as_u64()), (Some(10), Some(5)));
    assert_eq!(claude["cost_usd"], 0.25);
    assert_eq!(claude["exit_reason"], "completed");
    assert_eq!(claude["sessions"], serde_json::json!(["sess-0001"]));

    // Filters.
    let only = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["sessions", "list", "--json"];
        all.extend_from_slice(args);
        let run = env.eden(&all);
        run.assert_code(0);
        run.json().as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(only(&["--name", "first"]), ["first"]);
    assert_eq!(only(&["--agent", "simulated"]), ["first"]);
    assert_eq!(only(&["--status", "completed"]), ["cap", "first"]);
    assert_eq!(only(&["--status", "abandoned"]), Vec::<String>::new());
    assert_eq!(only(&["--since", "1h"]).len(), 2);
    assert_eq!(only(&["--branch", capped["branch"].as_str().unwrap()]), ["cap"]);

    // The table for people.
    let table = env.eden(&["sessions", "list"]);
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert!(lines[0].starts_with("RUN "), "{}", table.stdout);
    assert!(
        lines[1].starts_with(capped_id) && lines[1].contains("completed") && lines[1].contains("$0.25"),
        "{}",
        lines[1]
    );

    // The replay: prompt, the agent's text, the outcome; by prefix, by `last`, by session id.
    let prefix = &first["id"].as_str().unwrap()[..first["id"].as_str().unwrap().len() - 2];
    let show = env.eden(&["sessions", "show", prefix]);
    show.assert_code(0);
    for expected in
        ["prompt:", "    say hello", "agent:", "    hello from first", "completion signal", "ended: completed"]
    {
        assert!(show.stdout.contains(expected), "{expected:?} in\n{}", show.stdout);
    }
    let last = env.eden(&["sessions", "show", "last"]);
    assert!(last.stdout.starts_with(&format!("run {capped_id}")), "{}", last.stdout);
    assert!(last.stdout.contains("transcript "), "{}", last.stdout);
    let by_session = env.eden(&["sessions", "show", "sess-0001", "--raw"]);
    by_session.assert_code(0);
    assert!(by_session.stdout.contains("the token is ***"), "{}", by_session.stdout);
    let events = env.eden(&["sessions", "show", "last", "--json"]);
    let kinds: Vec<String> = events
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("run_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("run_finished"));
    let no_transcript = env.eden(&["sessions", "show", prefix, "--raw"]);
    no_transcript.assert_code(2);
    assert!(no_transcript.error_text().contains("has no captured transcript"), "{}", no_transcript.stderr);

    // Cost: reported where the agent reports it.
    let cost = env.eden(&["sessions", "cost", "--by", "agent", "--json"]);
    cost.assert_code(0);
    let totals = cost.json();
    let cli = totals.as_array().unwrap().iter().find(|t| t["key"] == "cli").unwrap();
    assert_eq!((cli["cost_usd"].as_f64(), cli["input_tokens"].as_u64()), (Some(0.25), Some(10)));
    env.assert_pristine();
}

#[test]
fn tokens_without_a_reported_cost_are_priced_from_the_table_or_shown_unpriced() {
    let env = TestEnv::new();
    // A Codex-like wrapper: tokens, no cost.
    let script = env.script(
        "codex-like.sh",
        "#!/bin/bash\ncat >/dev/null\necho '{\"type\":\"thread.started\",\"thread_id\":\"t-1\"}'\n\
         echo '{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"<promise>COMPLETE</promise>\"}}'\n\
         echo '{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":2000000,\"cached_input_tokens\":0,\"output_tokens\":100000}}'\n",
    );
    let manifest = format!(
        "name = \"priced\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"{}\"\nparser = \"codex\"\nmodel = \"gpt-test\"\n[loop]\nmax_iterations = 1\n",
        script.display()
    );
    env.run_manifest(&manifest, &[]).assert_code(0);
    let unpriced = env.eden(&["sessions", "cost", "--by", "model"]);
    unpriced.assert_code(0);
    assert!(unpriced.stdout.contains("gpt-test") && unpriced.stdout.contains("unpriced (1)"), "{}", unpriced.stdout);
    assert!(unpriced.stderr.contains("no price for: gpt-test"), "{}", unpriced.stderr);

    let prices = env.write("prices.toml", "[models.\"gpt-test\"]\ninput = 1.0\noutput = 10.0\n");
    let priced = env.eden(&["sessions", "cost", "--by", "model", "--json", "--prices", prices.to_str().unwrap()]);
    priced.assert_code(0);
    let total = &priced.json()[0];
    assert_eq!(total["key"], "gpt-test");
    assert!((total["cost_usd"].as_f64().unwrap() - 3.0).abs() < 1e-9, "{total}");
    assert_eq!(total["unpriced_iterations"], 0);
    // By manifest (this one lies outside the repository: named as recorded).
    let by_manifest =
        env.eden(&["sessions", "cost", "--by", "manifest", "--json", "--prices", prices.to_str().unwrap()]);
    by_manifest.assert_code(0);
    let totals = by_manifest.json();
    let keys: Vec<&str> = totals.as_array().unwrap().iter().map(|t| t["key"].as_str().unwrap()).collect();
    assert_eq!(keys, [env.root().join("plan.toml").to_str().unwrap()]);

    // The default table under the config folder is read too; a broken one is a located error.
    let config = env.home().join(".config/eden");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("prices.toml"), "[models.\"gpt-test\"]\ninput = \"cheap\"\n").unwrap();
    let broken = env.eden(&["sessions", "cost"]);
    broken.assert_code(2);
    assert!(broken.error_text().contains("prices.toml:2:9"), "{}", broken.stderr);
    let missing = env.eden(&["sessions", "cost", "--prices", "nope.toml"]);
    missing.assert_code(2);
    assert!(missing.error_text().contains("cannot read the price table"), "{}", missing.stderr);
}

#[test]
fn bad_names_and_broken_records_are_clear() {
    let env = TestEnv::new();
    let none = env.eden(&["sessions", "show", "last"]);
    none.assert_code(2);
    assert!(none.error_text().contains("there are no runs in this repository yet"), "{}", none.stderr);

    let a = simulated_run(&env, "alpha");
    let b = simulated_run(&env, "beta");
    let (a, b) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    // Both start with the date: ambiguous.
    let ambiguous = env.eden(&["sessions", "show", &a[..8]]);
    ambiguous.assert_code(2);
    let error = ambiguous.error_text();
    assert!(error.contains("matches 2 runs") && error.contains(a) && error.contains(b), "{error}");
    // Unknown: the closest id is named.
    let unknown = env.eden(&["sessions", "show", &format!("{}zz", &b[..10])]);
    unknown.assert_code(2);
    assert!(unknown.error_text().contains("the closest run id is"), "{}", unknown.stderr);

    // A corrupt record is skipped with a warning; the rest are listed.
    let runs = env.repo.join(".eden/runs");
    std::fs::write(runs.join("20990101-000000-broken.json"), "{ not json").unwrap();
    let list = env.eden(&["sessions", "list", "--json"]);
    list.assert_code(0);
    assert_eq!(list.json().as_array().unwrap().len(), 2);
    assert!(list.stderr.contains("20990101-000000-broken.json` is not a run record eden can read"), "{}", list.stderr);
    std::fs::remove_file(runs.join("20990101-000000-broken.json")).unwrap();

    // A run whose eden died shows as abandoned.
    let mut crashed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(runs.join(format!("{b}.json"))).unwrap()).unwrap();
    crashed["id"] = "20990101-000000-c0ffee".into();
    crashed["status"] = "running".into();
    crashed["process"] = serde_json::json!({ "pid": 4_194_303, "start": 1 });
    crashed["started_at"] = "2099-01-01T00:00:00.000Z".into();
    crashed["record_path"] = runs.join("20990101-000000-c0ffee.json").display().to_string().into();
    std::fs::write(runs.join("20990101-000000-c0ffee.json"), crashed.to_string()).unwrap();
    let abandoned = env.eden(&["sessions", "list", "--json", "--status", "abandoned"]);
    let listed = abandoned.json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(
        (listed[0]["id"].as_str(), listed[0]["status"].as_str()),
        (Some("20990101-000000-c0ffee"), Some("abandoned"))
    );
    std::fs::remove_file(runs.join("20990101-000000-c0ffee.json")).unwrap();

    // rm: the record, the log and the transcripts go; an unknown name removes nothing.
    let before = std::fs::read_dir(&runs).unwrap().count();
    env.eden(&["sessions", "rm", a, "nope"]).assert_code(2);
    assert_eq!(std::fs::read_dir(&runs).unwrap().count(), before);
    let rm = env.eden(&["sessions", "rm", a]);
    rm.assert_code(0);
    assert!(!runs.join(format!("{a}.json")).exists());
    assert!(!env.repo.join(format!(".eden/logs/{a}.jsonl")).exists());
    assert!(runs.join(format!("{b}.json")).exists());
    let bad_since = env.eden(&["sessions", "list", "--since", "soon"]);
    bad_since.assert_code(2);
    assert!(bad_since.error_text().contains("hint: write a duration"), "{}", bad_since.stderr);
}

/// The real Claude Code: a session captured in one repository, transferred to another checkout
/// and resumed there with the same session id; resumed again with `eden sessions resume` in its
/// own branch; and a session that does not exist stops a run before anything is created.
#[test]
fn claude_sessions_transfer_and_resume() {
    let Some(_) = crate::real_agents::require("claude") else { return };
    let first = TestEnv::new();
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&first.repo).unwrap(), false);
    let claude_env = crate::real_agents::claude_env(&first, &server);
    let manifest = first.write_manifest(
        "name = \"real\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n\
         [branch]\nstrategy = \"named\"\nname = \"eden/feature\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
    );
    let eden = |env: &TestEnv, args: &[&str]| {
        let mut command = env.eden_command(args);
        command.envs(claude_env.iter().map(|(k, v)| (k, v)));
        Run::from(command.output().unwrap())
    };
    let run = eden(&first, &["run", manifest.to_str().unwrap(), "--json"]);
    run.assert_code(0);
    let record = run.json();
    let session = record["session_id"].as_str().unwrap().to_owned();
    let old_worktree = record["worktree"].as_str().unwrap().to_owned();

    // Transfer to another repository's checkout: paths rewritten, where Claude looks.
    let second = TestEnv::new();
    let target = std::fs::canonicalize(&second.repo).unwrap();
    let moved = eden(&first, &["sessions", "transfer", &session, "--to", target.to_str().unwrap()]);
    moved.assert_code(0);
    let path = std::path::PathBuf::from(moved.stdout.trim());
    let slug: String =
        target.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    assert_eq!(path, first.root().join("claude/projects").join(&slug).join(format!("{session}.jsonl")));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("\"cwd\":\"{}\"", target.display())), "rewritten cwd");
    assert!(!text.contains(&old_worktree), "no old path left");
    let again = eden(&first, &["sessions", "transfer", &session, "--to", target.to_str().unwrap()]);
    again.assert_code(2);
    assert!(again.error_text().contains("exists already"), "{}", again.stderr);

    // Resumed there, in the checkout itself (strategy head): the same session goes on.
    second.write("eden.toml", "name = \"moved\"\nprompt = \"carry on\"\n[agent]\nkind = \"claude-code\"\n");
    second.git(&["add", "eden.toml"]);
    second.git(&["commit", "-qm", "manifest"]);
    let resume_set = format!("agent.resume=\"{session}\"");
    let server2 = crate::model_server::ModelServer::start(target.clone(), false);
    let mut command = second.eden_command(&[
        "run",
        "eden.toml",
        "--json",
        "--strategy",
        "head",
        "--max-iterations",
        "1",
        "--set",
        &resume_set,
    ]);
    command.envs(crate::real_agents::claude_env(&first, &server2));
    let resumed = Run::from(command.output().unwrap());
    resumed.assert_code(0);
    assert_eq!(resumed.json()["iterations"][0]["session_id"], session.as_str(), "{}", resumed.stderr);

    // `eden sessions resume`: the same branch and worktree path, the same session.
    // The manifest is outside the repository: named again (a record's word runs nothing).
    let manifest_path = manifest.to_str().unwrap();
    let continued =
        eden(&first, &["sessions", "resume", &session, manifest_path, "--prompt", "one more thing", "--json"]);
    continued.assert_code(0);
    let record = continued.json();
    assert_eq!(record["branch"], "eden/feature");
    assert_eq!(record["worktree"], old_worktree.as_str());
    assert_eq!(record["iterations"][0]["session_id"], session.as_str(), "{}", continued.stderr);
    assert!(record["iterations"][0]["prompt"].as_str().unwrap().starts_with("one more thing"));

    // A session that exists nowhere: exit 2 before anything, naming where Claude would look.
    let branches = first.branches();
    let missing = eden(
        &first,
        &["run", manifest.to_str().unwrap(), "--set", "agent.resume=\"0000-gone\"", "--branch", "eden/other"],
    );
    missing.assert_code(2);
    let error = missing.error_text();
    assert!(error.contains("session `0000-gone` to resume is not where claude-code looks for it"), "{error}");
    assert!(error.contains(&first.root().join("claude/projects").display().to_string()), "{error}");
    assert_eq!(first.branches(), branches, "nothing created");
    // A merged run's branch is gone: resuming makes it again from the base, at the same path.
    let merging = first.write(
        "merging.toml",
        "name = \"merging\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n\
         [loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
    );
    first.git(&["add", "merging.toml"]);
    first.git(&["commit", "-qm", "merging manifest"]);
    let merged = eden(&first, &["run", merging.to_str().unwrap(), "--json"]);
    merged.assert_code(0);
    let merged = merged.json();
    assert_eq!(merged["merged_into"], "main");
    let again = eden(&first, &["sessions", "resume", "last", "--json"]);
    again.assert_code(0);
    let again = again.json();
    assert_eq!(again["branch"], merged["branch"]);
    assert_eq!(again["worktree"], merged["worktree"]);
    assert_eq!(again["iterations"][0]["session_id"], merged["session_id"]);
    // `--from` the merged run: a new branch from its commit, the same session resumed.
    let from = eden(&first, &["run", merging.to_str().unwrap(), "--from", merged["id"].as_str().unwrap(), "--json"]);
    from.assert_code(0);
    let from = from.json();
    assert_eq!(from["from"]["session"], merged["session_id"], "{from}");
    assert_eq!(from["iterations"][0]["session_id"], merged["session_id"]);
    assert_ne!(from["branch"], merged["branch"]);
    // Interactive needs a terminal; without one it says so and starts nothing.
    let interactive = eden(&first, &["sessions", "resume", &session, manifest_path, "--interactive"]);
    interactive.assert_code(2);
    assert!(interactive.error_text().contains("needs a terminal on stdin"), "{}", interactive.stderr);
}

/// On a terminal the replay goes through `$PAGER`; `--no-pager` and a pipe print it directly.
#[test]
fn show_pages_on_a_terminal() {
    let env = TestEnv::new();
    simulated_run(&env, "paged");
    let on_terminal = |extra: &str| {
        // `script` gives eden a pseudo-terminal for stdout.
        let mut command = std::process::Command::new("script");
        env.apply_env(&mut command);
        let eden = env!("CARGO_BIN_EXE_eden");
        command
            .args(["-qec", &format!("{eden} sessions show last {extra}"), "/dev/null"])
            .current_dir(&env.repo)
            .env("PAGER", "sed s/^/paged:/");
        let output = command.output().expect("`script` (util-linux) runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).replace('\r', "")
    };
    let paged = on_terminal("");
    assert!(paged.lines().next().is_some_and(|line| line.starts_with("paged:run ")), "{paged}");
    assert!(paged.contains("paged:    hello from paged"), "{paged}");
    let direct = on_terminal("--no-pager");
    assert!(direct.starts_with("run ") && !direct.contains("paged:"), "{direct}");
    let piped = env.eden(&["sessions", "show", "last"]);
    assert!(piped.stdout.starts_with("run ") && !piped.stdout.contains("paged:"), "{}", piped.stdout);
}

/// A 2 MB one-line prompt is cut in `sessions show` (it says how much more there is), and shown
/// whole with `--full`.
#[test]
fn show_cuts_a_huge_prompt_line() {
    let env = TestEnv::new();
    let prompt = "x".repeat(2 * 1024 * 1024);
    env.write("huge.md", &prompt);
    let manifest = env.write_manifest(&format!(
        "name = \"huge\"\nprompt_file = \"{}\"\n[agent]\nkind = \"simulated\"\nlines = [\"<promise>COMPLETE</promise>\"]\n",
        env.repo.join("huge.md").display()
    ));
    env.eden(&["run", manifest.to_str().unwrap()]).assert_code(0);
    let shown = env.eden(&["sessions", "show", "last"]);
    shown.assert_code(0);
    assert!(shown.stdout.len() < 20_000, "{} bytes shown", shown.stdout.len());
    assert!(shown.stdout.contains("more character(s))"), "{}", &shown.stdout[..500.min(shown.stdout.len())]);
    let full = env.eden(&["sessions", "show", "last", "--full"]);
    assert!(full.stdout.len() > 2 * 1024 * 1024);
}

/// The real Claude Code names its model in its stream (the scripted server's `mock-model`): the
/// cost by model says so, not `unknown`, although the manifest names none; and a run costing a
/// fraction of a cent shows it (`$0.0…`), not `$0.00`.
#[test]
fn cost_by_model_uses_the_model_the_agent_named() {
    let Some(_) = crate::real_agents::require("claude") else { return };
    let env = TestEnv::new();
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let manifest = env.write_manifest(
        "name = \"priced\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
    );
    let mut command = env.eden_command(&["run", manifest.to_str().unwrap(), "--json"]);
    command.envs(crate::real_agents::claude_env(&env, &server));
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    assert_eq!(run.json()["iterations"][0]["model"], "mock-model");
    let by_model = env.eden(&["sessions", "cost", "--by", "model"]);
    by_model.assert_code(0);
    assert!(by_model.stdout.contains("mock-model"), "{}", by_model.stdout);
    assert!(!by_model.stdout.contains("unknown"), "{}", by_model.stdout);
    let list = env.eden(&["sessions", "list"]);
    assert!(list.stdout.contains("$0.0") && !list.stdout.contains("$0.00 "), "{}", list.stdout);
}

/// `eden sessions show RUN --follow` from another terminal: the run's events as they come, as
/// `eden run` shows them, ending with the run and its exit code; a killed run's eden ends it too.
#[test]
fn follow_tails_a_run_until_it_ends() {
    use crate::support::{cli_manifest, wait_for};
    let env = TestEnv::new();
    let ready = env.root().join("ready");
    let agent = env.script(
        "agent.sh",
        &format!(
            "cat >/dev/null\ntouch '{}'\nfor i in 1 2 3; do echo step $i; sleep 0.3; done\nexit 3",
            ready.display()
        ),
    );
    let path = env.write_manifest(&cli_manifest(&agent, "[loop]\nmax_iterations = 1\n"));
    let run = env.eden_command(&["run", path.to_str().unwrap()]).stderr(std::process::Stdio::null()).spawn().unwrap();
    wait_for(&ready);
    let followed = env.eden(&["sessions", "show", "last", "--follow"]);
    let mut run = run;
    let status = run.wait().unwrap();
    assert_eq!(followed.code, status.code().unwrap(), "the run's exit code: {}", followed.stderr);
    assert_eq!(followed.code, 3);
    for said in ["step 1", "step 3", "iteration 1 finished"] {
        assert!(followed.stderr.contains(said), "{said}: {}", followed.stderr);
    }
    // As JSON lines, the same events as the log holds.
    let json = env.eden(&["sessions", "show", "last", "--follow", "--json"]);
    assert_eq!(json.code, 3);
    let log = std::fs::read_to_string(env.last_record()["log"].as_str().unwrap()).unwrap();
    assert_eq!(json.stdout.trim_end(), log.trim_end());
    // Followed later, each line keeps the time its event happened, not the follower's.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let later = env.eden(&["sessions", "show", "last", "--follow"]);
    let logged: serde_json::Value = log
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|event| event["text"] == "step 1")
        .unwrap();
    let when = &logged["ts"].as_str().unwrap()[11..19];
    assert!(
        later.stderr.lines().any(|line| line.starts_with(when) && line.ends_with("| step 1")),
        "{when}: {}",
        later.stderr
    );

    // A run whose eden is killed: following ends once its eden is gone.
    let ready2 = env.root().join("ready2");
    let agent = env.script("agent2.sh", &format!("cat >/dev/null\ntouch '{}'\nsleep 30", ready2.display()));
    let path = env.write_manifest(&cli_manifest(&agent, ""));
    let mut run =
        env.eden_command(&["run", path.to_str().unwrap()]).stderr(std::process::Stdio::null()).spawn().unwrap();
    wait_for(&ready2);
    let pid = run.id();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(500));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    });
    let followed = env.eden(&["sessions", "show", "last", "--follow"]);
    killer.join().unwrap();
    let _ = run.wait();
    assert!(followed.stderr.contains("its eden (pid"), "{}", followed.stderr);
    assert_ne!(followed.code, 0);
}

/// An agent reports its usage on every line of a long answer (a running total); `sessions show`
/// tells the iteration's tokens once, at its end.
#[test]
fn show_tells_an_iterations_tokens_once() {
    let env = TestEnv::new();
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent-streams/claude-write_bash.jsonl");
    let usage_lines =
        std::fs::read_to_string(&fixture).unwrap().lines().filter(|line| line.contains("\"usage\"")).count();
    assert!(usage_lines > 2, "the fixture reports usage {usage_lines} times");
    let agent = env.script("agent.sh", &format!("cat >/dev/null\ncat '{}'", fixture.display()));
    let manifest = crate::support::cli_manifest(&agent, "[loop]\nmax_iterations = 1\nrequire_completion = false\n")
        .replace("kind = \"cli\"\n", "kind = \"cli\"\nparser = \"claude-code\"\n");
    env.run_manifest(&manifest, &[]);
    let show = env.eden(&["sessions", "show", "last", "--no-pager"]);
    show.assert_code(0);
    assert_eq!(show.stdout.matches("  tokens: ").count(), 1, "{}", show.stdout);
}

/// A session of 600 tool calls (16,000 in a session of hours): the record keeps the latest 500
/// and counts the others, so it stays small though it is written at every phase; the log has
/// every call, and `sessions show` of a run without a log says what the record left out.
#[test]
fn a_long_sessions_record_keeps_its_latest_tool_calls() {
    let env = TestEnv::new();
    let agent = env.script(
        "calls.sh",
        "cat >/dev/null\nfor n in $(seq 600); do\n\
         echo '{\"type\":\"assistant\",\"message\":{\"id\":\"msg_'$n'\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t'$n'\",\"name\":\"Bash\",\"input\":{\"command\":\"step '$n'\"}}]}}'\n\
         echo '{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t'$n'\",\"content\":\"no\",\"is_error\":'$([ $n = 600 ] && echo true || echo false)'}]}}'\n\
         done\n",
    );
    let manifest = crate::support::cli_manifest(&agent, "[loop]\nmax_iterations = 1\nrequire_completion = false\n")
        .replace("kind = \"cli\"\n", "kind = \"cli\"\nparser = \"claude-code\"\n");
    let run = env.run_manifest(&manifest, &[]);
    let record = run.record();
    let iteration = &record["iterations"][0];
    let calls = iteration["tool_calls"].as_array().expect("tool calls");
    assert_eq!((calls.len(), iteration["tool_calls_omitted"].as_u64()), (500, Some(100)), "{iteration}");
    assert_eq!(calls[0]["summary"], "step 101");
    assert_eq!((&calls[499]["summary"], &calls[499]["ok"]), (&"step 600".into(), &false.into()));
    let log = std::fs::read_to_string(record["log"].as_str().expect("a log")).unwrap();
    assert_eq!(log.matches("\"tool_call\"").count(), 600, "the log has every call");
    std::fs::remove_file(record["log"].as_str().unwrap()).unwrap();
    let show = env.eden(&["sessions", "show", "last", "--no-pager"]);
    show.assert_code(0);
    assert!(show.stdout.contains("… 100 earlier tool calls"), "{}", show.stdout);
    assert_eq!(show.stdout.matches("▸ Bash step").count(), 499, "{}", &show.stdout[..2000]);
}
