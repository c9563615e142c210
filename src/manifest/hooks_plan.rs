//! `[hooks.host]` and `[hooks.sandbox]` resolved: every hook as a command with its working
//! directory, environment (with `${VAR}` expanded) and timeout.

use super::env_plan::resolve_env;
use super::load::{KeyPath, Source};
use super::schema::{Hook, HookPhases, HooksSection};
use crate::error::Error;
use crate::redact::Secret;
use crate::values::Duration;
use serde::Serialize;
use std::collections::BTreeMap;

/// The five moments of a run at which hooks run, in the order they come, named as the manifest
/// names them (hence the shared prefix).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Phase {
    OnWorktreeReady,
    OnSandboxReady,
    OnIterationStart,
    OnIterationEnd,
    OnClose,
}

impl Phase {
    pub(crate) const ALL: [Phase; 5] =
        [Phase::OnWorktreeReady, Phase::OnSandboxReady, Phase::OnIterationStart, Phase::OnIterationEnd, Phase::OnClose];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Phase::OnWorktreeReady => "on_worktree_ready",
            Phase::OnSandboxReady => "on_sandbox_ready",
            Phase::OnIterationStart => "on_iteration_start",
            Phase::OnIterationEnd => "on_iteration_end",
            Phase::OnClose => "on_close",
        }
    }
}

/// Where a hook runs: on the host in the worktree, or in the sandbox (the host for `none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Side {
    Host,
    Sandbox,
}

