//! `eden doctor`: what a first run needs, one line each, exit 0 when all that is needed is there.

use crate::support::{Run, TestEnv};

fn doctor(env: &TestEnv, args: &[&str], set: &[(&str, &str)], unset: &[&str]) -> Run {
    let mut command = env.eden_command(&[&["doctor"], args].concat());
    for (key, value) in set {
        command.env(key, value);
    }
    for key in unset {
        command.env_remove(key);
    }
    Run::from(command.output().unwrap())
}

#[test]
fn a_ready_repository_passes_and_says_what_it_found() {
    let env = TestEnv::new();
    let run = doctor(&env, &[], &[], &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("✓ git: git version"), "{}", run.stderr);
    assert!(run.stderr.contains("✓ git identity: Test <test@example.com>"), "{}", run.stderr);
    assert!(run.stderr.contains("✓ repository:"), "{}", run.stderr);
    let json = doctor(&env, &["--json"], &[], &[]);
    json.assert_code(0);
    let findings = json.json();
    let checks: Vec<&str> = findings.as_array().unwrap().iter().map(|f| f["check"].as_str().unwrap()).collect();
    for check in ["git", "git identity", "repository", "docker", "podman", "bubblewrap", "claude-code", "codex"] {
        assert!(checks.contains(&check), "{check}: {checks:?}");
    }
}

#[test]
fn what_is_missing_is_said_with_its_fix_and_fails() {
    let env = TestEnv::new();
    let identity = ["GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"];
    let run = doctor(&env, &[], &[], &identity);
    run.assert_code(1);
    assert!(run.stderr.contains("✗ git identity: no `user.name`/`user.email`"), "{}", run.stderr);
    assert!(run.stderr.contains("git config --global user.name"), "{}", run.stderr);
    // Outside a repository.
    let outside = env.root().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    let run = doctor(&env, &["--repo", outside.to_str().unwrap()], &[], &[]);
    run.assert_code(1);
    assert!(run.stderr.contains("✗ repository:"), "{}", run.stderr);
    // A manifest whose image is not there, and whose agent is not installed.
    let manifest = env.write_manifest(
        "name = \"x\"\nprompt = \"p\"\n[agent]\nkind = \"claude-code\"\nbinary = \"/nonexistent/claude\"\n\
         [sandbox]\nkind = \"docker\"\nimage = \"localhost/no-such-image:1\"\n",
    );
    let run = doctor(&env, &[manifest.to_str().unwrap()], &[], &[]);
    run.assert_code(1);
    if crate::containers::ready("docker") {
        assert!(run.stderr.contains("✗ docker:") && run.stderr.contains("no-such-image"), "{}", run.stderr);
    }
    let bad = env.write_manifest("name = \"x\"\nprompt = \"p\"\n[agent]\nkind = \"nope\"\n");
    let run = doctor(&env, &[bad.to_str().unwrap()], &[], &[]);
    run.assert_code(1);
    assert!(run.stderr.contains("✗ manifest:"), "{}", run.stderr);
}

/// An agent's key is found by name and never shown.
#[test]
fn a_key_is_named_never_shown() {
    let Some(_) = crate::real_agents::require("claude") else { return };
    let env = TestEnv::new();
    let manifest = env.write_manifest("name = \"x\"\nprompt = \"p\"\n[agent]\nkind = \"claude-code\"\n");
    let key = "sk-ant-doctor-4711-never-shown";
    let run = doctor(&env, &[manifest.to_str().unwrap()], &[("ANTHROPIC_API_KEY", key)], &[]);
    run.assert_code(0);
    assert!(
        run.stderr.contains("✓ claude-code:") && run.stderr.contains("a key in `ANTHROPIC_API_KEY`"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(key) && !run.stdout.contains(key));
    // Without it, the manifest's agent has nothing to log in with.
    let run = doctor(&env, &[manifest.to_str().unwrap()], &[], &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"]);
    run.assert_code(1);
    assert!(run.stderr.contains("✗ claude-code:") && run.stderr.contains("no key or login found"), "{}", run.stderr);
}

/// Given a manifest, doctor says what its agent reads, where it connects and what it holds, as
/// `--dry-run` does (`reach`); and it lists each engine's runtimes.
#[test]
fn what_the_agent_reads_and_reaches_is_said() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let manifest = |sandbox: &str| {
        env.write_manifest(&format!(
            "name = \"x\"\nprompt = \"p\"\n[agent]\nkind = \"simulated\"\n[sandbox]\n{sandbox}\n"
        ))
    };
    let image = crate::containers::IMAGE;
    let run = doctor(&env, &[manifest(&format!("kind = \"docker\"\nimage = \"{image}\"")).to_str().unwrap()], &[], &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("✓ docker: answers") && run.stderr.contains("runtimes: runc"), "{}", run.stderr);
    assert!(run.stderr.contains("✓ the agent connects to: the internet, but not this machine"), "{}", run.stderr);
    assert!(run.stderr.contains("✓ the agent's privileges: none: every capability dropped"), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("the image `{image}`")), "{}", run.stderr);
    let bridge =
        manifest(&format!("kind = \"docker\"\nimage = \"{image}\"\nnetwork = \"bridge\"\nruntime = \"runsc\""));
    let dry = env.eden(&["run", bridge.to_str().unwrap(), "--dry-run"]);
    dry.assert_code(0);
    let reach = &dry.json()["reach"];
    assert!(reach["connects"].as_str().unwrap().contains("the internet and this machine"), "{reach}");
    assert!(reach["privileges"].as_str().unwrap().contains("under gVisor"), "{reach}");
    let isolated = env.eden(&["run", manifest("kind = \"isolated\"").to_str().unwrap(), "--dry-run"]);
    let reach = &isolated.json()["reach"];
    assert!(reach["connects"].as_str().unwrap().starts_with("nothing but its own loopback"), "{reach}");
    assert!(reach["reads"].to_string().contains("/etc without its secrets"), "{reach}");
}

