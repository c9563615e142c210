//! The command line itself: version, help, the flag-only form, overrides, dry runs, JSON, logs.

use crate::support::{cli_manifest, TestEnv};

#[test]
fn version_and_help() {
    let env = TestEnv::new();
    let run = env.eden(&["--version"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), format!("eden {}", env!("CARGO_PKG_VERSION")));
    let run = env.eden(&["help"]);
    run.assert_code(0);
    assert!(run.stdout.contains("run") && run.stdout.contains("Exit codes"), "{}", run.stdout);
    let run = env.eden(&["run", "--help"]);
    assert!(run.stdout.contains("--set <KEY=VALUE>") && run.stdout.contains("--dry-run"));
    env.eden(&["frobnicate"]).assert_code(2);
}

#[test]
fn the_flag_only_form_runs_a_cli_agent() {
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        "prompt=$(cat)\necho \"$prompt\" > prompt.txt && git add prompt.txt && git commit -q -m \"$1\"\necho '<promise>COMPLETE</promise>'",
    );
    let run = env.eden(&[
        "run",
        "--agent",
        "cli",
        "--binary",
        agent.to_str().unwrap(),
        "--prompt",
        "fix issue {{ISSUE}} on {{BASE_BRANCH}}",
        "--arg",
        "ISSUE=42",
        "--set",
        "agent.args=[\"from-args\"]",
        "--name",
        "flags",
        "--json",
    ]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["name"], "flags");
    assert_eq!(record["iterations"][0]["prompt"], "fix issue 42 on main");
    assert_eq!(std::fs::read_to_string(env.repo.join("prompt.txt")).unwrap(), "fix issue 42 on main\n");
    assert_eq!(env.log_subjects("main")[0], "from-args");
}

#[test]
fn prompts_can_go_on_argv_with_the_model_filled_in() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "echo \"model=$1 prompt=$2 stdin=$(cat | wc -c)\"\necho DONE");
    let manifest = format!(
        "{}model = \"m-1\"\nargs = [\"{{model}}\"]\nprompt_via = \"arg\"\n",
        cli_manifest(&agent, "[loop]\ncompletion_signal = \"DONE\"")
    );
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("model=m-1 prompt=iteration 1 stdin=0"), "{}", run.stderr);
}

#[test]
fn set_overrides_manifest_values() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null\necho working");
    let run =
        env.run_manifest(&cli_manifest(&agent, "[loop]\nmax_iterations = 5"), &["--set", "loop.max_iterations=2"]);
    run.assert_code(1);
    assert_eq!(run.record()["iterations"].as_array().unwrap().len(), 2);
}

#[test]
fn dry_run_prints_the_plan_and_touches_nothing() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "exit 0");
    let manifest = format!(
        "{}env = {{ API_TOKEN = \"${{SECRET_FOR_TEST}}\" }}\n",
        cli_manifest(&agent, "[loop]\nidle_timeout = 90\ncompletion_timeout = \"1h30m\"")
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--dry-run"]);
    command.env("SECRET_FOR_TEST", "hunter2-secret");
    let run = crate::support::Run::from(command.output().unwrap());
    run.assert_code(0);
    let plan = run.json();
    assert_eq!(plan["plan"]["steps"][0]["agent"]["kind"], "cli");
    assert_eq!(plan["plan"]["steps"][0]["loop"]["idle_timeout"], "1m30s");
    assert_eq!(plan["plan"]["steps"][0]["loop"]["completion_timeout"], "1h30m");
    assert_eq!(plan["plan"]["steps"][0]["agent"]["env"]["API_TOKEN"], "***");
    assert_eq!(plan["workspace"]["strategy"], "merge-to-head");
    assert_eq!(plan["workspace"]["base_branch"], "main");
    assert!(!run.stdout.contains("hunter2"), "env values never printed");
    env.assert_pristine();
    assert!(!env.repo.join(".eden").exists(), "a dry run creates nothing");
}

