//! `eden init` and `eden image build/remove`, on the real engines (from the local test image, so
//! no registry is needed).

use crate::containers::{ready, IMAGE};
use crate::support::TestEnv;

#[test]
fn init_writes_a_valid_manifest_and_never_overwrites() {
    let env = TestEnv::new();
    let run = env.eden(&["init", "--agent", "simulated"]);
    run.assert_code(0);
    assert!(run.stdout.is_empty());
    assert!(env.repo.join("eden.toml").exists() && !env.repo.join("Dockerfile.eden").exists());
    // The starter manifest loads and resolves as it is.
    env.eden(&["run", "eden.toml", "--dry-run"]).assert_code(0);
    let again = env.eden(&["init", "--agent", "simulated"]);
    again.assert_code(2);
    assert!(again.error_text().ends_with("hint: pass `--force` to overwrite it, or `--dir` to write elsewhere"));
    env.eden(&["init", "--agent", "simulated", "--force"]).assert_code(0);
    let bad = env.eden(&["init", "--agent", "gpt"]);
    bad.assert_code(2);
    assert_eq!(
        bad.error_text(),
        "error: unknown agent kind `gpt`\nhint: agent kinds: claude-code, codex, opencode, pi, cursor, copilot, cli, simulated"
    );
}

#[test]
fn image_build_needs_a_dockerfile() {
    let env = TestEnv::new();
    let run = env.eden(&["image", "build", "--engine", "docker", "--agent", "none"]);
    run.assert_code(2);
    assert_eq!(
        run.error_text(),
        "error: `Dockerfile.eden` does not exist\nhint: write it with `eden init --sandbox docker` (or pass `--file`)"
    );
}

/// `--manifest` builds the image a manifest runs in; one that runs in none says so, and one on
/// several engines asks which.
#[test]
fn image_build_for_a_manifest_needs_one_container_engine() {
    let env = TestEnv::new();
    env.eden(&["init", "--agent", "simulated"]).assert_code(0);
    let run = env.eden(&["image", "build", "--manifest", "eden.toml"]);
    run.assert_code(2);
    assert!(run.error_text().starts_with("error: `eden.toml` runs in no container image (its sandbox is `none`)\nhint: a `docker` or `podman` sandbox"), "{}", run.stderr);
    env.write(
        "eden.toml",
        "name = \"x\"\nprompt = \"y\"\n[agent]\nkind = \"simulated\"\n[sandbox]\nkind = \"docker\"\nimage = \"x\"\nhost = [\"tcp://10.0.0.1:2376\", \"tcp://10.0.0.2:2376\"]\n",
    );
    let run = env.eden(&["image", "build", "--manifest", "eden.toml"]);
    run.assert_code(2);
    assert!(run.error_text().contains("runs on 2 engines\nhint: build on one with `--host`"), "{}", run.stderr);
}

/// In the `Dockerfile.eden` `eden init` writes, each build argument is declared just before the
/// first step that uses it: a retry that adds one (the proxy's CA after a certificate error)
/// keeps every step before it from the cache, apt's download included.
#[test]
fn the_dockerfiles_build_arguments_come_just_before_their_step() {
    let env = TestEnv::new();
    env.eden(&["init", "--agent", "simulated", "--sandbox", "docker"]).assert_code(0);
    let dockerfile = std::fs::read_to_string(env.repo.join("Dockerfile.eden")).unwrap();
    let body = dockerfile.split_once("\nFROM ").unwrap().1;
    let args: Vec<&str> =
        body.lines().filter_map(|line| line.strip_prefix("ARG ")).map(|arg| arg.split('=').next().unwrap()).collect();
    assert_eq!(args, ["AGENT_PACKAGE", "EXTRA_CA_CERT", "UID", "GID"], "{dockerfile}");
    for arg in args {
        let after = body.split_once(&format!("ARG {arg}")).unwrap().1;
        let next_run = after.split("\nRUN ").nth(1).expect("a step after it");
        let next_run = next_run.split("\nARG ").next().unwrap();
        assert!(
            next_run.contains(&format!("${arg}")) || next_run.contains(&format!("${{{arg}}}")),
            "the step after `ARG {arg}` does not use it:\n{next_run}"
        );
    }
}

