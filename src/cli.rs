//! Clap definitions only. `commands/` turns these into settings; nothing below knows clap.

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueHint};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "eden",
    version,
    about = "Run AI coding agents autonomously and safely, each in its own git worktree",
    long_about = "Run AI coding agents autonomously and safely, each in its own git worktree.\n\n\
A run is declared in a TOML manifest (`eden init` writes one; `eden run eden.toml` runs it) or with \
flags alone. Every run gets its own branch and worktree, an optional sandbox (none, docker, podman, \
an isolated copy), lifecycle hooks, an iteration loop that stops when the agent prints its \
completion signal, and watchdogs for idle and hung agents. At the end the work is merged back, or \
its branch is kept for you to review. Nothing is left running, and uncommitted work is never \
deleted.",
    after_help = exit_codes_line()
)]
pub struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run an agent as a manifest (or flags) describes: worktree, iterations, merge back
    #[command(long_about = run_long_about())]
    Run(Box<RunArgs>),
    /// The agent's own terminal UI, in a fresh worktree and sandbox, hooks and all
    #[command(
        long_about = "The agent's own terminal UI, in a fresh worktree and sandbox, hooks and all.\n\n\
Same manifest and flags as `eden run`: the worktree is made, the sandbox booted, the `on_worktree_ready` and \
`on_sandbox_ready` hooks run, then the terminal is the agent's (Claude Code's, Codex's, opencode's, pi's, \
Copilot's or Cursor's UI, or any `cli` binary such as `bash`) until you quit it; `on_close` runs, the \
container goes, and the work is merged or kept as the strategy says. The prompt, if any, is the first message.",
        after_help = "Differences from `eden run`: the default strategy is `head` (your checkout; `--strategy \
merge-to-head` or `named` for a branch of its own); there is no iteration loop, so `[loop]`, `[output]`, \
`--max-iterations` and the iteration hooks are not used (one warning says so); `[[step]]` manifests and the \
`isolated` sandbox are refused; the permission-bypass flag is passed only in docker and podman (on the host \
the agent asks you); `--json-events` is refused (the agent has stdout). eden exits with the agent's exit \
code (130 when you interrupted it); a session that ends non-zero is not merged. Without a terminal on stdin \
it is refused unless `--no-tty`."
    )]
    Interactive(Box<InteractiveArgs>),
    /// Write a starter manifest (and, for container sandboxes, a Dockerfile)
    Init(InitArgs),
    /// Build or remove the sandbox image
    #[command(subcommand)]
    Image(ImageCommand),
    /// Remove what eden left behind: worktrees, branches, containers, locks, isolated copies
    #[command(after_help = "Never removes anything of a run that is still going. Without `--force`, \
also keeps worktrees with uncommitted changes, branches with commits no other branch has, and isolated \
copies holding work that never came back. Exit codes: 0 done · 1 something was kept that `--force` would \
remove, or could not be removed · 2 usage error · 130/143 interrupted (run it again to finish)")]
    Clean(CleanArgs),
    /// What a run changed against its base, through git's pager and diff settings
    #[command(after_help = "RUN is a run id, an unambiguous prefix of one, `last`, or a session id, as in \
`eden sessions`. Arguments after it go to `git diff` (`eden diff last --stat`, or `eden diff --stat` for the \
last run; after `--` they go to git whatever they are). Exit codes: 0 shown · \
2 no such run · 7 git failed.")]
    Diff(DiffArgs),
    /// Merge a kept run's branch into its base, as the run's own merge would
    #[command(after_help = "The same merge as a run's (under the repository lock, never a half-done merge: a \
conflict leaves everything as it was); then the run's worktree (if clean) and branch go, and its record says \
it merged. Refused for a run still going, one merged already, or one without a branch. Exit codes: 0 merged · \
2 nothing to merge · 7 conflict or git failed.")]
    Merge(ReviewArgs),
    /// Remove a run's branch, worktree and container; its record stays
    #[command(after_help = "A worktree with uncommitted changes is kept unless `--force`; the branch a `head` \
run worked on is yours and never deleted; a container a killed run left has what it holds saved under \
`.eden/patches` first. Refused for a run still going.")]
    Discard(DiscardArgs),
    /// Interrupt a live run's agent and give its next iteration a new prompt
    #[command(after_help = "The run's agent is interrupted (SIGINT to its process group, in its sandbox too; \
