//! Agents: how to start one for an iteration (`Agent`) and how to read what it prints
//! (`Parser` into `StreamEvent`s). One file per agent CLI; the orchestrator knows only the
//! traits.

mod claude;
mod cli;
mod codex;
mod copilot;
pub mod credentials;
mod cursor;
mod facts;
pub(crate) mod interactive;
mod opencode;
mod pi;
mod scanner;
mod simulated;
pub mod spec;
pub(crate) mod stream;
pub(crate) mod transcripts;

pub(crate) use cli::CliAgent;
pub(crate) use scanner::CompletionScanner;
pub(crate) use simulated::{run_simulated_agent, SimulatedAgent, SIMULATED_SUBCOMMAND};
pub(crate) use spec::{AgentKind, AgentSpec, Family, ParserKind, PromptVia, Reports};
pub(crate) use stream::{FailureKind, StreamEvent, Usage, UsageMode};

use crate::error::Error;
use crate::process::ProcessBuilder;
use crate::redact::Secret;
use crate::values::Duration;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Prompts passed on argv are limited: argv has a size limit, and `ps` shows it.
pub(crate) const MAX_ARGV_PROMPT: usize = 120 * 1024;

pub(crate) trait Parser: Send {
    fn parse_line(&mut self, line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>));

    /// A piece of a line too long to hold whole (see `process::MAX_LINE`); the line goes on in
    /// the next piece or line. No agent's events are that long, so the piece is plain text.
    fn parse_piece(&mut self, piece: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>)) {
        emit(StreamEvent::Text { text: decode(piece), continues: true, subagent: false });
    }
}

/// Every line is text: the parser for any line-streaming CLI.
#[derive(Default)]
pub(crate) struct LinesParser;

impl Parser for LinesParser {
    fn parse_line(&mut self, line: &[u8], emit: &mut dyn FnMut(StreamEvent<'_>)) {
        emit(StreamEvent::Text { text: decode(line), continues: false, subagent: false });
    }
}

/// Bytes to text, replacing invalid UTF-8. `str::from_utf8` validates a word at a time, far
/// faster than `from_utf8_lossy`'s chunk iterator, so try it first: agents' output is almost
/// always valid.
pub(crate) fn decode(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Per-iteration facts an agent needs to build its command.
pub(crate) struct Invocation<'a> {
    pub(crate) prompt: &'a str,
    pub(crate) worktree: &'a Path,
    /// Resume this session instead of `agent.resume` (retries of the same conversation).
    pub(crate) resume: Option<&'a str>,
}

pub(crate) trait Agent {
    fn command(&self, invocation: &Invocation<'_>) -> Result<ProcessBuilder, Error>;
    fn parser(&self) -> Box<dyn Parser>;
}

/// An agent as a resolved manifest describes it (`[agent]`, or a step's).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub(crate) enum AgentPlan {
    Simulated {
        lines: Vec<String>,
        line_delay: Option<Duration>,
        exit_code: i32,
    },
    Cli(CliPlan),
    #[serde(untagged)]
    Adapter(AdapterSettings),
}

impl AgentPlan {
    pub(crate) fn kind(&self) -> AgentKind {
        match self {
            AgentPlan::Simulated { .. } => AgentKind::Simulated,
            AgentPlan::Cli(_) => AgentKind::Cli,
            AgentPlan::Adapter(settings) => settings.kind,
        }
    }

    /// Whose transcripts it writes: an adapter's own; a `cli` agent's whose output an
    /// adapter's parser reads, that adapter's (it is likely that CLI, run another way).
    pub(crate) fn transcripts_as(&self) -> AgentKind {
        match self {
            AgentPlan::Cli(CliPlan { parser: ParserKind::Of(adapter), .. }) => *adapter,
            other => other.kind(),
        }
    }

    /// What its output says about usage: a `cli` agent's, as its parser reads it.
    pub(crate) fn reports(&self) -> Reports {
        match self {
            AgentPlan::Simulated { .. } => Reports::Nothing,
            AgentPlan::Cli(cli) => cli.parser.reports(),
            AgentPlan::Adapter(settings) => settings.kind.spec().reports,
        }
    }

    /// `[agent] env`, resolved.
    pub(crate) fn env(&self) -> Option<&BTreeMap<String, Secret>> {
        match self {
            AgentPlan::Simulated { .. } => None,
            AgentPlan::Cli(cli) => Some(&cli.env),
            AgentPlan::Adapter(settings) => Some(&settings.env),
        }
    }

