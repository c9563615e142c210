//! Resolving a manifest into a `Plan`: defaults applied, paths resolved against the manifest's
//! folder, files read, environment references expanded, and every rule checked. Nothing here
//! touches git or starts a process, so a bad manifest is refused before any side effect.

use super::attempts_plan::resolve_attempts;
pub(crate) use super::attempts_plan::AttemptsPlan;
pub(crate) use super::branch_plan::BranchPlan;
use super::branch_plan::{resolve_branch, resolve_copies};
use super::budget_plan::resolve_budget;
pub(crate) use super::budget_plan::BudgetPlan;
pub(crate) use super::dotenv::DotEnv;
use super::env_plan::{env_references, expand_env, resolve_env};
pub(crate) use super::hooks_plan::HooksPlan;
use super::hooks_plan::{hooks_of, resolve_hooks, Phase};
use super::load::{name_problem, KeyPath, Source};
use super::sandbox_plan::resolve_sandbox;
pub(crate) use super::sandbox_plan::{
    AgentStateMount, AllowEntry, ContainerPlan, Engine, EngineHost, IsolatedPlan, MountPlan, PodPlan, SandboxPlan,
    DEFAULT_MAX_RETURN,
};
use super::schema::*;
pub(crate) use super::steps_plan::StepPlan;
use super::steps_plan::{resolve_artifacts, resolve_steps, StepContext};
pub(crate) use crate::agent::AgentPlan;
use crate::error::Error;
use crate::redact::Secret;
use crate::values::Duration;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Everything a run needs, resolved. Serialized by `--dry-run`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Plan {
    pub(crate) name: String,
    pub(crate) manifest: Option<PathBuf>,
    /// What the agents do, in order: the top-level settings as one step, or the `[[step]]`s.
    pub(crate) steps: Vec<StepPlan>,
    pub(crate) sandbox: SandboxPlan,
    pub(crate) branch: BranchPlan,
    pub(crate) timeouts: TimeoutsPlan,
    pub(crate) hooks: HooksPlan,
    /// Paths relative to the checkout, copied into the worktree before the hooks.
    pub(crate) copy_to_worktree: Vec<PathBuf>,
    pub(crate) env: EnvPlan,
    pub(crate) logging: LoggingPlan,
    /// `[budget]`: caps on the whole run.
    pub(crate) budget: BudgetPlan,
    /// `attempts`: how many runs of this manifest go at once, and which lands.
    pub(crate) attempts: AttemptsPlan,
    /// `artifacts`: globs of the workspace's files kept after the run (`.eden/artifacts/RUN/`).
    pub(crate) artifacts: Vec<String>,
    /// `[forge]`: where pull requests go, and the token eden holds for it.
    pub(crate) forge: Option<super::pull_request_plan::ForgePlan>,
    /// `[pull_request]`: push and open a pull request instead of merging here.
    pub(crate) pull_request: Option<super::pull_request_plan::PullRequestPlan>,
    /// `[notify]`, the manifest's and the user config's: where the run's events are told.
    pub(crate) notify: super::notify_plan::NotifyPlan,
    /// Values replaced by `***` in everything eden writes.
    #[serde(skip)]
    pub(crate) secrets: Vec<Secret>,
}