nothing it committed is lost) and the next iteration starts at once with PROMPT, resuming the agent's session \
where it can (every agent kind but `cli` and `simulated`). The interrupted iteration is recorded as `steered`; \
the iteration count goes on (a steered last iteration gets one more). Works for a run of several at once: each \
has its own id. Exit codes: 0 delivered · 2 no such run, or it is not running.")]
    Steer(SteerArgs),
    /// A live dashboard of the runs: follow, steer, diff, merge, discard and stop them
    #[command(after_help = "The list: live runs first (phase, iteration, time, tokens, cost, the agent's last \
line), then recent ones with their end; attempts under their group. Keys: ↑↓ select, ⏎ open a run (its \
timeline and output), `f` follow its output, `/` filter, `t` sort, `s` steer, `d` diff (through git's pager), \
`m` merge, `x` discard, `c` stop (as Ctrl-C would), `a` the attempts side by side, `q` quit. Every action asks \
first. Needs a terminal: without one, `eden sessions list` and `eden sessions show RUN --follow`.")]
    Top(TopArgs),
    /// Serve eden to another agent over MCP (stdio): start, watch, steer and review runs
    #[command(after_help = "A Model Context Protocol server on stdin and stdout, for a parent agent or an \
orchestrator: `claude mcp add eden -- eden mcp`. Tools: run (a manifest of the repository, or a prompt, an \
agent and a sandbox; `wait` reports progress), status, show, diff, steer, stop, and with `--allow` merge and \
discard; resources: `eden://runs/<id>` (records) and `eden://logs/<id>`. Runs it started get SIGTERM (and \
stop as for Ctrl-C, their work kept) when it ends.")]
    Mcp(McpArgs),
    /// Check what a first run needs, and say what to fix
    #[command(after_help = "One line each: git and its identity, the repository, docker and podman and whether \
they answer, bubblewrap, each agent CLI on PATH with its version and whether a key or login is there (never \
shown). Given a manifest, what it needs is required: its sandbox's engine and image, its agents. `--network` \
also tries each agent's model host. Exit codes: 0 all that is needed is there · 1 something needed is missing.")]
    Doctor(DoctorArgs),
    /// Print a shell completion script for bash, zsh, fish, elvish or powershell
    #[command(
        after_help = "Install, e.g.: bash: `eden completions bash > ~/.local/share/bash-completion/completions/eden` · \
zsh: `eden completions zsh > ~/.zfunc/_eden` (with `fpath+=~/.zfunc` before `compinit`) · \
fish: `eden completions fish > ~/.config/fish/completions/eden.fish`. Packagers: `completions/` in the source holds them all."
    )]
    Completions(CompletionsArgs),
    /// Print the manifest's JSON Schema, for editors and checkers (taplo, Even Better TOML)
    #[command(
        after_help = "`eden init` writes `#:schema` at the top of the manifest it makes, naming `.eden/eden.schema.json`, \
which it writes too; `eden schema > .eden/eden.schema.json` refreshes it after an upgrade. The schema is made from the \
same definitions eden reads manifests with, and `eden.schema.json` in eden's source is a copy of it."
    )]
    Schema,
    /// The run history: list runs, replay one, total tokens and cost, remove runs
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Open (or update) a run's pull request, or follow it again (`eden pr follow RUN`)
    #[command(
        args_conflicts_with_subcommands = true,
        after_help = "RUN is a run id, an unambiguous prefix of one, or `last` (the default), as in `eden sessions`. \
The run's manifest (or `--manifest`) must have a `[pull_request]` table; its `[forge]` says where. `eden pr RUN` pushes \
the run's kept branch with the token eden holds and opens its pull request (or finds the open one), then follows it \
when `follow` is on; `eden pr follow RUN` takes up following after a restart or in a later CI job, without repeating \
a round already answered. Exit codes: 0 opened, or green (merged when `merge` is set) · 2 no such run, or no \
`[pull_request]` · 6 the forge refused (token, repository, base, push) · 9 rounds spent or timed out (labelled, left \
open) · 10 a round changed what judges it · 130/143 interrupted (the pull request stays)."
    )]
    Pr(PrArgs),
    /// Keep idle sandboxes warm for a manifest, so a run claims one instead of starting cold
    #[command(subcommand)]
    Pool(PoolCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum PoolCommand {
    /// Start idle, generic sandboxes for a manifest's sandbox settings (docker, podman and kubernetes)
    #[command(after_help = "Each member is made as the manifest's runs' containers are (engine and host, image, \
runtime, network, limits, mounts) with nothing of any run: no worktree, environment, key or state folder. `eden run` \
claims an idle one made with its own settings (one claim at a time: two runs never share one), brings in the repository, \
the run's environment, held keys and network rules, and starts the agent; a claimed member is its run's and goes \
with it, and another is started behind the claim. With no idle member that matches, the run starts cold and says \
why. Running `eden pool up` again tops the pool up to `--size`. Exit codes: 0 the pool is up · 2 usage (the \
manifest's sandbox has no pool) · 6 the engine refused.")]
    Up(PoolUpArgs),
    /// The repository's warm pools and their members (idle, ended, claimed by a run)
    Status(PoolStatusArgs),
    /// Remove every idle member of the repository's warm pools, and the pools
    #[command(after_help = "A member a run has claimed is that run's: it goes when its run ends.")]
    Down(PoolStatusArgs),
}

#[derive(Debug, Args)]
pub(crate) struct PoolUpArgs {
    /// The manifest whose runs will claim the pool's members
    #[arg(value_name = "MANIFEST", value_hint = ValueHint::FilePath)]
    pub(crate) manifest: Option<PathBuf>,

    /// How many idle members to keep
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) size: u32,

    /// How long an unclaimed member waits before it ends (e.g. `30m`, `2h`)
    #[arg(long, value_name = "DURATION", default_value = "30m", value_hint = ValueHint::Other)]
    pub(crate) idle: String,

    /// Do not start a replacement behind each claim: the pool empties as runs claim it
    #[arg(long)]
    pub(crate) no_refill: bool,

    /// Override any manifest key, as `eden run --set` does (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE", value_hint = ValueHint::Other)]
    pub(crate) set: Vec<String>,

    /// What was done as JSON on stdout
    #[arg(long)]
    pub(crate) json: bool,

    /// The repository (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct PoolStatusArgs {
    /// As JSON on stdout
    #[arg(long)]
    pub(crate) json: bool,

    /// The repository (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct InteractiveArgs {
    #[command(flatten)]
    pub(crate) run: RunArgs,

    /// Without a terminal: the agent reads eden's stdin and writes its stdout as they are
    #[arg(long)]
    pub(crate) no_tty: bool,

    /// Continue this agent session (an id from `eden sessions list --json`)
    #[arg(long, value_name = "SESSION", value_hint = ValueHint::Other)]
    pub(crate) resume: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCommand {
    /// One line per run, newest first (from `.eden/runs/`)
    List(SessionsListArgs),
    /// Replay a run: prompts, the agent's text, tool calls, hooks, usage, the outcome
    #[command(after_help = "RUN is a run id, an unambiguous prefix of one, `last` (the newest run), or a \
session id an agent reported. The replay comes from the run's log (`.eden/logs/<run-id>.jsonl`), or from its \
record when it has no log. `--raw` prints the agent's own transcripts as captured in `.eden/sessions/<run-id>/`.")]
    Show(SessionsShowArgs),
    /// Token and cost totals by run, agent, model, branch or day
    #[command(after_help = "Cost is what the agents reported. For agents that report tokens only, prices come \
from `~/.config/eden/prices.toml` (or `--prices FILE`): `[models.\"<model>\"]` with `input`, `output`, \
`cache_read`, `cache_write` in USD per million tokens. Tokens without a price are shown as unpriced, never guessed.")]
    Cost(SessionsCostArgs),
    /// Remove runs: their records, logs, captured transcripts and patches
    Rm(SessionsRmArgs),
    /// Copy a captured session into the agent's own store for another directory
    #[command(after_help = "Every absolute path under the session's old working directory is rewritten to DIR, \
so the agent can resume the session there (another worktree, or another machine after copying the agent's \
store). Works for claude-code, codex and pi. Captured transcripts have secrets replaced by `***`.")]
    Transfer(SessionsTransferArgs),
    /// Continue an agent session: a run with `agent.resume` on the session's branch
    #[command(after_help = "SESSION is a session id (or a run id, or `last`: its last session). The run goes \
on in the session's branch and worktree when they still exist (strategy `named` with `reuse_worktree`), \
else in a new worktree of that branch; the manifest is MANIFEST, or the original run's when it still \
exists. Exit codes as for `eden run`.")]
    Resume(Box<SessionsResumeArgs>),
}

#[derive(Debug, Args)]
pub(crate) struct SessionsTransferArgs {
    /// A session id (or a run id, or `last`: its last session)
    #[arg(value_name = "SESSION", value_hint = ValueHint::Other)]
    pub(crate) session: String,

    /// The working directory the agent will resume it in
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) to: PathBuf,

    /// Overwrite a session already there
    #[arg(long)]
    pub(crate) force: bool,

    /// The repository whose runs to look in (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct PrArgs {
    #[command(subcommand)]
    pub(crate) command: Option<PrCommand>,
    #[command(flatten)]
    pub(crate) open: PrRunArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PrCommand {
    /// Follow a run's pull request again until it is green
    Follow(PrRunArgs),
}

#[derive(Debug, Args)]
pub(crate) struct PrRunArgs {
    /// A run id, an unambiguous prefix of one, or `last`
    #[arg(value_name = "RUN", value_hint = ValueHint::Other)]
    pub(crate) run: Option<String>,

    /// The manifest with the `[pull_request]` (default: the run's own, when it is in the repository)
    #[arg(long, value_name = "MANIFEST", value_hint = ValueHint::FilePath)]
    pub(crate) manifest: Option<PathBuf>,

    /// The repository (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,

    /// Print the run record as JSON on stdout at the end
    #[arg(long)]
    pub(crate) json: bool,

    /// No progress output
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

#[derive(Debug, Args)]
pub(crate) struct SessionsResumeArgs {
    /// A session id (or a run id, or `last`: its last session)
    #[arg(value_name = "SESSION", value_hint = ValueHint::Other)]
    pub(crate) session: String,

    /// The manifest to run (default: the original run's, when it still exists)
    #[arg(value_name = "MANIFEST", value_hint = ValueHint::FilePath)]
    pub(crate) manifest: Option<PathBuf>,

    /// The follow-up message (default: continue, and print the completion signal when done)
    #[arg(long, value_hint = ValueHint::Other)]
    pub(crate) prompt: Option<String>,

    /// Hand the terminal to the agent in that session (`eden interactive`)
    #[arg(long)]
    pub(crate) interactive: bool,

    /// Override any manifest key (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE", value_hint = ValueHint::Other)]
    pub(crate) set: Vec<String>,

    /// The repository (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,

    /// Print the resolved plan as JSON; create nothing
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// Print the run record as JSON on stdout
    #[arg(long)]
    pub(crate) json: bool,

    /// No progress output
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

#[derive(Debug, Args)]
pub(crate) struct SessionsListArgs {
    /// Only runs started within this long (e.g. `7d`, `12h`)
    #[arg(long, value_name = "DURATION", value_hint = ValueHint::Other)]
    pub(crate) since: Option<String>,

    /// Only runs of this name
    #[arg(long, value_hint = ValueHint::Other)]
    pub(crate) name: Option<String>,

    /// Only runs with this agent in one of their steps
    #[arg(long, value_name = "KIND", value_parser = OneOf(agent_kinds))]
    pub(crate) agent: Option<String>,

    /// Only runs with this status (running, finished, abandoned) or exit reason (completed, agent_failed, ...)
    #[arg(long, value_parser = OneOf(status_words))]
    pub(crate) status: Option<String>,

    /// Only runs on this branch
    #[arg(long, value_hint = ValueHint::Other)]
    pub(crate) branch: Option<String>,

    /// Print the runs as a JSON array on stdout
    #[arg(long)]
    pub(crate) json: bool,

    /// The repository (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct SessionsShowArgs {
    /// A run id (or prefix), `last`, or a session id
    #[arg(value_name = "RUN", default_value = "last", value_hint = ValueHint::Other)]
    pub(crate) run: String,

    /// Whole prompts, texts and tool summaries (they are cut otherwise)
    #[arg(long)]
    pub(crate) full: bool,

    /// Print the captured transcripts as stored (JSON lines)
    #[arg(long, conflicts_with = "json")]
    pub(crate) raw: bool,

    /// Print the run's events as JSON lines
    #[arg(long)]
    pub(crate) json: bool,

    /// Never start a pager
    #[arg(long)]
    pub(crate) no_pager: bool,

    /// Follow a run as it goes (from another terminal): its events as `eden run` shows them,
    /// until it ends; exits with the run's exit code
    #[arg(long, short = 'f', conflicts_with_all = ["raw", "full"])]
    pub(crate) follow: bool,

    /// The repository (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct SessionsCostArgs {
    /// Group the totals by
    #[arg(long, default_value = "run", value_parser = OneOf(cost_groups))]
    pub(crate) by: String,

    /// Only runs started within this long (e.g. `7d`)
    #[arg(long, value_name = "DURATION", value_hint = ValueHint::Other)]
    pub(crate) since: Option<String>,

    /// Price table (default: `~/.config/eden/prices.toml` when it exists)
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub(crate) prices: Option<PathBuf>,

    /// Print the totals as JSON on stdout
    #[arg(long)]
    pub(crate) json: bool,

    /// The repository (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct SessionsRmArgs {
    /// Run ids (or unambiguous prefixes, or `last`)
    #[arg(value_name = "RUN", required = true, value_hint = ValueHint::Other)]
    pub(crate) runs: Vec<String>,

    /// The repository (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_name = "SHELL")]
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// A manifest whose needs to check too
    #[arg(value_name = "MANIFEST", value_hint = ValueHint::FilePath)]
    pub(crate) manifest: Option<PathBuf>,

    /// Also try each agent's model host over the network
    #[arg(long)]
    pub(crate) network: bool,

    /// The findings as JSON on stdout
    #[arg(long)]
    pub(crate) json: bool,

    /// The repository (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,

    /// The container engine to check, as `eden run --host` names one (`tcp://HOST:2376`,
    /// `ssh://USER@HOST`, `unix:///SOCKET`, a docker context or podman connection name);
    /// default: each client's own
    #[arg(long, value_name = "HOST")]
    pub(crate) host: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ReviewArgs {
    /// The run: an id, a prefix of one, `last`, or a session id
    #[arg(value_name = "RUN", value_hint = ValueHint::Other)]
    pub(crate) run: String,

    /// The repository whose runs to look in (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,

    /// Print the run's record, as it is now, on stdout
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The run: an id, a prefix of one, `last` (the default), or a session id
    #[arg(value_name = "RUN", default_value = "last", allow_hyphen_values = true, value_hint = ValueHint::Other)]
    pub(crate) run: String,

    /// The repository whose runs to look in (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,

    /// More for `git diff` (`--stat`, `--name-only`); after `--`, passed as they are
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "GIT_DIFF_ARGS")]
    pub(crate) args: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// The tools the client may call: names, `default` (all but merge and discard) or `all`
    #[arg(long, value_name = "TOOLS", value_hint = ValueHint::Other)]
    pub(crate) allow: Option<String>,

    /// The repository served (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct TopArgs {
    /// The repositories whose runs to show (default: the current directory's)
    #[arg(value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) dirs: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct SteerArgs {
    /// The run: an id, a prefix of one, or `last`
    #[arg(value_name = "RUN", value_hint = ValueHint::Other)]
    pub(crate) run: String,

    /// The new prompt for its next iteration
    #[arg(value_name = "PROMPT", value_hint = ValueHint::Other)]
    pub(crate) prompt: String,

    /// The repository whose runs to look in (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct DiscardArgs {
    #[command(flatten)]
    pub(crate) review: ReviewArgs,

    /// Also discard uncommitted changes in the run's kept worktree
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CleanArgs {
    /// Only list what would be removed and what kept, and why
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// Also remove dirty worktrees, unmerged `eden/*` branches and isolated copies with work in them
    #[arg(long)]
    pub(crate) force: bool,

    /// Also remove logs, run records, sessions, patches and artifacts older than this (e.g. `7d`, `12h`)
    #[arg(long, value_name = "DURATION", value_hint = ValueHint::Other)]
    pub(crate) older_than: Option<String>,

    /// Containers and isolated copies of every repository, not just this one
    #[arg(long, visible_alias = "all")]
    pub(crate) all_repos: bool,

    /// The repository to clean (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,

    /// Print what was found and done as JSON on stdout
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// Agent kind for the manifest
    #[arg(long, value_name = "KIND", default_value = "claude-code", value_parser = OneOf(agent_kinds))]
    pub(crate) agent: String,

    /// Sandbox for the manifest
    #[arg(long, value_name = "KIND", default_value = "none", value_parser = OneOf(sandbox_kinds))]
    pub(crate) sandbox: String,

    /// Folder to write into (default: the current directory)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) dir: Option<PathBuf>,

    /// Overwrite existing files
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ImageCommand {
    /// Build the image from `Dockerfile.eden` with your uid/gid baked in
    Build(ImageBuildArgs),
    /// Remove the image
    Remove(ImageRemoveArgs),
    /// Copy a local image to another engine (`docker save | docker --host HOST load`)
    Push(ImagePushArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ImageBuildArgs {
    /// The container engine (default: docker when its daemon answers, else podman)
    #[arg(long, value_name = "ENGINE", value_parser = OneOf(engines))]
    pub(crate) engine: Option<String>,

    /// The engine to use, when not the client's default: `tcp://HOST:2376`, `ssh://USER@HOST`, or
    /// a docker context / podman connection name
    #[arg(long, value_name = "ENGINE", value_hint = ValueHint::Other)]
    pub(crate) host: Option<String>,

    /// Image name (default: the manifest's `sandbox.image`, else `eden:<repository folder name>`)
    #[arg(long, value_hint = ValueHint::Other)]
    pub(crate) tag: Option<String>,

    /// The Dockerfile, as `eden init` writes it
    #[arg(long, value_name = "PATH", default_value = "Dockerfile.eden", value_hint = ValueHint::FilePath)]
    pub(crate) file: PathBuf,

    /// Agent whose CLI to install from npm (`none`: install nothing) (default: the manifest's
    /// agent, else claude-code)
    #[arg(long, value_name = "KIND", value_parser = OneOf(npm_agent_kinds))]
    pub(crate) agent: Option<String>,

    /// Build the image this manifest runs in: its engine, `host`, `image` and agent, unless the
    /// options above say otherwise
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath)]
    pub(crate) manifest: Option<PathBuf>,

    /// Base image (default: the Dockerfile's, `node:22-bookworm-slim`)
    #[arg(long, value_name = "IMAGE", value_hint = ValueHint::Other)]
    pub(crate) base: Option<String>,

    /// A build argument for the Dockerfile (a proxy; `EXTRA_CA_CERT`, a CA certificate's PEM text,
    /// not its path: `EXTRA_CA_CERT="$(cat ca.crt)"`): KEY=VALUE, or KEY to take its value from
    /// eden's environment; repeatable. Values go to the engine in its environment, never on its
    /// command line
    #[arg(long = "build-arg", value_name = "KEY[=VALUE]")]
    pub(crate) build_args: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ImageRemoveArgs {
    /// The container engine (default: docker when its daemon answers, else podman)
    #[arg(long, value_name = "ENGINE", value_parser = OneOf(engines))]
    pub(crate) engine: Option<String>,

    /// The engine to use, when not the client's default: `tcp://HOST:2376`, `ssh://USER@HOST`, or
    /// a docker context / podman connection name
    #[arg(long, value_name = "ENGINE", value_hint = ValueHint::Other)]
    pub(crate) host: Option<String>,

    /// Image name (default: `eden:<repository folder name>`)
    #[arg(long, value_hint = ValueHint::Other)]
    pub(crate) tag: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ImagePushArgs {
    /// The image (default: `eden:<repository folder name>`)
    #[arg(value_name = "IMAGE", value_hint = ValueHint::Other)]
    pub(crate) tag: Option<String>,

    /// The container engine (default: docker when its daemon answers, else podman)
    #[arg(long, value_name = "ENGINE", value_parser = OneOf(engines))]
    pub(crate) engine: Option<String>,

    /// The engine to copy it to: `tcp://HOST:2376`, `ssh://USER@HOST`, or a docker context /
    /// podman connection name
    #[arg(long, value_name = "ENGINE", value_hint = ValueHint::Other, required = true)]
    pub(crate) host: String,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The TOML manifest to run (omitted: `./eden.toml` when there is one, else the run is
    /// described by flags alone); several run in parallel, each a run of its own
    #[arg(value_name = "MANIFEST", value_hint = ValueHint::FilePath)]
    pub(crate) manifests: Vec<PathBuf>,

    /// With several runs: how many go at once (default: all of them, at most 8)
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) jobs: Option<u32>,

    /// With several runs spread over hosts (`sandbox.host = [..]`): at most N of them on one host
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) jobs_per_host: Option<u32>,

    /// With several runs: stop the others (as Ctrl-C would) when one fails, start no more
    #[arg(long)]
    pub(crate) fail_fast: bool,

    /// Run the manifest N times at once from the same base, each on a branch of its own; the
    /// first attempt to finish with its completion signal and every check passing lands, the
    /// others are stopped and keep their branches (the manifest's `attempts`; this wins)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub(crate) attempts: Option<u32>,

    /// Start where another run left off: its branch's tip (or with `RUN@N` the commit after
    /// its iteration N) and, where the agent can, its session (RUN: an id, a prefix or `last`)
    #[arg(long, value_name = "RUN[@N]", value_hint = ValueHint::Other)]
    pub(crate) from: Option<String>,

    /// Run each manifest once per value of a key, e.g. `--matrix agent.kind=claude-code,codex`;
    /// the run names get the value as a suffix (repeatable: every combination)
    #[arg(long, value_name = "KEY=V1,V2,...", value_hint = ValueHint::Other)]
    pub(crate) matrix: Vec<String>,

    /// Override any manifest key, e.g. `--set agent.model=opus` (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE", value_hint = ValueHint::Other)]
    pub(crate) set: Vec<String>,

    /// A prompt argument for `{{KEY}}` in the prompt (repeatable)
    #[arg(long = "arg", value_name = "KEY=VALUE", value_hint = ValueHint::Other)]
    pub(crate) prompt_args: Vec<String>,

    /// Agent kind
    #[arg(long, value_name = "KIND", value_parser = OneOf(agent_kinds))]
    pub(crate) agent: Option<String>,

    /// The agent's executable: a path, or a name looked up on PATH
    #[arg(long, value_name = "PATH", value_hint = ValueHint::ExecutablePath)]
    pub(crate) binary: Option<String>,

    /// Model passed to the agent
    #[arg(long, value_hint = ValueHint::Other)]
    pub(crate) model: Option<String>,

    /// The task, as text
    #[arg(long, conflicts_with = "prompt_file", value_hint = ValueHint::Other)]
    pub(crate) prompt: Option<String>,

    /// The task, from a file
    #[arg(long, value_name = "PATH", value_hint = ValueHint::FilePath)]
    pub(crate) prompt_file: Option<String>,

    /// Run name (used in branch names and logs)
    #[arg(long, value_hint = ValueHint::Other)]
    pub(crate) name: Option<String>,

    /// Most agent iterations
    #[arg(long, value_name = "N", value_hint = ValueHint::Other)]
    pub(crate) max_iterations: Option<u32>,

    /// Sandbox kind (`docker` and `podman` also need an image: `--set sandbox.image=eden:NAME`)
    #[arg(long, value_name = "KIND", value_parser = OneOf(sandbox_kinds))]
    pub(crate) sandbox: Option<String>,

    /// The container engine to run on: `tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, or a
    /// docker context / podman connection name (`sandbox.host`)
    #[arg(long, value_name = "ENGINE", value_hint = ValueHint::Other)]
    pub(crate) host: Option<String>,

    /// Branch strategy
    #[arg(long, value_name = "STRATEGY", value_parser = OneOf(strategies))]
    pub(crate) strategy: Option<String>,

    /// Branch name for strategy `named`
    #[arg(long, value_name = "NAME", value_hint = ValueHint::Other)]
    pub(crate) branch: Option<String>,

    /// Branch to start from (and merge back into)
    #[arg(long, value_name = "BRANCH", value_hint = ValueHint::Other)]
    pub(crate) base: Option<String>,

    /// The repository to work in (default: the current directory's)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub(crate) repo: Option<PathBuf>,

    /// Print the resolved plan as JSON and stop
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// Print the run record as JSON on stdout (or, if the run cannot start, the error)
    #[arg(long)]
    pub(crate) json: bool,

    /// Print every event as a JSON line on stdout as it happens; the last, `run_finished`,
    /// carries the run record
    #[arg(long)]
    pub(crate) json_events: bool,

    /// No progress output (errors are still printed)
    #[arg(long, short)]
    pub(crate) quiet: bool,

    /// Say how long each step to the agent's first byte took: worktree, the sandbox's claim or
    /// start, its environment and seed, the first exec, the first byte (the record keeps them
    /// either way)
    #[arg(long)]
    pub(crate) timings: bool,
}

impl RunArgs {
    /// `eden run` of `manifests` in the repository at `repo` with `set`s, every other flag
    /// unset: how a command that starts a run for a recorded one (`sessions resume`, `pr`)
    /// describes it.
    pub(crate) fn of_manifest(manifests: Vec<PathBuf>, set: Vec<String>, repo: PathBuf) -> RunArgs {
        RunArgs {
            manifests,
            jobs: None,
            jobs_per_host: None,
            fail_fast: false,
            from: None,
            attempts: None,
            matrix: Vec::new(),
            set,
            prompt_args: Vec::new(),
            agent: None,
            binary: None,
            model: None,
            prompt: None,
            prompt_file: None,
            name: None,
            max_iterations: None,
            sandbox: None,
            host: None,
            strategy: None,
            branch: None,
            base: None,
            repo: Some(repo),
            dry_run: false,
            json: false,
            json_events: false,
            quiet: false,
            timings: false,
        }
    }
}

/// Accepts any text (eden checks it later, with its own hints) but tells `--help` and shell
/// completion which values there are.
#[derive(Clone)]
struct OneOf(fn() -> Vec<&'static str>);

impl TypedValueParser for OneOf {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new((self.0)().into_iter().map(PossibleValue::new)))
    }
}

fn agent_kinds() -> Vec<&'static str> {
    crate::agent::AgentKind::names()
}

fn npm_agent_kinds() -> Vec<&'static str> {
    let mut kinds = crate::agent::AgentKind::npm_names();
    kinds.push("none");
    kinds
}

fn sandbox_kinds() -> Vec<&'static str> {
    crate::manifest::schema::SandboxKind::NAMES.to_vec()
}

fn status_words() -> Vec<&'static str> {
    crate::sessions::history::STATUS_WORDS.to_vec()
}

fn cost_groups() -> Vec<&'static str> {
    crate::sessions::cost::By::NAMES.to_vec()
}

