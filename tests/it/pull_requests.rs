//! `[pull_request]` against the test forge (`forge_server.rs`): the branch pushed with the token
//! eden holds, the pull request opened (and a second run of the same branch updating it), the
//! token on every call to the forge and never in the agent's reach, and each refusal a clear
//! error before anything is made.

use crate::forge_server::Forge;
use crate::support::{cli_manifest, TestEnv};

const TOKEN: &str = "ghs_test_forge_token_5f3a9c";

/// A repository whose `origin` is on the test forge as `octo/hello`.
fn world() -> (TestEnv, Forge) {
    let env = TestEnv::new();
    let forge = Forge::start(TOKEN, &env.root().join("forge"), "octo/hello", &env.repo);
    env.git(&["remote", "add", "origin", &forge.git_url("octo/hello")]);
    (env, forge)
}

/// An agent that commits, and writes into that commit everything it can see of its world: its
/// environment and every file under its home, the temp folder and the worktree that holds the
/// token.
fn agent(env: &TestEnv) -> std::path::PathBuf {
    env.script(
        "agent.sh",
        r#"cat > /dev/null
env > seen-env.txt
{ grep -rl "ghs_test_forge_token" "$HOME" "${TMPDIR:-/tmp}" . 2>/dev/null | grep -v seen- || true; } > seen-files.txt
{ ls -d "${TMPDIR:-/tmp}"/eden-credential-* /tmp/eden-credential-* 2>/dev/null || true; } > seen-sockets.txt
date +%s%N > change.txt
git add -A && git commit -q -m "the agent's change"
echo "<promise>COMPLETE</promise>""#,
    )
}

fn manifest(env: &TestEnv, forge: &Forge, extra: &str) -> String {
    let agent = agent(env);
    cli_manifest(
        &agent,
        &format!(
            "[forge]\napi_url = \"{}\"\n[pull_request]\nfollow = false\nlabels = [\"agent\"]\n{extra}\n[loop]\nmax_iterations = 1\n",
            forge.api_url()
        ),
    )
}

fn run_with_token(env: &TestEnv, manifest: &str, token: &str) -> crate::support::Run {
    let path = env.write_manifest(manifest);
    let mut command = env.eden_command(&["run", &path.to_string_lossy(), "--json"]);
    command.env("GITHUB_TOKEN", token);
    crate::support::Run::from(command.output().unwrap())
}

#[test]
fn a_run_pushes_with_the_held_token_and_opens_its_pull_request() {
    let (env, forge) = world();
    let run = run_with_token(&env, &manifest(&env, &forge, ""), TOKEN);
    run.assert_code(0);
    let record = run.record();
    let branch = record["branch"].as_str().unwrap().to_owned();
    // Pushed to the forge, not merged here.
    let pushed = forge.tip("octo/hello", &branch).expect("the branch is on the forge");
    assert_eq!(record["push"]["commit"], pushed);
    assert_eq!(env.log_subjects("main"), ["initial commit"], "nothing merged locally");
    // The pull request: opened once, from the branch into main, with the label.
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert_eq!((pulls[0].head.as_str(), pulls[0].base.as_str()), (branch.as_str(), "main"));
    assert_eq!(pulls[0].labels, ["agent"]);
    assert!(pulls[0].title.contains("the agent's change"), "{:?}", pulls[0].title);
    assert!(pulls[0].body.contains(record["id"].as_str().unwrap()), "{:?}", pulls[0].body);
    assert_eq!(record["pull_request"]["number"], 1);
    assert_eq!(record["pull_request"]["action"], "opened");
    assert!(run.stderr.contains("pull request #1 opened: https://forge.test/octo/hello/pull/1"), "{}", run.stderr);
    // Every call to the API and every git request that asked carried the token.
    let seen = forge.seen();
    assert!(
        seen.iter().any(|s| s.path.starts_with("/git/") && s.method == "POST" && s.authorized),
        "a push: {seen:#?}"
    );
    for request in seen.iter().filter(|s| !s.path.starts_with("/git/")) {
        assert!(request.authorized, "an API call without the token: {request:?}");
    }
    // The agent never had it: not in its environment, not in a file it could read.
    let show = |file: &str| env.git(&["show", &format!("{branch}:{file}")]);
    assert!(!show("seen-env.txt").contains(TOKEN), "the token in the agent's environment");
    assert_eq!(show("seen-files.txt"), "", "files holding the token where the agent looks");
    assert_eq!(show("seen-sockets.txt"), "", "no credential socket answers while the agent runs");
    // Nor anything eden wrote.
    assert!(!run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN));
    for dir in [".eden/runs", ".eden/logs"] {
        for entry in std::fs::read_dir(env.repo.join(dir)).unwrap().flatten() {
            assert!(!std::fs::read_to_string(entry.path()).unwrap().contains(TOKEN), "{}", entry.path().display());
        }
    }
    let config = std::fs::read_to_string(env.repo.join(".git/config")).unwrap();
    assert!(!config.contains(TOKEN) && !config.contains("credential"), "{config}");
}

