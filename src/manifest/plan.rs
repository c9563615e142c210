//! Resolving a manifest into a `Plan`: defaults applied, paths resolved against the manifest's
//! folder, files read, environment references expanded, and every rule checked. Nothing here
//! touches git or starts a process; a valid manifest that asks for something this version does
//! not do yet is refused here too, before any side effect.

use super::load::{KeyPath, Source};
use super::prompt;
use super::schema::*;
use super::values::{branch_name_problem, Duration};
use crate::error::Error;
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Prompts passed on argv are limited: argv has a size limit, and `ps` shows it.
pub const MAX_ARGV_PROMPT: usize = 120 * 1024;
pub const DEFAULT_SIGNAL: &str = "<promise>COMPLETE</promise>";

/// Everything a run needs, resolved. Serialized by `--dry-run`.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub name: String,
    pub manifest: Option<PathBuf>,
    pub prompt: PromptPlan,
    pub agent: AgentPlan,
    pub sandbox: SandboxPlan,
    pub branch: BranchPlan,
    #[serde(rename = "loop")]
    pub loop_: LoopPlan,
    pub timeouts: TimeoutsPlan,
    pub logging: LoggingPlan,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SandboxPlan {
    None,
    Container(ContainerPlan),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Docker,
    Podman,
}