#[test]
fn the_log_file_gets_every_event_as_json_lines() {
    let env = TestEnv::new();
    let agent =
        env.script("agent.sh", "cat >/dev/null\necho 'hello from the agent'\necho '<promise>COMPLETE</promise>'");
    let run =
        env.run_manifest(&cli_manifest(&agent, "[logging]\nfile = \".eden/logs/{name}-{run_id}.log\""), &["--quiet"]);
    run.assert_code(0);
    assert!(run.stderr.is_empty(), "--quiet prints nothing: {}", run.stderr);
    let id = run.record()["id"].as_str().unwrap().to_owned();
    let log = std::fs::read_to_string(env.repo.join(format!(".eden/logs/t-{id}.log"))).unwrap();
    let events: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "run_started",
            "iteration_started",
            "prompt",
            "agent_text",
            "agent_text",
            "completion_signal",
            "iteration_finished",
            "run_finished"
        ]
    );
    assert_eq!(events[3]["text"], "hello from the agent");
    assert!(events.iter().all(|e| e["ts"].is_string()));
}

#[test]
fn plain_output_when_stderr_is_not_a_terminal() {
    let env = TestEnv::new();
    let run = env.eden(&["run", "--agent", "simulated", "--prompt", "hi"]);
    run.assert_code(0);
    assert!(run.stdout.is_empty(), "stdout is for data only");
    let first = run.stderr.lines().next().unwrap();
    let (clock, rest) = first.split_at(8);
    assert!(clock.chars().all(|c| c.is_ascii_digit() || c == ':'), "timestamped: {first}");
    assert!(rest.starts_with(" eden run `hi`"), "named after the prompt: {first}");
    assert!(run.stderr.contains("| simulated agent: working"));
    assert!(!run.stderr.contains('\x1b'), "no escape codes when not a terminal");
}

#[test]
fn simulated_agent_exit_codes_and_delays() {
    let env = TestEnv::new();
    let run = env.eden(&[
        "run",
        "--agent",
        "simulated",
        "--prompt",
        "x",
        "--json",
        "--set",
        "agent.lines=[\"a\", \"b\"]",
        "--set",
        "agent.exit_code=3",
        "--set",
        "agent.line_delay=\"50ms\"",
    ]);
    run.assert_code(3);
    assert!(run.error_text().contains("exited with code 3"));
    assert_eq!(run.record()["iterations"][0]["exit_code"], 3);
}

#[test]
fn outside_a_repository_is_a_clear_error() {
    let env = TestEnv::new();
    let outside = env.root().join("not-a-repo");
    std::fs::create_dir_all(&outside).unwrap();
    let mut command = env.eden_command(&["run", "--agent", "simulated", "--prompt", "x"]);
    command.current_dir(&outside).env("GIT_CEILING_DIRECTORIES", env.root());
    let run = crate::support::Run::from(command.output().unwrap());
    run.assert_code(2);
    insta::assert_snapshot!(env.redact(&run.error_text()), @r"
    error: `[TMP]/not-a-repo` is not inside a git repository
    hint: run eden from your repository (one with a working tree), or pass `--repo PATH`
    ");
}

/// An agent's output may carry escape sequences (its own, or a file's it printed): they reach
/// the terminal neutralized, while the log keeps the raw text.
#[test]
fn escape_sequences_in_agent_output_are_neutralized_on_the_terminal() {
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        r#"cat >/dev/null
printf 'title \033]0;pwned\007 clipboard \033]52;c;ZWNobyBoaQ==\033\\ clear \033[2J\033[H\n'
printf 'back\rspace \033[1;31mred\033[0m\n'
echo '<promise>COMPLETE</promise>'"#,
    );
    let manifest = cli_manifest(&agent, "[logging]\nfile = \".eden/logs/run.jsonl\"");
    let path = env.write_manifest(&manifest);
    let path = path.to_str().unwrap();

    // Plain lines (stderr is a pipe) and the live display (stderr is a terminal, through
    // `script`, which gives the command a pseudo-terminal).
    let plain = env.eden(&["run", path]);
    plain.assert_code(0);
    let command = format!("{} run {path} 2>&1", crate::support::EDEN);
    let live = crate::support::Run::from(live_output(&env, &command));
    live.assert_code(0);
    assert!(
        live.stdout.contains("completed in iteration 1/") && live.stdout.contains("⠙"),
        "the live display ran: {}",
        live.stdout
    );
    for (display, text) in [("plain", &plain.stderr), ("live", &live.stdout)] {
        assert!(text.contains("title ␛]0;pwned␇ clipboard ␛]52;c;ZWNobyBoaQ==␛\\ clear ␛[2J␛[H"), "{display}: {text}");
        assert!(text.contains("back␍space \u{1b}[1;31mred\u{1b}[0m"), "{display}: {text}");
        for raw in ["\u{1b}]", "\u{1b}[2J", "\u{1b}[H", "\u{7}", "back\r"] {
            assert!(!text.contains(raw), "{display} shows {raw:?} raw: {text:?}");
        }
    }
    // The log keeps exactly what the agent printed.
    let log = std::fs::read_to_string(env.repo.join(".eden/logs/run.jsonl")).unwrap();
    let texts: Vec<String> = log
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["event"] == "agent_text")
        .map(|event| event["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        texts[0],
        "title \u{1b}]0;pwned\u{7} clipboard \u{1b}]52;c;ZWNobyBoaQ==\u{1b}\\ clear \u{1b}[2J\u{1b}[H"
    );
    assert_eq!(texts[1], "back\rspace \u{1b}[1;31mred\u{1b}[0m");
}

