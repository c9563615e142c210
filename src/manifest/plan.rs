//! Resolving a manifest into a `Plan`: defaults applied, paths resolved against the manifest's
//! folder, files read, environment references expanded, and every rule checked. Nothing here
//! touches git or starts a process, so a bad manifest is refused before any side effect.

use super::agent_plan::resolve_agent;
pub use super::dotenv::DotEnv;
use super::env_plan::{env_references, expand_env, resolve_env};
pub use super::hooks_plan::HooksPlan;
use super::hooks_plan::{hooks_of, resolve_hooks, Phase};
use super::load::{name_problem, KeyPath, Source};
use super::output_plan::resolve_output;
pub use super::output_plan::OutputPlan;
use super::prompt;
use super::sandbox_plan::resolve_sandbox;
pub use super::sandbox_plan::{
    AgentStateMount, AllowEntry, ContainerPlan, Engine, EngineHost, IsolatedPlan, MountPlan, PodPlan, SandboxPlan,
    DEFAULT_MAX_RETURN,
};
use super::schema::*;
pub use crate::agent::AgentPlan;
use crate::error::Error;
use crate::redact::Secret;
use crate::values::{branch_name_problem, Duration};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::DEFAULT_SIGNAL;
use crate::agent::MAX_ARGV_PROMPT;

/// Everything a run needs, resolved. Serialized by `--dry-run`.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub name: String,
    pub manifest: Option<PathBuf>,
    /// What the agents do, in order: the top-level settings as one step, or the `[[step]]`s.
    pub steps: Vec<StepPlan>,
    pub sandbox: SandboxPlan,
    pub branch: BranchPlan,
    pub timeouts: TimeoutsPlan,
    pub hooks: HooksPlan,
    /// Paths relative to the checkout, copied into the worktree before the hooks.
    pub copy_to_worktree: Vec<PathBuf>,
    pub env: EnvPlan,
    pub logging: LoggingPlan,
    /// `[budget]`: caps on the whole run.
    pub budget: BudgetPlan,
    /// `attempts`: how many runs of this manifest go at once, and which lands.
    pub attempts: AttemptsPlan,
    /// `artifacts`: globs of the workspace's files kept after the run (`.eden/artifacts/RUN/`).
    pub artifacts: Vec<String>,
    /// Values replaced by `***` in everything eden writes.
    #[serde(skip)]
    pub secrets: Vec<Secret>,
}

/// `attempts = N` and `attempts_pick`, resolved (`--attempts` wins over the key).
#[derive(Debug, Clone, Serialize)]
pub struct AttemptsPlan {
    pub count: u32,
    pub pick: crate::manifest::schema::AttemptsPick,
    /// `attempts_score`, for `"best"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<String>,
    /// What the choice goes by: the completion signal and the checks, or the signal alone
    /// (no `[[check]]`), as `--dry-run` says.
    pub chosen_by: &'static str,
}

/// The most attempts of one manifest at once.
pub const MAX_ATTEMPTS: u32 = 16;

/// Environment shared by what runs in a run (the agent's own is in `AgentPlan`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct EnvPlan {
    /// `.eden/.env`, when there is one.
    pub file: Option<PathBuf>,
    /// Its variables, for the agent and every hook (eden's own environment wins for a name set
    /// in both).
    pub dotenv: BTreeMap<String, Secret>,
    /// `[sandbox] env`: for the agent and the sandbox hooks.
    pub sandbox: BTreeMap<String, Secret>,
}

/// One agent's part of the run. All steps share the worktree, branch and sandbox.
#[derive(Debug, Clone, Serialize)]
pub struct StepPlan {
    /// `main` for a manifest without `[[step]]`.
    pub name: String,
    pub agent: AgentPlan,
    pub prompt: PromptPlan,
    #[serde(rename = "loop")]
    pub loop_: LoopPlan,
    /// `[output]`: a typed result extracted from the agent's answer.
    pub output: Option<OutputPlan>,
    pub when: When,
    pub continue_on_failure: bool,
    /// The step's own caps (`[[step]] budget`).
    pub budget: BudgetPlan,
    /// What must pass before its work merges (`[[check]]`, or the step's own).
    pub checks: Vec<super::checks_plan::CheckPlan>,
    /// The provider keys eden holds for its agent (`sandbox.hold_keys`).
    pub held: super::held_plan::Held,
    /// The step's own `artifacts`, kept after it.
    pub artifacts: Vec<String>,
}

/// Caps on spending; `None` is no cap.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct BudgetPlan {
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_duration: Option<Duration>,
}

