//! The container engine's client: which engine (docker or podman, the client's default or a
//! `sandbox.host`), one command line for it, and running it to completion. Every call eden makes
//! to an engine starts here.
//!
//! The client's own conventions hold: with no `sandbox.host`, `docker` follows `DOCKER_HOST`,
//! `DOCKER_CONTEXT`, the current context and `DOCKER_TLS_VERIFY`/`DOCKER_CERT_PATH`, and
//! `podman` runs locally unless `CONTAINER_HOST` (or `CONTAINER_CONNECTION`) names a service.
//! A `sandbox.host` is passed as the client's own flag (`--host`/`--context`,
//! `--url`/`--connection`).

use crate::error::Error;
use crate::manifest::plan::{Engine, EngineHost};
use crate::process::{Output, ProcessBuilder};
use std::path::{Path, PathBuf};

/// An engine eden reaches: docker or podman, through its client's default or a given host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) engine: Engine,
    pub(crate) host: Option<EngineHost>,
}

/// Where an engine runs, as far as files go: on this machine (it sees this machine's paths, so
/// the repository's objects can be mounted), or elsewhere (everything crosses its channel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reach {
    Local,
    /// With the engine's address, as the client resolved it.
    Remote {
        endpoint: String,
    },
}

impl Target {
    pub(crate) fn new(engine: Engine, host: Option<EngineHost>) -> Target {
        Target { engine, host }
    }

    pub(crate) fn binary(&self) -> &'static str {
        self.engine.binary()
    }

    /// `docker` or `podman`, ready for its arguments, pointed at this engine.
    pub(crate) fn command(&self) -> ProcessBuilder {
        let command = ProcessBuilder::new(self.binary());
        match (self.engine, &self.host) {
            (Engine::Podman, None) if podman_remote_by_environment() => command.arg("--remote"),
            (_, None) => command,
            // The flag wins over the environment; the other way of choosing is cleared so the
            // client does not refuse the pair.
            (Engine::Docker, Some(EngineHost::Url(url))) => command.env_remove("DOCKER_CONTEXT").args(["--host", url]),
            (Engine::Docker, Some(EngineHost::Named(name))) => {
                command.env_remove("DOCKER_HOST").args(["--context", name])
            }
            (Engine::Podman, Some(EngineHost::Url(url))) => {
                command.env_remove("CONTAINER_CONNECTION").args(["--remote", "--url", url])
            }
            (Engine::Podman, Some(EngineHost::Named(name))) => {
                command.env_remove("CONTAINER_HOST").args(["--remote", "--connection", name])
            }
        }
    }

    /// `docker`, or `docker at tcp://build1:2376`: the engine in a message.
    pub(crate) fn describe(&self) -> String {
        match &self.host {
            None => self.binary().to_owned(),
            Some(host) => format!("{} at {}", self.binary(), host.as_str()),
        }
    }

    /// `--host ENGINE` for a message's hint, or nothing for the default engine.
    pub(crate) fn host_flag(&self) -> String {
        self.host.as_ref().map(|host| format!(" --host {}", host.as_str())).unwrap_or_default()
    }

    /// The target as a helper process's arguments: `ENGINE [HOST]`.
    pub(crate) fn to_args(&self) -> Vec<String> {
        let mut args = vec![self.binary().to_owned()];
        args.extend(self.host.as_ref().map(|host| host.as_str().to_owned()));
        args
    }

    pub(crate) fn from_args(args: &[std::ffi::OsString]) -> Option<Target> {
        let engine = crate::record::SandboxEngine::named(args.first()?.to_str()?)?.container_engine()?;
        let host = match args.get(1) {
            Some(host) => Some(EngineHost::parse(host.to_str()?).ok()?),
            None => None,
        };
        Some(Target { engine, host })
    }

    /// Is this engine on this machine? Asks the client how it would reach the engine (a docker
    /// context's address), never the engine itself. A unix socket is taken as an engine that
    /// sees this machine's files; any other address as one that does not.
    pub(crate) fn reach(&self) -> Result<Reach, Error> {
        let endpoint = match (&self.host, self.engine) {
            (Some(EngineHost::Url(url)), _) => url.clone(),
            (Some(EngineHost::Named(name)), Engine::Docker) => docker_context_host(Some(name))?,
            (Some(EngineHost::Named(name)), Engine::Podman) => podman_connection_uri(name)?,
            (None, Engine::Docker) => match std::env::var("DOCKER_HOST").ok().filter(|host| !host.is_empty()) {
                Some(host) => host,
                None if docker_context_is_default() => return Ok(Reach::Local),
                None => docker_context_host(None)?,
            },
            (None, Engine::Podman) => match std::env::var("CONTAINER_HOST").ok().filter(|host| !host.is_empty()) {
                Some(host) => host,
                None => match std::env::var("CONTAINER_CONNECTION").ok().filter(|name| !name.is_empty()) {
                    Some(name) => podman_connection_uri(&name)?,
                    None => return Ok(Reach::Local),
                },
            },
        };
        Ok(if endpoint.starts_with("unix://") || endpoint.is_empty() {
            Reach::Local
        } else {
            Reach::Remote { endpoint }
        })
    }
}

