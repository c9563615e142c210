//! docker and podman: one implementation, two binaries. One long-lived container per run
//! (`--init`, labels `eden.run`, `eden.repo`, `eden.branch`, `eden.pid`, the host's uid:gid),
//! every agent command an `exec` in it.
//!
//! The container never sees the host's worktree or `.git`. Its workspace is a volume of its own
//! (named like the container), mounted at the worktree's absolute path (so prompts, transcripts
//! and `PWD` read the same), holding a repository of its own that `repository::seed` fills
//! from the host worktree; the host's object stores are mounted read-only as its alternates, so
//! no history is copied. After every iteration the agent's commits come back as a checked
//! bundle, at the end its uncommitted work as a checked patch (`repository`). The agent's state
//! folders are private copies (`agent_state`).
//!
//! Environment values never go on a command line: the engine client gets them in its own
//! environment and is told only the names (`-e NAME`).
//!
//! Killing the `exec` client does not stop what it started inside, so each command runs behind
//! a tiny wrapper that writes its pid (an exec'd process leads its own process group) to a file
//! inside the container; kills then signal that group inside the container too. Nothing a
//! command starts may outlive it, so when the command ends the wrapper kills every process in
//! the container but the init and the keep-alive (the run's commands run one at a time, so
//! whatever else is there was left by this one); if the wrapper itself was SIGKILLed, eden runs
//! that sweep as an exec of its own.

mod create;
mod doctor;
mod exec;
mod handle;
mod leftovers;
mod pool;
mod preflight;
mod provider;

pub(crate) use provider::Provider;
pub(crate) use provider::KIND;