fn build_run_remove(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    env.eden(&["init", "--agent", "simulated", "--sandbox", engine]).assert_code(0);
    let tag = format!("localhost/eden-built-{engine}:{}", std::process::id());
    let build = env.eden(&["image", "build", "--engine", engine, "--agent", "none", "--base", IMAGE, "--tag", &tag]);
    build.assert_code(0);
    assert!(build.stdout.is_empty(), "build output goes to stderr");
    // The host's uid is baked in as the image's user.
    // Removed by name, not `--rm`: podman's `run --rm` can return while its cleanup process
    // still holds the container, and the image would then be in use below.
    let probe = format!("eden-built-probe-{engine}-{}", std::process::id());
    let id = std::process::Command::new(engine).args(["run", "--name", &probe, &tag, "id", "-u"]).output().unwrap();
    let removed = std::process::Command::new(engine).args(["rm", "-f", &probe]).output().unwrap();
    assert!(removed.status.success(), "{}", String::from_utf8_lossy(&removed.stderr));
    assert_eq!(String::from_utf8_lossy(&id.stdout).trim(), nix::unistd::getuid().as_raw().to_string());
    let set = format!("sandbox.image=\"{tag}\"");
    env.eden(&["run", "eden.toml", "--set", &set]).assert_code(0);
    env.eden(&["image", "remove", "--engine", engine, "--tag", &tag]).assert_code(0);
    let gone = std::process::Command::new(engine).args(["image", "inspect", &tag]).output().unwrap();
    assert!(!gone.status.success(), "the image is removed");
    let again = env.eden(&["image", "remove", "--engine", engine, "--tag", &tag]);
    again.assert_code(6);
}

#[test]
fn docker_build_run_remove() {
    build_run_remove("docker");
}

#[test]
fn podman_build_run_remove() {
    build_run_remove("podman");
}

