//! The manifest as users write it: every key of the TOML contract, deserialized strictly
//! (unknown keys are errors). Defaults live in `plan.rs`, where the manifest is resolved into
//! the settings a run uses; here a key that was not written is `None`.

use crate::values::{Duration, Size, StringList};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Manifest {
    /// The run's name: letters, digits, `.`, `_`, `-`; default: the manifest file's name.
    pub(crate) name: Option<String>,
    /// The task given to the agent; `{{KEY}}` is filled from `prompt_args`, `--arg` and the built-ins.
    pub(crate) prompt: Option<String>,
    /// The task read from a file instead of `prompt` (relative to the manifest).
    pub(crate) prompt_file: Option<String>,
    /// `{{KEY}}` values for the prompt (also `--arg KEY=VALUE`). Built-ins: `BRANCH`, `BASE_BRANCH`,
    /// `ITERATION`, `MAX_ITERATIONS`, `RUN_ID`, `NAME`, `ATTEMPT`, `CHECK_FAILURES`.
    #[serde(default)]
    pub(crate) prompt_args: BTreeMap<String, String>,
    /// `[agent]`: which agent runs, and how.
    #[serde(default)]
    pub(crate) agent: AgentSection,
    /// `[sandbox]`: where the agent runs, and what it may reach.
    #[serde(default)]
    pub(crate) sandbox: SandboxSection,
    /// `[branch]`: the run's branch, where it starts and how its work lands.
    #[serde(default)]
    pub(crate) branch: BranchSection,
    /// `[loop]`: iterations, the completion signal and the watchdogs.
    #[serde(default, rename = "loop")]
    pub(crate) loop_: LoopSection,
    /// `[timeouts]`: how long eden's own steps may take.
    #[serde(default)]
    pub(crate) timeouts: TimeoutsSection,
    /// `[hooks.host]` and `[hooks.sandbox]`: commands run at each phase of the run.
    #[serde(default)]
    pub(crate) hooks: HooksSection,
    /// Untracked files copied into the worktree before the agent starts (`.env`, local config); globs
    /// relative to the repository.
    #[serde(default)]
    pub(crate) copy_to_worktree: Vec<String>,
    /// `[output]`: a structured result the agent must print at the end.
    pub(crate) output: Option<OutputSection>,
    /// `[logging]`: where the run's JSON-lines log goes.
    #[serde(default)]
    pub(crate) logging: LoggingSection,
    /// `[[step]]`: several agent steps in one run, each with its own prompt and agent.
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
    /// `[notify]`: tell a command or a webhook when the run ends, needs review, hits its budget
    /// or waits for a usage limit (a user-level `[notify]` in `~/.config/eden/config.toml`
    /// applies to every run as well).
    pub(crate) notify: Option<NotifySection>,
}

/// `[notify]`, in a manifest or in the user-level config.
#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NotifySection {
    /// Run on the host (`sh -c`) for each event, with the event as JSON on stdin and
    /// `EDEN_EVENT`, `EDEN_RUN_ID` set; it gets a small environment, never eden's keys.
    pub(crate) command: Option<String>,
    /// `https://` URL the event is POSTed to as JSON (plain `http://` only to this machine). May
    /// be one `${VAR}` reference, as a URL that carries its own secret should be.
    pub(crate) webhook: Option<String>,
    /// The events to tell (default: all): `finished`, `failed`, `kept`, `budget`,
    /// `usage_limit_wait`, `pull_request_round`, `pull_request_green`, `pull_request_gave_up`.
    pub(crate) on: Option<Vec<NotifyOn>>,
    /// How long one delivery may take (default 10s); a webhook is tried three times in all.
    pub(crate) timeout: Option<Duration>,
}

/// An event `[notify]` can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum NotifyOn {
    /// The run ended well: its work merged (or there was nothing to merge).
    Finished,
    /// The run failed (its exit code is not 0).
    Failed,
    /// The run ended well but its work was kept on its branch for a person to review.
    Kept,
    /// A `[budget]` cap was crossed and the agent stopped.
    Budget,
    /// The agent hit its provider's usage limit; eden waits and goes on.
    UsageLimitWait,
    /// The run's pull request is sent back to the agent for a round of fixes.
    PullRequestRound,
    /// The run's pull request is green (and merged, when eden merges it).
    PullRequestGreen,
    /// The pull request's rounds (or time) ran out: it needs a person.
    PullRequestGaveUp,
}