impl Engine {
    pub fn binary(self) -> &'static str {
        match self {
            Engine::Docker => "docker",
            Engine::Podman => "podman",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ContainerPlan {
    pub engine: Engine,
    pub image: String,
    pub network: Network,
    pub cpus: Option<f64>,
    pub memory: Option<u64>,
    pub pids_limit: Option<u32>,
    pub mounts: Vec<MountPlan>,
    pub run_args: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MountPlan {
    pub host: PathBuf,
    pub sandbox: String,
    pub read_only: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct PromptPlan {
    pub template: String,
    pub file: Option<PathBuf>,
    pub args: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum AgentPlan {
    Simulated {
        lines: Vec<String>,
        line_delay: Option<Duration>,
        exit_code: i32,
    },
    Cli(CliPlan),
    #[serde(untagged)]
    Adapter(crate::agent::AdapterSettings),
}

impl AgentPlan {
    pub fn kind(&self) -> &'static str {
        match self {
            AgentPlan::Simulated { .. } => "simulated",
            AgentPlan::Cli(_) => "cli",
            AgentPlan::Adapter(settings) => settings.kind.as_str(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CliPlan {
    pub binary: PathBuf,
    /// Argument templates (`{model}`, `{prompt}` filled per iteration), `extra_args` appended.
    pub args: Vec<String>,
    pub prompt_via: PromptVia,
    pub parser: String,
    pub model: Option<String>,
    pub env: BTreeMap<String, Secret>,
}

/// An environment value: never printed, logged or serialized.
#[derive(Clone)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("***")
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct BranchPlan {
    pub strategy: Strategy,
    pub name: Option<String>,
    pub base: Option<String>,
    pub allow_dirty: bool,
    pub reuse_worktree: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct LoopPlan {
    pub max_iterations: u32,
    pub completion_signal: Vec<String>,
    pub idle_timeout: Duration,
    pub idle_warning_interval: Duration,
    pub completion_timeout: Duration,
    pub require_completion: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimeoutsPlan {
    pub iteration_step: Duration,
}

#[derive(Debug, Clone, Serialize)]
pub struct LoggingPlan {
    /// Template relative to the repository root: `{name}`, `{branch}`, `{run_id}`.
    pub file: Option<String>,
}

const LOG_PLACEHOLDERS: [&str; 3] = ["name", "branch", "run_id"];

pub fn resolve(manifest: Manifest, source: &Source, host_env: &dyn Fn(&str) -> Option<String>) -> Result<Plan, Error> {
    let root = KeyPath::default();
    let at = |key: &str| KeyPath::parse(key);
    refuse_unbuilt(&manifest, source)?;

    let name = match &manifest.name {
        Some(name) => {
            if let Some(problem) = name_problem(name) {
                return Err(source
                    .error_at(&at("name"), format!("invalid name `{name}`: {problem}"))
                    .with_hint("names go into branch names: use letters, digits, `.`, `_` and `-`"));
            }
            name.clone()
        }
        None => default_name(source.file.as_deref()),
    };

    let prompt = resolve_prompt(&manifest, source)?;
    let sandbox = resolve_sandbox(&manifest.sandbox, source)?;
    let agent = resolve_agent(&manifest.agent, source, host_env, !matches!(sandbox, SandboxPlan::None))?;
    let loop_ = resolve_loop(&manifest.loop_, source)?;
    let branch = resolve_branch(&manifest.branch, source)?;

    // Every placeholder must have a value: prompt_args or a built-in.
    for key in prompt::placeholders(&prompt.template) {
        if !manifest.prompt_args.contains_key(key) && !prompt::BUILT_INS.contains(&key) {
            let mut known: Vec<&str> = manifest.prompt_args.keys().map(String::as_str).collect();
            known.extend(prompt::BUILT_INS);
            let where_ = if prompt.file.is_some() { at("prompt_file") } else { at("prompt") };
            return Err(source
                .error_at(&where_, format!("the prompt uses `{{{{{key}}}}}` but no value is given for `{key}`"))
                .with_hint(format!(
                    "add it under `[prompt_args]` or pass `--arg {key}=VALUE`; known keys: {}",
                    known.join(", ")
                )));
        }
    }
    for key in manifest.prompt_args.keys() {
        if prompt::BUILT_INS.contains(&key.as_str()) {
            return Err(source
                .error_at_key(&at("prompt_args").child(key), format!("`{key}` is filled in by eden and cannot be set"))
                .with_hint(format!("built-in keys: {}", prompt::BUILT_INS.join(", "))));
        }
    }
    if let AgentPlan::Cli(cli) = &agent {
        if cli.prompt_via == PromptVia::Arg && prompt.template.len() > MAX_ARGV_PROMPT {
            return Err(source
                .error_at(
                    &at("agent.prompt_via"),
                    format!(
                        "the prompt is {} KiB, over the {} KiB eden passes on the command line",
                        prompt.template.len() / 1024,
                        MAX_ARGV_PROMPT / 1024
                    ),
                )
                .with_hint("set `prompt_via = \"stdin\"` if the agent reads its prompt from standard input"));
        }
    }

    if let Some(file) = &manifest.logging.file {
        for key in placeholders_single(file) {
            if !LOG_PLACEHOLDERS.contains(&key) {
                return Err(source
                    .error_at(&at("logging.file"), format!("unknown placeholder `{{{key}}}` in the log file name"))
                    .with_hint("the log file name may use {name}, {branch} and {run_id}"));
            }
        }
    }
    let _ = root;

    Ok(Plan {
        name,
        manifest: source.file.clone(),
        prompt: PromptPlan { template: prompt.template, file: prompt.file, args: manifest.prompt_args.clone() },
        agent,
        sandbox,
        branch,
        loop_,
        timeouts: TimeoutsPlan {
            iteration_step: manifest.timeouts.iteration_step.unwrap_or(Duration::from_secs(3600)),
        },
        logging: LoggingPlan { file: manifest.logging.file.clone() },
    })
}

/// Sections of the contract whose behaviour later versions add: refuse them with a clear error.
fn refuse_unbuilt(manifest: &Manifest, source: &Source) -> Result<(), Error> {
    let at = |key: &str| KeyPath::parse(key);
    let unsupported = |path: KeyPath, what: String| {
        Err(source.error_at(&path, format!("{what} is not supported yet")).with_hint(
            "this version of eden runs agents on the host or in docker/podman containers, without hooks or steps; remove it from the manifest",
        ))
    };
    if manifest.sandbox.kind == Some(SandboxKind::Isolated) {
        return unsupported(at("sandbox.kind"), "sandbox kind `isolated`".into());
    }
    let sandbox = &manifest.sandbox;
    let container = matches!(sandbox.kind, Some(SandboxKind::Docker | SandboxKind::Podman));
    for (key, set) in [
        ("image", sandbox.image.is_some()),
        ("network", sandbox.network.is_some()),
        ("cpus", sandbox.cpus.is_some()),
        ("memory", sandbox.memory.is_some()),
        ("pids_limit", sandbox.pids_limit.is_some()),
        ("mounts", sandbox.mounts.is_some()),
        ("run_args", sandbox.run_args.is_some()),
    ] {
        if set && !container {
            return Err(source
                .error_at_key(
                    &at("sandbox").child(key),
                    format!("`sandbox.{key}` has no effect without a container sandbox"),
                )
                .with_hint("set `sandbox.kind` to `docker` or `podman`, or remove the key"));
        }
    }
    if sandbox.env.is_some() {
        return unsupported(at("sandbox.env"), "`sandbox.env`".into());
    }
    for (side, phases) in [("host", &manifest.hooks.host), ("sandbox", &manifest.hooks.sandbox)] {
        if !phases.is_empty() {
            return unsupported(at("hooks").child(side), format!("`[hooks.{side}]`"));
        }
    }
    if !manifest.copy_to_worktree.is_empty() {
        return unsupported(at("copy_to_worktree"), "`copy_to_worktree`".into());
    }
    if manifest.output.is_some() {
        return unsupported(at("output"), "`[output]` (structured output)".into());
    }
    if !manifest.step.is_empty() {
        return unsupported(at("step"), "`[[step]]` (multi-step manifests)".into());
    }
    Ok(())
}

struct ResolvedPrompt {
    template: String,
    file: Option<PathBuf>,
}

fn resolve_prompt(manifest: &Manifest, source: &Source) -> Result<ResolvedPrompt, Error> {
    let at = |key: &str| KeyPath::parse(key);
    let hint = "give the task with `prompt = \"...\"` or `prompt_file = \"task.md\"` (or `--prompt`)";
    let resolved = match (&manifest.prompt, &manifest.prompt_file) {
        (Some(_), Some(_)) => {
            return Err(source
                .error_at_key(&at("prompt_file"), "both `prompt` and `prompt_file` are set")
                .with_hint("keep one of them"))
        }
        (None, None) => {
            return Err(source.error_at(&KeyPath::default(), "no prompt given").with_hint(hint));
        }
        (Some(text), None) => ResolvedPrompt { template: text.clone(), file: None },
        (None, Some(file)) => {
            let path = source.base_dir.join(file);
            let template = std::fs::read_to_string(&path).map_err(|err| {
                let what = if err.kind() == std::io::ErrorKind::NotFound {
                    "does not exist".to_owned()
                } else {
                    format!("cannot be read: {err}")
                };
                source
                    .error_at(&at("prompt_file"), format!("prompt file `{}` {what}", path.display()))
                    .with_hint("prompt files are resolved against the manifest's folder")
            })?;
            ResolvedPrompt { template, file: Some(path) }
        }
    };
    if resolved.template.trim().is_empty() {
        let key = if resolved.file.is_some() { "prompt_file" } else { "prompt" };
        return Err(source.error_at(&at(key), "the prompt is empty").with_hint(hint));
    }
    Ok(resolved)
}

fn resolve_agent(
    agent: &AgentSection,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
    in_container: bool,
) -> Result<AgentPlan, Error> {
    // In a container the executable is looked up there, not on the host.
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
    let path = KeyPath::parse("agent");
    let kinds = "simulated, cli, claude-code, codex, opencode, pi, cursor, copilot";
    let Some(kind) = agent.kind else {
        return Err(source
            .error_at(&path, "no agent kind given")
            .with_hint(format!("set `agent.kind` (or `--agent`) to one of: {kinds}")));
    };
    let only_for = |key: &str, set: bool, owner: &str| -> Result<(), Error> {
        if set {
            return Err(source
                .error_at_key(
                    &path.child(key),
                    format!("`agent.{key}` does not apply to agent kind `{}`", kind.as_str()),
                )
                .with_hint(format!("it is used by kind `{owner}`; remove it")));
        }
        Ok(())
    };
    if kind == AgentKind::Simulated {
        only_for("binary", agent.binary.is_some(), "cli and the agent adapters")?;
    }
    if kind != AgentKind::Cli {
        only_for("args", agent.args.is_some(), "cli")?;
        only_for("prompt_via", agent.prompt_via.is_some(), "cli")?;
        only_for("parser", agent.parser.is_some(), "cli")?;
    }
    if kind != AgentKind::Simulated {
        only_for("lines", agent.lines.is_some(), "simulated")?;
        only_for("line_delay", agent.line_delay.is_some(), "simulated")?;
        only_for("exit_code", agent.exit_code.is_some(), "simulated")?;
    }
    if !crate::agent::supports_effort(kind) {
        only_for("effort", agent.effort.is_some(), "claude-code, codex or opencode")?;
    }
    if matches!(kind, AgentKind::Cli | AgentKind::Simulated) {
        only_for("resume", agent.resume.is_some(), "claude-code, codex, opencode, pi, cursor or copilot")?;
    }
    let env = || -> Result<BTreeMap<String, Secret>, Error> {
        let mut env = BTreeMap::new();
        for (key, value) in agent.env.clone().unwrap_or_default() {
            let key_path = path.child("env").child(&key);
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                return Err(source.error_at_key(&key_path, format!("invalid environment variable name `{key}`")));
            }
            let value = expand_env(&value, host_env).map_err(|missing| {
                source
                    .error_at(&key_path, format!("`agent.env.{key}` refers to `${{{missing}}}`, which is not set"))
                    .with_hint(format!("export `{missing}` before running eden, or remove the reference"))
            })?;
            env.insert(key, Secret(value));
        }
        Ok(env)
    };

    match kind {
        AgentKind::Simulated => {
            only_for("model", agent.model.is_some(), "cli")?;
            only_for("extra_args", agent.extra_args.is_some(), "cli")?;
            only_for("env", agent.env.is_some(), "cli")?;
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
                    .with_hint("a name is looked up on PATH; a path with `/` is resolved against the manifest's folder")
            })?;
            let parser = agent.parser.clone().unwrap_or_else(|| "lines".to_owned());
            if crate::agent::parser_named(&parser).is_none() {
                return Err(source
                    .error_at(&path.child("parser"), format!("unknown parser `{parser}`"))
                    .with_hint(format!("parsers: {}", crate::agent::PARSERS.join(", "))));
            }
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
            let (default, install) = crate::agent::default_binary(adapter).expect("adapters have a binary");
            let binary = match &agent.binary {
                Some(binary) => find_binary(binary, &source.base_dir).map_err(|why| {
                    source.error_at(&path.child("binary"), why).with_hint(
                        "a name is looked up on PATH; a path with `/` is resolved against the manifest's folder",
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
            Ok(AgentPlan::Adapter(crate::agent::AdapterSettings {
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

/// Find an executable: a name on PATH, or a path relative to the manifest's folder.
fn find_binary(binary: &str, base_dir: &Path) -> Result<PathBuf, String> {
    if binary.trim().is_empty() {
        return Err("`agent.binary` is empty".into());
    }
    if binary.contains('/') {
        let path = base_dir.join(binary);
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

/// Expand `${VAR}` references from the host environment; the name of a missing one is the error.
pub fn expand_env(value: &str, host_env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        let name = &rest[start + 2..start + end];
        out.push_str(&rest[..start]);
        out.push_str(&host_env(name).ok_or_else(|| name.to_owned())?);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn resolve_sandbox(section: &SandboxSection, source: &Source) -> Result<SandboxPlan, Error> {
    let path = KeyPath::parse("sandbox");
    let engine = match section.kind {
        None | Some(SandboxKind::None) => return Ok(SandboxPlan::None),
        Some(SandboxKind::Docker) => Engine::Docker,
        Some(SandboxKind::Podman) => Engine::Podman,
        Some(SandboxKind::Isolated) => unreachable!("refused by refuse_unbuilt"),
    };
    let Some(image) = section.image.clone().filter(|image| !image.trim().is_empty()) else {
        return Err(source
            .error_at(&path, format!("sandbox kind `{}` needs `sandbox.image`", engine.binary()))
            .with_hint("set `sandbox.image` to a local image, e.g. one built with `docker build -t eden:myrepo .`"));
    };
    if let Some(cpus) = section.cpus {
        if !(cpus > 0.0 && cpus.is_finite()) {
            return Err(
                source.error_at(&path.child("cpus"), format!("`sandbox.cpus` must be a positive number, not {cpus}"))
            );
        }
    }
    if section.pids_limit == Some(0) {
        return Err(source.error_at(&path.child("pids_limit"), "`sandbox.pids_limit` must be at least 1"));
    }
    let mut mounts = Vec::new();
    for (index, mount) in section.mounts.clone().unwrap_or_default().into_iter().enumerate() {
        let at = path.child("mounts").index(index);
        let host = match mount.host.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(rest),
            None => source.base_dir.join(&mount.host),
        };
        if !host.exists() {
            return Err(source
                .error_at(&at.child("host"), format!("mount source `{}` does not exist", host.display()))
                .with_hint("create it, or fix the path (relative paths resolve against the manifest's folder)"));
        }
        if !mount.sandbox.starts_with('/') {
            return Err(source
                .error_at(&at.child("sandbox"), format!("mount target `{}` must be an absolute path", mount.sandbox)));
        }
        mounts.push(MountPlan { host, sandbox: mount.sandbox, read_only: mount.read_only });
    }
    Ok(SandboxPlan::Container(ContainerPlan {
        engine,
        image,
        network: section.network.unwrap_or(Network::Bridge),
        cpus: section.cpus,
        memory: section.memory.map(|size| size.0),
        pids_limit: section.pids_limit,
        mounts,
        run_args: section.run_args.clone().unwrap_or_default(),
    }))
}

fn resolve_loop(section: &LoopSection, source: &Source) -> Result<LoopPlan, Error> {
    let path = KeyPath::parse("loop");
    let max_iterations = section.max_iterations.unwrap_or(10);
    if max_iterations == 0 {
        return Err(source
            .error_at(&path.child("max_iterations"), "`loop.max_iterations` must be at least 1")
            .with_hint("the agent runs at most this many times"));
    }
    let completion_signal = match &section.completion_signal {
        None => vec![DEFAULT_SIGNAL.to_owned()],
        Some(list) => {
            if list.0.is_empty() {
                return Err(source
                    .error_at(&path.child("completion_signal"), "`loop.completion_signal` is an empty list")
                    .with_hint(format!("give at least one signal, e.g. \"{DEFAULT_SIGNAL}\"")));
            }
            if let Some(index) = list.0.iter().position(|s| s.trim().is_empty()) {
                return Err(source
                    .error_at(&path.child("completion_signal").index(index), "a completion signal is empty")
                    .with_hint("an empty signal would match any output; give the text the agent prints when done"));
            }
            list.0.clone()
        }
    };
    Ok(LoopPlan {
        max_iterations,
        completion_signal,
        idle_timeout: section.idle_timeout.unwrap_or(Duration::from_secs(600)),
        idle_warning_interval: section.idle_warning_interval.unwrap_or(Duration::from_secs(120)),
        completion_timeout: section.completion_timeout.unwrap_or(Duration::from_secs(60)),
        require_completion: section.require_completion.unwrap_or(false),
    })
}

fn resolve_branch(section: &BranchSection, source: &Source) -> Result<BranchPlan, Error> {
    let path = KeyPath::parse("branch");
    let strategy = section.strategy.unwrap_or(Strategy::MergeToHead);
    let only_for = |key: &str, set: bool, owner: &str| -> Result<(), Error> {
        if set {
            return Err(source
                .error_at_key(
                    &path.child(key),
                    format!("`branch.{key}` does not apply to strategy `{}`", strategy.as_str()),
                )
                .with_hint(format!("it is used by strategy `{owner}`")));
        }
        Ok(())
    };
    if strategy != Strategy::Named {
        only_for("name", section.name.is_some(), "named")?;
        only_for("reuse_worktree", section.reuse_worktree.is_some(), "named")?;
    }
    if strategy != Strategy::Head {
        only_for("allow_dirty", section.allow_dirty.is_some(), "head")?;
    } else {
        only_for("base", section.base.is_some(), "merge-to-head or named")?;
    }
    if strategy == Strategy::Named && section.name.is_none() {
        return Err(source
            .error_at(&path, "strategy `named` needs `branch.name`")
            .with_hint("set `branch.name = \"eden/my-task\"` (or `--branch`)"));
    }
    for (key, value) in [("name", &section.name), ("base", &section.base)] {
        if let Some(value) = value {
            if let Some(problem) = branch_name_problem(value) {
                return Err(source
                    .error_at(&path.child(key), format!("`{value}` is not a valid branch name: {problem}"))
                    .with_hint("branch names follow `git check-ref-format --branch`"));
            }
        }
    }
    Ok(BranchPlan {
        strategy,
        name: section.name.clone(),
        base: section.base.clone(),
        allow_dirty: section.allow_dirty.unwrap_or(false),
        reuse_worktree: section.reuse_worktree.unwrap_or(false),
    })
}

fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > 64 {
        return Some("it is longer than 64 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        return Some("it may only contain letters, digits, `.`, `_` and `-`");
    }
    if name.starts_with(['.', '-']) || name.ends_with('.') || name.ends_with(".lock") || name.contains("..") {
        return Some("it may not start with `.` or `-`, end with `.` or `.lock`, or contain `..`");
    }
    None
}

/// The manifest file's stem made safe for branch names, or `eden` for the flag-only form.
fn default_name(file: Option<&Path>) -> String {
    let stem = file.and_then(|f| f.file_stem()).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let cleaned: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') { c } else { '-' }).collect();
    let cleaned = cleaned.trim_matches('-');
    if cleaned.is_empty() {
        "eden".into()
    } else {
        cleaned.chars().take(64).collect()
    }
}

/// `{key}` placeholders (single braces) in a file name template.
fn placeholders_single(template: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        found.push(&rest[start + 1..start + end]);
        rest = &rest[start + end + 1..];
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_expansion() {
        let env = |name: &str| (name == "HOME_X").then(|| "/h".to_owned());
        assert_eq!(expand_env("a ${HOME_X}/b", &env).unwrap(), "a /h/b");
        assert_eq!(expand_env("${NOPE}", &env).unwrap_err(), "NOPE");
        assert_eq!(expand_env("plain $X", &env).unwrap(), "plain $X");
    }

    #[test]
    fn default_names() {
        assert_eq!(default_name(Some(Path::new("dir/fix login.toml"))), "fix-login");
        assert_eq!(default_name(None), "eden");
    }
}
