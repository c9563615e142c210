//! The manifest as users write it: every key of the TOML contract, deserialized strictly
//! (unknown keys are errors). Defaults live in `plan.rs`, where the manifest is resolved into
//! the settings a run uses; here a key that was not written is `None`.

use crate::values::{Duration, Size, StringList};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Manifest {
    pub(crate) name: Option<String>,
    pub(crate) prompt: Option<String>,
    pub(crate) prompt_file: Option<String>,
    #[serde(default)]
    pub(crate) prompt_args: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) agent: AgentSection,
    #[serde(default)]
    pub(crate) sandbox: SandboxSection,
    #[serde(default)]
    pub(crate) branch: BranchSection,
    #[serde(default, rename = "loop")]
    pub(crate) loop_: LoopSection,
    #[serde(default)]
    pub(crate) timeouts: TimeoutsSection,
    #[serde(default)]
    pub(crate) hooks: HooksSection,
    #[serde(default)]
    pub(crate) copy_to_worktree: Vec<String>,
    pub(crate) output: Option<OutputSection>,
    #[serde(default)]
    pub(crate) logging: LoggingSection,
    #[serde(default)]
    pub(crate) step: Vec<StepSection>,
    /// Caps on what the whole run may spend.
    #[serde(default)]
    pub(crate) budget: BudgetSection,
    /// Names of environment variables whose values are never shown.
    #[serde(default)]
    pub(crate) redact: Vec<String>,
    /// `[[check]]`: commands that must pass before the work merges.
    #[serde(default)]
    pub(crate) check: Vec<CheckSection>,
    /// `[[service]]`: containers beside the sandbox (a database, a cache), for the whole run.
    #[serde(default)]
    pub(crate) service: Vec<ServiceSection>,
    /// Globs of files in the sandbox's workspace kept after the run, never merged.
    pub(crate) artifacts: Option<Vec<String>>,
    /// `attempts = N`: N runs of this manifest at once from the same base; one lands.
    pub(crate) attempts: Option<u32>,
    /// How the attempt that lands is chosen.
    pub(crate) attempts_pick: Option<AttemptsPick>,
    /// `attempts_pick = "best"`: a command run in each attempt's sandbox that prints a number;
    /// the lowest wins.
    pub(crate) attempts_score: Option<String>,
    /// `[forge]`: where pull requests are opened, and the token eden holds for it.
    pub(crate) forge: Option<ForgeSection>,
    /// `[pull_request]`: the run's branch is pushed and a pull request opened (or updated)
    /// instead of a local merge, then followed until it is green.
    pub(crate) pull_request: Option<PullRequestSection>,
}

pub(crate) use crate::forge::{ForgeKind, MergeMethod};

/// `[forge]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForgeSection {
    /// `github` (the only kind for now).
    pub(crate) kind: Option<ForgeKind>,
    /// Default: `GITHUB_API_URL` when set, else `https://api.github.com`.
    pub(crate) api_url: Option<String>,
    /// `owner/name`; default: read from the push remote's URL.
    pub(crate) repository: Option<String>,
    /// Default: `${GITHUB_TOKEN}`, then `${GH_TOKEN}`. Held by eden: never in a sandbox.
    pub(crate) token: Option<String>,
}

/// `[pull_request]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PullRequestSection {
    /// The branch the pull request goes into; default: the run's base branch.
    pub(crate) base: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) body: Option<String>,
    pub(crate) draft: Option<bool>,
    pub(crate) labels: Option<Vec<String>>,
    /// Follow the pull request after opening it until it is green (default true).
    pub(crate) follow: Option<bool>,
    pub(crate) max_rounds: Option<u32>,
    pub(crate) give_up_label: Option<String>,
    pub(crate) poll: Option<Duration>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) require_approval: Option<bool>,
    /// `false` (default), or how it is merged through the API once green.
    pub(crate) merge: Option<MergeSetting>,
}