/// `init --dir` writes where asked, names the image after the repository (as `eden image build`
/// does), and its next steps work when pasted where `init` ran; outside a repository it warns.
#[test]
fn init_next_steps_work_from_where_it_ran() {
    let env = TestEnv::new();
    let run = env.eden(&["init", "--agent", "simulated", "--sandbox", "docker", "--dir", "sub/./cfg"]);
    run.assert_code(0);
    insta::assert_snapshot!(run.stderr.trim_end(), @"
    wrote sub/cfg/eden.toml
    wrote sub/cfg/Dockerfile.eden
    wrote .eden/eden.schema.json (the manifest's schema, for editors)
    next: edit the prompt in sub/cfg/eden.toml
    then: eden image build --engine docker --agent none --file sub/cfg/Dockerfile.eden
    then: eden run sub/cfg/eden.toml
    (commit the manifest first if you use strategy `head`, which needs a clean checkout)
    ");
    let manifest = std::fs::read_to_string(env.repo.join("sub/cfg/eden.toml")).unwrap();
    assert!(manifest.contains("image = \"eden:repo\""), "named after the repository: {manifest}");
    // Its schema, for editors: at the repository's root, named from where the manifest is, and
    // kept out of git.
    assert!(manifest.starts_with("#:schema ../../.eden/eden.schema.json\n"), "{manifest}");
    let schema = std::fs::read_to_string(env.repo.join(".eden/eden.schema.json")).unwrap();
    assert_eq!(schema, env.eden(&["schema"]).stdout);
    assert!(!env.git(&["status", "--porcelain"]).contains(".eden"));

    // A pod runs an image too: the Dockerfile is written, and the step names it.
    let run = env.eden(&["init", "--agent", "claude-code", "--sandbox", "kubernetes", "--dir", "pods"]);
    run.assert_code(0);
    assert!(env.repo.join("pods/Dockerfile.eden").is_file(), "{}", run.stderr);
    assert!(
        run.stderr.contains("then: eden image build --agent claude-code --file pods/Dockerfile.eden, push the image"),
        "{}",
        run.stderr
    );

    let outside = env.root().join("not-a-repo");
    let mut command = env.eden_command(&["init", "--agent", "simulated"]);
    std::fs::create_dir_all(&outside).unwrap();
    let run = crate::support::Run::from(command.current_dir(&outside).env("PWD", &outside).output().unwrap());
    run.assert_code(0);
    assert!(run.stderr.contains("warning: `.` is not in a git repository"), "{}", run.stderr);
}

/// What `eden init` writes runs as it is, under the defaults (the simulated agent, which needs
/// nothing installed, prints the completion signal the starter prompt asks for).
#[test]
fn the_starter_manifest_runs() {
    let env = TestEnv::new();
    env.eden(&["init", "--agent", "simulated"]).assert_code(0);
    env.git(&["add", "eden.toml"]);
    env.git(&["commit", "-q", "-m", "eden.toml"]);
    env.eden(&["run", "eden.toml"]).assert_code(0);
    env.eden(&["run", "eden.toml", "--strategy", "head"]).assert_code(0);
}

/// The build's context is an empty folder (not the repository, whatever it holds), a build
/// argument's value reaches the Dockerfile without appearing on the engine's command line, and
/// a failed build leaves no container behind but keeps its finished steps as cache, with a hint
/// that fits.
fn builds_from_an_empty_context_and_fail_cleanly(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    // A big file in the repository: it must not be sent to the engine.
    std::fs::write(env.repo.join("big.bin"), vec![0u8; 64 * 1024 * 1024]).unwrap();
    let dockerfile = env.repo.join("Dockerfile.eden");
    std::fs::write(
        &dockerfile,
        "ARG BASE\nFROM ${BASE}\nARG GREETING\nRUN echo \"$GREETING\" > /greeting && ls / > /root-listing\n",
    )
    .unwrap();
    let tag = format!("localhost/eden-context-{engine}:{}", std::process::id());
    let mut command = env.eden_command(&[
        "image",
        "build",
        "--engine",
        engine,
        "--agent",
        "none",
        "--base",
        IMAGE,
        "--tag",
        &tag,
        "--build-arg",
        "GREETING",
    ]);
    command.env("GREETING", "hello-from-the-environment");
    let build = crate::support::Run::from(command.output().unwrap());
    build.assert_code(0);
    assert!(
        !build.stderr.contains("hello-from-the-environment"),
        "the value stays off the command line: {}",
        build.stderr
    );
    let greeting = std::process::Command::new(engine).args(["run", "--rm", &tag, "cat", "/greeting"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&greeting.stdout).trim(), "hello-from-the-environment");
    let context = build.stderr.lines().find(|line| line.contains("Sending build context")).unwrap_or("");
    assert!(!context.contains("MB"), "the repository was sent as the context: {context}");
    std::process::Command::new(engine).args(["rmi", "-f", &tag]).output().unwrap();

    // A failing step: no container of it left behind (found by a marker only this build's
    // steps carry: other tests build and run in parallel); the step that succeeded is kept as
    // the build's cache, so the retry starts where it failed.
    let marker = format!("eden-failed-build-{}-{engine}", std::process::id());
    std::fs::write(
        &dockerfile,
        format!("ARG BASE\nFROM ${{BASE}}\nRUN echo {marker} > /layer\nRUN test {marker} = no\n"),
    )
    .unwrap();
    let failed = env.eden(&["image", "build", "--engine", engine, "--agent", "none", "--base", IMAGE, "--tag", &tag]);
    failed.assert_code(6);
    assert!(
        failed.error_text().ends_with(
            "hint: see the build output above; the steps that succeeded are cached, so a retry starts where it failed"
        ),
        "{}",
        failed.error_text()
    );
    let listed = |args: &[&str]| {
        let out = std::process::Command::new(engine).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let containers = listed(&["ps", "-a", "--no-trunc", "--format", "{{.Command}}"]);
    assert!(!containers.contains(&marker), "a container of the failed build is left: {containers}");
    std::fs::write(&dockerfile, format!("ARG BASE\nFROM ${{BASE}}\nRUN echo {marker} > /layer\nRUN true\n")).unwrap();
    let retry = env.eden(&["image", "build", "--engine", engine, "--agent", "none", "--base", IMAGE, "--tag", &tag]);
    retry.assert_code(0);
    assert!(retry.stderr.contains("Using cache"), "the step that succeeded was cached: {}", retry.stderr);
    std::process::Command::new(engine).args(["rmi", "-f", &tag]).output().unwrap();
}

#[test]
fn docker_builds_from_an_empty_context_and_fails_cleanly() {
    builds_from_an_empty_context_and_fail_cleanly("docker");
}

#[test]
fn podman_builds_from_an_empty_context_and_fails_cleanly() {
    builds_from_an_empty_context_and_fail_cleanly("podman");
}

/// The first hour, as the book's getting-started page tells it: `eden init --sandbox docker --agent claude-code`, the
/// prompt written, `eden image build`, `eden run eden.toml` — with the real Claude Code (its
/// native executable mounted, where the image would have it from npm) against the scripted
/// model server. The agent's commit is merged; nothing is left behind.
fn the_first_hour(engine: &str) {
    let Some(claude) = crate::real_agents::require("claude") else { return };
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    env.eden(&["init", "--sandbox", engine, "--agent", "claude-code"]).assert_code(0);
    let manifest = std::fs::read_to_string(env.repo.join("eden.toml")).unwrap();
    let manifest = manifest.replace(eden::manifest::PLACEHOLDER_TASK, "Create hello.txt and commit it.");
    std::fs::write(env.repo.join("eden.toml"), manifest).unwrap();
    // The image of its own from its first step: `build_run_remove` builds the same Dockerfile
    // at the same time, and removing one image took the layers the other's build was reusing.
    let dockerfile = std::fs::read_to_string(env.repo.join("Dockerfile.eden")).unwrap();
    let dockerfile = dockerfile.replacen("FROM ${BASE}\n", "FROM ${BASE}\nLABEL eden.test=first-hour\n", 1);
    assert!(dockerfile.contains("LABEL eden.test=first-hour"), "{dockerfile}");
    std::fs::write(env.repo.join("Dockerfile.eden"), dockerfile).unwrap();
    let tag = format!("localhost/eden-first-hour-{engine}:{}", std::process::id());
    let build = env.eden(&["image", "build", "--engine", engine, "--agent", "none", "--base", IMAGE, "--tag", &tag]);
    build.assert_code(0);
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let claude = std::fs::canonicalize(claude).unwrap();
    let mounts =
        format!("sandbox.mounts=[{{ host = \"{}\", sandbox = \"/opt/claude\", read_only = true }}]", claude.display());
    let image = format!("sandbox.image=\"{tag}\"");
    let mut command = env.eden_command(&[
        "run", "eden.toml", "--json", "--set", &image, "--set", "sandbox.network=\"host\"", "--set",
        "agent.binary=\"/opt/claude\"", "--set", &mounts, "--set",
        "agent.env={ ANTHROPIC_BASE_URL = \"${ANTHROPIC_BASE_URL}\", ANTHROPIC_API_KEY = \"${ANTHROPIC_API_KEY}\", DISABLE_TELEMETRY = \"1\", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\" }",
    ]);
    command.envs(crate::real_agents::claude_env(&env, &server));
    let run = crate::support::Run::from(command.output().unwrap());
    std::process::Command::new(engine).args(["rmi", "-f", &tag]).output().unwrap();
    run.assert_code(0);
    assert_eq!(run.json()["merged_into"], "main");
    assert_eq!(env.log_subjects("main")[0], "add hello.txt");
    assert!(crate::containers::containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty());
}

#[test]
fn docker_the_first_hour() {
    the_first_hour("docker");
}

#[test]
fn podman_the_first_hour() {
    the_first_hour("podman");
}