/// Run a shell command under `script`, which gives it a pseudo-terminal.
fn live_output(env: &TestEnv, command: &str) -> std::process::Output {
    let mut script = std::process::Command::new("script");
    script.args(["-qefc", command, "/dev/null"]).current_dir(&env.repo).stdin(std::process::Stdio::null());
    env.apply_env(&mut script);
    script.output().expect("`script` (util-linux) runs")
}

/// Every run writes its events as JSON lines to `.eden/logs/<run-id>.jsonl` unless told
/// otherwise; the record and the summary say where.
#[test]
fn every_run_has_a_log_unless_turned_off() {
    let env = TestEnv::new();
    let agent =
        env.script("agent.sh", "cat >/dev/null\necho 'hello from the agent'\necho '<promise>COMPLETE</promise>'");
    let run = env.run_manifest(&cli_manifest(&agent, ""), &[]);
    run.assert_code(0);
    let record = run.record();
    let id = record["id"].as_str().unwrap();
    let log = env.repo.join(format!(".eden/logs/{id}.jsonl"));
    assert_eq!(record["log"], log.to_str().unwrap());
    assert!(std::fs::read_to_string(&log).unwrap().contains("hello from the agent"));
    assert!(run.stderr.contains(&format!("log: {}", log.display())), "{}", run.stderr);

    let run = env.run_manifest(&cli_manifest(&agent, "[logging]\nfile = false"), &[]);
    run.assert_code(0);
    assert_eq!(run.record()["log"], serde_json::Value::Null);
    assert!(!run.stderr.contains("log: "), "{}", run.stderr);
    assert_eq!(std::fs::read_dir(env.repo.join(".eden/logs")).unwrap().count(), 1, "no second log");

    // An absolute path is the user's to choose.
    let elsewhere = env.root().join("logs/{name}.jsonl");
    let run = env.run_manifest(&cli_manifest(&agent, &format!("[logging]\nfile = \"{}\"", elsewhere.display())), &[]);
    run.assert_code(0);
    assert!(env.root().join("logs/t.jsonl").exists());
}

/// The example manifests in `manifests/` run as shipped, under the defaults, and again (the one that needs
/// Claude Code is run by `structured::the_implement_review_manifest_runs_end_to_end`).
#[test]
fn the_example_manifests_run() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests");
    for (manifest, extra) in [
        ("hello.toml", &[][..]),
        ("commit-loop.toml", &[][..]),
        ("named-branch.toml", &["--set", "agent.line_delay=\"10ms\""][..]),
    ] {
        let env = TestEnv::new();
        let path = examples.join(manifest);
        let mut args = vec!["run", path.to_str().unwrap(), "--json"];
        args.extend_from_slice(extra);
        // Twice in one repository: an example keeps working after its first run merged.
        for _ in 0..2 {
            let run = env.eden(&args);
            run.assert_code(0);
            assert!(run.record()["completion_signal"].is_string(), "{manifest}");
        }
    }
}

