//! Resolving `[agent]`: which kind, which executable (looked up on the host, or left for the
//! container to find), its arguments and environment (`${VAR}` expanded from eden's own).

use super::load::{KeyPath, Source};
use super::schema::*;
use super::DEFAULT_SIGNAL;
use crate::agent::{AdapterSettings, AgentPlan, CliPlan, Family, ParserKind};
use crate::error::Error;
use crate::redact::Secret;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where and how an agent is resolved: its table's path, and whether it runs in a container
/// or a pod (its executable is then looked up there, not on this machine).
struct AgentAt<'a> {
    path: KeyPath,
    source: &'a Source,
    in_container: bool,
}

impl AgentAt<'_> {
    /// An executable named by `agent.binary`: on this machine, or (in a container) a name on
    /// the image's PATH or an absolute path inside it.
    fn binary(&self, binary: &str) -> Result<PathBuf, Error> {
        let found = if !self.in_container {
            find_binary(binary, &self.source.base_dir)
        } else if binary.contains('/') && !binary.starts_with('/') {
            Err(Error::usage(format!(
                "`{binary}` is a relative path, but the agent runs in a container: give a name on the image's PATH or an absolute path inside the image"
            )))
        } else {
            Ok(PathBuf::from(binary))
        };
        found.map_err(|why| {
            self.source.error_at(&self.path.child("binary"), why.message).with_hint(
                "a name is looked up on PATH; a path with `/` is relative to the manifest's folder (to the current directory when given as a flag)",
            )
        })
    }
}

pub(super) fn resolve_agent(
    agent: &AgentSection,
    path: &KeyPath,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
    in_container: bool,
) -> Result<AgentPlan, Error> {
    let Some(kind) = agent.kind else {
        let kinds = AgentKind::names().join(", ");
        return Err(source
            .error_at(path, "no agent kind given")
            .with_hint(format!("set `agent.kind` (or `--agent`) to one of: {kinds}")));
    };
    let at = AgentAt { path: path.clone(), source, in_container };
    check_keys_apply(agent, kind, &at)?;
    let env =
        || super::env_plan::resolve_env(&agent.env.clone().unwrap_or_default(), &path.child("env"), source, host_env);
    match kind.family() {
        Family::Simulated => Ok(AgentPlan::Simulated {
            lines: agent.lines.clone().unwrap_or_else(|| {
                vec![
                    "simulated agent: reading the task".into(),
                    "simulated agent: working".into(),
                    format!("simulated agent: done {DEFAULT_SIGNAL}"),
                ]
            }),
            line_delay: agent.line_delay,
            exit_code: agent.exit_code.unwrap_or(0),
        }),
        Family::Cli => Ok(AgentPlan::Cli(resolve_cli(agent, &at, env()?)?)),
        Family::Adapter => {
            let binary = adapter_binary(agent, kind, &at)?;
            Ok(AgentPlan::Adapter(AdapterSettings {
                kind,
                binary,
                model: agent.model.clone(),
                effort: agent.effort.clone(),
                extra_args: agent.extra_args.clone().unwrap_or_default(),
                env: env()?,
                resume: agent.resume.clone(),
            }))
        }
    }
}

/// Every key set is one the kind uses; the hint says which kinds use it.
fn check_keys_apply(agent: &AgentSection, kind: AgentKind, at: &AgentAt<'_>) -> Result<(), Error> {
    let set = |key: &str| match key {
        "binary" => agent.binary.is_some(),
        "args" => agent.args.is_some(),
        "prompt_via" => agent.prompt_via.is_some(),
        "parser" => agent.parser.is_some(),
        "lines" => agent.lines.is_some(),
        "line_delay" => agent.line_delay.is_some(),
        "exit_code" => agent.exit_code.is_some(),
        "effort" => agent.effort.is_some(),
        "resume" => agent.resume.is_some(),
        "model" => agent.model.is_some(),
        "extra_args" => agent.extra_args.is_some(),
        _ => agent.env.is_some(),
    };
    for (key, refused, owners) in super::kind_keys::agent_keys(kind) {
        if set(key) && refused {
            return Err(at
                .source
                .error_at_key(
                    &at.path.child(key),
                    format!("`agent.{key}` does not apply to agent kind `{}`", kind.as_str()),
                )
                .with_hint(format!("it is used by {owners}; remove it")));
        }
    }
    Ok(())
}

