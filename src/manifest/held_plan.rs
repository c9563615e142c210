//! Which provider keys eden holds for a step's agent (`sandbox.hold_keys`, default on where it
//! can work): the agent gets a placeholder and a base URL at eden's proxy (`proxy`), never the
//! key. Decided from the plan alone, so `--dry-run` and the record say the same as the run.

use super::load::{KeyPath, Source};
use super::sandbox_plan::SandboxPlan;
use crate::agent::spec::CredentialHeader;
use crate::agent::AgentPlan;
use crate::error::Error;
use crate::redact::Secret;
use serde::Serialize;
use std::collections::BTreeMap;

/// What eden holds for one step's agent, or why it holds nothing.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "held", rename_all = "snake_case")]
pub enum Held {
    /// The keys below reach the agent as placeholders; its base URL variable points at the proxy.
    Keys {
        /// Where held requests go (the base URL the person set, or the provider's API).
        upstream: String,
        /// The variable that points the agent at the proxy (`ANTHROPIC_BASE_URL`).
        base_url_var: &'static str,
        /// For an agent that takes its base URL as an option: the option and its value.
        #[serde(skip)]
        base_url_arg: Option<(&'static str, &'static str)>,
        keys: Vec<HeldKeyPlan>,
        /// `sandbox.hold_keys = true`: where it cannot work, that is an error, not a note.
        #[serde(skip)]
        asked: bool,
    },
    /// Nothing held, and why.
    Nothing { why: String },
}

#[derive(Debug, Clone, Serialize)]
pub struct HeldKeyPlan {
    pub var: String,
    pub header: CredentialHeader,
    #[serde(skip)]
    pub value: Secret,
}

/// What `sandbox.hold_keys` (`setting`) means for a step's `agent` in `sandbox`, its
/// environment as the agent would get it (its own `env`, then `[sandbox] env`, then `.eden/.env`).
pub(super) fn resolve(
    agent: &AgentPlan,
    sandbox: &SandboxPlan,
    sandbox_env: &BTreeMap<String, Secret>,
    dotenv: &BTreeMap<String, Secret>,
    setting: Option<bool>,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<Held, Error> {
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
    match sandbox {
        SandboxPlan::None => {
            return nothing("there is no sandbox: the agent runs as you, with your environment".into())
        }
        SandboxPlan::Kubernetes(_) => {
            return nothing("not for a pod yet: the proxy's socket cannot be handed to one".into());
        }
        _ => {}
    }
    let AgentPlan::Adapter(settings) = agent else {
        return nothing(format!("a `{}` agent's provider is unknown to eden", agent.kind().as_str()));
    };
    let spec = settings.kind.spec();
    let credentials = match spec.credentials {
        Ok(credentials) => credentials,
        Err(why) => return nothing(format!("{}: {why}", spec.name)),
    };
    let value = |key: &str| {
        settings.env.get(key).or_else(|| sandbox_env.get(key)).or_else(|| dotenv.get(key)).map(|v| v.0.clone())
    };
    let keys: Vec<HeldKeyPlan> = credentials
        .keys
        .iter()
        .filter_map(|(var, header)| {
            let value = value(var).filter(|value| !value.is_empty())?;
            Some(HeldKeyPlan { var: (*var).to_owned(), header: *header, value: Secret(value) })
        })
        .collect();
    let env = |key: &str| value(key).or_else(|| host_env(key));
    if let Some(why) = (credentials.configured_elsewhere)(&env) {
        return nothing(format!("{}: {why}", spec.name));
    }
    if keys.is_empty() {
        let vars: Vec<&str> = credentials.keys.iter().map(|(var, _)| *var).collect();
        return nothing(format!(
            "no key in the agent's environment ({}); its own login, if it has one, is not held",
            vars.join(", ")
        ));
    }
    let Some(base) = value(credentials.base_url).or(credentials.default_upstream.map(str::to_owned)) else {
        return nothing(format!(
            "{} has no `{}`: it talks to its own service with its own login",
            spec.name, credentials.base_url
        ));
    };
    let Some(upstream) = crate::values::BaseUrl::parse(&base) else {
        return Err(source
            .error_at(
                &KeyPath::parse("agent.env"),
                format!("`{}` is `{base}`, not an http(s) URL", credentials.base_url),
            )
            .with_hint("give the provider's base URL, e.g. `https://api.anthropic.com`"));
    };
    Ok(Held::Keys {
        upstream: upstream.url(),
        base_url_var: credentials.base_url,
        base_url_arg: credentials.base_url_arg,
        keys,
        asked: setting == Some(true),
    })
}