/// With a container manifest, the agent is looked for in the image, not on this machine: an
/// image without it is a finding (the run would stop with exit 6), one with it gives the
/// image's own version.
#[test]
fn the_agent_is_looked_for_in_the_image() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let image = crate::containers::IMAGE;
    let missing = env.write_manifest(&format!(
        "name = \"x\"\nprompt = \"p\"\n[agent]\nkind = \"claude-code\"\n[sandbox]\nkind = \"docker\"\nimage = \"{image}\"\n"
    ));
    let run = doctor(&env, &[missing.to_str().unwrap()], &[], &[]);
    run.assert_code(1);
    assert!(
        run.stderr.contains(&format!("✗ claude-code in the image: `claude` is not in `{image}`")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("eden image build --agent claude-code"), "{}", run.stderr);
    // `git` stands in for an agent the image has: a `cli`-like binary path given to claude-code.
    let present = env.write_manifest(&format!(
        "name = \"x\"\nprompt = \"p\"\n[agent]\nkind = \"claude-code\"\nbinary = \"git\"\n[sandbox]\nkind = \"docker\"\nimage = \"{image}\"\n"
    ));
    let run = doctor(&env, &[present.to_str().unwrap()], &[], &[]);
    assert!(run.stderr.contains("✓ claude-code in the image: `git` git version"), "{}", run.stderr);
}

/// A manifest `eden init` just wrote: its placeholder prompt is one finding, and the rest is
/// checked all the same (here, the image not built yet). `--network` tries the base URL the
/// manifest gives the agent, not the provider's usual host; `--host` names the engine to ask.
#[test]
fn everything_is_reported_for_a_fresh_manifest() {
    let env = TestEnv::new();
    let init = env.eden(&["init", "--agent", "claude-code", "--sandbox", "docker"]);
    init.assert_code(0);
    let run = doctor(&env, &["eden.toml"], &[], &[]);
    run.assert_code(1);
    assert!(run.stderr.contains("✓ manifest: `eden.toml` loads"), "{}", run.stderr);
    assert!(run.stderr.contains("✗ prompt: step `main` still says `Describe the task here.`"), "{}", run.stderr);
    // The key the manifest hands over is not exported here: one finding, the rest still checked.
    assert!(run.stderr.contains("✗ environment: `ANTHROPIC_API_KEY` is not set"), "{}", run.stderr);
    if crate::containers::ready("docker") {
        assert!(run.stderr.contains("✗ docker:") && run.stderr.contains("eden:repo"), "{}", run.stderr);
    }

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let manifest = env.write_manifest(&format!(
        "name = \"x\"\nprompt = \"p\"\n[agent]\nkind = \"claude-code\"\nbinary = \"git\"\nenv = {{ ANTHROPIC_BASE_URL = \"http://127.0.0.1:{port}\" }}\n"
    ));
    let run = doctor(&env, &[manifest.to_str().unwrap(), "--network"], &[], &[]);
    assert!(run.stderr.contains(&format!("claude-code network: 127.0.0.1:{port} answers")), "{}", run.stderr);

    let bad = doctor(&env, &["--host", "ftp://nowhere"], &[], &[]);
    bad.assert_code(2);
    assert!(bad.stderr.contains("`--host`: `ftp://nowhere` is not an engine address eden knows"), "{}", bad.stderr);
    let elsewhere = doctor(&env, &["--host", "unix:///nonexistent/docker.sock", "--json"], &[], &[]);
    let findings = elsewhere.json();
    let docker = findings.as_array().unwrap().iter().find(|finding| finding["check"] == "docker").unwrap();
    assert!(docker["detail"].as_str().unwrap().contains("does not answer"), "{docker:#}");
    // With a manifest too: `--host` is the engine asked for its image, not the local one that
    // has it.
    if crate::containers::ready("docker") {
        let boxed = env.write_manifest(&format!(
            "name = \"x\"\nprompt = \"p\"\n[agent]\nkind = \"simulated\"\n[sandbox]\nkind = \"docker\"\nimage = \"{}\"\n",
            crate::containers::IMAGE
        ));
        let here = doctor(&env, &[boxed.to_str().unwrap(), "--json"], &[], &[]);
        let found = |run: &Run| run.json().as_array().unwrap().iter().find(|f| f["check"] == "docker").unwrap().clone();
        assert_eq!(found(&here)["state"], "ok", "{}", here.stdout);
        let there =
            doctor(&env, &[boxed.to_str().unwrap(), "--host", "unix:///nonexistent/docker.sock", "--json"], &[], &[]);
        let docker = found(&there);
        assert_ne!(docker["state"], "ok", "{docker:#}");
        assert!(!docker["detail"].as_str().unwrap().contains("has the image"), "{docker:#}");
    }
}