fn strategies() -> Vec<&'static str> {
    crate::manifest::schema::Strategy::NAMES.to_vec()
}

fn engines() -> Vec<&'static str> {
    vec!["docker", "podman"]
}

fn exit_codes_line() -> String {
    crate::exit::Exit::help_line()
}

fn run_long_about() -> String {
    format!(
        "Run an agent as a manifest (or flags) describes: worktree, iterations, merge back.\n\n\
Flags override the manifest's keys (`--set KEY=VALUE` any of them). The run makes a branch and a \
worktree under `.eden/worktrees/`, boots the sandbox, runs the hooks and the agent until it prints \
its completion signal (or `max_iterations`), then merges or keeps the branch as the strategy says. \
Progress goes to stderr; `--json` and `--json-events` put machine-readable output on stdout. The \
run record is written to `.eden/runs/<run-id>.json` and every event to `.eden/logs/<run-id>.jsonl`.\n\n\
Several manifests (or `--matrix`) make several runs, each an `eden run` of its own (own worktree, branch, \
sandbox, hooks, record), `--jobs` at a time; a failure stops no other unless `--fail-fast`. Their merges \
into one target queue behind each other. At the end a table; `--json` prints an array of records; the \
exit code is the most severe: {}.",
        crate::exit::Exit::severity_line()
    )
}

