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
    let id = std::process::Command::new(engine).args(["run", "--rm", &tag, "id", "-u"]).output().unwrap();
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
