//! One table of what eden knows about each agent kind: its executable and npm package, how it
//! takes its prompt, what it accepts, where it keeps its state, how to start it and how to read
//! what it prints. Everything else (manifest validation, the sandbox's mounts, `eden image
//! build`, error hints) looks facts up here instead of keeping lists of its own.

use super::credentials::{nowhere_else, CredentialHeader, Credentials, Fronting, Login};
use super::facts::{Transcripts, UiFlags};
use super::{claude, codex, copilot, cursor, opencode, pi};
use super::{AdapterSettings, Invocation, LinesParser, Parser};

use crate::process::ProcessBuilder;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum AgentKind {
    ClaudeCode,
    Codex,
    Opencode,
    Pi,
    Cursor,
    Copilot,
    Cli,
    Simulated,
}

/// The three shapes an agent comes in, each with its own manifest keys and plan: an agent CLI
/// eden has an adapter for (everything about it in its spec row), any executable (`cli`), and
/// the scripted agent (`simulated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Adapter,
    Cli,
    Simulated,
}

/// How a `cli` agent gets its prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PromptVia {
    Stdin,
    Arg,
}

/// A folder where an agent keeps its configuration and session transcripts, found through an
/// environment variable (`var`, default `$HOME/<default>`); `share` is the part that is the
/// agent's ("" = the folder itself). In a sandbox the agent gets a private folder of its own
/// instead, seeded with copies of `seed` (what it needs to log in and behave as configured).
pub(crate) struct StateDir {
    pub(crate) var: &'static str,
    pub(crate) default: &'static str,
    pub(crate) share: &'static str,
    pub(crate) seed: &'static [&'static str],
    /// A file of `seed` the agent keeps in `$HOME` instead when `var` is unset ("" = none).
    pub(crate) home_file: &'static str,
}

pub struct AgentSpec {
    pub(crate) kind: AgentKind,
    /// As the manifest names it: `claude-code`.
    pub name: &'static str,
    /// The executable run unless `agent.binary` says otherwise (adapters only).
    pub binary: Option<&'static str>,
    /// The npm package that installs it (Cursor's CLI is not on npm).
    pub(crate) npm_package: Option<&'static str>,
    /// The prompt goes on the command line rather than stdin.
    pub(crate) prompt_on_argv: bool,
    /// Accepts `agent.effort`.
    pub(crate) effort: bool,
    /// Can continue a session: `agent.resume`, and structured-output retries in the same session.
    pub(crate) resume: bool,
    /// Its configuration and transcript folders, for agents that can be pointed at them.
    pub(crate) state_dirs: &'static [StateDir],
    /// How to give it credentials, for the hint when it fails to authenticate.
    pub(crate) login: &'static str,
    /// Reads its output (also selectable by this name as a `cli` agent's `parser`).
    pub(crate) parser: Option<fn() -> Box<dyn Parser>>,
    /// Its command line for one invocation (adapters only).
    pub(crate) command: Option<fn(&AdapterSettings, &Invocation<'_>) -> ProcessBuilder>,
    /// Its flags for its own UI, `eden interactive` (adapters only).
    pub(crate) interactive: Option<UiFlags>,
    /// Where it keeps the transcript of a session, and whether eden can move one.
    pub(crate) transcripts: Transcripts,
    /// What its output says about usage: what budget caps (`[budget]`) can be checked against.
    pub(crate) reports: Reports,
    /// How it reaches its provider with a key, so eden can hold the key (`proxy`); or why eden
    /// cannot front it.
    pub(crate) credentials: Result<Fronting, &'static str>,
    /// Where `eden doctor` looks for a key (variables) or a login (files of its first state
    /// folder), and the model host it tries with `--network`.
    pub doctor: Doctor,
    /// The variable a new manifest (`eden init`) hands the agent its key in, if any.
    pub(crate) init_key: Option<&'static str>,
}

/// What `eden doctor` checks of an agent.
#[derive(Debug, Clone, Copy)]
pub struct Doctor {
    pub key_vars: &'static [&'static str],
    pub(crate) login_files: &'static [&'static str],
    pub(crate) model_host: &'static str,
}