#[test]
fn a_second_run_of_the_same_branch_updates_its_pull_request() {
    let (env, forge) = world();
    let extra = "[branch]\nstrategy = \"named\"\nname = \"agent/fix\"\n";
    run_with_token(&env, &manifest(&env, &forge, extra), TOKEN).assert_code(0);
    let first = forge.tip("octo/hello", "agent/fix").unwrap();
    let run = run_with_token(&env, &manifest(&env, &forge, &format!("{extra}reuse_worktree = true\n")), TOKEN);
    run.assert_code(0);
    let second = forge.tip("octo/hello", "agent/fix").unwrap();
    assert_ne!(first, second, "the second run's commit is pushed on top: {}", run.stdout);
    assert_eq!(forge.pulls().len(), 1, "never a second pull request for one branch");
    assert_eq!(run.record()["pull_request"]["action"], "updated");
}

#[test]
fn a_refused_token_or_a_missing_base_stops_the_run_before_anything_is_made() {
    let (env, forge) = world();
    let run = run_with_token(&env, &manifest(&env, &forge, ""), "ghs_wrong_token_0000");
    run.assert_code(6);
    assert!(run.error_text().contains("refused eden's token (401"), "{}", run.error_text());
    assert!(run.error_text().contains("hint: "), "{}", run.error_text());
    env.assert_pristine();
    let run = run_with_token(&env, &manifest(&env, &forge, "base = \"release\"\n"), TOKEN);
    run.assert_code(6);
    assert!(run.error_text().contains("base `release` is not a branch of `octo/hello`"), "{}", run.error_text());
    env.assert_pristine();
    assert!(forge.pulls().is_empty() && forge.seen().iter().all(|s| s.method == "GET"), "{:#?}", forge.seen());
}

#[test]
fn a_missing_token_and_a_token_handed_to_the_agent_are_refused_at_load() {
    let (env, forge) = world();
    let path = env.write_manifest(&manifest(&env, &forge, ""));
    let mut command = env.eden_command(&["run", &path.to_string_lossy()]);
    command.env_remove("GITHUB_TOKEN").env_remove("GH_TOKEN");
    let run = crate::support::Run::from(command.output().unwrap());
    run.assert_code(6);
    assert!(run.error_text().contains("neither `GITHUB_TOKEN` nor `GH_TOKEN` is set"), "{}", run.error_text());
    let handed = manifest(&env, &forge, "").replace("[agent]\n", "[agent]\nenv = { GH_TOKEN = \"${GITHUB_TOKEN}\" }\n");
    let run = run_with_token(&env, &handed, TOKEN);
    run.assert_code(2);
    assert!(run.error_text().contains("hands `GH_TOKEN` the forge's token"), "{}", run.error_text());
    assert!(!run.stderr.contains(TOKEN));
    let written = manifest(&env, &forge, "").replace("[forge]\n", &format!("[forge]\ntoken = \"{TOKEN}\"\n"));
    let run = run_with_token(&env, &written, TOKEN);
    run.assert_code(2);
    assert!(run.error_text().contains("a token written in the manifest is a leaked token"), "{}", run.error_text());
    env.assert_pristine();
    assert!(forge.seen().is_empty(), "nothing reached the forge");
}
