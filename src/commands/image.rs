//! `eden image build` / `eden image remove`: the sandbox image, built from `Dockerfile.eden`
//! with the host's uid/gid baked in (so files the agent writes belong to the user).

use super::init::default_tag;
use crate::agent::AgentKind;
use crate::cli::{ImageBuildArgs, ImageRemoveArgs};
use crate::error::Error;
use crate::git::Git;
use crate::manifest::plan::Engine;
use crate::process::ProcessBuilder;

fn engine(choice: Option<&str>) -> Result<Engine, Error> {
    let reachable = |engine: Engine| {
        ProcessBuilder::new(engine.binary())
            .args(["version", "--format", "{{.Server.Version}}"])
            .output()
            .is_ok_and(|o| o.success())
    };
    match choice {
        Some("docker") => Ok(Engine::Docker),
        Some("podman") => Ok(Engine::Podman),
        Some(other) => Err(Error::usage(format!("unknown engine `{other}`")).with_hint("use `docker` or `podman`")),
        None if reachable(Engine::Docker) => Ok(Engine::Docker),
        None if reachable(Engine::Podman) => Ok(Engine::Podman),
        None => Err(Error::sandbox("neither docker nor podman is available")
            .with_hint("install one (Debian: `apt-get install docker.io` or `podman`) and start it")),
    }
}

/// The image name: given, or `eden:<repository folder>`.
fn tag(given: Option<String>) -> Result<String, Error> {
    if let Some(tag) = given {
        return Ok(tag);
    }
    let current = crate::commands::current_dir()?;
    let root = Git::discover(&current).map(|found| found.root).unwrap_or(current);
    Ok(default_tag(&root))
}

pub fn build(args: ImageBuildArgs) -> Result<i32, Error> {
    let engine = engine(args.engine.as_deref())?;
    let tag = tag(args.tag)?;
    let package = match args.agent.as_str() {
        "none" => String::new(),
        name => {
            let kind = AgentKind::from_name(name).ok_or_else(|| {
                Error::usage(format!("unknown agent `{name}`"))
                    .with_hint(format!("agents with an npm package: {}; or `none`", AgentKind::npm_names().join(", ")))
            })?;
            match kind.spec().npm_package {
                Some(package) => package.to_owned(),
                None => {
                    return Err(Error::usage(format!("eden cannot install `{name}` from npm"))
                        .with_hint("use `--agent none` and install it in your own Dockerfile"))
                }
            }
        }
    };
    if !args.file.exists() {
        return Err(Error::usage(format!("`{}` does not exist", args.file.display()))
            .with_hint("write it with `eden init --sandbox docker` (or pass `--file`)"));
    }
    let context = args.file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    let mut command = ProcessBuilder::new(engine.binary())
        .arg("build")
        .arg("-f")
        .arg(&args.file)
        .args(["--build-arg", &format!("UID={uid}"), "--build-arg", &format!("GID={gid}")])
        .args(["--build-arg", &format!("AGENT_PACKAGE={package}"), "-t", &tag]);
    if let Some(base) = &args.base {
        command = command.args(["--build-arg", &format!("BASE={base}")]);
    }
    if engine == Engine::Docker {
        // The classic builder works without buildx, which Debian's docker.io may lack.
        command = command.env("DOCKER_BUILDKIT", "0");
    }
    let command = command.arg(context);
    crate::ui::print_note(&format!("building `{tag}` with {}: {command}", engine.binary()));
    let status = command.status_to_stderr().map_err(|err| Error::sandbox(format!("cannot run `{command}`: {err}")))?;
    if !status.success() {
        return Err(Error::sandbox(format!("building `{tag}` failed"))
            .with_hint("see the build output above; with `--base` you can start from a local image"));
    }
    crate::ui::print_note(&format!(
        "built `{tag}` (uid {uid}, gid {gid}); use it with `image = \"{tag}\"` in [sandbox]"
    ));
    Ok(0)
}

pub fn remove(args: ImageRemoveArgs) -> Result<i32, Error> {
    let engine = engine(args.engine.as_deref())?;
    let tag = tag(args.tag)?;
    let command = ProcessBuilder::new(engine.binary()).args(["rmi", &tag]);
    let output = command.output().map_err(|err| Error::sandbox(format!("cannot run `{command}`: {err}")))?;
    if !output.success() {
        return Err(Error::sandbox(format!("cannot remove `{tag}`: {}", output.stderr.trim()))
            .with_hint("a container may still use it; `eden` removes its own containers at the end of each run"));
    }
    crate::ui::print_note(&format!("removed `{tag}`"));
    Ok(0)
}