/// What an agent's stream tells about what it spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reports {
    Nothing,
    Tokens,
    TokensAndCost,
}

const fn dir(var: &'static str, default: &'static str, share: &'static str, seed: &'static [&'static str]) -> StateDir {
    StateDir { var, default, share, seed, home_file: "" }
}

impl StateDir {
    /// Where it is for an environment: `var` when set to an absolute path, else
    /// `$HOME/<default>`.
    pub(crate) fn resolve(&self, env: &dyn Fn(&str) -> Option<String>) -> std::path::PathBuf {
        let home = env("HOME").map(std::path::PathBuf::from).unwrap_or_else(|| std::path::PathBuf::from("/"));
        env(self.var).filter(|v| v.starts_with('/')).map_or_else(|| home.join(self.default), std::path::PathBuf::from)
    }

    /// The agent's own folder in it: `resolve`, with `share` below it.
    pub(crate) fn folder(&self, env: &dyn Fn(&str) -> Option<String>) -> std::path::PathBuf {
        let resolved = self.resolve(env);
        if self.share.is_empty() {
            resolved
        } else {
            resolved.join(self.share)
        }
    }
}

const ADAPTER: AgentSpec = AgentSpec {
    kind: AgentKind::Cli,
    name: "",
    binary: None,
    npm_package: None,
    prompt_on_argv: false,
    effort: false,
    resume: true,
    state_dirs: &[],
    login: "check the API key or login the agent uses (`agent.env`, or its own configuration)",
    parser: None,
    command: None,
    interactive: None,
    transcripts: Transcripts::None,
    reports: Reports::Nothing,
    credentials: Err("eden does not front its provider settings yet"),
    doctor: Doctor { key_vars: &[], login_files: &[], model_host: "" },
    init_key: None,
};

/// The agent CLIs (not `cli` or `simulated`) for which `has` holds, in the manifest's order.
pub(crate) fn adapters_where(has: impl Fn(&AgentSpec) -> bool) -> Vec<&'static str> {
    SPECS.iter().filter(|spec| spec.binary.is_some() && has(spec)).map(|spec| spec.name).collect()
}

