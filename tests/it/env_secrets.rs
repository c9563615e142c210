//! Environment for the agent and hooks (`.eden/.env`, `[sandbox] env`, `[agent] env`, hook
//! `env`), its precedence, and secrets: a planted secret must not appear in anything eden
//! writes — display, log file, run record, `--json-events`, error messages.

use crate::support::{cli_manifest, Run, TestEnv};

/// Every variable the agent can see, one `NAME=value` line each, then a failure so that the
/// error message (with the output tail) is exercised too.
const PRINT_ENV: &str = "cat >/dev/null\nfor v in DOT_ONLY DOT_AND_PROCESS SHARED AGENT_TOKEN FROM_DOT MINE; do eval echo \"$v=\\$$v\"; done\necho \"stderr sees $AGENT_TOKEN\" >&2\nexit 1";

fn run_with_env(env: &TestEnv, manifest: &str, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let path = env.write_manifest(manifest);
    let mut all = vec!["run", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let mut command = env.eden_command(&all);
    for (key, value) in vars {
        command.env(key, value);
    }
    Run::from(command.output().unwrap())
}

#[test]
fn a_planted_secret_appears_in_no_output() {
    const SECRETS: [&str; 4] =
        ["dotenv-secret-2b7f9c", "process-secret-81ad3e", "sandbox-secret-c4d2e1", "redacted-by-name-77aa01"];
    let env = TestEnv::new();
    std::fs::create_dir_all(env.repo.join(".eden")).unwrap();
    std::fs::write(env.repo.join(".eden/.env"), format!("# secrets\nDOT_API_KEY=\"{}\"\n", SECRETS[0])).unwrap();
    let agent = env.script("agent.sh", &format!("{PRINT_ENV}\n"));
    let manifest = cli_manifest(
        &agent,
        "redact = [\"MINE\"]\n[logging]\nfile = \".eden/logs/run.log\"\n\
         [sandbox]\nenv = { DB_PASSWORD = \"sandbox-secret-c4d2e1\" }\n\
         [hooks.sandbox]\non_sandbox_ready = [\"echo hook: $DB_PASSWORD $DOT_API_KEY\"]\n\
         on_close = [\"echo closing with $DB_PASSWORD; exit 1\"]\n",
    )
    .replace(
        "[agent]\n",
        "[agent]\nenv = { AGENT_TOKEN = \"${PROCESS_TOKEN}\", FROM_DOT = \"${DOT_API_KEY}\", MINE = \"redacted-by-name-77aa01\" }\n",
    );
    for args in [&["--json"][..], &["--json-events"][..]] {
        let run = run_with_env(&env, &manifest, args, &[("PROCESS_TOKEN", SECRETS[1])]);
        run.assert_code(3);
        // The agent did see the values: they were redacted on the way out, not withheld.
        assert!(run.stderr.contains("| AGENT_TOKEN=***"), "{}", run.stderr);
        assert!(run.stderr.contains("| FROM_DOT=***"), "{}", run.stderr);
        assert!(run.stderr.contains("| MINE=***"), "{}", run.stderr);
        assert!(run.stderr.contains("> hook: *** ***"), "{}", run.stderr);
        assert!(run.error_text().contains("stderr sees ***"), "{}", run.stderr);
        let mut outputs = vec![("stdout", run.stdout.clone()), ("stderr", run.stderr.clone())];
        for dir in [".eden/logs", ".eden/runs"] {
            for file in std::fs::read_dir(env.repo.join(dir)).unwrap() {
                let path = file.unwrap().path();
                outputs.push(("file", std::fs::read_to_string(&path).unwrap()));
            }
        }
        for (what, text) in &outputs {
            for secret in SECRETS {
                assert!(!text.contains(secret), "{secret} leaked into {what}:\n{text}");
            }
        }
    }
}

#[test]
fn env_precedence_agent_over_sandbox_over_dotenv_and_process_over_dotenv() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.repo.join(".eden")).unwrap();
    std::fs::write(
        env.repo.join(".eden/.env"),
        "DOT_ONLY=from-dotenv\nDOT_AND_PROCESS=from-dotenv\nSHARED=from-dotenv\nexport FROM_DOT_SRC='dot value'\n",
    )
    .unwrap();
    let out = env.root().join("env.txt");
    let agent = env.script(
        "agent.sh",
        &format!(
            "cat >/dev/null\nfor v in DOT_ONLY DOT_AND_PROCESS SHARED AGENT_ONLY FROM_DOT; do eval echo \"$v=\\$$v\"; done > '{}'\necho '<promise>COMPLETE</promise>'",
            out.display()
        ),
    );
    let manifest = cli_manifest(&agent, "[sandbox]\nenv = { SHARED = \"from-sandbox\" }\n")
        .replace("[agent]\n", "[agent]\nenv = { AGENT_ONLY = \"from-agent\", FROM_DOT = \"${FROM_DOT_SRC}!\" }\n");
    let run = run_with_env(&env, &manifest, &["--json"], &[("DOT_AND_PROCESS", "from-process")]);
    run.assert_code(0);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "DOT_ONLY=from-dotenv\nDOT_AND_PROCESS=from-process\nSHARED=from-sandbox\nAGENT_ONLY=from-agent\nFROM_DOT=dot value!\n"
    );
    // Host hooks get `.eden/.env` but not `[sandbox] env`; sandbox hooks get both.
    let hooks_out = env.root().join("hooks.txt");
    let hooks = format!(
        "[hooks.host]\non_worktree_ready = [\"echo host $DOT_ONLY ${{SHARED:-unset}} >> '{0}'\"]\n[hooks.sandbox]\non_sandbox_ready = [\"echo sandbox $DOT_ONLY $SHARED >> '{0}'\"]\n",
        hooks_out.display()
    );
    let run = run_with_env(&env, &(manifest.clone() + &hooks), &["--json"], &[]);
    run.assert_code(0);
    assert_eq!(
        std::fs::read_to_string(&hooks_out).unwrap(),
        "host from-dotenv from-dotenv\nsandbox from-dotenv from-sandbox\n"
    );
}

