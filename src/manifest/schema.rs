//! The manifest as users write it: every key of the TOML contract, deserialized strictly
//! (unknown keys are errors). Defaults live in `plan.rs`, where the manifest is resolved into
//! the settings a run uses; here a key that was not written is `None`.

use crate::values::{Duration, Size, StringList};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: Option<String>,
    pub prompt: Option<String>,
    pub prompt_file: Option<String>,
    #[serde(default)]
    pub prompt_args: BTreeMap<String, String>,
    #[serde(default)]
    pub agent: AgentSection,
    #[serde(default)]
    pub sandbox: SandboxSection,
    #[serde(default)]
    pub branch: BranchSection,
    #[serde(default, rename = "loop")]
    pub loop_: LoopSection,
    #[serde(default)]
    pub timeouts: TimeoutsSection,
    #[serde(default)]
    pub hooks: HooksSection,
    #[serde(default)]
    pub copy_to_worktree: Vec<String>,
    pub output: Option<OutputSection>,
    #[serde(default)]
    pub logging: LoggingSection,
    #[serde(default)]
    pub step: Vec<StepSection>,
    /// Caps on what the whole run may spend.
    #[serde(default)]
    pub budget: BudgetSection,
    /// Names of environment variables whose values are never shown.
    #[serde(default)]
    pub redact: Vec<String>,
    /// `[[check]]`: commands that must pass before the work merges.
    #[serde(default)]
    pub check: Vec<CheckSection>,
    /// `[[service]]`: containers beside the sandbox (a database, a cache), for the whole run.
    #[serde(default)]
    pub service: Vec<ServiceSection>,
    /// Globs of files in the sandbox's workspace kept after the run, never merged.
    pub artifacts: Option<Vec<String>>,
    /// `attempts = N`: N runs of this manifest at once from the same base; one lands.
    pub attempts: Option<u32>,
    /// How the attempt that lands is chosen.
    pub attempts_pick: Option<AttemptsPick>,
    /// `attempts_pick = "best"`: a command run in each attempt's sandbox that prints a number;
    /// the lowest wins.
    pub attempts_score: Option<String>,
}

/// `attempts_pick`: which attempt lands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AttemptsPick {
    /// The first to finish with its completion signal and every check passing.
    #[default]
    First,
    /// Every attempt finishes; the lowest `attempts_score` of those that pass.
    Best,
}

/// `[[service]]`: a container the agent's code needs, started beside the sandbox before the
/// first iteration and removed with it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSection {
    /// The hostname the agent reaches it by.
    pub name: Option<String>,
    pub image: Option<String>,
    /// The image's command replaced (its entrypoint kept), as `docker run IMAGE COMMAND…`.
    pub command: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    /// A shell command run in the service's container until it succeeds.
    pub ready: Option<String>,
    pub ready_timeout: Option<Duration>,
}

/// `[[check]]`, or a step's `[[step.check]]`: a command run in the sandbox, in the worktree,
/// after the agent signals completion (and after every iteration with `every_iteration`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSection {
    pub name: Option<String>,
    pub cmd: String,
    /// Relative to the worktree.
    pub cwd: Option<String>,
    pub timeout: Option<Duration>,
    pub every_iteration: Option<bool>,
}