fn podman_remote_by_environment() -> bool {
    ["CONTAINER_HOST", "CONTAINER_CONNECTION"].iter().any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()))
}

/// docker's current context is its built-in `default` (the local daemon's socket, with
/// `DOCKER_HOST` unset): neither `DOCKER_CONTEXT` nor the client's `config.json` names another.
/// Read here, where asking `docker context inspect` would cost a process on every run's start;
/// anything unclear is left to it.
fn docker_context_is_default() -> bool {
    let config = match std::env::var_os("DOCKER_CONFIG").filter(|dir| !dir.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => std::env::var_os("HOME").map(|home| Path::new(&home).join(".docker")),
    };
    let text = config.map(|dir| std::fs::read_to_string(dir.join("config.json")));
    context_is_default(std::env::var("DOCKER_CONTEXT").ok().as_deref(), text)
}

/// `docker_context_is_default` from `DOCKER_CONTEXT` and the client's `config.json` as read
/// (`None`: no folder to read it from).
fn context_is_default(variable: Option<&str>, config: Option<std::io::Result<String>>) -> bool {
    if let Some(context) = variable.filter(|context| !context.is_empty()) {
        return context == "default";
    }
    let text = match config {
        Some(Ok(text)) => text,
        Some(Err(err)) => return err.kind() == std::io::ErrorKind::NotFound,
        None => return false,
    };
    let current = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(value) => value.get("currentContext").map(|context| context.as_str().map(str::to_owned)),
        Err(_) => return false,
    };
    match current {
        None => true,
        Some(Some(context)) => context.is_empty() || context == "default",
        Some(None) => false,
    }
}

/// The address of a docker context (the current one when `None`).
fn docker_context_host(name: Option<&str>) -> Result<String, Error> {
    let mut inspect =
        ProcessBuilder::new("docker").args(["context", "inspect", "--format", "{{.Endpoints.docker.Host}}"]);
    if let Some(name) = name {
        inspect = inspect.env_remove("DOCKER_HOST").arg(name);
    }
    let output = run(inspect)?;
    if !output.success() {
        let what =
            name.map_or_else(|| "the current docker context".to_owned(), |name| format!("docker context `{name}`"));
        return Err(Error::sandbox(format!("cannot read {what}: {}", output.stderr.trim()))
            .with_hint("`docker context ls` lists the contexts; give `sandbox.host` an address instead"));
    }
    Ok(output.stdout.trim().to_owned())
}

/// The address of a podman connection (`podman system connection list`).
fn podman_connection_uri(name: &str) -> Result<String, Error> {
    let output =
        run(ProcessBuilder::new("podman").args(["system", "connection", "list", "--format", "{{.Name}}\t{{.URI}}"]))?;
    let uri = output
        .stdout
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .find(|(listed, _)| listed.trim() == name)
        .map(|(_, uri)| uri.trim().to_owned());
    uri.ok_or_else(|| {
        Error::sandbox(format!("podman has no connection named `{name}`"))
            .with_hint("`podman system connection list` lists them; give `sandbox.host` an address instead")
    })
}