impl Side {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Side::Host => "host",
            Side::Sandbox => "sandbox",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct HookPlan {
    pub(crate) cmd: String,
    /// Relative to the worktree unless absolute.
    pub(crate) cwd: Option<String>,
    pub(crate) env: BTreeMap<String, Secret>,
    pub(crate) timeout: Duration,
}

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct HooksPlan {
    pub(crate) host: BTreeMap<&'static str, Vec<HookPlan>>,
    pub(crate) sandbox: BTreeMap<&'static str, Vec<HookPlan>>,
    /// `hooks.host.reads`: what the host hooks read besides what eden finds itself.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) host_reads: Vec<String>,
}

impl HooksPlan {
    pub(crate) fn get(&self, side: Side, phase: Phase) -> &[HookPlan] {
        let map = match side {
            Side::Host => &self.host,
            Side::Sandbox => &self.sandbox,
        };
        map.get(phase.as_str()).map_or(&[], Vec::as_slice)
    }
}

pub(super) fn resolve_hooks(
    section: &HooksSection,
    default_timeout: Duration,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<HooksPlan, Error> {
    let mut plan = HooksPlan::default();
    if !section.sandbox.reads.is_empty() {
        return Err(source
            .error_at_key(&KeyPath::parse("hooks.sandbox.reads"), "`reads` names what hooks on this machine read")
            .with_hint("move it to `[hooks.host]`: what sandbox hooks read stays in the sandbox"));
    }
    for (index, glob) in section.host.reads.iter().enumerate() {
        let bad = glob.trim().is_empty() || glob.starts_with('/') || glob.split('/').any(|part| part == "..");
        if bad {
            return Err(source
                .error_at(
                    &KeyPath::parse("hooks.host.reads").index(index),
                    format!("`{glob}` is not a path in the repository"),
                )
                .with_hint("give a path or glob relative to the repository's top, such as `scripts/lib/*.sh`"));
        }
    }
    plan.host_reads = section.host.reads.clone();
    for (side, phases) in [(Side::Host, &section.host), (Side::Sandbox, &section.sandbox)] {
        for phase in Phase::ALL {
            let hooks = hooks_of(phases, phase);
            if hooks.is_empty() {
                continue;
            }
            let path = KeyPath::parse("hooks").child(side.as_str()).child(phase.as_str());
            if side == Side::Sandbox && phase == Phase::OnWorktreeReady {
                return Err(source
                    .error_at_key(&path, "`on_worktree_ready` runs before the sandbox exists")
                    .with_hint(
                        "move these hooks to `[hooks.host]`, or to `on_sandbox_ready` to run them in the sandbox",
                    ));
            }
            let mut resolved = Vec::with_capacity(hooks.len());
            for (index, hook) in hooks.iter().enumerate() {
                resolved.push(resolve_hook(hook, &path.index(index), default_timeout, source, host_env)?);
            }
            match side {
                Side::Host => plan.host.insert(phase.as_str(), resolved),
                Side::Sandbox => plan.sandbox.insert(phase.as_str(), resolved),
            };
        }
    }
    Ok(plan)
}

pub(super) fn hooks_of(phases: &HookPhases, phase: Phase) -> &[Hook] {
    match phase {
        Phase::OnWorktreeReady => &phases.on_worktree_ready,
        Phase::OnSandboxReady => &phases.on_sandbox_ready,
        Phase::OnIterationStart => &phases.on_iteration_start,
        Phase::OnIterationEnd => &phases.on_iteration_end,
        Phase::OnClose => &phases.on_close,
    }
}

fn resolve_hook(
    hook: &Hook,
    path: &KeyPath,
    default_timeout: Duration,
    source: &Source,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<HookPlan, Error> {
    let (cmd, cwd, env, timeout) = match hook {
        Hook::Command(cmd) => (cmd, None, BTreeMap::new(), None),
        Hook::Detailed(hook) => (&hook.cmd, hook.cwd.clone(), hook.env.clone(), hook.timeout),
    };
    let cmd_path = if matches!(hook, Hook::Detailed(_)) { path.child("cmd") } else { path.clone() };
    if cmd.trim().is_empty() {
        return Err(source.error_at(&cmd_path, "the hook's command is empty").with_hint("give a shell command to run"));
    }
    if cwd.as_deref().is_some_and(|cwd| cwd.trim().is_empty()) {
        return Err(source
            .error_at(&path.child("cwd"), "the hook's `cwd` is empty")
            .with_hint("leave `cwd` out to run in the worktree, or give a folder relative to it"));
    }
    let env = resolve_env(&env, &path.child("env"), source, host_env)?;
    Ok(HookPlan { cmd: cmd.clone(), cwd, env, timeout: timeout.unwrap_or(default_timeout) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<HooksPlan, String> {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        resolve_hooks(&manifest.hooks, Duration::from_secs(60), &source, env).map_err(|err| err.message)
    }

    #[test]
    fn hooks_by_side_and_phase() {
        let none = |_: &str| None;
        let plan = hooks("[hooks.host]\non_worktree_ready = [\"make deps\"]\n", &none).unwrap();
        let ready = plan.get(Side::Host, Phase::OnWorktreeReady);
        assert_eq!((ready.len(), ready[0].cmd.as_str(), ready[0].timeout.0.as_secs()), (1, "make deps", 60));
        let early = hooks("[hooks.sandbox]\non_worktree_ready = [\"x\"]\n", &none).unwrap_err();
        assert!(early.contains("runs before the sandbox exists"), "{early}");
        let detailed = "[[hooks.host.on_close]]\ncmd = \"notify\"\ntimeout = \"5s\"\nenv = { TOKEN = \"${TOKEN}\" }\n";
        let plan = hooks(detailed, &|name| (name == "TOKEN").then(|| "t".to_owned())).unwrap();
        let closing = &plan.get(Side::Host, Phase::OnClose)[0];
        assert_eq!((closing.timeout.0.as_secs(), closing.env["TOKEN"].0.as_str()), (5, "t"));
        assert!(hooks(detailed, &none).unwrap_err().contains("`${TOKEN}`, which is not set"));
    }

    #[test]
    fn reads_are_the_host_hooks_own() {
        let none = |_: &str| None;
        let plan = hooks(
            "[hooks.host]
on_close = [\"./x.sh\"]
reads = [\"lib/*.sh\"]
",
            &none,
        )
        .unwrap();
        assert_eq!(plan.host_reads, ["lib/*.sh"]);
        let inside = hooks(
            "[hooks.sandbox]
reads = [\"x\"]
",
            &none,
        )
        .unwrap_err();
        assert!(inside.contains("what hooks on this machine read"), "{inside}");
        let outside = hooks(
            "[hooks.host]
reads = [\"../x\"]
",
            &none,
        )
        .unwrap_err();
        assert!(outside.contains("is not a path in the repository"), "{outside}");
    }
}