    /// A variable as the agent sees it: its own `env`, else eden's environment.
    pub(crate) fn env_var(&self, key: &str) -> Option<String> {
        self.env().and_then(|env| env.get(key)).map(|value| value.0.clone()).or_else(|| std::env::var(key).ok())
    }

    /// The executable it runs (eden itself for `simulated`).
    pub(crate) fn binary(&self) -> Option<&Path> {
        match self {
            AgentPlan::Simulated { .. } => None,
            AgentPlan::Cli(cli) => Some(&cli.binary),
            AgentPlan::Adapter(settings) => Some(&settings.binary),
        }
    }

    pub(crate) fn model(&self) -> Option<&str> {
        match self {
            AgentPlan::Simulated { .. } => None,
            AgentPlan::Cli(cli) => cli.model.as_deref(),
            AgentPlan::Adapter(settings) => settings.model.as_deref(),
        }
    }
}

/// `kind = "cli"`: any executable.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CliPlan {
    pub(crate) binary: PathBuf,
    /// Argument templates (`{model}`, `{prompt}` filled per iteration), `extra_args` appended.
    pub(crate) args: Vec<String>,
    pub(crate) prompt_via: PromptVia,
    pub(crate) parser: ParserKind,
    pub(crate) model: Option<String>,
    pub(crate) env: BTreeMap<String, Secret>,
}

/// The settings of a built-in agent adapter, resolved from `[agent]`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AdapterSettings {
    pub(crate) kind: AgentKind,
    pub(crate) binary: PathBuf,
    pub(crate) model: Option<String>,
    pub(crate) effort: Option<String>,
    pub(crate) extra_args: Vec<String>,
    pub(crate) env: BTreeMap<String, Secret>,
    pub(crate) resume: Option<String>,
}

pub(crate) struct Adapter {
    settings: AdapterSettings,
}

impl Agent for Adapter {
    fn command(&self, invocation: &Invocation<'_>) -> Result<ProcessBuilder, Error> {
        let settings = &self.settings;
        let spec = settings.kind.spec();
        // The template itself was checked at load; what grew past the limit while rendering
        // (`` !`cmd` `` output) fails the start of the agent, not the input (exit 2 would
        // claim nothing was made).
        if spec.prompt_on_argv && invocation.prompt.len() > MAX_ARGV_PROMPT {
            return Err(Error::agent(format!(
                "the prompt is {} KiB; `{}` takes its prompt on the command line, where eden allows at most {} KiB",
                invocation.prompt.len() / 1024,
                spec.name,
                MAX_ARGV_PROMPT / 1024
            ))
            .with_hint("shorten the prompt, or use an agent that reads it from stdin (claude-code, codex)"));
        }
        let build = spec.command.expect("adapters have a command line");
        let mut command = build(settings, invocation);
        for (key, value) in &settings.env {
            command = command.env(key, &value.0);
        }
        Ok(command.cwd(invocation.worktree))
    }

    fn parser(&self) -> Box<dyn Parser> {
        (self.settings.kind.spec().parser.expect("every adapter has a parser"))()
    }
}

pub(crate) fn from_plan(plan: &AgentPlan) -> Result<Box<dyn Agent>, Error> {
    Ok(match plan {
        AgentPlan::Simulated { lines, line_delay, exit_code } => {
            Box::new(SimulatedAgent::new(lines.clone(), line_delay.map(|d| d.0), *exit_code)?)
        }
        AgentPlan::Cli(cli) => Box::new(CliAgent::new(cli.clone())),
        AgentPlan::Adapter(settings) => Box::new(Adapter { settings: settings.clone() }),
    })
}

#[cfg(test)]
mod fixtures;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_text_even_when_not_utf8() {
        let mut texts = Vec::new();
        let mut parser = LinesParser;
        for line in [&b"plain"[..], b"caf\xc3\xa9", b"bad \xff byte"] {
            parser.parse_line(line, &mut |event| {
                if let StreamEvent::Text { text, .. } = event {
                    texts.push(text.into_owned());
                }
            });
        }
        assert_eq!(texts, ["plain", "café", "bad \u{fffd} byte"]);
    }

    #[test]
    fn a_cli_agent_with_an_adapters_parser_writes_that_adapters_transcripts() {
        let cli = |parser| {
            AgentPlan::Cli(CliPlan {
                binary: "wrapper".into(),
                args: vec![],
                prompt_via: PromptVia::Stdin,
                parser,
                model: None,
                env: BTreeMap::new(),
            })
        };
        assert_eq!(cli(ParserKind::Of(AgentKind::ClaudeCode)).transcripts_as(), AgentKind::ClaudeCode);
        assert_eq!(cli(ParserKind::Lines).transcripts_as(), AgentKind::Cli);
        let simulated = AgentPlan::Simulated { lines: vec![], line_delay: None, exit_code: 0 };
        assert_eq!(simulated.transcripts_as(), AgentKind::Simulated);
    }
}

