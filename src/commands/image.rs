//! `eden image build` / `eden image remove` / `eden image push`: the sandbox image, built from
//! `Dockerfile.eden` with the host's uid/gid baked in (so files the agent writes belong to the
//! user), on the client's default engine or the one `--host` names, and copied from the local
//! engine to another (`save | load`, no registry needed).

use super::init::default_tag;
use crate::agent::AgentKind;
use crate::cli::{ImageBuildArgs, ImagePushArgs, ImageRemoveArgs};
use crate::error::Error;
use crate::git::Git;
use crate::manifest::plan::{Engine, EngineHost};
use crate::sandbox::engine::Target;

/// The engine to use: `--engine` (else docker when its daemon answers, else podman), at
/// `--host` when given (then docker unless `--engine podman`).
fn engine(choice: Option<&str>, host: Option<&str>) -> Result<Target, Error> {
    let host = match host {
        Some(text) => Some(EngineHost::parse(text).map_err(|why| {
            Error::usage(format!("`--host`: {}", why.message)).with_hint(
                "give `tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, or a docker context or podman connection name",
            )
        })?),
        None => None,
    };
    let reachable = |target: &Target| {
        target.command().args(["version", "--format", "{{.Server.Version}}"]).output().is_ok_and(|o| o.success())
    };
    let engine = match choice {
        Some("docker") => Engine::Docker,
        Some("podman") => Engine::Podman,
        Some(other) => {
            return Err(Error::usage(format!("unknown engine `{other}`")).with_hint("use `docker` or `podman`"))
        }
        None if host.is_some() || reachable(&Target::new(Engine::Docker, None)) => Engine::Docker,
        None if reachable(&Target::new(Engine::Podman, None)) => Engine::Podman,
        None => {
            return Err(Error::sandbox("neither docker nor podman is available")
                .with_hint("install one (Debian: `apt-get install docker.io` or `podman`) and start it"))
        }
    };
    let target = Target::new(engine, host);
    if target.host.is_some() && !reachable(&target) {
        return Err(Error::sandbox(format!("cannot reach {}", target.describe())).with_hint(
            "check the address, that the engine listens there, and for TLS `DOCKER_TLS_VERIFY` and `DOCKER_CERT_PATH`",
        ));
    }
    Ok(target)
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

/// `eden image build|remove|push`.
pub(crate) fn image(command: crate::cli::ImageCommand) -> Result<i32, Error> {
    match command {
        crate::cli::ImageCommand::Build(args) => build(args),
        crate::cli::ImageCommand::Remove(args) => remove(args),
        crate::cli::ImageCommand::Push(args) => push(args),
    }
}

fn build(mut args: ImageBuildArgs) -> Result<i32, Error> {
    if let Some(path) = args.manifest.clone() {
        from_manifest(&path, &mut args)?;
    }
    let target = engine(args.engine.as_deref(), args.host.as_deref())?;
    let engine = target.engine;
    let tag = tag(args.tag.clone())?;
    let package = npm_package(args.agent.get_or_insert_with(|| AgentKind::DEFAULT.as_str().to_owned()))?;
    if !args.file.exists() {
        return Err(Error::usage(format!("`{}` does not exist", args.file.display()))
            .with_hint("write it with `eden init --sandbox docker` (or pass `--file`)"));
    }
    let passed = build_args(&args.build_args)?;
    let dockerfile = std::fs::canonicalize(&args.file)
        .map_err(|err| Error::usage(format!("cannot read `{}`", args.file.display())).with_source(err))?;
    // The Dockerfile copies nothing: the build context is an empty folder, not the repository
    // (which, with `target/` or `node_modules/`, can be gigabytes sent for nothing).
    let context = std::env::temp_dir().join(format!("eden-image-context-{}", std::process::id()));
    fs_err::create_dir_all(&context)
        .map_err(|err| Error::internal("cannot make the build context").with_source(err))?;
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    let mut command = target
        .command()
        .arg("build")
        .arg("-f")
        .arg(&dockerfile)
        // Intermediate containers go even when a step fails.
        .arg("--force-rm")
        .args(["--build-arg", &format!("UID={uid}"), "--build-arg", &format!("GID={gid}")])
        .args(["--build-arg", &format!("AGENT_PACKAGE={package}"), "-t", &tag]);
    if let Some(base) = &args.base {
        command = command.args(["--build-arg", &format!("BASE={base}")]);
    }
    for (key, value) in &passed {
        // The name on the command line, the value in the engine client's environment.
        command = command.args(["--build-arg", key]).env(key, value);
    }
    if engine == Engine::Docker {
        command = match target.command().args(["buildx", "version"]).output() {
            // BuildKit, docker's own default, where the engine's client has it.
            Ok(found) if found.success() => command.args(["--progress", "plain"]),
            _ => {
                crate::ui::print_note(
                    "note: docker's BuildKit (`buildx`) is not installed with this client, so the classic builder builds (`apt install docker-buildx` for BuildKit)",
                );
                command.env("DOCKER_BUILDKIT", "0")
            }
        };
    }
    let command = command.arg(&context);
    crate::ui::print_note(&format!("building `{tag}` with {}: {command}", target.describe()));
    // A failed build keeps the layers of the steps that succeeded: they are the build's cache,
    // and a retry starts where it failed (its containers go: `--force-rm`).
    let mut untrusted = false;
    let status = command.status_with_lines(&mut |line| {
        crate::ui::print_note(line);
        untrusted = untrusted || says_certificate_untrusted(line);
    });
    let _ = fs_err::remove_dir_all(&context);
    let status = status.map_err(|err| Error::sandbox(format!("cannot run `{command}`: {err}")))?;
    if !status.success() {
        return Err(Error::sandbox(format!("building `{tag}` failed")).with_hint(failed_hint(&args, untrusted)));
    }
    let on = target.host.as_ref().map(|host| format!(" and `host = \"{}\"`", host.as_str())).unwrap_or_default();
    crate::ui::print_note(&format!(
        "built `{tag}` (uid {uid}, gid {gid}); use it with `image = \"{tag}\"`{on} in [sandbox]"
    ));
    Ok(0)
}

/// `--manifest`: the engine, host, image and agent the manifest runs with, where the options
/// do not say.
fn from_manifest(path: &std::path::Path, args: &mut ImageBuildArgs) -> Result<(), Error> {
    let current = crate::commands::current_dir()?;
    let settings = super::settings::RunSettings::plain(None);
    let plan = super::settings::load(&settings, Some(path), &[], super::settings::Purpose::Doctor, &current)?.plan;
    let Some(built) = crate::sandbox::provider(&plan.sandbox).built_image() else {
        return Err(Error::usage(format!(
            "`{}` runs in no container image (its sandbox is `{}`)",
            path.display(),
            plan.sandbox.kind().as_str()
        ))
        .with_hint("a `docker` or `podman` sandbox has an image to build; for a pod, build it here with `--tag` and `eden image push` it where the cluster pulls from"));
    };
    if built.hosts.len() > 1 && args.host.is_none() {
        return Err(Error::usage(format!("`{}` runs on {} engines", path.display(), built.hosts.len())).with_hint(
            "build on one with `--host`, or build here and copy it to each with `eden image push --host HOST`",
        ));
    }
    args.engine.get_or_insert_with(|| built.engine.to_owned());
    if args.host.is_none() {
        args.host = built.hosts.first().cloned();
    }
    args.tag.get_or_insert_with(|| built.image.clone());
    args.agent.get_or_insert_with(|| {
        let kind = plan.steps[0].agent.kind();
        // A `cli` agent's program (or eden itself, relayed) is the image's business, not npm's.
        kind.spec().npm_package.map_or("none", |_| kind.as_str()).to_owned()
    });
    Ok(())
}

/// The npm package `--agent` installs (none for `none`).
fn npm_package(agent: &str) -> Result<String, Error> {
    match agent {
        "none" => Ok(String::new()),
        name => {
            let kind = AgentKind::from_name(name).ok_or_else(|| {
                Error::usage(format!("unknown agent `{name}`"))
                    .with_hint(format!("agents with an npm package: {}; or `none`", AgentKind::npm_names().join(", ")))
            })?;
            match kind.spec().npm_package {
                Some(package) => Ok(package.to_owned()),
                None => Err(Error::usage(format!("eden cannot install `{name}` from npm"))
                    .with_hint("use `--agent none` and install it in your own Dockerfile")),
            }
        }
    }
}

/// `--build-arg KEY=VALUE` (or `KEY`, its value from eden's environment): names only, none of
/// eden's own.
fn build_args(given: &[String]) -> Result<Vec<(String, String)>, Error> {
    let mut passed: Vec<(String, String)> = Vec::new();
    for given in given {
        let (key, value) = match given.split_once('=') {
            Some((key, value)) => (key.to_owned(), value.to_owned()),
            None => (
                given.clone(),
                std::env::var(given).map_err(|_| {
                    Error::usage(format!("`--build-arg {given}`: `{given}` is not set in eden's environment"))
                        .with_hint(format!("export it, or give the value: `--build-arg {given}=VALUE`"))
                })?,
            ),
        };
        let valid = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid || ["UID", "GID", "AGENT_PACKAGE", "BASE"].contains(&key.as_str()) {
            return Err(Error::usage(format!("`--build-arg {given}`: `{key}` cannot be passed")).with_hint(
                "names are letters, digits and `_`; UID, GID, AGENT_PACKAGE and BASE are eden's (`--base`, `--agent`)",
            ));
        }
        passed.push((key, value));
    }
    Ok(passed)
}

/// Does a line of the build's output say a TLS certificate was not trusted (npm, apt, curl
/// and git behind a TLS-inspecting proxy)?
fn says_certificate_untrusted(line: &str) -> bool {
    [
        "SELF_SIGNED_CERT_IN_CHAIN",
        "UNABLE_TO_GET_ISSUER_CERT",
        "unable to get local issuer certificate",
        "certificate verify failed",
        "self-signed certificate in certificate chain",
        "server certificate verification failed",
    ]
    .iter()
    .any(|said| line.contains(said))
}

/// What to do about a failed build: a certificate the build did not trust is a proxy's to
/// hand over (`EXTRA_CA_CERT`); anything else is in the output above.
fn failed_hint(args: &ImageBuildArgs, untrusted: bool) -> String {
    if untrusted {
        let engine = args.engine.as_deref().map(|engine| format!(" --engine {engine}")).unwrap_or_default();
        let base = args.base.as_deref().map(|base| format!(" --base {base}")).unwrap_or_default();
        return format!(
            "the build did not trust a TLS certificate: behind a TLS-inspecting proxy, give its CA certificate (PEM): `EXTRA_CA_CERT=\"$(cat proxy-ca.crt)\" eden image build{engine}{base} --agent {} --build-arg EXTRA_CA_CERT` (see \"Building an image\" in the book's Containers guide); the steps that succeeded are cached",
            args.agent.as_deref().unwrap_or(AgentKind::DEFAULT.as_str())
        );
    }
    match &args.base {
        Some(_) => "see the build output above; the steps that succeeded are cached, so a retry starts where it failed".to_owned(),
        None => "see the build output above; `--base IMAGE` starts from a local image, `--build-arg` passes a proxy or certificate".to_owned(),
    }
}

fn remove(args: ImageRemoveArgs) -> Result<i32, Error> {
    let target = engine(args.engine.as_deref(), args.host.as_deref())?;
    let tag = tag(args.tag)?;
    let command = target.command().args(["rmi", &tag]);
    // podman can say a container it has just removed still uses the image (its clean-up runs
    // on after `rm` returns): when no container is there to use it, asked again a moment later.
    for _ in 0..RMI_TRIES {
        let output = command.output().map_err(|err| Error::sandbox(format!("cannot run `{command}`: {err}")))?;
        if output.success() {
            crate::ui::print_note(&format!("removed `{tag}`"));
            return Ok(0);
        }
        let users = target.command().args(["ps", "-a", "-q", "--filter", &format!("ancestor={tag}")]).output();
        let none_left = users.is_ok_and(|users| users.success() && users.stdout.trim().is_empty());
        if !output.stderr.contains("in use") || !none_left {
            return Err(Error::sandbox(format!("cannot remove `{tag}`: {}", output.stderr.trim()))
                .with_hint("a container may still use it; `eden` removes its own containers at the end of each run"));
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    Err(Error::sandbox(format!("cannot remove `{tag}`: the engine still says it is in use, and no container uses it"))
        .with_hint("try again in a moment"))
}

/// How many times `eden image remove` asks an engine that says a container it no longer has
/// still uses the image.
const RMI_TRIES: usize = 12;

/// `eden image push IMAGE --host HOST`: the local engine's image, saved and loaded into the
/// engine at `--host` through the two clients (no registry).
fn push(args: ImagePushArgs) -> Result<i32, Error> {
    let target = engine(args.engine.as_deref(), Some(&args.host))?;
    let local = Target::new(target.engine, None);
    let tag = tag(args.tag)?;
    let inspect = local.command().args(["image", "inspect", "--format", "{{.Id}}", &tag]);
    if !inspect.output().is_ok_and(|output| output.success()) {
        return Err(Error::sandbox(format!("image `{tag}` is not available to the local {}", local.binary()))
            .with_hint(format!("build it first: `eden image build --engine {} --tag {tag}`", local.binary())));
    }
    let save = local.command().args(["save", &tag]);
    let load = target.command().arg("load");
    crate::ui::print_note(&format!("copying `{tag}` to {}: {save} | {load}", target.describe()));
    let (saved, loaded) =
        save.pipe_into(&load).map_err(|err| Error::sandbox(format!("cannot run `{save} | {load}`: {err}")))?;
    if !saved.success() || !loaded.success() {
        let why = if saved.success() { loaded.stderr } else { saved.stderr };
        return Err(Error::sandbox(format!("copying `{tag}` to {} failed: {}", target.describe(), why.trim()))
            .with_hint("a private registry works as usual too: push there and pull on the host"));
    }
    crate::ui::print_note(&format!("`{tag}` is on {}", target.describe()));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_certificate_is_recognized_and_its_fix_named() {
        assert!(says_certificate_untrusted("npm error code SELF_SIGNED_CERT_IN_CHAIN"));
        assert!(says_certificate_untrusted(
            "curl: (60) SSL certificate problem: unable to get local issuer certificate"
        ));
        assert!(!says_certificate_untrusted("npm error code E404"));
        let args = <crate::cli::Cli as clap::Parser>::parse_from([
            "eden",
            "image",
            "build",
            "--agent",
            "claude-code",
            "--base",
            "localhost/debian-base",
        ]);
        let crate::cli::Command::Image(crate::cli::ImageCommand::Build(args)) = args.command else {
            panic!("image build")
        };
        let hint = failed_hint(&args, true);
        assert!(hint.contains("EXTRA_CA_CERT=\"$(cat proxy-ca.crt)\" eden image build --base localhost/debian-base --agent claude-code --build-arg EXTRA_CA_CERT"), "{hint}");
    }
}
