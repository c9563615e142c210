//! Bad manifests: each gives its file:line:col, a hint, exit 2, and leaves nothing behind.

use crate::support::TestEnv;

/// Run a bad manifest (plus args); assert exit 2 and a pristine repository; return the message.
fn rejected(manifest: &str, args: &[&str]) -> String {
    let env = TestEnv::new();
    std::fs::write(env.root().join("prompt.md"), "a prompt from a file").unwrap();
    let path = env.write_manifest(manifest);
    let mut all = vec!["run", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let run = env.eden(&all);
    run.assert_code(2);
    assert!(run.stdout.is_empty());
    env.assert_pristine();
    assert!(!env.repo.join(".eden").exists(), "nothing may be created");
    env.redact(&run.error_text())
}

const OK: &str = "prompt = \"do it\"\n[agent]\nkind = \"simulated\"\n";

#[test]
fn unknown_key_with_suggestion() {
    insta::assert_snapshot!(rejected("prompt = \"x\"\n[agent]\nkind = \"simulated\"\nmodle = \"m\"\n", &[]), @r"
    error: [TMP]/plan.toml:4:1: unknown key `modle` in `[agent]`
    hint: did you mean `model`? known keys: `kind`, `model`, `effort`, `extra_args`, `env`, `resume`, `binary`, `args`, `prompt_via`, `parser`, `lines`, `line_delay`, `exit_code`
    ");
}

#[test]
fn unknown_top_level_key() {
    insta::assert_snapshot!(rejected("promt = \"x\"\n[agent]\nkind = \"simulated\"\n", &[]), @"
    error: [TMP]/plan.toml:1:1: unknown key `promt` at the top level
    hint: did you mean `prompt`? known keys: `name`, `prompt`, `prompt_file`, `prompt_args`, `agent`, `sandbox`, `branch`, `loop`, `timeouts`, `hooks`, `copy_to_worktree`, `output`, `logging`, `step`, `budget`, `redact`, `check`, `service`, `artifacts`, `attempts`, `attempts_pick`, `attempts_score`, `forge`, `pull_request`, `notify`
    ");
}

#[test]
fn unknown_section() {
    insta::assert_snapshot!(rejected(&format!("{OK}[lop]\nmax_iterations = 2\n"), &[]), @"
    error: [TMP]/plan.toml:4:2: unknown key `lop` at the top level
    hint: did you mean `loop`? known keys: `name`, `prompt`, `prompt_file`, `prompt_args`, `agent`, `sandbox`, `branch`, `loop`, `timeouts`, `hooks`, `copy_to_worktree`, `output`, `logging`, `step`, `budget`, `redact`, `check`, `service`, `artifacts`, `attempts`, `attempts_pick`, `attempts_score`, `forge`, `pull_request`, `notify`
    ");
}

#[test]
fn unknown_agent_kind() {
    insta::assert_snapshot!(rejected("prompt = \"x\"\n[agent]\nkind = \"simulatd\"\n", &[]), @r"
    error: [TMP]/plan.toml:3:8: `agent.kind` has an unknown value `simulatd`
    hint: did you mean `simulated`? expected one of: `claude-code`, `codex`, `opencode`, `pi`, `cursor`, `copilot`, `cli`, `simulated`
    ");
}

#[test]
fn wrong_type() {
    insta::assert_snapshot!(rejected(&format!("{OK}[loop]\nmax_iterations = \"3\"\n"), &[]), @r#"error: [TMP]/plan.toml:5:18: `loop.max_iterations`: invalid type: string "3", expected a positive whole number"#);
}

#[test]
fn bad_duration() {
    insta::assert_snapshot!(rejected(&format!("{OK}[loop]\nidle_timeout = \"10x\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:5:16: `loop.idle_timeout`: invalid duration `10x`, expected a duration like "90s", "10m" or "1h30m", or a number of seconds
    hint: write a duration like `90s`, `10m`, `1h30m` or `2d` (each unit once, largest first), or a number of seconds
    "#);
}

#[test]
fn zero_and_negative_durations() {
    insta::assert_snapshot!(rejected(&format!("{OK}[timeouts]\niteration_step = -5\n"), &[]), @r"error: [TMP]/plan.toml:5:18: `timeouts.iteration_step`: duration -5 is out of range, expected a positive number of seconds");
    insta::assert_snapshot!(rejected(&format!("{OK}[loop]\ncompletion_timeout = \"0s\"\n"), &[]), @r"error: [TMP]/plan.toml:5:22: `loop.completion_timeout`: duration `0s` is zero, expected a positive duration");
}

#[test]
fn empty_signal_list_and_empty_signal() {
    insta::assert_snapshot!(rejected(&format!("{OK}[loop]\ncompletion_signal = []\n"), &[]), @r#"
    error: [TMP]/plan.toml:5:21: `loop.completion_signal` is an empty list
    hint: give at least one signal, e.g. "<promise>COMPLETE</promise>"
    "#);
    insta::assert_snapshot!(rejected(&format!("{OK}[loop]\ncompletion_signal = [\"DONE\", \" \"]\n"), &[]), @r"
    error: [TMP]/plan.toml:5:30: a completion signal is empty
    hint: an empty signal would match any output; give the text the agent prints when done
    ");
}

#[test]
fn both_prompt_and_prompt_file() {
    insta::assert_snapshot!(rejected("prompt = \"x\"\nprompt_file = \"prompt.md\"\n[agent]\nkind = \"simulated\"\n", &[]), @r"
    error: [TMP]/plan.toml:2:1: both `prompt` and `prompt_file` are set
    hint: keep one of them
    ");
}

#[test]
fn no_prompt() {
    insta::assert_snapshot!(rejected("[agent]\nkind = \"simulated\"\n", &[]), @r#"
    error: [TMP]/plan.toml:1:1: no prompt given
    hint: give the task with `prompt = "..."` or `prompt_file = "task.md"` (or `--prompt`)
    "#);
}

#[test]
fn missing_prompt_file() {
    insta::assert_snapshot!(rejected("prompt_file = \"tasks/missing.md\"\n[agent]\nkind = \"simulated\"\n", &[]), @r"
    error: [TMP]/plan.toml:1:15: prompt file `[TMP]/tasks/missing.md` does not exist
    hint: prompt files are resolved against the manifest's folder
    ");
}

#[test]
fn bad_branch_name() {
    insta::assert_snapshot!(rejected(&format!("{OK}[branch]\nstrategy = \"named\"\nname = \"fix login\"\n"), &[]), @r"
    error: [TMP]/plan.toml:6:8: `fix login` is not a valid branch name: it contains a space
    hint: branch names follow `git check-ref-format --branch`
    ");
}

#[test]
fn named_strategy_without_a_name() {
    insta::assert_snapshot!(rejected(&format!("{OK}[branch]\nstrategy = \"named\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:5:12: strategy `named` needs `branch.name`
    hint: set `branch.name = "eden/my-task"` (or `--branch`)
    "#);
}

#[test]
fn key_of_another_strategy() {
    insta::assert_snapshot!(rejected(&format!("{OK}[branch]\nstrategy = \"named\"\nname = \"eden/x\"\nallow_dirty = true\n"), &[]), @r"
    error: [TMP]/plan.toml:7:1: `branch.allow_dirty` does not apply to strategy `named`
    hint: it is used by strategies `head` and `merge-to-head`
    ");
}

#[test]
fn missing_binary() {
    insta::assert_snapshot!(rejected("prompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"no-such-agent-binary\"\n", &[]), @r"
    error: [TMP]/plan.toml:4:10: agent binary `no-such-agent-binary` was not found on PATH
    hint: a name is looked up on PATH; a path with `/` is relative to the manifest's folder (to the current directory when given as a flag)
    ");
}

#[test]
fn cli_without_binary() {
    insta::assert_snapshot!(rejected("prompt = \"x\"\n[agent]\nkind = \"cli\"\n", &[]), @r"
    error: [TMP]/plan.toml:2:1: agent kind `cli` needs `agent.binary`
    hint: set `agent.binary` (or `--binary`) to the agent's executable
    ");
}

#[test]
fn unknown_prompt_placeholder() {
    insta::assert_snapshot!(rejected("prompt = \"fix {{ISSUE}}\"\n[prompt_args]\nREPO = \"x\"\n[agent]\nkind = \"simulated\"\n", &[]), @r"
    error: [TMP]/plan.toml:1:10: the prompt uses `{{ISSUE}}` but no value is given for `ISSUE`
    hint: add it under `[prompt_args]` or pass `--arg ISSUE=VALUE`; known keys: REPO, BRANCH, BASE_BRANCH, ITERATION, MAX_ITERATIONS, RUN_ID, NAME, ATTEMPT, CHECK_FAILURES
    ");
}

#[test]
fn missing_environment_variable() {
    insta::assert_snapshot!(rejected("prompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nenv = { TOKEN = \"${EDEN_TEST_UNSET_VARIABLE}\" }\n", &[]), @r"
    error: [TMP]/plan.toml:5:17: `agent.env.TOKEN` refers to `${EDEN_TEST_UNSET_VARIABLE}`, which is not set
    hint: export `EDEN_TEST_UNSET_VARIABLE` before running eden, add it to `.eden/.env`, or remove the reference
    ");
}

#[test]
fn zero_iterations() {
    insta::assert_snapshot!(rejected(&format!("{OK}[loop]\nmax_iterations = 0\n"), &[]), @r"
    error: [TMP]/plan.toml:5:18: `loop.max_iterations` must be at least 1
    hint: the agent runs at most this many times
    ");
}

#[test]
fn invalid_toml() {
    insta::assert_snapshot!(rejected("prompt = \"x\n[agent]\n", &[]), @r"
    error: [TMP]/plan.toml:1:12: invalid TOML: invalid basic string
    hint: every key: `eden schema`, or docs/src/reference/manifest.md in eden's source
    ");
}

#[test]
fn env_conflicts_and_missing_references() {
    insta::assert_snapshot!(rejected("prompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nenv = { MODE = \"a\" }\n[sandbox]\nenv = { MODE = \"b\" }\n", &[]), @r"
    error: [TMP]/plan.toml:5:9: `MODE` is set differently in `[agent] env` and `[sandbox] env`
    hint: set it in one place: `[sandbox] env` reaches the agent and the sandbox hooks
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nenv = {{ T = \"${{EDEN_TEST_UNSET_VARIABLE}}\" }}\n"), &[]), @r"
    error: [TMP]/plan.toml:5:13: `sandbox.env.T` refers to `${EDEN_TEST_UNSET_VARIABLE}`, which is not set
    hint: export `EDEN_TEST_UNSET_VARIABLE` before running eden, add it to `.eden/.env`, or remove the reference
    ");
    insta::assert_snapshot!(rejected(&format!("redact = [\"\"]\n{OK}"), &[]), @r"
    error: [TMP]/plan.toml:1:11: `` is not a variable name
    hint: list the names of environment variables whose values must never be shown
    ");
}

#[test]
fn bad_copy_to_worktree() {
    insta::assert_snapshot!(rejected(&format!("copy_to_worktree = [\"/etc/passwd\"]\n{OK}"), &[]), @r#"
    error: [TMP]/plan.toml:1:21: cannot copy `/etc/passwd`: it is absolute; give a path relative to the repository
    hint: entries are files or folders relative to the repository, e.g. ".env" or "config/local"
    "#);
    insta::assert_snapshot!(rejected(&format!("copy_to_worktree = [\"conf/../../x\"]\n{OK}"), &[]), @r#"
    error: [TMP]/plan.toml:1:21: cannot copy `conf/../../x`: it leaves the repository with `..`
    hint: entries are files or folders relative to the repository, e.g. ".env" or "config/local"
    "#);
    insta::assert_snapshot!(rejected(&format!("copy_to_worktree = [\".\"]\n{OK}"), &[]), @r"
    error: [TMP]/plan.toml:1:21: cannot copy `.`: it is the whole repository
    hint: name the files or folders git does not have
    ");
    insta::assert_snapshot!(rejected(&format!("copy_to_worktree = [\".env\"]\n{OK}[branch]\nstrategy = \"head\"\n"), &[]), @r"
    error: [TMP]/plan.toml:1:20: `copy_to_worktree` does not apply to strategy `head`
    hint: `head` works in your checkout, which already has these files; remove the key
    ");
}

#[test]
fn bad_output_and_steps() {
    let answer = "prompt = \"answer in <result>\"\n[agent]\nkind = \"simulated\"\n";
    insta::assert_snapshot!(rejected(&format!("{answer}[loop]\nmax_iterations = 3\n[output]\n"), &[]), @r"
    error: [TMP]/plan.toml:5:18: structured output needs exactly one iteration, not 3
    hint: set `max_iterations = 1` (the default with `[output]`), or remove `[output]`
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[output]\ntag = \"verdict\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:5:7: the prompt never mentions `<verdict>`, so the agent cannot know where to answer
    hint: tell the agent in the prompt: "answer inside <verdict>...</verdict>"
    "#);
    insta::assert_snapshot!(rejected(&format!("{answer}[output]\nschema = \"nope.json\"\n"), &[]), @r"
    error: [TMP]/plan.toml:5:10: schema file `[TMP]/nope.json` cannot be read: No such file or directory (os error 2)
    hint: schema files are resolved against the manifest's folder
    ");
    insta::assert_snapshot!(rejected(&format!("{answer}[output]\nschema = \"prompt.md\"\n"), &[]), @r"
    error: [TMP]/plan.toml:5:10: schema file `[TMP]/prompt.md` is not JSON: expected value at line 1 column 1
    hint: a JSON Schema is a JSON document
    ");
    insta::assert_snapshot!(rejected(&format!("{answer}[output]\nmax_retries = 2\n"), &[]), @r"
    error: [TMP]/plan.toml:5:15: retries resume the agent's session, which this agent cannot do
    hint: use an agent adapter (claude-code, codex, opencode, pi, cursor, copilot), or set it to 0
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[[step]]\nprompt = \"use {{{{PREVIOUS_STEP_RESULT}}}}\"\n"), &[]), @r"
    error: [TMP]/plan.toml:5:10: `{{PREVIOUS_STEP_RESULT}}` needs an earlier step
    hint: it is the structured output of the step before this one, in `[[step]]` manifests
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[[step]]\nname = \"a\"\n[[step]]\nname = \"b\"\nprompt = \"use {{{{PREVIOUS_STEP_RESULT}}}}\"\n"), &[]), @r"
    error: [TMP]/plan.toml:8:10: `{{PREVIOUS_STEP_RESULT}}` is used, but step `a` has no `[output]`
    hint: give the previous step an `[step.output]` table, so it has a result to pass on
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[[step]]\nname = \"a\"\n[[step]]\nname = \"a\"\n"), &[]), @r"
    error: [TMP]/plan.toml:7:8: two steps are named `a`
    hint: give every step its own name
    ");
    insta::assert_snapshot!(rejected(&format!("{answer}[output]\n[[step]]\nname = \"a\"\n"), &[]), @r"
    error: [TMP]/plan.toml:4:2: with `[[step]]`, each step has its own `[output]`
    hint: move the table into the step that should produce it: `[step.output]`
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[[step]]\nwhen = \"sometimes\"\n"), &[]), @r"
    error: [TMP]/plan.toml:5:8: `step[0].when` has an unknown value `sometimes`
    hint: expected one of: `always`, `commits`, `success`
    ");
}

#[test]
fn bad_hooks() {
    insta::assert_snapshot!(rejected(&format!("{OK}[hooks.sandbox]\non_worktree_ready = [\"npm ci\"]\n"), &[]), @r"
    error: [TMP]/plan.toml:5:1: `on_worktree_ready` runs before the sandbox exists
    hint: move these hooks to `[hooks.host]`, or to `on_sandbox_ready` to run them in the sandbox
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[hooks.host]\non_close = [\"  \"]\n"), &[]), @r"
    error: [TMP]/plan.toml:5:13: the hook's command is empty
    hint: give a shell command to run
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[hooks.host]\non_close = [{{ cmd = \"x\", timeout = \"0s\" }}]\n"), &[]), @r"error: [TMP]/plan.toml:5:36: `hooks.host.on_close[0].timeout`: duration `0s` is zero, expected a positive duration");
    insta::assert_snapshot!(rejected(&format!("{OK}[hooks.host]\non_close = [{{ cmd = \"x\", timeout = \"5 parsecs\" }}]\n"), &[]), @r#"
    error: [TMP]/plan.toml:5:36: `hooks.host.on_close[0].timeout`: invalid duration `5 parsecs`, expected a duration like "90s", "10m" or "1h30m", or a number of seconds
    hint: write a duration like `90s`, `10m`, `1h30m` or `2d` (each unit once, largest first), or a number of seconds
    "#);
    insta::assert_snapshot!(rejected(&format!("{OK}[hooks.host]\non_close = [{{ cmd = \"x\", cdw = \"sub\" }}]\n"), &[]), @r"
    error: [TMP]/plan.toml:5:26: unknown key `cdw` in `[hooks.host.on_close[0]]`
    hint: did you mean `cwd`? known keys: `cmd`, `cwd`, `env`, `timeout`
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[hooks.host]\non_closed = [\"x\"]\n"), &[]), @r"
    error: [TMP]/plan.toml:5:1: unknown key `on_closed` in `[hooks.host]`
    hint: did you mean `on_close`? known keys: `on_worktree_ready`, `on_sandbox_ready`, `on_iteration_start`, `on_iteration_end`, `on_close`, `reads`
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[hooks.host]\non_close = [42]\n"), &[]), @r"error: [TMP]/plan.toml:5:13: `hooks.host.on_close[0]`: invalid type: integer `42`, expected a command string or a table { cmd, cwd, env, timeout }");
    insta::assert_snapshot!(rejected(&format!("{OK}[hooks.host]\non_close = [{{ cmd = \"x\", env = {{ T = \"${{EDEN_TEST_UNSET_VARIABLE}}\" }} }}]\n"), &[]), @r"
    error: [TMP]/plan.toml:5:38: `hooks.host.on_close[0].env.T` refers to `${EDEN_TEST_UNSET_VARIABLE}`, which is not set
    hint: export `EDEN_TEST_UNSET_VARIABLE` before running eden, add it to `.eden/.env`, or remove the reference
    ");
}

#[test]
fn container_keys_need_a_container_and_an_image() {
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nmemory = \"1g\"\n"), &[]), @r"
    error: [TMP]/plan.toml:5:1: `sandbox.memory` has no effect without a container sandbox
    hint: set `sandbox.kind` to `docker` or `podman`, or remove the key
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"docker\"\n"), &[]), @"
    error: [TMP]/plan.toml:4:1: sandbox kind `docker` needs `sandbox.image`
    hint: set `sandbox.image` (or `--set sandbox.image=...`) to a local image; `eden image build` makes one named `eden:<repository folder>`
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"podman\"\nimage = \"x\"\nmemory = \"lots\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:7:10: `sandbox.memory`: invalid size `lots`, expected bytes or a size like "512m" or "4g"
    hint: write a number and a unit with no space: `512m`, `4g`; or a number of bytes
    "#);
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"docker\"\nimage = \"x\"\nmounts = [{{ host = \"nope\", sandbox = \"/n\" }}]\n"), &[]), @r"
    error: [TMP]/plan.toml:7:20: mount source `[TMP]/nope` does not exist
    hint: create it, or fix the path (relative paths resolve against the manifest's folder)
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"docker\"\nimage = \"x\"\nnetwork = \"wifi\"\n"), &[]), @"
    error: [TMP]/plan.toml:7:11: `sandbox.network` has an unknown value `wifi`
    hint: expected one of: `internet`, `bridge`, `none`, `host`, `allowlist`
    ");
}

/// `isolated` has no network of its own to put rules in: the host's only when named `host`.
#[test]
fn isolated_network_is_none_or_this_machines_by_name() {
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"isolated\"\nnetwork = \"bridge\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:6:11: `network = "bridge"` in `isolated` would be this machine's own network, every service on its loopback included
    hint: say `network = "host"` if the agent is to reach everything this machine reaches; leave `network` out for none (a held key still reaches its provider)
    "#);
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"isolated\"\nnetwork = \"internet\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:6:11: `isolated` cannot enforce `network = "internet"`: it has no network of its own to put rules in
    hint: use `sandbox.kind = "docker"` or `"podman"` for it, or `network = "none"` (the default) or `"host"`
    "#);
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"isolated\"\nruntime = \"runsc\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:6:1: `sandbox.runtime` applies to docker and podman, not `isolated`
    hint: remove it, or use `sandbox.kind = "docker"` or `"podman"`
    "#);
}

/// `sandbox.runtime`: a name, or for podman an absolute path; never an option.
#[test]
fn runtimes_are_names_or_podman_paths() {
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"docker\"\nimage = \"x\"\nruntime = \"--privileged\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:7:11: `--privileged` is not a runtime's name or path
    hint: name a runtime the engine knows (`runsc` for gVisor, `runc`, `crun`), or for podman its absolute path
    "#);
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"docker\"\nimage = \"x\"\nruntime = \"/usr/bin/runsc\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:7:11: `/usr/bin/runsc` is a path; only podman takes a runtime by its absolute path
    hint: give docker the name the runtime is registered under in `/etc/docker/daemon.json` (`docker info` lists them)
    "#);
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nruntime = \"runsc\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:5:1: `sandbox.runtime` has no effect without a container sandbox
    hint: set `sandbox.kind` to `docker` or `podman`, or remove the key
    "#);
}

#[test]
fn isolated_takes_no_container_keys() {
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"isolated\"\nimage = \"x\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:6:1: `sandbox.image` applies to docker and podman, not `isolated`
    hint: remove it, or use `sandbox.kind = "docker"` or `"podman"`
    "#);
}

#[test]
fn expose_worktree_only_where_it_can_hold() {
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"isolated\"\nexpose_worktree = true\n"), &[]), @r#"
    error: [TMP]/plan.toml:6:1: `sandbox.expose_worktree` applies to docker and podman, not `isolated`
    hint: remove it, or use `sandbox.kind = "docker"` or `"podman"`
    "#);
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nexpose_worktree = true\n"), &[]), @r"
    error: [TMP]/plan.toml:5:1: `sandbox.expose_worktree` has no effect without a container sandbox
    hint: set `sandbox.kind` to `docker` or `podman`, or remove the key
    ");
    insta::assert_snapshot!(rejected(&format!("{OK}[sandbox]\nkind = \"docker\"\nimage = \"x\"\nexpose_worktree = true\n[branch]\nstrategy = \"head\"\n"), &[]), @r"
    error: [TMP]/plan.toml:7:1: `sandbox.expose_worktree` cannot be used with strategy `head`
    hint: exposing your checkout would expose its `.git` and `.eden` too; use `merge-to-head` or `named`, or remove the key
    ");
}

#[test]
fn missing_agent_cli_names_its_package() {
    // PATH without the agent CLIs: the error names the npm package that provides each.
    for (kind, binary, package) in [
        ("claude-code", "claude", "@anthropic-ai/claude-code"),
        ("codex", "codex", "@openai/codex"),
        ("opencode", "opencode", "opencode-ai"),
        ("pi", "pi", "@mariozechner/pi-coding-agent"),
        ("copilot", "copilot", "@github/copilot"),
    ] {
        let env = TestEnv::new();
        let path = env.write_manifest(&format!("prompt = \"x\"\n[agent]\nkind = \"{kind}\"\n"));
        let mut command = env.eden_command(&["run", path.to_str().unwrap()]);
        let empty = env.root().join("empty-bin");
        std::fs::create_dir_all(&empty).unwrap();
        command.env("PATH", &empty);
        let run = crate::support::Run::from(command.output().unwrap());
        run.assert_code(2);
        assert_eq!(
            env.redact(&run.error_text()),
            format!(
                "error: [TMP]/plan.toml:3:8: agent kind `{kind}` runs `{binary}`, which was not found on PATH\n\
                 hint: install it with `npm install -g {package}`; or set `agent.binary` to its path"
            )
        );
        env.assert_pristine();
    }
}

#[test]
fn effort_only_where_supported() {
    insta::assert_snapshot!(rejected("prompt = \"x\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\neffort = \"high\"\n", &[]), @r"
    error: [TMP]/plan.toml:5:1: `agent.effort` does not apply to agent kind `cli`
    hint: it is used by kinds `claude-code`, `codex` and `opencode`; remove it
    ");
}

#[test]
fn bad_set_override() {
    insta::assert_snapshot!(rejected(OK, &["--set", "loop.max_iterations=many"]), @r#"
    error: `--set loop.max_iterations=many`: `loop.max_iterations`: invalid type: string "many", expected a positive whole number
    hint: a `--set` value that reads as TOML is taken as TOML; quote it to pass a string: `--set 'KEY="VALUE"'`
    "#);
    insta::assert_snapshot!(rejected(OK, &["--set", "agent.kindd=cli"]), @r"
    error: `--set agent.kindd=cli`: unknown key `kindd` in `[agent]`
    hint: did you mean `kind`? known keys: `kind`, `model`, `effort`, `extra_args`, `env`, `resume`, `binary`, `args`, `prompt_via`, `parser`, `lines`, `line_delay`, `exit_code`
    ");
    insta::assert_snapshot!(rejected(OK, &["--set", "noequals"]), @r"
    error: `--set noequals` has no value
    hint: write it as `--set KEY=VALUE`, e.g. `--set agent.model=opus`
    ");
}

#[test]
fn missing_manifest_file() {
    let env = TestEnv::new();
    let run = env.eden(&["run", "nope.toml"]);
    run.assert_code(2);
    insta::assert_snapshot!(run.error_text(), @r#"
    error: manifest `nope.toml` not found
    hint: pass the path of a TOML manifest, or use flags alone: `eden run --agent simulated --prompt "..."`
    "#);
    env.assert_pristine();
}

/// `[logging] file` is checked at load, so `--dry-run` refuses what a run would: it stays in
/// `.eden/` (or is absolute), its placeholders are known and closed, its names fit.
#[test]
fn log_files_that_would_go_wrong() {
    let log = |file: &str| format!("{OK}[logging]\nfile = {file}\n");
    let long = format!("\".eden/logs/{}.jsonl\"", "x".repeat(300));
    let mut errors = Vec::new();
    for file in [
        "\"../outside.jsonl\"",
        "\"logs/run.jsonl\"",
        "\".eden/../x.jsonl\"",
        "\"{\"",
        "\".eden/{who}.log\"",
        "\"\"",
        &long,
    ] {
        errors.push(rejected(&log(file), &[]));
        rejected(&log(file), &["--dry-run"]);
    }
    insta::assert_snapshot!(errors.join("\n"), @r#"
    error: [TMP]/plan.toml:5:8: `logging.file = "../outside.jsonl"` is outside the repository's `.eden/`
    hint: a relative log file goes under `.eden/` (the folder git ignores), e.g. `.eden/logs/{name}-{run_id}.jsonl`; or give an absolute path
    error: [TMP]/plan.toml:5:8: `logging.file = "logs/run.jsonl"` is outside the repository's `.eden/`
    hint: a relative log file goes under `.eden/` (the folder git ignores), e.g. `.eden/logs/{name}-{run_id}.jsonl`; or give an absolute path
    error: [TMP]/plan.toml:5:8: `logging.file = ".eden/../x.jsonl"` is outside the repository's `.eden/`
    hint: a relative log file goes under `.eden/` (the folder git ignores), e.g. `.eden/logs/{name}-{run_id}.jsonl`; or give an absolute path
    error: [TMP]/plan.toml:5:8: `logging.file` has a `{` that is never closed
    hint: the log file name may use {name}, {branch} and {run_id}
    error: [TMP]/plan.toml:5:8: unknown placeholder `{who}` in the log file name
    hint: the log file name may use {name}, {branch} and {run_id}
    error: [TMP]/plan.toml:5:8: `logging.file` is empty
    hint: give a file name, or `file = false` for no log
    error: [TMP]/plan.toml:5:8: a part of `logging.file` would be 306 bytes long, over the 255 a file name may have
    hint: use a shorter name
    "#);
}

/// An `--arg` that no prompt uses is refused, naming the keys the prompts do use.
#[test]
fn args_the_prompt_does_not_use() {
    let manifest = "prompt = \"do {{TASK}} in {{AREA}} ({{ITERATION}})\"\n[prompt_args]\nAREA = \"src\"\n[agent]\nkind = \"simulated\"\n";
    let mut errors = vec![rejected(manifest, &["--arg", "TASK=x", "--arg", "TAKS=y"])];
    errors.push(rejected(manifest, &["--arg", "TASK=x", "--arg", "two words=y"]));
    errors.push(rejected(OK, &["--arg", "TASK=x"]));
    insta::assert_snapshot!(errors.join("\n"), @"
    error: `--arg TAKS=y`: no prompt uses `{{TAKS}}`
    hint: the prompt uses `{{AREA}}`, `{{TASK}}`
    error: `--arg two words=y`: `two words` is not a placeholder name (letters, digits, `_` and `-`)
    hint: the prompt uses `{{AREA}}`, `{{TASK}}`
    error: `--arg TASK=x`: no prompt uses `{{TASK}}`
    hint: the prompt uses no `{{KEY}}` placeholders
    ");
}

/// Messages that used to point the wrong way.
#[test]
fn messages_that_point_the_right_way() {
    let env = TestEnv::new();
    let mut messages = Vec::new();
    // A repository with no commits yet.
    let empty = env.root().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    env.git_in(&empty, &["init", "-q", "-b", "main"]);
    let mut command = env.eden_command(&["run", "--agent", "simulated", "--prompt", "hi"]);
    messages
        .push(crate::support::Run::from(command.current_dir(&empty).env("PWD", &empty).output().unwrap()).error_text());
    // A `--repo` that does not exist.
    messages.push(env.eden(&["run", "--agent", "simulated", "--prompt", "hi", "--repo", "/nonexistent"]).error_text());
    // `--strategy named` without a name: the flag is named, not a manifest line.
    let path = env.write_manifest(OK);
    messages.push(env.eden(&["run", path.to_str().unwrap(), "--strategy", "named"]).error_text());
    // A detached HEAD with strategy `head`.
    let head = env.git(&["rev-parse", "HEAD"]);
    env.git(&["checkout", "-q", &head]);
    messages.push(env.eden(&["run", "--agent", "simulated", "--prompt", "hi", "--strategy", "head"]).error_text());
    env.git(&["checkout", "-q", "main"]);
    insta::assert_snapshot!(env.redact(&messages.join("\n")), @r#"
    error: the repository at `[TMP]/empty` has no commits yet
    hint: make a first commit; eden branches off an existing commit
    error: `/nonexistent` does not exist
    hint: give `--repo` (or run eden in) a folder of your repository
    error: `--strategy`: strategy `named` needs `branch.name`
    hint: set `branch.name = "eden/my-task"` (or `--branch`)
    error: HEAD is detached; strategy `head` commits onto the checked-out branch
    hint: check out a branch first (`git switch <branch>`, or `git switch -c <new-branch>` to keep this commit)
    "#);
}

#[test]
fn durations_with_a_unit_twice() {
    insta::assert_snapshot!(rejected(&format!("{OK}[loop]\nidle_timeout = \"1h1h1h\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:5:16: `loop.idle_timeout`: invalid duration `1h1h1h`: each unit may come once, largest first (like "1h30m")
    hint: write a duration like `90s`, `10m`, `1h30m` or `2d` (each unit once, largest first), or a number of seconds
    "#);
}

#[test]
fn independent_mistakes_are_reported_together() {
    let manifest = "name = \"bad name!\"\nprompt = \"x\"\nredact = [\"A=B\"]\n[agent]\nkind = \"simulated\"\n\
                    [sandbox]\nkind = \"none\"\nimage = \"x\"\n[logging]\nfile = \"{nope}.jsonl\"\n";
    insta::assert_snapshot!(rejected(manifest, &[]), @"
    error: [TMP]/plan.toml:1:8: invalid name `bad name!`: it may only contain letters, digits, `.`, `_` and `-`
    hint: names go into branch names: use letters, digits, `.`, `_` and `-`
    error: [TMP]/plan.toml:8:1: `sandbox.image` has no effect without a container sandbox
    hint: set `sandbox.kind` to `docker` or `podman`, or remove the key
    error: [TMP]/plan.toml:3:11: `A=B` is not a variable name
    hint: list the names of environment variables whose values must never be shown
    error: [TMP]/plan.toml:10:8: unknown placeholder `{nope}` in the log file name
    hint: the log file name may use {name}, {branch} and {run_id}
    ");
}

#[test]
fn independent_mistakes_are_all_in_the_json_error() {
    let env = TestEnv::new();
    let path =
        env.write_manifest("name = \"bad name!\"\nprompt = \"x\"\nredact = [\"\"]\n[agent]\nkind = \"simulated\"\n");
    let run = env.eden(&["run", path.to_str().unwrap(), "--json"]);
    run.assert_code(2);
    let error = &run.json()["error"];
    assert!(error["message"].as_str().unwrap().contains("invalid name"), "{error}");
    let also = error["also"].as_array().unwrap();
    assert_eq!(also.len(), 1, "{error}");
    assert!(also[0]["message"].as_str().unwrap().contains("is not a variable name"), "{error}");
    env.assert_pristine();
}

/// `network = "allowlist"`: only docker and podman can enforce it, it needs `allow`, each entry
/// must be a host or an IPv4 address or network, and nothing may undo it.
#[test]
fn allowlists_that_cannot_be_enforced() {
    let cases = [
        ("[sandbox]\nnetwork = \"allowlist\"\nallow = [\"example.com\"]\n", "sandbox.kind"),
        ("[sandbox]\nkind = \"isolated\"\nnetwork = \"allowlist\"\nallow = [\"example.com\"]\n", "`isolated` cannot enforce"),
        ("[sandbox]\nkind = \"docker\"\nimage = \"x\"\nnetwork = \"allowlist\"\n", "needs `sandbox.allow`"),
        ("[sandbox]\nkind = \"docker\"\nimage = \"x\"\nallow = [\"example.com\"]\n", "needs `network = \"allowlist\"`"),
        ("[sandbox]\nkind = \"docker\"\nimage = \"x\"\nnetwork = \"allowlist\"\nallow = [\"bad host!\"]\n", "neither a host name"),
        ("[sandbox]\nkind = \"docker\"\nimage = \"x\"\nnetwork = \"allowlist\"\nallow = [\"10.0.0.0/40\"]\n", "prefix length"),
        ("[sandbox]\nkind = \"docker\"\nimage = \"x\"\nnetwork = \"allowlist\"\nallow = [\"h:99999\"]\n", "not a port"),
        ("[sandbox]\nkind = \"docker\"\nimage = \"x\"\nnetwork = \"allowlist\"\nallow = [\"127.0.0.1:9\"]\n", "the sandbox's own loopback"),
        (
            "[sandbox]\nkind = \"podman\"\nimage = \"x\"\nnetwork = \"allowlist\"\nallow = [\"h\"]\nrun_args = [\"--cap-add=NET_ADMIN\"]\n",
            "would undo the allowlist",
        ),
    ];
    for (sandbox, expected) in cases {
        let text = rejected(&format!("{OK}{sandbox}"), &[]);
        assert!(text.contains(expected), "{sandbox}\n{text}");
        assert!(text.contains("plan.toml:"), "names the file and line: {text}");
    }
}

/// A prompt too long for an agent that takes it on the command line is refused at load: exit 2,
/// nothing created (no record, no worktree, no branch).
#[test]
fn a_prompt_too_long_for_the_command_line_changes_nothing() {
    let env = TestEnv::new();
    std::fs::write(env.root().join("long.md"), "x".repeat(130 * 1024)).unwrap();
    let manifest = "name = \"long\"\nprompt_file = \"long.md\"\n[agent]\nkind = \"pi\"\nbinary = \"/bin/true\"\n";
    let path = env.write_manifest(manifest);
    let run = env.eden(&["run", path.to_str().unwrap()]);
    run.assert_code(2);
    insta::assert_snapshot!(env.redact(&run.error_text()), @r"
    error: [TMP]/plan.toml:2:15: the prompt is 130 KiB; `pi` takes its prompt on the command line, where eden allows at most 120 KiB
    hint: shorten the prompt, or use an agent that reads it from stdin (claude-code, codex)
    ");
    assert!(!env.repo.join(".eden").exists(), "nothing created");
    assert_eq!(env.branches(), ["main"]);
}

/// Typos in several tables are reported together, in file order, each with its hint; a bad
/// duration has a hint too.
#[test]
fn typos_in_several_tables_come_together() {
    let text = rejected("prompt = \"x\"\n[agent]\nkind = \"simulated\"\nmodle = \"m\"\n[loop]\nmax_iteratons = 3\nidle_timout = \"5m\"\n", &[]);
    let errors: Vec<&str> = text.lines().filter(|line| line.starts_with("error:")).collect();
    assert_eq!(
        errors,
        [
            "error: [TMP]/plan.toml:4:1: unknown key `modle` in `[agent]`",
            "error: [TMP]/plan.toml:6:1: unknown key `max_iteratons` in `[loop]`",
            "error: [TMP]/plan.toml:7:1: unknown key `idle_timout` in `[loop]`",
        ],
        "{text}"
    );
    assert_eq!(text.matches("hint: did you mean").count(), 3, "{text}");
    insta::assert_snapshot!(rejected(&format!("{OK}[loop]\nidle_timeout = \"5 minutes\"\n"), &[]), @r#"
    error: [TMP]/plan.toml:5:16: `loop.idle_timeout`: invalid duration `5 minutes`, expected a duration like "90s", "10m" or "1h30m", or a number of seconds
    hint: write a duration like `90s`, `10m`, `1h30m` or `2d` (each unit once, largest first), or a number of seconds
    "#);
}

/// `run_args` and `mounts` that hand the container the host are refused at load, each naming
/// what it gives away, unless `sandbox.expose_host = true` (then `--dry-run` lists them); with
/// an allowlist never. A mount holding the repository is refused before anything starts.
#[test]
fn handing_the_container_the_host_needs_saying_so() {
    let container = "[sandbox]\nkind = \"docker\"\nimage = \"x\"\n";
    for (extra, says) in [
        ("run_args = [\"--privileged\"]", "`--privileged` in `run_args`: every device and capability of the host"),
        ("run_args = [\"--pid\", \"host\"]", "`--pid host` in `run_args`: the host's processes"),
        ("run_args = [\"--network=host\"]", "`--network=host` in `run_args`: the host's network"),
        ("run_args = [\"--cap-add=ALL\"]", "`--cap-add=ALL` in `run_args`: capabilities beyond a container's"),
        ("mounts = [{ host = \"/\", sandbox = \"/host\" }]", "mount `/`: the whole host"),
        ("mounts = [{ host = \"/var/run/docker.sock\", sandbox = \"/s\" }]", "the container engine"),
    ] {
        let text = rejected(&format!("{OK}{container}{extra}\n"), &[]);
        assert!(text.contains(says) && text.contains("an agent with it can reach past the sandbox"), "{extra}: {text}");
        assert!(text.contains("hint: remove it, or set `sandbox.expose_host = true`"), "{text}");
    }
    let home = rejected(&format!("{OK}{container}mounts = [{{ host = \"~/\", sandbox = \"/h\" }}]\n"), &[]);
    assert!(home.contains("your home folder"), "{home}");

    let env = TestEnv::new();
    let accepted = format!("{OK}{container}run_args = [\"--privileged\"]\nexpose_host = true\n");
    let path = env.write_manifest(&accepted);
    let run = env.eden(&["run", path.to_str().unwrap(), "--dry-run"]);
    run.assert_code(0);
    let plan: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        plan["plan"]["sandbox"]["host_exposures"][0],
        "`--privileged` in `run_args`: every device and capability of the host"
    );

    let allowlist = format!(
        "{OK}{container}network = \"allowlist\"\nallow = [\"example.com\"]\nmounts = [{{ host = \"/\", sandbox = \"/host\" }}]\nexpose_host = true\n"
    );
    assert!(rejected(&allowlist, &[]).contains("it would undo `network = \"allowlist\"`"));

    let repo = std::fs::canonicalize(&env.repo).unwrap();
    let holding = format!("{OK}{container}mounts = [{{ host = \"{}\", sandbox = \"/r\" }}]\n", repo.display());
    let path = env.write_manifest(&holding);
    let run = env.eden(&["run", path.to_str().unwrap(), "--dry-run"]);
    run.assert_code(2);
    assert!(run.error_text().contains("which holds this repository"), "{}", run.stderr);
}