/// The environment variables eden reads, for the man pages.
pub const ENVIRONMENT: [(&str, &str); 7] = [
    ("NO_COLOR", "When set and not empty, no colors."),
    ("TERM", "`dumb` gets plain lines: no spinner, no colors, no lines redrawn."),
    (
        "EDEN_CONTAINMENT",
        "`pid-namespace` or `subreaper`: how eden makes sure nothing a command starts outlives it (default: a PID namespace where the kernel allows one).",
    ),
    ("TMPDIR", "Where `isolated` runs make their copy of the repository (default /tmp)."),
    (
        "EDEN_RUN_ID, EDEN_NAME, EDEN_BRANCH, EDEN_BASE_BRANCH, EDEN_WORKTREE, EDEN_REPO, EDEN_PHASE, EDEN_HOOK_SIDE, EDEN_ITERATION, EDEN_STATUS",
        "Set by eden for every hook (not read from your environment).",
    ),
    (
        "EDEN_EVENT, EDEN_RUN_ID, EDEN_NAME, EDEN_REPO",
        "Set by eden for a `[notify] command` (which gets the event as JSON on stdin, and of eden's environment only `PATH`, `HOME`, the user, locale, `TMPDIR` and a desktop's display and bus).",
    ),
    (
        "XDG_CONFIG_HOME",
        "Where eden's user config (`eden/config.toml`) and price table (`eden/prices.toml`) are (default `~/.config`).",
    ),
];

