//! The steps of a run: the top-level settings as one step, or each `[[step]]` over them, with
//! its agent, prompt, loop, output, budget, checks and artifacts.

use super::agent_plan::resolve_agent;
use super::budget_plan::{resolve_budget, BudgetPlan};
use super::load::{name_problem, KeyPath, Source};
use super::loop_plan::{resolve_loop, LoopPlan};
use super::output_plan::{resolve_output, OutputPlan};
use super::prompt;
use super::schema::{AgentSection, Manifest, PromptVia, StepSection, When};
use crate::agent::{AgentPlan, MAX_ARGV_PROMPT};
use crate::error::Error;
use crate::layout::EDEN_DIR;
use crate::redact::Secret;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One agent's part of the run. All steps share the worktree, branch and sandbox.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StepPlan {
    /// `main` for a manifest without `[[step]]`.
    pub(crate) name: String,
    pub(crate) agent: AgentPlan,
    pub(crate) prompt: PromptPlan,
    #[serde(rename = "loop")]
    pub(crate) loop_: LoopPlan,
    /// `[output]`: a typed result extracted from the agent's answer.
    pub(crate) output: Option<OutputPlan>,
    pub(crate) when: When,
    pub(crate) continue_on_failure: bool,
    /// The step's own caps (`[[step]] budget`).
    pub(crate) budget: BudgetPlan,
    /// What must pass before its work merges (`[[check]]`, or the step's own).
    pub(crate) checks: Vec<super::checks_plan::CheckPlan>,
    /// The provider keys eden holds for its agent (`sandbox.hold_keys`).
    pub(crate) held: super::held_plan::Held,
    /// The step's own `artifacts`, kept after it.
    pub(crate) artifacts: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct PromptPlan {
    pub(crate) template: String,
    pub(crate) file: Option<PathBuf>,
    pub(crate) args: BTreeMap<String, String>,
}

/// The top-level settings as one step, or every `[[step]]` (each over the top-level ones).
pub(crate) fn resolve_steps(context: &StepContext<'_>) -> Result<Vec<StepPlan>, Error> {
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
pub(crate) struct StepContext<'a> {
    pub(crate) manifest: &'a Manifest,
    pub(crate) source: &'a Source,
    pub(crate) host_env: &'a dyn Fn(&str) -> Option<String>,
    pub(crate) in_container: bool,
    pub(crate) sandbox_env: &'a BTreeMap<String, Secret>,
}

/// Where a step's keys are: under `[[step]]` number `index` (`base` is `step[index]`), or at the
/// top level (`base` is empty, no section).
struct StepKeys<'a> {
    base: KeyPath,
    section: Option<&'a StepSection>,
}

impl StepKeys<'_> {
    /// A key of the step's own table (a top-level key for the top-level step).
    fn own(&self, key: &str) -> KeyPath {
        self.base.child(key)
    }

    /// Whether the step gives a prompt of its own rather than taking the top-level one.
    fn has_own_prompt(&self) -> bool {
        self.section.is_some_and(|s| s.prompt.is_some() || s.prompt_file.is_some())
    }

    /// The key the prompt was given under (`prompt` or `prompt_file`, the step's or the top level's).
    fn prompt_key(&self, prompt: &ResolvedPrompt) -> KeyPath {
        let key = if prompt.file.is_some() { "prompt_file" } else { "prompt" };
        if self.has_own_prompt() {
            self.own(key)
        } else {
            KeyPath::parse(key)
        }
    }
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
    let StepContext { manifest, source, .. } = *context;
    let keys = StepKeys {
        base: step.map_or_else(KeyPath::default, |(index, _)| KeyPath::parse("step").index(index)),
        section: step.map(|(_, section)| section),
    };
    let name = step_name(step, &keys, source)?;
    let (prompt, args) = step_prompt(manifest, &keys, source)?;
    let (agent, agent_path) = step_agent(context, &keys)?;
    let (loop_, output) = step_loop_and_output(manifest, &keys, &prompt.template, &agent, source)?;
    check_placeholders(&prompt, &args, &keys, previous, source)?;
    check_prompt_fits(&agent, &agent_path, &prompt, &keys, source)?;
    let budget = match keys.section.and_then(|s| s.budget.as_ref()) {
        Some(budget) => resolve_budget(budget, &keys.own("budget"), &[&agent], source)?,
        None => BudgetPlan::default(),
    };
    let (check_sections, check_path) = match keys.section.and_then(|s| s.check.as_ref()) {
        Some(own_checks) => (own_checks.as_slice(), keys.own("check")),
        None => (manifest.check.as_slice(), KeyPath::parse("check")),
    };
    let hook_step = manifest.timeouts.hook_step.map_or(std::time::Duration::from_secs(60), |timeout| timeout.0);
    let checks = super::checks_plan::resolve_checks(check_sections, &check_path, hook_step, source)?;
    let artifacts = resolve_artifacts(keys.section.and_then(|s| s.artifacts.as_ref()), &keys.own("artifacts"), source)?;
    Ok(StepPlan {
        name,
        agent,
        prompt: PromptPlan { template: prompt.template, file: prompt.file, args },
        loop_,
        output,
        when: keys.section.and_then(|s| s.when).unwrap_or(When::Success),
        continue_on_failure: keys.section.and_then(|s| s.continue_on_failure).unwrap_or(false),
        budget,
        checks,
        held: super::held_plan::Held::Nothing { why: String::new() },
        artifacts,
    })
}