/// `pull_request.merge`: `false`, or a merge method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub(crate) enum MergeSetting {
    Flag(bool),
    Method(MergeMethod),
}

/// `attempts_pick`: which attempt lands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum AttemptsPick {
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
pub(crate) struct ServiceSection {
    /// The hostname the agent reaches it by.
    pub(crate) name: Option<String>,
    pub(crate) image: Option<String>,
    /// The image's command replaced (its entrypoint kept), as `docker run IMAGE COMMAND…`.
    pub(crate) command: Option<Vec<String>>,
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// A shell command run in the service's container until it succeeds.
    pub(crate) ready: Option<String>,
    pub(crate) ready_timeout: Option<Duration>,
    /// The service's own limits; each defaults to the sandbox's.
    pub(crate) cpus: Option<f64>,
    pub(crate) memory: Option<Size>,
    pub(crate) pids_limit: Option<u32>,
}

/// `[[check]]`, or a step's `[[step.check]]`: a command run in the sandbox, in the worktree,
/// after the agent signals completion (and after every iteration with `every_iteration`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckSection {
    pub(crate) name: Option<String>,
    pub(crate) cmd: String,
    /// Relative to the worktree.
    pub(crate) cwd: Option<String>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) every_iteration: Option<bool>,
}

pub(crate) use crate::agent::{AgentKind, PromptVia};

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentSection {
    pub(crate) kind: Option<AgentKind>,
    pub(crate) model: Option<String>,
    pub(crate) effort: Option<String>,
    pub(crate) extra_args: Option<Vec<String>>,
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// Session id to resume (agents that support it).
    pub(crate) resume: Option<String>,
    // kind = "cli"
    pub(crate) binary: Option<String>,
    pub(crate) args: Option<Vec<String>>,
    pub(crate) prompt_via: Option<PromptVia>,
    pub(crate) parser: Option<String>,
    // kind = "simulated"
    pub(crate) lines: Option<Vec<String>>,
    pub(crate) line_delay: Option<Duration>,
    pub(crate) exit_code: Option<i32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SandboxKind {
    None,
    Docker,
    Podman,
    Isolated,
    Kubernetes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Network {
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
    pub(crate) fn as_str(self) -> &'static str {
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
pub(crate) struct SandboxSection {
    pub(crate) kind: Option<SandboxKind>,
    pub(crate) image: Option<String>,
    pub(crate) network: Option<Network>,
    /// `network = "allowlist"`: where the sandbox may connect: `host`, `host:port`, `ip`,
    /// `ip/prefix`, each with an optional `:port`.
    pub(crate) allow: Option<Vec<String>>,
    pub(crate) cpus: Option<f64>,
    pub(crate) memory: Option<Size>,
    pub(crate) pids_limit: Option<u32>,
    pub(crate) mounts: Option<Vec<Mount>>,
    pub(crate) env: Option<BTreeMap<String, String>>,
    pub(crate) run_args: Option<Vec<String>>,
    /// Give the sandbox the agent's configuration (a private copy of its login and settings,
    /// and a folder for its transcripts; default true).
    pub(crate) mount_agent_config: Option<bool>,
    /// Hold the agent's provider keys outside the sandbox (default: on where it can work): the
    /// agent gets a placeholder and a base URL at eden's proxy, which adds the key on the way out.
    pub(crate) hold_keys: Option<bool>,
    /// docker/podman: bind-mount the host worktree into the container instead of giving it a
    /// copy of its own (default false). Faster on a huge repository; the agent then writes the
    /// worktree's files on the host directly. The host's `.git` stays out of its reach.
    pub(crate) expose_worktree: Option<bool>,
    /// docker/podman: accept `run_args` and `mounts` that hand the container the host
    /// (`--privileged`, host namespaces, added capabilities, devices, the engine's socket, `/`,
    /// the home folder; default false: refused).
    pub(crate) expose_host: Option<bool>,
    /// docker/podman: the engine to run on: an address its client takes (`unix://`, `tcp://`,
    /// `ssh://`) or a docker context / podman connection name; a list spreads several runs of
    /// one invocation over those engines. Unset: the client's own default (`DOCKER_HOST`,
    /// `DOCKER_CONTEXT`, the current context, `CONTAINER_HOST`).
    pub(crate) host: Option<HostSetting>,
    /// docker/podman: the OCI runtime the container runs under (`runsc` for gVisor; any runtime
    /// the engine knows, or a path for podman). Unset: the engine's default.
    pub(crate) runtime: Option<String>,
    /// The most one iteration may send back from the sandbox (commits, uncommitted work, state),
    /// counted as it streams; default 2 GiB.
    pub(crate) max_return: Option<Size>,
    /// kubernetes: the namespace (default: the context's), the kubeconfig context (default:
    /// the current one), the image pull policy (default: the cluster's), the pod's service
    /// account, node selector and tolerations, how long the pod may stay pending
    /// (`start_timeout`) and the deadline after which the cluster ends it whatever happens.
    pub(crate) namespace: Option<String>,
    pub(crate) context: Option<String>,
    pub(crate) image_pull_policy: Option<ImagePullPolicy>,
    pub(crate) service_account: Option<String>,
    pub(crate) node_selector: Option<BTreeMap<String, String>>,
    pub(crate) tolerations: Option<Vec<Toleration>>,
    pub(crate) start_timeout: Option<Duration>,
    pub(crate) deadline: Option<Duration>,
    /// kubernetes: the pod's `runtimeClassName` (gVisor or Kata through a RuntimeClass).
    pub(crate) runtime_class: Option<String>,
}

/// `sandbox.image_pull_policy`, as Kubernetes names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub(crate) enum ImagePullPolicy {
    Always,
    IfNotPresent,
    Never,
}

/// One of `sandbox.tolerations`, as a pod spec has it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Toleration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) operator: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) effect: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) toleration_seconds: Option<i64>,
}

/// `sandbox.host`: one engine, or several.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub(crate) enum HostSetting {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Mount {
    pub(crate) host: String,
    pub(crate) sandbox: String,
    #[serde(default)]
    pub(crate) read_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Strategy {
    Head,
    MergeToHead,
    Named,
}

impl SandboxKind {
    pub(crate) const NAMES: [&str; 5] = ["none", "docker", "podman", "isolated", "kubernetes"];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SandboxKind::None => "none",
            SandboxKind::Docker => "docker",
            SandboxKind::Podman => "podman",
            SandboxKind::Isolated => "isolated",
            SandboxKind::Kubernetes => "kubernetes",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<SandboxKind> {
        [SandboxKind::None, SandboxKind::Docker, SandboxKind::Podman, SandboxKind::Isolated, SandboxKind::Kubernetes]
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }
}

impl Strategy {
    pub(crate) const NAMES: [&str; 3] = ["head", "merge-to-head", "named"];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Strategy::Head => "head",
            Strategy::MergeToHead => "merge-to-head",
            Strategy::Named => "named",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BranchSection {
    pub(crate) strategy: Option<Strategy>,
    pub(crate) name: Option<String>,
    pub(crate) base: Option<String>,
    /// `head` only: run even though the checkout has uncommitted changes.
    pub(crate) allow_dirty: Option<bool>,
    /// `named` only: reuse an existing eden worktree of the branch instead of refusing.
    pub(crate) reuse_worktree: Option<bool>,
    /// `merge-to-head` only: when the target moved since the run began, replay the run's
    /// commits onto its tip (if that is conflict-free) instead of a merge commit.
    pub(crate) rebase: Option<bool>,
    /// Commit what the agent left uncommitted when the run ends well (default false: the run
    /// then exits 1 with the work kept in the worktree).
    pub(crate) commit_leftovers: Option<bool>,
    /// A remote of the repository: the run's branch is pushed there after the run.
    pub(crate) push: Option<String>,
    /// `merge-to-head` with `push`: push the base too once the run merged into it.
    pub(crate) push_base: Option<bool>,
    /// `merge-to-head`: globs of paths (relative to the repository) a run may not change and
    /// still merge by itself, beside the files that steer eden (exit 10, the branch kept).
    pub(crate) protect: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoopSection {
    pub(crate) max_iterations: Option<u32>,
    pub(crate) completion_signal: Option<StringList>,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) idle_warning_interval: Option<Duration>,
    pub(crate) completion_timeout: Option<Duration>,
    pub(crate) require_completion: Option<bool>,
    /// How long, in all, to wait out the provider's usage limits before going on in the same
    /// session (`0`: fail at once).
    pub(crate) usage_limit_wait: Option<crate::values::MaybeZeroDuration>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TimeoutsSection {
    pub(crate) hook_step: Option<Duration>,
    pub(crate) iteration_step: Option<Duration>,
    pub(crate) copy_to_worktree: Option<Duration>,
    /// Between the polite signal (a forwarded Ctrl-C, a timeout's SIGTERM) and SIGKILL.
    pub(crate) kill_grace: Option<Duration>,
    /// After an agent or hook exits, how long to keep reading output its leftovers still write.
    pub(crate) output_drain: Option<Duration>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HooksSection {
    #[serde(default)]
    pub(crate) host: HookPhases,
    #[serde(default)]
    pub(crate) sandbox: HookPhases,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HookPhases {
    #[serde(default)]
    pub(crate) on_worktree_ready: Vec<Hook>,
    #[serde(default)]
    pub(crate) on_sandbox_ready: Vec<Hook>,
    #[serde(default)]
    pub(crate) on_iteration_start: Vec<Hook>,
    #[serde(default)]
    pub(crate) on_iteration_end: Vec<Hook>,
    #[serde(default)]
    pub(crate) on_close: Vec<Hook>,
    /// `[hooks.host]` only: files (globs) the host hooks read besides those eden finds itself,
    /// kept from changing unreviewed.
    #[serde(default)]
    pub(crate) reads: Vec<String>,
}

/// A hook: a shell command, or a table with its own working directory, env and timeout.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum Hook {
    Command(String),
    Detailed(DetailedHook),
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DetailedHook {
    pub(crate) cmd: String,
    pub(crate) cwd: Option<String>,
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) timeout: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OutputKind {
    String,
    Object,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutputSection {
    pub(crate) kind: Option<OutputKind>,
    pub(crate) tag: Option<String>,
    pub(crate) schema: Option<String>,
    pub(crate) max_retries: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoggingSection {
    pub(crate) file: Option<LogFileSetting>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum When {
    Always,
    Commits,
    Success,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepSection {
    pub(crate) name: Option<String>,
    pub(crate) prompt: Option<String>,
    pub(crate) prompt_file: Option<String>,
    pub(crate) prompt_args: Option<BTreeMap<String, String>>,
    pub(crate) agent: Option<AgentSection>,
    pub(crate) max_iterations: Option<u32>,
    pub(crate) completion_signal: Option<StringList>,
    pub(crate) output: Option<OutputSection>,
    pub(crate) when: Option<When>,
    pub(crate) continue_on_failure: Option<bool>,
    /// Caps on what this step may spend (besides the run's `[budget]`).
    pub(crate) budget: Option<BudgetSection>,
    /// The step's own checks, instead of the top-level `[[check]]`s.
    pub(crate) check: Option<Vec<CheckSection>>,
    /// Globs of files kept after this step.
    pub(crate) artifacts: Option<Vec<String>>,
}

/// `[budget]`, or a step's `budget = { ... }`: the agent is stopped as soon as one is crossed.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BudgetSection {
    /// Input, output and cache tokens together, as the agent reports them.
    pub(crate) max_tokens: Option<u64>,
    /// As the agent reports its cost.
    pub(crate) max_cost_usd: Option<f64>,
    /// Wall time, from the run's (or the step's) start.
    pub(crate) max_duration: Option<Duration>,
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
pub(crate) enum LogFileSetting {
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