/// Paths given as flags are relative to where eden runs, as with every command-line tool;
/// paths in a manifest stay relative to the manifest. Messages show them normalized.
#[test]
fn flag_paths_are_relative_to_the_current_directory() {
    let env = TestEnv::new();
    env.write(
        "agents/here.sh",
        "#!/bin/sh\ncat >/dev/null\necho 'from the current directory <promise>COMPLETE</promise>'\n",
    );
    std::process::Command::new("chmod").args(["+x"]).arg(env.repo.join("agents/here.sh")).status().unwrap();
    env.write("prompts/task.md", "the task from the current directory\n");
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "agent and prompt"]);
    // A manifest in another folder, which has neither file.
    let elsewhere = env.root().join("cfg");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("plan.toml"), "prompt = \"x\"\n[agent]\nkind = \"simulated\"\n").unwrap();
    let manifest = elsewhere.join("plan.toml");
    let run = env.eden(&[
        "run",
        manifest.to_str().unwrap(),
        "--agent",
        "cli",
        "--binary",
        "./agents/here.sh",
        "--prompt-file",
        "prompts/task.md",
        "--json",
    ]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["iterations"][0]["prompt"], "the task from the current directory\n");
    let message = env
        .redact(&env.eden(&["run", "--agent", "cli", "--binary", "agents/../nope.sh", "--prompt", "x"]).error_text());
    insta::assert_snapshot!(message, @"
    error: `--binary`: agent binary `[TMP]/repo/nope.sh` does not exist
    hint: a name is looked up on PATH; a path with `/` is relative to the manifest's folder (to the current directory when given as a flag)
    ");
}

