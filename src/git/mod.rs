//! Git, always through the `git` command line, sanitized: no inherited `GIT_DIR`-style
//! variables, no fsmonitor, `LC_ALL=C` for parseable output, stdin closed. eden reads the user's
//! configuration (identity, signing) as git does but never writes the global config.
//!
//! Why the CLI rather than libgit2: worktrees, merges and hooks then behave exactly as the
//! user's own git does, and a C library build stays out of the dependency tree.

mod merge;
mod repo;
mod worktree;

pub(crate) use merge::{merge_into, MergeResult};
pub(crate) use repo::{
    dunce_canonical, git_failure, with_config, Commit, Discovered, Git, DISK_FULL_HINT, NO_BACKGROUND_WORK,
};
pub(crate) use worktree::{leftover_locks, slug, Removal, WorktreeList};