pub use crate::agent::{AgentKind, PromptVia};

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSection {
    pub kind: Option<AgentKind>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub extra_args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    /// Session id to resume (agents that support it).
    pub resume: Option<String>,
    // kind = "cli"
    pub binary: Option<String>,
    pub args: Option<Vec<String>>,
    pub prompt_via: Option<PromptVia>,
    pub parser: Option<String>,
    // kind = "simulated"
    pub lines: Option<Vec<String>>,
    pub line_delay: Option<Duration>,
    pub exit_code: Option<i32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxKind {
    None,
    Docker,
    Podman,
    Isolated,
    Kubernetes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// A container's default: the bridge, with every connection to this machine, the bridge's
    /// gateway, private ranges and link-local refused (DNS to the resolver aside).
    Internet,
    /// The engine's bridge as it is: the internet, and this machine through the bridge's gateway.
    Bridge,
    None,
    Host,
    /// Bridge, with every connection refused but to `sandbox.allow` (and DNS to the resolver).
    Allowlist,
}

impl Network {
    pub fn as_str(self) -> &'static str {
        match self {
            Network::Bridge => "bridge",
            Network::None => "none",
            Network::Host => "host",
            Network::Allowlist => "allowlist",
            Network::Internet => "internet",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    pub kind: Option<SandboxKind>,
    pub image: Option<String>,
    pub network: Option<Network>,
    /// `network = "allowlist"`: where the sandbox may connect: `host`, `host:port`, `ip`,
    /// `ip/prefix`, each with an optional `:port`.
    pub allow: Option<Vec<String>>,
    pub cpus: Option<f64>,
    pub memory: Option<Size>,
    pub pids_limit: Option<u32>,
    pub mounts: Option<Vec<Mount>>,
    pub env: Option<BTreeMap<String, String>>,
    pub run_args: Option<Vec<String>>,
    /// Give the sandbox the agent's configuration (a private copy of its login and settings,
    /// and a folder for its transcripts; default true).
    pub mount_agent_config: Option<bool>,
    /// Hold the agent's provider keys outside the sandbox (default: on where it can work): the
    /// agent gets a placeholder and a base URL at eden's proxy, which adds the key on the way out.
    pub hold_keys: Option<bool>,
    /// docker/podman: bind-mount the host worktree into the container instead of giving it a
    /// copy of its own (default false). Faster on a huge repository; the agent then writes the
    /// worktree's files on the host directly. The host's `.git` stays out of its reach.
    pub expose_worktree: Option<bool>,
    /// docker/podman: accept `run_args` and `mounts` that hand the container the host
    /// (`--privileged`, host namespaces, added capabilities, devices, the engine's socket, `/`,
    /// the home folder; default false: refused).
    pub expose_host: Option<bool>,
    /// docker/podman: the engine to run on: an address its client takes (`unix://`, `tcp://`,
    /// `ssh://`) or a docker context / podman connection name; a list spreads several runs of
    /// one invocation over those engines. Unset: the client's own default (`DOCKER_HOST`,
    /// `DOCKER_CONTEXT`, the current context, `CONTAINER_HOST`).
    pub host: Option<HostSetting>,
    /// docker/podman: the OCI runtime the container runs under (`runsc` for gVisor; any runtime
    /// the engine knows, or a path for podman). Unset: the engine's default.
    pub runtime: Option<String>,
    /// The most one iteration may send back from the sandbox (commits, uncommitted work, state),
    /// counted as it streams; default 2 GiB.
    pub max_return: Option<Size>,
    /// kubernetes: the namespace (default: the context's), the kubeconfig context (default:
    /// the current one), the image pull policy (default: the cluster's), the pod's service
    /// account, node selector and tolerations, how long the pod may stay pending
    /// (`start_timeout`) and the deadline after which the cluster ends it whatever happens.
    pub namespace: Option<String>,
    pub context: Option<String>,
    pub image_pull_policy: Option<ImagePullPolicy>,
    pub service_account: Option<String>,
    pub node_selector: Option<BTreeMap<String, String>>,
    pub tolerations: Option<Vec<Toleration>>,
    pub start_timeout: Option<Duration>,
    pub deadline: Option<Duration>,
    /// kubernetes: the pod's `runtimeClassName` (gVisor or Kata through a RuntimeClass).
    pub runtime_class: Option<String>,
}

/// `sandbox.image_pull_policy`, as Kubernetes names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum ImagePullPolicy {
    Always,
    IfNotPresent,
    Never,
}

/// One of `sandbox.tolerations`, as a pod spec has it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Toleration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// `sandbox.host`: one engine, or several.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum HostSetting {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Mount {
    pub host: String,
    pub sandbox: String,
    #[serde(default)]
    pub read_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    Head,
    MergeToHead,
    Named,
}

impl SandboxKind {
    pub const NAMES: [&str; 5] = ["none", "docker", "podman", "isolated", "kubernetes"];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxKind::None => "none",
            SandboxKind::Docker => "docker",
            SandboxKind::Podman => "podman",
            SandboxKind::Isolated => "isolated",
            SandboxKind::Kubernetes => "kubernetes",
        }
    }
}