impl NotifyOn {
    pub(crate) const ALL: [NotifyOn; 8] = [
        NotifyOn::Finished,
        NotifyOn::Failed,
        NotifyOn::Kept,
        NotifyOn::Budget,
        NotifyOn::UsageLimitWait,
        NotifyOn::PullRequestRound,
        NotifyOn::PullRequestGreen,
        NotifyOn::PullRequestGaveUp,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            NotifyOn::Finished => "finished",
            NotifyOn::Failed => "failed",
            NotifyOn::Kept => "kept",
            NotifyOn::Budget => "budget",
            NotifyOn::UsageLimitWait => "usage_limit_wait",
            NotifyOn::PullRequestRound => "pull_request_round",
            NotifyOn::PullRequestGreen => "pull_request_green",
            NotifyOn::PullRequestGaveUp => "pull_request_gave_up",
        }
    }
}

/// The user-level config, `$XDG_CONFIG_HOME/eden/config.toml` (default
/// `~/.config/eden/config.toml`): settings for every run of this user.
#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UserConfig {
    /// `[notify]` for every run, beside the manifest's own.
    pub(crate) notify: Option<NotifySection>,
}

pub(crate) use crate::forge::{ForgeKind, MergeMethod};

/// `[forge]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PullRequestSection {
    /// The branch the pull request goes into; default: the run's base branch.
    pub(crate) base: Option<String>,
    /// The pull request's title; placeholders `{{NAME}}`, `{{RUN_ID}}`, `{{BRANCH}}`, `{{BASE_BRANCH}}`,
    /// `{{TASK}}`, `{{COMMIT_SUBJECT}}`; default: the first commit's subject.
    pub(crate) title: Option<String>,
    /// The pull request's body, with the same placeholders; default: what the run did.
    pub(crate) body: Option<String>,
    /// Open it as a draft (default false).
    pub(crate) draft: Option<bool>,
    /// Labels put on it.
    pub(crate) labels: Option<Vec<String>>,
    /// Follow the pull request after opening it until it is green (default true).
    pub(crate) follow: Option<bool>,
    /// How many times the agent is sent back to fix failing checks or reviews (default 3).
    pub(crate) max_rounds: Option<u32>,
    /// The label put on it when the rounds run out (default `needs-human`).
    pub(crate) give_up_label: Option<String>,
    /// How often the forge is asked about checks and reviews (default 30s).
    pub(crate) poll: Option<Duration>,
    /// How long to follow it in all (default 2h).
    pub(crate) timeout: Option<Duration>,
    /// Green means approved too, not only checks passing (default false).
    pub(crate) require_approval: Option<bool>,
    /// `false` (default), or how it is merged through the API once green.
    pub(crate) merge: Option<MergeSetting>,
}

/// `pull_request.merge`: `false`, or a merge method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(crate) enum MergeSetting {
    Flag(bool),
    Method(MergeMethod),
}

/// `attempts_pick`: which attempt lands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServiceSection {
    /// The hostname the agent reaches it by.
    pub(crate) name: Option<String>,
    /// The service's image, on the sandbox's engine (eden never pulls).
    pub(crate) image: Option<String>,
    /// The image's command replaced (its entrypoint kept), as `docker run IMAGE COMMAND…`.
    pub(crate) command: Option<Vec<String>>,
    /// The service's environment: `${VAR}` comes from eden's environment, values are redacted.
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// A shell command run in the service's container until it succeeds.
    pub(crate) ready: Option<String>,
    /// How long `ready` may take to succeed (default 60s).
    pub(crate) ready_timeout: Option<Duration>,
    /// The service's own limits; each defaults to the sandbox's.
    pub(crate) cpus: Option<f64>,
    /// The service's memory limit: bytes, or with `k`, `m`, `g`, `t`.
    pub(crate) memory: Option<Size>,
    /// The most processes the service may have.
    pub(crate) pids_limit: Option<u32>,
}

