//! Which provider keys eden holds for a step's agent (`sandbox.hold_keys`, default on where it
//! can work): the agent gets a placeholder and a base URL at eden's proxy (`proxy`), never the
//! key. Decided from the plan alone, so `--dry-run` and the record say the same as the run.

use super::load::{KeyPath, Source};
use super::sandbox_plan::SandboxPlan;
use crate::agent::credentials::{
    ConfigFile, ConfigFront, CredentialHeader, Credentials, FrontQuery, Fronting, Login, NotHeld,
};
use crate::agent::AgentPlan;
use crate::error::Error;
use crate::redact::Secret;
use serde::Serialize;
use std::collections::BTreeMap;

/// What eden holds for one step's agent, or why it holds nothing.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "held", rename_all = "snake_case")]
pub(crate) enum Held {
    /// The keys below reach the agent as placeholders; its base URL variable points at the proxy.
    Keys {
        /// Where held requests go (the base URL the person set, or the provider's API).
        upstream: String,
        /// The variable that points the agent at the proxy (`ANTHROPIC_BASE_URL`).
        #[serde(skip_serializing_if = "Option::is_none")]
        base_url_var: Option<&'static str>,
        /// For an agent that takes its base URL as an option: the option and its value.
        #[serde(skip)]
        base_url_arg: Option<(&'static str, &'static str)>,
        /// For an agent whose base URL is in its configuration: what eden gives it instead.
        #[serde(skip_serializing_if = "Option::is_none")]
        config: Option<ConfigFile>,
        /// A login held rather than a key: the file in the agent's private state folder whose
        /// token the placeholder replaces.
        #[serde(skip_serializing_if = "Option::is_none")]
        login: Option<HeldLogin>,
        keys: Vec<HeldKeyPlan>,
        /// `sandbox.hold_keys = true`: where it cannot work, that is an error, not a note.
        #[serde(skip)]
        asked: bool,
    },
    /// Nothing held, and why.
    Nothing { why: String },
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct HeldLogin {
    /// The variable that points the agent at its state folder.
    pub(crate) var: &'static str,
    pub(crate) file: &'static str,
    /// Puts the placeholder in the private copy of `file` (the folder, the placeholder).
    #[serde(skip)]
    pub(crate) hold: fn(&std::path::Path, &str) -> std::io::Result<()>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct HeldKeyPlan {
    pub(crate) var: String,
    pub(crate) header: CredentialHeader,
    #[serde(skip)]
    pub(crate) value: Secret,
}

/// Where a step's agent runs: what `resolve` needs besides the agent and the setting.
pub(super) struct Surroundings<'a> {
    pub(crate) sandbox: &'a SandboxPlan,
    /// `[sandbox] env`.
    pub(crate) sandbox_env: &'a BTreeMap<String, Secret>,
    /// `.eden/.env`.
    pub(crate) dotenv: &'a BTreeMap<String, Secret>,
    pub(crate) source: &'a Source,
    /// eden's own environment.
    pub(crate) host_env: &'a dyn Fn(&str) -> Option<String>,
    /// The repository's working tree, for an agent's project configuration.
    pub(crate) project: Option<&'a std::path::Path>,
}

/// What `sandbox.hold_keys` (`setting`) means for a step's `agent`, its environment as the
/// agent would get it (its own `env`, then `[sandbox] env`, then `.eden/.env`).
pub(super) fn resolve(agent: &AgentPlan, setting: Option<bool>, around: &Surroundings<'_>) -> Result<Held, Error> {
    let Surroundings { sandbox, sandbox_env, dotenv, source, host_env, project } = *around;
    let at = KeyPath::parse("sandbox.hold_keys");
    let nothing = |why: String| -> Result<Held, Error> {
        match setting {
            Some(true) => Err(source
                .error_at(&at, format!("eden cannot hold the agent's keys here: {why}"))
                .with_hint("remove `sandbox.hold_keys` (or set it to false) to hand the agent its keys as before")),
            _ => Ok(Held::Nothing { why }),
        }
    };
    if setting == Some(false) {
        return Ok(Held::Nothing { why: "turned off (`sandbox.hold_keys = false`)".into() });
    }
    if matches!(sandbox, SandboxPlan::None) {
        return nothing("there is no sandbox: the agent runs as you, with your environment".into());
    }
    let AgentPlan::Adapter(settings) = agent else {
        return nothing(format!("a `{}` agent's provider is unknown to eden", agent.kind().as_str()));
    };
    let spec = settings.kind.spec();
    let fronting = match spec.credentials {
        Ok(fronting) => fronting,
        Err(why) => return nothing(format!("{}: {why}", spec.name)),
    };
    let value = |key: &str| {
        settings.env.get(key).or_else(|| sandbox_env.get(key)).or_else(|| dotenv.get(key)).map(|v| v.0.clone())
    };
    let env = |key: &str| value(key).or_else(|| host_env(key));
    // The person's folders of the agent, where its configuration and login are.
    let folders: Vec<std::path::PathBuf> = spec.state_dirs.iter().map(|dir| dir.folder(&env)).collect();
    let front = match fronting {
        Fronting::Env(credentials) => env_front(&credentials, &value, folders.first()),
        Fronting::Config(choose) => {
            let query = FrontQuery {
                model: settings.model.as_deref(),
                extra_args: &settings.extra_args,
                env: &env,
                folders: &folders,
                project,
            };
            config_front(choose(&query), sandbox)
        }
    };
    let front = match front {
        Ok(front) => front,
        Err(why) => return nothing(format!("{}: {why}", spec.name)),
    };
    let keys: Vec<HeldKeyPlan> = front
        .keys
        .iter()
        .filter_map(|(var, header)| {
            let value = value(var).filter(|value| !value.is_empty())?;
            Some(HeldKeyPlan { var: var.clone(), header: *header, value: Secret(value) })
        })
        .collect();
    let mut keys = keys;
    let mut login = None;
    if keys.is_empty() {
        let state = spec.state_dirs.first().map(|dir| (dir.var, folders.first()));
        match held_login(&front, state, sandbox) {
            Ok((key, held)) => {
                keys.push(key);
                login = Some(held);
            }
            Err(LoginNotHeld::Why(why)) => return nothing(why),
            Err(LoginNotHeld::Unreadable(why)) => return nothing(format!("{}: {why}", spec.name)),
        }
    }
    keys_held(front, keys, login, setting == Some(true), source)
}

/// The keys held, going to the provider `front` names (an http(s) base URL, else the place
/// that gave it is refused).
fn keys_held(
    front: Front,
    keys: Vec<HeldKeyPlan>,
    login: Option<HeldLogin>,
    asked: bool,
    source: &Source,
) -> Result<Held, Error> {
    let Some(upstream) = crate::values::BaseUrl::parse(&front.upstream) else {
        return Err(source
            .error_at(
                &KeyPath::parse("agent.env"),
                format!("{} is `{}`, not an http(s) URL", front.named, front.upstream),
            )
            .with_hint("give the provider's base URL, e.g. `https://api.anthropic.com`"));
    };
    Ok(Held::Keys {
        upstream: upstream.url(),
        base_url_var: front.base_url_var,
        base_url_arg: front.base_url_arg,
        config: front.config,
        login,
        keys,
        asked,
    })
}

/// Why a login is not held: said as it is, or a file that could not be read (said after the
/// agent's name).
enum LoginNotHeld {
    Why(String),
    Unreadable(NotHeld),
}

/// With no key in the agent's environment: its own login, held when the agent can have one
/// (`front.login`), has one in its folder (`state`: its variable and the person's folder), and
/// the sandbox has a private copy of that folder for eden to put the placeholder in.
fn held_login(
    front: &Front,
    state: Option<(&'static str, Option<&std::path::PathBuf>)>,
    sandbox: &SandboxPlan,
) -> Result<(HeldKeyPlan, HeldLogin), LoginNotHeld> {
    let vars: Vec<&str> = front.keys.iter().map(|(var, _)| var.as_str()).collect();
    let no_key = format!("no key in the agent's environment ({})", vars.join(", "));
    let Some(can) = &front.login else {
        return Err(LoginNotHeld::Why(format!("{no_key}; its own login, if it has one, is not held")));
    };
    let (state_var, folder) = state.unwrap_or(("", None));
    let private = sandbox.agent_state().is_some_and(|states| states.iter().any(|state| state.var == state_var));
    match folder.map_or(Ok(None), |folder| (can.read)(folder)) {
        Ok(Some(token)) if private => Ok((
            HeldKeyPlan { var: can.file.into(), header: CredentialHeader::Bearer, value: Secret(token) },
            HeldLogin { var: state_var, file: can.file, hold: can.hold },
        )),
        Ok(Some(_)) => Err(LoginNotHeld::Why(format!("{no_key}, and its login is not given to the sandbox"))),
        Ok(None) => Err(LoginNotHeld::Why(format!("{no_key}, and no login of its own in its `{}`", can.file))),
        Err(why) => Err(LoginNotHeld::Unreadable(why)),
    }
}

/// A provider eden can front: the variables that may hold its key, where its requests go, and
/// how the agent is pointed at the relay instead.
struct Front {
    keys: Vec<(String, CredentialHeader)>,
    upstream: String,
    /// What set `upstream`, for an error about it.
    named: String,
    base_url_var: Option<&'static str>,
    base_url_arg: Option<(&'static str, &'static str)>,
    config: Option<ConfigFile>,
    login: Option<Login>,
}

/// An agent whose provider is all in its environment (`Fronting::Env`).
fn env_front(
    credentials: &Credentials,
    value: &dyn Fn(&str) -> Option<String>,
    folder: Option<&std::path::PathBuf>,
) -> Result<Front, NotHeld> {
    if let Some(why) = folder.and_then(|folder| (credentials.configured_elsewhere)(folder)) {
        return Err(NotHeld(why));
    }
    let keys = credentials.keys.iter().map(|(var, header)| ((*var).to_owned(), *header)).collect();
    let Some(upstream) = value(credentials.base_url).or(credentials.default_upstream.map(str::to_owned)) else {
        return Err(NotHeld(format!(
            "it has no `{}`: it talks to its own service with its own login",
            credentials.base_url
        )));
    };
    Ok(Front {
        keys,
        upstream,
        named: format!("`{}`", credentials.base_url),
        base_url_var: Some(credentials.base_url),
        base_url_arg: credentials.base_url_arg,
        config: None,
        login: credentials.login,
    })
}

/// An agent whose provider is in its own configuration (`Fronting::Config`), which eden
/// rewrites in the run's private copy of its folder.
fn config_front(front: Result<ConfigFront, NotHeld>, sandbox: &SandboxPlan) -> Result<Front, NotHeld> {
    let front = front?;
    if let Some(file) = front.config.file {
        let private =
            sandbox.agent_state().is_some_and(|states| states.iter().any(|state| state.var == front.config.var));
        if !private {
            return Err(NotHeld(format!(
                "its `{file}` is not eden's to write with `sandbox.mount_agent_config = false`"
            )));
        }
    }
    Ok(Front {
        keys: front.key_vars.into_iter().map(|var| (var, front.header)).collect(),
        named: "the base URL in its configuration".into(),
        upstream: front.upstream,
        base_url_var: None,
        base_url_arg: None,
        config: Some(front.config),
        login: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first step's `held`, resolved from `text` with `ANTHROPIC_API_KEY` in eden's environment.
    fn held(text: &str) -> Result<Held, String> {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        let env = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| "sk-ant-unit".to_owned());
        let plan = super::super::plan::resolve(manifest, &source, &env, &Default::default(), None)
            .map_err(|err| err.message)?;
        Ok(plan.steps[0].held.clone())
    }

    const CLAUDE: &str = "prompt = \"p\"\n[agent]\nkind = \"claude-code\"\nbinary = \"/bin/sh\"\nenv = { ANTHROPIC_API_KEY = \"${ANTHROPIC_API_KEY}\" }\n";

    #[test]
    fn keys_are_held_where_a_sandbox_can_be_given_a_placeholder() {
        let Ok(Held::Keys { keys, upstream, base_url_var, .. }) =
            held(&format!("{CLAUDE}[sandbox]\nkind = \"isolated\"\n"))
        else {
            panic!("held in isolated")
        };
        assert_eq!((keys[0].var.as_str(), keys[0].value.0.as_str()), ("ANTHROPIC_API_KEY", "sk-ant-unit"));
        assert_eq!((upstream.as_str(), base_url_var), ("https://api.anthropic.com", Some("ANTHROPIC_BASE_URL")));
        let Ok(Held::Nothing { why }) = held(CLAUDE) else { panic!("nothing without a sandbox") };
        assert!(why.contains("there is no sandbox"), "{why}");
        let off = format!("{CLAUDE}[sandbox]\nkind = \"isolated\"\nhold_keys = false\n");
        assert!(matches!(held(&off), Ok(Held::Nothing { why }) if why.contains("turned off")));
        let cli = "prompt = \"p\"\n[agent]\nkind = \"cli\"\nbinary = \"/bin/sh\"\n[sandbox]\nkind = \"isolated\"\nhold_keys = true\n";
        assert!(held(cli).unwrap_err().contains("eden cannot hold the agent's keys here"));
    }
}
