//! Clap definitions only. `commands/` turns these into settings; nothing below knows clap.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "eden",
    version,
    about = "Run AI coding agents autonomously and safely, each in its own git worktree",
    after_help = "Exit codes: 0 success · 1 no completion signal (require_completion) · 2 usage or manifest error · \
3 agent failed · 4 timeout · 5 hook failed · 6 sandbox error · 7 git error or merge conflict · 130/143 interrupted"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an agent as a manifest (or flags) describes: worktree, iterations, merge back
    Run(Box<RunArgs>),
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
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Only list what would be removed and what kept, and why
    #[arg(long)]
    pub dry_run: bool,

    /// Also remove dirty worktrees, unmerged `eden/*` branches and isolated copies with work in them
    #[arg(long)]
    pub force: bool,

    /// Also remove logs, run records, sessions and patches older than this (e.g. `7d`, `12h`)
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<String>,

    /// Containers and isolated copies of every repository, not just this one
    #[arg(long, visible_alias = "all")]
    pub all_repos: bool,

    /// The repository to clean (default: the current directory's)
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,

    /// Print what was found and done as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Agent kind for the manifest
    #[arg(long, default_value = "claude-code")]
    pub agent: String,

    /// Sandbox for the manifest: none, docker, podman, isolated
    #[arg(long, default_value = "none")]
    pub sandbox: String,

    /// Folder to write into (default: the current directory)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Overwrite existing files
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Build the image from `Dockerfile.eden` with your uid/gid baked in
    Build(ImageBuildArgs),
    /// Remove the image
    Remove(ImageRemoveArgs),
}

#[derive(Debug, Args)]
pub struct ImageBuildArgs {
    /// docker or podman (default: docker when its daemon answers, else podman)
    #[arg(long)]
    pub engine: Option<String>,

    /// Image name (default: `eden:<repository folder name>`)
    #[arg(long)]
    pub tag: Option<String>,

    /// The Dockerfile, as `eden init` writes it
    #[arg(long, value_name = "PATH", default_value = "Dockerfile.eden")]
    pub file: PathBuf,

    /// Agent whose CLI to install from npm (claude-code, codex, opencode, pi, copilot, none)
    #[arg(long, default_value = "claude-code")]
    pub agent: String,

    /// Base image (default: the Dockerfile's, `node:22-bookworm-slim`)
    #[arg(long, value_name = "IMAGE")]
    pub base: Option<String>,
}

#[derive(Debug, Args)]
pub struct ImageRemoveArgs {
    /// docker or podman (default: docker when its daemon answers, else podman)
    #[arg(long)]
    pub engine: Option<String>,

    /// Image name (default: `eden:<repository folder name>`)
    #[arg(long)]
    pub tag: Option<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The TOML manifest to run (omit to describe the run with flags alone)
    #[arg(value_name = "MANIFEST")]
    pub manifest: Option<PathBuf>,

    /// Override any manifest key, e.g. `--set agent.model=opus` (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,

    /// A prompt argument for `{{KEY}}` in the prompt (repeatable)
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub prompt_args: Vec<String>,

    /// Agent kind: simulated, cli, claude-code, codex, opencode, pi, cursor, copilot
    #[arg(long, value_name = "KIND")]
    pub agent: Option<String>,

    /// Executable of a `cli` agent
    #[arg(long, value_name = "PATH")]
    pub binary: Option<String>,

    /// Model passed to the agent
    #[arg(long)]
    pub model: Option<String>,

    /// The task, as text
    #[arg(long, conflicts_with = "prompt_file")]
    pub prompt: Option<String>,

    /// The task, from a file
    #[arg(long, value_name = "PATH")]
    pub prompt_file: Option<String>,

    /// Run name (used in branch names and logs)
    #[arg(long)]
    pub name: Option<String>,

    /// Most agent iterations
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,

    /// Branch strategy: head, merge-to-head, named
    #[arg(long)]
    pub strategy: Option<String>,

    /// Branch name for strategy `named`
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,

    /// Branch to start from (and merge back into)
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,

    /// The repository to work in (default: the current directory's)
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,

    /// Print the resolved plan as JSON and stop
    #[arg(long)]
    pub dry_run: bool,

    /// Print the run record as JSON on stdout (or, if the run cannot start, the error)
    #[arg(long)]
    pub json: bool,

    /// Print every event as a JSON line on stdout as it happens; the last, `run_finished`,
    /// carries the run record
    #[arg(long)]
    pub json_events: bool,

    /// No progress output (errors are still printed)
    #[arg(long, short)]
    pub quiet: bool,
}
