//! Resolving `[agent]`: which kind, which executable (looked up on the host, or left for the
//! container to find), its arguments and environment (`${VAR}` expanded from eden's own).

use super::load::{KeyPath, Source};
use super::schema::*;
use super::DEFAULT_SIGNAL;
use crate::agent::{AdapterSettings, AgentPlan, CliPlan, ParserKind};
use crate::error::Error;
use std::path::{Path, PathBuf};

pub(super) fn resolve_agent(
    agent: &AgentSection,
    path: &KeyPath,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
    in_container: bool,
) -> Result<AgentPlan, Error> {
    // In a container or a pod the executable is looked up there, not on the host.
    let find_binary = |binary: &str, base_dir: &Path| -> Result<PathBuf, String> {
        if !in_container {
            return find_binary(binary, base_dir);
        }
        if binary.contains('/') && !binary.starts_with('/') {
            return Err(format!(
                "`{binary}` is a relative path, but the agent runs in a container: give a name on the image's PATH or an absolute path inside the image"
            ));
        }
        Ok(PathBuf::from(binary))
    };
    let path = path.clone();
    let kinds = "simulated, cli, claude-code, codex, opencode, pi, cursor, copilot";
    let Some(kind) = agent.kind else {
        return Err(source
            .error_at(&path, "no agent kind given")
            .with_hint(format!("set `agent.kind` (or `--agent`) to one of: {kinds}")));
    };
    // `owners`: who uses the key, for the hint.
    let only_for = |key: &str, set: bool, owners: &str| -> Result<(), Error> {
        if set {
            return Err(source
                .error_at_key(
                    &path.child(key),
                    format!("`agent.{key}` does not apply to agent kind `{}`", kind.as_str()),
                )
                .with_hint(format!("it is used by {owners}; remove it")));
        }
        Ok(())
    };
    let all_but_simulated = "every agent kind but `simulated`";
    if kind == AgentKind::Simulated {
        only_for("binary", agent.binary.is_some(), all_but_simulated)?;
    }
    if kind != AgentKind::Cli {
        only_for("args", agent.args.is_some(), "kind `cli`")?;
        only_for("prompt_via", agent.prompt_via.is_some(), "kind `cli`")?;
        only_for("parser", agent.parser.is_some(), "kind `cli`")?;
    }
    if kind != AgentKind::Simulated {
        only_for("lines", agent.lines.is_some(), "kind `simulated`")?;
        only_for("line_delay", agent.line_delay.is_some(), "kind `simulated`")?;
        only_for("exit_code", agent.exit_code.is_some(), "kind `simulated`")?;
    }
    if !kind.spec().effort {
        only_for("effort", agent.effort.is_some(), &kinds_where(|spec| spec.effort))?;
    }
    if !kind.spec().resume {
        only_for("resume", agent.resume.is_some(), &kinds_where(|spec| spec.resume))?;
    }
    let env =
        || super::env_plan::resolve_env(&agent.env.clone().unwrap_or_default(), &path.child("env"), source, host_env);

    match kind {
        AgentKind::Simulated => {
            only_for("model", agent.model.is_some(), all_but_simulated)?;
            only_for("extra_args", agent.extra_args.is_some(), all_but_simulated)?;
            only_for("env", agent.env.is_some(), all_but_simulated)?;
            Ok(AgentPlan::Simulated {
                lines: agent.lines.clone().unwrap_or_else(|| {
                    vec![
                        "simulated agent: reading the task".into(),
                        "simulated agent: working".into(),
                        format!("simulated agent: done {DEFAULT_SIGNAL}"),
                    ]
                }),
                line_delay: agent.line_delay,
                exit_code: agent.exit_code.unwrap_or(0),
            })
        }
        AgentKind::Cli => {
            let Some(binary) = &agent.binary else {
                return Err(source
                    .error_at(&path, "agent kind `cli` needs `agent.binary`")
                    .with_hint("set `agent.binary` (or `--binary`) to the agent's executable"));
            };
            let binary = find_binary(binary, &source.base_dir).map_err(|why| {
                source
                    .error_at(&path.child("binary"), why)
                    .with_hint("a name is looked up on PATH; a path with `/` is relative to the manifest's folder (to the current directory when given as a flag)")
            })?;
            let name = agent.parser.as_deref().unwrap_or("lines");
            let Some(parser) = ParserKind::named(name) else {
                return Err(source
                    .error_at(&path.child("parser"), format!("unknown parser `{name}`"))
                    .with_hint(format!("parsers: {}", ParserKind::names().collect::<Vec<_>>().join(", "))));
            };
            let args = agent.args.clone().unwrap_or_default();
            if agent.model.is_none() && args.iter().any(|a| a.contains("{model}")) {
                return Err(source
                    .error_at(&path.child("args"), "`agent.args` uses `{model}` but `agent.model` is not set")
                    .with_hint("set `agent.model` (or `--model`)"));
            }
            let prompt_via = agent.prompt_via.unwrap_or(PromptVia::Stdin);
            let mut args = args;
            if prompt_via == PromptVia::Arg && !args.iter().any(|a| a.contains("{prompt}")) {
                args.push("{prompt}".into());
            }
            args.extend(agent.extra_args.clone().unwrap_or_default());
            let env = env()?;
            Ok(AgentPlan::Cli(CliPlan { binary, args, prompt_via, parser, model: agent.model.clone(), env }))
        }
        adapter => {
            let default = adapter.spec().binary.expect("adapters have a binary");
            let install = adapter.install_hint();
            let binary = match &agent.binary {
                Some(binary) => find_binary(binary, &source.base_dir).map_err(|why| {
                    source.error_at(&path.child("binary"), why).with_hint(
                        "a name is looked up on PATH; a path with `/` is relative to the manifest's folder (to the current directory when given as a flag)",
                    )
                })?,
                None if in_container => PathBuf::from(default),
                None => which::which(default).map_err(|_| {
                    source
                        .error_at(
                            &path.child("kind"),
                            format!("agent kind `{}` runs `{default}`, which was not found on PATH", adapter.as_str()),
                        )
                        .with_hint(format!("{install}; or set `agent.binary` to its path"))
                })?,
            };
            Ok(AgentPlan::Adapter(AdapterSettings {
                kind: adapter,
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

/// `kinds `a`, `b` and `c``: the agent kinds whose spec says so.
fn kinds_where(has: impl Fn(&crate::agent::AgentSpec) -> bool) -> String {
    let names: Vec<String> =
        crate::agent::spec::SPECS.iter().filter(|spec| has(spec)).map(|spec| format!("`{}`", spec.name)).collect();
    match names.split_last() {
        Some((last, [])) => format!("kind {last}"),
        Some((last, rest)) => format!("kinds {} and {last}", rest.join(", ")),
        None => "no agent kind".to_owned(),
    }
}

/// Find an executable: a name on PATH, or a path relative to the manifest's folder.
fn find_binary(binary: &str, base_dir: &Path) -> Result<PathBuf, String> {
    if binary.trim().is_empty() {
        return Err("`agent.binary` is empty".into());
    }
    if binary.contains('/') {
        let path = crate::values::normalize_path(&base_dir.join(binary));
        let path =
            std::fs::canonicalize(&path).map_err(|_| format!("agent binary `{}` does not exist", path.display()))?;
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).map(|m| m.permissions().mode()).unwrap_or(0);
        if path.is_dir() || mode & 0o111 == 0 {
            return Err(format!("agent binary `{}` is not executable", path.display()));
        }
        return Ok(path);
    }
    which::which(binary).map_err(|_| format!("agent binary `{binary}` was not found on PATH"))
}