/// `[[check]]`, or a step's `[[step.check]]`: a command run in the sandbox, in the worktree,
/// after the agent signals completion (and after every iteration with `every_iteration`).
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckSection {
    /// Letters, digits, `.`, `_`, `-`; default `check-1`, `check-2`, ….
    pub(crate) name: Option<String>,
    /// The command, run with `sh -c` in the sandbox, in the worktree (or `cwd`).
    pub(crate) cmd: String,
    /// Relative to the worktree.
    pub(crate) cwd: Option<String>,
    /// How long it may take (default `timeouts.hook_step`).
    pub(crate) timeout: Option<Duration>,
    /// Also run it after every iteration, not only once the agent signals completion (default false).
    pub(crate) every_iteration: Option<bool>,
}

pub(crate) use crate::agent::{AgentKind, PromptVia};

#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentSection {
    /// `simulated`, `cli`, `claude-code`, `codex`, `opencode`, `pi`, `cursor` or `copilot`.
    pub(crate) kind: Option<AgentKind>,
    /// The model the agent is asked to use (`{model}` in a `cli` agent's `args`).
    pub(crate) model: Option<String>,
    /// Reasoning effort, for the agents that take one (claude-code, codex, opencode).
    pub(crate) effort: Option<String>,
    /// Arguments appended to the agent's command line.
    pub(crate) extra_args: Option<Vec<String>>,
    /// The agent's environment: `${VAR}` comes from eden's environment (a missing one is an error); values
    /// are redacted.
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// Session id to resume (agents that support it).
    pub(crate) resume: Option<String>,
    // kind = "cli"
    /// `cli`: the program, a name on `PATH` or a path relative to the manifest.
    pub(crate) binary: Option<String>,
    /// `cli`: its arguments; `{model}` and `{prompt}` are filled in.
    pub(crate) args: Option<Vec<String>>,
    /// `cli`: `stdin` (default) or `arg` (appended unless `args` use `{prompt}`; at most 120 KiB).
    pub(crate) prompt_via: Option<PromptVia>,
    /// `cli`: how its output is read: `lines` (default: every line is text) or an agent's stream format
    /// (`claude-code`, `codex`, `opencode`, `pi`, `cursor`, `copilot`).
    pub(crate) parser: Option<String>,
    // kind = "simulated"
    /// `simulated`: the lines it prints, one per iteration step.
    pub(crate) lines: Option<Vec<String>>,
    /// `simulated`: the pause between lines.
    pub(crate) line_delay: Option<Duration>,
    /// `simulated`: the code it exits with (default 0).
    pub(crate) exit_code: Option<i32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SandboxKind {
    None,
    Docker,
    Podman,
    Isolated,
    Kubernetes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SandboxSection {
    /// `none` (default: on this machine), `docker`, `podman`, `isolated` or `kubernetes`.
    pub(crate) kind: Option<SandboxKind>,
    /// docker/podman/kubernetes: the image, already on the engine (eden never pulls).
    pub(crate) image: Option<String>,
    /// `internet` (default for containers: everything but this machine), `none`, `allowlist`, `bridge` or
    /// `host`; `isolated`: `none` (default) or `host`.
    pub(crate) network: Option<Network>,
    /// `network = "allowlist"`: where the sandbox may connect: `host`, `host:port`, `ip`,
    /// `ip/prefix`, each with an optional `:port`.
    pub(crate) allow: Option<Vec<String>>,
    /// The most CPUs the sandbox may use.
    pub(crate) cpus: Option<f64>,
    /// The sandbox's memory limit: bytes, or with `k`, `m`, `g`, `t`.
    pub(crate) memory: Option<Size>,
    /// The most processes the sandbox may have.
    pub(crate) pids_limit: Option<u32>,
    /// Folders of this machine given to the sandbox (`{ host, sandbox, read_only }`; also `isolated`).
    pub(crate) mounts: Option<Vec<Mount>>,
    /// The environment of the agent and the sandbox hooks, for every sandbox kind.
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// docker/podman: extra arguments for `docker run` (those that hand it the host need `expose_host`).
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
    /// kubernetes: the pod's namespace (default: the context's).
    pub(crate) namespace: Option<String>,
    /// kubernetes: the kubeconfig context (default: the current one).
    pub(crate) context: Option<String>,
    /// kubernetes: `Always`, `IfNotPresent` or `Never` (default: the cluster's).
    pub(crate) image_pull_policy: Option<ImagePullPolicy>,
    /// kubernetes: the pod's service account.
    pub(crate) service_account: Option<String>,
    /// kubernetes: the pod's node selector.
    pub(crate) node_selector: Option<BTreeMap<String, String>>,
    /// kubernetes: the pod's tolerations, as a pod spec has them.
    pub(crate) tolerations: Option<Vec<Toleration>>,
    /// kubernetes: how long the pod may stay pending.
    pub(crate) start_timeout: Option<Duration>,
    /// kubernetes: after this the cluster ends the pod, whatever happens to eden.
    pub(crate) deadline: Option<Duration>,
    /// kubernetes: the pod's `runtimeClassName` (gVisor or Kata through a RuntimeClass).
    pub(crate) runtime_class: Option<String>,
}

/// `sandbox.image_pull_policy`, as Kubernetes names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) enum ImagePullPolicy {
    Always,
    IfNotPresent,
    Never,
}