/// Names as a person lists them: `a`, `a and b`, `a, b and c`.
pub(crate) fn spoken(names: &[&str]) -> String {
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// Every kind, in the order the manifest documents them.
pub static SPECS: [AgentSpec; 8] = [
    AgentSpec {
        kind: AgentKind::ClaudeCode,
        name: "claude-code",
        binary: Some("claude"),
        npm_package: Some("@anthropic-ai/claude-code"),
        effort: true,
        state_dirs: &[StateDir {
            // Its settings file is `~/.claude.json` unless `CLAUDE_CONFIG_DIR` is set.
            home_file: ".claude.json",
            ..dir(
                "CLAUDE_CONFIG_DIR",
                ".claude",
                "",
                &[".credentials.json", ".claude.json", "settings.json", "CLAUDE.md", "agents", "commands"],
            )
        }],
        login: "log in once with `claude` (then `/login`), or give it a key: `agent.env = { ANTHROPIC_API_KEY = \"${ANTHROPIC_API_KEY}\" }`",
        credentials: Ok(Fronting::Env(Credentials {
            keys: &[("ANTHROPIC_API_KEY", CredentialHeader::XApiKey), ("ANTHROPIC_AUTH_TOKEN", CredentialHeader::Bearer)],
            base_url: "ANTHROPIC_BASE_URL",
            default_upstream: Some("https://api.anthropic.com"),
            base_url_arg: None,
            configured_elsewhere: nowhere_else,
            login: Some(Login { file: ".credentials.json", read: claude::login_token, hold: claude::hold_login }),
        })),
        parser: Some(|| Box::<claude::ClaudeParser>::default()),
        command: Some(claude::command),
        interactive: Some(claude::interactive),
        transcripts: Transcripts::Files(claude::TRANSCRIPTS),
        reports: Reports::TokensAndCost,
        doctor: Doctor { key_vars: &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"], login_files: &[".credentials.json"], model_host: "api.anthropic.com" },
        init_key: Some("ANTHROPIC_API_KEY"),
        ..ADAPTER
    },
    AgentSpec {
        kind: AgentKind::Codex,
        name: "codex",
        binary: Some("codex"),
        npm_package: Some("@openai/codex"),
        effort: true,
        state_dirs: &[dir("CODEX_HOME", ".codex", "", &["auth.json", "config.toml", "AGENTS.md", "prompts"])],
        login: "log in once with `codex login`, or give it a key: `agent.env = { OPENAI_API_KEY = \"${OPENAI_API_KEY}\" }`",
        parser: Some(|| Box::new(codex::CodexParser)),
        command: Some(codex::command),
        interactive: Some(codex::interactive),
        transcripts: Transcripts::Files(codex::TRANSCRIPTS),
        reports: Reports::Tokens,
        // The built-in OpenAI provider, whose base URL is its `openai_base_url` setting. A
        // provider of the person's own in `config.toml` names its own key variable, which eden
        // does not hold yet.
        credentials: Ok(Fronting::Env(Credentials {
            keys: &[("CODEX_API_KEY", CredentialHeader::Bearer), ("OPENAI_API_KEY", CredentialHeader::Bearer)],
            base_url: "OPENAI_BASE_URL",
            default_upstream: Some("https://api.openai.com/v1"),
            base_url_arg: Some(("-c", "openai_base_url=\"{url}\"")),
            configured_elsewhere: codex::configured_provider,
            login: None,
        })),
        doctor: Doctor { key_vars: &["CODEX_API_KEY", "OPENAI_API_KEY"], login_files: &["auth.json"], model_host: "api.openai.com" },
        init_key: Some("OPENAI_API_KEY"),
        ..ADAPTER
    },
    AgentSpec {
        kind: AgentKind::Opencode,
        name: "opencode",
        binary: Some("opencode"),
        npm_package: Some("opencode-ai"),
        prompt_on_argv: true,
        effort: true,
        state_dirs: &[
            dir("XDG_DATA_HOME", ".local/share", "opencode", &["auth.json"]),
            dir(
                "XDG_CONFIG_HOME",
                ".config",
                "opencode",
                &["opencode.json", "opencode.jsonc", "config.json", "AGENTS.md", "agent", "command"],
            ),
        ],
        login: "log in once with `opencode auth login`, or give it its provider's key in `agent.env` (e.g. `ANTHROPIC_API_KEY`)",
        parser: Some(|| Box::<opencode::OpencodeParser>::default()),
        command: Some(opencode::command),
        interactive: Some(opencode::interactive),
        transcripts: Transcripts::Export(&["export"]),
        reports: Reports::TokensAndCost,
        // Its provider is the model's (`provider/model`); its base URL is in its configuration,
        // which `OPENCODE_CONFIG_CONTENT` overrides.
        credentials: Ok(Fronting::Config(opencode::front)),
        doctor: Doctor { key_vars: &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENCODE_API_KEY"], login_files: &["auth.json"], model_host: "opencode.ai" },
        ..ADAPTER
    },
    AgentSpec {
        kind: AgentKind::Pi,
        name: "pi",
        binary: Some("pi"),
        npm_package: Some("@mariozechner/pi-coding-agent"),
        prompt_on_argv: true,
        state_dirs: &[dir(
            "PI_CODING_AGENT_DIR",
            ".pi/agent",
            "",
            &["auth.json", "settings.json", "models.json", "AGENTS.md", "prompts"],
        )],
        login: "log in once with `pi` (then `/login`), or give it its provider's key in `agent.env` (e.g. `ANTHROPIC_API_KEY`)",
        parser: Some(|| Box::new(pi::PiParser)),
        command: Some(pi::command),
        interactive: Some(pi::interactive),
        transcripts: Transcripts::Files(pi::TRANSCRIPTS),
        reports: Reports::TokensAndCost,
        // Its provider is the model's (`provider/model`); its base URL is in `models.json`.
        credentials: Ok(Fronting::Config(pi::front)),
        doctor: Doctor { key_vars: &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"], login_files: &["auth.json"], model_host: "api.anthropic.com" },
        ..ADAPTER
    },
    AgentSpec {
        kind: AgentKind::Cursor,
        name: "cursor",
        binary: Some("agent"),
        prompt_on_argv: true,
        login: "log in once with `agent login`, or give it a key: `agent.env = { CURSOR_API_KEY = \"${CURSOR_API_KEY}\" }`",
        parser: Some(|| Box::new(cursor::CursorParser)),
        command: Some(cursor::command),
        interactive: Some(cursor::interactive),
        doctor: Doctor { key_vars: &["CURSOR_API_KEY"], login_files: &[], model_host: "api2.cursor.sh" },
        ..ADAPTER
    },
    AgentSpec {
        kind: AgentKind::Copilot,
        name: "copilot",
        binary: Some("copilot"),
        npm_package: Some("@github/copilot"),
        prompt_on_argv: true,
        state_dirs: &[dir("COPILOT_HOME", ".copilot", "", &["config.json", "mcp-config.json"])],
        login: "log in once with `copilot` (then `/login`), or give it a token: `agent.env = { COPILOT_GITHUB_TOKEN = \"${GH_TOKEN}\" }`",
        parser: Some(|| Box::new(copilot::CopilotParser)),
        command: Some(copilot::command),
        interactive: Some(copilot::interactive),
        transcripts: Transcripts::Files(copilot::TRANSCRIPTS),
        // Its own provider (`COPILOT_PROVIDER_BASE_URL`, `COPILOT_PROVIDER_TYPE`); without one
        // it talks to GitHub with its login.
        credentials: Ok(Fronting::Env(Credentials {
            keys: &[("COPILOT_PROVIDER_API_KEY", CredentialHeader::Either)],
            base_url: "COPILOT_PROVIDER_BASE_URL",
            default_upstream: None,
            base_url_arg: None,
            configured_elsewhere: nowhere_else,
            login: None,
        })),
        doctor: Doctor { key_vars: &["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_PROVIDER_API_KEY"], login_files: &["config.json"], model_host: "api.githubcopilot.com" },
        ..ADAPTER
    },
    AgentSpec { kind: AgentKind::Cli, name: "cli", resume: false, ..ADAPTER },
    AgentSpec { kind: AgentKind::Simulated, name: "simulated", resume: false, ..ADAPTER },
];

impl AgentKind {
    /// The agent eden sets up when none is named (`eden init`, `eden image build`).
    pub(crate) const DEFAULT: AgentKind = AgentKind::ClaudeCode;

    pub(crate) fn family(self) -> Family {
        match self {
            AgentKind::Cli => Family::Cli,
            AgentKind::Simulated => Family::Simulated,
            _ => Family::Adapter,
        }
    }

    pub(crate) fn spec(self) -> &'static AgentSpec {
        SPECS.iter().find(|spec| spec.kind == self).expect("every kind has a spec")
    }

    pub(crate) fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// Every kind's name, in the order the manifest documents them.
    pub(crate) fn names() -> Vec<&'static str> {
        SPECS.iter().map(|spec| spec.name).collect()
    }

    /// The kinds `eden image build` can install from npm.
    pub(crate) fn npm_names() -> Vec<&'static str> {
        SPECS.iter().filter(|spec| spec.npm_package.is_some()).map(|spec| spec.name).collect()
    }

    /// The kind the manifest calls `name`.
    pub(crate) fn from_name(name: &str) -> Option<AgentKind> {
        SPECS.iter().find(|spec| spec.name == name).map(|spec| spec.kind)
    }

    /// How to get its CLI, for error hints.
    pub(crate) fn install_hint(self) -> String {
        match self.spec().npm_package {
            Some(package) => format!("install it with `npm install -g {package}`"),
            None => format!("install {}'s CLI (it is not on npm), or set `agent.binary`", self.as_str()),
        }
    }
}

/// What reads a `cli` agent's output (`agent.parser`): plain lines, or an adapter's parser
/// (named like the adapter; `claude-stream-json` is accepted for `claude-code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParserKind {
    Lines,
    Of(AgentKind),
}