#[cfg(test)]
mod argv_tests {
    use super::*;

    fn settings(kind: AgentKind) -> AdapterSettings {
        AdapterSettings {
            kind,
            binary: PathBuf::from(kind.spec().binary.unwrap()),
            model: Some("the-model".into()),
            effort: kind.spec().effort.then(|| "high".to_owned()),
            extra_args: vec!["--extra".into()],
            env: BTreeMap::from([("API_KEY".to_owned(), Secret("s3cret".into()))]),
            resume: None,
        }
    }

    /// The command line each adapter builds, with and without a session to resume.
    fn argv(kind: AgentKind, resume: Option<&str>) -> String {
        let agent = Adapter { settings: settings(kind) };
        let invocation = Invocation { prompt: "fix the tests", worktree: Path::new("/repo/wt"), resume };
        agent.command(&invocation).unwrap().to_string()
    }

    #[test]
    fn command_lines() {
        let all: Vec<String> = [
            AgentKind::ClaudeCode,
            AgentKind::Codex,
            AgentKind::Opencode,
            AgentKind::Pi,
            AgentKind::Cursor,
            AgentKind::Copilot,
        ]
        .into_iter()
        .flat_map(|kind| [argv(kind, None), argv(kind, Some("sess-1"))])
        .collect();
        insta::assert_snapshot!(all.join("\n"), @r#"
        claude -p --output-format stream-json --verbose --dangerously-skip-permissions --model the-model --effort high --extra
        claude -p --output-format stream-json --verbose --dangerously-skip-permissions --model the-model --effort high --resume sess-1 --extra
        codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -m the-model -c 'model_reasoning_effort="high"' --extra -
        codex exec resume sess-1 --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -m the-model -c 'model_reasoning_effort="high"' --extra -
        opencode run --format json --auto --model the-model --variant high --extra 'fix the tests'
        opencode run --format json --auto --model the-model --variant high --session sess-1 --extra 'fix the tests'
        pi -p --mode json --model the-model --extra 'fix the tests'
        pi -p --mode json --model the-model --session sess-1 --extra 'fix the tests'
        agent --print --output-format stream-json --force --model the-model --extra 'fix the tests'
        agent --print --output-format stream-json --force --model the-model --resume sess-1 --extra 'fix the tests'
        copilot -p 'fix the tests' --output-format json --allow-all-tools --model the-model --extra
        copilot -p 'fix the tests' --output-format json --allow-all-tools --model the-model --resume sess-1 --extra
        "#);
    }

    #[test]
    fn env_values_never_appear_on_the_command_line() {
        for kind in [AgentKind::ClaudeCode, AgentKind::Codex, AgentKind::Pi] {
            assert!(!argv(kind, None).contains("s3cret"));
        }
    }

    #[test]
    fn pi_splits_provider_and_model() {
        let mut settings = settings(AgentKind::Pi);
        settings.model = Some("anthropic/claude-x".into());
        let agent = Adapter { settings };
        let invocation = Invocation { prompt: "p", worktree: Path::new("/w"), resume: None };
        assert_eq!(
            agent.command(&invocation).unwrap().to_string(),
            "pi -p --mode json --provider anthropic --model claude-x --extra p"
        );
    }

    #[test]
    fn prompts_too_long_for_argv_are_refused() {
        let agent = Adapter { settings: settings(AgentKind::Opencode) };
        let prompt = "x".repeat(MAX_ARGV_PROMPT + 1);
        let invocation = Invocation { prompt: &prompt, worktree: Path::new("/w"), resume: None };
        let error = agent.command(&invocation).unwrap_err();
        assert_eq!(
            error.message,
            "the prompt is 120 KiB; `opencode` takes its prompt on the command line, where eden allows at most 120 KiB"
        );
        // Claude reads stdin: no limit.
        let agent = Adapter { settings: settings(AgentKind::ClaudeCode) };
        assert!(agent.command(&invocation).is_ok());
    }
}
