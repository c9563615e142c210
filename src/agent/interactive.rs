//! How each agent CLI starts its own terminal UI (`eden interactive`): no print/exec/JSON mode,
//! the model and `extra_args` as for a run, an optional first prompt the way that CLI takes
//! one, `resume` to continue a session, and the permission-bypass flag only where a container
//! makes it safe (`bypass`); on the host the agent asks the person at the keyboard.

use super::facts::Ui;
use super::AgentPlan;
use crate::error::Error;
use crate::process::{ProcessBuilder, Stdin};
use std::path::Path;

pub(crate) struct InteractiveStart<'a> {
    /// The first message, already rendered.
    pub(crate) prompt: Option<&'a str>,
    pub(crate) worktree: &'a Path,
    /// A session to continue (`--resume`, else `agent.resume`).
    pub(crate) resume: Option<&'a str>,
    /// Skip the agent's permission prompts (in a container only).
    pub(crate) bypass: bool,
    /// The terminal is a terminal (a container engine allocates one inside).
    pub(crate) tty: bool,
}

/// The command that starts `plan`'s agent in its interactive mode.
pub(crate) fn command(plan: &AgentPlan, start: &InteractiveStart<'_>) -> Result<ProcessBuilder, Error> {
    let stdin = Stdin::Terminal { tty: start.tty };
    let settings = match plan {
        AgentPlan::Simulated { .. } => {
            return Err(Error::usage("the `simulated` agent has no interactive mode")
                .with_hint("use `--agent cli --binary bash` for a shell in the worktree, or a real agent"))
        }
        AgentPlan::Cli(cli) => return Ok(cli_command(cli, start).stdin(stdin)),
        AgentPlan::Adapter(settings) => settings,
    };
    let ui = Ui {
        model: settings.model.as_deref(),
        resume: start.resume.or(settings.resume.as_deref()),
        bypass: start.bypass,
    };
    let flags = settings.kind.spec().interactive.expect("every adapter has an interactive mode");
    let (mut command, prompt_flag) = flags(ProcessBuilder::new(&settings.binary), &ui);
    // The first message before `extra_args`: a flag there that takes several values
    // (`--allowedTools A B`) would swallow it.
    if let Some(prompt) = start.prompt {
        command = match prompt_flag {
            Some(flag) => command.arg(flag).arg(prompt),
            None => command.arg(prompt),
        };
    }
    command = command.args(&settings.extra_args);
    for (key, value) in &settings.env {
        command = command.env(key, &value.0);
    }
    Ok(command.cwd(start.worktree).stdin(stdin))
}

/// A `cli` agent's own command line: `{prompt}` arguments only with a first message.
fn cli_command(cli: &super::CliPlan, start: &InteractiveStart<'_>) -> ProcessBuilder {
    let model = cli.model.as_deref().unwrap_or_default();
    let mut command = ProcessBuilder::new(&cli.binary).cwd(start.worktree);
    for arg in &cli.args {
        if arg.contains("{prompt}") {
            // Without a first message the argument that would carry it is left out.
            if let Some(prompt) = start.prompt {
                command = command.arg(arg.replace("{prompt}", prompt).replace("{model}", model));
            }
            continue;
        }
        command = command.arg(arg.replace("{model}", model));
    }
    for (key, value) in &cli.env {
        command = command.env(key, &value.0);
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{AdapterSettings, AgentKind};

    fn adapter(kind: AgentKind) -> AgentPlan {
        AgentPlan::Adapter(AdapterSettings {
            kind,
            binary: kind.spec().binary.unwrap().into(),
            model: Some("the-model".into()),
            effort: None,
            extra_args: vec!["--extra".into()],
            env: Default::default(),
            resume: None,
        })
    }

    #[test]
    fn each_agent_starts_its_own_ui() {
        let lines: Vec<String> = [
            AgentKind::ClaudeCode,
            AgentKind::Codex,
            AgentKind::Opencode,
            AgentKind::Pi,
            AgentKind::Cursor,
            AgentKind::Copilot,
        ]
        .into_iter()
        .flat_map(|kind| {
            [(false, None), (true, Some("s-1"))].map(|(bypass, resume)| {
                let start =
                    InteractiveStart { prompt: Some("fix it"), worktree: Path::new("/wt"), resume, bypass, tty: true };
                command(&adapter(kind), &start).unwrap().to_string()
            })
        })
        .collect();
        insta::assert_snapshot!(lines.join("\n"), @"
        claude --model the-model 'fix it' --extra
        claude --model the-model --resume s-1 --dangerously-skip-permissions 'fix it' --extra
        codex --model the-model 'fix it' --extra
        codex resume s-1 --model the-model --dangerously-bypass-approvals-and-sandbox 'fix it' --extra
        opencode --model the-model --prompt 'fix it' --extra
        opencode --model the-model --session s-1 --prompt 'fix it' --extra
        pi --model the-model 'fix it' --extra
        pi --model the-model --session s-1 'fix it' --extra
        agent --model the-model 'fix it' --extra
        agent --model the-model --resume s-1 --force 'fix it' --extra
        copilot --model the-model -i 'fix it' --extra
        copilot --model the-model --resume s-1 --allow-all-tools -i 'fix it' --extra
        ");
    }

    #[test]
    fn a_cli_agent_without_a_first_message_leaves_its_prompt_argument_out() {
        let plan = AgentPlan::Cli(crate::agent::CliPlan {
            binary: "bash".into(),
            args: vec!["-i".into(), "-c".into(), "{prompt}".into()],
            prompt_via: crate::agent::PromptVia::Arg,
            parser: crate::agent::ParserKind::Lines,
            model: None,
            env: Default::default(),
        });
        let start =
            InteractiveStart { prompt: None, worktree: Path::new("/wt"), resume: None, bypass: false, tty: true };
        assert_eq!(command(&plan, &start).unwrap().to_string(), "bash -i -c");
        let simulated = AgentPlan::Simulated { lines: vec![], line_delay: None, exit_code: 0 };
        assert!(command(&simulated, &start).is_err());
    }
}
