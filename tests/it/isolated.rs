//! The `isolated` sandbox: a private clone under bubblewrap. `.ci/run` installs bubblewrap;
//! elsewhere a missing `bwrap` skips these tests with a note.

use crate::support::{cli_manifest, TestEnv};

pub fn bwrap() -> bool {
    if which::which("bwrap").is_ok() {
        return true;
    }
    crate::support::skip("`bwrap` is not installed (apt-get install bubblewrap)");
    false
}

fn isolated(extra: &str) -> String {
    format!("[sandbox]\nkind = \"isolated\"\n{extra}\n[loop]\nmax_iterations = 1")
}

#[test]
fn commits_come_back_and_the_agent_cannot_write_outside_its_copy() {
    if !bwrap() {
        return;
    }
    let env = TestEnv::new();
    let outside = env.root().join("outside.txt");
    let agent = env.script(
        "agent.sh",
        &format!(
            "cat >/dev/null\necho \"pwd=$PWD\"\n\
             echo one > one.txt && git add one.txt && git commit -qm 'isolated commit'\n\
             for target in {repo}/escape.txt {outside}; do\n\
               if (echo x > \"$target\") 2>/dev/null; then echo \"wrote $target\"; else echo blocked; fi\n\
             done\n\
             echo '<promise>COMPLETE</promise>'",
            repo = env.repo.display(),
            outside = outside.display()
        ),
    );
    let run = env.run_manifest(&cli_manifest(&agent, &isolated("")), &[]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["sandbox"], "isolated");
    assert_eq!(record["merged_into"], "main");
    assert_eq!(env.log_subjects("main")[0], "isolated commit");
    assert!(run.stderr.contains("/eden-isolated-"), "the agent works in its copy:\n{}", run.stderr);
    // Those paths are not this machine's inside: whatever was written went to its own `/tmp`.
    assert!(!env.repo.join("escape.txt").exists() && !outside.exists(), "{}", run.stderr);
    let worktree = record["worktree"].as_str().unwrap();
    assert!(!run.stderr.contains(&format!("| pwd={worktree}")), "the agent ran in the worktree, not a copy");
    env.assert_pristine();
}

#[test]
fn uncommitted_work_comes_back_as_a_patch() {
    if !bwrap() {
        return;
    }
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\necho draft > draft.txt\necho changed >> README.md\necho '<promise>COMPLETE</promise>'",
    );
    let run = env.run_manifest(&cli_manifest(&agent, &isolated("")), &[]);
    run.assert_code(1);
    let record = run.record();
    assert_eq!(record["exit_reason"], "uncommitted_work");
    let id = record["id"].as_str().unwrap();
    let patch = env.repo.join(format!(".eden/patches/{id}.patch"));
    let text = std::fs::read_to_string(&patch).expect("the patch is saved");
    assert!(text.contains("draft.txt") && text.contains("README.md"), "{text}");
    assert!(run.stderr.contains("the agent left 2 file(s) uncommitted"), "{}", run.stderr);
    // Applied to the worktree, which is therefore kept.
    let worktree = record["preserved_worktree"].as_str().expect("kept");
    assert_eq!(std::fs::read_to_string(format!("{worktree}/draft.txt")).unwrap(), "draft\n");
    assert!(std::fs::read_to_string(format!("{worktree}/README.md")).unwrap().ends_with("changed\n"));
    assert!(!std::path::Path::new(&format!("/tmp/eden-isolated-{id}")).exists(), "the copy is removed");
}

#[test]
fn network_none_leaves_only_loopback() {
    if !bwrap() {
        return;
    }
    let env = TestEnv::new();
    let agent = env.script(
        "agent.sh",
        "cat >/dev/null\necho \"net: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')\"\necho '<promise>COMPLETE</promise>'",
    );
    let run = env.run_manifest(&cli_manifest(&agent, &isolated("network = \"none\"")), &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("| net: lo \n"), "{}", run.stderr);
}

#[test]
fn copied_files_reach_the_copy_and_sandbox_hooks_run_there() {
    if !bwrap() {
        return;
    }
    let env = TestEnv::new();
    std::fs::write(env.repo.join(".env"), "S=1\n").unwrap();
    let agent =
        env.script("agent.sh", "cat >/dev/null\necho \"agent sees $(cat .env)\"\necho '<promise>COMPLETE</promise>'");
    // The hook runs in the copy: its commit comes back like the agent's.
    let hooks = "[hooks.sandbox]\non_sandbox_ready = [\"case $PWD in /tmp/*isolated*) cat .env > from-hook.txt && git add from-hook.txt && git commit -qm hook;; esac\"]\n";
    let manifest = cli_manifest(&agent, &format!("copy_to_worktree = [\".env\"]\n{}\n{hooks}", isolated("")));
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("agent sees S=1"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(env.repo.join("from-hook.txt")).unwrap(), "S=1\n");
    // The copy of `.env` was neither committed nor brought back as uncommitted work.
    assert_eq!(env.git(&["ls-tree", "-r", "--name-only", "main"]).trim(), "README.md\nfrom-hook.txt");
    assert!(!env.repo.join(".eden/patches").exists());
    env.assert_pristine();
}

