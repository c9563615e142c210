//! The agent's command as eden runs it, for an iteration and for `eden interactive` alike: the
//! command line its spec row builds, with the run's environment under the agent's own `env`,
//! git kept from background work, the sandbox's private state folders, the iteration's trace
//! context and held keys' placeholders behind their relay.

use crate::error::Error;
use crate::manifest::plan::{Plan, StepPlan};
use crate::process::ProcessBuilder;
use crate::proxy::held::Holder;
use crate::sandbox::SandboxHandle;
use crate::trace::AgentSpan;

/// Where the agent runs: what its command gets on top of its own.
pub(super) struct Around<'a> {
    pub(super) plan: &'a Plan,
    pub(super) sandbox: &'a dyn SandboxHandle,
    pub(super) holder: Option<&'a Holder>,
    pub(super) run_id: &'a str,
    pub(super) step: &'a StepPlan,
    /// The span the agent's own spans join, when the run's traces are exported.
    pub(super) traced: Option<AgentSpan<'a>>,
}

/// `agent` (the command line its spec row built) as eden runs it, before the sandbox prepares
/// it.
pub(super) fn around(agent: ProcessBuilder, at: &Around<'_>) -> Result<ProcessBuilder, Error> {
    let mut command = agent;
    // Under the agent's own `env`: `[sandbox] env`, then `.eden/.env` (the forge's token is
    // never in either: the plan keeps it out).
    for (key, value) in at.plan.env.sandbox.iter().chain(&at.plan.env.dotenv) {
        command = command.env_default(key, &value.0);
    }
    // The forge's token is eden's: an agent on this machine does not inherit it either.
    if let Some(token) = at.plan.forge.as_ref().map(|forge| forge.token.0.as_str()) {
        let set: Vec<std::ffi::OsString> =
            command.get_env().iter().filter(|(_, value)| value.is_some()).map(|(key, _)| key.clone()).collect();
        for (key, value) in std::env::vars_os() {
            if value == token && !set.contains(&key) {
                command = command.env_remove(key);
            }
        }
    }
    let mut command = crate::git::with_config(command, &crate::git::NO_BACKGROUND_WORK);
    // In a sandbox the agent's state is the run's private folder, and its transcripts are
    // looked for there.
    for (key, value) in at.sandbox.state_env() {
        command = command.env(key, value);
    }
    // Traces exported: the agent's own spans join its iteration's (W3C trace context).
    if let Some(span) = at.traced {
        command = command.env("TRACEPARENT", crate::trace::agent_traceparent(at.run_id, span));
    }
    // Held keys: placeholders, and the relay in front that points the agent at the proxy.
    if let Some(holder) = at.holder {
        let eden =
            std::env::current_exe().map_err(|err| Error::internal("cannot find eden's executable").with_source(err))?;
        command = holder.wrap(&at.step.held, command, &eden);
    }
    Ok(command)
}