/// Environment shared by what runs in a run (the agent's own is in `AgentPlan`).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct EnvPlan {
    /// `.eden/.env`, when there is one.
    pub(crate) file: Option<PathBuf>,
    /// Its variables, for the agent and every hook (eden's own environment wins for a name set
    /// in both).
    pub(crate) dotenv: BTreeMap<String, Secret>,
    /// `[sandbox] env`: for the agent and the sandbox hooks.
    pub(crate) sandbox: BTreeMap<String, Secret>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TimeoutsPlan {
    pub(crate) iteration_step: Duration,
    pub(crate) hook_step: Duration,
    pub(crate) copy_to_worktree: Duration,
    pub(crate) kill_grace: Duration,
    pub(crate) output_drain: Duration,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct LoggingPlan {
    pub(crate) file: super::logging_plan::LogFile,
}

/// A key eden holds for an agent is never handed to a service: a service shares the agent's
/// network and runs what its client sends, so the agent could read it back there.
fn refuse_held_keys_in_services(
    steps: &[StepPlan],
    services: &[super::services_plan::ServicePlan],
    source: &Source,
) -> Result<(), Error> {
    for step in steps {
        let super::held_plan::Held::Keys { keys, .. } = &step.held else { continue };
        for (index, service) in services.iter().enumerate() {
            let handed = service.env.iter().find(|(_, value)| keys.iter().any(|key| key.value.0 == value.0));
            let Some((var, _)) = handed else { continue };
            let held = keys.iter().find(|key| service.env[var].0 == key.value.0).map_or("", |key| key.var.as_str());
            let at = KeyPath::parse("service").index(index).child("env").child(var);
            return Err(source
                .error_at(&at, format!(
                    "service `{}` is handed the value of `{held}`, which eden holds for the agent: the agent reaches the service, so the key would not be held",
                    service.name
                ))
                .with_hint("give the service a key of its own, or set `sandbox.hold_keys = false` to hand the key to the sandbox knowingly"));
        }
    }
    Ok(())
}

/// The forge's token is eden's alone: an `env` table that hands its value to the agent, a
/// sandbox hook or a service is refused.
fn refuse_forge_token_handed_on(
    forge: Option<&super::pull_request_plan::ForgePlan>,
    steps: &[StepPlan],
    (env, hooks): (&EnvPlan, &HooksPlan),
    sandbox: &SandboxPlan,
    source: &Source,
) -> Result<(), Error> {
    let Some(forge) = forge else { return Ok(()) };
    let mut tables: Vec<(String, &BTreeMap<String, Secret>)> = vec![("sandbox.env".to_owned(), &env.sandbox)];
    for (phase, hooks) in &hooks.sandbox {
        tables.extend(hooks.iter().map(|hook| (format!("a `hooks.sandbox.{phase}` hook's env"), &hook.env)));
    }
    for step in steps {
        if let Some(agent_env) = step.agent.env() {
            tables.push(("agent.env".to_owned(), agent_env));
        }
    }
    for service in sandbox.services() {
        tables.push((format!("service `{}`'s env", service.name), &service.env));
    }
    for (table, values) in tables {
        if let Some((key, _)) = values.iter().find(|(_, value)| value.0 == forge.token.0) {
            return Err(source
                .error_at(&KeyPath::parse("forge"), format!("{table} hands `{key}` the forge's token, which eden holds: the agent would hold the keys to the repository"))
                .with_hint("leave the token out of the sandbox: eden pushes and talks to the forge itself"));
        }
    }
    Ok(())
}

/// The manifest resolved into the settings of a run, or its mistakes: every independent one is
/// found, the first with the others as its `also`.
pub(crate) fn resolve(
    manifest: Manifest,
    source: &Source,
    process_env: &dyn Fn(&str) -> Option<String>,
    dotenv: &DotEnv,
    project: Option<&std::path::Path>,
) -> Result<Plan, Error> {
    // `${VAR}` looks in eden's environment first, then in `.eden/.env`.
    let lookup = |name: &str| process_env(name).or_else(|| dotenv.values.get(name).cloned());
    let host_env: &dyn Fn(&str) -> Option<String> = &lookup;
    let Parts { name, mut sandbox, hooks, sandbox_env, mut branch, log_file, mut steps, copy_to_worktree, services } =
        resolve_parts(&manifest, source, host_env)?;
    let pull_request = super::pull_request_plan::resolve_pull_request(&manifest, branch.strategy, source)?;
    let forge = super::pull_request_plan::resolve_forge(&manifest, source, host_env)?;
    let notify = super::notify_plan::resolve_notify(manifest.notify.as_ref(), source, host_env, process_env)?;
    if let Some(pull_request) = &pull_request {
        // The branch goes to the pull request's remote, under the lease `[branch] push` takes.
        branch.push = Some(pull_request.remote.clone());
    }
    sandbox.set_services(services);
    if manifest.sandbox.mount_agent_config != Some(false) {
        add_agent_state(&mut sandbox, &steps, host_env);
    }
    let at = |key: &str| KeyPath::parse(key);
    let agents: Vec<&AgentPlan> = steps.iter().map(|step| &step.agent).collect();
    let budget = resolve_budget(&manifest.budget, &at("budget"), &agents, source)?;
    let attempts = resolve_attempts(&manifest, &branch, &steps, source)?;
    let artifacts = resolve_artifacts(manifest.artifacts.as_ref(), &at("artifacts"), source)?;
    // `.eden/.env` goes to the agent and every hook; the forge's token it may hold is eden's alone.
    let forge_token = forge.as_ref().map(|forge| forge.token.0.clone());
    let dotenv_plan: BTreeMap<String, Secret> = dotenv
        .values
        .iter()
        .map(|(key, value)| (key.clone(), Secret(lookup(key).unwrap_or_else(|| value.clone()))))
        .filter(|(_, value)| Some(&value.0) != forge_token.as_ref())
        .collect();
    let mut secrets = secrets(&manifest, dotenv, host_env);
    secrets.extend(forge.as_ref().map(|forge| forge.token.clone()));
    secrets.extend(notify.targets.iter().filter_map(|target| target.webhook.as_ref().map(|hook| hook.url.clone())));
    let env = EnvPlan { file: dotenv.path.clone(), dotenv: dotenv_plan, sandbox: sandbox_env };
    let around = super::held_plan::Surroundings {
        sandbox: &sandbox,
        sandbox_env: &env.sandbox,
        dotenv: &env.dotenv,
        source,
        host_env,
        project,
    };
    for step in &mut steps {
        step.held = super::held_plan::resolve(&step.agent, manifest.sandbox.hold_keys, &around)?;
    }
    refuse_held_keys_in_services(&steps, sandbox.services(), source)?;
    refuse_forge_token_handed_on(forge.as_ref(), &steps, (&env, &hooks), &sandbox, source)?;
    Ok(Plan {
        name,
        manifest: source.file.clone(),
        steps,
        sandbox,
        branch,
        timeouts: timeouts(&manifest),
        hooks,
        copy_to_worktree,
        env,
        logging: LoggingPlan { file: log_file },
        budget,
        attempts,
        artifacts,
        forge,
        pull_request,
        notify,
        secrets,
    })
}

/// The parts of a plan that do not depend on one another's success.
struct Parts {
    name: String,
    sandbox: SandboxPlan,
    hooks: HooksPlan,
    sandbox_env: BTreeMap<String, Secret>,
    branch: BranchPlan,
    log_file: super::logging_plan::LogFile,
    steps: Vec<StepPlan>,
    copy_to_worktree: Vec<PathBuf>,
    services: Vec<super::services_plan::ServicePlan>,
}

/// Every independent part resolved, so that every mistake among them is reported at once.
fn resolve_parts(
    manifest: &Manifest,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<Parts, Error> {
    let mut errors = Vec::new();
    let name = keep(&mut errors, resolve_name(manifest, source));
    let containers_checked = keep(&mut errors, container_keys_need_a_sandbox(manifest, source));
    let sandbox = containers_checked.and_then(|()| keep(&mut errors, resolve_sandbox(&manifest.sandbox, source)));
    let hooks = keep(&mut errors, resolve_hooks(&manifest.hooks, hook_step(manifest), source, host_env));
    let sandbox_env = keep(
        &mut errors,
        resolve_env(
            &manifest.sandbox.env.clone().unwrap_or_default(),
            &KeyPath::parse("sandbox.env"),
            source,
            host_env,
        ),
    );
    let branch = keep(&mut errors, resolve_branch(&manifest.branch, source));
    let redact_checked = keep(&mut errors, check_redact(manifest, source));
    let services = keep(&mut errors, super::services_plan::resolve_services(manifest, source, host_env));
    // With a bad name, the log file is still checked, against a stand-in name.
    let name_for_log = name.as_deref().unwrap_or("run");
    let log_file =
        keep(&mut errors, super::logging_plan::resolve_log_file(manifest.logging.file.as_ref(), name_for_log, source));
    let steps = match (&sandbox, &sandbox_env) {
        (Some(sandbox), Some(sandbox_env)) => {
            let in_container = matches!(sandbox, SandboxPlan::Container(_) | SandboxPlan::Kubernetes(_));
            let context = StepContext { manifest, source, host_env, in_container, sandbox_env };
            keep(&mut errors, resolve_steps(&context))
        }
        _ => None,
    };
    let copy_to_worktree =
        branch.as_ref().and_then(|branch| keep(&mut errors, resolve_copies(manifest, branch.strategy, source)));
    let exposure_checked = match (&sandbox, &branch) {
        (Some(sandbox), Some(branch)) => keep(&mut errors, check_exposure(sandbox, branch, source)),
        _ => Some(()),
    };
    let parts = || {
        redact_checked?;
        exposure_checked?;
        Some(Parts {
            name: name?,
            sandbox: sandbox?,
            hooks: hooks?,
            sandbox_env: sandbox_env?,
            branch: branch?,
            log_file: log_file?,
            steps: steps?,
            copy_to_worktree: copy_to_worktree?,
            services: services?,
        })
    };
    // A part is missing only because it, or a part it depends on, recorded an error.
    parts().ok_or_else(|| Error::first_of(errors).unwrap_or_else(|| Error::internal("a manifest part failed silently")))
}

/// `[timeouts] hook_step`, by default a minute.
fn hook_step(manifest: &Manifest) -> Duration {
    manifest.timeouts.hook_step.unwrap_or(Duration::from_secs(60))
}

/// `[timeouts]`, with their defaults.
fn timeouts(manifest: &Manifest) -> TimeoutsPlan {
    let timeouts = &manifest.timeouts;
    TimeoutsPlan {
        iteration_step: timeouts.iteration_step.unwrap_or(Duration::from_secs(3600)),
        hook_step: hook_step(manifest),
        copy_to_worktree: timeouts.copy_to_worktree.unwrap_or(Duration::from_secs(60)),
        kill_grace: timeouts.kill_grace.unwrap_or(Duration::from_secs(5)),
        output_drain: timeouts.output_drain.unwrap_or(Duration::from_secs(2)),
    }
}

/// `sandbox.expose_worktree` with strategy `head` would hand the sandbox the person's checkout.
fn check_exposure(sandbox: &SandboxPlan, branch: &BranchPlan, source: &Source) -> Result<(), Error> {
    match sandbox {
        SandboxPlan::Container(container) if container.expose_worktree && branch.strategy == Strategy::Head => Err(source
            .error_at_key(
                &KeyPath::parse("sandbox").child("expose_worktree"),
                "`sandbox.expose_worktree` cannot be used with strategy `head`",
            )
            .with_hint("exposing your checkout would expose its `.git` and `.eden` too; use `merge-to-head` or `named`, or remove the key")),
        _ => Ok(()),
    }
}

/// Where each step's agent keeps its state on this machine, for the sandbox to carry: its
/// `agent.env` says first (a `CLAUDE_CONFIG_DIR` there), then eden's own environment.
fn add_agent_state(sandbox: &mut SandboxPlan, steps: &[StepPlan], host_env: &dyn Fn(&str) -> Option<String>) {
    let Some(agent_state) = sandbox.agent_state_mut() else { return };
    for step in steps {
        let AgentPlan::Adapter(settings) = &step.agent else { continue };
        let env = |key: &str| settings.env.get(key).map(|value| value.0.clone()).or_else(|| host_env(key));
        for state in super::sandbox_plan::agent_state(settings.kind, &env) {
            if !agent_state.iter().any(|known| known.var == state.var) {
                agent_state.push(state);
            }
        }
    }
}

/// `result`'s value, or `None` with its error added to `errors`.
fn keep<T>(errors: &mut Vec<Error>, result: Result<T, Error>) -> Option<T> {
    result.map_err(|error| errors.push(error)).ok()
}

fn resolve_name(manifest: &Manifest, source: &Source) -> Result<String, Error> {
    let Some(name) = &manifest.name else {
        return Ok(default_name(manifest, source.file.as_deref()));
    };
    if let Some(problem) = name_problem(name) {
        return Err(source
            .error_at(&KeyPath::parse("name"), format!("invalid name `{name}`: {problem}"))
            .with_hint("names go into branch names: use letters, digits, `.`, `_` and `-`"));
    }
    Ok(name.clone())
}

fn check_redact(manifest: &Manifest, source: &Source) -> Result<(), Error> {
    for (index, name) in manifest.redact.iter().enumerate() {
        if name.trim().is_empty() || name.contains('=') {
            return Err(source
                .error_at(&KeyPath::parse("redact").index(index), format!("`{name}` is not a variable name"))
                .with_hint("list the names of environment variables whose values must never be shown"));
        }
    }
    Ok(())
}

/// Container keys with a sandbox that has no container (`isolated` rejects its own in `sandbox_plan`).
fn container_keys_need_a_sandbox(manifest: &Manifest, source: &Source) -> Result<(), Error> {
    let at = |key: &str| KeyPath::parse(key);
    let sandbox = &manifest.sandbox;
    let container = matches!(
        sandbox.kind,
        Some(SandboxKind::Docker | SandboxKind::Podman | SandboxKind::Isolated | SandboxKind::Kubernetes)
    );
    for (key, set) in [
        ("image", sandbox.image.is_some()),
        ("network", sandbox.network.is_some()),
        ("cpus", sandbox.cpus.is_some()),
        ("memory", sandbox.memory.is_some()),
        ("pids_limit", sandbox.pids_limit.is_some()),
        ("mounts", sandbox.mounts.is_some()),
        ("run_args", sandbox.run_args.is_some()),
        ("mount_agent_config", sandbox.mount_agent_config.is_some()),
        ("expose_worktree", sandbox.expose_worktree.is_some()),
        ("expose_host", sandbox.expose_host.is_some()),
        ("host", sandbox.host.is_some()),
        ("runtime", sandbox.runtime.is_some()),
        ("max_return", sandbox.max_return.is_some()),
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
    Ok(())
}

/// The values to redact: every env value whose name, or a name it refers to, looks secret or is
/// listed in `redact`, and the values of the variables `redact` names.
fn secrets(manifest: &Manifest, dotenv: &DotEnv, host_env: &dyn Fn(&str) -> Option<String>) -> Vec<Secret> {
    let secret_name = |name: &str| crate::redact::is_secret_name(name) || manifest.redact.iter().any(|r| r == name);
    let mut tables: Vec<&BTreeMap<String, String>> = vec![&dotenv.values];
    tables.extend(manifest.agent.env.as_ref());
    tables.extend(manifest.sandbox.env.as_ref());
    tables.extend(manifest.service.iter().filter_map(|service| service.env.as_ref()));
    for phases in [&manifest.hooks.host, &manifest.hooks.sandbox] {
        for phase in Phase::ALL {
            tables.extend(hooks_of(phases, phase).iter().filter_map(|hook| match hook {
                Hook::Detailed(hook) => Some(&hook.env),
                Hook::Command(_) => None,
            }));
        }
    }
    let mut values = Vec::new();
    for table in tables {
        for (key, raw) in table {
            if secret_name(key) || env_references(raw).into_iter().any(secret_name) {
                values.extend(expand_env(raw, host_env).ok().map(Secret));
            }
        }
    }
    values.extend(manifest.redact.iter().filter_map(|name| host_env(name)).map(Secret));
    // `.eden/.env` holds the secrets of runs: every value in it is one, whatever its name.
    values.extend(dotenv.values.values().cloned().map(Secret));
    values.extend(dotenv.values.keys().filter_map(|key| host_env(key)).map(Secret));
    values
}

/// A name for a run whose manifest gives none: the manifest file's name; in the flags-only
/// form the first words of the prompt (or the prompt file's name), else the agent's kind.
fn default_name(manifest: &Manifest, file: Option<&Path>) -> String {
    let stem = |path: &str| Path::new(path).file_stem().map(|s| s.to_string_lossy().into_owned());
    let candidates = [
        file.and_then(|f| f.file_stem()).map(|s| s.to_string_lossy().into_owned()),
        manifest.prompt.as_deref().map(|prompt| prompt.split_whitespace().take(5).collect::<Vec<_>>().join("-")),
        manifest.prompt_file.as_deref().and_then(stem),
        manifest.agent.kind.map(|kind| kind.as_str().to_owned()),
    ];
    candidates
        .into_iter()
        .flatten()
        .map(|text| name_from(&text))
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| "run".into())
}

/// Letters, digits, `_` and `-`, lowercase, at most 40 characters: usable in a branch name.
pub(crate) fn name_from(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') { c.to_ascii_lowercase() } else { '-' })
        .collect();
    let mut name = String::new();
    for part in cleaned.split('-').filter(|part| !part.is_empty()) {
        if name.len() + part.len() + 1 > 40 {
            break;
        }
        if !name.is_empty() {
            name.push('-');
        }
        name.push_str(part);
    }
    name
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The plan of a manifest given as text, with no environment: for unit tests elsewhere.
    pub(crate) fn plan_from_text(text: &str) -> Plan {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        resolve(manifest, &source, &|_| None, &Default::default(), None).unwrap_or_else(|err| panic!("{}", err.message))
    }

    #[test]
    fn default_names() {
        let manifest = |toml: &str| -> Manifest { toml::from_str(toml).unwrap() };
        let with_prompt = manifest("prompt = \"Fix the login bug, then add tests for it\"");
        assert_eq!(default_name(&with_prompt, Some(Path::new("dir/fix login.toml"))), "fix-login");
        assert_eq!(default_name(&with_prompt, None), "fix-the-login-bug-then");
        assert_eq!(default_name(&manifest("prompt_file = \"tasks/add-cache.md\""), None), "add-cache");
        assert_eq!(default_name(&manifest("[agent]\nkind = \"codex\""), None), "codex");
        assert_eq!(default_name(&manifest("prompt = \"!!!\""), None), "run");
    }
}