impl Strategy {
    pub const NAMES: [&str; 3] = ["head", "merge-to-head", "named"];

    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Head => "head",
            Strategy::MergeToHead => "merge-to-head",
            Strategy::Named => "named",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BranchSection {
    pub strategy: Option<Strategy>,
    pub name: Option<String>,
    pub base: Option<String>,
    /// `head` only: run even though the checkout has uncommitted changes.
    pub allow_dirty: Option<bool>,
    /// `named` only: reuse an existing eden worktree of the branch instead of refusing.
    pub reuse_worktree: Option<bool>,
    /// `merge-to-head` only: when the target moved since the run began, replay the run's
    /// commits onto its tip (if that is conflict-free) instead of a merge commit.
    pub rebase: Option<bool>,
    /// Commit what the agent left uncommitted when the run ends well (default false: the run
    /// then exits 1 with the work kept in the worktree).
    pub commit_leftovers: Option<bool>,
    /// A remote of the repository: the run's branch is pushed there after the run.
    pub push: Option<String>,
    /// `merge-to-head` with `push`: push the base too once the run merged into it.
    pub push_base: Option<bool>,
    /// `merge-to-head`: globs of paths (relative to the repository) a run may not change and
    /// still merge by itself, beside the files that steer eden (exit 10, the branch kept).
    pub protect: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LoopSection {
    pub max_iterations: Option<u32>,
    pub completion_signal: Option<StringList>,
    pub idle_timeout: Option<Duration>,
    pub idle_warning_interval: Option<Duration>,
    pub completion_timeout: Option<Duration>,
    pub require_completion: Option<bool>,
    /// How long, in all, to wait out the provider's usage limits before going on in the same
    /// session (`0`: fail at once).
    pub usage_limit_wait: Option<crate::values::MaybeZeroDuration>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsSection {
    pub hook_step: Option<Duration>,
    pub iteration_step: Option<Duration>,
    pub copy_to_worktree: Option<Duration>,
    /// Between the polite signal (a forwarded Ctrl-C, a timeout's SIGTERM) and SIGKILL.
    pub kill_grace: Option<Duration>,
    /// After an agent or hook exits, how long to keep reading output its leftovers still write.
    pub output_drain: Option<Duration>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HooksSection {
    #[serde(default)]
    pub host: HookPhases,
    #[serde(default)]
    pub sandbox: HookPhases,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HookPhases {
    #[serde(default)]
    pub on_worktree_ready: Vec<Hook>,
    #[serde(default)]
    pub on_sandbox_ready: Vec<Hook>,
    #[serde(default)]
    pub on_iteration_start: Vec<Hook>,
    #[serde(default)]
    pub on_iteration_end: Vec<Hook>,
    #[serde(default)]
    pub on_close: Vec<Hook>,
}

/// A hook: a shell command, or a table with its own working directory, env and timeout.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Hook {
    Command(String),
    Detailed(DetailedHook),
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DetailedHook {
    pub cmd: String,
    pub cwd: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub timeout: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputKind {
    String,
    Object,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSection {
    pub kind: Option<OutputKind>,
    pub tag: Option<String>,
    pub schema: Option<String>,
    pub max_retries: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LoggingSection {
    pub file: Option<LogFileSetting>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum When {
    Always,
    Commits,
    Success,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StepSection {
    pub name: Option<String>,
    pub prompt: Option<String>,
    pub prompt_file: Option<String>,
    pub prompt_args: Option<BTreeMap<String, String>>,
    pub agent: Option<AgentSection>,
    pub max_iterations: Option<u32>,
    pub completion_signal: Option<StringList>,
    pub output: Option<OutputSection>,
    pub when: Option<When>,
    pub continue_on_failure: Option<bool>,
    /// Caps on what this step may spend (besides the run's `[budget]`).
    pub budget: Option<BudgetSection>,
    /// The step's own checks, instead of the top-level `[[check]]`s.
    pub check: Option<Vec<CheckSection>>,
    /// Globs of files kept after this step.
    pub artifacts: Option<Vec<String>>,
}

/// `[budget]`, or a step's `budget = { ... }`: the agent is stopped as soon as one is crossed.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSection {
    /// Input, output and cache tokens together, as the agent reports them.
    pub max_tokens: Option<u64>,
    /// As the agent reports its cost.
    pub max_cost_usd: Option<f64>,
    /// Wall time, from the run's (or the step's) start.
    pub max_duration: Option<Duration>,
}

impl<'de> Deserialize<'de> for Hook {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HookVisitor;
        impl<'de> serde::de::Visitor<'de> for HookVisitor {
            type Value = Hook;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a command string or a table { cmd, cwd, env, timeout }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Hook, E> {
                Ok(Hook::Command(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Hook, A::Error> {
                DetailedHook::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Hook::Detailed)
            }
        }
        deserializer.deserialize_any(HookVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name lists behind the help and the completions are exactly what the manifest accepts.
    #[test]
    fn name_lists_match_the_manifest() {
        let serialized = |value: serde_json::Value| value.as_str().unwrap().to_owned();
        let sandboxes = [
            SandboxKind::None,
            SandboxKind::Docker,
            SandboxKind::Podman,
            SandboxKind::Isolated,
            SandboxKind::Kubernetes,
        ];
        let names: Vec<String> = sandboxes.iter().map(|kind| serialized(serde_json::to_value(kind).unwrap())).collect();
        assert_eq!(names, SandboxKind::NAMES);
        let strategies = [Strategy::Head, Strategy::MergeToHead, Strategy::Named];
        let names: Vec<String> =
            strategies.iter().map(|kind| serialized(serde_json::to_value(kind).unwrap())).collect();
        assert_eq!(names, Strategy::NAMES);
        for (strategy, name) in strategies.iter().zip(Strategy::NAMES) {
            assert_eq!(strategy.as_str(), name);
        }
    }
}

/// `[logging] file` as written: a file name template, or `false`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum LogFileSetting {
    Template(String),
    Enabled(bool),
}

impl<'de> Deserialize<'de> for LogFileSetting {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Expect;
        impl serde::de::Visitor<'_> for Expect {
            type Value = LogFileSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a file name, or `false` for no log")
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<LogFileSetting, E> {
                Ok(LogFileSetting::Template(value.to_owned()))
            }
            fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<LogFileSetting, E> {
                Ok(LogFileSetting::Enabled(value))
            }
        }
        deserializer.deserialize_any(Expect)
    }
}