impl BudgetPlan {
    pub fn is_empty(&self) -> bool {
        self == &BudgetPlan::default()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PromptPlan {
    pub template: String,
    pub file: Option<PathBuf>,
    pub args: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BranchPlan {
    pub strategy: Strategy,
    pub name: Option<String>,
    pub base: Option<String>,
    pub allow_dirty: bool,
    pub reuse_worktree: bool,
    pub rebase: bool,
    pub commit_leftovers: bool,
    /// `branch.push`: the remote the run's branch goes to after the run.
    pub push: Option<String>,
    /// `branch.push_base`: the base too, once merged into (merge-to-head).
    pub push_base: bool,
    /// `branch.protect`: globs a run may not change and still merge by itself.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub protect: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LoopPlan {
    pub max_iterations: u32,
    pub completion_signal: Vec<String>,
    pub idle_timeout: Duration,
    pub idle_warning_interval: Duration,
    pub completion_timeout: Duration,
    pub require_completion: bool,
    /// `[loop] usage_limit_wait`: the most time a run waits for usage limits to reset.
    pub usage_limit_wait: crate::values::MaybeZeroDuration,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimeoutsPlan {
    pub iteration_step: Duration,
    pub hook_step: Duration,
    pub copy_to_worktree: Duration,
    pub kill_grace: Duration,
    pub output_drain: Duration,
}

#[derive(Debug, Clone, Serialize)]
pub struct LoggingPlan {
    pub file: super::logging_plan::LogFile,
}

pub fn resolve(
    manifest: Manifest,
    source: &Source,
    process_env: &dyn Fn(&str) -> Option<String>,
    dotenv: &DotEnv,
    project: Option<&std::path::Path>,
) -> Result<Plan, Error> {
    let at = |key: &str| KeyPath::parse(key);
    // `${VAR}` looks in eden's environment first, then in `.eden/.env`.
    let lookup = |name: &str| process_env(name).or_else(|| dotenv.values.get(name).cloned());
    let host_env: &dyn Fn(&str) -> Option<String> = &lookup;

    // Independent parts are all resolved, so every mistake among them is reported at once.
    let mut errors = Vec::new();
    let name = keep(&mut errors, resolve_name(&manifest, source));
    let containers_checked = keep(&mut errors, container_keys_need_a_sandbox(&manifest, source));
    let sandbox = containers_checked.and_then(|()| keep(&mut errors, resolve_sandbox(&manifest.sandbox, source)));
    let hook_step = manifest.timeouts.hook_step.unwrap_or(Duration::from_secs(60));
    let hooks = keep(&mut errors, resolve_hooks(&manifest.hooks, hook_step, source, host_env));
    let sandbox_env = keep(
        &mut errors,
        resolve_env(&manifest.sandbox.env.clone().unwrap_or_default(), &at("sandbox.env"), source, host_env),
    );
    let branch = keep(&mut errors, resolve_branch(&manifest.branch, source));
    let redact_checked = keep(&mut errors, check_redact(&manifest, source));
    let services = keep(&mut errors, super::services_plan::resolve_services(&manifest, source, host_env));
    // With a bad name, the log file is still checked, against a stand-in name.
    let name_for_log = name.as_deref().unwrap_or("run");
    let log_file =
        keep(&mut errors, super::logging_plan::resolve_log_file(manifest.logging.file.as_ref(), name_for_log, source));
    let steps = match (&sandbox, &sandbox_env) {
        (Some(sandbox), Some(sandbox_env)) => {
            let in_container = matches!(sandbox, SandboxPlan::Container(_) | SandboxPlan::Kubernetes(_));
            let context = StepContext { manifest: &manifest, source, host_env, in_container, sandbox_env };
            keep(&mut errors, resolve_steps(&context))
        }
        _ => None,
    };
    let copy_to_worktree =
        branch.as_ref().and_then(|branch| keep(&mut errors, resolve_copies(&manifest, branch.strategy, source)));
    let exposure_checked = match (&sandbox, &branch) {
        (Some(SandboxPlan::Container(container)), Some(branch))
            if container.expose_worktree && branch.strategy == Strategy::Head =>
        {
            keep(
                &mut errors,
                Err(source
                    .error_at_key(
                        &at("sandbox").child("expose_worktree"),
                        "`sandbox.expose_worktree` cannot be used with strategy `head`",
                    )
                    .with_hint("exposing your checkout would expose its `.git` and `.eden` too; use `merge-to-head` or `named`, or remove the key")),
            )
        }
        _ => Some(()),
    };
    let (
        Some(name),
        Some(mut sandbox),
        Some(hooks),
        Some(sandbox_env),
        Some(branch),
        Some(()),
        Some(log_file),
        Some(steps),
        Some(copy_to_worktree),
        Some(()),
        Some(services),
    ) = (
        name,
        sandbox,
        hooks,
        sandbox_env,
        branch,
        redact_checked,
        log_file,
        steps,
        copy_to_worktree,
        exposure_checked,
        services,
    )
    else {
        // A part is missing only because it, or a part it depends on, recorded an error.
        return Err(Error::first_of(errors).unwrap_or_else(|| Error::internal("a manifest part failed silently")));
    };
    sandbox.set_services(services);
    let agent_state = sandbox.agent_state_mut();
    if let (Some(agent_state), false) = (agent_state, manifest.sandbox.mount_agent_config == Some(false)) {
        for step in &steps {
            if let AgentPlan::Adapter(settings) = &step.agent {
                // Where the person's agent keeps its state: `agent.env` says first (a
                // `CLAUDE_CONFIG_DIR` there), then eden's own environment.
                let env = |key: &str| settings.env.get(key).map(|value| value.0.clone()).or_else(|| host_env(key));
                for state in super::sandbox_plan::agent_state(settings.kind, &env) {
                    if !agent_state.iter().any(|known| known.var == state.var) {
                        agent_state.push(state);
                    }
                }
            }
        }
    }
    let agents: Vec<&AgentPlan> = steps.iter().map(|step| &step.agent).collect();
    let budget = resolve_budget(&manifest.budget, &at("budget"), &agents, source)?;
    let attempts = resolve_attempts(&manifest, &branch, &steps, source)?;
    let artifacts = resolve_artifacts(manifest.artifacts.as_ref(), &at("artifacts"), source)?;
    let dotenv_plan: BTreeMap<String, Secret> = dotenv
        .values
        .iter()
        .map(|(key, value)| (key.clone(), Secret(lookup(key).unwrap_or_else(|| value.clone()))))
        .collect();
    let secrets = secrets(&manifest, dotenv, host_env);
    let env = EnvPlan { file: dotenv.path.clone(), dotenv: dotenv_plan, sandbox: sandbox_env };
    let mut steps = steps;
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

    Ok(Plan {
        name,
        manifest: source.file.clone(),
        steps,
        sandbox,
        branch,
        timeouts: TimeoutsPlan {
            iteration_step: manifest.timeouts.iteration_step.unwrap_or(Duration::from_secs(3600)),
            hook_step,
            copy_to_worktree: manifest.timeouts.copy_to_worktree.unwrap_or(Duration::from_secs(60)),
            kill_grace: manifest.timeouts.kill_grace.unwrap_or(Duration::from_secs(5)),
            output_drain: manifest.timeouts.output_drain.unwrap_or(Duration::from_secs(2)),
        },
        hooks,
        copy_to_worktree,
        env,
        logging: LoggingPlan { file: log_file },
        budget,
        attempts,
        artifacts,
        secrets,
    })
}

/// `attempts` and `attempts_pick`: a number from 1 to `MAX_ATTEMPTS`, each attempt on a branch
/// of its own (`merge-to-head`), and what is not built yet refused.
fn resolve_attempts(
    manifest: &Manifest,
    branch: &BranchPlan,
    steps: &[StepPlan],
    source: &Source,
) -> Result<AttemptsPlan, Error> {
    use crate::manifest::schema::AttemptsPick;
    let at = |key: &str| KeyPath::parse(key);
    let count = manifest.attempts.unwrap_or(1);
    if !(1..=MAX_ATTEMPTS).contains(&count) {
        return Err(source
            .error_at(&at("attempts"), format!("`attempts = {count}`: give a number from 1 to {MAX_ATTEMPTS}"))
            .with_hint("e.g. `attempts = 3` (or `--attempts 3`)"));
    }
    let pick = manifest.attempts_pick.unwrap_or_default();
    let score = manifest.attempts_score.clone().filter(|score| !score.trim().is_empty());
    match (pick, &score, manifest.attempts_score.is_some()) {
        (AttemptsPick::Best, None, _) => {
            return Err(source
                .error_at(&at("attempts_pick"), "`attempts_pick = \"best\"` needs `attempts_score`")
                .with_hint("a command run in each attempt's sandbox that prints a number, the lower the better: `attempts_score = \"cargo clippy 2>&1 | grep -c warning\"`"));
        }
        (AttemptsPick::First, _, true) => {
            return Err(source
                .error_at(&at("attempts_score"), "`attempts_score` applies to `attempts_pick = \"best\"` only")
                .with_hint("set `attempts_pick = \"best\"`, or remove `attempts_score`"));
        }
        _ => {}
    }
    if count > 1 && branch.strategy != Strategy::MergeToHead {
        return Err(source
            .error_at(
                &at("attempts"),
                format!("attempts need branches of their own: strategy `{}` shares one", branch.strategy.as_str()),
            )
            .with_hint("use `branch.strategy = \"merge-to-head\"` (the default) with `attempts`"));
    }
    let checked = steps.iter().any(|step| !step.checks.is_empty());
    let chosen_by = match (count, pick, checked) {
        (1, _, _) => "the one attempt",
        (_, AttemptsPick::First, true) => "the first to finish with its completion signal and every check passing",
        (_, AttemptsPick::First, false) => {
            "the first to finish with its completion signal (no `[[check]]`: the signal alone)"
        }
        (_, AttemptsPick::Best, true) => {
            "of those that finish with their completion signal and every check passing, the lowest `attempts_score` (ties: fewer changed lines)"
        }
        (_, AttemptsPick::Best, false) => {
            "of those that finish with their completion signal (no `[[check]]`: the signal alone), the lowest `attempts_score` (ties: fewer changed lines)"
        }
    };
    Ok(AttemptsPlan { count, pick, score, chosen_by })
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

/// The top-level settings as one step, or every `[[step]]` (each over the top-level ones).
fn resolve_steps(context: &StepContext<'_>) -> Result<Vec<StepPlan>, Error> {
    let (manifest, source) = (context.manifest, context.source);
    if manifest.step.is_empty() {
        return Ok(vec![resolve_step(context, None, None)?]);
    }
    if manifest.output.is_some() {
        return Err(source
            .error_at_key(&KeyPath::parse("output"), "with `[[step]]`, each step has its own `[output]`")
            .with_hint("move the table into the step that should produce it: `[step.output]`"));
    }
    let mut steps: Vec<StepPlan> = Vec::new();
    for (index, step) in manifest.step.iter().enumerate() {
        let resolved = resolve_step(context, Some((index, step)), steps.last())?;
        if steps.iter().any(|earlier| earlier.name == resolved.name) {
            return Err(source
                .error_at(
                    &KeyPath::parse("step").index(index).child("name"),
                    format!("two steps are named `{}`", resolved.name),
                )
                .with_hint("give every step its own name"));
        }
        steps.push(resolved);
    }
    Ok(steps)
}

/// What every step's resolution needs from the whole manifest.
struct StepContext<'a> {
    manifest: &'a Manifest,
    source: &'a Source,
    host_env: &'a dyn Fn(&str) -> Option<String>,
    in_container: bool,
    sandbox_env: &'a BTreeMap<String, Secret>,
}

/// One step: the top-level settings alone (`step` = `None`), or a `[[step]]` over them. A step's
/// `agent` table replaces the top-level one when it names another `kind`, and is merged over it
/// key by key otherwise; `prompt_args` are merged; `max_iterations` and `completion_signal`
/// override `[loop]`.
fn resolve_step(
    context: &StepContext<'_>,
    step: Option<(usize, &StepSection)>,
    previous: Option<&StepPlan>,
) -> Result<StepPlan, Error> {
    let StepContext { manifest, source, host_env, in_container, sandbox_env } = *context;
    let at = |key: &str| KeyPath::parse(key);
    let base = match step {
        None => KeyPath::default(),
        Some((index, _)) => at("step").index(index),
    };
    let own = |key: &str| base.child(key);
    let section = step.map(|(_, section)| section);

    let name = match (step, section.and_then(|s| s.name.clone())) {
        (None, _) => "main".to_owned(),
        (Some((index, _)), None) => format!("step-{}", index + 1),
        (Some(_), Some(name)) => {
            if let Some(problem) = name_problem(&name) {
                return Err(source
                    .error_at(&own("name"), format!("invalid step name `{name}`: {problem}"))
                    .with_hint("use letters, digits, `.`, `_` and `-`"));
            }
            name
        }
    };

    // The prompt: the step's own, or the top-level one.
    let (prompt_text, prompt_file, prompt_base) = match section {
        Some(s) if s.prompt.is_some() || s.prompt_file.is_some() => {
            (s.prompt.as_ref(), s.prompt_file.as_ref(), base.clone())
        }
        _ => (manifest.prompt.as_ref(), manifest.prompt_file.as_ref(), KeyPath::default()),
    };
    let prompt = resolve_prompt(prompt_text, prompt_file, &prompt_base, source)?;
    let mut args = manifest.prompt_args.clone();
    if let Some(extra) = section.and_then(|s| s.prompt_args.as_ref()) {
        args.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    }

    // The agent: merged as described above.
    let (agent_section, agent_path) = match section.and_then(|s| s.agent.as_ref()) {
        None => (manifest.agent.clone(), at("agent")),
        Some(own_agent) => {
            let replaces = own_agent.kind.is_some() && own_agent.kind != manifest.agent.kind;
            let merged = if replaces { own_agent.clone() } else { merge_agent(own_agent, &manifest.agent) };
            (merged, own("agent"))
        }
    };
    let agent = resolve_agent(&agent_section, &agent_path, source, host_env, in_container)?;
    if let Some(agent_env) = agent.env() {
        for (key, value) in agent_env {
            if sandbox_env.get(key).is_some_and(|other| other.0 != value.0) {
                return Err(source
                    .error_at_key(
                        &agent_path.child("env").child(key),
                        format!("`{key}` is set differently in `[agent] env` and `[sandbox] env`"),
                    )
                    .with_hint("set it in one place: `[sandbox] env` reaches the agent and the sandbox hooks"));
            }
        }
    }

    let mut loop_section = manifest.loop_.clone();
    let mut max_iterations_path = at("loop.max_iterations");
    if let Some(section) = section {
        if let Some(n) = section.max_iterations {
            loop_section.max_iterations = Some(n);
            max_iterations_path = own("max_iterations");
            if n == 0 {
                return Err(source
                    .error_at(&max_iterations_path, "`max_iterations` must be at least 1")
                    .with_hint("the agent runs at most this many times"));
            }
        }
        if section.completion_signal.is_some() {
            loop_section.completion_signal = section.completion_signal.clone();
        }
    }
    let mut loop_ = resolve_loop(&loop_section, source)?;
    let output_section = match section {
        None => manifest.output.as_ref(),
        Some(section) => section.output.as_ref(),
    };
    let output = match output_section {
        None => None,
        Some(output_section) => {
            let plan = resolve_output(
                output_section,
                &own("output"),
                &prompt.template,
                (loop_section.max_iterations, max_iterations_path),
                matches!(agent, AgentPlan::Adapter(_)),
                source,
            )?;
            loop_.max_iterations = 1;
            Some(plan)
        }
    };

    // Every placeholder must have a value: prompt_args or a built-in.
    let prompt_at = prompt_base.child(if prompt.file.is_some() { "prompt_file" } else { "prompt" });
    for key in prompt::placeholders(&prompt.template) {
        if key == prompt::PREVIOUS_STEP_RESULT {
            match previous {
                None => {
                    return Err(source
                        .error_at(&prompt_at, "`{{PREVIOUS_STEP_RESULT}}` needs an earlier step")
                        .with_hint(
                            "it is the structured output of the step before this one, in `[[step]]` manifests",
                        ));
                }
                Some(previous) if previous.output.is_none() => {
                    return Err(source
                        .error_at(
                            &prompt_at,
                            format!(
                                "`{{{{PREVIOUS_STEP_RESULT}}}}` is used, but step `{}` has no `[output]`",
                                previous.name
                            ),
                        )
                        .with_hint("give the previous step an `[step.output]` table, so it has a result to pass on"));
                }
                Some(_) => continue,
            }
        }
        if !args.contains_key(key) && !prompt::BUILT_INS.contains(&key) {
            let mut known: Vec<&str> = args.keys().map(String::as_str).collect();
            known.extend(prompt::BUILT_INS);
            return Err(source
                .error_at(&prompt_at, format!("the prompt uses `{{{{{key}}}}}` but no value is given for `{key}`"))
                .with_hint(format!(
                    "add it under `[prompt_args]` or pass `--arg {key}=VALUE`; known keys: {}",
                    known.join(", ")
                )));
        }
    }
    for key in args.keys() {
        if prompt::BUILT_INS.contains(&key.as_str()) || key == prompt::PREVIOUS_STEP_RESULT {
            let path = if section.and_then(|s| s.prompt_args.as_ref()).is_some_and(|a| a.contains_key(key)) {
                own("prompt_args").child(key)
            } else {
                at("prompt_args").child(key)
            };
            return Err(source
                .error_at_key(&path, format!("`{key}` is filled in by eden and cannot be set"))
                .with_hint(format!(
                    "built-in keys: {}, {}",
                    prompt::BUILT_INS.join(", "),
                    prompt::PREVIOUS_STEP_RESULT
                )));
        }
    }
    if let AgentPlan::Cli(cli) = &agent {
        if cli.prompt_via == PromptVia::Arg && prompt.template.len() > MAX_ARGV_PROMPT {
            return Err(source
                .error_at(
                    &agent_path.child("prompt_via"),
                    format!(
                        "the prompt is {} KiB, over the {} KiB eden passes on the command line",
                        prompt.template.len() / 1024,
                        MAX_ARGV_PROMPT / 1024
                    ),
                )
                .with_hint("set `prompt_via = \"stdin\"` if the agent reads its prompt from standard input"));
        }
    }
    if !matches!(agent, AgentPlan::Simulated { .. }) && prompt.template.contains(super::PLACEHOLDER_TASK) {
        let key = if prompt.file.is_some() { "prompt_file" } else { "prompt" };
        let path =
            if section.is_some_and(|s| s.prompt.is_some() || s.prompt_file.is_some()) { own(key) } else { at(key) };
        return Err(source
            .error_at(
                &path,
                format!("the prompt still says `{}`: it is `eden init`'s placeholder", super::PLACEHOLDER_TASK),
            )
            .with_hint("write the task in the prompt (or pass `--prompt \"...\"`) before running a real agent on it"));
    }
    if let AgentPlan::Adapter(settings) = &agent {
        let spec = settings.kind.spec();
        if spec.prompt_on_argv && prompt.template.len() > MAX_ARGV_PROMPT {
            let key = if prompt.file.is_some() { "prompt_file" } else { "prompt" };
            let path =
                if section.is_some_and(|s| s.prompt.is_some() || s.prompt_file.is_some()) { own(key) } else { at(key) };
            return Err(source
                .error_at(
                    &path,
                    format!(
                        "the prompt is {} KiB; `{}` takes its prompt on the command line, where eden allows at most {} KiB",
                        prompt.template.len() / 1024,
                        spec.name,
                        MAX_ARGV_PROMPT / 1024
                    ),
                )
                .with_hint("shorten the prompt, or use an agent that reads it from stdin (claude-code, codex)"));
        }
    }
    let budget = match section.and_then(|s| s.budget.as_ref()) {
        Some(budget) => resolve_budget(budget, &own("budget"), &[&agent], source)?,
        None => BudgetPlan::default(),
    };
    let (check_sections, check_path) = match section.and_then(|s| s.check.as_ref()) {
        Some(own_checks) => (own_checks.as_slice(), own("check")),
        None => (manifest.check.as_slice(), at("check")),
    };
    let hook_step = manifest.timeouts.hook_step.map_or(std::time::Duration::from_secs(60), |timeout| timeout.0);
    let checks = super::checks_plan::resolve_checks(check_sections, &check_path, hook_step, source)?;
    Ok(StepPlan {
        name,
        agent,
        prompt: PromptPlan { template: prompt.template, file: prompt.file, args },
        loop_,
        output,
        when: section.and_then(|s| s.when).unwrap_or(When::Success),
        continue_on_failure: section.and_then(|s| s.continue_on_failure).unwrap_or(false),
        budget,
        checks,
        held: super::held_plan::Held::Nothing { why: String::new() },
        artifacts: resolve_artifacts(section.and_then(|s| s.artifacts.as_ref()), &own("artifacts"), source)?,
    })
}

/// `artifacts` globs: relative to the workspace, inside it, not in `.git` or `.eden`.
fn resolve_artifacts(globs: Option<&Vec<String>>, path: &KeyPath, source: &Source) -> Result<Vec<String>, Error> {
    let globs = globs.cloned().unwrap_or_default();
    for (index, glob) in globs.iter().enumerate() {
        let glob_path = std::path::Path::new(glob);
        let problem = if glob.trim().is_empty() {
            Some("it is empty")
        } else if glob_path.is_absolute() || glob.split('/').any(|part| part == "..") {
            Some("it must stay inside the workspace (relative, no `..`)")
        } else if matches!(glob.trim_start_matches("./").split('/').next(), Some(".git" | ".eden")) {
            Some("`.git` and `.eden` are eden's and git's, never artifacts")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(source
                .error_at(&path.index(index), format!("artifact glob `{glob}`: {problem}"))
                .with_hint("give paths relative to the repository's top: `out/*.txt`, `coverage/**`, `report.html`"));
        }
    }
    Ok(globs)
}

/// A budget's caps, each checked against what the agents it covers report: a cap on tokens
/// needs agents that report tokens, one on cost agents that report their cost.
fn resolve_budget(
    section: &BudgetSection,
    path: &KeyPath,
    agents: &[&AgentPlan],
    source: &Source,
) -> Result<BudgetPlan, Error> {
    use crate::agent::Reports;
    let needs = [
        ("max_tokens", section.max_tokens.is_some(), Reports::Tokens, "tokens"),
        ("max_cost_usd", section.max_cost_usd.is_some(), Reports::TokensAndCost, "cost"),
    ];
    for (key, set, needed, what) in needs {
        let Some(agent) = agents.iter().find(|agent| set && agent.reports() < needed) else { continue };
        let kind = agent.kind();
        let why = match agent {
            AgentPlan::Cli(cli) => format!("a `cli` agent with parser `{}` reports no {what}", cli.parser.as_str()),
            _ => format!("`{}` reports no {what}", kind.as_str()),
        };
        return Err(source.error_at_key(&path.child(key), format!("`{key}` cannot be checked: {why}")).with_hint(
            match key {
                "max_tokens" => "tokens are reported by claude-code, codex, opencode and pi (and `cli` agents with their parsers); cap this agent with `max_duration`",
                _ => "cost is reported by claude-code, opencode and pi; cap this agent with `max_tokens` or `max_duration`",
            },
        ));
    }
    if section.max_tokens == Some(0) {
        return Err(source
            .error_at(&path.child("max_tokens"), "`max_tokens` must be at least 1")
            .with_hint("leave it out for no cap"));
    }
    if let Some(cost) = section.max_cost_usd {
        if !(cost.is_finite() && cost > 0.0) {
            return Err(source
                .error_at(&path.child("max_cost_usd"), format!("`max_cost_usd` must be a positive amount, not {cost}"))
                .with_hint("in US dollars, e.g. `max_cost_usd = 2.5`"));
        }
    }
    if section.max_duration.is_some_and(|duration| duration.0.is_zero()) {
        return Err(source
            .error_at(&path.child("max_duration"), "`max_duration` must be longer than 0")
            .with_hint("e.g. `max_duration = \"2h\"`"));
    }
    Ok(BudgetPlan {
        max_tokens: section.max_tokens,
        max_cost_usd: section.max_cost_usd,
        max_duration: section.max_duration,
    })
}

/// A step's `agent` keys over the top-level ones (same kind).
fn merge_agent(own: &AgentSection, top: &AgentSection) -> AgentSection {
    AgentSection {
        kind: own.kind.or(top.kind),
        model: own.model.clone().or_else(|| top.model.clone()),
        effort: own.effort.clone().or_else(|| top.effort.clone()),
        extra_args: own.extra_args.clone().or_else(|| top.extra_args.clone()),
        env: match (&own.env, &top.env) {
            (Some(own), Some(top)) => Some(top.iter().chain(own).map(|(k, v)| (k.clone(), v.clone())).collect()),
            (own, top) => own.clone().or_else(|| top.clone()),
        },
        resume: own.resume.clone().or_else(|| top.resume.clone()),
        binary: own.binary.clone().or_else(|| top.binary.clone()),
        args: own.args.clone().or_else(|| top.args.clone()),
        prompt_via: own.prompt_via.or(top.prompt_via),
        parser: own.parser.clone().or_else(|| top.parser.clone()),
        lines: own.lines.clone().or_else(|| top.lines.clone()),
        line_delay: own.line_delay.or(top.line_delay),
        exit_code: own.exit_code.or(top.exit_code),
    }
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

/// `copy_to_worktree` entries: relative paths that stay inside the checkout.
fn resolve_copies(manifest: &Manifest, strategy: Strategy, source: &Source) -> Result<Vec<PathBuf>, Error> {
    use std::path::Component;
    let path = KeyPath::parse("copy_to_worktree");
    if !manifest.copy_to_worktree.is_empty() && strategy == Strategy::Head {
        return Err(source
            .error_at(&path, "`copy_to_worktree` does not apply to strategy `head`")
            .with_hint("`head` works in your checkout, which already has these files; remove the key"));
    }
    let mut entries = Vec::new();
    for (index, entry) in manifest.copy_to_worktree.iter().enumerate() {
        let problem = if entry.trim().is_empty() {
            Some("it is empty")
        } else if entry.starts_with('/') || entry.starts_with('~') {
            Some("it is absolute; give a path relative to the repository")
        } else if Path::new(entry).components().any(|c| c == Component::ParentDir) {
            Some("it leaves the repository with `..`")
        } else if Path::new(entry).components().next() == Some(Component::Normal(".git".as_ref())) {
            Some("eden does not copy git's own files")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(source.error_at(&path.index(index), format!("cannot copy `{entry}`: {problem}")).with_hint(
                "entries are files or folders relative to the repository, e.g. \".env\" or \"config/local\"",
            ));
        }
        let cleaned: PathBuf = Path::new(entry).components().filter(|c| *c != Component::CurDir).collect();
        if cleaned.as_os_str().is_empty() {
            return Err(source
                .error_at(&path.index(index), format!("cannot copy `{entry}`: it is the whole repository"))
                .with_hint("name the files or folders git does not have"));
        }
        entries.push(cleaned);
    }
    Ok(entries)
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

struct ResolvedPrompt {
    template: String,
    file: Option<PathBuf>,
}

fn resolve_prompt(
    prompt: Option<&String>,
    prompt_file: Option<&String>,
    base: &KeyPath,
    source: &Source,
) -> Result<ResolvedPrompt, Error> {
    let at = |key: &str| base.child(key);
    let hint = "give the task with `prompt = \"...\"` or `prompt_file = \"task.md\"` (or `--prompt`)";
    let resolved = match (prompt, prompt_file) {
        (Some(_), Some(_)) => {
            return Err(source
                .error_at_key(&at("prompt_file"), "both `prompt` and `prompt_file` are set")
                .with_hint("keep one of them"))
        }
        (None, None) if source.prompt_optional => ResolvedPrompt { template: String::new(), file: None },
        (None, None) => {
            return Err(source.error_at(base, "no prompt given").with_hint(hint));
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
    if resolved.template.trim().is_empty() && !source.prompt_optional {
        let key = if resolved.file.is_some() { "prompt_file" } else { "prompt" };
        return Err(source.error_at(&at(key), "the prompt is empty").with_hint(hint));
    }
    Ok(resolved)
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
        require_completion: section.require_completion.unwrap_or(true),
        usage_limit_wait: section
            .usage_limit_wait
            .unwrap_or(crate::values::MaybeZeroDuration(std::time::Duration::from_secs(6 * 3600))),
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
                .with_hint(format!("it is used by {owner}")));
        }
        Ok(())
    };
    if strategy != Strategy::Named {
        only_for("name", section.name.is_some(), "strategy `named`")?;
        only_for("reuse_worktree", section.reuse_worktree.is_some(), "strategy `named`")?;
    }
    if strategy == Strategy::Named {
        only_for("allow_dirty", section.allow_dirty.is_some(), "strategies `head` and `merge-to-head`")?;
    }
    if strategy == Strategy::Head {
        only_for("base", section.base.is_some(), "strategies `merge-to-head` and `named`")?;
    }
    if strategy != Strategy::MergeToHead {
        only_for("rebase", section.rebase.is_some(), "strategy `merge-to-head`")?;
        only_for("push_base", section.push_base.is_some(), "strategy `merge-to-head`")?;
        only_for("protect", section.protect.is_some(), "strategy `merge-to-head` (the others merge nothing)")?;
    }
    for (index, glob) in section.protect.iter().flatten().enumerate() {
        let bad = glob.trim().is_empty() || glob.starts_with('/') || glob.split('/').any(|part| part == "..");
        if bad {
            return Err(source
                .error_at(&path.child("protect").index(index), format!("`{glob}` is not a path in the repository"))
                .with_hint(
                    "give globs relative to the repository's top: `.github/workflows/**`, `.claude/**`, `*.lock`",
                ));
        }
    }
    if section.push_base == Some(true) && section.push.is_none() {
        return Err(source
            .error_at_key(&path.child("push_base"), "`branch.push_base` needs `branch.push`")
            .with_hint("name the remote the base goes to: `push = \"origin\"`"));
    }
    if let Some(remote) = &section.push {
        let bad =
            remote.is_empty() || remote.starts_with('-') || remote.chars().any(|c| c.is_whitespace() || c.is_control());
        if bad {
            return Err(source
                .error_at(&path.child("push"), format!("`{remote}` is not a remote's name"))
                .with_hint("name a remote of this repository, as `git remote` lists them: `push = \"origin\"`"));
        }
    }
    if strategy == Strategy::Named && section.name.is_none() {
        return Err(source
            .error_at(&path.child("strategy"), "strategy `named` needs `branch.name`")
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
        rebase: section.rebase.unwrap_or(false),
        commit_leftovers: section.commit_leftovers.unwrap_or(false),
        push: section.push.clone(),
        push_base: section.push_base.unwrap_or(false),
        protect: section.protect.clone().unwrap_or_default(),
    })
}

/// The manifest file's stem made safe for branch names, or `eden` for the flag-only form.
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
mod tests {
    use super::*;

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