impl ParserKind {
    pub(crate) fn named(name: &str) -> Option<ParserKind> {
        match name {
            "lines" => Some(ParserKind::Lines),
            "claude-stream-json" => Some(ParserKind::Of(AgentKind::ClaudeCode)),
            _ => SPECS
                .iter()
                .find(|spec| spec.name == name && spec.parser.is_some())
                .map(|spec| ParserKind::Of(spec.kind)),
        }
    }

    /// Every name `agent.parser` accepts (but the alias).
    pub(crate) fn names() -> impl Iterator<Item = &'static str> {
        std::iter::once("lines").chain(SPECS.iter().filter(|spec| spec.parser.is_some()).map(|spec| spec.name))
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ParserKind::Lines => "lines",
            ParserKind::Of(kind) => kind.as_str(),
        }
    }

    pub(crate) fn parser(self) -> Box<dyn Parser> {
        match self {
            ParserKind::Lines => Box::new(LinesParser),
            ParserKind::Of(kind) => (kind.spec().parser.expect("a parser kind names an adapter with a parser"))(),
        }
    }

    /// What the output says, as this parser reads it.
    pub(crate) fn reports(self) -> Reports {
        match self {
            ParserKind::Lines => Reports::Nothing,
            ParserKind::Of(kind) => kind.spec().reports,
        }
    }
}