/// The real Claude Code in the isolated copy: it can write its transcript (its state folder is
/// writable inside, as in containers), and eden captures it from there.
#[test]
fn claude_transcripts_are_captured_from_the_copy() {
    let Some(_) = crate::real_agents::require("claude") else { return };
    if !bwrap() {
        return;
    }
    let env = TestEnv::new();
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let manifest = format!(
        "name = \"iso\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n{}\n\
         [sandbox]\nkind = \"isolated\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
        crate::real_agents::CLAUDE_AGENT_ENV
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(crate::real_agents::claude_env(&env, &server));
    let run = crate::support::Run::from(command.output().unwrap());
    run.assert_code(0);
    let record = run.json();
    crate::real_agents::assert_transcript(&env, &record, 0);
    assert_eq!(env.log_subjects("main")[0], "add hello.txt");
}

/// A session of an isolated run goes on in the next isolated run (`agent.resume`): eden carries
/// its captured transcript into the new run's private state folder, rewritten for the new copy,
/// and the real Claude Code resumes it there. One captured nowhere stops the run before
/// anything is created.
#[test]
fn claude_sessions_resume_in_the_next_isolated_run() {
    let Some(_) = crate::real_agents::require("claude") else { return };
    if !bwrap() {
        return;
    }
    let env = TestEnv::new();
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let manifest = env.write_manifest(&format!(
        "name = \"iso\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n{}\n\
         [sandbox]\nkind = \"isolated\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
        crate::real_agents::CLAUDE_AGENT_ENV
    ));
    let eden = |args: &[&str]| {
        let mut command = env.eden_command(args);
        command.envs(crate::real_agents::claude_env(&env, &server));
        crate::support::Run::from(command.output().unwrap())
    };
    let first = eden(&["run", manifest.to_str().unwrap(), "--json"]);
    first.assert_code(0);
    let session = first.json()["session_id"].as_str().unwrap().to_owned();
    let resume = format!("agent.resume=\"{session}\"");
    let resumed =
        eden(&["run", manifest.to_str().unwrap(), "--json", "--set", &resume, "--set", "prompt=\"carry on\""]);
    resumed.assert_code(0);
    assert_eq!(resumed.json()["iterations"][0]["session_id"], session.as_str(), "{}", resumed.stderr);
    assert!(!env.root().join("claude/projects").exists(), "the person's own folder was never written");

    let branches = env.branches();
    let missing = eden(&["run", manifest.to_str().unwrap(), "--set", "agent.resume=\"0000-gone\""]);
    missing.assert_code(2);
    assert!(
        missing.error_text().contains("session `0000-gone` to resume was captured by no earlier run"),
        "{}",
        missing.stderr
    );
    assert_eq!(env.branches(), branches, "nothing created");
}

/// `CLAUDE_CONFIG_DIR` given in `[agent] env` (not eden's environment): in the isolated copy the
/// real Claude Code still gets a writable private state folder seeded from that one, works,
/// and its transcript is captured; the named folder is never written.
#[test]
fn claude_with_its_config_dir_in_agent_env_works_in_the_copy() {
    let Some(_) = crate::real_agents::require("claude") else { return };
    if !bwrap() {
        return;
    }
    let env = TestEnv::new();
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let own = env.root().join("my-claude");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(own.join("settings.json"), "{}\n").unwrap();
    let manifest = format!(
        "name = \"iso\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n\
         env = {{ CLAUDE_CONFIG_DIR = \"{}\", ANTHROPIC_BASE_URL = \"${{ANTHROPIC_BASE_URL}}\", \
         ANTHROPIC_API_KEY = \"${{ANTHROPIC_API_KEY}}\", DISABLE_TELEMETRY = \"1\" }}\n[sandbox]\nkind = \"isolated\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
        own.display()
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    let vars: Vec<(String, String)> = crate::real_agents::claude_env(&env, &server)
        .into_iter()
        .filter(|(key, _)| key != "CLAUDE_CONFIG_DIR")
        .collect();
    command.envs(vars);
    let run = crate::support::Run::from(command.output().unwrap());
    run.assert_code(0);
    let record = run.json();
    crate::real_agents::assert_transcript(&env, &record, 0);
    assert_eq!(env.log_subjects("main")[0], "add hello.txt");
    assert_eq!(crate::support::tree_digest(&own).len(), 1, "only the person's settings.json is there");
}