/// Run an engine command to completion; not starting at all is a sandbox error.
pub(crate) fn run(command: ProcessBuilder) -> Result<Output, Error> {
    let command = command.timeout(super::ENGINE_CALL);
    command.output().map_err(|err| Error::sandbox(format!("cannot run `{command}`: {err}")))
}

/// kubectl's own reason in its stderr: the last line that is neither a log line (`W1124 …]`)
/// nor a `Warning:`.
pub(super) fn kubectl_reason(stderr: &str) -> &str {
    let log_line = |line: &str| {
        let mut chars = line.chars();
        matches!(chars.next(), Some('I' | 'W' | 'E' | 'F')) && chars.take(4).all(|c| c.is_ascii_digit())
    };
    stderr
        .lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty() && !line.starts_with("Warning:") && !log_line(line))
        .unwrap_or_else(|| super::carry::first_line(stderr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_docker_context_is_read_without_asking_docker() {
        let config = |text: &str| Some(Ok(text.to_owned()));
        let missing = || Some(Err(std::io::Error::from(std::io::ErrorKind::NotFound)));
        assert!(context_is_default(None, missing()));
        assert!(context_is_default(None, config(r#"{"auths": {}}"#)));
        assert!(context_is_default(None, config(r#"{"currentContext": "default"}"#)));
        assert!(!context_is_default(None, config(r#"{"currentContext": "build1"}"#)));
        assert!(!context_is_default(Some("build1"), missing()));
        assert!(context_is_default(Some("default"), config(r#"{"currentContext": "build1"}"#)));
        // Anything unclear is docker's to answer.
        assert!(!context_is_default(None, config("{not json")));
        assert!(!context_is_default(None, config(r#"{"currentContext": 3}"#)));
        assert!(!context_is_default(None, Some(Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied)))));
        assert!(!context_is_default(None, None));
    }

    #[test]
    fn kubectls_reason_is_its_last_word() {
        let stderr = "W1124 16:39:32.503406   14559 loader.go:223] Config not found: /nonexistent\nWarning: the server doesn't have a resource type 'pods'\nThe connection to the server localhost:8080 was refused - did you specify the right host or port?\n";
        assert_eq!(
            kubectl_reason(stderr),
            "The connection to the server localhost:8080 was refused - did you specify the right host or port?"
        );
        assert_eq!(kubectl_reason("error: context \"x\" does not exist\n"), "error: context \"x\" does not exist");
    }

    #[test]
    fn a_host_is_the_clients_own_flag() {
        let url = |engine, url: &str| Target::new(engine, Some(EngineHost::Url(url.into()))).command().to_string();
        assert_eq!(url(Engine::Docker, "tcp://b1:2376"), "docker --host tcp://b1:2376");
        assert_eq!(
            url(Engine::Podman, "ssh://root@b1:22/run/podman.sock"),
            "podman --remote --url ssh://root@b1:22/run/podman.sock"
        );
        let named = Target::new(Engine::Docker, Some(EngineHost::Named("build1".into())));
        assert_eq!(named.command().to_string(), "docker --context build1");
        assert_eq!(named.describe(), "docker at build1");
        assert_eq!(Target::from_args(&named.to_args().iter().map(Into::into).collect::<Vec<_>>()), Some(named));
    }

    #[test]
    fn an_address_says_where_the_engine_is() {
        let reach = |url: &str| Target::new(Engine::Docker, Some(EngineHost::Url(url.into()))).reach().unwrap();
        assert_eq!(reach("unix:///var/run/docker.sock"), Reach::Local);
        assert_eq!(reach("tcp://10.0.0.2:2376"), Reach::Remote { endpoint: "tcp://10.0.0.2:2376".into() });
        assert!(matches!(reach("ssh://root@build1"), Reach::Remote { .. }));
    }
}