impl serde::Serialize for ParserKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers_are_named_like_their_adapters() {
        for name in ParserKind::names() {
            assert_eq!(ParserKind::named(name).map(ParserKind::as_str), Some(name));
        }
        assert_eq!(ParserKind::named("claude-stream-json"), Some(ParserKind::Of(AgentKind::ClaudeCode)));
        assert_eq!(ParserKind::named("simulated"), None, "no parser of its own");
        assert_eq!(ParserKind::named("json"), None);
    }

    /// An agent CLI's row holds all of it: how to start it for a run and for its own UI, how to
    /// read it, and a state folder wherever its transcripts are files.
    #[test]
    fn every_adapters_row_is_whole() {
        for spec in SPECS.iter().filter(|spec| spec.binary.is_some()) {
            assert_eq!(spec.kind.family(), Family::Adapter, "{}", spec.name);
            assert!(spec.command.is_some() && spec.parser.is_some() && spec.interactive.is_some(), "{}", spec.name);
            if matches!(spec.transcripts, Transcripts::Files(_)) {
                assert!(!spec.state_dirs.is_empty(), "{}: its transcripts are in its state folder", spec.name);
            }
        }
        for spec in SPECS.iter().filter(|spec| spec.binary.is_none()) {
            assert_ne!(spec.kind.family(), Family::Adapter, "{}", spec.name);
            assert!(spec.command.is_none() && spec.interactive.is_none(), "{}", spec.name);
        }
    }

    #[test]
    fn names_round_trip_through_serde() {
        for spec in &SPECS {
            let name = serde_json::to_value(spec.kind).unwrap();
            assert_eq!(name, spec.name);
            assert_eq!(serde_json::from_value::<AgentKind>(name).unwrap(), spec.kind);
        }
    }
}
