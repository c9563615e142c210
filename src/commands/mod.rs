//! One file per subcommand: arguments into settings, then the core.

pub(crate) mod batch;
pub(crate) mod clean;
mod common;
pub mod completions;
mod dispatch;
pub(crate) mod doctor;
pub(crate) mod from;
pub(crate) mod image;
pub(crate) mod init;
pub(crate) mod invocation;
mod launch;
mod mcp;
mod pool;
mod pr;
mod recorded;
pub(crate) mod review;
pub(crate) mod run;
pub mod schema;
pub(crate) mod sessions;
pub(crate) mod settings;
mod single;
pub(crate) mod steer;
mod top;

pub(crate) use common::{current_dir, last_commit, layout};
pub(crate) use dispatch::dispatch;