/// A `cli` agent: its executable, parser, arguments (the prompt added where `prompt_via =
/// "arg"` leaves no `{prompt}`) and environment.
fn resolve_cli(agent: &AgentSection, at: &AgentAt<'_>, env: BTreeMap<String, Secret>) -> Result<CliPlan, Error> {
    let (path, source) = (&at.path, at.source);
    let Some(binary) = &agent.binary else {
        return Err(source
            .error_at(path, "agent kind `cli` needs `agent.binary`")
            .with_hint("set `agent.binary` (or `--binary`) to the agent's executable"));
    };
    let binary = at.binary(binary)?;
    let name = agent.parser.as_deref().unwrap_or("lines");
    let Some(parser) = ParserKind::named(name) else {
        return Err(source
            .error_at(&path.child("parser"), format!("unknown parser `{name}`"))
            .with_hint(format!("parsers: {}", ParserKind::names().collect::<Vec<_>>().join(", "))));
    };
    let mut args = agent.args.clone().unwrap_or_default();
    if agent.model.is_none() && args.iter().any(|a| a.contains("{model}")) {
        return Err(source
            .error_at(&path.child("args"), "`agent.args` uses `{model}` but `agent.model` is not set")
            .with_hint("set `agent.model` (or `--model`)"));
    }
    let prompt_via = agent.prompt_via.unwrap_or(PromptVia::Stdin);
    if prompt_via == PromptVia::Arg && !args.iter().any(|a| a.contains("{prompt}")) {
        args.push("{prompt}".into());
    }
    args.extend(agent.extra_args.clone().unwrap_or_default());
    Ok(CliPlan { binary, args, prompt_via, parser, model: agent.model.clone(), env })
}

/// An agent CLI's executable: `agent.binary`, else its usual name (on this machine's PATH, or
/// left for the container to find).
fn adapter_binary(agent: &AgentSection, adapter: AgentKind, at: &AgentAt<'_>) -> Result<PathBuf, Error> {
    let default = adapter.spec().binary.expect("adapters have a binary");
    match &agent.binary {
        Some(binary) => at.binary(binary),
        None if at.in_container => Ok(PathBuf::from(default)),
        None => which::which(default).map_err(|_| {
            at.source
                .error_at(
                    &at.path.child("kind"),
                    format!("agent kind `{}` runs `{default}`, which was not found on PATH", adapter.as_str()),
                )
                .with_hint(format!("{}; or set `agent.binary` to its path", adapter.install_hint()))
        }),
    }
}

/// Find an executable: a name on PATH, or a path relative to the manifest's folder.
fn find_binary(binary: &str, base_dir: &Path) -> Result<PathBuf, Error> {
    if binary.trim().is_empty() {
        return Err(Error::usage("`agent.binary` is empty"));
    }
    if binary.contains('/') {
        let path = crate::values::normalize_path(&base_dir.join(binary));
        let path = std::fs::canonicalize(&path)
            .map_err(|_| Error::usage(format!("agent binary `{}` does not exist", path.display())))?;
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).map(|m| m.permissions().mode()).unwrap_or(0);
        if path.is_dir() || mode & 0o111 == 0 {
            return Err(Error::usage(format!("agent binary `{}` is not executable", path.display())));
        }
        return Ok(path);
    }
    which::which(binary).map_err(|_| Error::usage(format!("agent binary `{binary}` was not found on PATH")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(text: &str, in_container: bool) -> Result<AgentPlan, String> {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        resolve_agent(&manifest.agent, &KeyPath::parse("agent"), &source, &|_| None, in_container)
            .map_err(|err| err.message)
    }

    #[test]
    fn keys_belong_to_their_kinds() {
        assert!(matches!(agent("[agent]\nkind = \"simulated\"\n", false), Ok(AgentPlan::Simulated { .. })));
        let no_kind = agent("[agent]\n", false).unwrap_err();
        assert!(no_kind.contains("no agent kind given"), "{no_kind}");
        let binary = agent("[agent]\nkind = \"simulated\"\nbinary = \"x\"\n", false).unwrap_err();
        assert!(binary.starts_with("plan.toml:3:1: `agent.binary` does not apply"), "{binary}");
        let lines = agent("[agent]\nkind = \"cli\"\nbinary = \"/bin/sh\"\nlines = []\n", false).unwrap_err();
        assert!(lines.contains("`agent.lines` does not apply to agent kind `cli`"), "{lines}");
    }

    #[test]
    fn a_cli_agent() {
        assert!(agent("[agent]\nkind = \"cli\"\n", false).unwrap_err().contains("needs `agent.binary`"));
        let parser = agent("[agent]\nkind = \"cli\"\nbinary = \"/bin/sh\"\nparser = \"nope\"\n", false).unwrap_err();
        assert!(parser.contains("unknown parser `nope`"), "{parser}");
        let Ok(AgentPlan::Cli(cli)) =
            agent("[agent]\nkind = \"cli\"\nbinary = \"/bin/sh\"\nprompt_via = \"arg\"\n", false)
        else {
            panic!("a cli agent")
        };
        assert_eq!(cli.args, ["{prompt}"]);
        // In a container a relative path cannot be found; a name is the image's to look up.
        let relative = agent("[agent]\nkind = \"cli\"\nbinary = \"./agent.sh\"\n", true).unwrap_err();
        assert!(relative.contains("is a relative path, but the agent runs in a container"), "{relative}");
        assert!(agent("[agent]\nkind = \"cli\"\nbinary = \"my-agent\"\n", true).is_ok());
        assert!(agent("[agent]\nkind = \"cli\"\nbinary = \"no-such-agent-here\"\n", false).is_err());
    }
}