/// The files eden reads and writes, for the man pages.
pub const FILES: [(&str, &str); 13] = [
    ("eden.toml", "A run manifest, as `eden init` writes it; any name works: `eden run plan.toml`."),
    (
        "Dockerfile.eden",
        "The sandbox image's Dockerfile, as `eden init --sandbox docker` writes it, for `eden image build`.",
    ),
    (".eden/", "eden's state at the repository root, kept out of git through `.git/info/exclude`."),
    (".eden/.env", "Yours: KEY=VALUE lines for `${VAR}` in the manifest, and secrets to redact."),
    (".eden/worktrees/", "One worktree per run branch."),
    (".eden/runs/<run-id>.json", "The run record: written from the start, complete at the end."),
    (
        ".eden/logs/<run-id>.jsonl",
        "Every event of the run as a JSON line (`[logging] file` moves it, `file = false` turns it off).",
    ),
    (
        ".eden/sessions/<run-id>/",
        "The agents' own transcripts, copied after each iteration (`eden sessions show --raw`).",
    ),
    ("~/.config/eden/prices.toml", "Prices per million tokens for `eden sessions cost`, by model."),
    (
        "~/.config/eden/config.toml",
        "Yours: settings for every run; `[notify]` (as a manifest's) tells every run's events to a command or a webhook.",
    ),
    (".eden/locks/", "Branch and repository locks (flock); a lock held by a live eden is never taken."),
    (".eden/patches/<run-id>.patch", "Uncommitted work brought back from an `isolated` run's copy."),
    (
        ".eden/mcp/quick-<n>.toml",
        "The manifest `eden mcp` wrote for a quick run (its record names it, for `--from` and `sessions resume`).",
    ),
];