/// One of `sandbox.tolerations`, as a pod spec has it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Toleration {
    /// The taint's key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<String>,
    /// `Exists` or `Equal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) operator: Option<String>,
    /// The taint's value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) effect: Option<String>,
    /// How long a `NoExecute` taint is tolerated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) toleration_seconds: Option<i64>,
}

/// `sandbox.host`: one engine, or several.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(crate) enum HostSetting {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Mount {
    /// The folder on this machine (`~` is the home folder).
    pub(crate) host: String,
    /// Where the sandbox sees it.
    pub(crate) sandbox: String,
    /// Mounted read-only (default false).
    #[serde(default)]
    pub(crate) read_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BranchSection {
    /// `merge-to-head` (default: a branch of its own, merged back), `head` (on the current branch, in the
    /// checkout) or `named` (a branch kept at the end).
    pub(crate) strategy: Option<Strategy>,
    /// `named`: the branch, made from `base` if it does not exist.
    pub(crate) name: Option<String>,
    /// `merge-to-head`/`named`: where the run starts (and `merge-to-head` merges back); default: the current
    /// branch.
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

#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoopSection {
    /// The most times the agent is started (default 10).
    pub(crate) max_iterations: Option<u32>,
    /// What the agent prints when done: a string or a list (default `<promise>COMPLETE</promise>`).
    pub(crate) completion_signal: Option<StringList>,
    /// An agent silent this long is stopped (default 10m).
    pub(crate) idle_timeout: Option<Duration>,
    /// How often a silent agent is reported (default 2m).
    pub(crate) idle_warning_interval: Option<Duration>,
    /// After the completion signal, how long the agent may take to exit (default 60s).
    pub(crate) completion_timeout: Option<Duration>,
    /// Ending without the signal keeps the branch and exits 1 (default true); false merges anyway.
    pub(crate) require_completion: Option<bool>,
    /// How long, in all, to wait out the provider's usage limits before going on in the same
    /// session (`0`: fail at once).
    pub(crate) usage_limit_wait: Option<crate::values::MaybeZeroDuration>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TimeoutsSection {
    /// Each hook's timeout unless it sets one (default 60s).
    pub(crate) hook_step: Option<Duration>,
    /// The longest one iteration may take (default 1h).
    pub(crate) iteration_step: Option<Duration>,
    /// The longest the copying of `copy_to_worktree` may take, all together (default 60s).
    pub(crate) copy_to_worktree: Option<Duration>,
    /// Between the polite signal (a forwarded Ctrl-C, a timeout's SIGTERM) and SIGKILL.
    pub(crate) kill_grace: Option<Duration>,
    /// After an agent or hook exits, how long to keep reading output its leftovers still write.
    pub(crate) output_drain: Option<Duration>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HooksSection {
    /// Hooks run on this machine, in the worktree.
    #[serde(default)]
    pub(crate) host: HookPhases,
    /// Hooks run in the sandbox (on this machine for `none`, in the copy for `isolated`).
    #[serde(default)]
    pub(crate) sandbox: HookPhases,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HookPhases {
    /// Once the worktree is made (a command string, or `{ cmd, cwd, env, timeout }`).
    #[serde(default)]
    pub(crate) on_worktree_ready: Vec<Hook>,
    /// Once the sandbox is up and seeded.
    #[serde(default)]
    pub(crate) on_sandbox_ready: Vec<Hook>,
    /// Before each iteration.
    #[serde(default)]
    pub(crate) on_iteration_start: Vec<Hook>,
    /// After each iteration.
    #[serde(default)]
    pub(crate) on_iteration_end: Vec<Hook>,
    /// As the run ends (`EDEN_STATUS` says how).
    #[serde(default)]
    pub(crate) on_close: Vec<Hook>,
    /// `[hooks.host]` only: files (globs) the host hooks read besides those eden finds itself,
    /// kept from changing unreviewed.
    #[serde(default)]
    pub(crate) reads: Vec<String>,
}

/// A hook: a shell command, or a table with its own working directory, env and timeout.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(crate) enum Hook {
    Command(String),
    Detailed(DetailedHook),
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DetailedHook {
    /// The command, run with `sh -c`.
    pub(crate) cmd: String,
    /// Where it runs, relative to the worktree.
    pub(crate) cwd: Option<String>,
    /// Its own variables.
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    /// How long it may take (default `timeouts.hook_step`).
    pub(crate) timeout: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OutputKind {
    String,
    Object,
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutputSection {
    /// `string` or `object` (default: `object` with a `schema`, else `string`).
    pub(crate) kind: Option<OutputKind>,
    /// The tag the result is printed in: `<result>…</result>` (default `result`).
    pub(crate) tag: Option<String>,
    /// A JSON Schema file the result must match (relative to the manifest).
    pub(crate) schema: Option<String>,
    /// How many times the agent is asked again for a result that does not match (default 2, where the session
    /// can be resumed).
    pub(crate) max_retries: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoggingSection {
    /// The log's file: a template with `{name}`, `{branch}`, `{run_id}`, inside `.eden/` or absolute (default
    /// `.eden/logs/{run_id}.jsonl`); `false`: no log.
    pub(crate) file: Option<LogFileSetting>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum When {
    Always,
    Commits,
    Success,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepSection {
    /// The step's name (letters, digits, `.`, `_`, `-`).
    pub(crate) name: Option<String>,
    /// The step's task.
    pub(crate) prompt: Option<String>,
    /// The step's task, read from a file (relative to the manifest).
    pub(crate) prompt_file: Option<String>,
    /// `{{KEY}}` values for the step's prompt.
    pub(crate) prompt_args: Option<BTreeMap<String, String>>,
    /// The step's agent, instead of the top-level `[agent]`.
    pub(crate) agent: Option<AgentSection>,
    /// The step's own `loop.max_iterations`.
    pub(crate) max_iterations: Option<u32>,
    /// The step's own `loop.completion_signal`.
    pub(crate) completion_signal: Option<StringList>,
    /// The step's own `[output]`.
    pub(crate) output: Option<OutputSection>,
    /// When the step runs: `success` (default: every step before it succeeded), `commits` (a step before it
    /// committed) or `always`.
    pub(crate) when: Option<When>,
    /// A failure of this step does not stop the run (default false).
    pub(crate) continue_on_failure: Option<bool>,
    /// Caps on what this step may spend (besides the run's `[budget]`).
    pub(crate) budget: Option<BudgetSection>,
    /// The step's own checks, instead of the top-level `[[check]]`s.
    pub(crate) check: Option<Vec<CheckSection>>,
    /// Globs of files kept after this step.
    pub(crate) artifacts: Option<Vec<String>>,
}

/// `[budget]`, or a step's `budget = { ... }`: the agent is stopped as soon as one is crossed.
#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