#[test]
fn a_bad_env_file_is_an_error_naming_its_line() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.repo.join(".eden")).unwrap();
    std::fs::write(env.repo.join(".eden/.env"), "A=1\nsk-live-0123456789abcdef\n").unwrap();
    let agent = env.script("agent.sh", "cat >/dev/null");
    let run = run_with_env(&env, &cli_manifest(&agent, ""), &[], &[]);
    run.assert_code(2);
    insta::assert_snapshot!(env.redact(&run.error_text()), @r"
    error: [TMP]/repo/.eden/.env:2: the line is not `NAME=value`
    hint: write each variable as `NAME=value` (quotes allowed); `#` starts a comment
    ");
    assert!(!run.stderr.contains("sk-live"), "nothing of the line is echoed");
    assert!(!env.repo.join(".eden/worktrees").exists());
}

/// `--dry-run` shows what eden will run: the agent's program, arguments and environment, and
/// the plan's values, hiding only what is secret (a key, a token, anything in `.eden/.env`),
/// not a base URL or a `1`.
#[test]
fn dry_run_hides_only_secrets() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.repo.join(".eden")).unwrap();
    std::fs::write(env.repo.join(".eden/.env"), "DB_URL=postgres://user:hunter2-pass@db\n").unwrap();
    let manifest = "name = \"dry\"\nprompt = \"work\"\n[agent]\nkind = \"claude-code\"\nbinary = \"/bin/true\"\n\
        env = { ANTHROPIC_BASE_URL = \"http://127.0.0.1:9999\", DISABLE_TELEMETRY = \"1\", ANTHROPIC_API_KEY = \"${ANTHROPIC_API_KEY}\" }\n";
    let path = env.write_manifest(manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--dry-run"]);
    command.env("ANTHROPIC_API_KEY", "sk-ant-test-secret-value");
    let run = crate::support::Run::from(command.output().unwrap());
    run.assert_code(0);
    assert!(!run.stdout.contains("sk-ant-test-secret-value") && !run.stdout.contains("hunter2"), "{}", run.stdout);
    let out: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let planned = &out["plan"]["steps"][0]["agent"]["env"];
    assert_eq!(planned["ANTHROPIC_BASE_URL"], "http://127.0.0.1:9999");
    assert_eq!(planned["DISABLE_TELEMETRY"], "1");
    assert_eq!(planned["ANTHROPIC_API_KEY"], "***");
    let command = &out["agent_commands"][0];
    assert!(command["program"].as_str().unwrap().ends_with("/true"), "{command}");
    let args: Vec<&str> = command["args"].as_array().unwrap().iter().filter_map(|a| a.as_str()).collect();
    assert!(args.starts_with(&["-p", "--output-format", "stream-json"]), "{args:?}");
    assert_eq!(command["prompt_on_stdin"], true);
    assert_eq!(command["env"]["ANTHROPIC_API_KEY"], "***");
    assert_eq!(command["env"]["ANTHROPIC_BASE_URL"], "http://127.0.0.1:9999");
    assert_eq!(out["plan"]["env"]["dotenv"]["DB_URL"], "***");
}