/// `main` for the top-level step, `step-N` for an unnamed `[[step]]`, else its checked name.
fn step_name(step: Option<(usize, &StepSection)>, keys: &StepKeys<'_>, source: &Source) -> Result<String, Error> {
    match (step, keys.section.and_then(|s| s.name.clone())) {
        (None, _) => Ok("main".to_owned()),
        (Some((index, _)), None) => Ok(format!("step-{}", index + 1)),
        (Some(_), Some(name)) => match name_problem(&name) {
            Some(problem) => Err(source
                .error_at(&keys.own("name"), format!("invalid step name `{name}`: {problem}"))
                .with_hint("use letters, digits, `.`, `_` and `-`")),
            None => Ok(name),
        },
    }
}

/// The step's prompt (its own, or the top-level one) and its `prompt_args` merged over the
/// top-level ones.
fn step_prompt(
    manifest: &Manifest,
    keys: &StepKeys<'_>,
    source: &Source,
) -> Result<(ResolvedPrompt, BTreeMap<String, String>), Error> {
    let prompt = match keys.section {
        Some(s) if keys.has_own_prompt() => {
            resolve_prompt(s.prompt.as_ref(), s.prompt_file.as_ref(), &keys.base, source)?
        }
        _ => resolve_prompt(manifest.prompt.as_ref(), manifest.prompt_file.as_ref(), &KeyPath::default(), source)?,
    };
    let mut args = manifest.prompt_args.clone();
    if let Some(extra) = keys.section.and_then(|s| s.prompt_args.as_ref()) {
        args.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    Ok((prompt, args))
}

/// The step's agent, merged as `resolve_step` says, and where its table is. A variable its
/// `env` sets differently from `[sandbox] env` is refused.
fn step_agent(context: &StepContext<'_>, keys: &StepKeys<'_>) -> Result<(AgentPlan, KeyPath), Error> {
    let StepContext { manifest, source, host_env, in_container, sandbox_env } = *context;
    let (agent_section, agent_path) = match keys.section.and_then(|s| s.agent.as_ref()) {
        None => (manifest.agent.clone(), KeyPath::parse("agent")),
        Some(own_agent) => {
            let replaces = own_agent.kind.is_some() && own_agent.kind != manifest.agent.kind;
            let merged = if replaces { own_agent.clone() } else { merge_agent(own_agent, &manifest.agent) };
            (merged, keys.own("agent"))
        }
    };
    let agent = resolve_agent(&agent_section, &agent_path, source, host_env, in_container)?;
    for (key, value) in agent.env().into_iter().flatten() {
        if sandbox_env.get(key).is_some_and(|other| other.0 != value.0) {
            return Err(source
                .error_at_key(
                    &agent_path.child("env").child(key),
                    format!("`{key}` is set differently in `[agent] env` and `[sandbox] env`"),
                )
                .with_hint("set it in one place: `[sandbox] env` reaches the agent and the sandbox hooks"));
        }
    }
    Ok((agent, agent_path))
}

/// `[loop]` with the step's `max_iterations` and `completion_signal` over it, and the step's
/// `[output]`, which makes it one iteration.
fn step_loop_and_output(
    manifest: &Manifest,
    keys: &StepKeys<'_>,
    template: &str,
    agent: &AgentPlan,
    source: &Source,
) -> Result<(LoopPlan, Option<OutputPlan>), Error> {
    let mut loop_section = manifest.loop_.clone();
    let mut max_iterations_path = KeyPath::parse("loop.max_iterations");
    if let Some(section) = keys.section {
        if let Some(n) = section.max_iterations {
            loop_section.max_iterations = Some(n);
            max_iterations_path = keys.own("max_iterations");
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
    let output_section = match keys.section {
        None => manifest.output.as_ref(),
        Some(section) => section.output.as_ref(),
    };
    let Some(output_section) = output_section else { return Ok((loop_, None)) };
    let output = resolve_output(
        output_section,
        &keys.own("output"),
        template,
        (loop_section.max_iterations, max_iterations_path),
        matches!(agent, AgentPlan::Adapter(_)),
        source,
    )?;
    loop_.max_iterations = 1;
    Ok((loop_, Some(output)))
}

/// Every placeholder has a value (`prompt_args` or a built-in; `{{PREVIOUS_STEP_RESULT}}` an
/// earlier step with an `[output]`), and no `prompt_args` key is one eden fills in.
fn check_placeholders(
    prompt: &ResolvedPrompt,
    args: &BTreeMap<String, String>,
    keys: &StepKeys<'_>,
    previous: Option<&StepPlan>,
    source: &Source,
) -> Result<(), Error> {
    let prompt_at = keys.prompt_key(prompt);
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
    let Some(key) =
        args.keys().find(|key| prompt::BUILT_INS.contains(&key.as_str()) || *key == prompt::PREVIOUS_STEP_RESULT)
    else {
        return Ok(());
    };
    let path = if keys.section.and_then(|s| s.prompt_args.as_ref()).is_some_and(|a| a.contains_key(key)) {
        keys.own("prompt_args").child(key)
    } else {
        KeyPath::parse("prompt_args").child(key)
    };
    Err(source.error_at_key(&path, format!("`{key}` is filled in by eden and cannot be set")).with_hint(format!(
        "built-in keys: {}, {}",
        prompt::BUILT_INS.join(", "),
        prompt::PREVIOUS_STEP_RESULT
    )))
}

/// A prompt that goes on the command line fits there, and a real agent is not sent `eden
/// init`'s placeholder task.
fn check_prompt_fits(
    agent: &AgentPlan,
    agent_path: &KeyPath,
    prompt: &ResolvedPrompt,
    keys: &StepKeys<'_>,
    source: &Source,
) -> Result<(), Error> {
    let kib = prompt.template.len() / 1024;
    if let AgentPlan::Cli(cli) = agent {
        if cli.prompt_via == PromptVia::Arg && prompt.template.len() > MAX_ARGV_PROMPT {
            return Err(source
                .error_at(
                    &agent_path.child("prompt_via"),
                    format!(
                        "the prompt is {kib} KiB, over the {} KiB eden passes on the command line",
                        MAX_ARGV_PROMPT / 1024
                    ),
                )
                .with_hint("set `prompt_via = \"stdin\"` if the agent reads its prompt from standard input"));
        }
    }
    let placeholder = prompt.template.contains(super::PLACEHOLDER_TASK) && !source.placeholder_allowed;
    if !matches!(agent, AgentPlan::Simulated { .. }) && placeholder {
        return Err(source
            .error_at(
                &keys.prompt_key(prompt),
                format!("the prompt still says `{}`: it is `eden init`'s placeholder", super::PLACEHOLDER_TASK),
            )
            .with_hint("write the task in the prompt (or pass `--prompt \"...\"`) before running a real agent on it"));
    }
    if let AgentPlan::Adapter(settings) = agent {
        let spec = settings.kind.spec();
        if spec.prompt_on_argv && prompt.template.len() > MAX_ARGV_PROMPT {
            return Err(source
                .error_at(
                    &keys.prompt_key(prompt),
                    format!(
                        "the prompt is {kib} KiB; `{}` takes its prompt on the command line, where eden allows at most {} KiB",
                        spec.name,
                        MAX_ARGV_PROMPT / 1024
                    ),
                )
                .with_hint(format!(
                    "shorten the prompt, or use an agent that reads it from stdin ({})",
                    crate::agent::spec::adapters_where(|spec| !spec.prompt_on_argv).join(", ")
                )));
        }
    }
    Ok(())
}

/// `artifacts` globs: relative to the workspace, inside it, not in `.git` or `.eden`.
pub(crate) fn resolve_artifacts(
    globs: Option<&Vec<String>>,
    path: &KeyPath,
    source: &Source,
) -> Result<Vec<String>, Error> {
    let globs = globs.cloned().unwrap_or_default();
    for (index, glob) in globs.iter().enumerate() {
        let glob_path = std::path::Path::new(glob);
        let problem = if glob.trim().is_empty() {
            Some("it is empty")
        } else if glob_path.is_absolute() || glob.split('/').any(|part| part == "..") {
            Some("it must stay inside the workspace (relative, no `..`)")
        } else if glob.trim_start_matches("./").split('/').next().is_some_and(|top| [".git", EDEN_DIR].contains(&top)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(text: &str) -> Result<Vec<StepPlan>, String> {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        let context = StepContext {
            manifest: &manifest,
            source: &source,
            host_env: &|_| None,
            in_container: false,
            sandbox_env: &BTreeMap::new(),
        };
        resolve_steps(&context).map_err(|err| err.message)
    }

    const AGENT: &str = "[agent]\nkind = \"simulated\"\n";

    #[test]
    fn one_step_or_several() {
        let main = steps(&format!("prompt = \"go\"\n{AGENT}")).unwrap();
        assert_eq!((main.len(), main[0].name.as_str()), (1, "main"));
        let two =
            steps(&format!("prompt = \"go\"\n{AGENT}[[step]]\n[[step]]\nname = \"review\"\nmax_iterations = 2\n"))
                .unwrap();
        assert_eq!(two.iter().map(|step| step.name.as_str()).collect::<Vec<_>>(), ["step-1", "review"]);
        assert_eq!((two[0].loop_.max_iterations, two[1].loop_.max_iterations), (10, 2));
        let twice = steps(&format!("prompt = \"go\"\n{AGENT}[[step]]\nname = \"a\"\n[[step]]\nname = \"a\"\n"));
        assert!(twice.unwrap_err().contains("two steps are named `a`"));
    }

    #[test]
    fn placeholders_need_values() {
        let missing = steps(&format!("prompt = \"fix {{{{ISSUE}}}}\"\n{AGENT}")).unwrap_err();
        assert!(missing.starts_with("plan.toml:1:10: the prompt uses `{{ISSUE}}`"), "{missing}");
        assert!(steps(&format!("prompt = \"fix {{{{ISSUE}}}}\"\n{AGENT}[prompt_args]\nISSUE = \"1\"\n")).is_ok());
        let built_in = steps(&format!("prompt = \"go\"\n{AGENT}[prompt_args]\nBRANCH = \"x\"\n")).unwrap_err();
        assert!(built_in.contains("filled in by eden"), "{built_in}");
        let previous = steps(&format!("prompt = \"{{{{PREVIOUS_STEP_RESULT}}}}\"\n{AGENT}")).unwrap_err();
        assert!(previous.contains("needs an earlier step"), "{previous}");
    }

    #[test]
    fn artifact_globs_stay_in_the_workspace() {
        let globs = |glob: &str| {
            resolve_artifacts(
                Some(&vec![glob.to_owned()]),
                &KeyPath::parse("artifacts"),
                &super::super::load::from_text("").unwrap().1,
            )
        };
        assert!(globs("out/*.txt").is_ok());
        for bad in ["", "/etc/passwd", "../x", ".git/config", "./.eden/x"] {
            assert!(globs(bad).is_err(), "{bad}");
        }
    }
}