/// What the sandbox's agent is given, not what this machine has: a key in eden's environment
/// alone does not reach a sandbox, and doctor says so; `eden init`'s manifest hands it over,
/// held (the dry run agrees).
#[test]
fn the_key_the_sandbox_gets_is_checked() {
    let env = TestEnv::new();
    let key = [("ANTHROPIC_API_KEY", "sk-ant-doctor-0000")];
    let bare = env.write_manifest(
        "name = \"x\"\nprompt = \"p\"\n[agent]\nkind = \"claude-code\"\nbinary = \"git\"\n[sandbox]\nkind = \"isolated\"\n",
    );
    let run = doctor(&env, &[bare.to_str().unwrap()], &key, &[]);
    run.assert_code(1);
    assert!(run.stderr.contains("✗ claude-code key in the sandbox: the sandbox is given no key"), "{}", run.stderr);
    assert!(run.stderr.contains("env = { ANTHROPIC_API_KEY = \"${ANTHROPIC_API_KEY}\" }"), "{}", run.stderr);
    assert!(!run.stderr.contains("sk-ant-doctor"), "never shown: {}", run.stderr);

    env.eden(&["init", "--agent", "claude-code", "--sandbox", "isolated"]).assert_code(0);
    let manifest = std::fs::read_to_string(env.repo.join("eden.toml")).unwrap();
    let manifest = manifest.replace("[agent]\n", "[agent]\nbinary = \"git\"\n");
    std::fs::write(env.repo.join("eden.toml"), manifest).unwrap();
    let run = doctor(&env, &["eden.toml"], &key, &[]);
    assert!(
        run.stderr.contains("✓ claude-code key in the sandbox: `ANTHROPIC_API_KEY` is held by eden"),
        "{}",
        run.stderr
    );
    // Before the key is exported, the manifest's hand-over is there: what is missing is the
    // variable, and the finding says that, not "hand it over".
    let unset = doctor(&env, &["eden.toml"], &[], &["ANTHROPIC_API_KEY"]);
    unset.assert_code(1);
    assert!(
        unset.stderr.contains(
            "✗ claude-code key in the sandbox: the manifest hands over `${ANTHROPIC_API_KEY}`, which is not set here"
        ),
        "{}",
        unset.stderr
    );
    assert!(!unset.stderr.contains("hand it over under `[agent]`"), "{}", unset.stderr);
    let mut dry = env.eden_command(&["run", "--dry-run", "--set", "prompt=go"]);
    let dry = Run::from(dry.env("ANTHROPIC_API_KEY", "sk-ant-doctor-0000").output().unwrap());
    dry.assert_code(0);
    assert_eq!(dry.json()["plan"]["steps"][0]["held"]["keys"][0]["var"], "ANTHROPIC_API_KEY", "{}", dry.stdout);
    // What the agent's command will hold: the relay and a placeholder, never the upstream or the key.
    let env = &dry.json()["agent_commands"][0]["env"];
    assert!(env["ANTHROPIC_BASE_URL"].as_str().unwrap().starts_with("http://127.0.0.1:<relay port>"), "{env:#}");
    assert_eq!(env["ANTHROPIC_API_KEY"], "eden-held-<placeholder>", "{env:#}");
}