/// `--agent` that changes the manifest's kind drops the keys of the old kind, and says so.
#[test]
fn changing_the_agent_kind_drops_the_old_kinds_keys() {
    let env = TestEnv::new();
    let agent = env.script("agent.sh", "cat >/dev/null\necho '<promise>COMPLETE</promise>'");
    let path = env.write_manifest(&cli_manifest(&agent, "").replace("binary =", "args = [\"-x\"]\nbinary ="));
    let run = env.eden(&["run", path.to_str().unwrap(), "--agent", "simulated", "--json"]);
    run.assert_code(0);
    assert!(
        run.stderr.contains(
            "warning: `--agent` replaces agent kind `cli`, so the manifest's `agent.binary`, `agent.args` for it are not used"
        ),
        "{}",
        run.stderr
    );
    // The same for the keys only some kinds have, and for `--sandbox`: dropped, said, and the
    // run goes on.
    let manifest =
        "name = \"n\"\nprompt = \"go\"\n[agent]\nkind = \"claude-code\"\nmodel = \"opus\"\neffort = \"high\"\n\
        [sandbox]\nkind = \"docker\"\nimage = \"x\"\nmemory = \"1g\"\nnetwork = \"none\"\n";
    let path = env.write_manifest(manifest);
    let run = env.eden(&["run", path.to_str().unwrap(), "--agent", "simulated", "--sandbox", "none", "--json"]);
    run.assert_code(0);
    assert!(
        run.stderr.contains("so the manifest's `agent.effort`, `agent.model` for it are not used"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("so the manifest's `sandbox.image`, `sandbox.network`, `sandbox.memory` for it are not used"),
        "{}",
        run.stderr
    );
    let isolated =
        env.eden(&["run", path.to_str().unwrap(), "--agent", "simulated", "--sandbox", "isolated", "--dry-run"]);
    isolated.assert_code(0);
    assert!(isolated.stderr.contains("`sandbox.image`, `sandbox.memory` for it are not used"), "{}", isolated.stderr);
}

#[test]
fn changing_the_strategy_drops_the_old_strategys_keys() {
    let env = TestEnv::new();
    let path = env.write_manifest(
        "name = \"n\"\nprompt = \"go\"\n[agent]\nkind = \"simulated\"\nlines = [\"<promise>COMPLETE</promise>\"]\n\
         [branch]\nstrategy = \"named\"\nname = \"eden/feature\"\nreuse_worktree = true\n",
    );
    let run = env.eden(&["run", path.to_str().unwrap(), "--strategy", "merge-to-head", "--json"]);
    run.assert_code(0);
    assert!(
        run.stderr.contains(
            "warning: `--strategy` replaces strategy `named`, so the manifest's `branch.name`, `branch.reuse_worktree` are not used"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(run.json()["strategy"], "merge-to-head");
    // The same strategy again changes nothing and says nothing.
    let same = env.eden(&["run", path.to_str().unwrap(), "--strategy", "named", "--json"]);
    same.assert_code(0);
    assert!(!same.stderr.contains("replaces strategy"), "{}", same.stderr);
}

/// With `--json` or `--json-events`, stdout is JSON even when the run cannot start: one object
/// with the error, so a script parsing stdout never gets nothing.
#[test]
fn json_output_carries_an_error_before_the_run() {
    let env = TestEnv::new();
    for flag in ["--json", "--json-events"] {
        let run = env.eden(&["run", "no-such.toml", flag]);
        run.assert_code(2);
        let json = run.json();
        assert_eq!(json["error"]["kind"], "usage", "{flag}");
        assert_eq!(json["error"]["exit_code"], 2);
        assert_eq!(json["error"]["message"], "manifest `no-such.toml` not found");
        assert!(json["error"]["hint"].as_str().unwrap().starts_with("pass the path of a TOML manifest"));
    }
    let run = env.eden(&["run", "--json", "--json-events", "--agent", "simulated", "--prompt", "x"]);
    run.assert_code(2);
    insta::assert_snapshot!(run.error_text(), @"
    error: `--json` and `--json-events` cannot be used together
    hint: `--json` prints the run record at the end; `--json-events` prints every event, and the last one carries the record
    ");
    env.assert_pristine();
}

/// A `TERM=dumb` terminal cannot move the cursor or show colours: plain lines, no escapes.
#[test]
fn a_dumb_terminal_gets_plain_lines() {
    let env = TestEnv::new();
    let command = format!("TERM=dumb {} run --agent simulated --prompt hi 2>&1", crate::support::EDEN);
    let output = live_output(&env, &command);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!text.contains('\u{1b}'), "no escape sequences: {text:?}");
    assert!(text.contains("| simulated agent: working"), "plain lines: {text}");
}

/// The plain display buffers its lines, but never holds one back while the agent goes quiet:
/// the agent prints a line and waits until the test has seen it on eden's stderr.
#[test]
fn a_plain_line_is_shown_while_the_agent_is_still_working() {
    use std::io::BufRead;
    let env = TestEnv::new();
    let seen = env.root().join("seen");
    let agent = env.script(
        "agent.sh",
        &format!(
            "cat >/dev/null\necho 'first line'\nfor _ in $(seq 600); do [ -e {seen} ] && break; sleep 0.05; done\n\
             [ -e {seen} ] || exit 1\necho '<promise>COMPLETE</promise>'",
            seen = seen.display()
        ),
    );
    let manifest = env.write_manifest(&cli_manifest(&agent, ""));
    let mut command = env.eden_command(&["run", manifest.to_str().unwrap()]);
    let mut child = command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut shown = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let found = line.ends_with("| first line");
        shown.push(line);
        if found {
            std::fs::write(&seen, "").unwrap();
            break;
        }
    }
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(child.wait().unwrap().success(), "{shown:?} {rest:?}");
    assert!(seen.exists(), "the line never came: {shown:?}");
}

/// `eden run` with no manifest named runs `./eden.toml`, as `eden init` wrote it (flags still
/// override its keys), and says so; without one it says how to get one.
#[test]
fn eden_run_alone_runs_the_eden_toml_init_wrote() {
    let env = TestEnv::new();
    let none = env.eden(&["run"]);
    none.assert_code(2);
    assert!(none.stderr.contains("write one with `eden init` (then `eden run` runs `./eden.toml`)"), "{}", none.stderr);
    let init = env.eden(&["init", "--agent", "simulated"]);
    init.assert_code(0);
    assert!(init.stderr.contains("then: eden run\n"), "{}", init.stderr);
    let run = env.eden(&["run", "--json", "--set", "name=from-default"]);
    run.assert_code(0);
    assert!(run.stderr.contains("note: running `./eden.toml` (no manifest was named)"), "{}", run.stderr);
    let record = run.json();
    assert_eq!(record["name"], "from-default");
    assert!(record["manifest"].as_str().unwrap().ends_with("eden.toml"), "{record:#}");
}

/// The subcommands (`run`, `sessions cost`, …) as `--help` lists them, found from the top.
fn subcommands(env: &TestEnv, path: &[String]) -> Vec<Vec<String>> {
    let args: Vec<&str> = path.iter().map(String::as_str).chain(["--help"]).collect();
    let help = env.eden(&args).stdout;
    let mut found = vec![path.to_vec()];
    let listed = help.split("Commands:\n").nth(1).map(|rest| rest.split("\n\n").next().unwrap_or("").to_owned());
    for line in listed.unwrap_or_default().lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        if !name.is_empty() && name != "help" {
            let mut deeper = path.to_vec();
            deeper.push(name.to_owned());
            found.extend(subcommands(env, &deeper));
        }
    }
    found
}

/// No panic is reachable from the command line: every flag of every subcommand that takes a
/// value, given a wrong one, ends with exit 2, an `error:` and a way forward (a `hint:` or
/// clap's "try '--help'"), and changes nothing. Free text (a prompt, a model, a name, an image
/// tag, a branch to filter by) has no wrong value and is left out.
#[test]
fn a_wrong_value_for_any_flag_is_exit_2_with_a_hint() {
    const FREE: [&str; 8] = ["PROMPT", "MODEL", "NAME", "TAG", "IMAGE", "BRANCH", "TEXT", "SESSION"];
    let env = TestEnv::new();
    // A path no file or folder can be at: below a file.
    let blocker = env.root().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let nowhere = blocker.join("below").display().to_string();
    let mut tried = 0;
    for path in subcommands(&env, &[]) {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = env.eden(&args).stdout;
        for line in help.lines().map(str::trim_start).filter(|line| line.starts_with('-')) {
            let Some(flag) = line.split([' ', ',']).find(|word| word.starts_with("--")) else { continue };
            let Some(value_name) = line.split('<').nth(1).and_then(|rest| rest.split('>').next()) else { continue };
            if FREE.contains(&value_name) {
                continue;
            }
            let wrong = match value_name {
                "N" => "many",
                "DURATION" => "soon",
                "ENGINE" | "HOST" => "ftp://nowhere",
                name if name.contains('=') => "=no-key",
                "PATH" | "FILE" | "DIR" | "MANIFEST" => nowhere.as_str(),
                name if name.starts_with("RUN") => "no-such-run@x",
                _ => "no-such-value",
            };
            let mut command: Vec<&str> = path.iter().map(String::as_str).collect();
            command.extend([flag, wrong]);
            let before = crate::support::tree_digest(&env.repo);
            let run = env.eden(&command);
            let said = format!("`eden {}`: {}", command.join(" "), run.stderr);
            assert!(!run.stderr.contains("panicked"), "{said}");
            assert_eq!(run.code, 2, "{said}");
            assert!(run.stderr.contains("error"), "{said}");
            assert!(run.stderr.contains("hint:") || run.stderr.contains("--help"), "{said}");
            assert_eq!(crate::support::tree_digest(&env.repo), before, "changed something: {said}");
            tried += 1;
        }
    }
    assert!(tried > 40, "only {tried} flags were tried");
}
